use super::*;
use chrono::Duration;
use rand::{rngs::StdRng, Rng, SeedableRng};

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-26T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn member(i: usize, status: &str) -> MemberFacts {
    MemberFacts {
        name: i.to_string(),
        status: Status::parse(status),
        held_by: None,
        on_target: Some(false),
        in_update: true,
        skipped: false,
        rolled_back: false,
        since: Some(t0()),
        finished_at: None,
        replacing: false,
    }
}

fn new_member(i: usize, finished_secs: i64) -> MemberFacts {
    MemberFacts {
        on_target: Some(true),
        finished_at: Some(t0() + Duration::seconds(finished_secs)),
        ..member(i, "UPDATE_COMPLETE")
    }
}

fn update(stack: &str, control: Control) -> UpdateFacts {
    UpdateFacts {
        stack_status: Some(Status::parse(stack)),
        control,
        batch: Some(1),
        batches: 7,
        started_at: Some(t0()),
        paused: Vec::new(),
    }
}

#[test]
fn members_a_scale_declared_are_being_created_not_complete() {
    let m = MemberFacts {
        on_target: Some(true),
        ..member(1, "INIT_COMPLETE")
    };
    assert_eq!(phase_of(&m), Phase::Creating);
    assert_eq!(phase_of(&member(2, "CREATE_IN_PROGRESS")), Phase::Creating);
    assert_eq!(phase_of(&member(3, "DELETE_IN_PROGRESS")), Phase::Removing);
    // Heat's COMPLETE with no image known says nothing of this update.
    let unknown = MemberFacts {
        on_target: None,
        ..member(4, "UPDATE_COMPLETE")
    };
    assert_eq!(phase_of(&unknown), Phase::Pending);
}

#[test]
fn skipped_last_node_still_held_is_not_completed_and_has_no_eta() {
    let now = t0() + Duration::seconds(300);
    let mut ms: Vec<MemberFacts> = (0..11).map(|i| new_member(i, 20 * i as i64)).collect();
    ms.push(MemberFacts {
        skipped: true,
        held_by: Some(Holder::ThisRollout),
        ..member(11, "UPDATE_IN_PROGRESS")
    });
    let u = UpdateFacts {
        batch: None,
        ..update("UPDATE_IN_PROGRESS", Control::Finished)
    };
    let p = Progress::compute(&ms, &u, now);
    assert_eq!(p.counts.new, 11);
    assert_eq!(p.counts.skipped, 1);
    assert!(
        matches!(&p.state, State::Paused { why, .. } if why.contains("skipped")),
        "{:?}",
        p.state
    );
    assert_eq!(p.eta_secs, None);
    assert_eq!(
        p.batch,
        Some((7, 7)),
        "the plan's batches, never renumbered"
    );
    // Before the end, with a member of this rollout still to release: running.
    let mut before = ms.clone();
    before[10] = MemberFacts {
        held_by: Some(Holder::ThisRollout),
        ..member(10, "UPDATE_IN_PROGRESS")
    };
    let u_run = update("UPDATE_IN_PROGRESS", Control::Running);
    assert_eq!(
        Progress::compute(&before, &u_run, now).state,
        State::Running
    );
    // Heat's update complete (the skipped member's hook cleared by hand): completed.
    ms[11].held_by = None;
    ms[11].status = Status::parse("UPDATE_COMPLETE");
    let done = Progress::compute(&ms, &update("UPDATE_COMPLETE", Control::Finished), now);
    assert_eq!(done.state, State::Completed);
}

#[test]
fn held_by_someone_else_is_paused_with_holder_and_since_and_no_eta() {
    let now = t0() + Duration::seconds(600);
    let mut ms: Vec<MemberFacts> = (0..4).map(|i| new_member(i, 100)).collect();
    for i in 4..7 {
        ms.push(MemberFacts {
            held_by: Some(Holder::Operator),
            since: Some(t0() + Duration::seconds(200 + i as i64)),
            ..member(i, "UPDATE_IN_PROGRESS")
        });
    }
    ms.push(member(7, "UPDATE_COMPLETE"));
    let p = Progress::compute(&ms, &update("UPDATE_IN_PROGRESS", Control::Running), now);
    match &p.state {
        State::Paused { why, since } => {
            assert!(
                why.contains("3 member(s)") && why.contains("operator"),
                "{why}"
            );
            assert_eq!(*since, Some(t0() + Duration::seconds(204)));
        }
        s => panic!("{s:?}"),
    }
    assert!(p.pace.is_none(), "nothing moves: no pace");
    assert_eq!(p.eta_secs, None);
}

