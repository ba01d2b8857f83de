//! Yank: `y` copies the selected row's id, `Y` its name, to the operator's clipboard. The
//! state only says what to copy; the runtime writes it to the terminal (OSC 52, see
//! [`crate::tui::clipboard`]) between two frames.
//!
//! What an operator pastes next decides what each view yields: an id goes into
//! `openstack … show`, so a node yields its Nova server id (or, before Nova was asked,
//! its member's nested stack id) and a tree resource its physical id; on a node `Y`
//! yields the address (what ssh and ping want), falling back to the name before the
//! address is known; an event yields its id and its resource's name; a journal entry
//! yields itself as one JSON line (the journal file's format) and its target.

use super::view::ViewKind;
use super::{App, Level};
use crate::tui::clipboard::Clip;

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

    /// What `y` (id) or `Y` (name) copies in the current view: what it is, and the text.
    pub fn yank_text(&self, what: Yank) -> Option<(&'static str, String)> {
        let v = self.view();
        let s = &self.store;
        let id = what == Yank::Id;
        match &v.kind {
            ViewKind::Clusters => {
                let c = v.table.selected(s.clusters.data.as_deref()?)?;
                Some(pick(id, ("cluster id", &c.id), ("cluster name", &c.name)))
            }
            ViewKind::Stacks => {
                let st = &v.table.selected(s.stacks.data.as_deref()?)?.stack;
                Some(pick(id, ("stack id", &st.id), ("stack name", &st.name)))
            }
            ViewKind::NodeGroups { cluster } | ViewKind::Dashboard { cluster } => {
                let g = v
                    .table
                    .selected(s.nodegroups.get(&cluster.id)?.data.as_deref()?)?;
                Some(pick(
                    id,
                    ("node group id", &g.id),
                    ("node group name", &g.name),
                ))
            }
            ViewKind::Nodes { nodegroup, .. } => {
                let n = &v.table.selected(&s.nodes.get(&nodegroup.id)?.rows)?.node;
                Some(match (id, &n.server_id, &n.stack_id, &n.ip) {
                    (true, Some(server), _, _) => ("server id", server.clone()),
                    (true, None, Some(stack), _) => ("member stack id", stack.clone()),
                    (true, None, None, _) => ("member", n.key.member.clone()),
                    (false, _, _, Some(ip)) => ("address", ip.clone()),
                    (false, _, _, None) => ("node name (no address yet)", n.name.clone()),
                })
            }
            ViewKind::Events { stack } => {
                let e = v.table.selected(&s.events.get(&stack.id)?.events)?;
                Some(pick(
                    id,
                    ("event id", &e.id),
                    ("resource name", &e.resource_name),
                ))
            }
            ViewKind::Tree { stack, .. } => {
                let rows = &s.trees.get(&stack.id)?.data.as_ref()?.rows;
                let r = &v.table.selected(rows)?.resource;
                // A resource Heat has not created yet has no physical id: the status line
                // says it is empty rather than copying something else.
                Some(match id {
                    true => ("physical id", r.physical_id.clone().unwrap_or_default()),
                    false => ("resource name", r.name.clone()),
                })
            }
            ViewKind::Rollout { nodegroup, .. } => {
                let n = v.table.selected(s.rollouts.get(&nodegroup.id)?.nodes())?;
                Some(match (id, n.index) {
                    (true, Some(i)) => ("member index", i.to_string()),
                    _ => ("node name", n.name.clone()),
                })
            }
            ViewKind::Journal => {
                let e = &v.table.selected(&s.journal.rows)?.entry;
                if id {
                    let line = serde_json::to_string(e).ok()?;
                    Some(("journal entry", line))
                } else {
                    Some(("target", e.target.clone()))
                }
            }
            ViewKind::Server { target } => Some(match (id, &target.server_id) {
                (true, Some(server)) => ("server id", server.clone()),
                (true, None) => ("member", target.key.member.clone()),
                (false, _) => ("node name", target.name.clone()),
            }),
        }
    }
}

/// The id or the name, each with what it is.
fn pick(
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
