//! The operator actions in the console, end to end through the worker and the
//! [`FakeOperator`]: forms with bad keys, plans, confirmations (production name), the
//! guard rails, the rollout view's controls and take-over, the journal and node actions;
//! snapshots at 80x24 and 200x60 with a fixed clock.

use super::config::{resolve, ConsoleOptions};
use super::keys::KeyAction;
use super::message::NO_ACTIONS;
use super::message::{
    Action, ActionReply, OperatorRequest, Reply, Request, RolloutDriver, RolloutReply,
};
use super::state::action_dialogs::Dialog;
use super::state::view::ViewKind;
use super::state::{App, Level, Mode};
use super::worker::Worker;
use crate::drivers::guard::Guard;
use crate::journal::{ApiCall, Entry, Outcome};
use crate::model::{Cluster, NodeGroup};
use crate::rollout::engine::initial_status;
use crate::rollout::{
    AbortMode, Control, NodePhase, RolloutOptions, RolloutPlan, RolloutState, RolloutStatus,
};
use crate::service::fake::{demo_epoch, FakeCloud, FakeOp};
use crate::service::fake_operator::{target_of, FakeOperator};
use crate::service::operator::Operator;
use crate::service::{CloudService, ErrorKind, ServiceError};
use crate::tests::Drive;
use chrono::Duration as Chrono;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

struct H {
    app: App,
    fake: FakeCloud,
    op: FakeOperator,
    worker: Worker,
    rx: UnboundedReceiver<Reply>,
}

fn options(read_only: bool) -> ConsoleOptions {
    ConsoleOptions {
        no_config: true,
        read_only,
        theme_dir: Some(std::path::PathBuf::from("/nonexistent")),
        ..ConsoleOptions::default()
    }
}

impl Drive for H {
    fn app(&mut self) -> &mut App {
        &mut self.app
    }
}

impl H {
    /// Opens the rollout view of `g` with `plan` found as driven by this console's engine.
    fn rollout_driven_here(&mut self, g: &NodeGroup, plan: &RolloutPlan) {
        self.key(KeyAction::RolloutView);
        self.app
            .update(Action::Reply(Reply::Rollout(RolloutReply::Found {
                key: g.id.clone(),
                gen: self.app.store().rollouts[&g.id].meta.gen,
                result: Ok(Some((plan.clone(), RolloutDriver::Here))),
            })));
    }

    /// The engine here reports `status` for `g`'s rollout.
    fn rollout_status(&mut self, g: &NodeGroup, status: RolloutStatus) {
        self.app
            .update(Action::Reply(Reply::Rollout(RolloutReply::Status {
                key: g.id.clone(),
                driver: RolloutDriver::Here,
                result: Ok(status),
            })));
    }

    /// The demo cloud with a fake operator (`guard`), or none.
    fn new(guard: Option<Guard>, read_only: bool) -> H {
        let fake = FakeCloud::demo(40);
        // Rollouts started in these tests do not move on their own.
        let op = FakeOperator::new(fake.clone())
            .with_step(Duration::from_secs(3600))
            .with_guard(guard.unwrap_or_default());
        let svc: Arc<dyn CloudService> = Arc::new(fake.clone());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let operator: Option<Arc<dyn Operator>> = guard.map(|_| Arc::new(op.clone()) as _);
        let worker = Worker::new(svc.clone(), tx).with_operator(operator.clone());
        let mut app = App::new(svc.info(), resolve(&options(read_only)), demo_epoch());
        app.set_budget(svc.budget());
        app.update(Action::Operator(operator.map(|o| o.guard())));
        H {
            app,
            fake,
            op,
            worker,
            rx,
        }
    }

    fn ops() -> H {
        H::new(Some(Guard::default()), false)
    }

    /// Hands requests to the worker and applies answers until 300 ms pass quietly.
    async fn pump(&mut self) {
        loop {
            for req in self.app.take_requests() {
                self.worker.submit(req);
            }
            match tokio::time::timeout(Duration::from_millis(300), self.rx.recv()).await {
                Ok(Some(r)) => self.app.update(Action::Reply(r)),
                _ => {
                    if self.app.take_requests().is_empty() {
                        return;
                    }
                }
            }
        }
    }

    fn screen(&mut self) -> String {
        self.render(200, 60)
    }

    /// The dashboard of `edge-native` (Heat-native, 6 nodes, 1..12).
    async fn open_edge(&mut self) {
        self.pump().await;
        for _ in 0..3 {
            self.key(KeyAction::Down);
        }
        self.key(KeyAction::Open);
        self.pump().await;
        assert!(
            matches!(&self.app.view().kind, ViewKind::Dashboard { cluster } if cluster.name == "edge-native")
        );
    }

    async fn edge_rows(&self) -> (Cluster, NodeGroup) {
        let c = self
            .fake
            .list_clusters()
            .await
            .unwrap()
            .into_iter()
            .find(|c| c.name == "edge-native")
            .unwrap();
        let g = self.fake.list_nodegroups(c.clone()).await.unwrap()[0].clone();
        (c, g)
    }

    fn dialog(&self) -> Option<&Dialog> {
        match &self.app.mode() {
            Mode::Dialog(d) => Some(d),
            _ => None,
        }
    }

    fn status(&self) -> String {
        self.app
            .status()
            .as_ref()
            .map(|s| s.text.clone())
            .unwrap_or_default()
    }
}

macro_rules! snap {
    ($h:expr, $name:literal) => {
        insta::assert_snapshot!(concat!($name, "_80x24"), $h.render(80, 24));
        insta::assert_snapshot!(concat!($name, "_200x60"), $h.render(200, 60));
    };
}

#[tokio::test]
async fn scale_form_refuses_bad_keys_then_plans_confirms_and_applies() {
    let mut h = H::ops();
    h.open_edge().await;
    h.press(KeyCode::Char('c'));
    assert!(matches!(h.dialog(), Some(Dialog::Form { .. })));
    // "6" is there; a letter is refused with a reason and loses nothing.
    h.press(KeyCode::Char('x'));
    let screen = h.screen();
    assert!(screen.contains("nodes: 'x' is not a digit"), "{screen}");
    h.press(KeyCode::Char('0'));
    h.press(KeyCode::Enter);
    assert!(h.screen().contains("nodes: 60 is above the maximum of 12"));
    assert!(
        h.app.take_requests().is_empty(),
        "nothing is asked while the form is bad"
    );
    h.press(KeyCode::Backspace);
    h.press(KeyCode::Backspace);
    h.type_str("8");
    h.press(KeyCode::Enter);
    let reqs = h.app.take_requests();
    assert!(
        matches!(&reqs[..], [Request::Operator(OperatorRequest::PlanScale { request, .. })] if request.count == Some(8) && request.remove.is_empty())
    );
    for r in reqs {
        h.worker.submit(r);
    }
    h.pump().await;
    assert!(matches!(h.dialog(), Some(Dialog::Confirm(_))));
    snap!(h, "scale_confirm");
    h.press(KeyCode::Char('y'));
    h.pump().await;
    assert!(
        h.status().contains("scale of edge-native/edge applied"),
        "{}",
        h.status()
    );
    assert!(h
        .op
        .calls()
        .iter()
        .any(|c| c == "apply_scale edge-native/edge 6->8 confirm=None"));
    let (c, g) = h.edge_rows().await;
    assert_eq!(g.node_count, 8);
    // The dashboard the scale was asked from shows the new counts without leaving it: the
    // header reads the cluster as last listed, not the copy the view was opened with.
    assert_eq!(c.node_count, 8);
    let screen = h.screen();
    assert!(screen.contains("workers 8"), "{screen}");
}

#[tokio::test]
async fn esc_cancels_a_form_and_a_failed_plan_returns_to_the_form_with_its_values() {
    let mut h = H::ops();
    h.open_edge().await;
    h.press(KeyCode::Char('u'));
    h.press(KeyCode::Esc);
    assert!(h.dialog().is_none());
    assert_eq!(h.status(), "cancelled: nothing changed");
    // A plan the operator refuses (above the group's maximum) brings the form back.
    h.press(KeyCode::Char('c'));
    if let Some(Dialog::Form { form, .. }) = h.dialog() {
        assert_eq!(form.fields[0].value, "6");
    }
    // Bypass the form's own max check by removing it: the operator's limits still apply.
    if let Mode::Dialog(d) = h.app.mode_mut() {
        if let Dialog::Form { form, .. } = d.as_mut() {
            form.fields[0].kind = super::state::form::FieldKind::Number { min: 0, max: None };
        }
    }
    h.type_str("0");
    h.press(KeyCode::Enter);
    h.pump().await;
    match h.dialog() {
        Some(Dialog::Form { form, .. }) => {
            assert_eq!(form.fields[0].value, "60", "the typed value is kept");
            assert!(form.error.as_deref().unwrap().contains("maximum of 12"));
        }
        _ => panic!("back to the form"),
    }
    // An error longer than the box is shown whole, in rows of its own, and the keys still
    // below it.
    let long = format!(
        "{} the end of the reason",
        "a long reason word by word".repeat(6)
    );
    if let Mode::Dialog(d) = h.app.mode_mut() {
        if let Dialog::Form { form, .. } = d.as_mut() {
            form.error = Some(long);
        }
    }
    let screen = h.render(80, 24);
    assert!(screen.contains("the end of the reason"), "{screen}");
    assert!(screen.contains("plan (nothing changes yet)"), "{screen}");
}

