use super::*;
use chrono::TimeZone;
use std::collections::BTreeMap;

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + secs, 0)
        .single()
        .expect("valid time")
}

fn ev(id: &str, member: &str, status: &str, reason: &str, secs: i64) -> StackEvent {
    StackEvent {
        id: id.into(),
        time: at(secs),
        resource_name: member.into(),
        logical_id: member.into(),
        physical_id: None,
        status: Status::parse(status),
        status_reason: (!reason.is_empty()).then(|| reason.to_string()),
        stack: None,
        path: vec![],
    }
}

fn member(name: &str, status: &str, secs: i64) -> MemberFact {
    MemberFact {
        name: name.into(),
        status: Status::parse(status),
        reason: None,
        updated_at: Some(at(secs)),
    }
}

fn facts(stack_status: &str, members: Vec<MemberFact>) -> UpdateFacts {
    UpdateFacts {
        id: "observed-1".into(),
        target: "prod/default-worker".into(),
        image: "fcos-40".into(),
        stack_status: Status::parse(stack_status),
        stack_reason: String::new(),
        started_at: Some(at(100)),
        batch_size: 2,
        members,
    }
}

/// Six members mid-update (started at 100): 0 and 1 done in 30 s and 50 s, 2 updating,
/// 3 held on a hook, 4 failed, 5 not reached (last changed before the update).
fn mid_update() -> (UpdateFacts, Timeline) {
    let mut f = facts(
        "UPDATE_IN_PROGRESS",
        vec![
            member("0", "UPDATE_COMPLETE", 140),
            member("1", "UPDATE_COMPLETE", 160),
            member("2", "UPDATE_IN_PROGRESS", 170),
            member("3", "CREATE_COMPLETE", 10),
            member("4", "UPDATE_FAILED", 175),
            member("5", "CREATE_COMPLETE", 10),
        ],
    );
    f.members[4].reason = Some("kubelet not ready".into());
    let mut t = Timeline::default();
    t.ingest(
        "group",
        &[
            ev("g", "group", "UPDATE_IN_PROGRESS", "", 101),
            ev("a", "0", "UPDATE_IN_PROGRESS", "", 110),
            ev("b", "1", "UPDATE_IN_PROGRESS", "", 110),
            ev("c", "0", "UPDATE_COMPLETE", "", 140),
            ev("d", "1", "UPDATE_COMPLETE", "", 160),
            ev("e", "2", "UPDATE_IN_PROGRESS", "", 165),
            ev("f", "4", "UPDATE_IN_PROGRESS", "", 166),
            ev(
                "h",
                "3",
                "CREATE_COMPLETE",
                "UPDATE paused until Hook pre-update is cleared",
                167,
            ),
            ev("i", "4", "UPDATE_FAILED", "kubelet not ready", 175),
            // Before the update: an old completion of 5 does not make it done.
            ev("j", "5", "UPDATE_COMPLETE", "", 50),
        ],
    );
    (f, t)
}

fn phases(s: &RolloutStatus) -> Vec<(&str, NodePhase)> {
    s.nodes.iter().map(|n| (n.name.as_str(), n.phase)).collect()
}

#[test]
fn members_take_their_phase_from_the_listing_and_their_times_from_events() {
    let (f, t) = mid_update();
    let s = observed_status(&f, &t, at(220));
    use NodePhase::*;
    assert_eq!(
        phases(&s),
        vec![
            ("0", Done),
            ("1", Done),
            ("2", Updating),
            ("3", Paused),
            ("4", Failed),
            ("5", Pending)
        ]
    );
    // The failed member is counted failed, not remaining: it moves no more without a retry.
    assert_eq!((s.done, s.failed, s.skipped, s.remaining), (2, 1, 0, 3));
    assert_eq!(s.nodes[4].reason.as_deref(), Some("kubelet not ready"));
    assert_eq!(s.nodes[0].duration_ms(), Some(30_000));
    assert_eq!(s.nodes[1].duration_ms(), Some(50_000));
    assert_eq!((s.p50_ms, s.p95_ms), (Some(30_000), Some(50_000)));
    // 2 done over the 2 minutes since the first member was released; 3 left at that pace.
    let per_min = 2.0 * 60.0 / 120.0;
    let tp = s.throughput_per_min.expect("throughput");
    assert!((tp - per_min).abs() < 1e-9, "{tp}");
    let eta = (3.0 / per_min * 60.0_f64).round();
    assert!((s.eta_secs.expect("eta") - eta).abs() < 1e-6);
    assert_eq!(s.state, RolloutState::Running);
    assert_eq!(s.stack_status, "UPDATE_IN_PROGRESS");
}

