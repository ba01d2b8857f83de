use super::*;
use crate::model::{ConsoleTail, ServerFault, StackRef, Status};
use crate::ops::node_tree::NOVA_SERVER;
use chrono::TimeZone;

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + secs, 0)
        .single()
        .expect("time")
}

fn sref(id: &str) -> StackRef {
    StackRef {
        name: id.into(),
        id: id.into(),
    }
}

fn res(
    name: &str,
    owner: &str,
    ty: &str,
    status: &str,
    nested: Option<&str>,
    t: i64,
) -> StackResource {
    StackResource {
        name: name.into(),
        logical_id: name.into(),
        physical_id: Some(format!("phys-{owner}-{name}")),
        resource_type: ty.into(),
        status: Status::parse(status),
        status_reason: Some("state changed".into()),
        updated_at: Some(at(t)),
        owner: Some(sref(owner)),
        nested: nested.map(sref),
        parent_resource: None,
        required_by: vec![],
    }
}

fn ev(path: &[&str], name: &str, status: &str, t: i64, reason: &str) -> StackEvent {
    StackEvent {
        id: format!("{name}-{status}-{t}"),
        time: at(t),
        resource_name: name.into(),
        logical_id: name.into(),
        physical_id: None,
        status: Status::parse(status),
        status_reason: Some(reason.into()),
        stack: None,
        path: path.iter().map(|s| s.to_string()).collect(),
    }
}

/// `nodes` (group g) with members 0..3 (each a stack m<i> with one server).
fn group(statuses: [&str; 4]) -> Vec<(String, StackResource)> {
    let mut out = vec![(
        "nodes".to_string(),
        res(
            "nodes",
            "root",
            "OS::Heat::ResourceGroup",
            "UPDATE_IN_PROGRESS",
            Some("g"),
            0,
        ),
    )];
    for (i, s) in statuses.iter().enumerate() {
        let m = format!("m{i}");
        out.push((
            format!("nodes > {i}"),
            res(&i.to_string(), "g", "node.yaml", s, Some(&m), 100),
        ));
        out.push((
            format!("nodes > {i} > server"),
            res("server", &m, NOVA_SERVER, s, None, 100),
        ));
    }
    out
}

fn entries(rows: &[(String, StackResource)]) -> Vec<Entry<'_>> {
    rows.iter()
        .map(|(p, r)| Entry {
            path: p,
            resource: r,
        })
        .collect()
}

/// Members 0, 1, 2 took 36, 50 and 42 s to update.
fn sibling_events() -> Vec<StackEvent> {
    let mut out = Vec::new();
    for (i, took) in [(0, 36), (1, 50), (2, 42)] {
        let name = i.to_string();
        out.push(ev(
            &["nodes"],
            &name,
            "UPDATE_IN_PROGRESS",
            10,
            "state changed",
        ));
        out.push(ev(
            &["nodes"],
            &name,
            "UPDATE_COMPLETE",
            10 + took,
            "state changed",
        ));
    }
    out
}

#[test]
fn in_progress_is_compared_with_how_long_siblings_took() {
    let rows = group([
        "UPDATE_COMPLETE",
        "UPDATE_COMPLETE",
        "UPDATE_COMPLETE",
        "UPDATE_IN_PROGRESS",
    ]);
    let a = assess(&entries(&rows), &sibling_events());
    assert_eq!(a.causes.len(), 1, "{a:?}");
    let c = &a.causes[0];
    assert_eq!(rows[c.index].0, "nodes > 3 > server");
    // No other server in the member's stack: compared member to member.
    assert_eq!(rows[c.compared].0, "nodes > 3");
    let d = c.siblings.expect("durations");
    assert_eq!((d.count, d.min, d.max, d.median), (3, 36, 50, 42));
    assert_eq!(describe_durations(&d), "36-50 s (median 42 s)");
    assert_eq!(c.server_id.as_deref(), Some("phys-m3-server"));
    assert!(a.holds.is_empty());
}