#[tokio::test]
async fn production_needs_the_cluster_name_typed() {
    let mut h = H::new(
        Some(Guard {
            read_only: false,
            production: true,
        }),
        false,
    );
    h.open_edge().await;
    h.press(KeyCode::Char('c'));
    h.press(KeyCode::Backspace);
    h.type_str("5");
    h.press(KeyCode::Enter);
    h.pump().await;
    assert!(h
        .screen()
        .contains("PRODUCTION cloud: type the cluster name 'edge-native'"));
    h.press(KeyCode::Char('y'));
    h.press(KeyCode::Enter);
    assert!(h
        .screen()
        .contains("'y' is not the cluster name 'edge-native'"));
    assert!(h.app.take_requests().is_empty());
    h.press(KeyCode::Backspace);
    h.type_str("edge-native");
    h.press(KeyCode::Enter);
    h.pump().await;
    assert!(h
        .op
        .calls()
        .iter()
        .any(|c| c.contains("apply_scale edge-native/edge 6->5 confirm=Some(\"edge-native\")")));
}

#[tokio::test]
async fn read_only_and_no_operator_refuse_before_asking_anything() {
    let mut h = H::new(Some(Guard::default()), true);
    h.open_edge().await;
    for k in ['c', 'u'] {
        h.press(KeyCode::Char(k));
        assert!(h.dialog().is_none());
        assert!(
            h.status().contains("refused: the console is read-only"),
            "{}",
            h.status()
        );
        assert_eq!(h.app.status().as_ref().map(|s| s.level), Some(Level::Error));
    }
    assert!(h.app.take_requests().iter().all(|r| !matches!(
        r,
        Request::Operator(OperatorRequest::PlanScale { .. })
            | Request::Operator(OperatorRequest::PlanUpgrade { .. })
    )));
    // The operator's own read-only guard counts too.
    let mut h = H::new(
        Some(Guard {
            read_only: true,
            production: false,
        }),
        false,
    );
    h.open_edge().await;
    h.press(KeyCode::Char('c'));
    assert!(h.status().contains("read-only"));

    let mut h = H::new(None, false);
    h.open_edge().await;
    h.press(KeyCode::Char('c'));
    assert!(h.status().contains(NO_ACTIONS), "{}", h.status());
    // The journal view says the same where its table would be.
    h.app
        .update(Action::Command(super::message::Command::Journal));
    h.pump().await;
    assert!(h.screen().contains(NO_ACTIONS));
}

#[tokio::test]
async fn upgrade_form_plan_confirm_start_opens_the_rollout_view() {
    let mut h = H::ops();
    h.open_edge().await;
    h.press(KeyCode::Char('u'));
    snap!(h, "upgrade_form");
    h.press(KeyCode::Enter);
    assert!(h.screen().contains("image: cannot be empty"));
    h.type_str("fc-41");
    h.press(KeyCode::Tab);
    h.press(KeyCode::Backspace);
    h.type_str("2");
    h.press(KeyCode::Tab);
    h.type_str("1");
    h.press(KeyCode::Enter);
    h.pump().await;
    let screen = h.screen();
    assert!(
        screen.contains("6 nodes in 4 batches (canary 1, then 2 at a time)"),
        "{screen}"
    );
    h.press(KeyCode::Enter);
    h.pump().await;
    assert!(matches!(h.app.view().kind, ViewKind::Rollout { .. }));
    let screen = h.screen();
    assert!(screen.contains("state running"), "{screen}");
    assert!(screen.contains("(driven here)"));
    assert!(screen.contains("fedora-coreos-38 → fc-41"));
}

/// A rollout of edge-native/edge 30 s in: batch 2 of 3 under way, one failure.
fn mid_run(plan: &RolloutPlan) -> RolloutStatus {
    let t0 = demo_epoch() - Chrono::seconds(30);
    let mut s = initial_status(plan);
    s.id = "r20261121T115930-0000abcd".into();
    s.state = RolloutState::Running;
    s.stack_status = "UPDATE_IN_PROGRESS".into();
    s.current_batch = Some(1);
    for n in s.nodes.iter_mut() {
        match n.batch {
            0 => {
                n.phase = NodePhase::Done;
                n.released_at = Some(t0);
                n.finished_at = Some(t0 + Chrono::seconds(12));
            }
            1 => {
                n.phase = NodePhase::Updating;
                n.released_at = Some(t0 + Chrono::seconds(14));
            }
            _ => {}
        }
    }
    if let Some(n) = s.nodes.iter_mut().find(|n| n.name == "1") {
        n.phase = NodePhase::Failed;
        n.reason = Some("Timed out waiting for kubelet to become Ready".into());
    }
    s.compute(demo_epoch());
    s
}

fn edge_plan(c: &Cluster, g: &NodeGroup) -> RolloutPlan {
    let target = target_of(c, g);
    let stack = target.stack.clone().unwrap();
    let members: Vec<String> = (0..6).map(|i| i.to_string()).collect();
    let mut p = RolloutPlan::new(
        target,
        stack,
        "fc-41",
        Some("fedora-coreos-38".into()),
        &members,
        RolloutOptions {
            batch_size: 2,
            ..RolloutOptions::default()
        },
        BTreeMap::new(),
    );
    p.id = "r20261121T115930-0000abcd".into();
    p
}

/// A rollout holding a group beside its target (`--also`): the view gives each group's
/// counts under the rollout's, as `rollout status` does, from the same model.
#[tokio::test]
async fn rollout_view_gives_each_held_groups_counts() {
    let mut h = H::ops();
    h.open_edge().await;
    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    h.rollout_driven_here(&g, &plan);
    let mut status = mid_run(&plan);
    // The first batch's two members are another group's, held before the target's.
    for n in status.nodes.iter_mut().filter(|n| n.batch == 0) {
        n.name = format!("masters/{}", n.name);
    }
    status.compute(demo_epoch());
    h.rollout_status(&g, status.clone());
    let screen = h.screen();
    for line in status.group_lines() {
        assert!(screen.contains(line.trim_start()), "{line:?} in\n{screen}");
    }
    // Member 1 (a master here) failed in `mid_run`.
    assert!(
        screen.contains("masters: new 1/2 updating 0 held 0 old 0 failed 1")
            && screen.contains("edge (target): new 0/4 updating 2 held 0 old 2"),
        "{screen}"
    );
}

#[tokio::test]
async fn rollout_view_controls_send_the_right_control() {
    let mut h = H::ops();
    h.open_edge().await;
    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    // Pretend our engine runs it: a status from "here".
    h.rollout_driven_here(&g, &plan);
    h.rollout_status(&g, mid_run(&plan));
    h.app.take_requests();
    snap!(h, "rollout_running");
    h.press(KeyCode::Char('p'));
    let reqs = h.app.take_requests();
    assert!(
        matches!(&reqs[..], [Request::Operator(OperatorRequest::RolloutControl { control: Control::Pause, plan: None, key, take_over: false })] if *key == g.id),
        "{reqs:?}"
    );
    let mut paused = mid_run(&plan);
    paused.state = RolloutState::Paused {
        reason: "node 1 failed".into(),
    };
    // The progress model is computed from the state: a changed state is computed again.
    paused.compute(demo_epoch());
    h.rollout_status(&g, paused);
    snap!(h, "rollout_paused");
    // Skip: the selection follows batch 2 (nodes 2, 3, updating): refused with a reason.
    h.press(KeyCode::Char('x'));
    assert!(h
        .status()
        .contains("only nodes not yet released can be skipped"));
    assert!(h.app.take_requests().is_empty());
    h.key(KeyAction::Bottom);
    h.press(KeyCode::Char('x'));
    let reqs = h.app.take_requests();
    assert!(
        matches!(&reqs[..], [Request::Operator(OperatorRequest::RolloutControl { control: Control::Skip(n), .. })] if n == "5"),
        "{reqs:?}"
    );
    // Abort asks how, then confirms.
    h.press(KeyCode::Char('A'));
    assert!(matches!(h.dialog(), Some(Dialog::AbortChoice { .. })));
    h.press(KeyCode::Char('2'));
    assert!(h
        .screen()
        .contains("cancel_update: Heat rolls the node group back"));
    // The confirmation shows its API call, as every other plan does.
    let screen = h.render(200, 60);
    assert!(
        screen.contains("/actions {\"cancel_update\":null}"),
        "{screen}"
    );
    assert!(h.app.take_requests().is_empty());
    h.press(KeyCode::Char('y'));
    let reqs = h.app.take_requests();
    assert!(
        matches!(
            &reqs[..],
            [Request::Operator(OperatorRequest::RolloutControl {
                control: Control::Abort(AbortMode::CancelUpdate),
                ..
            })]
        ),
        "{reqs:?}"
    );
}

#[tokio::test]
async fn a_rollout_elsewhere_is_observed_and_resume_takes_it_over() {
    let mut h = H::ops();
    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    let mut status = mid_run(&plan);
    status.state = RolloutState::Paused {
        reason: "node 1 failed".into(),
    };
    status.compute(demo_epoch());
    h.op = h.op.clone().with_foreign_rollout(plan.clone(), status);
    h.open_edge().await;
    h.key(KeyAction::RolloutView);
    h.pump().await;
    let screen = h.screen();
    assert!(screen.contains("not driven by this console"), "{screen}");
    assert!(screen.contains("(observed)"));
    assert_eq!(
        h.app.store().rollouts[&g.id].driver,
        Some(RolloutDriver::Elsewhere)
    );
    // Pause with no engine here goes through the journal to its driver.
    h.press(KeyCode::Char('p'));
    h.pump().await;
    assert!(h
        .op
        .calls()
        .iter()
        .any(|c| c.starts_with("request_rollout edge-native/edge Pause")));
    // Resume takes it over, after a confirmation: an engine here, resumed first.
    h.press(KeyCode::Char('R'));
    h.pump().await;
    assert!(h.screen().contains("Take over this rollout?"));
    assert!(
        !h.op
            .calls()
            .iter()
            .any(|c| c.starts_with("reattach_rollout")),
        "nothing before the confirmation"
    );
    h.press(KeyCode::Char('y'));
    h.pump().await;
    assert!(
        h.op.calls().iter().any(|c| c
            .starts_with("reattach_rollout edge-native/edge r20261121T115930-0000abcd [Resume")),
        "{:?}",
        h.op.calls()
    );
    assert_eq!(
        h.app.store().rollouts[&g.id].driver,
        Some(RolloutDriver::Here)
    );
    assert!(h.screen().contains("(driven here)"));
    assert!(!h.screen().contains("not driven by this console"));
}

