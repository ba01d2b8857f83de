//! Small forms (scale count, upgrade options, node-action command) and the dialogs that
//! follow them: waiting for a plan, the confirmation (with the typed cluster name on a
//! production cloud), the abort choice and a read-only text overlay. Bad input never
//! clears what was typed: the key is refused with a message in the form.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a field accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// Digits only, checked against `min..=max` on submit.
    Number { min: u64, max: Option<u64> },
    /// Any text; `required` refuses an empty value.
    Text { required: bool },
    /// yes / no, toggled with space (or y / n).
    Flag,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub label: String,
    pub value: String,
    pub kind: FieldKind,
    /// Shown next to the field (e.g. "min 1, max 12, now 6").
    pub hint: String,
}

impl Field {
    pub fn number(label: &str, value: u64, min: u64, max: Option<u64>, hint: String) -> Field {
        Field {
            label: label.into(),
            value: value.to_string(),
            kind: FieldKind::Number { min, max },
            hint,
        }
    }
    pub fn text(label: &str, value: &str, hint: &str) -> Field {
        Field {
            label: label.into(),
            value: value.into(),
            kind: FieldKind::Text { required: true },
            hint: hint.into(),
        }
    }
    pub fn flag(label: &str, on: bool, hint: &str) -> Field {
        Field {
            label: label.into(),
            value: if on { "yes" } else { "no" }.into(),
            kind: FieldKind::Flag,
            hint: hint.into(),
        }
    }

    pub fn is_on(&self) -> bool {
        self.value == "yes"
    }

    /// The field's number (call after [`Form::validate`]).
    pub fn number_value(&self) -> u64 {
        self.value.parse().unwrap_or(0)
    }

    /// Why the value is not acceptable.
    fn problem(&self) -> Option<String> {
        match &self.kind {
            FieldKind::Number { min, max } => {
                let v: u64 = match self.value.parse() {
                    Ok(v) => v,
                    Err(_) if self.value.is_empty() => {
                        return Some(format!("{}: a number is needed", self.label))
                    }
                    Err(_) => return Some(format!("{}: {} is too big", self.label, self.value)),
                };
                if v < *min {
                    return Some(format!("{}: {v} is below the minimum of {min}", self.label));
                }
                match max {
                    Some(m) if v > *m => {
                        Some(format!("{}: {v} is above the maximum of {m}", self.label))
                    }
                    _ => None,
                }
            }
            FieldKind::Text { required: true } if self.value.trim().is_empty() => {
                Some(format!("{}: cannot be empty", self.label))
            }
            _ => None,
        }
    }
}

/// What happened to a key given to a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormOutcome {
    /// Still editing.
    Editing,
    Cancelled,
    /// Every field is valid.
    Submitted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub title: String,
    pub fields: Vec<Field>,
    pub focus: usize,
    /// The last refused key or the failed validation, in the form's own words.
    pub error: Option<String>,
}

impl Form {
    pub fn new(title: impl Into<String>, fields: Vec<Field>) -> Form {
        Form {
            title: title.into(),
            fields,
            focus: 0,
            error: None,
        }
    }

    /// Checks every field; on a problem the focus moves to the field and the error says why.
    pub fn validate(&mut self) -> bool {
        for (i, f) in self.fields.iter().enumerate() {
            if let Some(p) = f.problem() {
                self.focus = i;
                self.error = Some(p);
                return false;
            }
        }
        self.error = None;
        true
    }

    pub fn on_key(&mut self, key: KeyEvent) -> FormOutcome {
        let n = self.fields.len().max(1);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return FormOutcome::Cancelled,
            KeyCode::Enter => {
                if self.validate() {
                    return FormOutcome::Submitted;
                }
            }
            KeyCode::Tab | KeyCode::Down => self.focus = (self.focus + 1) % n,
            KeyCode::BackTab | KeyCode::Up => self.focus = (self.focus + n - 1) % n,
            _ => {
                let Some(field) = self.fields.get_mut(self.focus) else {
                    return FormOutcome::Editing;
                };
                match (key.code, &field.kind) {
                    (KeyCode::Char('u'), _) if ctrl => {
                        field.value.clear();
                        self.error = None;
                    }
                    (KeyCode::Backspace, FieldKind::Flag) => {}
                    (KeyCode::Backspace, _) => {
                        field.value.pop();
                        self.error = None;
                    }
                    (KeyCode::Char(' ' | 'y' | 'n'), FieldKind::Flag) => {
                        let on = match key.code {
                            KeyCode::Char('y') => true,
                            KeyCode::Char('n') => false,
                            _ => !field.is_on(),
                        };
                        field.value = if on { "yes" } else { "no" }.into();
                        self.error = None;
                    }
                    (KeyCode::Char(c), FieldKind::Flag) => {
                        self.error = Some(format!(
                            "{}: '{c}' is not an answer: space toggles, y / n set it",
                            field.label
                        ));
                    }
                    (KeyCode::Char(c), FieldKind::Number { .. }) if !ctrl => {
                        if !c.is_ascii_digit() {
                            self.error = Some(format!(
                                "{}: '{c}' is not a digit (digits 0-9 only)",
                                field.label
                            ));
                        } else if field.value.len() >= 12 {
                            self.error = Some(format!("{}: that is too many digits", field.label));
                        } else {
                            if field.value == "0" {
                                field.value.clear();
                            }
                            field.value.push(c);
                            self.error = None;
                        }
                    }
                    (KeyCode::Char(c), FieldKind::Text { .. }) if !ctrl => {
                        if c.is_control() {
                            return FormOutcome::Editing;
                        }
                        field.value.push(c);
                        self.error = None;
                    }
                    _ => {}
                }
            }
        }
        FormOutcome::Editing
    }
}