#[test]
fn durations_pair_progress_with_completion_of_the_same_action() {
    let events = vec![
        ev(&["nodes"], "0", "CREATE_IN_PROGRESS", 0, ""),
        ev(&["nodes"], "0", "CREATE_COMPLETE", 300, ""),
        // Held on the hook for 10 minutes, then 40 s of work.
        ev(
            &["nodes"],
            "0",
            "CREATE_COMPLETE",
            400,
            "UPDATE paused until Hook pre-update is cleared",
        ),
        ev(
            &["nodes"],
            "0",
            "CREATE_COMPLETE",
            1000,
            "Hook pre-update is cleared",
        ),
        ev(&["nodes"], "0", "UPDATE_IN_PROGRESS", 1000, ""),
        ev(&["nodes"], "0", "UPDATE_COMPLETE", 1040, ""),
        ev(&["nodes"], "1", "UPDATE_IN_PROGRESS", 1000, ""),
    ];
    let took = action_durations(&events);
    assert_eq!(took.get(&("nodes > 0".into(), "UPDATE".into())), Some(&40));
    assert_eq!(took.get(&("nodes > 0".into(), "CREATE".into())), Some(&300));
    assert_eq!(took.get(&("nodes > 1".into(), "UPDATE".into())), None);
}

#[test]
fn hook_held_members_are_counted_not_stuck() {
    // Real Heat keeps a held member's status: only the events say it is paused.
    let rows = group([
        "UPDATE_COMPLETE",
        "UPDATE_COMPLETE",
        "UPDATE_COMPLETE",
        "UPDATE_COMPLETE",
    ]);
    let pause = "UPDATE paused until Hook pre-update is cleared";
    let mut events = sibling_events();
    events.push(ev(&["nodes"], "1", "UPDATE_IN_PROGRESS", 200, pause));
    events.push(ev(&["nodes"], "3", "UPDATE_IN_PROGRESS", 210, pause));
    events.push(ev(&["nodes"], "2", "UPDATE_IN_PROGRESS", 190, pause));
    events.push(ev(
        &["nodes"],
        "2",
        "UPDATE_IN_PROGRESS",
        220,
        "Hook pre-update is cleared",
    ));
    let a = assess(&entries(&rows), &events);
    // The group is busy only with held members: not a cause.
    assert!(a.causes.is_empty(), "{a:?}");
    assert_eq!(a.holds.len(), 1);
    let h = &a.holds[0];
    assert_eq!(h.hook, "pre-update");
    assert_eq!(h.parent, "nodes");
    let names: Vec<&str> = h.members.iter().map(|&i| rows[i].0.as_str()).collect();
    assert_eq!(names, ["nodes > 1", "nodes > 3"]);
    assert_eq!(h.since, Some(at(200)));
    assert_eq!(a.held.len(), 2);
}

#[test]
fn hook_pause_in_the_resource_reason_counts_too() {
    let mut rows = group([
        "UPDATE_COMPLETE",
        "UPDATE_IN_PROGRESS",
        "UPDATE_FAILED",
        "UPDATE_IN_PROGRESS",
    ]);
    let pause = "UPDATE paused until Hook pre-update is cleared";
    rows[3].1.status_reason = Some(pause.into());
    // The member's server carries the pause too: counted once, with its member.
    rows[4].1.status_reason = Some(pause.into());
    let a = assess(&entries(&rows), &[]);
    let causes: Vec<&str> = a.causes.iter().map(|c| rows[c.index].0.as_str()).collect();
    // Failed first, then in progress; the held member is neither.
    assert_eq!(causes, ["nodes > 2 > server", "nodes > 3 > server"]);
    assert_eq!(a.holds[0].members, vec![3]);
}