/// A rollout another live caldera on this machine drives (its driver lock held): the view
/// says so and its controls go to that process through the journal; resume is not a
/// take-over (no confirmation, no engine here).
#[tokio::test]
async fn a_rollout_another_live_process_drives_gets_the_controls_not_a_take_over() {
    let mut h = H::ops();
    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    let mut status = mid_run(&plan);
    status.state = RolloutState::Paused {
        reason: "paused by the operator".into(),
    };
    status.driver = Some(crate::rollout::progress::DriverInfo::Process {
        pid: 4242,
        host: "ops-1".into(),
        started_at: demo_epoch(),
        last_seen: demo_epoch(),
    });
    status.compute(demo_epoch());
    h.op = h.op.clone().with_foreign_rollout(plan.clone(), status);
    h.open_edge().await;
    h.key(KeyAction::RolloutView);
    h.pump().await;
    let screen = h.render(200, 40);
    assert!(
        screen.contains("another caldera on this machine drives it"),
        "{screen}"
    );
    assert!(screen.contains("driven by pid 4242 on ops-1"), "{screen}");
    assert!(!screen.contains("takes it over"), "{screen}");
    h.press(KeyCode::Char('R'));
    h.pump().await;
    assert!(!h.screen().contains("Take over this rollout?"));
    let calls = h.op.calls();
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("request_rollout edge-native/edge Resume")),
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c.starts_with("reattach_rollout")),
        "{calls:?}"
    );
    assert_eq!(
        h.app.store().rollouts[&g.id].driver,
        Some(RolloutDriver::Elsewhere)
    );
}

/// A rollout Heat's marker says was started on another machine, with no driver here: its
/// driver there cannot be seen, so the view says it runs (not "nobody releases"), says
/// where it was started and to pause it there before a take-over, and the take-over's
/// confirmation says two drivers release two nodes at once.
#[tokio::test]
async fn a_rollout_started_on_another_machine_warns_before_a_take_over() {
    let mut h = H::ops();
    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    let mut status = mid_run(&plan);
    status.driver = Some(crate::rollout::progress::DriverInfo::Nobody {
        since: None,
        last_pid: None,
        started_on: Some("ops-2".into()),
        released_elsewhere: Vec::new(),
    });
    status.compute(demo_epoch());
    h.op = h.op.clone().with_foreign_rollout(plan.clone(), status);
    h.open_edge().await;
    h.key(KeyAction::RolloutView);
    h.pump().await;
    let screen = h.render(220, 40);
    assert!(
        screen.contains("started on ops-2, whose driver cannot be seen from here"),
        "{screen}"
    );
    assert!(
        screen.contains("two drivers release two nodes at once"),
        "{screen}"
    );
    assert!(!screen.contains("nobody releases"), "{screen}");
    h.press(KeyCode::Char('R'));
    h.pump().await;
    let screen = h.render(220, 50);
    assert!(screen.contains("Take over this rollout?"), "{screen}");
    assert!(screen.contains("(two at once)"), "{screen}");
    assert!(
        screen.contains("Note: it was started on ops-2, whose driver cannot be seen"),
        "{screen}"
    );
    assert!(
        !h.op
            .calls()
            .iter()
            .any(|c| c.starts_with("reattach_rollout")),
        "nothing before the confirmation"
    );
}

#[tokio::test]
async fn no_rollout_under_way_says_so() {
    let mut h = H::ops();
    h.open_edge().await;
    h.app
        .update(Action::Command(super::message::Command::Rollout));
    h.pump().await;
    let screen = h.screen();
    assert!(
        screen.contains("no rollout under way on this node group"),
        "{screen}"
    );
}

fn entry(secs: i64, action: &str, target: &str, outcome: Outcome) -> Entry {
    let mut e = Entry::new(
        &crate::journal::Actor {
            cloud: "simulator".into(),
            user: "ops".into(),
        },
        action,
        target,
        outcome,
    );
    e.time = demo_epoch() - Chrono::seconds(secs);
    e.host = "bastion".into();
    e
}

#[tokio::test]
async fn journal_view_tails_filters_shows_detail_and_exports() {
    let mut h = H::ops();
    h.pump().await;
    h.app
        .update(Action::Command(super::message::Command::Journal));
    let gen = h.app.store().journal.meta.gen;
    h.app.take_requests();
    let entries = vec![
        entry(300, "scale", "edge-native/edge", Outcome::Ok)
            .plan(vec![
                "scale edge-native/edge (HeatNative) from 6 to 8 nodes".into(),
            ])
            .calls(vec![ApiCall::new(
                "PATCH",
                "/stacks/edge-native-edge/x",
                "{\"count\":8}",
            )]),
        entry(200, "rollout.start", "edge-native/edge", Outcome::Started)
            .rollout("r20261121T115930-0000abcd"),
        entry(
            100,
            "scale",
            "prod-k8s/default-worker",
            Outcome::Refused {
                error: "scale refused: read-only mode".into(),
            },
        ),
    ];
    h.app.update(Action::Reply(Reply::Journal {
        gen,
        result: Ok((entries, 1234)),
    }));
    snap!(h, "journal");
    assert_eq!(h.app.store().journal.offset, 1234);
    // Yank: the entry as one JSON line of the journal file, and its target.
    h.key(KeyAction::Yank);
    let line = h.app.take_clipboard().expect("a copy").text;
    let copied: Entry = serde_json::from_str(&line).expect("a journal line");
    h.key(KeyAction::YankName);
    let target = h.app.take_clipboard().expect("a copy").text;
    assert_eq!(copied.target, target);
    assert!(h.status().starts_with("copied target "), "{}", h.status());
    // The next read goes on from the offset.
    h.app.set_now(h.app.now() + Chrono::seconds(10));
    h.app.plan_refresh(false);
    assert!(h.app.take_requests().iter().any(|r| matches!(
        r,
        Request::Operator(OperatorRequest::Journal { offset: 1234, .. })
    )));
    // Filter, detail, export of what is shown.
    h.key(KeyAction::Filter);
    h.type_str("edge");
    h.press(KeyCode::Enter);
    h.key(KeyAction::Top);
    h.press(KeyCode::Enter);
    let screen = h.screen();
    assert!(
        screen.contains("PATCH /stacks/edge-native-edge/x"),
        "{screen}"
    );
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('W'));
    h.press(KeyCode::Enter);
    let reqs = h.app.take_requests();
    let Some(Request::Save { contents, .. }) = reqs.first() else {
        panic!("{reqs:?}")
    };
    let back: Vec<Entry> = contents
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(back.len(), 2);
    assert!(back.iter().all(|e| e.target == "edge-native/edge"));
}

#[tokio::test]
async fn marked_nodes_can_be_removed_or_acted_on() {
    let mut h = H::new(Some(Guard::default()), false);
    h.op = h.op.clone().failing("3");
    h.open_edge().await;
    h.key(KeyAction::Open);
    h.pump().await;
    assert!(matches!(h.app.view().kind, ViewKind::Nodes { .. }));
    h.press(KeyCode::Char('X'));
    assert!(h.status().contains("no nodes marked"));
    h.key(KeyAction::Down);
    h.key(KeyAction::Mark);
    h.key(KeyAction::Down);
    h.key(KeyAction::Mark); // marks 1 and 3 (mark moves down one)
    h.press(KeyCode::Char('X'));
    let reqs = h.app.take_requests();
    assert!(
        matches!(&reqs[..], [Request::Operator(OperatorRequest::PlanScale { request, .. })] if request.count == Some(4) && request.remove == vec!["1".to_string(), "3".to_string()]),
        "{reqs:?}"
    );
    h.press(KeyCode::Esc);
    // A command on the marked nodes, one at a time: node 3 fails, nothing after it runs.
    h.press(KeyCode::Char('!'));
    h.type_str("uptime");
    h.press(KeyCode::Tab);
    h.press(KeyCode::Backspace);
    h.type_str("1");
    h.press(KeyCode::Enter);
    let screen = h.screen();
    assert!(screen.contains("run `uptime` on 2 node(s)"), "{screen}");
    h.press(KeyCode::Char('y'));
    // The marks were for that run: none are left for the next `!` or `X`.
    assert!(h.app.view().table.marks().is_empty());
    h.pump().await;
    let screen = h.screen();
    assert!(screen.contains("1 ok, 1 failed, 0 not run"), "{screen}");
    assert!(h
        .op
        .calls()
        .iter()
        .any(|c| c
            .starts_with("node_action edge-native/edge \"uptime\" nodes=[\"1\", \"3\"] batch=1")));
    // Typing `:journal` over the results (as they suggest) closes them and opens the
    // palette: the `:` is not eaten, the letters are not hotkeys.
    h.type_str(":journal");
    let screen = h.screen();
    assert!(matches!(h.app.mode(), Mode::Input(_)), "{screen}");
    assert!(screen.contains(":journal"), "{screen}");
    assert!(matches!(h.app.view().kind, ViewKind::Nodes { .. }));
    h.press(KeyCode::Esc);

    // Results that arrive while the operator types do not take the keyboard away.
    h.key(KeyAction::Mark);
    h.press(KeyCode::Char('!'));
    h.type_str("uptime");
    h.press(KeyCode::Enter);
    h.press(KeyCode::Char('y'));
    h.type_str(":jour");
    h.pump().await;
    assert!(matches!(h.app.mode(), Mode::Input(_)), "{}", h.screen());
    assert!(h.status().contains("details: :journal"), "{}", h.status());
}

