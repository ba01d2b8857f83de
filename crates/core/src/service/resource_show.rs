//! One resource as `openstack stack resource show` describes it, with its metadata and its
//! own latest events: what the resource detail view shows. Attribute values and metadata
//! are arbitrary JSON chosen by the resource type; they become text here (a string as it is,
//! anything else as JSON), so no JSON value reaches the console, and they are bounded: a
//! resource's attributes can hold a whole kubeconfig or a list of a thousand addresses.

use crate::model::{StackEvent, StackResource};
use chrono::{DateTime, Utc};

/// At most this many of the resource's events are fetched (newest first).
pub const RESOURCE_EVENTS: u32 = 20;
/// At most this many attributes are kept (the rest are counted).
pub const MAX_ATTRIBUTES: usize = 64;
/// At most this many bytes of one attribute value, or of the metadata, are kept.
pub const MAX_VALUE_BYTES: usize = 8 * 1024;

/// `resource show` (`GET .../resources/{name}`), its metadata and its events.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceDetail {
    /// Type, physical id, status and full reason, last change, `required_by`.
    pub resource: StackResource,
    pub created_at: Option<DateTime<Utc>>,
    /// The attributes Heat resolved, by name, values as text (`null` when Heat could not
    /// resolve one, e.g. on a failed resource), in name order.
    pub attributes: Vec<(String, String)>,
    /// Attributes left out beyond [`MAX_ATTRIBUTES`].
    pub attributes_omitted: usize,
    /// The metadata as indented JSON text; empty when the resource has none.
    pub metadata: String,
    /// The resource's latest events, newest first (at most [`RESOURCE_EVENTS`]).
    pub events: Vec<StackEvent>,
}

/// A JSON value as text, cut at [`MAX_VALUE_BYTES`] (on a character boundary, said so).
pub fn value_text(value: &serde_json::Value) -> String {
    let text = match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "null".to_string(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    };
    bounded(text)
}

/// The metadata as text: empty for none (`{}` or `null`).
pub fn metadata_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => String::new(),
        serde_json::Value::Object(m) if m.is_empty() => String::new(),
        v => bounded(serde_json::to_string_pretty(v).unwrap_or_default()),
    }
}

/// Attributes as sorted text pairs, at most [`MAX_ATTRIBUTES`], and how many were left out.
pub fn attribute_texts(
    attributes: Option<serde_json::Map<String, serde_json::Value>>,
) -> (Vec<(String, String)>, usize) {
    let mut all: Vec<(String, serde_json::Value)> =
        attributes.unwrap_or_default().into_iter().collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let omitted = all.len().saturating_sub(MAX_ATTRIBUTES);
    let kept = all
        .into_iter()
        .take(MAX_ATTRIBUTES)
        .map(|(k, v)| (k, value_text(&v)))
        .collect();
    (kept, omitted)
}

fn bounded(mut text: String) -> String {
    if text.len() <= MAX_VALUE_BYTES {
        return text;
    }
    let total = text.len();
    let mut cut = MAX_VALUE_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!("\n… {} more bytes not shown", total - cut));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_become_bounded_text() {
        assert_eq!(value_text(&json!("10.0.0.5")), "10.0.0.5");
        assert_eq!(value_text(&json!(null)), "null");
        assert_eq!(value_text(&json!([1])), "[\n  1\n]");
        let big = value_text(&json!("é".repeat(MAX_VALUE_BYTES)));
        assert!(big.len() < MAX_VALUE_BYTES + 64);
        assert!(big.ends_with(&format!("… {} more bytes not shown", MAX_VALUE_BYTES)));
        assert_eq!(metadata_text(&json!({})), "");
        assert_eq!(metadata_text(&json!({"a": 1})), "{\n  \"a\": 1\n}");
    }

    #[test]
    fn attributes_are_sorted_and_bounded() {
        let mut m = serde_json::Map::new();
        for i in 0..MAX_ATTRIBUTES + 3 {
            m.insert(format!("a{i:03}"), json!(i));
        }
        let (kept, omitted) = attribute_texts(Some(m));
        assert_eq!(kept.len(), MAX_ATTRIBUTES);
        assert_eq!(omitted, 3);
        assert_eq!(kept[0], ("a000".to_string(), "0".to_string()));
    }
}