#[test]
fn batches_follow_the_order_heat_started_members_in() {
    let (f, t) = mid_update();
    let s = observed_status(&f, &t, at(220));
    let batch = |name: &str| s.nodes.iter().find(|n| n.name == name).map(|n| n.batch);
    // Started at 110 (0, 1), then 165 (2) and 166 (4); 3 and 5 never started.
    assert_eq!((batch("0"), batch("1")), (Some(0), Some(0)));
    assert_eq!((batch("2"), batch("4")), (Some(1), Some(1)));
    assert_eq!((batch("3"), batch("5")), (Some(2), Some(2)));
    assert_eq!(s.batches, 3);
    assert_eq!(s.current_batch, Some(1));
}

#[test]
fn a_cleared_hook_is_no_longer_a_pause_and_only_holds_make_the_state_paused() {
    let (mut f, mut t) = mid_update();
    // Only the held member is left working: the update waits on the hook.
    f.members[2] = member("2", "UPDATE_COMPLETE", 180);
    let s = observed_status(&f, &t, at(220));
    assert_eq!(
        s.state,
        RolloutState::Paused {
            reason: "1 member(s) held on a Heat hook".into()
        }
    );
    t.ingest(
        "group",
        &[ev(
            "k",
            "3",
            "CREATE_COMPLETE",
            "Hook pre-update is cleared",
            190,
        )],
    );
    let s = observed_status(&f, &t, at(220));
    assert_eq!(s.nodes[3].phase, NodePhase::Pending);
    assert_eq!(s.state, RolloutState::Running);
}

#[test]
fn a_settled_update_is_complete_and_counts_untouched_members_done() {
    let (mut f, t) = mid_update();
    f.stack_status = Status::parse("UPDATE_COMPLETE");
    f.members[2] = member("2", "UPDATE_COMPLETE", 180);
    f.members[3] = member("3", "UPDATE_COMPLETE", 200);
    f.members[4] = member("4", "UPDATE_COMPLETE", 210);
    let s = observed_status(&f, &t, at(400));
    assert_eq!(s.state, RolloutState::Completed);
    assert_eq!((s.done, s.remaining), (6, 0));
    assert_eq!(s.eta_secs, None);
    assert_eq!(s.current_batch, None);
    // Pace up to the last completion known (160), not to the look at 400.
    let tp = s.throughput_per_min.expect("throughput");
    assert!((tp - 6.0).abs() < 1e-9, "{tp}");
}

#[test]
fn a_failed_stack_fails_with_heats_reason() {
    let (mut f, t) = mid_update();
    f.stack_status = Status::parse("UPDATE_FAILED");
    f.stack_reason = "Resource UPDATE failed: 4".into();
    let s = observed_status(&f, &t, at(220));
    assert_eq!(
        s.state,
        RolloutState::Failed {
            reason: "Resource UPDATE failed: 4".into()
        }
    );
    assert_eq!(s.eta_secs, None);
}

#[test]
fn a_superseded_attempt_is_not_a_failure_and_later_events_win() {
    let mut t = Timeline::default();
    t.ingest(
        "group",
        &[
            ev("b", "7", "UPDATE_COMPLETE", "", 30),
            ev("a", "7", "UPDATE_FAILED", "Stack UPDATE cancelled", 20),
            ev("c", "7", "UPDATE_COMPLETE", "", 25),
        ],
    );
    let m = &t.members["7"];
    assert_eq!(m.failed, None);
    assert_eq!(m.finished, Some(at(30)));
    assert!(!t.members.contains_key("group"));
}

