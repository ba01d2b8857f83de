//! Keys in: the key table for normal mode, and the one-line text inputs (the `:`
//! palette with completion and history, the `/` filter, the save-path prompt).

use super::view::ViewKind;
use super::{App, Level, Mode};
use crate::cell_text::{event_path, first_line};
use crate::keys::{KeyAction, KeyContext};
use crate::message::{Action, Command, Request, COMMANDS};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::style::{Modifier, Style};
use std::path::PathBuf;
use tui_textarea::TextArea;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputKind {
    Palette,
    /// The filter as it was: applied while the input is empty, kept on Esc.
    Filter {
        previous: String,
    },
    SavePath,
    ExportJournal,
}

pub struct InputState {
    pub kind: InputKind,
    pub textarea: TextArea<'static>,
    /// Position in the history while browsing it with ↑/↓.
    pub history_pos: Option<usize>,
    /// Completion candidates to show under the palette.
    pub candidates: Vec<String>,
}

impl InputState {
    pub fn text(&self) -> String {
        self.textarea.lines().first().cloned().unwrap_or_default()
    }

    fn set_text(&mut self, text: &str) {
        let hint = self.textarea.placeholder_text().to_string();
        self.textarea = new_textarea(text);
        self.textarea.set_placeholder_text(hint);
    }

    pub fn prompt(&self) -> &'static str {
        match self.kind {
            InputKind::Palette => ":",
            InputKind::Filter { .. } => "/",
            InputKind::SavePath => "save to: ",
            InputKind::ExportJournal => "export journal (JSON lines) to: ",
        }
    }
}

fn new_textarea(text: &str) -> TextArea<'static> {
    let mut ta = TextArea::new(vec![text.to_string()]);
    ta.set_cursor_line_style(Style::default());
    ta.set_cursor_style(Style::default().add_modifier(Modifier::REVERSED));
    ta.move_cursor(tui_textarea::CursorMove::End);
    ta
}

/// Complete a palette line: `(new line, candidates)`.
pub fn complete(line: &str, theme_names: &[String]) -> (String, Vec<String>) {
    let trimmed = line.trim_start();
    if let Some(arg) = trimmed.strip_prefix("theme ") {
        let arg = arg.trim_start();
        let hits: Vec<String> = theme_names
            .iter()
            .filter(|n| n.starts_with(arg))
            .cloned()
            .collect();
        return match hits.len() {
            0 => (line.to_string(), vec![]),
            1 => (format!("theme {}", hits[0]), vec![]),
            _ => (format!("theme {}", common_prefix(&hits)), hits),
        };
    }
    if trimmed.contains(' ') {
        return (line.to_string(), vec![]);
    }
    // A word that already is a command or an alias means that command (`cl` is :clusters,
    // though :cloud starts the same way).
    if let Some(command) = COMMANDS.iter().find(|c| c.answers_to(trimmed)) {
        if command.name != "theme" {
            return (command.name.to_string(), vec![]);
        }
    }
    let mut hits: Vec<String> = Vec::new();
    for c in COMMANDS {
        if c.name.starts_with(trimmed) {
            hits.push(c.name.to_string());
        } else if let Some(a) = c.aliases.iter().find(|a| a.starts_with(trimmed)) {
            hits.push(a.to_string());
        }
    }
    match hits.len() {
        0 => (line.to_string(), vec![]),
        1 if hits[0] == "theme" => ("theme ".into(), vec![]),
        1 => (hits[0].clone(), vec![]),
        _ => (common_prefix(&hits), hits),
    }
}