/// The nodes view of `edge-native` with its second node marked, and the `!` form open.
async fn node_action_form(h: &mut H) {
    h.open_edge().await;
    h.key(KeyAction::Open);
    h.pump().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Mark);
    h.press(KeyCode::Char('!'));
    assert!(matches!(h.dialog(), Some(Dialog::Form { .. })));
}

fn ctrl(h: &mut H, c: char) {
    h.app
        .on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
}

#[tokio::test]
async fn dialog_keys_follow_the_key_table_and_text_fields_take_every_letter() {
    let mut h = H::ops();
    let problems = h.app.keys_mut().apply(&[
        ("answer_yes".into(), vec!["o".into()]),
        ("field_next".into(), vec!["ctrl-n".into()]),
        ("dialog_cancel".into(), vec!["ctrl-g".into()]),
    ]);
    assert!(problems.is_empty(), "{problems:?}");
    node_action_form(&mut h).await;
    // Letters bound elsewhere (yes, no, scroll, toggle, quit, help, the new yes `o`) are
    // text in a text field.
    h.type_str("yes | jk nq? o");
    let focus = |h: &H| match h.dialog() {
        Some(Dialog::Form { form, .. }) => (form.focus, form.fields[0].value.clone()),
        _ => panic!("no form"),
    };
    assert_eq!(focus(&h), (0, "yes | jk nq? o".to_string()));
    // The old keys no longer move or cancel; the new ones do, and the hint says so.
    h.press(KeyCode::Tab);
    h.press(KeyCode::Esc);
    assert_eq!(focus(&h).0, 0);
    assert!(
        h.screen().contains("ctrl-n / shift-tab ↑ field"),
        "{}",
        h.screen()
    );
    ctrl(&mut h, 'n');
    assert_eq!(focus(&h).0, 1);
    h.press(KeyCode::Enter);
    let screen = h.screen();
    assert!(
        screen.contains("o / enter: do it · n / ctrl-g: cancel"),
        "{screen}"
    );
    h.press(KeyCode::Char('y'));
    assert!(matches!(h.dialog(), Some(Dialog::Confirm(_))));
    h.press(KeyCode::Char('o'));
    assert!(h.dialog().is_none());
    let reqs = h.app.take_requests();
    assert!(
        matches!(&reqs[..], [Request::Operator(OperatorRequest::NodeAction { command, .. })] if command == "yes | jk nq? o"),
        "{reqs:?}"
    );
    // The new cancel key cancels a form.
    h.key(KeyAction::Down);
    h.key(KeyAction::Mark);
    h.press(KeyCode::Char('!'));
    ctrl(&mut h, 'g');
    assert!(h.dialog().is_none());
    assert!(h.status().contains("cancelled"), "{}", h.status());
}

/// #15: "a key typed right after confirming a `!` run is lost and the next letters act as
/// hotkeys (`:journal` opened the rollout view)".
#[tokio::test]
async fn keys_typed_right_after_confirming_a_run_are_not_lost() {
    let mut h = H::ops();
    node_action_form(&mut h).await;
    h.type_str("uptime");
    h.press(KeyCode::Enter);
    h.press(KeyCode::Char('y'));
    // Typed at once, before the run answers: the palette gets every letter.
    h.type_str(":journal");
    assert!(matches!(h.app.mode(), Mode::Input(_)), "{}", h.screen());
    h.press(KeyCode::Enter);
    assert!(
        matches!(h.app.view().kind, ViewKind::Journal),
        "{:?}",
        h.app.view().kind
    );
    // The results arrive over the journal; the next `:` goes to the palette again.
    h.pump().await;
    assert!(
        matches!(h.dialog(), Some(Dialog::Text { .. })),
        "{}",
        h.screen()
    );
    h.type_str(":nodes");
    assert!(matches!(h.app.mode(), Mode::Input(_)), "{}", h.screen());
    assert!(h.screen().contains(":nodes"));
}

#[tokio::test]
async fn quitting_with_a_rollout_driven_here_asks_first() {
    let mut h = H::ops();
    h.open_edge().await;
    // Nothing running: q quits at once.
    h.press(KeyCode::Char('q'));
    assert!(h.app.should_quit());
    h.app.clear_quit();

    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    h.rollout_driven_here(&g, &plan);
    h.rollout_status(&g, mid_run(&plan));
    // (The fake cloud says it is the built-in simulator; first, a real cloud.)
    h.app.info_mut().is_simulator = false;
    h.press(KeyCode::Char('q'));
    assert!(
        !h.app.should_quit(),
        "a running rollout must not be left silently"
    );
    let screen = h.screen();
    assert!(screen.contains("Quit with a rollout running?"), "{screen}");
    assert!(screen.contains("edge-native/edge"), "{screen}");
    // On a real cloud the hooks outlive the console: it says how to go on.
    assert!(screen.contains("rollout resume"), "{screen}");
    h.press(KeyCode::Char('n'));
    // The built-in simulator dies with the console: no take-over is promised.
    h.app.info_mut().is_simulator = true;
    h.press(KeyCode::Char('q'));
    let screen = h.screen();
    assert!(screen.contains("built-in simulated cloud"), "{screen}");
    assert!(!screen.contains("rollout resume"), "{screen}");
    h.press(KeyCode::Char('n'));
    assert!(!h.app.should_quit());
    assert!(h.dialog().is_none());
    h.press(KeyCode::Char('q'));
    h.press(KeyCode::Char('y'));
    assert!(h.app.should_quit());

    // Once it has ended there is nothing to lose.
    h.app.clear_quit();
    let mut done = mid_run(&plan);
    done.state = RolloutState::Completed;
    h.rollout_status(&g, done);
    h.press(KeyCode::Char('q'));
    assert!(h.app.should_quit());
}
#[tokio::test]
async fn ctrl_c_with_a_rollout_driven_here_asks_and_a_second_ctrl_c_quits() {
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut h = H::ops();
    h.open_edge().await;
    // Nothing running: ctrl-c quits at once.
    h.app.on_key(ctrl_c);
    assert!(h.app.should_quit());
    h.app.clear_quit();

    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    h.rollout_driven_here(&g, &plan);
    h.rollout_status(&g, mid_run(&plan));
    h.app.on_key(ctrl_c);
    assert!(
        !h.app.should_quit(),
        "ctrl-c left a running rollout silently"
    );
    let screen = h.screen();
    assert!(screen.contains("Quit with a rollout running?"), "{screen}");
    // `n` keeps the console (and the rollout) going.
    h.press(KeyCode::Char('n'));
    assert!(!h.app.should_quit() && h.dialog().is_none());
    // Asked again, a second ctrl-c quits.
    h.app.on_key(ctrl_c);
    assert!(!h.app.should_quit());
    h.app.on_key(ctrl_c);
    assert!(h.app.should_quit());
}

#[path = "watched_update_tests.rs"]
mod observed;

#[tokio::test]
async fn rollout_view_counts_stragglers() {
    let mut h = H::ops();
    h.open_edge().await;
    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    h.rollout_driven_here(&g, &plan);
    let mut slow = mid_run(&plan);
    assert!(!h.screen().contains("stragglers"));
    // Batch 2's node 2 has been updating for 5 minutes; batch 1 took 12 s a node.
    if let Some(n) = slow.nodes.iter_mut().find(|n| n.name == "2") {
        n.released_at = Some(demo_epoch() - Chrono::minutes(5));
    }
    slow.compute(demo_epoch());
    h.rollout_status(&g, slow);
    let screen = h.screen();
    assert!(screen.contains("stragglers 1"), "{screen}");
}

#[tokio::test]
async fn paused_after_the_last_nodes_says_resume_finishes() {
    let mut h = H::ops();
    h.open_edge().await;
    let (c, g) = h.edge_rows().await;
    let plan = edge_plan(&c, &g);
    h.rollout_driven_here(&g, &plan);
    let mut s = mid_run(&plan);
    for n in s.nodes.iter_mut() {
        n.phase = NodePhase::Done;
        n.released_at = Some(demo_epoch() - Chrono::seconds(20));
        n.finished_at = Some(demo_epoch() - Chrono::seconds(10));
        n.reason = None;
    }
    s.current_batch = None;
    s.state = RolloutState::Paused {
        reason: "paused by the operator".into(),
    };
    s.compute(demo_epoch());
    h.rollout_status(&g, s);
    let screen = h.screen();
    assert!(
        screen.contains("every node is updated; resume (R)"),
        "{screen}"
    );
    assert!(screen.contains("batch 3/3"), "{screen}");
}

/// A manual Heat control from the stack list: `K` asks the worker for the plan, the plan
/// arrives (here made as the live operator would, from the stack's state), the confirm
/// dialog shows its exact call, `y` sends it through the operator, the footer says so.
mod heat_controls {
    use super::*;
    use crate::drivers::manual::{plan_cancel, plan_check, Request as ControlRequest};
    use crate::model::{StackRef, StackSummary, Status};
    use caldera_cloud::api::heat::StackDetail;

    fn settled(stack: &StackRef) -> StackDetail {
        StackDetail {
            summary: StackSummary {
                stack: stack.clone(),
                status: Status::parse("UPDATE_COMPLETE"),
                status_reason: None,
                created_at: None,
                updated_at: None,
                parent: None,
            },
            description: None,
            parameters: BTreeMap::new(),
            outputs: None,
            disable_rollback: None,
            timeout_mins: None,
            tags: vec![],
            links: vec![],
        }
    }

