//! Yank: `y` copies the selected row's id, `Y` its name, to the operator's clipboard. The
//! state only says what to copy; the runtime writes it to the terminal (OSC 52, see
//! [`crate::clipboard`]) between two frames.
//!
//! What an operator pastes next decides what each view yields: an id goes into
//! `openstack … show`, so a node yields its Nova server id (or, before Nova was asked,
//! its member's nested stack id) and a tree resource its physical id; on a node `Y`
//! yields the address (what ssh and ping want), falling back to the name before the
//! address is known; an event yields its id and its resource's name; a journal entry
//! yields itself as one JSON line (the journal file's format) and its target.

use super::{App, Level};
use crate::clipboard::Clip;

/// Which of the row's texts to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Yank {
    Id,
    Name,
}

/// How much of the copied text the status line repeats.
const SHOWN_CHARS: usize = 40;

impl App {
    /// Copies the selected row's id or name, and says what was copied.
    pub(super) fn yank(&mut self, what: Yank) {
        let Some((label, text)) = self.yank_text(what) else {
            self.set_status(Level::Warn, "nothing to copy here: select a row first");
            return;
        };
        let clip = Clip::new(&text);
        if clip.text.is_empty() {
            self.set_status(
                Level::Warn,
                format!("nothing to copy: the {label} is empty"),
            );
            return;
        }
        let mut shown: String = clip.text.chars().take(SHOWN_CHARS).collect();
        if clip.text.chars().count() > SHOWN_CHARS {
            shown.push('…');
        }
        let cut = if clip.cut { " (cut to 16 KiB)" } else { "" };
        self.set_status(Level::Info, format!("copied {label} {shown}{cut}"));
        self.clipboard = Some(clip);
    }

    /// The copy the runtime is to write to the terminal, taken once.
    pub fn take_clipboard(&mut self) -> Option<Clip> {
        self.clipboard.take()
    }

    /// What `y` (id) or `Y` (name) copies in the current view: what it is, and the text
    /// (each view says, `Screen::yank`).
    pub fn yank_text(&self, what: Yank) -> Option<(&'static str, String)> {
        let v = self.view();
        self.screen_of(&v.kind).yank(self.store(), v, what)
    }
}

/// The id or the name, each with what it is.
pub(crate) fn pick(
    id: bool,
    (id_label, id_text): (&'static str, &str),
    (name_label, name_text): (&'static str, &str),
) -> (&'static str, String) {
    if id {
        (id_label, id_text.to_string())
    } else {
        (name_label, name_text.to_string())
    }
}
