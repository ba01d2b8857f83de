//! Small forms (scale count, upgrade options, node-action command) and the dialogs that
//! follow them: waiting for a plan, the confirmation (with the typed cluster name on a
//! production cloud), the abort choice and a read-only text overlay. Bad input never
//! clears what was typed: the key is refused with a message in the form.

use crate::keys::{KeyAction, KeyMap, CONFIRM_DIALOG, FORM_DIALOG};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a field accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// Digits only, checked against `min..=max` on submit.
    Number { min: u64, max: Option<u64> },
    /// Any text; `required` refuses an empty value.
    Text { required: bool },
    /// yes / no: toggled (space), or set (y / n), as the key table says.
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

    /// A key for the form: a character typed into a text or number field goes to the
    /// field (even a letter the key table binds); every other key is looked up in the
    /// table's form contexts.
    pub fn on_key(&mut self, key: KeyEvent, keys: &KeyMap) -> FormOutcome {
        if let Some(c) = typed_char(&key) {
            if self.type_char(c) {
                return FormOutcome::Editing;
            }
        }
        let n = self.fields.len().max(1);
        match keys.lookup_dialog(&key, FORM_DIALOG) {
            Some(KeyAction::DialogCancel) => return FormOutcome::Cancelled,
            Some(KeyAction::DialogSubmit) => {
                if self.validate() {
                    return FormOutcome::Submitted;
                }
            }
            Some(KeyAction::FieldNext) => self.focus = (self.focus + 1) % n,
            Some(KeyAction::FieldPrev) => self.focus = (self.focus + n - 1) % n,
            Some(action) => self.field_action(action, &key, keys),
            None => self.field_key(&key, keys),
        }
        FormOutcome::Editing
    }

    /// A character for the focused text or number field; `false` when the focused field
    /// is a flag (its keys are actions: toggle, yes, no).
    fn type_char(&mut self, c: char) -> bool {
        let Some(field) = self.fields.get_mut(self.focus) else {
            return false;
        };
        match field.kind {
            FieldKind::Flag => return false,
            FieldKind::Number { .. } if !c.is_ascii_digit() => {
                self.error = Some(format!(
                    "{}: '{c}' is not a digit (digits 0-9 only)",
                    field.label
                ));
            }
            FieldKind::Number { .. } if field.value.len() >= 12 => {
                self.error = Some(format!("{}: that is too many digits", field.label));
            }
            FieldKind::Number { .. } => {
                if field.value == "0" {
                    field.value.clear();
                }
                field.value.push(c);
                self.error = None;
            }
            FieldKind::Text { .. } => {
                field.value.push(c);
                self.error = None;
            }
        }
        true
    }

    /// A table action on the focused field (clear, toggle, yes, no).
    fn field_action(&mut self, action: KeyAction, key: &KeyEvent, keys: &KeyMap) {
        let Some(field) = self.fields.get_mut(self.focus) else {
            return;
        };
        let flag = field.kind == FieldKind::Flag;
        let on = match action {
            KeyAction::FieldClear if !flag => {
                field.value.clear();
                self.error = None;
                return;
            }
            KeyAction::FieldToggle if flag => !field.is_on(),
            KeyAction::AnswerYes if flag => true,
            KeyAction::AnswerNo if flag => false,
            _ => return self.field_key(key, keys),
        };
        field.value = if on { "yes" } else { "no" }.into();
        self.error = None;
    }

    /// A key the table does not bind here: backspace edits, a character on a flag is
    /// refused with the keys that answer it.
    fn field_key(&mut self, key: &KeyEvent, keys: &KeyMap) {
        let Some(field) = self.fields.get_mut(self.focus) else {
            return;
        };
        match (key.code, typed_char(key), &field.kind) {
            (KeyCode::Backspace, _, FieldKind::Flag) => {}
            (KeyCode::Backspace, _, _) => {
                field.value.pop();
                self.error = None;
            }
            (_, Some(c), FieldKind::Flag) => {
                self.error = Some(format!(
                    "{}: '{c}' is not an answer: {} toggles, {} / {} set it",
                    field.label,
                    keys.first_key(KeyAction::FieldToggle),
                    keys.first_key(KeyAction::AnswerYes),
                    keys.first_key(KeyAction::AnswerNo),
                ));
            }
            _ => {}
        }
    }
}

