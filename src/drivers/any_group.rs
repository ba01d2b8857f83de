//! Changing any scaling group of an operator's own stack (issue 11, item 5; the planning half).
//!
//! A template nobody here wrote names its parameters as it likes; before caldera offers to
//! change `KEY=VALUE` for the group at a resource path, it checks, from what Heat says:
//! - the stack has that parameter at all;
//! - the group's own definition in the stack's template reads it (`get_param: KEY`,
//!   anywhere under the group resource), otherwise the change cannot reach its members;
//! - the stack is not one Magnum owns (its conductor would fight a Heat update behind its
//!   back) unless the operator says otherwise;
//! - Heat's own preview of the update (`PATCH .../preview`) lists the group as updated or
//!   replaced: the plan shows what Heat says, not what caldera guesses.
//!
//! Heat 27 answers `400` to `preview?show_nested=true` for a stack holding ResourceGroups
//! (the engine fails with "'NoneType' object is not iterable", measured on Magnum's layout),
//! so the preview is the top level's: which groups and resources change, not which members.
//!
//! Not done yet: applying the plan (with hooks on the group's path for node-by-node
//! rollouts through `crate::rollout`), and the command that takes `STACK/group --set`.

use crate::api::heat::{HeatClient, PreviewChanges, StackUpdate};
use crate::model::StackRef;
use crate::service::ServiceResult;
use serde_json::Value;
use std::collections::BTreeMap;

/// Parameters only Magnum's Heat driver gives a stack (`kubecluster.yaml`): a stack with any
/// of them belongs to a Magnum cluster.
const MAGNUM_PARAMETERS: [&str; 3] = ["is_cluster_stack", "magnum_url", "cluster_uuid"];

/// Expression nesting looked through for `get_param` (bounds hostile templates).
const MAX_DEPTH: usize = 32;

/// A planned parameter change for one group of a stack.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupUpdatePlan {
    pub stack: StackRef,
    /// The group's resource path in the stack (`kube_minions`).
    pub group: String,
    pub set: BTreeMap<String, String>,
    /// Heat's preview of the whole stack update.
    pub preview: PreviewChanges,
    /// Why the change is refused; empty when it may proceed.
    pub refusals: Vec<String>,
}

impl GroupUpdatePlan {
    pub fn lines(&self) -> Vec<String> {
        let set: Vec<String> = self.set.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut out = vec![format!(
            "update {}/{}: {}",
            self.stack.name,
            self.group,
            set.join(" ")
        )];
        let p = &self.preview;
        for (what, list) in [
            ("updated", &p.updated),
            ("replaced", &p.replaced),
            ("added", &p.added),
            ("deleted", &p.deleted),
        ] {
            if !list.is_empty() {
                out.push(format!("  Heat's preview, {what}: {}", list.join(", ")));
            }
        }
        out.extend(self.refusals.iter().map(|r| format!("  refused: {r}")));
        out
    }
}

/// Plans setting `set` on the stack of the group at `group` (a top-level resource name).
pub async fn plan_group_update(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    set: &BTreeMap<String, String>,
    allow_magnum: bool,
) -> ServiceResult<GroupUpdatePlan> {
    let (detail, template) = futures::join!(heat.get_stack(stack, false), heat.get_template(stack));
    let (detail, template) = (detail?, template?);
    let mut refusals = reach_refusals(&template, &detail.parameters, group, set);
    if !allow_magnum {
        if let Some(p) = MAGNUM_PARAMETERS
            .iter()
            .find(|p| detail.parameters.contains_key(**p))
        {
            refusals.push(format!(
                "stack {} belongs to a Magnum cluster (it has Magnum's parameter {p}): \
                 Magnum's conductor would undo or fight a Heat update behind its back; \
                 change it through Magnum, or say so to go ahead",
                stack.name
            ));
        }
    }
    let update = StackUpdate {
        parameters: set
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
        existing: true,
        ..Default::default()
    };
    let preview = heat.preview_update(stack, &update).await?;
    if refusals.is_empty()
        && !preview.updated.iter().any(|r| r == group)
        && !preview.replaced.iter().any(|r| r == group)
    {
        refusals.push(format!(
            "Heat's preview does not update {group}: its members would not change"
        ));
    }
    Ok(GroupUpdatePlan {
        stack: stack.clone(),
        group: group.to_string(),
        set: set.clone(),
        preview,
        refusals,
    })
}

/// Refusals from the template alone: unknown parameters, and parameters the group's
/// definition does not read.
pub fn reach_refusals(
    template: &Value,
    parameters: &BTreeMap<String, String>,
    group: &str,
    set: &BTreeMap<String, String>,
) -> Vec<String> {
    let Some(definition) = template.get("resources").and_then(|r| r.get(group)) else {
        return vec![format!("the stack's template has no resource {group}")];
    };
    let mut read = Vec::new();
    params_read(definition, &mut read, 0);
    let mut out = Vec::new();
    for key in set.keys() {
        if !parameters.contains_key(key) {
            out.push(format!("the stack has no parameter {key}"));
        } else if !read.contains(key) {
            out.push(format!(
                "parameter {key} does not reach {group}'s members (its definition reads: {})",
                if read.is_empty() {
                    "no parameter".to_string()
                } else {
                    read.join(", ")
                }
            ));
        }
    }
    out
}

/// Parameter names read by `get_param` anywhere in `v`, in the order met, once each.
fn params_read(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, inner) in map {
                if k == "get_param" {
                    let name = match inner {
                        Value::String(s) => Some(s.as_str()),
                        Value::Array(a) => a.first().and_then(Value::as_str),
                        _ => None,
                    };
                    if let Some(n) = name {
                        if !out.iter().any(|x| x == n) {
                            out.push(n.to_string());
                        }
                    }
                }
                params_read(inner, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for item in items {
                params_read(item, out, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_parameter_must_reach_the_group() {
        let template = json!({"resources": {
            "kube_masters": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "number_of_masters"}}},
            "kube_minions": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "number_of_minions"},
                "resource_def": {"properties": {"server_image": {"get_param": ["minion_image"]}}}}},
        }});
        let params = map(&[
            ("number_of_masters", "3"),
            ("number_of_minions", "5"),
            ("minion_image", "a"),
        ]);
        let ok = reach_refusals(
            &template,
            &params,
            "kube_minions",
            &map(&[("minion_image", "b")]),
        );
        assert!(ok.is_empty(), "{ok:?}");
        let r = reach_refusals(
            &template,
            &params,
            "kube_minions",
            &map(&[("number_of_masters", "4"), ("flavor", "x")]),
        );
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].contains("no parameter flavor"), "{r:?}");
        assert!(
            r[1].contains("number_of_masters does not reach kube_minions")
                && r[1].contains("number_of_minions, minion_image"),
            "{r:?}"
        );
        let r = reach_refusals(&template, &params, "nodes", &map(&[("minion_image", "b")]));
        assert!(r[0].contains("no resource nodes"));
    }
}
