//! A value an action gives a Heat stack parameter, from the operator's text to what Heat is
//! sent and back to the words of a command an operator can copy.
//!
//! The command line reads `--set KEY=VALUE` as JSON where the text is JSON (`3`, `true`,
//! `["a","b"]`, `{"k":1}`) and as a string where it is not (`fcos-40`). That guess is only a
//! guess: the template declares each parameter's type, and a parameter of type `string` (HOT
//! `string`, CFN `String`) takes the operator's text as it was typed. Sent as JSON,
//! `release=24.10` would be the number 24.1, and Heat would store `"24.1"`
//! ([`ParameterValue::fitted_to`]). A value caldera computes (a member count, a removal list,
//! an image name from a form) is made with its type known ([`ParameterValue::text`],
//! [`ParameterValue::json`]) and never guessed.
//!
//! Plans and the journal keep a value as its JSON text (`"\"fcos-40\""`, `"3"`), as they
//! always have; journals written before this type read back the same.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// Parameters an action sets, by name.
pub type ParameterValues = BTreeMap<String, ParameterValue>;

/// One parameter's value, as JSON (what Heat is sent in a PATCH or a preview), and the
/// operator's text where the value was read from it: `24.10` reads as the number 24.1, and
/// a `string` parameter must get `24.10` back, not `24.1`.
#[derive(Debug, Clone)]
pub struct ParameterValue {
    value: Value,
    typed: Option<String>,
}

/// Two values are the same when Heat would be sent the same.
impl PartialEq for ParameterValue {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for ParameterValue {}

impl ParameterValue {
    /// The operator's `--set` text: JSON where it reads as JSON, a string otherwise. (Kept
    /// JSON text reads back the same way.)
    pub fn parse(text: &str) -> ParameterValue {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => ParameterValue {
                value,
                typed: Some(text.to_string()),
            },
            Err(_) => ParameterValue::text(text),
        }
    }

    /// A string, whatever it looks like (an image named `2024`).
    pub fn text(text: impl Into<String>) -> ParameterValue {
        ParameterValue {
            value: Value::String(text.into()),
            typed: None,
        }
    }

    /// A value whose JSON type caldera knows (a count, a removal policy).
    pub fn json(value: Value) -> ParameterValue {
        ParameterValue { value, typed: None }
    }

    /// `--set KEY=VALUE` pairs as the command line takes them; the error names the pair.
    pub fn parse_pairs<'a>(
        pairs: impl IntoIterator<Item = &'a str>,
    ) -> Result<ParameterValues, String> {
        let mut out = ParameterValues::new();
        for pair in pairs {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("--set {pair}: expected KEY=VALUE"))?;
            out.insert(key.to_string(), ParameterValue::parse(value));
        }
        Ok(out)
    }

    /// This value for a parameter declared `kind` (the template's `type`, `None` where the
    /// template does not declare it): a `string` parameter takes the text of a number, a
    /// boolean or null exactly as it was typed, spaces included (`' 7'` stays ` 7`: the
    /// operator's text is the value). Every other type takes the value as it was read:
    /// Heat converts a number, a boolean, a list or JSON to the declared type itself, and
    /// says so where it cannot.
    pub fn fitted_to(self, kind: Option<&str>) -> ParameterValue {
        let string_kind = kind.is_some_and(|k| k.eq_ignore_ascii_case("string"));
        match &self.value {
            Value::Number(_) | Value::Bool(_) | Value::Null if string_kind => {
                let text = self.typed.unwrap_or_else(|| self.value.to_string());
                ParameterValue::text(text)
            }
            _ => self,
        }
    }

    /// What Heat is sent.
    pub fn to_json(&self) -> Value {
        self.value.clone()
    }

    /// The value as an operator reads it, and as Heat shows a stack's parameters: a string's
    /// own text, anything else as JSON.
    pub fn display_text(&self) -> String {
        match &self.value {
            Value::String(s) => s.clone(),
            _ => self.json_text(),
        }
    }

    /// The text of a `--set` value the command line reads back as this value: a string is
    /// written bare where it would not read as JSON, as JSON otherwise.
    pub fn command_word(&self) -> String {
        match &self.value {
            Value::String(s) if serde_json::from_str::<Value>(s).is_err() => s.clone(),
            _ => self.json_text(),
        }
    }

    /// The value as JSON text, as plans and the journal keep it: the operator's own text
    /// where the value was read from it (`24.10`, not `24.1`).
    fn json_text(&self) -> String {
        match (&self.value, &self.typed) {
            (Value::String(_), _) | (_, None) => self.value.to_string(),
            (_, Some(typed)) => typed.trim().to_string(),
        }
    }
}

