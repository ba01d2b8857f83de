//! The help screen's text, built once from the key table, the palette's commands and the
//! header's figures: the drawing styles it, the keys scroll it by the same count of rows.

use super::action_dialogs::CHROME_ROWS;
use super::App;
use crate::tui::keys::KeyAction;
use crate::tui::message::COMMANDS;

/// What the header's figures mean.
const HEADER_HELP: &[(&str, &str)] = &[
    (
        "data 8s ⟳",
        "Age of the view's data; ⟳ a refresh is under way; STALE: the last one failed",
    ),
    (
        "req 0/16 15/50/s",
        "In flight (at most 16 at once) · started in the last second (limit 50/s)",
    ),
    (
        "settling x 14s",
        "x re-read every 2 s after an action, until Heat is done with it (2 min at most)",
    ),
    (
        "(3 retries)",
        "Requests retried since start (429 or 5xx answers, timeouts, lost connections)",
    ),
];

/// One row of the help.
#[derive(Debug, Clone, PartialEq)]
pub enum HelpRow {
    Section(String),
    /// Keys (as the table binds them now) and what they do.
    Key {
        keys: String,
        help: String,
    },
    /// A header figure and what it means.
    Figure {
        figure: String,
        help: String,
    },
    /// A palette command, its aliases apart, and what it does.
    Command {
        name: String,
        aliases: String,
        help: String,
    },
    Note(String),
}

/// The help's rows, and how wide its left column is (the widest keys or command, so a long
/// one never runs into its description).
pub struct HelpText {
    pub rows: Vec<HelpRow>,
    pub left: usize,
}

impl App {
    pub fn help_text(&self) -> HelpText {
        let mut rows = Vec::new();
        for (section, keys) in self.keys().help_sections() {
            rows.push(HelpRow::Section(section.to_string()));
            rows.extend(keys.into_iter().map(|(keys, help)| HelpRow::Key {
                keys: keys.to_string(),
                help: help.to_string(),
            }));
        }
        rows.push(HelpRow::Section("Header".into()));
        rows.extend(HEADER_HELP.iter().map(|(f, h)| HelpRow::Figure {
            figure: f.to_string(),
            help: h.to_string(),
        }));
        rows.push(HelpRow::Section("Commands (:)".into()));
        rows.extend(COMMANDS.iter().map(|(name, aliases, help)| {
            HelpRow::Command {
                name: format!(":{name}"),
                aliases: aliases
                    .iter()
                    .map(|a| format!(":{a}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                help: help.to_string(),
            }
        }));
        rows.push(HelpRow::Note(
            "Filter: text (case-insensitive), re:REGEX, a leading ! inverts.".into(),
        ));
        rows.push(HelpRow::Note(format!(
            "This help: {} scroll; any other key closes it.",
            self.help_scroll_keys()
        )));
        let left = rows
            .iter()
            .map(|r| match r {
                HelpRow::Key { keys, .. } => keys.chars().count(),
                HelpRow::Figure { figure, .. } => figure.chars().count(),
                HelpRow::Command { name, .. } => name.chars().count(),
                HelpRow::Section(_) | HelpRow::Note(_) => 0,
            })
            .max()
            .unwrap_or(0);
        HelpText { rows, left }
    }

    /// The scroll keys as the key table has them (they may be remapped).
    fn help_scroll_keys(&self) -> String {
        [
            KeyAction::Down,
            KeyAction::Up,
            KeyAction::PageDown,
            KeyAction::PageUp,
            KeyAction::Top,
            KeyAction::Bottom,
        ]
        .iter()
        .map(|a| {
            let keys: Vec<String> = self
                .keys()
                .keys_for(*a)
                .iter()
                .map(|k| k.to_string())
                .collect();
            keys.join("/")
        })
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// Rows of help the screen shows at once, and the last scroll that still fills it.
    pub fn help_page(&self) -> (u16, u16) {
        let total = u16::try_from(self.help_text().rows.len()).unwrap_or(u16::MAX);
        let body = self.size().1.saturating_sub(CHROME_ROWS);
        let page = total.saturating_add(2).min(body).saturating_sub(2).max(1);
        (page, total.saturating_sub(page))
    }

    /// The help scrolled by `op` from `scroll`: a row, a page, either end; never past the
    /// last page, so the key back up moves at once.
    pub(super) fn help_scrolled(&self, scroll: u16, action: KeyAction) -> Option<u16> {
        let (page, last) = self.help_page();
        let to = match action {
            KeyAction::Down => scroll.saturating_add(1),
            KeyAction::Up => scroll.saturating_sub(1),
            KeyAction::PageDown => scroll.saturating_add(page),
            KeyAction::PageUp => scroll.saturating_sub(page),
            KeyAction::Top => 0,
            KeyAction::Bottom => last,
            _ => return None,
        };
        Some(to.min(last))
    }
}