fn common_prefix(words: &[String]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let mut len = first.len();
    for w in &words[1..] {
        len = len.min(
            first
                .bytes()
                .zip(w.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    first[..len].to_string()
}

impl App {
    pub(super) fn open_input(&mut self, kind: InputKind, initial: &str) {
        let mut textarea = new_textarea(initial);
        if let InputKind::Filter { previous } = &kind {
            if !previous.is_empty() {
                textarea.set_placeholder_text(format!(
                    "(now /{}: type a new filter; Enter alone clears it, Esc keeps it)",
                    crate::model::terminal_safe(previous)
                ));
            }
        }
        self.mode = Mode::Input(Box::new(InputState {
            kind,
            textarea,
            history_pos: None,
            candidates: Vec::new(),
        }));
    }

    /// A key from the terminal.
    pub fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            // Asks like `q` while this console drives a rollout (quitting stops releasing);
            // a second ctrl-c, on that question, quits.
            if self.quit_asked() {
                self.should_quit = true;
            } else {
                self.request_quit();
            }
            return;
        }
        // Like ctrl-c, suspending works from every mode (an open input line included),
        // as it does in a shell; the key itself comes from the table.
        if self.keys.lookup(&key, &[KeyContext::Global]) == Some(KeyAction::Suspend) {
            self.should_suspend = true;
            return;
        }
        match &self.mode {
            Mode::Input(_) => self.on_input_key(key),
            Mode::Dialog(_) => self.on_dialog_key(key),
            Mode::Help(scroll) => {
                // Scroll keys scroll the help; any other key closes it.
                let scroll = *scroll;
                let moved = self
                    .keys
                    .lookup(&key, &[KeyContext::Table])
                    .and_then(|a| self.help_scrolled(scroll, a));
                self.mode = match moved {
                    Some(to) => Mode::Help(to),
                    None => Mode::Normal,
                };
            }
            Mode::Normal => {
                let contexts = self.key_contexts();
                if let Some(action) = self.keys.lookup(&key, &contexts) {
                    self.update(Action::Key(action));
                }
            }
        }
    }

    fn on_input_key(&mut self, key: KeyEvent) {
        let Mode::Input(input) = &mut self.mode else {
            return;
        };
        match key.code {
            KeyCode::Esc => {
                if let InputKind::Filter { previous } = &input.kind {
                    let previous = previous.clone();
                    self.view_mut().table.set_filter(&previous);
                }
                self.mode = Mode::Normal;
            }
            KeyCode::Enter => {
                let text = input.text();
                let kind = input.kind.clone();
                self.mode = Mode::Normal;
                self.submit_input(kind, text);
            }
            // Readline habit: ctrl-u clears the line.
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                input.set_text("");
                input.candidates.clear();
                if let InputKind::Filter { previous } = &input.kind {
                    // Nothing typed: the filter that was stays until Enter.
                    let previous = previous.clone();
                    self.view_mut().table.set_filter(&previous);
                }
            }
            KeyCode::Tab if input.kind == InputKind::Palette => {
                let names = crate::theme::theme_names(self.theme_dir.as_deref());
                let (line, candidates) = complete(&input.text(), &names);
                input.set_text(&line);
                input.candidates = candidates;
            }
            KeyCode::Up | KeyCode::Down if input.kind == InputKind::Palette => {
                if self.history.is_empty() {
                    return;
                }
                let last = self.history.len() - 1;
                let pos = match (input.history_pos, key.code) {
                    (None, KeyCode::Up) => Some(last),
                    (None, _) => None,
                    (Some(p), KeyCode::Up) => Some(p.saturating_sub(1)),
                    (Some(p), _) if p < last => Some(p + 1),
                    (Some(_), _) => None,
                };
                input.history_pos = pos;
                let text = pos.map(|p| self.history[p].clone()).unwrap_or_default();
                input.set_text(&text);
            }
            _ => {
                input.textarea.input(key);
                input.candidates.clear();
                if let InputKind::Filter { previous } = &input.kind {
                    // The rows follow what is typed; an emptied input shows the filter that
                    // was, until Enter clears it.
                    let text = input.text();
                    let shown = if text.is_empty() {
                        previous.clone()
                    } else {
                        text
                    };
                    self.view_mut().table.set_filter(&shown);
                }
            }
        }
    }

    fn submit_input(&mut self, kind: InputKind, text: String) {
        match kind {
            InputKind::Palette => {
                let line = text.trim().to_string();
                if line.is_empty() {
                    return;
                }
                if self.history.last() != Some(&line) {
                    self.history.push(line.clone());
                }
                match Command::parse(&line) {
                    Ok(c) => self.update(Action::Command(c)),
                    Err(e) => self.set_status(Level::Error, e),
                }
            }
            InputKind::Filter { .. } => self.view_mut().table.set_filter(&text),
            InputKind::SavePath | InputKind::ExportJournal => {
                let path = text.trim();
                if path.is_empty() {
                    self.set_status(Level::Warn, "not saved: empty path");
                    return;
                }
                let contents = if kind == InputKind::ExportJournal {
                    self.journal_jsonl()
                } else {
                    self.events_text()
                };
                let path = match (path.strip_prefix("~/"), dirs::home_dir()) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => PathBuf::from(path),
                };
                self.outbox.push(Request::Save {
                    path: path.clone(),
                    contents,
                });
                self.set_status(Level::Info, format!("saving to {}…", path.display()));
            }
        }
    }

    /// The events of the current events view, as filtered, one line each.
    pub fn events_text(&mut self) -> String {
        self.prepare();
        let v = self.view();
        let ViewKind::Events { stack } = &v.kind else {
            return String::new();
        };
        let Some(log) = self.store.events.get(&stack.id) else {
            return String::new();
        };
        let mut out = String::new();
        for &i in v.table.view() {
            if let Some(e) = log.events.get(i) {
                out.push_str(&format!(
                    "{}  {:<20} {:<40} {}\n",
                    e.time.format("%Y-%m-%dT%H:%M:%SZ"),
                    e.status.raw,
                    event_path(e),
                    first_line(e.status_reason.as_deref())
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_commands_aliases_and_themes() {
        let themes = vec![
            "dark".to_string(),
            "light".to_string(),
            "high-contrast".to_string(),
        ];
        assert_eq!(complete("cl", &themes), ("clusters".to_string(), vec![]));
        let (line, c) = complete("t", &themes);
        assert_eq!(line, "t");
        assert!(c.contains(&"tree".to_string()) && c.contains(&"theme".to_string()));
        assert_eq!(complete("th", &themes).0, "theme ");
        assert_eq!(complete("theme l", &themes).0, "theme light");
        assert_eq!(complete("nodeg", &themes).0, "nodegroups");
        let (line, c) = complete("clo", &themes);
        assert_eq!((line.as_str(), c.len()), ("cloud", 0));
        assert_eq!(complete("zzz", &themes), ("zzz".to_string(), vec![]));
    }
}