    /// #26 item 9: "its error shown in full (today cut mid-URL, the cause only in the
    /// journal)": a control Heat refused opens its whole error, URL and all.
    #[tokio::test]
    async fn a_failed_control_shows_its_whole_error() {
        let mut h = H::ops();
        h.pump().await;
        let long = format!(
            "Heat answered HTTP 409 to PATCH http://heat.example:8004/v1/p/stacks/{}/resources/3: \
             Resource 3 is in progress (UPDATE_IN_PROGRESS)",
            "x".repeat(80)
        );
        h.app
            .update(Action::Reply(Reply::Action(ActionReply::ControlApplied {
                action: "heat.mark_unhealthy",
                target: "prod-k8s-stack/nodes/3".into(),
                stack_id: "id".into(),
                result: Err(crate::service::ServiceError::new(
                    crate::service::ErrorKind::Http,
                    long.clone(),
                )),
            })));
        let Some(Dialog::Text { lines, title, .. }) = h.dialog() else {
            panic!("no error dialog: {}", h.screen());
        };
        assert_eq!(title, "heat.mark_unhealthy failed");
        assert!(
            lines[0].ends_with("Resource 3 is in progress (UPDATE_IN_PROGRESS)"),
            "{lines:?}"
        );
        assert!(h.status().contains("heat.mark_unhealthy"), "{}", h.status());
        // A control refused before anything was sent says so, as the journal does.
        h.press(KeyCode::Esc);
        h.app
            .update(Action::Reply(Reply::Action(ActionReply::ControlApplied {
                action: "heat.clear_hook",
                target: "prod-k8s-stack/nodes/3".into(),
                stack_id: "id".into(),
                result: Err(crate::service::ServiceError::new(
                    crate::service::ErrorKind::Refused,
                    "nodes/3 is not held on a hook",
                )),
            })));
        let Some(Dialog::Text { title, .. }) = h.dialog() else {
            panic!("no error dialog: {}", h.screen());
        };
        assert_eq!(title, "heat.clear_hook refused");
    }

    async fn stacks_view(h: &mut H) {
        h.pump().await;
        h.command("stacks");
        h.pump().await;
        assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    }

    #[tokio::test]
    async fn check_from_the_stack_list_is_planned_confirmed_and_sent() {
        let mut h = H::ops();
        stacks_view(&mut h).await;
        h.press(KeyCode::Char('K'));
        let reqs = h.app.take_requests();
        let [Request::Operator(OperatorRequest::PlanControl {
            stack,
            request: ControlRequest::Check,
            gen,
        })] = &reqs[..]
        else {
            panic!("{reqs:?}");
        };
        let stack = StackRef {
            name: stack.clone(),
            id: "0b5c5ad1-aaaa-4bbb-8ccc-000000000001".into(),
        };
        let plan = plan_check(&stack, &settled(&stack));
        h.app
            .update(Action::Reply(Reply::Action(ActionReply::ControlPlan {
                gen: *gen,
                result: Ok(plan),
            })));
        assert!(matches!(h.dialog(), Some(Dialog::Confirm(_))));
        let screen = h.screen();
        assert!(screen.contains("/actions {\"check\":null}"), "{screen}");
        snap!(h, "heat_check_confirm");
        h.press(KeyCode::Char('y'));
        h.pump().await;
        assert!(h.status().contains("accepted by Heat"), "{}", h.status());
        let calls = h.op.calls();
        assert!(
            calls
                .iter()
                .any(|c| c == &format!("apply_control heat.check {}", stack.name)),
            "{calls:?}"
        );
    }

    #[tokio::test]
    async fn read_only_refuses_before_planning() {
        let mut h = H::new(Some(Guard::default()), true);
        stacks_view(&mut h).await;
        h.press(KeyCode::Char('C'));
        assert!(h.app.take_requests().is_empty());
        assert!(h.status().contains("read-only"), "{}", h.status());
    }

    #[tokio::test]
    async fn a_refused_plan_is_not_offered_but_journaled() {
        let mut h = H::ops();
        stacks_view(&mut h).await;
        h.press(KeyCode::Char('K'));
        let reqs = h.app.take_requests();
        let [Request::Operator(OperatorRequest::PlanControl { stack, gen, .. })] = &reqs[..] else {
            panic!("{reqs:?}");
        };
        let stack = StackRef {
            name: stack.clone(),
            id: "id".into(),
        };
        let mut busy = settled(&stack);
        busy.summary.status = Status::parse("UPDATE_IN_PROGRESS");
        h.app
            .update(Action::Reply(Reply::Action(ActionReply::ControlPlan {
                gen: *gen,
                result: Ok(plan_check(&stack, &busy)),
            })));
        assert!(h.dialog().is_none());
        assert!(h.status().contains("refused"), "{}", h.status());
        let reqs = h.app.take_requests();
        assert!(
            matches!(&reqs[..], [Request::Operator(OperatorRequest::ApplyControl { plan, .. })] if !plan.refusals.is_empty())
        );
    }

    /// A cancel on a stack Magnum owns is refused first; the operator may still go ahead on
    /// purpose: typing the stack's name plans it again with the override, and that plan is
    /// confirmed like any other. Nothing reaches the operator before that.
    #[tokio::test]
    async fn a_cancel_on_a_magnum_stack_goes_ahead_only_when_its_name_is_typed() {
        let mut h = H::ops();
        stacks_view(&mut h).await;
        h.press(KeyCode::Char('C'));
        let reqs = h.app.take_requests();
        let [Request::Operator(OperatorRequest::PlanControl {
            stack,
            request:
                ControlRequest::Cancel {
                    allow_magnum: false,
                    ..
                },
            gen,
        })] = &reqs[..]
        else {
            panic!("{reqs:?}");
        };
        let stack = StackRef {
            name: stack.clone(),
            id: "id".into(),
        };
        let mut owned = settled(&stack);
        owned.summary.status = Status::parse("UPDATE_IN_PROGRESS");
        owned.parameters.insert("cluster_uuid".into(), "c1".into());
        h.app
            .update(Action::Reply(Reply::Action(ActionReply::ControlPlan {
                gen: *gen,
                result: Ok(plan_cancel(&stack, &owned, true, false)),
            })));
        let screen = h.screen();
        assert!(screen.contains("belongs to a Magnum cluster"), "{screen}");
        assert!(matches!(h.dialog(), Some(Dialog::Confirm(_))), "{screen}");
        // Declining sends nothing.
        h.press(KeyCode::Esc);
        assert!(h.dialog().is_none());
        assert!(h.app.take_requests().is_empty());

        // Again, and this time the name is typed: the plan is asked for with the override.
        h.press(KeyCode::Char('C'));
        let reqs = h.app.take_requests();
        let [Request::Operator(OperatorRequest::PlanControl { gen, .. })] = &reqs[..] else {
            panic!("{reqs:?}");
        };
        h.app
            .update(Action::Reply(Reply::Action(ActionReply::ControlPlan {
                gen: *gen,
                result: Ok(plan_cancel(&stack, &owned, true, false)),
            })));
        h.type_str(&stack.name);
        h.press(KeyCode::Enter);
        let reqs = h.app.take_requests();
        let [Request::Operator(OperatorRequest::PlanControl {
            request:
                ControlRequest::Cancel {
                    allow_magnum: true,
                    rollback: true,
                },
            gen,
            ..
        })] = &reqs[..]
        else {
            panic!("{reqs:?}");
        };
        // The new plan has no refusal: it is confirmed as any other, then sent.
        h.app
            .update(Action::Reply(Reply::Action(ActionReply::ControlPlan {
                gen: *gen,
                result: Ok(plan_cancel(&stack, &owned, true, true)),
            })));
        assert!(matches!(h.dialog(), Some(Dialog::Confirm(_))));
        assert!(
            h.screen().contains("{\"cancel_update\":null}"),
            "{}",
            h.screen()
        );
    }
}

impl H {
    /// One tick of the event loop `secs` seconds after the demo epoch, its requests answered.
    async fn tick_at(&mut self, secs: i64) {
        self.app.update(Action::Tick {
            now: crate::service::fake::demo_epoch() + Chrono::seconds(secs),
            info: Box::new(self.fake.info()),
            budget: self.fake.budget(),
        });
        self.pump().await;
    }

    /// The fake's edge-native cluster and node group as Heat shows them: `count` nodes,
    /// both in `status`.
    fn shape_edge(&self, count: u32, status: &str) {
        self.fake.with_data(|d| {
            let Some(c) = d.clusters.iter_mut().find(|c| c.name == "edge-native") else {
                return;
            };
            c.node_count = count;
            c.status = crate::model::Status::parse(status);
            let id = c.id.clone();
            for g in d.nodegroups.iter_mut().filter(|g| g.cluster_id == id) {
                g.node_count = count;
                g.status = crate::model::Status::parse(status);
            }
        });
    }