#[test]
fn nova_fault_is_one_line() {
    let mut s = ServerDetail {
        id: "srv".into(),
        name: "n".into(),
        status: "ERROR".into(),
        task_state: None,
        vm_state: None,
        power_state: None,
        host: None,
        zone: None,
        flavor: None,
        image: None,
        image_name: None,
        fault: Some(ServerFault {
            code: Some(500),
            message: "No valid host was found\nsecond line".into(),
            details: None,
            created: None,
        }),
        addresses: vec![],
        created: None,
        updated: None,
        console: ConsoleTail::Unavailable("not asked".into()),
        deployments: crate::model::server::ServerDeployments::NotRead("not asked".into()),
    };
    assert_eq!(
        nova_summary(&s).as_deref(),
        Some("Nova ERROR: No valid host was found (500)")
    );
    s.fault = None;
    s.status = "BUILD".into();
    s.task_state = Some("spawning".into());
    assert_eq!(
        nova_summary(&s).as_deref(),
        Some("Nova BUILD task spawning")
    );
    s.status = "ACTIVE".into();
    s.task_state = None;
    assert_eq!(nova_summary(&s), None);
}

#[test]
fn stalled_is_well_past_the_slowest_sibling() {
    let d = Durations {
        count: 3,
        min: 36,
        max: 50,
        median: 42,
    };
    assert!(!is_stalled(45, Some(&d)));
    assert!(!is_stalled(140, Some(&d)));
    assert!(is_stalled(20 * 60, Some(&d)));
    assert!(!is_stalled(20 * 60, None));
}

fn inferred_hold(member: &str) -> PendingHook {
    PendingHook {
        path: format!("nodes/{member}"),
        owner: sref("g"),
        resource: member.into(),
        hook: "pre-update".into(),
        since: at(50),
        evidence: super::super::hooks::HookEvidence::InferredPurged,
    }
}

#[test]
fn holds_inferred_from_purged_pause_events_are_held_and_said_so() {
    // Members 0-2 untouched since their create, 3 updated: Heat holds 0-2 on pre-update.
    // Only 0's pause event is left; 1 and 2 are inferred held (their pauses purged), as
    // was 3, whose release the console read after the inference.
    let rows = group([
        "CREATE_COMPLETE",
        "CREATE_COMPLETE",
        "CREATE_COMPLETE",
        "UPDATE_COMPLETE",
    ]);
    let pause = "UPDATE paused until Hook pre-update is cleared";
    let events = vec![
        ev(&["nodes"], "0", "CREATE_COMPLETE", 60, pause),
        ev(
            &["nodes"],
            "3",
            "CREATE_COMPLETE",
            70,
            "Hook pre-update is cleared",
        ),
    ];
    let inferred: Vec<PendingHook> = ["1", "2", "3"].into_iter().map(inferred_hold).collect();
    let a = assess_with_inferred(&entries(&rows), &events, &inferred);
    assert!(a.causes.is_empty(), "held, not stalled: {a:?}");
    let [h] = a.holds.as_slice() else {
        panic!("one hold: {:?}", a.holds)
    };
    let names: Vec<&str> = h.members.iter().map(|&i| rows[i].1.name.as_str()).collect();
    assert_eq!(names, ["0", "1", "2"]);
    assert_eq!((h.inferred, h.since), (2, Some(at(50))));
    assert_eq!(
        h.describe(&names, ""),
        "3 members of nodes held on pre-update hook (2 inferred: their pause events were purged): 0, 1, 2"
    );
    assert_eq!(a.held.len(), 3);

    // Without the inference the group is at work with nothing to show for it: a cause.
    let events = &events[1..];
    let a = assess(&entries(&rows), events);
    let causes: Vec<&str> = a.causes.iter().map(|c| rows[c.index].0.as_str()).collect();
    assert_eq!(causes, ["nodes"]);
    let a = assess_with_inferred(&entries(&rows), events, &inferred[..1]);
    assert!(a.causes.is_empty(), "{a:?}");
    assert_eq!(
        a.holds[0].describe(&["1"], " since 12:00:50 (5m)"),
        "1 member of nodes held on pre-update hook (1 inferred: its pause event was purged) since 12:00:50 (5m): 1"
    );
}

#[test]
fn the_median_of_two_siblings_is_their_mean_not_the_slower() {
    let d = Durations::of(vec![50, 40]).expect("durations");
    assert_eq!((d.min, d.max, d.median), (40, 50, 45));
    assert_eq!(describe_durations(&d), "40-50 s (median 45 s)");
}