#[test]
fn this_rollouts_own_holds_while_running_are_running_with_an_eta() {
    let now = t0() + Duration::seconds(600);
    let mut ms: Vec<MemberFacts> = (0..4).map(|i| new_member(i, 100 * i as i64)).collect();
    ms.push(MemberFacts {
        held_by: Some(Holder::ThisRollout),
        ..member(4, "UPDATE_IN_PROGRESS")
    });
    ms.push(member(5, "UPDATE_COMPLETE"));
    let p = Progress::compute(&ms, &update("UPDATE_IN_PROGRESS", Control::Running), now);
    assert_eq!(p.state, State::Running);
    let pace = p.pace.unwrap();
    assert_eq!((pace.window_secs, pace.new_in_window), (600, 4));
    // 2 left at 0.4 per minute.
    assert_eq!(p.eta_secs, Some(300));
}

/// Every member new while Heat's update goes on (the rollout's last PATCH taking its hooks
/// out): running, nothing left, no ETA; not "paused", which would ask for a resume.
#[test]
fn every_member_new_while_heat_finishes_is_running_not_paused() {
    let now = t0() + Duration::seconds(600);
    let ms: Vec<MemberFacts> = (0..3).map(|i| new_member(i, 100 * i as i64)).collect();
    for control in [Control::Running, Control::Finished, Control::None] {
        let p = Progress::compute(&ms, &update("UPDATE_IN_PROGRESS", control.clone()), now);
        assert_eq!(p.state, State::Running, "{control:?}");
        assert_eq!((p.counts.left(), p.eta_secs), (0, None), "{control:?}");
        let done = Progress::compute(&ms, &update("UPDATE_COMPLETE", control.clone()), now);
        assert_eq!(done.state, State::Completed, "{control:?}");
    }
}

/// Every member new and Heat's update over, but the rollout's hooks still in the stack's
/// environment (its end's PATCH due): closing, with who takes them out, not completed (the
/// next update of the stack would be held on them); once they are out, completed.
#[test]
fn a_rollout_whose_hooks_are_still_in_the_environment_is_closing_not_completed() {
    let now = t0() + Duration::seconds(600);
    let ms: Vec<MemberFacts> = (0..3).map(|i| new_member(i, 100 * i as i64)).collect();
    let closing = Control::Closing {
        why: "its driver takes the hooks out".into(),
    };
    let p = Progress::compute(&ms, &update("UPDATE_COMPLETE", closing), now);
    assert_eq!(
        p.state,
        State::Closing {
            why: "its driver takes the hooks out".into()
        }
    );
    assert_eq!(p.state.label(), "closing: its driver takes the hooks out");
    assert_eq!((p.counts.left(), p.eta_secs), (0, None));
    let done = Progress::compute(&ms, &update("UPDATE_COMPLETE", Control::Finished), now);
    assert_eq!(done.state, State::Completed);
}

#[test]
fn operator_pause_has_no_eta() {
    let now = t0() + Duration::seconds(600);
    let mut ms: Vec<MemberFacts> = (0..4).map(|i| new_member(i, 100)).collect();
    ms.push(member(4, "UPDATE_IN_PROGRESS"));
    let paused = Control::Paused {
        why: "paused by the operator".into(),
        since: Some(t0() + Duration::seconds(500)),
    };
    let p = Progress::compute(&ms, &update("UPDATE_IN_PROGRESS", paused), now);
    assert!(matches!(p.state, State::Paused { .. }));
    assert_eq!(p.eta_secs, None);
    assert!(
        p.summary().contains("paused since 12:08:20"),
        "{}",
        p.summary()
    );
}