    /// The node group pane's `edge` row and the header's worker count, as drawn.
    fn edge_counts(&mut self) -> (String, String) {
        let screen = self.screen();
        let row = screen
            .lines()
            .find(|l| l.contains(" edge ") && l.contains("UPDATE_"))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let workers = screen
            .split("workers ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or_default()
            .to_string();
        (row, workers)
    }
}

/// #15 "fresh after actions": Magnum answers a resize at once, then Heat takes its time, and
/// the console showed `workers 22` until the operator left the view. Here the lists still say
/// 6 when the console first re-reads them; the counts move while Heat works and the
/// dashboard (header and node group pane) follows within the burst's pace (2 s, faster than
/// the 5 s refresh) without any key; once Heat is done the burst ends and the refresh
/// returns to its own pace.
#[tokio::test]
async fn a_scale_settles_the_counts_on_screen_without_navigating() {
    let mut h = H::ops();
    h.open_edge().await;
    h.press(KeyCode::Char('c'));
    h.press(KeyCode::Backspace);
    h.type_str("8");
    h.press(KeyCode::Enter);
    h.pump().await;
    assert!(matches!(h.dialog(), Some(Dialog::Confirm(_))));
    h.press(KeyCode::Char('y'));
    for r in h.app.take_requests() {
        h.worker.submit(r);
    }
    let applied = h.rx.recv().await.expect("the scale's answer");
    assert!(
        matches!(applied, Reply::Action(ActionReply::ScaleApplied { .. })),
        "{applied:?}"
    );
    // Accepted, but nothing counted yet: Heat has only just started.
    h.shape_edge(6, "UPDATE_IN_PROGRESS");
    h.app.update(Action::Reply(applied));
    h.pump().await;
    assert_eq!(h.app.settling().len(), 1);
    let (row, workers) = h.edge_counts();
    assert_eq!(workers, "6");
    assert!(row.contains(" 6 "), "{row}");
    // Heat created the members: the counts move while it is still in progress.
    h.shape_edge(8, "UPDATE_IN_PROGRESS");
    h.tick_at(2).await;
    let (row, workers) = h.edge_counts();
    assert_eq!(workers, "8", "the header follows within the burst");
    assert!(
        row.contains(" 8 ") && row.contains("UPDATE_IN_PROGRESS"),
        "{row}"
    );
    // Heat is done: the next reads see it and the burst ends.
    h.shape_edge(8, "UPDATE_COMPLETE");
    h.tick_at(4).await;
    h.tick_at(6).await;
    let (row, _) = h.edge_counts();
    assert!(row.contains("UPDATE_COMPLETE"), "{row}");
    assert!(h.app.settling().is_empty(), "{:?}", h.app.settling());
    // Back at the refresh's own pace: nothing is read again 2 s later.
    h.app.update(Action::Tick {
        now: crate::service::fake::demo_epoch() + Chrono::seconds(8),
        info: Box::new(h.fake.info()),
        budget: h.fake.budget(),
    });
    let lists: Vec<Request> = h
        .app
        .take_requests()
        .into_iter()
        .filter(|r| matches!(r, Request::Clusters { .. } | Request::NodeGroups { .. }))
        .collect();
    assert!(lists.is_empty(), "{lists:?}");
}

/// #15 item 4: the clusters list costs requests for every cluster, so a burst on a node
/// group re-reads its cluster alone and that cluster's node groups, every 2 s; the list
/// keeps the refresh's pace (5 s) and is made due once when the burst ends. The patched row
/// keeps the header's `workers N` moving, and its read time ends the burst.
#[tokio::test]
async fn a_burst_on_a_node_group_reads_its_cluster_alone_not_the_list() {
    let mut h = H::ops();
    h.settling_edge().await;
    let edge = h.edge_rows().await.0;
    assert!(
        h.app.store().clusters.data.as_ref().map_or(0, Vec::len) > 1,
        "one cluster among several"
    );
    h.shape_edge(8, "UPDATE_IN_PROGRESS");
    let mut asked = Vec::new();
    for secs in [2, 4, 6] {
        asked.push((secs, h.burst_reads(secs).await));
    }
    for (secs, reads) in &asked {
        let ours = |id: &str| id == edge.id;
        assert!(
            reads
                .iter()
                .any(|r| matches!(r, Read::Cluster(id) if ours(id))),
            "{secs}s: {reads:?}"
        );
        assert!(
            reads
                .iter()
                .any(|r| matches!(r, Read::NodeGroups(id) if ours(id))),
            "{secs}s: {reads:?}"
        );
        assert!(
            reads.iter().all(|r| match r {
                Read::Cluster(id) | Read::NodeGroups(id) => ours(id),
                Read::List => true,
            }),
            "only the acted-on cluster is read alone, {secs}s: {reads:?}"
        );
    }
    // The whole list is never read on the dashboard (its header reads the cluster alone);
    // the clusters view reads it at the refresh's pace.
    assert!(
        asked.iter().all(|(_, reads)| !reads.contains(&Read::List)),
        "{asked:?}"
    );
    let (_, workers) = h.edge_counts();
    assert_eq!(workers, "8", "the patched row feeds the header");
    // Heat is done: the cluster read alone at 8 s sees it, so the burst ends at 10 s, and
    // the list is made due for when the operator goes back to it.
    h.shape_edge(8, "UPDATE_COMPLETE");
    let reads = h.burst_reads(8).await;
    assert!(!reads.contains(&Read::List), "{reads:?}");
    assert_eq!(h.app.settling().len(), 1);
    h.burst_reads(10).await;
    assert!(h.app.settling().is_empty(), "{:?}", h.app.settling());
    let list = &h.app.store().clusters.meta;
    assert!(list.attempted_at.is_none() || list.in_flight, "{list:?}");
}

/// A failed read of the cluster alone is shown under its line on the dashboard (its figures
/// are then as old as the last good read), and cleared by the next good one.
#[tokio::test]
async fn a_failed_cluster_read_is_shown_on_the_dashboard_until_a_good_one() {
    let mut h = H::ops();
    h.settling_edge().await;
    h.shape_edge(8, "UPDATE_IN_PROGRESS");
    h.burst_reads(2).await;
    assert!(!h.screen().contains("last read failed"));
    h.fake.set_error(
        FakeOp::Cluster,
        Some(ServiceError::new(
            ErrorKind::Http,
            "GET /v1/clusters/edge: HTTP 503: Service Unavailable\nretry later",
        )),
    );
    let reads = h.burst_reads(4).await;
    assert!(
        reads.iter().any(|r| matches!(r, Read::Cluster(_))),
        "{reads:?}"
    );
    let screen = h.screen();
    let line = screen
        .lines()
        .find(|l| l.contains("last read failed"))
        .unwrap_or_else(|| panic!("no failed read shown:\n{screen}"));
    assert!(
        line.contains("(figures from 2s ago): GET /v1/clusters/edge: HTTP 503"),
        "{line}"
    );
    assert!(
        !screen.contains("retry later"),
        "one line of the error: {screen}"
    );
    let (_, workers) = h.edge_counts();
    assert_eq!(workers, "8", "the last good figures stay");
    h.fake.set_error(FakeOp::Cluster, None);
    h.burst_reads(6).await;
    assert!(!h.screen().contains("last read failed"));
}

/// The cluster read alone says when it was read: a burst whose group and cluster are done
/// before the list's pace comes round ends on that read, the list last read before Heat
/// had started.
#[tokio::test]
async fn a_burst_ends_on_its_cluster_read_alone() {
    let mut h = H::ops();
    h.settling_edge().await;
    h.shape_edge(8, "UPDATE_IN_PROGRESS");
    h.burst_reads(2).await;
    h.shape_edge(8, "UPDATE_COMPLETE");
    let reads = h.burst_reads(4).await;
    assert!(!reads.contains(&Read::List), "{reads:?}");
    assert_eq!(h.app.settle_shown(), None, "done as of the reads at 4 s");
    h.burst_reads(6).await;
    assert!(h.app.settling().is_empty(), "{:?}", h.app.settling());
}

/// A list read as the burst test counts it.
#[derive(Debug, PartialEq)]
enum Read {
    List,
    /// One cluster alone, by id.
    Cluster(String),
    /// A cluster's node groups, by cluster id.
    NodeGroups(String),
}

impl H {
    /// The cluster and node-group reads one tick `secs` after the epoch asks for, then
    /// answered.
    async fn burst_reads(&mut self, secs: i64) -> Vec<Read> {
        self.app.update(Action::Tick {
            now: crate::service::fake::demo_epoch() + Chrono::seconds(secs),
            info: Box::new(self.fake.info()),
            budget: self.fake.budget(),
        });
        let requests = self.app.take_requests();
        let reads = requests
            .iter()
            .filter_map(|r| match r {
                Request::Clusters { .. } => Some(Read::List),
                Request::Cluster { cluster, .. } => Some(Read::Cluster(cluster.id.clone())),
                Request::NodeGroups { cluster, .. } => Some(Read::NodeGroups(cluster.id.clone())),
                _ => None,
            })
            .collect();
        for r in requests {
            self.worker.submit(r);
        }
        self.pump().await;
        reads
    }
}

/// A Heat control (here a check) accepted from anywhere settles on its stack: the stack list
/// is read while the stack is CHECK_IN_PROGRESS (the cluster list on screen never reads it
/// otherwise), and the burst ends once Heat says CHECK_COMPLETE.
#[tokio::test]
async fn a_heat_control_settles_on_its_stack() {
    let mut h = H::ops();
    h.pump().await;
    let set_status = |h: &H, status: &str| {
        h.fake.with_data(|d| {
            d.stacks[0].status = crate::model::Status::parse(status);
            d.stacks[0].stack.id.clone()
        })
    };
    let id = set_status(&h, "CHECK_IN_PROGRESS");
    assert!(h.app.store().stacks.data.is_none());
    h.app
        .update(Action::Reply(Reply::Action(ActionReply::ControlApplied {
            action: "heat.check",
            target: "stack".into(),
            stack_id: id.clone(),
            result: Ok(()),
        })));
    h.pump().await;
    assert!(
        h.app.store().stacks.data.is_some(),
        "the stack list is read"
    );
    h.tick_at(6).await;
    assert_eq!(h.app.settling().len(), 1, "still CHECK_IN_PROGRESS");
    set_status(&h, "CHECK_COMPLETE");
    h.tick_at(8).await;
    h.tick_at(9).await;
    assert!(h.app.settling().is_empty(), "{:?}", h.app.settling());
    let listed = h.app.store().stacks.data.as_deref().unwrap_or(&[]);
    let stack = listed.iter().find(|s| s.stack.id == id).expect("listed");
    assert_eq!(stack.status.raw, "CHECK_COMPLETE");
}

impl H {
    /// Scales `edge-native` to `to` nodes through the form and its confirmation, and
    /// returns the operator's answer, not yet applied.
    async fn accepted_scale(&mut self, to: &str) -> Reply {
        self.open_edge().await;
        self.press(KeyCode::Char('c'));
        self.press(KeyCode::Backspace);
        self.type_str(to);
        self.press(KeyCode::Enter);
        self.pump().await;
        self.press(KeyCode::Char('y'));
        for r in self.app.take_requests() {
            self.worker.submit(r);
        }
        let applied = self.rx.recv().await.expect("the scale's answer");
        assert!(
            matches!(applied, Reply::Action(ActionReply::ScaleApplied { .. })),
            "{applied:?}"
        );
        applied
    }