/// What a confirmation asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm<T> {
    pub title: String,
    /// The plan as the operator must see it.
    pub lines: Vec<String>,
    /// On a production cloud: the cluster name to type.
    pub name: Option<String>,
    pub typed: String,
    pub error: Option<String>,
    pub scroll: u16,
    pub then: T,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfirmOutcome {
    Open,
    No,
    /// Yes, with the typed name when one was asked for.
    Yes(Option<String>),
}

impl<T> Confirm<T> {
    pub fn new(
        title: impl Into<String>,
        lines: Vec<String>,
        name: Option<String>,
        then: T,
    ) -> Self {
        Confirm {
            title: title.into(),
            lines,
            name,
            typed: String::new(),
            error: None,
            scroll: 0,
            then,
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> ConfirmOutcome {
        match key.code {
            KeyCode::Esc => return ConfirmOutcome::No,
            KeyCode::Up => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::Down => self.scroll = self.scroll.saturating_add(1),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(10),
            _ => match &self.name {
                None => match key.code {
                    KeyCode::Enter | KeyCode::Char('y') | KeyCode::Char('Y') => {
                        return ConfirmOutcome::Yes(None)
                    }
                    KeyCode::Char('n') | KeyCode::Char('N') => return ConfirmOutcome::No,
                    _ => {}
                },
                Some(name) => match key.code {
                    KeyCode::Enter if self.typed == *name => {
                        return ConfirmOutcome::Yes(Some(self.typed.clone()))
                    }
                    KeyCode::Enter => {
                        self.error = Some(if self.typed.is_empty() {
                            format!("type the cluster name '{name}' to confirm (esc cancels)")
                        } else {
                            format!(
                                "'{}' is not the cluster name '{name}': nothing done (esc cancels)",
                                self.typed
                            )
                        });
                    }
                    KeyCode::Backspace => {
                        self.typed.pop();
                        self.error = None;
                    }
                    KeyCode::Char(c) if !c.is_control() => {
                        self.typed.push(c);
                        self.error = None;
                    }
                    _ => {}
                },
            },
        }
        ConfirmOutcome::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn bad_keys_are_refused_with_a_reason_and_keep_the_value() {
        let mut f = Form::new(
            "scale",
            vec![Field::number("nodes", 6, 1, Some(12), String::new())],
        );
        f.on_key(k(KeyCode::Backspace));
        assert_eq!(f.fields[0].value, "");
        f.on_key(k(KeyCode::Char('1')));
        f.on_key(k(KeyCode::Char('x')));
        assert_eq!(f.fields[0].value, "1");
        assert!(f.error.as_deref().unwrap().contains("'x' is not a digit"));
        f.on_key(k(KeyCode::Char('5')));
        assert_eq!(f.error, None);
        assert_eq!(f.on_key(k(KeyCode::Enter)), FormOutcome::Editing);
        assert!(f
            .error
            .as_deref()
            .unwrap()
            .contains("above the maximum of 12"));
        f.on_key(k(KeyCode::Backspace));
        assert_eq!(f.on_key(k(KeyCode::Enter)), FormOutcome::Submitted);
        assert_eq!(f.fields[0].number_value(), 1);
        assert_eq!(f.on_key(k(KeyCode::Esc)), FormOutcome::Cancelled);
    }

    #[test]
    fn validation_moves_to_the_bad_field() {
        let mut f = Form::new(
            "upgrade",
            vec![
                Field::text("image", "", ""),
                Field::number("batch", 1, 1, None, String::new()),
                Field::flag("pause on failure", true, ""),
            ],
        );
        f.focus = 2;
        f.on_key(k(KeyCode::Char('q')));
        assert!(f.fields[2].is_on());
        assert!(f.error.is_some());
        f.on_key(k(KeyCode::Char(' ')));
        assert!(!f.fields[2].is_on());
        assert_eq!(f.on_key(k(KeyCode::Enter)), FormOutcome::Editing);
        assert_eq!(f.focus, 0);
        assert!(f
            .error
            .as_deref()
            .unwrap()
            .contains("image: cannot be empty"));
        f.on_key(k(KeyCode::BackTab));
        assert_eq!(f.focus, 2);
    }

    #[test]
    fn production_confirmation_wants_the_exact_name() {
        let mut c = Confirm::new("scale", vec![], Some("prod".into()), ());
        assert_eq!(c.on_key(k(KeyCode::Char('y'))), ConfirmOutcome::Open);
        assert_eq!(c.on_key(k(KeyCode::Enter)), ConfirmOutcome::Open);
        assert!(c
            .error
            .as_deref()
            .unwrap()
            .contains("'y' is not the cluster name"));
        c.on_key(k(KeyCode::Backspace));
        for ch in "prod".chars() {
            c.on_key(k(KeyCode::Char(ch)));
        }
        assert_eq!(
            c.on_key(k(KeyCode::Enter)),
            ConfirmOutcome::Yes(Some("prod".into()))
        );
        let mut plain = Confirm::new("scale", vec![], None, ());
        assert_eq!(plain.on_key(k(KeyCode::Char('x'))), ConfirmOutcome::Open);
        assert_eq!(plain.on_key(k(KeyCode::Char('n'))), ConfirmOutcome::No);
        assert_eq!(plain.on_key(k(KeyCode::Enter)), ConfirmOutcome::Yes(None));
    }
}
