//! Resources of a node group's stack beside its group: `OS::Heat::TestResource`s whose
//! `value` reads one of the stack's parameters (`{get_param: P}`) and whose update takes
//! `action_wait_secs: {update: N}` seconds, as a real Heat runs them. An update that
//! changes `P` updates the sibling too, and Heat's stack update stays `UPDATE_IN_PROGRESS`
//! until the slowest of its resources is done: a group whose members are all updated does
//! not complete the stack while a sibling still works (measured on Heat 27 with the
//! real-Heat test `a_rollout_whose_members_are_done_while_heat_updates_beside_them_...`).

use super::{Action, Resource, State, Status, World, STATE_CHANGED};
use serde_json::Value;
use std::collections::BTreeMap;

/// One slow resource beside a group.
#[derive(Debug, Clone)]
pub struct Sibling {
    /// The stack holding it (the group's stack).
    pub stack: usize,
    pub name: String,
    /// The parameter its `value` reads.
    pub param: String,
    /// What its update takes, simulated ms.
    pub update_ms: i64,
    /// The parameter's value it was last created or updated with.
    pub value: String,
    /// When its update under way ends (simulated ms); `None` when settled.
    pub due: Option<i64>,
}

/// The siblings a template declares: `(name, parameter, update seconds)`, for every
/// `OS::Heat::TestResource` other than `group` whose `value` is a `get_param`.
pub fn declared(template: &Value, group: &str) -> Vec<(String, String, i64)> {
    let Some(resources) = template.get("resources").and_then(Value::as_object) else {
        return Vec::new();
    };
    resources
        .iter()
        .filter(|(name, _)| name.as_str() != group)
        .filter(|(_, r)| r.get("type").and_then(Value::as_str) == Some("OS::Heat::TestResource"))
        .filter_map(|(name, r)| {
            let props = r.get("properties")?;
            let param = props.pointer("/value/get_param")?.as_str()?.to_string();
            let secs = props
                .pointer("/action_wait_secs/update")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            Some((name.clone(), param, secs))
        })
        .collect()
}

/// Adds a created sibling `name` to stack `ix`, its value `value`.
pub fn add(w: &mut World, ix: usize, name: &str, param: &str, update_secs: i64, value: &str) {
    let now = w.now();
    let resource = Resource {
        name: w.intern(name),
        rtype: w.intern("OS::Heat::TestResource"),
        physical_id: format!(
            "{}-{name}",
            w.stack(ix).map(|s| s.id.as_str()).unwrap_or("")
        ),
        status: Status::new(Action::Create, State::Complete),
        reason: STATE_CHANGED.to_string(),
        created_ms: now,
        updated_ms: now,
        nested: None,
        required_by: vec![],
        value: Some(value.to_string()),
        description: "",
    };
    if let Some(s) = w.stack_mut(ix) {
        s.resources.push(resource);
    }
    w.siblings.push(Sibling {
        stack: ix,
        name: name.to_string(),
        param: param.to_string(),
        update_ms: update_secs.max(0) * 1000,
        value: value.to_string(),
        due: None,
    });
}

/// An update of stack `ix` with parameters `params`: each sibling whose parameter changes
/// starts its update (the stack's own status is the groups' to set).
pub fn start_updates(w: &mut World, ix: usize, params: &BTreeMap<String, String>) {
    let now = w.now();
    let mut started = Vec::new();
    for s in w.siblings.iter_mut().filter(|s| s.stack == ix) {
        let Some(v) = params.get(&s.param) else {
            continue;
        };
        if *v != s.value {
            s.value = v.clone();
            s.due = Some(now + s.update_ms);
            started.push((s.name.clone(), v.clone()));
        }
    }
    for (name, v) in started {
        if let Some(r) = w.stack_mut(ix).and_then(|s| s.resource_mut(&name)) {
            r.value = Some(v);
        }
        w.set_resource_status(
            ix,
            &name,
            Status::new(Action::Update, State::InProgress),
            STATE_CHANGED,
        );
    }
}

/// A sibling of stack `ix` is still updating.
pub fn busy(w: &World, ix: usize) -> bool {
    w.siblings.iter().any(|s| s.stack == ix && s.due.is_some())
}

/// Ends the sibling updates that are due; a stack whose groups are done completes with
/// its last sibling.
pub fn tick(w: &mut World) {
    let now = w.now();
    let mut due: Vec<(i64, usize, String)> = w
        .siblings
        .iter()
        .filter_map(|s| {
            s.due
                .filter(|d| *d <= now)
                .map(|d| (d, s.stack, s.name.clone()))
        })
        .collect();
    due.sort();
    for (at, ix, name) in due {
        for s in w
            .siblings
            .iter_mut()
            .filter(|s| s.stack == ix && s.name == name)
        {
            s.due = None;
        }
        w.at_time(at, |w| {
            w.set_resource_status(
                ix,
                &name,
                Status::new(Action::Update, State::Complete),
                STATE_CHANGED,
            );
            let groups_busy = w.groups.iter().any(|g| g.ng_stack == ix && g.op.is_some());
            let updating = w
                .stack(ix)
                .is_some_and(|s| s.status == Status::new(Action::Update, State::InProgress));
            if !groups_busy && !busy(w, ix) && updating {
                w.set_stack_status(
                    ix,
                    Status::new(Action::Update, State::Complete),
                    super::completed(Action::Update),
                );
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The sibling the real-Heat test writes is read; the group itself, a TestResource with
    /// a literal value and other types are not siblings.
    #[test]
    fn declared_reads_test_resources_whose_value_is_a_parameter() {
        let template = json!({"resources": {
            "nodes": {"type": "OS::Heat::TestResource",
                      "properties": {"value": {"get_param": "image"}}},
            "slow_sibling": {"type": "OS::Heat::TestResource", "properties": {
                "value": {"get_param": "frontend_image"},
                "action_wait_secs": {"update": 120}}},
            "fixed": {"type": "OS::Heat::TestResource", "properties": {"value": "x"}},
            "port": {"type": "OS::Neutron::Port",
                     "properties": {"value": {"get_param": "net"}}}
        }});
        assert_eq!(
            declared(&template, "nodes"),
            vec![(
                "slow_sibling".to_string(),
                "frontend_image".to_string(),
                120
            )]
        );
    }
}