/// The character a key types into a text field: printable, without ctrl or alt.
fn typed_char(key: &KeyEvent) -> Option<char> {
    match key.code {
        KeyCode::Char(c)
            if !c.is_control()
                && !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            Some(c)
        }
        _ => None,
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
    /// Why the name is asked for, when not because the cloud is production.
    pub name_prompt: Option<String>,
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
            name_prompt: None,
            typed: String::new(),
            error: None,
            scroll: 0,
            then,
        }
    }

    /// The name is asked for another reason than a production cloud: `prompt` says which.
    pub fn name_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.name_prompt = Some(prompt.into());
        self
    }

    /// A key for the confirmation. With a name to type, characters go to the name (even
    /// `y`); the rest comes from the table's confirmation contexts.
    pub fn on_key(&mut self, key: KeyEvent, keys: &KeyMap) -> ConfirmOutcome {
        if let (Some(_), Some(c)) = (&self.name, typed_char(&key)) {
            self.typed.push(c);
            self.error = None;
            return ConfirmOutcome::Open;
        }
        match keys.lookup_dialog(&key, CONFIRM_DIALOG) {
            Some(KeyAction::DialogCancel) => return ConfirmOutcome::No,
            Some(KeyAction::DialogUp) => self.scroll = self.scroll.saturating_sub(1),
            Some(KeyAction::DialogDown) => self.scroll = self.scroll.saturating_add(1),
            Some(KeyAction::DialogPageUp) => self.scroll = self.scroll.saturating_sub(10),
            Some(KeyAction::DialogPageDown) => self.scroll = self.scroll.saturating_add(10),
            Some(KeyAction::DialogSubmit) => return self.submit(keys),
            Some(KeyAction::AnswerYes) if self.name.is_none() => return ConfirmOutcome::Yes(None),
            Some(KeyAction::AnswerNo) if self.name.is_none() => return ConfirmOutcome::No,
            _ if key.code == KeyCode::Backspace && self.name.is_some() => {
                self.typed.pop();
                self.error = None;
            }
            _ => {}
        }
        ConfirmOutcome::Open
    }

    /// Enter: yes, unless a name is asked for and not (exactly) typed.
    fn submit(&mut self, keys: &KeyMap) -> ConfirmOutcome {
        let Some(name) = &self.name else {
            return ConfirmOutcome::Yes(None);
        };
        if self.typed == *name {
            return ConfirmOutcome::Yes(Some(self.typed.clone()));
        }
        let cancel = keys.first_key(KeyAction::DialogCancel);
        self.error = Some(if self.typed.is_empty() {
            format!("type the cluster name '{name}' to confirm ({cancel} cancels)")
        } else {
            format!(
                "'{}' is not the cluster name '{name}': nothing done ({cancel} cancels)",
                self.typed
            )
        });
        ConfirmOutcome::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn keys() -> KeyMap {
        KeyMap::default()
    }

    #[test]
    fn bad_keys_are_refused_with_a_reason_and_keep_the_value() {
        let mut f = Form::new(
            "scale",
            vec![Field::number("nodes", 6, 1, Some(12), String::new())],
        );
        f.on_key(k(KeyCode::Backspace), &keys());
        assert_eq!(f.fields[0].value, "");
        f.on_key(k(KeyCode::Char('1')), &keys());
        f.on_key(k(KeyCode::Char('x')), &keys());
        assert_eq!(f.fields[0].value, "1");
        assert!(f.error.as_deref().unwrap().contains("'x' is not a digit"));
        f.on_key(k(KeyCode::Char('5')), &keys());
        assert_eq!(f.error, None);
        assert_eq!(f.on_key(k(KeyCode::Enter), &keys()), FormOutcome::Editing);
        assert!(f
            .error
            .as_deref()
            .unwrap()
            .contains("above the maximum of 12"));
        f.on_key(k(KeyCode::Backspace), &keys());
        assert_eq!(f.on_key(k(KeyCode::Enter), &keys()), FormOutcome::Submitted);
        assert_eq!(f.fields[0].number_value(), 1);
        assert_eq!(f.on_key(k(KeyCode::Esc), &keys()), FormOutcome::Cancelled);
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
        f.on_key(k(KeyCode::Char('q')), &keys());
        assert!(f.fields[2].is_on());
        assert!(
            f.error
                .as_deref()
                .unwrap()
                .contains("'q' is not an answer: space toggles, y / n set it"),
            "{:?}",
            f.error
        );
        f.on_key(k(KeyCode::Char(' ')), &keys());
        assert!(!f.fields[2].is_on());
        assert_eq!(f.on_key(k(KeyCode::Enter), &keys()), FormOutcome::Editing);
        assert_eq!(f.focus, 0);
        assert!(f
            .error
            .as_deref()
            .unwrap()
            .contains("image: cannot be empty"));
        f.on_key(k(KeyCode::BackTab), &keys());
        assert_eq!(f.focus, 2);
    }

    #[test]
    fn production_confirmation_wants_the_exact_name() {
        let mut c = Confirm::new("scale", vec![], Some("prod".into()), ());
        assert_eq!(
            c.on_key(k(KeyCode::Char('y')), &keys()),
            ConfirmOutcome::Open
        );
        assert_eq!(c.on_key(k(KeyCode::Enter), &keys()), ConfirmOutcome::Open);
        assert!(c
            .error
            .as_deref()
            .unwrap()
            .contains("'y' is not the cluster name"));
        c.on_key(k(KeyCode::Backspace), &keys());
        for ch in "prod".chars() {
            c.on_key(k(KeyCode::Char(ch)), &keys());
        }
        assert_eq!(
            c.on_key(k(KeyCode::Enter), &keys()),
            ConfirmOutcome::Yes(Some("prod".into()))
        );
        let mut plain = Confirm::new("scale", vec![], None, ());
        assert_eq!(
            plain.on_key(k(KeyCode::Char('x')), &keys()),
            ConfirmOutcome::Open
        );
        assert_eq!(
            plain.on_key(k(KeyCode::Char('n')), &keys()),
            ConfirmOutcome::No
        );
        assert_eq!(
            plain.on_key(k(KeyCode::Enter), &keys()),
            ConfirmOutcome::Yes(None)
        );
    }

    #[test]
    fn remapped_keys_answer_and_the_old_ones_do_not() {
        let mut keys = keys();
        let problems = keys.apply(&[
            ("answer_yes".into(), vec!["o".into()]),
            ("field_toggle".into(), vec!["t".into()]),
            ("dialog_submit".into(), vec!["ctrl-s".into()]),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
        let mut f = Form::new(
            "upgrade",
            vec![
                Field::text("image", "", ""),
                Field::flag("pause on failure", false, ""),
            ],
        );
        // Into a text field, `t` and `o` are letters.
        for c in "toot".chars() {
            f.on_key(k(KeyCode::Char(c)), &keys);
        }
        assert_eq!(f.fields[0].value, "toot");
        f.on_key(k(KeyCode::Tab), &keys);
        f.on_key(k(KeyCode::Char(' ')), &keys);
        assert!(!f.fields[1].is_on(), "space no longer toggles");
        f.on_key(k(KeyCode::Char('t')), &keys);
        assert!(f.fields[1].is_on());
        assert_eq!(f.on_key(k(KeyCode::Enter), &keys), FormOutcome::Editing);
        let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(f.on_key(ctrl_s, &keys), FormOutcome::Submitted);
        let mut c = Confirm::new("scale", vec![], None, ());
        assert_eq!(c.on_key(k(KeyCode::Char('y')), &keys), ConfirmOutcome::Open);
        assert_eq!(c.on_key(k(KeyCode::Enter), &keys), ConfirmOutcome::Open);
        assert_eq!(
            c.on_key(k(KeyCode::Char('o')), &keys),
            ConfirmOutcome::Yes(None)
        );
        // With a name to type, the new yes key is a letter of the name.
        let mut named = Confirm::new("scale", vec![], Some("oslo".into()), ());
        for ch in "oslo".chars() {
            assert_eq!(
                named.on_key(k(KeyCode::Char(ch)), &keys),
                ConfirmOutcome::Open
            );
        }
        assert_eq!(
            named.on_key(ctrl_s, &keys),
            ConfirmOutcome::Yes(Some("oslo".into()))
        );
    }
}
