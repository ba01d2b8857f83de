//! The operator's side of the worker: plans, applies, rollouts and the journal, each a
//! task that answers with a typed [`Reply`]. The worker owns the rollouts this console
//! drives and forwards each status change (coalesced: only the newest matters).

use super::Worker;
use crate::message::{
    ActionReply, OperatorRequest, Reply, RolloutDriver, RolloutReply, NO_ACTIONS,
};
use crate::rollout::{Control, RolloutHandle, RolloutPlan, RolloutStatus};
use crate::service::{ErrorKind, ServiceError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;

/// Shortest time between two forwarded statuses of one rollout.
const COALESCE: Duration = Duration::from_millis(100);

fn unavailable() -> ServiceError {
    ServiceError::new(ErrorKind::Unsupported, NO_ACTIONS)
}

/// A rollout with its engine in this process.
struct Driven {
    plan: RolloutPlan,
    handle: RolloutHandle,
}

/// The driven rollouts by node-group id, shared with the tasks that start them.
#[derive(Clone, Default)]
pub struct Rollouts(Arc<Mutex<HashMap<String, Driven>>>);

impl Rollouts {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Driven>> {
        match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

/// Sends each new status of `rx` until the rollout ends or its engine goes away.
async fn forward(tx: UnboundedSender<Reply>, key: String, mut rx: watch::Receiver<RolloutStatus>) {
    loop {
        let status = rx.borrow_and_update().clone();
        let last = status.state.is_final();
        let reply = Reply::Rollout(RolloutReply::Status {
            key: key.clone(),
            driver: RolloutDriver::Here,
            result: Ok(status),
        });
        if tx.send(reply).is_err() || last {
            return;
        }
        if rx.changed().await.is_err() {
            let status = rx.borrow().clone();
            let _ = tx.send(Reply::Rollout(RolloutReply::Status {
                key,
                driver: RolloutDriver::Here,
                result: Ok(status),
            }));
            return;
        }
        // A burst of changes becomes one reply: the watch keeps only the newest.
        tokio::time::sleep(COALESCE).await;
    }
}

impl Worker {
    /// Keeps a rollout's handle and starts forwarding its statuses.
    fn adopt(
        rollouts: &Rollouts,
        tx: &UnboundedSender<Reply>,
        key: String,
        plan: RolloutPlan,
        handle: RolloutHandle,
    ) {
        let rx = handle.watch();
        rollouts.lock().insert(key.clone(), Driven { plan, handle });
        tokio::spawn(forward(tx.clone(), key, rx));
    }

    pub(super) fn submit_action(&mut self, req: OperatorRequest) {
        let tx = self.tx.clone();
        let Some(op) = self.operator.clone() else {
            let _ = tx.send(refusal(req));
            return;
        };
        match req {
            OperatorRequest::PlanScale {
                cluster,
                nodegroup,
                request,
                gen,
            } => self.spawn(async move {
                let result = op.plan_scale(cluster, nodegroup, request).await;
                let _ = tx.send(Reply::Action(ActionReply::ScalePlan { gen, result }));
            }),
            OperatorRequest::ApplyScale {
                plan,
                confirm,
                nodegroup_id,
            } => self.spawn(async move {
                let target = plan.target.label();
                let result = op.apply_scale(*plan, confirm).await;
                let _ = tx.send(Reply::Action(ActionReply::ScaleApplied {
                    target,
                    nodegroup_id,
                    result,
                }));
            }),
            OperatorRequest::PlanUpgrade {
                cluster,
                nodegroup,
                to,
                options,
                gen,
            } => self.spawn(async move {
                let result = op.plan_upgrade(cluster, nodegroup, to, options).await;
                let _ = tx.send(Reply::Action(ActionReply::UpgradePlan { gen, result }));
            }),
            OperatorRequest::StartUpgrade { plan, confirm, key } => {
                let rollouts = self.rollouts.clone();
                self.spawn(async move {
                    let rollout_plan = match plan.as_ref() {
                        crate::drivers::UpgradePlan::Rollout(p) => Some((**p).clone()),
                        crate::drivers::UpgradePlan::Magnum(_) => None,
                    };
                    let target = match plan.as_ref() {
                        crate::drivers::UpgradePlan::Rollout(p) => p.target.label(),
                        crate::drivers::UpgradePlan::Magnum(p) => p.target.label(),
                    };
                    let result = match op.start_upgrade(*plan, confirm).await {
                        Ok(Some(handle)) => match rollout_plan {
                            Some(p) => {
                                Worker::adopt(&rollouts, &tx, key.clone(), p, handle);
                                Ok(true)
                            }
                            None => Ok(false),
                        },
                        Ok(None) => Ok(false),
                        Err(e) => Err(e),
                    };
                    let _ = tx.send(Reply::Action(ActionReply::UpgradeStarted {
                        key,
                        target,
                        result,
                    }));
                })
            }
            OperatorRequest::FindRollout {
                cluster,
                nodegroup,
                gen,
            } => {
                let key = nodegroup.id.clone();
                let ours = self
                    .rollouts
                    .lock()
                    .get(&key)
                    .map(|d| (d.plan.clone(), d.handle.status()));
                if let Some((plan, status)) = ours {
                    let _ = tx.send(Reply::Rollout(RolloutReply::Found {
                        key: key.clone(),
                        gen,
                        result: Ok(Some((plan, RolloutDriver::Here))),
                    }));
                    let _ = tx.send(Reply::Rollout(RolloutReply::Status {
                        key,
                        driver: RolloutDriver::Here,
                        result: Ok(status),
                    }));
                    return;
                }
                self.spawn(async move {
                    let result = op
                        .find_rollout(cluster, nodegroup)
                        .await
                        .map(|found| found.map(|p| (p, RolloutDriver::Elsewhere)));
                    let _ = tx.send(Reply::Rollout(RolloutReply::Found { key, gen, result }));
                })
            }
            OperatorRequest::ObserveRollout { key, plan, gen: _ } => {
                let ours = self.rollouts.lock().get(&key).map(|d| d.handle.status());
                if let Some(status) = ours {
                    // Driven here since: answer with the engine's own status.
                    let _ = tx.send(Reply::Rollout(RolloutReply::Status {
                        key,
                        driver: RolloutDriver::Here,
                        result: Ok(status),
                    }));
                    return;
                }
                self.spawn(async move {
                    let result = op.observe_rollout(*plan).await;
                    let _ = tx.send(Reply::Rollout(RolloutReply::Status {
                        key,
                        driver: RolloutDriver::Elsewhere,
                        result,
                    }));
                })
            }
            OperatorRequest::ObserveUpdate {
                nodegroup,
                cluster,
                update,
                gen,
            } => self.spawn(async move {
                let key = nodegroup.id.clone();
                let found = match update {
                    Some(u) => Ok(Some(*u)),
                    None => op.find_update(cluster, nodegroup).await,
                };
                let result = match found {
                    Ok(Some(u)) => op
                        .observe_update(u.clone())
                        .await
                        .map(|s| Some(Box::new((u, s)))),
                    Ok(None) => Ok(None),
                    Err(e) => Err(e),
                };
                let _ = tx.send(Reply::Rollout(RolloutReply::Observed { key, gen, result }));
            }),
            OperatorRequest::CancelUpdate {
                key,
                update,
                rollback,
                confirm,
            } => self.spawn(async move {
                let what = if rollback {
                    "cancel_update (rollback)"
                } else {
                    "cancel_without_rollback"
                }
                .to_string();
                let result = op.cancel_update(*update, rollback, confirm).await;
                let _ = tx.send(Reply::Rollout(RolloutReply::Controlled {
                    key,
                    what,
                    result,
                }));
            }),
            OperatorRequest::RolloutControl {
                key,
                plan,
                control,
                take_over,
            } => {
                let what = control_label(&control);
                let sent = self
                    .rollouts
                    .lock()
                    .get(&key)
                    .map(|d| d.handle.send(control.clone()));
                if let Some(result) = sent {
                    let _ = tx.send(Reply::Rollout(RolloutReply::Controlled {
                        key,
                        what,
                        result,
                    }));
                    return;
                }
                let Some(plan) = plan else {
                    let _ = tx.send(Reply::Rollout(RolloutReply::Controlled {
                        key,
                        what,
                        result: Err(ServiceError::new(
                            ErrorKind::NotFound,
                            "no rollout to control here",
                        )),
                    }));
                    return;
                };
                let rollouts = self.rollouts.clone();
                self.spawn(async move {
                    let result = if take_over {
                        // Taking over: an engine here, resumed (or aborting, so the cancel
                        // is driven to its end and shown) before it first acts. When a live
                        // process holds the rollout after all, the control goes to it.
                        match op
                            .reattach_rollout((*plan).clone(), vec![control.clone()])
                            .await
                        {
                            Ok(handle) => {
                                Worker::adopt(&rollouts, &tx, key.clone(), *plan, handle);
                                Ok(())
                            }
                            Err(e) if e.kind == ErrorKind::Refused => {
                                op.request_rollout(*plan, control).await
                            }
                            Err(e) => Err(e),
                        }
                    } else {
                        op.request_rollout(*plan, control).await
                    };
                    let _ = tx.send(Reply::Rollout(RolloutReply::Controlled {
                        key,
                        what,
                        result,
                    }));
                })
            }
            OperatorRequest::NodeAction {
                cluster,
                nodegroup,
                command,
                nodes,
                batch_size,
            } => self.spawn(async move {
                let target = format!("{}/{}", cluster.name, nodegroup.name);
                let nodegroup_id = nodegroup.id.clone();
                let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
                let asked = nodes.len();
                let result = op
                    .node_action(cluster, nodegroup, command, nodes, batch_size)
                    .await
                    .map(|runs| names.into_iter().zip(runs).collect());
                let _ = tx.send(Reply::Action(ActionReply::NodeActionDone {
                    target,
                    nodegroup_id,
                    result,
                    asked,
                }));
            }),
            OperatorRequest::Journal { offset, gen } => self.spawn(async move {
                let result = op.read_journal(offset).await;
                let _ = tx.send(Reply::Journal { gen, result });
            }),
            OperatorRequest::PlanControl {
                stack,
                request,
                gen,
            } => self.spawn(async move {
                let result = op.plan_control(stack, request).await;
                let _ = tx.send(Reply::Action(ActionReply::ControlPlan { gen, result }));
            }),
            OperatorRequest::ApplyControl { plan, confirm } => self.spawn(async move {
                let (action, target) = (plan.control.action(), plan.target.clone());
                let stack_id = plan.stack.id.clone();
                let result = op.apply_control(*plan, confirm).await;
                let _ = tx.send(Reply::Action(ActionReply::ControlApplied {
                    action,
                    target,
                    stack_id,
                    result,
                }));
            }),
        }
    }
}

/// How a control is named in the status line.
pub fn control_label(c: &Control) -> String {
    match c {
        Control::Pause => "pause".into(),
        Control::Resume { .. } => "resume".into(),
        Control::Skip(n) => format!("skip {n}"),
        Control::Abort(mode) => format!("abort ({mode:?})"),
    }
}

/// The answer to an action request on a connection without an operator.
fn refusal(req: OperatorRequest) -> Reply {
    let e = unavailable;
    match req {
        OperatorRequest::PlanScale { gen, .. } => Reply::Action(ActionReply::ScalePlan {
            gen,
            result: Err(e()),
        }),
        OperatorRequest::ApplyScale {
            plan, nodegroup_id, ..
        } => Reply::Action(ActionReply::ScaleApplied {
            target: plan.target.label(),
            nodegroup_id,
            result: Err(e()),
        }),
        OperatorRequest::PlanUpgrade { gen, .. } => Reply::Action(ActionReply::UpgradePlan {
            gen,
            result: Err(e()),
        }),
        OperatorRequest::StartUpgrade { key, .. } => Reply::Action(ActionReply::UpgradeStarted {
            key,
            target: String::new(),
            result: Err(e()),
        }),
        OperatorRequest::FindRollout { nodegroup, gen, .. } => {
            Reply::Rollout(RolloutReply::Found {
                key: nodegroup.id,
                gen,
                result: Err(e()),
            })
        }
        OperatorRequest::ObserveRollout { key, .. } => Reply::Rollout(RolloutReply::Status {
            key,
            driver: RolloutDriver::Elsewhere,
            result: Err(e()),
        }),
        OperatorRequest::ObserveUpdate { nodegroup, gen, .. } => {
            Reply::Rollout(RolloutReply::Observed {
                key: nodegroup.id,
                gen,
                result: Err(e()),
            })
        }
        OperatorRequest::CancelUpdate { key, .. } => Reply::Rollout(RolloutReply::Controlled {
            key,
            what: "cancel".into(),
            result: Err(e()),
        }),
        OperatorRequest::RolloutControl { key, control, .. } => {
            Reply::Rollout(RolloutReply::Controlled {
                key,
                what: control_label(&control),
                result: Err(e()),
            })
        }
        OperatorRequest::NodeAction {
            cluster,
            nodegroup,
            nodes,
            ..
        } => Reply::Action(ActionReply::NodeActionDone {
            target: format!("{}/{}", cluster.name, nodegroup.name),
            nodegroup_id: nodegroup.id,
            result: Err(e()),
            asked: nodes.len(),
        }),
        OperatorRequest::Journal { gen, .. } => Reply::Journal {
            gen,
            result: Err(e()),
        },
        OperatorRequest::PlanControl { gen, .. } => Reply::Action(ActionReply::ControlPlan {
            gen,
            result: Err(e()),
        }),
        OperatorRequest::ApplyControl { plan, .. } => Reply::Action(ActionReply::ControlApplied {
            action: plan.control.action(),
            stack_id: plan.stack.id.clone(),
            target: plan.target,
            result: Err(e()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::ScaleRequest;
    use crate::message::Request;
    use crate::rollout::{RolloutOptions, RolloutState};
    use crate::service::fake::FakeCloud;
    use crate::service::fake_operator::FakeOperator;
    use crate::service::operator::Operator;
    use crate::service::CloudService;
    use std::collections::BTreeMap;
    use tokio::sync::mpsc::UnboundedReceiver;

    async fn next(rx: &mut UnboundedReceiver<Reply>) -> Reply {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("an answer")
            .expect("channel open")
    }

    async fn edge(cloud: &FakeCloud) -> (crate::model::Cluster, crate::model::NodeGroup) {
        let c = cloud
            .list_clusters()
            .await
            .unwrap()
            .into_iter()
            .find(|c| c.name == "edge-native")
            .unwrap();
        let g = cloud.list_nodegroups(c.clone()).await.unwrap()[0].clone();
        (c, g)
    }

    #[tokio::test]
    async fn without_an_operator_every_action_says_so() {
        let cloud = FakeCloud::demo(10);
        let (c, g) = edge(&cloud).await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut w = Worker::new(Arc::new(cloud), tx);
        w.submit(Request::Operator(OperatorRequest::PlanScale {
            cluster: c.clone(),
            nodegroup: g.clone(),
            request: ScaleRequest::default(),
            gen: 7,
        }));
        match next(&mut rx).await {
            Reply::Action(ActionReply::ScalePlan { gen: 7, result }) => {
                assert_eq!(result.unwrap_err().message, NO_ACTIONS)
            }
            other => panic!("{other:?}"),
        }
        w.submit(Request::Operator(OperatorRequest::Journal {
            offset: 0,
            gen: 1,
        }));
        assert!(matches!(
            next(&mut rx).await,
            Reply::Journal { result: Err(e), .. } if e.message == NO_ACTIONS
        ));
    }

    #[tokio::test]
    async fn a_started_rollout_streams_statuses_and_takes_controls() {
        let cloud = FakeCloud::demo(10);
        let (c, g) = edge(&cloud).await;
        let op = FakeOperator::new(cloud.clone()).with_step(Duration::from_millis(300));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let op_dyn: Arc<dyn Operator> = Arc::new(op.clone());
        let mut w = Worker::new(Arc::new(cloud), tx).with_operator(Some(op_dyn.clone()));
        let plan = op_dyn
            .plan_upgrade(
                c.clone(),
                g.clone(),
                "img-v2".into(),
                RolloutOptions::default(),
            )
            .await
            .unwrap();
        w.submit(Request::Operator(OperatorRequest::StartUpgrade {
            plan: Box::new(plan),
            confirm: None,
            key: g.id.clone(),
        }));
        let mut started = false;
        let mut running = false;
        while !(started && running) {
            match next(&mut rx).await {
                Reply::Action(ActionReply::UpgradeStarted { result, .. }) => {
                    assert_eq!(result, Ok(true));
                    started = true;
                }
                Reply::Rollout(RolloutReply::Status { result, driver, .. }) => {
                    assert_eq!(driver, RolloutDriver::Here);
                    running |= result.unwrap().state == RolloutState::Running;
                }
                other => panic!("{other:?}"),
            }
        }
        w.submit(Request::Operator(OperatorRequest::RolloutControl {
            key: g.id.clone(),
            plan: None,
            control: Control::Pause,
            take_over: false,
        }));
        loop {
            if let Reply::Rollout(RolloutReply::Status { result: Ok(s), .. }) = next(&mut rx).await
            {
                if matches!(s.state, RolloutState::Paused { .. }) {
                    break;
                }
            }
        }
        // Found again (the view re-opened): ours, driven here.
        w.submit(Request::Operator(OperatorRequest::FindRollout {
            cluster: c,
            nodegroup: g.clone(),
            gen: 3,
        }));
        loop {
            if let Reply::Rollout(RolloutReply::Found { result, .. }) = next(&mut rx).await {
                assert_eq!(result.unwrap().unwrap().1, RolloutDriver::Here);
                break;
            }
        }
        w.submit(Request::Operator(OperatorRequest::RolloutControl {
            key: g.id,
            plan: None,
            control: Control::Resume {
                parameters: BTreeMap::new(),
            },
            take_over: false,
        }));
        loop {
            if let Reply::Rollout(RolloutReply::Status { result: Ok(s), .. }) = next(&mut rx).await
            {
                if s.state == RolloutState::Completed {
                    assert_eq!(s.done, 6);
                    break;
                }
            }
        }
        assert!(op.calls().iter().any(|c| c.starts_with("start_upgrade")));
    }
}