#[test]
fn abort_with_rollback_counts_rolled_back_members() {
    let now = t0() + Duration::seconds(600);
    let mut ms: Vec<MemberFacts> = (0..3)
        .map(|i| MemberFacts {
            rolled_back: true,
            ..member(i, "UPDATE_COMPLETE")
        })
        .collect();
    ms.push(member(3, "UPDATE_COMPLETE"));
    let abort = Control::Aborted {
        rollback: true,
        why: "operator".into(),
    };
    let p = Progress::compute(&ms, &update("ROLLBACK_COMPLETE", abort), now);
    assert_eq!(p.state, State::RolledBack);
    assert_eq!((p.counts.rolled_back, p.counts.pending), (3, 1));
    assert_eq!(p.eta_secs, None);
    let plain = Control::Aborted {
        rollback: false,
        why: "operator".into(),
    };
    ms.iter_mut().for_each(|m| m.rolled_back = false);
    let p = Progress::compute(&ms, &update("UPDATE_FAILED", plain), now);
    assert!(matches!(p.state, State::Aborted { .. }));
}

/// Random members and updates: counts always add up to the members, an ETA only while
/// running with members left, completed only with Heat complete and nothing but new and
/// skipped members, and the summary names every count it was computed with.
#[test]
fn random_facts_keep_the_invariants() {
    let mut rng = StdRng::seed_from_u64(25);
    let statuses = [
        "UPDATE_COMPLETE",
        "UPDATE_IN_PROGRESS",
        "UPDATE_FAILED",
        "INIT_COMPLETE",
        "CREATE_IN_PROGRESS",
        "CREATE_COMPLETE",
        "DELETE_IN_PROGRESS",
    ];
    let holders = [
        None,
        Some(Holder::ThisRollout),
        Some(Holder::OtherCaldera),
        Some(Holder::Operator),
        Some(Holder::Heat),
    ];
    for round in 0..500 {
        let now = t0() + Duration::seconds(rng.gen_range(0..3600));
        let n = rng.gen_range(0..40);
        let ms: Vec<MemberFacts> = (0..n)
            .map(|i| MemberFacts {
                held_by: holders[rng.gen_range(0..holders.len())],
                on_target: [None, Some(true), Some(false)][rng.gen_range(0..3)],
                in_update: rng.gen_bool(0.9),
                skipped: rng.gen_bool(0.05),
                rolled_back: rng.gen_bool(0.05),
                finished_at: Some(now - Duration::seconds(rng.gen_range(0..1200))),
                ..member(i, statuses[rng.gen_range(0..statuses.len())])
            })
            .collect();
        let control = match rng.gen_range(0..5) {
            0 => Control::Running,
            1 => Control::Paused {
                why: "operator".into(),
                since: None,
            },
            2 => Control::Finished,
            3 => Control::None,
            _ => Control::Aborted {
                rollback: rng.gen_bool(0.5),
                why: "abort".into(),
            },
        };
        let stack =
            ["UPDATE_IN_PROGRESS", "UPDATE_COMPLETE", "ROLLBACK_COMPLETE"][rng.gen_range(0..3)];
        let p = Progress::compute(&ms, &update(stack, control), now);
        let c = p.counts;
        assert_eq!(c.total(), n, "round {round}");
        if p.eta_secs.is_some() || p.pace.is_some() {
            assert_eq!(p.state, State::Running, "round {round}");
        }
        if p.eta_secs.is_some() {
            assert!(c.left() > 0, "round {round}");
        }
        if p.state == State::Completed {
            assert_eq!(c.new + c.skipped, c.in_update_total(), "round {round}");
            assert!(stack == "UPDATE_COMPLETE", "round {round}");
        }
        let line = p.summary();
        for (phase, count) in c.items() {
            assert!(
                line.contains(&format!("{} {count}", phase.label())),
                "round {round}: {line}"
            );
        }
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["counts"]["new"], c.new, "round {round}");
        let back: Progress = serde_json::from_value(json).unwrap();
        assert_eq!(back, p, "round {round}");
    }
}

#[test]
fn a_cluster_sums_its_groups_and_keeps_the_most_telling_state() {
    let now = t0() + Duration::seconds(600);
    let upgrading: Vec<MemberFacts> = (0..4)
        .map(|i| new_member(i, 300))
        .chain([member(4, "UPDATE_COMPLETE")])
        .collect();
    let a = Progress::compute(
        &upgrading,
        &update("UPDATE_IN_PROGRESS", Control::Running),
        now,
    );
    let idle: Vec<MemberFacts> = (0..3)
        .map(|i| MemberFacts {
            in_update: false,
            ..member(i, "CREATE_COMPLETE")
        })
        .collect();
    let b = Progress::compute(&idle, &update("CREATE_COMPLETE", Control::None), now);
    assert_eq!(b.state, State::Idle);
    let sum = Progress::sum([&a, &b], now);
    assert_eq!(sum.counts.total(), 8);
    assert_eq!(
        sum.counts.not_in_update, 3,
        "another group's members are not new"
    );
    assert_eq!(sum.state, State::Running);
    assert_eq!(sum.eta_secs, a.eta_secs);
}