    /// A scale of `edge-native` accepted while Heat works on it (UPDATE_IN_PROGRESS).
    async fn settling_edge(&mut self) {
        let applied = self.accepted_scale("8").await;
        self.shape_edge(6, "UPDATE_IN_PROGRESS");
        self.app.update(Action::Reply(applied));
        self.pump().await;
        assert_eq!(self.app.settling().len(), 1);
    }

    /// The header line as drawn on a `w`x`h` terminal.
    fn header(&mut self, w: u16, h: u16) -> String {
        self.render(w, h)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    }
}

/// #15 "fresh after actions": the burst of refreshes after an action shows in the header
/// (what settles, for how long so far) while it runs, named where there is room, unnamed
/// on 80 columns, left out before the data's age on narrower ones; it goes once Heat is done.
#[tokio::test]
async fn the_header_shows_a_settle_burst_until_the_group_settles() {
    let mut h = H::ops();
    assert!(!h.header(200, 60).contains("settling"));
    h.settling_edge().await;
    h.shape_edge(8, "UPDATE_IN_PROGRESS");
    h.tick_at(14).await;
    let wide = h.header(200, 60);
    assert!(wide.contains("│ settling edge-native/edge 14s │"), "{wide}");
    let narrow = h.header(80, 24);
    assert!(narrow.contains("│ data 0s │ settling 14s "), "{narrow}");
    let middle = h.header(100, 30);
    assert!(
        middle.contains("settling edge-native/edge 14s"),
        "named before the request budget: {middle}"
    );
    let cut = h.header(90, 30);
    assert!(cut.contains("│ settling edge-native/e… 14s "), "{cut}");
    let narrower = h.header(70, 24);
    assert!(
        narrower.contains("data 0s") && !narrower.contains("settling"),
        "{narrower}"
    );
    insta::assert_snapshot!("settling_header_80x24", h.header(80, 24));
    insta::assert_snapshot!("settling_header_200x60", h.header(200, 60));
    // Heat is done: the first read that says so ends it on screen.
    h.shape_edge(8, "UPDATE_COMPLETE");
    h.tick_at(16).await;
    let done = h.header(200, 60);
    assert!(!done.contains("settling"), "{done}");
    assert!(done.contains("data 0s"), "{done}");
    // The help's header section says what it means.
    h.app.update(Action::Resize(200, 60));
    h.key(KeyAction::Help);
    h.press(KeyCode::Char('G'));
    let help = h.render(200, 60);
    let line = help
        .lines()
        .find(|l| l.contains("settling x 14s"))
        .unwrap_or_default();
    assert!(
        line.contains(" x re-read every 2 s after an action, until Heat is done"),
        "{help}"
    );
}

/// A group Heat keeps busy longer than the burst's bound: the header counts up to it and
/// the indicator goes at 120 s, the group still UPDATE_IN_PROGRESS.
#[tokio::test]
async fn the_header_drops_a_settle_burst_at_its_bound() {
    let mut h = H::ops();
    h.settling_edge().await;
    h.tick_at(118).await;
    let before = h.header(200, 60);
    assert!(
        before.contains("settling edge-native/edge 1m58s"),
        "{before}"
    );
    h.tick_at(120).await;
    let after = h.header(200, 60);
    assert!(!after.contains("settling"), "{after}");
    assert!(h.app.settling().is_empty(), "{:?}", h.app.settling());
    let group = h.app.store().nodegroups.values().find_map(|s| {
        s.data
            .as_deref()?
            .iter()
            .find(|g| g.name == "edge")
            .map(|g| g.status.raw.clone())
    });
    assert_eq!(group.as_deref(), Some("UPDATE_IN_PROGRESS"));
}

/// A Heat control settles on a stack: the header names the stack, and a second burst
/// started meanwhile is the one named, the first counted beside it.
#[tokio::test]
async fn the_header_names_the_newest_burst_and_counts_the_others() {
    let mut h = H::ops();
    h.settling_edge().await;
    let (id, name) = h.fake.with_data(|d| {
        d.stacks[0].status = crate::model::Status::parse("CHECK_IN_PROGRESS");
        (d.stacks[0].stack.id.clone(), d.stacks[0].stack.name.clone())
    });
    h.tick_at(3).await;
    h.app
        .update(Action::Reply(Reply::Action(ActionReply::ControlApplied {
            action: "heat.check",
            target: "stack".into(),
            stack_id: id,
            result: Ok(()),
        })));
    h.pump().await;
    h.tick_at(5).await;
    let header = h.header(200, 60);
    assert!(
        header.contains(&format!("│ settling {name} 2s +1 │")),
        "{header}"
    );
}

/// #26 item 7: "on the nodes pane, `space ! true Enter y`, then `j j j k`: the cursor does
/// not move" — the results that fit were scrolled (by nothing) instead of closed.
#[tokio::test]
async fn keys_after_a_run_s_results_move_the_cursor_when_there_is_nothing_to_scroll() {
    let mut h = H::ops();
    node_action_form(&mut h).await;
    h.type_str("true");
    h.press(KeyCode::Enter);
    h.press(KeyCode::Char('y'));
    h.pump().await;
    assert!(
        matches!(h.dialog(), Some(Dialog::Text { .. })),
        "{}",
        h.screen()
    );
    let before = h.app.view().table.selected_pos();
    for c in ['j', 'j', 'j', 'k'] {
        h.press(KeyCode::Char(c));
    }
    assert!(h.dialog().is_none(), "{}", h.screen());
    let after = h.app.view().table.selected_pos();
    assert_ne!(before, after, "{}", h.screen());
    // A long text still scrolls: the keys stay with it while there is more to read.
    let lines: Vec<String> = (0..60).map(|i| format!("line {i}")).collect();
    h.app.open_dialog(Dialog::Text {
        title: "long".into(),
        lines,
        scroll: 0,
    });
    h.press(KeyCode::Char('j'));
    assert!(
        matches!(h.dialog(), Some(Dialog::Text { scroll: 1, .. })),
        "{}",
        h.screen()
    );
    h.press(KeyCode::Char('k'));
    h.press(KeyCode::Char('k'));
    assert!(h.dialog().is_none(), "k at the top closes: {}", h.screen());
}

/// #26 item 9: status messages expire (an error after two minutes, not never), and
/// `:messages` shows every one of the session whole.
#[tokio::test]
async fn status_messages_expire_and_the_log_keeps_them_whole() {
    let mut h = H::ops();
    h.tick_at(0).await;
    let long = format!("scale refused: {} the end", "word ".repeat(60));
    h.app.set_status(Level::Error, long.clone());
    // Longer than the line: the status line says it was cut.
    let screen = h.render(80, 24);
    let status = screen.lines().nth(22).unwrap_or_default();
    assert!(
        status.contains("scale refused: word") && status.contains('…'),
        "{screen}"
    );
    h.app.set_status(Level::Warn, "a warning");
    h.tick_at(10).await;
    assert!(h.status().contains("a warning"), "{}", h.status());
    h.tick_at(40).await;
    assert_eq!(h.app.status(), None, "a warning leaves after 30 s");
    h.command("messages");
    let Some(Dialog::Text { lines, .. }) = h.dialog() else {
        panic!("no messages: {}", h.screen());
    };
    let error = lines
        .iter()
        .find(|l| l.contains(" ERROR scale refused:"))
        .expect("the error, whole");
    assert!(error.ends_with("the end"), "{error}");
    assert!(
        lines.iter().any(|l| l.ends_with(" warn  a warning")),
        "{lines:?}"
    );
}

/// One truth of progress (issue 25): random facts of a rollout (each node's phase and times,
/// the journal's state, Heat's stack status, the batch in flight); at one instant the CLI's
/// text and JSON, the rollout view, the nodes pane (its summary and heat-map legend) and the
/// dashboard all give the model's counts, pace, ETA and state, and the counts add up to the
/// members.
mod one_truth {
    use super::*;
    use crate::progress::{Phase, Progress};
    use crate::theme::CellState;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    const PHASES: [NodePhase; 8] = [
        NodePhase::Pending,
        NodePhase::Waiting,
        NodePhase::Paused,
        NodePhase::Updating,
        NodePhase::Done,
        NodePhase::Failed,
        NodePhase::Skipped,
        NodePhase::RolledBack,
    ];

    fn random_status(plan: &RolloutPlan, rng: &mut StdRng) -> RolloutStatus {
        let now = demo_epoch();
        let mut s = initial_status(plan);
        s.id = "r20261121T115930-0000abcd".into();
        s.state = match rng.gen_range(0..5) {
            0 => RolloutState::Paused {
                reason: "paused by the operator".into(),
            },
            1 => RolloutState::Aborted {
                reason: "aborted".into(),
            },
            2 => RolloutState::Completed,
            3 => RolloutState::Failed {
                reason: "node failed".into(),
            },
            _ => RolloutState::Running,
        };
        s.stack_status = ["UPDATE_IN_PROGRESS", "UPDATE_COMPLETE", "ROLLBACK_COMPLETE"]
            [rng.gen_range(0..3)]
        .into();
        s.current_batch = [None, Some(0), Some(1), Some(2)][rng.gen_range(0..4)];
        for n in s.nodes.iter_mut() {
            n.phase = PHASES[rng.gen_range(0..PHASES.len())];
            let released = rng.gen_range(30..900);
            n.released_at = Some(now - Chrono::seconds(released));
            n.finished_at = (n.phase == NodePhase::Done)
                .then(|| now - Chrono::seconds(rng.gen_range(0..released)));
        }
        s.compute(now);
        s
    }