/// `values` fitted to the parameter types `template` declares (HOT `parameters`, CFN
/// `Parameters`); see [`ParameterValue::fitted_to`].
pub fn fit_to_template(template: &Value, values: ParameterValues) -> ParameterValues {
    let declared = template
        .get("parameters")
        .or_else(|| template.get("Parameters"))
        .and_then(Value::as_object);
    values
        .into_iter()
        .map(|(key, value)| {
            let kind = declared
                .and_then(|d| d.get(&key))
                .and_then(|p| p.get("type").or_else(|| p.get("Type")))
                .and_then(Value::as_str);
            let fitted = value.fitted_to(kind);
            (key, fitted)
        })
        .collect()
}

/// Kept as its JSON text, as plans and journal entries always kept parameter values.
impl Serialize for ParameterValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.json_text())
    }
}

impl<'de> Deserialize<'de> for ParameterValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(ParameterValue::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_operators_text_is_json_where_it_reads_as_json() {
        assert_eq!(ParameterValue::parse("3").to_json(), json!(3));
        assert_eq!(ParameterValue::parse("[\"a\"]").to_json(), json!(["a"]));
        assert_eq!(ParameterValue::parse("fcos-40").to_json(), json!("fcos-40"));
        assert_eq!(ParameterValue::parse("\"2024\"").to_json(), json!("2024"));
    }

    #[test]
    fn a_string_parameter_keeps_the_text_that_looks_like_a_number() {
        let hot = json!({"parameters": {
            "release": {"type": "string"}, "count": {"type": "number"},
            "tags": {"type": "comma_delimited_list"}}});
        let cfn = json!({"Parameters": {"Release": {"Type": "String"}}});
        let sets = ParameterValue::parse_pairs([
            "release=24.10",
            "count=3",
            "tags=[\"a\",\"b\"]",
            "other=true",
        ])
        .expect("pairs");
        let fitted = fit_to_template(&hot, sets);
        assert_eq!(fitted["release"].to_json(), json!("24.10"));
        assert_eq!(fitted["release"].command_word(), "\"24.10\"");
        assert_eq!(fitted["count"].to_json(), json!(3));
        assert_eq!(fitted["tags"].to_json(), json!(["a", "b"]));
        // Not declared: Heat refuses it by name; the value stays as read.
        assert_eq!(fitted["other"].to_json(), json!(true));
        let sets = ParameterValue::parse_pairs(["Release=true"]).expect("pairs");
        assert_eq!(
            fit_to_template(&cfn, sets)["Release"].to_json(),
            json!("true")
        );
    }

    /// A `string` parameter takes the operator's text as typed, spaces included: JSON reads
    /// ` 7` as the number 7, but the value is the text.
    #[test]
    fn a_string_parameter_keeps_the_spaces_typed_around_a_number() {
        let hot = json!({"parameters": {"x": {"type": "string"}, "n": {"type": "number"}}});
        let sets = ParameterValue::parse_pairs(["x= 7", "n= 7"]).expect("pairs");
        let fitted = fit_to_template(&hot, sets);
        assert_eq!(fitted["x"].to_json(), json!(" 7"));
        assert_eq!(fitted["x"].display_text(), " 7");
        // The command shown to carry it on reads back the same text.
        let word = fitted["x"].command_word();
        assert_eq!(ParameterValue::parse(&word).to_json(), json!(" 7"));
        assert_eq!(fitted["n"].to_json(), json!(7));
    }

    #[test]
    fn a_pair_without_an_equals_sign_is_named() {
        let e = ParameterValue::parse_pairs(["image"]).expect_err("no =");
        assert!(e.contains("--set image"), "{e}");
    }

    #[test]
    fn kept_values_read_back_as_they_were_and_as_old_journals_wrote_them() {
        let values: ParameterValues = [
            ("a".to_string(), ParameterValue::text("2024")),
            ("b".to_string(), ParameterValue::json(json!(3))),
        ]
        .into();
        let text = serde_json::to_string(&values).expect("serialize");
        assert_eq!(text, r#"{"a":"\"2024\"","b":"3"}"#);
        let back: ParameterValues = serde_json::from_str(&text).expect("deserialize");
        assert_eq!(back, values);
    }

    #[test]
    fn a_value_is_shown_as_its_text_and_written_as_it_reads_back() {
        assert_eq!(ParameterValue::text("fcos-40").display_text(), "fcos-40");
        assert_eq!(ParameterValue::text("fcos-40").command_word(), "fcos-40");
        assert_eq!(ParameterValue::text("2024").display_text(), "2024");
        assert_eq!(ParameterValue::text("2024").command_word(), "\"2024\"");
        assert_eq!(ParameterValue::json(json!(3)).command_word(), "3");
        // As typed: a number of a parameter that takes numbers reads back as written.
        assert_eq!(ParameterValue::parse("24.10").command_word(), "24.10");
        assert_eq!(ParameterValue::parse("24.10").display_text(), "24.10");
    }
}