/// A cluster whose one group is upgraded a member at a time while another is scaled up
/// (members created ten at once): the cluster is done when the upgrade is, so its ETA is
/// the upgrade's, not the two groups' members over their summed pace.
#[test]
fn a_clusters_eta_is_its_slowest_moving_groups_not_a_pooled_pace() {
    let now = t0() + Duration::seconds(600);
    // Upgrade: 1 member new in the window, 4 left.
    let upgrading: Vec<MemberFacts> = [new_member(0, 300)]
        .into_iter()
        .chain((1..5).map(|i| member(i, "UPDATE_COMPLETE")))
        .collect();
    let a = Progress::compute(
        &upgrading,
        &update("UPDATE_IN_PROGRESS", Control::Running),
        now,
    );
    // Scale-up seen as an update: 8 members new in the window, 1 left.
    let scaling: Vec<MemberFacts> = (0..8)
        .map(|i| new_member(i, 300))
        .chain([member(8, "UPDATE_COMPLETE")])
        .collect();
    let b = Progress::compute(
        &scaling,
        &update("UPDATE_IN_PROGRESS", Control::Running),
        now,
    );
    let (ea, eb) = (a.eta_secs.expect("a moves"), b.eta_secs.expect("b moves"));
    assert!(ea > eb, "{ea} {eb}");
    let sum = Progress::sum([&a, &b], now);
    assert_eq!(sum.eta_secs, Some(ea));
    // A moving group with no pace yet: the cluster's wait is not known either.
    let c = Progress::compute(
        &[member(0, "UPDATE_COMPLETE")],
        &update("UPDATE_IN_PROGRESS", Control::Running),
        now,
    );
    assert_eq!(c.eta_secs, None);
    assert_eq!(Progress::sum([&a, &b, &c], now).eta_secs, None);
}

/// The HOOK cell is the member's phase in words: `held` (the count's word) for any holder,
/// `held (inferred)` when Heat purged the pause event, nothing for a member not held.
#[test]
fn the_hook_cell_says_held_as_the_count_does() {
    for h in [
        Holder::ThisRollout,
        Holder::OtherCaldera,
        Holder::Operator,
        Holder::Heat,
    ] {
        assert_eq!(hook_cell(Some(Phase::Held(h)), false), "held");
        assert_eq!(hook_cell(Some(Phase::Held(h)), true), "held (inferred)");
        assert_eq!(
            hook_cell(Some(Phase::Held(h)), false),
            Phase::Held(h).label()
        );
    }
    assert_eq!(hook_cell(Some(Phase::Skipped), true), "");
    assert_eq!(hook_cell(Some(Phase::Updating), false), "");
    assert_eq!(hook_cell(None, true), "");
}

/// One reading of a group's status for the model and the facts read at rest: settled and
/// not failed is at rest; in progress or failed, an update is (or was) going over members.
#[test]
fn a_group_is_at_rest_only_settled_and_not_failed() {
    let rest = |s: &str| super::at_rest(&Status::parse(s));
    assert!(rest("UPDATE_COMPLETE") && rest("CREATE_COMPLETE") && rest("CHECK_COMPLETE"));
    assert!(!rest("UPDATE_IN_PROGRESS") && !rest("ROLLBACK_IN_PROGRESS"));
    assert!(!rest("UPDATE_FAILED") && !rest("CREATE_FAILED"));
}