    /// The words a projection prints for each count of the model (`new 3/6`, `held 2`).
    fn count_words(p: &Progress) -> Vec<String> {
        p.counts
            .items()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(phase, n)| match phase {
                Phase::New => format!("new {n}/{}", p.counts.total()),
                phase => format!("{} {n}", phase.label()),
            })
            .collect()
    }

    /// The row of node group `name` in a node groups table on `screen`.
    fn group_row(screen: &str, name: &str) -> String {
        screen
            .lines()
            .find(|l| l.contains(&format!("  {name} ")) && l.contains("worker"))
            .unwrap_or_default()
            .to_string()
    }

    fn assert_shows(what: &str, screen: &str, p: &Progress, round: usize) {
        for w in count_words(p) {
            assert!(screen.contains(&w), "round {round}, {what}: {w}\n{screen}");
        }
        if p.pace.is_some() || p.eta_secs.is_some() {
            let pe = p.pace_eta_text();
            assert!(
                screen.contains(&pe),
                "round {round}, {what}: {pe}\n{screen}"
            );
        }
        if !p.state.moving() || what == "rollout view" {
            let st = p.state.label();
            assert!(
                screen.contains(&st),
                "round {round}, {what}: {st}\n{screen}"
            );
        }
    }

    #[tokio::test]
    async fn every_projection_gives_the_models_counts_pace_eta_and_state() {
        let mut h = H::ops();
        h.open_edge().await;
        let (c, g) = h.edge_rows().await;
        let plan = edge_plan(&c, &g);
        h.rollout_driven_here(&g, &plan);
        let mut rng = StdRng::seed_from_u64(25);
        for round in 0..40 {
            let s = random_status(&plan, &mut rng);
            let p = (*s.progress).clone();
            assert_eq!(p.counts.total(), s.nodes.len(), "round {round}");
            // The command: text and JSON.
            let text = s.lines().join("\n");
            assert!(text.contains(&p.counts_text()), "round {round}: {text}");
            assert!(text.contains(&p.pace_eta_text()), "round {round}: {text}");
            assert!(text.contains(&p.state.label()), "round {round}: {text}");
            let json = serde_json::to_value(&s).unwrap();
            assert_eq!(
                json["progress"]["counts"],
                serde_json::to_value(p.counts).unwrap()
            );
            assert_eq!(json["done"], p.counts.new, "round {round}");
            assert_eq!(json["remaining"], p.counts.left(), "round {round}");
            assert_eq!(
                json["progress"]["eta_secs"],
                serde_json::to_value(p.eta_secs).unwrap()
            );
            // The rollout view.
            h.rollout_status(&g, s.clone());
            let view = h.screen();
            assert_shows("rollout view", &view, &p, round);
            // The dashboard (edge-native has this one group) and the nodes pane, with
            // their heat-map legend: held `‖` apart from old `▒`.
            h.key(KeyAction::Back);
            let dash = h.screen();
            assert_shows("dashboard", &dash, &p, round);
            // The node groups (the dashboard's table, and `:ng`): the group's row is the
            // model's, and the `nodegroups` command's cells are the same words. Wide enough
            // for the longest why a random state has (a narrow one cuts the why first).
            let row = group_row(&h.render(240, 60), &g.name);
            assert_shows("node groups row", &row, &p, round);
            h.app
                .update(Action::Command(crate::message::Command::NodeGroups));
            h.pump().await;
            let ng = group_row(&h.render(240, 60), &g.name);
            assert_eq!(ng, row, "round {round}: the :ng row is the dashboard's");
            let [counts, state, pace, eta] = p.cells();
            assert_eq!(counts, p.counts_text(), "round {round}");
            assert_eq!(state, p.state.label(), "round {round}");
            assert_eq!(
                format!("pace {pace} ETA {eta}"),
                p.pace_eta_text(),
                "round {round}"
            );
            h.key(KeyAction::Back);
            h.key(KeyAction::Open);
            h.pump().await;
            let nodes = h.screen();
            assert_shows("nodes pane", &nodes, &p, round);
            for (phase, glyph) in [
                (Phase::Pending, CellState::Old),
                (Phase::New, CellState::New),
            ] {
                let n = p
                    .counts
                    .items()
                    .iter()
                    .find(|(q, _)| *q == phase)
                    .map_or(0, |x| x.1);
                let legend = format!("{} {}", glyph.glyph(), phase.label());
                let title = nodes
                    .lines()
                    .find(|l| l.contains("Fleet heat map"))
                    .unwrap_or_default();
                assert_eq!(
                    title.contains(&format!("{legend} ")),
                    n > 0,
                    "round {round}: {legend}\n{nodes}"
                );
            }
            if p.counts.held > 0 {
                assert!(nodes.contains("‖ held"), "round {round}\n{nodes}");
                assert!(!nodes.contains("held on hook"), "round {round}\n{nodes}");
            }
            h.key(KeyAction::Back);
            h.key(KeyAction::RolloutView);
        }
    }

    /// Computed once per change of the facts, not per frame: frames of the dashboard, the
    /// nodes pane and the node groups compute no model (a group's model from its nodes, no
    /// rollout followed); a new member list computes its group's once. Prints the counts
    /// (`--nocapture`): the measure of issue 25's item.
    #[tokio::test]
    async fn frames_compute_no_model_a_new_member_list_one() {
        use crate::progress::computes_on_this_thread as computes;
        const FRAMES: u64 = 50;
        let mut h = H::ops();
        h.open_edge().await;
        let before = computes();
        h.key(KeyAction::Refresh);
        h.pump().await;
        let per_list = computes() - before;
        let mut frames = 0;
        for view in ["dashboard", "nodes", "node groups"] {
            match view {
                "nodes" => h.key(KeyAction::Open),
                "node groups" => {
                    h.key(KeyAction::Back);
                    h.app
                        .update(Action::Command(crate::message::Command::NodeGroups));
                }
                _ => {}
            }
            h.app.take_requests();
            let before = computes();
            for _ in 0..FRAMES {
                h.render(200, 60);
            }
            frames += computes() - before;
        }
        println!(
            "progress models computed: {frames} over {} frames of 3 views, {per_list} for one \
             refresh of the dashboard (its one group's member list)",
            3 * FRAMES
        );
        assert_eq!(frames, 0, "frames computed models");
        // The group list, then the member list (provisional, then whole): each a change.
        assert!(per_list <= 4, "{per_list} models for one refresh");
    }

    /// One instant of one rollout (batch 2 of 3: one node new, two updating, one held on its
    /// hook by this rollout, one old, one failed), snapped at 80x24 and 200x60 in the rollout
    /// view, the dashboard, the nodes pane and the node groups: each shows the same counts,
    /// pace and ETA.
    #[tokio::test]
    async fn one_instant_snapped_in_every_view() {
        let mut h = H::ops();
        h.open_edge().await;
        let (c, g) = h.edge_rows().await;
        let plan = edge_plan(&c, &g);
        h.rollout_driven_here(&g, &plan);
        let mut s = mid_run(&plan);
        if let Some(n) = s.nodes.iter_mut().find(|n| n.batch == 2) {
            n.phase = NodePhase::Paused;
        }
        s.compute(demo_epoch());
        let p = (*s.progress).clone();
        assert_eq!(
            (
                p.counts.new,
                p.counts.updating,
                p.counts.held,
                p.counts.pending,
                p.counts.failed
            ),
            (1, 2, 1, 1, 1)
        );
        h.rollout_status(&g, s);
        snap!(h, "one_instant_rollout_view");
        let view = h.render(80, 24);
        h.key(KeyAction::Back);
        snap!(h, "one_instant_dashboard");
        let dash = h.render(200, 60);
        h.key(KeyAction::Open);
        h.pump().await;
        snap!(h, "one_instant_nodes");
        let nodes = h.render(200, 60);
        h.key(KeyAction::Back);
        h.app
            .update(Action::Command(crate::message::Command::NodeGroups));
        h.pump().await;
        snap!(h, "one_instant_nodegroups");
        let groups = group_row(&h.render(200, 60), &g.name);
        let pace = p.pace_eta_text();
        assert!(view.contains(&pace), "{view}");
        for screen in [&dash, &nodes, &groups] {
            assert!(screen.contains(&pace), "{screen}");
            for w in count_words(&p) {
                assert!(screen.contains(&w), "{w}\n{screen}");
            }
        }
    }
}

/// The outside tester: at 80x24 `:messages` cut a long error and PgDn closed it, as did a
/// wrapped error dialog: its rows were counted as lines, not as the rows the box wraps
/// them into. The keys now scroll by the drawn rows, to the end.
#[tokio::test]
async fn a_wrapped_text_scrolls_by_its_drawn_rows_to_the_end() {
    let mut h = H::ops();
    h.app.update(Action::Resize(80, 24));
    let long = format!("ERROR {} THE-END", "word ".repeat(300));
    h.app.open_dialog(Dialog::Text {
        title: "messages".into(),
        lines: vec![long],
        scroll: 0,
    });
    h.press(KeyCode::PageDown);
    assert!(
        matches!(h.dialog(), Some(Dialog::Text { scroll, .. }) if *scroll > 0),
        "PgDn closed a text longer than the screen"
    );
    // Paging on brings its last words on screen before a key closes it.
    for _ in 0..40 {
        if h.render(80, 24).contains("THE-END") {
            return;
        }
        h.press(KeyCode::PageDown);
    }
    panic!(
        "the end of the text never came on screen: {}",
        h.render(80, 24)
    );
}
