//! One stack as `openstack stack show` describes it, with its outputs list and its
//! template: what the stack detail view shows. Parameters are Heat's text (a parameter
//! declared `hidden: true` comes back as `******` and stays so: caldera never asks for it
//! in clear); the template becomes YAML text, bounded (a template with its nested files can
//! be large), so no JSON value reaches the console.

use super::StackOutput;
use crate::model::StackSummary;

/// At most this many parameters are kept (the rest are counted).
pub const MAX_PARAMETERS: usize = 200;
/// At most this many bytes of one parameter value are kept.
pub const MAX_PARAMETER_BYTES: usize = 1024;
/// At most this many bytes of the template are kept.
pub const MAX_TEMPLATE_BYTES: usize = 64 * 1024;

/// `stack show` (outputs not resolved), `GET .../outputs` and `GET .../template`.
#[derive(Debug, Clone, PartialEq)]
pub struct StackOverview {
    /// Name, id, status and full reason, times, parent.
    pub summary: StackSummary,
    pub description: Option<String>,
    /// Parameters by name, values as Heat gives them (hidden ones as `******`), bounded.
    pub parameters: Vec<(String, String)>,
    /// Parameters left out beyond [`MAX_PARAMETERS`].
    pub parameters_omitted: usize,
    /// The outputs' keys and descriptions (`O` evaluates them).
    pub outputs: Vec<StackOutput>,
    pub tags: Vec<String>,
    pub timeout_mins: Option<u32>,
    pub disable_rollback: Option<bool>,
    /// The template as YAML text, cut at [`MAX_TEMPLATE_BYTES`] (said so at its end).
    pub template: String,
}

/// Parameters, bounded in number and in each value's size.
pub fn bounded_parameters(
    parameters: impl IntoIterator<Item = (String, String)>,
) -> (Vec<(String, String)>, usize) {
    let all: Vec<(String, String)> = parameters.into_iter().collect();
    let omitted = all.len().saturating_sub(MAX_PARAMETERS);
    let kept = all
        .into_iter()
        .take(MAX_PARAMETERS)
        .map(|(k, v)| (k, cut(v, MAX_PARAMETER_BYTES)))
        .collect();
    (kept, omitted)
}

/// A HOT template's sections in the order templates are written (Heat gives the template
/// back as JSON with its keys sorted); any other key follows.
const SECTIONS: [&str; 7] = [
    "heat_template_version",
    "description",
    "parameter_groups",
    "parameters",
    "conditions",
    "resources",
    "outputs",
];

/// The template (Heat gives it as JSON) as YAML, the language it was most likely written
/// in, its sections in the written order, bounded.
pub fn template_text(template: &serde_json::Value) -> String {
    let text = match template.as_object() {
        Some(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by_key(|k| {
                SECTIONS
                    .iter()
                    .position(|s| s == k)
                    .unwrap_or(SECTIONS.len())
            });
            let mut out = serde_yaml_ng::Mapping::new();
            for k in keys {
                let v = serde_yaml_ng::to_value(&map[k]).unwrap_or_default();
                out.insert(serde_yaml_ng::Value::String(k.clone()), v);
            }
            serde_yaml_ng::to_string(&out)
        }
        None => serde_yaml_ng::to_string(template),
    };
    let text = text.unwrap_or_else(|_| serde_json::to_string_pretty(template).unwrap_or_default());
    cut(text, MAX_TEMPLATE_BYTES)
}

fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str(&format!("\n… {} more bytes not shown", total - at));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_and_template_are_bounded() {
        let many = (0..MAX_PARAMETERS + 2).map(|i| (format!("p{i}"), "x".repeat(2000)));
        let (kept, omitted) = bounded_parameters(many);
        assert_eq!((kept.len(), omitted), (MAX_PARAMETERS, 2));
        assert!(kept[0].1.ends_with("… 976 more bytes not shown"));
        let t = template_text(&json!({
            "resources": {}, "description": "d", "heat_template_version": "2021-04-16"
        }));
        assert_eq!(
            t,
            "heat_template_version: 2021-04-16\ndescription: d\nresources: {}\n"
        );
        let big = template_text(&json!({ "description": "é".repeat(MAX_TEMPLATE_BYTES) }));
        assert!(big.len() < MAX_TEMPLATE_BYTES + 64);
        assert!(big.contains("more bytes not shown"));
    }
}