/// A member Heat's update replaces is updated while its replacement is created: counted with
/// the members being updated, not with those a scale adds; once made, its image says new.
#[test]
fn a_replacement_being_created_is_a_member_being_updated() {
    let mut replaced = member(0, "CREATE_IN_PROGRESS");
    replaced.in_update = true;
    replaced.replacing = true;
    assert_eq!(phase_of(&replaced), Phase::Updating);
    let mut added = replaced.clone();
    added.replacing = false;
    assert_eq!(phase_of(&added), Phase::Creating);
    replaced.status = Status::parse("CREATE_COMPLETE");
    replaced.on_target = Some(true);
    assert_eq!(phase_of(&replaced), Phase::New);
    let p = Progress::compute(
        &[member(1, "UPDATE_COMPLETE"), {
            let mut m = member(2, "CREATE_IN_PROGRESS");
            (m.in_update, m.replacing) = (true, true);
            m
        }],
        &UpdateFacts {
            stack_status: Some(Status::parse("UPDATE_IN_PROGRESS")),
            control: Control::Running,
            batch: None,
            batches: 0,
            started_at: None,
            paused: Vec::new(),
        },
        t0(),
    );
    assert_eq!((p.counts.updating, p.counts.creating), (1, 0), "{p:?}");
}

/// The pace is measured over the time members were let move: a pause inside the window is
/// left out (was: 2 new over 10m, `0.2 nodes/min`, ETA 20m for 4 left; the two were done in
/// the 6 minutes the rollout ran before and after its 4-minute pause).
#[test]
fn a_pause_inside_the_window_is_left_out_of_the_pace() {
    let now = t0() + Duration::seconds(900);
    let mut ms: Vec<MemberFacts> = vec![new_member(0, 350), new_member(1, 880)];
    ms.extend((2..6).map(|i| member(i, "UPDATE_COMPLETE")));
    let mut u = update("UPDATE_IN_PROGRESS", Control::Running);
    u.started_at = Some(t0());
    // Paused at 400 s, resumed at 640 s; an older pause before the window counts nothing.
    u.paused = vec![
        (
            t0() + Duration::seconds(100),
            Some(t0() + Duration::seconds(200)),
        ),
        (
            t0() + Duration::seconds(400),
            Some(t0() + Duration::seconds(640)),
        ),
    ];
    let p = Progress::compute(&ms, &u, now);
    let pace = p.pace.expect("a pace");
    // The window is the last 600 s (300..900); 240 s of it paused: 360 s moving.
    assert_eq!((pace.window_secs, pace.new_in_window), (360, 2), "{pace:?}");
    assert_eq!(p.eta_secs, Some(720), "4 left at 2 per 6 minutes");
    assert_eq!(p.pace_eta_text(), "pace 0.3 nodes/min over 6m ETA 12m00s");
    // A pause still under way counts up to now (no pace then: the state is not moving,
    // but the window math holds).
    assert_eq!(paused_within(&[(t0(), None)], now, 600), 600);
}

/// A young rollout's pace is what was measured: 1 member new at 10 s of 6 is `over 10s`,
/// ETA 50 s (was: `1.0 nodes/min over 1m ETA 5m00s`, the window stretched to a minute that
/// had not passed, and the rollout over 40 s later).
#[test]
fn a_young_rollouts_pace_is_over_the_time_it_has_run() {
    let now = t0() + Duration::seconds(10);
    let mut ms: Vec<MemberFacts> = vec![new_member(0, 9)];
    ms.extend((1..6).map(|i| member(i, "UPDATE_COMPLETE")));
    let mut u = update("UPDATE_IN_PROGRESS", Control::Running);
    u.started_at = Some(t0());
    let p = Progress::compute(&ms, &u, now);
    assert_eq!(p.pace.map(|p| p.window_secs), Some(10));
    assert_eq!(p.eta_secs, Some(50));
    assert_eq!(p.pace_eta_text(), "pace 6.0 nodes/min over 10s ETA 50s");
    // Under PACE_MIN_SECS measured, no pace and no ETA yet (was: `over 5s` at 3 s old, a
    // window that had not passed); from it on, over the time measured.
    ms[0] = new_member(0, 2);
    let p = Progress::compute(&ms, &u, t0() + Duration::seconds(PACE_MIN_SECS - 2));
    assert_eq!((p.pace, p.eta_secs), (None, None), "{p:?}");
    assert_eq!(p.pace_eta_text(), "pace - ETA -");
    let p = Progress::compute(&ms, &u, t0() + Duration::seconds(PACE_MIN_SECS));
    assert_eq!(p.pace.map(|p| p.window_secs), Some(PACE_MIN_SECS));
}