#[test]
fn without_events_the_listing_still_counts_and_durations_are_unknown() {
    let (f, _) = mid_update();
    let s = observed_status(&f, &Timeline::default(), at(220));
    assert_eq!((s.done, s.failed), (2, 1));
    assert_eq!(s.nodes[0].duration_ms(), None);
    assert_eq!(s.p50_ms, None);
    // The pace comes from the update's start, not from member events.
    assert!(s.throughput_per_min.is_some());
    assert_eq!(s.nodes[3].phase, NodePhase::Pending);
    // An updating member started, at the latest, when the listing saw it change.
    assert_eq!(s.nodes[2].released_at, Some(at(170)));
}

#[test]
fn parameters_name_the_image_and_the_batch() {
    let mut p = BTreeMap::new();
    assert_eq!(image_parameter(&p), None);
    assert_eq!(batch_size_parameter(&p), 1);
    p.insert("server_image".to_string(), "fcos-40".to_string());
    assert_eq!(image_parameter(&p).as_deref(), Some("fcos-40"));
    p.insert("image".to_string(), "ubuntu".to_string());
    assert_eq!(image_parameter(&p).as_deref(), Some("ubuntu"));
    p.insert("update_max_batch_size".to_string(), "50".to_string());
    assert_eq!(batch_size_parameter(&p), 50);
    p.insert("update_max_batch_size".to_string(), "0".to_string());
    assert_eq!(batch_size_parameter(&p), 1);
}

#[test]
fn a_settled_update_is_timed_from_the_groups_start_when_the_stack_moved_on() {
    let (mut f, t) = mid_update();
    f.stack_status = Status::parse("UPDATE_COMPLETE");
    // Some Heats move `updated_time` to the completion: the group's own start (101) still
    // dates the update, so the members' events are this update's.
    f.started_at = Some(at(300));
    let s = observed_status(&f, &t, at(400));
    assert_eq!(s.nodes[0].duration_ms(), Some(30_000));
    assert_eq!(s.nodes[1].duration_ms(), Some(50_000));
    assert_eq!(t.group_update_started, Some(at(101)));
}

/// Issue 25: a scale sent during an upgrade (Heat takes the newer update over without the
/// stack settling) moves the stack's `updated_time` to the scale's start; the members the
/// upgrade updated before it are still done, and the pace is over the upgrade's age. A one-off
/// `rollout status` has no journal to say when the upgrade began: Heat's events of the group
/// do. Before: members 0 and 1 pending, the update's age that of the scale.
#[test]
fn a_scale_during_an_update_keeps_the_updates_start() {
    let (mut f, mut t) = mid_update();
    t.ingest(
        "group",
        &[
            // An earlier update, settled: not this run.
            ev("s0", "group", "UPDATE_IN_PROGRESS", "", 20),
            ev("s1", "group", "UPDATE_COMPLETE", "", 30),
            // The scale, taking the upgrade's traversal over at 200.
            ev("s2", "group", "UPDATE_IN_PROGRESS", "", 200),
        ],
    );
    f.started_at = Some(at(200));
    assert_eq!(t.run_started(), Some(at(101)));
    let s = observed_status(&f, &t, at(220));
    assert_eq!((s.done, s.failed), (2, 1), "{:#?}", s.lines());
    assert_eq!(s.nodes[0].duration_ms(), Some(30_000));
    // Settled since: a new run begins with the next update.
    t.ingest(
        "group",
        &[
            ev("s3", "group", "UPDATE_COMPLETE", "", 300),
            ev("s4", "group", "UPDATE_IN_PROGRESS", "", 400),
        ],
    );
    assert_eq!(t.run_started(), Some(at(400)));
}
