//! The help screen's text, built once from the key table, the palette's commands and the
//! header's figures: the drawing styles it, the keys scroll it by the same count of rows.

use super::action_dialogs::CHROME_ROWS;
use super::App;
use crate::keys::KeyAction;
use crate::message::COMMANDS;

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

/// What goes between a command's description and its aliases.
pub const ALSO_BEFORE: &str = "  (also ";
/// The blank columns before a row's keys, and between the widest keys and their description.
pub const KEYS_INDENT: usize = 2;
/// The blank columns between the two columns of a wide help.
pub const HELP_GAP: usize = 3;

impl HelpRow {
    /// Columns the row takes drawn whole (`left`: the keys' column): the drawing sizes the
    /// box by this, and cuts (marked) only what the terminal has no room for.
    pub fn width(&self, left: usize) -> usize {
        let w = |s: &str| ratatui::text::Span::raw(s).width();
        match self {
            HelpRow::Section(s) | HelpRow::Note(s) => w(s),
            HelpRow::Key { help, .. } | HelpRow::Figure { help, .. } => {
                2 * KEYS_INDENT + left + w(help)
            }
            HelpRow::Command { help, aliases, .. } => {
                let also = if aliases.is_empty() {
                    0
                } else {
                    w(ALSO_BEFORE) + w(aliases) + 1
                };
                2 * KEYS_INDENT + left + w(help) + also
            }
        }
    }
}

/// How the help is laid out on the terminal: one column, or, where its rows do not fit the
/// height but two columns fit the width, two side by side (the second from the section
/// nearest the middle), so that less needs scrolling. Each column is as wide as its widest
/// row drawn whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelpLayout {
    /// The first column's width, and the second's (0 in one column).
    pub widths: (usize, usize),
    /// Rows in the first column (all of them in one column).
    pub split: usize,
    /// Lines the box shows, scrolled together.
    pub lines: usize,
}

impl HelpLayout {
    pub fn two(&self) -> bool {
        self.widths.1 > 0
    }

    /// The box's inner width wanted (the terminal may have less).
    pub fn inner_width(&self) -> usize {
        if self.two() {
            self.widths.0 + HELP_GAP + self.widths.1
        } else {
            self.widths.0
        }
    }
}

impl HelpText {
    /// The layout on a `width` x `height` body (the box's border included).
    pub fn layout(&self, width: u16, height: u16) -> HelpLayout {
        let n = self.rows.len();
        let widest = |rows: &[HelpRow]| rows.iter().map(|r| r.width(self.left)).max().unwrap_or(0);
        let one = HelpLayout {
            widths: (widest(&self.rows), 0),
            split: n,
            lines: n,
        };
        let split = self
            .rows
            .iter()
            .enumerate()
            .filter(|(i, r)| *i > 0 && matches!(r, HelpRow::Section(_)))
            .map(|(i, _)| i)
            .min_by_key(|i| i.abs_diff(n / 2))
            .unwrap_or(n.div_ceil(2));
        let (first, second) = self.rows.split_at(split.min(n));
        let two = HelpLayout {
            widths: (widest(first), widest(second)),
            split,
            lines: split.max(n - split),
        };
        let fits_tall = n + 2 <= usize::from(height);
        let fits_two = two.inner_width() + 2 <= usize::from(width);
        if fits_tall || !fits_two || second.is_empty() {
            one
        } else {
            two
        }
    }
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
        rows.extend(COMMANDS.iter().map(|c| {
            HelpRow::Command {
                name: format!(":{}", c.name),
                aliases: c
                    .aliases
                    .iter()
                    .map(|a| format!(":{a}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                help: c.help.to_string(),
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
        let body = self.size().1.saturating_sub(CHROME_ROWS);
        let lines = self.help_text().layout(self.size().0, body).lines;
        let total = u16::try_from(lines).unwrap_or(u16::MAX);
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