/// Resumed a moment ago after a window all but paused: too little moving time to measure,
/// so no pace yet rather than a stretched one; once enough has run, members Heat finished
/// during the pause count, over the moving time only.
#[test]
fn a_resume_a_moment_ago_has_no_pace_until_it_has_moved() {
    let at = |s: i64| t0() + Duration::seconds(s);
    // Paused at 1 s, resumed at 600 s; Heat finished two released members during the pause.
    let mut ms: Vec<MemberFacts> = vec![new_member(0, 120), new_member(1, 300)];
    ms.extend((2..6).map(|i| member(i, "UPDATE_COMPLETE")));
    let mut u = update("UPDATE_IN_PROGRESS", Control::Running);
    u.paused = vec![(at(1), Some(at(600)))];
    let p = Progress::compute(&ms, &u, at(602));
    assert_eq!((p.pace, p.eta_secs), (None, None), "2 s moved: {p:?}");
    let p = Progress::compute(&ms, &u, at(610));
    let pace = p.pace.expect("a pace");
    // The window is 10..610: 590 s of it paused, 10 s moving, both finishes in it.
    assert_eq!((pace.window_secs, pace.new_in_window), (10, 2), "{pace:?}");
    assert_eq!(p.pace_eta_text(), "pace 12.0 nodes/min over 10s ETA 20s");
}

/// The same pause known twice (from the journal, and from the engine's state as it drove)
/// or two pauses that overlap are left out once: the moving time is not made smaller than
/// it was.
#[test]
fn overlapping_pauses_are_left_out_once() {
    let at = |s: i64| t0() + Duration::seconds(s);
    let now = at(900);
    let one = [(at(400), Some(at(640)))];
    let twice = [(at(400), Some(at(640))), (at(400), Some(at(640)))];
    let overlapping = [(at(500), Some(at(640))), (at(400), Some(at(600)))];
    assert_eq!(paused_within(&one, now, 600), 240);
    assert_eq!(paused_within(&twice, now, 600), 240);
    assert_eq!(paused_within(&overlapping, now, 600), 240);
    // One under way inside a closed one, and one before the window: from 450 on, to now.
    let open = [
        (at(100), Some(at(200))),
        (at(400), Some(at(500))),
        (at(450), None),
    ];
    assert_eq!(paused_within(&open, now, 600), 500);
}

/// An operator's ten-minute pause, resumed a minute and a half ago: the pace is that of the
/// 90 s the rollout moved in its window (2 new since the resume: `1.3 nodes/min over 1m`,
/// the window's 90 s said in whole minutes as ages are; ETA 3m for 4 left). Was: the same 2 over the whole 10m window, `0.2 nodes/min over 10m
/// ETA 20m00s`, though the rollout had moved at 2 a minute before its pause too.
#[test]
fn a_ten_minute_pause_leaves_the_pace_of_the_time_it_moved() {
    let at = |s: i64| t0() + Duration::seconds(s);
    let mut ms: Vec<MemberFacts> = [30, 60, 720, 750]
        .iter()
        .enumerate()
        .map(|(i, s)| new_member(i, *s))
        .collect();
    ms.extend((4..8).map(|i| member(i, "UPDATE_COMPLETE")));
    let mut u = update("UPDATE_IN_PROGRESS", Control::Running);
    u.paused = vec![(at(90), Some(at(690)))];
    let p = Progress::compute(&ms, &u, at(780));
    let pace = p.pace.expect("a pace");
    // The window is 180..780: 510 s of it paused, 90 s moving, 2 members new in it.
    assert_eq!((pace.window_secs, pace.new_in_window), (90, 2), "{pace:?}");
    assert_eq!(p.pace_eta_text(), "pace 1.3 nodes/min over 1m ETA 3m00s");
    // The same rollout with no pause known reads as before the change.
    u.paused.clear();
    let p = Progress::compute(&ms, &u, at(780));
    assert_eq!(p.pace_eta_text(), "pace 0.2 nodes/min over 10m ETA 20m00s");
    // While the pause is under way nothing moves: no pace, no ETA.
    u.paused = vec![(at(90), None)];
    u.control = Control::Paused {
        why: "paused by the operator".into(),
        since: Some(at(90)),
    };
    let p = Progress::compute(&ms[..2], &u, at(300));
    assert_eq!((p.pace, p.eta_secs), (None, None), "{p:?}");
}
