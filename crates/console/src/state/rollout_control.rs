//! The rollout view's state: per node group, the rollout this console drives (statuses
//! stream from the worker), one found under way elsewhere (observed each refresh until
//! resume takes it over), or, when no caldera rollout is under way, an update caldera does
//! not drive (Magnum's, a foreign Heat update: observed, controls refused with the reason),
//! and the controls.

use super::store::Settled;
use super::view::ViewKind;
use super::{App, Level};
use crate::message::{OperatorRequest, Request, RolloutDriver, RolloutReply};
use crate::model::{Cluster, NodeGroup};
use crate::rollout::observed::ObservedUpdate;
use crate::rollout::{Control, NodePhase, RolloutStatus};
use std::collections::BTreeMap;

pub use super::store::RolloutSlot;

impl App {
    pub(super) fn open_rollout_view(&mut self, cluster: Cluster, nodegroup: NodeGroup) {
        self.store
            .rollouts
            .entry(nodegroup.id.clone())
            .or_insert_with(|| RolloutSlot::new(cluster.clone(), nodegroup.clone()));
        self.push(ViewKind::Rollout { cluster, nodegroup });
    }

    pub(super) fn nav_rollout(&mut self) {
        if matches!(self.view().kind, ViewKind::Rollout { .. }) {
            return;
        }
        match self.selected_nodegroup() {
            Some((c, g)) => self.open_rollout_view(c, g),
            None => self.set_status(Level::Warn, "no node group selected (open a cluster first)"),
        }
    }

    /// The update of a node group the panes show progress for, read as `rollout status` and
    /// `caldera nodegroups` read it: this machine's rollout, else an update Magnum or another
    /// tool runs (observed from Heat). Followed while Heat or Magnum says the group is being
    /// updated, and while an update already followed is on screen; a group at rest costs
    /// nothing. The model is core's, taken in when the answer comes (`state::store::models`).
    pub(crate) fn want_update(&mut self, cluster: &Cluster, nodegroup: &NodeGroup, force: bool) {
        let followed = self
            .store
            .rollouts
            .get(&nodegroup.id)
            .is_some_and(|s| s.status.is_some());
        // A plain stack seen as one group holds every scaling group of the stack: no one
        // update to follow (`caldera nodegroups STACK` leaves its progress empty too).
        if super::is_stack_standin(nodegroup) {
            return;
        }
        if nodegroup.status.is_in_progress() || followed {
            self.want_rollout(cluster, nodegroup, force);
        }
    }

    /// Refresh of the rollout view: find, then observe when not driven here.
    pub(crate) fn want_rollout(&mut self, cluster: &Cluster, nodegroup: &NodeGroup, force: bool) {
        let now = self.now;
        let every = self.refresh;
        let key = nodegroup.id.clone();
        let slot = self
            .store
            .rollouts
            .entry(key.clone())
            .or_insert_with(|| RolloutSlot::new(cluster.clone(), nodegroup.clone()));
        if slot.driver == Some(RolloutDriver::Here) {
            return;
        }
        if !(force || slot.meta.due(now, every)) {
            return;
        }
        let plan = slot.plan.clone();
        let finished = slot.status.as_ref().is_some_and(|s| s.state.is_final());
        if finished && !force {
            // A finished rollout stays on screen with its final figures.
            return;
        }
        if finished {
            // Asked again after an observed update ended: look for what is under way now.
            slot.observed = None;
        }
        let observed = slot.observed.clone();
        let gen = self.gen();
        let Some(slot) = self.store.rollouts.get_mut(&key) else {
            return;
        };
        slot.meta.begin(gen, now);
        if let Some(update) = observed {
            self.outbox
                .push(Request::Operator(OperatorRequest::ObserveUpdate {
                    cluster: cluster.clone(),
                    nodegroup: nodegroup.clone(),
                    update: Some(Box::new(update)),
                    gen,
                }));
            return;
        }
        match plan {
            Some(plan) => self
                .outbox
                .push(Request::Operator(OperatorRequest::ObserveRollout {
                    key,
                    plan: Box::new(plan),
                    gen,
                })),
            None => self
                .outbox
                .push(Request::Operator(OperatorRequest::FindRollout {
                    cluster: cluster.clone(),
                    nodegroup: nodegroup.clone(),
                    gen,
                })),
        }
    }

    pub(super) fn apply_rollout_reply(&mut self, reply: RolloutReply) {
        let now = self.now;
        match reply {
            RolloutReply::Found { key, gen, result } => {
                let Some(slot) = self.store.rollouts.get_mut(&key) else {
                    return;
                };
                match slot.meta.settle(gen, result, now) {
                    Settled::Stale => return,
                    Settled::Failed => {}
                    Settled::Fresh(found) => {
                        slot.searched = true;
                        match found {
                            // Our engine outranks a look-up that raced with its start.
                            Some(_) if slot.driver == Some(RolloutDriver::Here) => {}
                            Some((plan, driver)) => {
                                slot.plan = Some(plan);
                                slot.driver = Some(driver);
                                slot.observed = None;
                                // Look at it at once rather than at the next refresh.
                                slot.meta.attempted_at = None;
                            }
                            None => {
                                slot.plan = None;
                                // No rollout of caldera's: an update nobody here drives?
                                let (cluster, nodegroup) =
                                    (slot.cluster.clone(), slot.nodegroup.clone());
                                let gen = self.gen();
                                if let Some(slot) = self.store.rollouts.get_mut(&key) {
                                    slot.meta.begin(gen, now);
                                }
                                self.outbox.push(Request::Operator(
                                    OperatorRequest::ObserveUpdate {
                                        cluster,
                                        nodegroup,
                                        update: None,
                                        gen,
                                    },
                                ));
                                return;
                            }
                        }
                    }
                }
                if let ViewKind::Rollout {
                    cluster, nodegroup, ..
                } = self.view().kind.clone()
                {
                    if nodegroup.id == key {
                        self.want_rollout(&cluster, &nodegroup, false);
                    }
                }
            }
            RolloutReply::Status {
                key,
                driver,
                result,
            } => {
                let Some(slot) = self.store.rollouts.get_mut(&key) else {
                    return;
                };
                if driver == RolloutDriver::Elsewhere {
                    slot.meta.in_flight = false;
                }
                // An engine here outranks an older observation still on its way.
                if driver == RolloutDriver::Elsewhere && slot.driver == Some(RolloutDriver::Here) {
                    return;
                }
                let viewed = slot.plan.as_ref().and_then(|p| p.viewed_group.clone());
                if let Some(mut status) = slot.meta.record(result, now) {
                    name_nodes(&mut status, self.store.nodes.get(&key), viewed.as_deref());
                    slot.driver = Some(driver);
                    slot.searched = true;
                    slot.status = Some(status);
                }
            }
            RolloutReply::Observed { key, gen, result } => {
                let Some(slot) = self.store.rollouts.get_mut(&key) else {
                    return;
                };
                // An engine here (started since the look began) outranks an observation:
                // the look only ends.
                if slot.driver == Some(RolloutDriver::Here) {
                    slot.meta.end(gen);
                    return;
                }
                match slot.meta.settle(gen, result, now) {
                    Settled::Stale | Settled::Failed => {}
                    Settled::Fresh(found) => {
                        slot.searched = true;
                        match found.map(|b| *b) {
                            Some((update, mut status)) => {
                                name_nodes(&mut status, self.store.nodes.get(&key), None);
                                slot.observed = Some(update);
                                slot.status = Some(status);
                                slot.expect_update = false;
                            }
                            None => {
                                if slot.observed.take().is_some() || slot.plan.is_none() {
                                    slot.status = None;
                                }
                            }
                        }
                    }
                }
            }
            RolloutReply::Controlled { key, what, result } => {
                let label = self
                    .store
                    .rollouts
                    .get(&key)
                    .map(|s| format!("{}/{}", s.cluster.name, s.nodegroup.name))
                    .unwrap_or_else(|| key.clone());
                match result {
                    Ok(()) => {
                        self.set_status(
                            Level::Info,
                            format!("{what} sent to the rollout of {label}"),
                        );
                        // A resume releases nodes, an abort or a cancel stops or rolls back.
                        self.settle_group(&key);
                    }
                    Err(e) => {
                        self.set_status(Level::Error, format!("{what} of {label} failed: {e}"))
                    }
                }
            }
        }
    }

    /// The rollout of the view, if the view is a rollout view.
    fn rollout_in_view(&self) -> Option<(String, &RolloutSlot)> {
        match &self.view().kind {
            ViewKind::Rollout { nodegroup, .. } => self
                .store
                .rollouts
                .get(&nodegroup.id)
                .map(|s| (nodegroup.id.clone(), s)),
            _ => None,
        }
    }

    /// Sends a control: to our engine, or (a rollout elsewhere) through the operator.
    pub(super) fn send_control(&mut self, key: String, control: Control) {
        let Some(slot) = self.store.rollouts.get(&key) else {
            return;
        };
        let plan = match slot.driver {
            Some(RolloutDriver::Here) => None,
            _ => slot.plan.clone().map(Box::new),
        };
        // A resume or abort of a rollout no live process drives takes it over (an engine
        // here drives it on); one a live process drives goes to that process.
        let take_over = plan.is_some()
            && matches!(control, Control::Resume { .. } | Control::Abort(_))
            && !slot.driven_by_live_process();
        self.outbox
            .push(Request::Operator(OperatorRequest::RolloutControl {
                key,
                plan,
                control,
                take_over,
            }));
    }

    /// pause / resume / skip / abort from the rollout view's keys.
    pub(super) fn rollout_key(&mut self, what: &str) {
        let Some((key, slot)) = self.rollout_in_view() else {
            self.set_status(Level::Warn, format!("{what} works in the rollout view (o)"));
            return;
        };
        if slot.plan.is_none() && slot.status.is_none() {
            self.set_status(Level::Warn, format!("{what}: no rollout here"));
            return;
        }
        if slot.status.as_ref().is_some_and(|s| s.state.is_final()) {
            self.set_status(Level::Warn, format!("{what}: the rollout has ended"));
            return;
        }
        if let Some(update) = slot.observed.clone() {
            self.observed_key(key, update, what);
            return;
        }
        let selected = self
            .view()
            .table
            .selected(slot.nodes())
            .map(|n| (n.name.clone(), n.phase));
        let driven_here = slot.driver == Some(RolloutDriver::Here);
        let live_elsewhere = slot.driven_by_live_process();
        if !self.may_act(what) {
            return;
        }
        match what {
            "pause" => self.send_control(key, Control::Pause),
            "resume" if !driven_here && !live_elsewhere => self.confirm_take_over(key),
            "resume" => self.send_control(
                key,
                Control::Resume {
                    parameters: BTreeMap::new(),
                },
            ),
            "skip" => match selected {
                Some((name, NodePhase::Pending | NodePhase::Waiting | NodePhase::Paused)) => {
                    self.send_control(key, Control::Skip(name))
                }
                Some((name, phase)) => self.set_status(
                    Level::Warn,
                    format!(
                        "node {name} is {}: only nodes not yet released can be skipped",
                        phase.as_str()
                    ),
                ),
                None => self.set_status(Level::Warn, "skip: select a node first"),
            },
            _ => self.open_abort(key),
        }
    }

    /// The controls on an observed update: pause, resume and skip do not apply; abort is
    /// Heat's cancel where Heat may cancel (a foreign Heat update), after a confirmation.
    fn observed_key(&mut self, key: String, update: ObservedUpdate, what: &str) {
        if what != "abort" {
            self.set_status(
                Level::Warn,
                format!("{what} does not apply: {}", update.no_controls()),
            );
            return;
        }
        if let Some(why) = update.cancel_refusal() {
            self.set_status(Level::Warn, format!("abort is not available: {why}"));
            return;
        }
        if !self.may_act(what) {
            return;
        }
        self.confirm_cancel_update(key, update);
    }

    /// Taking over a rollout this console does not drive starts an engine here that releases
    /// the remaining nodes: that is a fleet-wide change, so it is confirmed like one.
    fn confirm_take_over(&mut self, key: String) {
        let Some(slot) = self.store.rollouts.get(&key) else {
            return;
        };
        let mut lines = vec![format!(
            "take over the rollout of {}/{} and drive it from this console:",
            slot.cluster.name, slot.nodegroup.name
        )];
        if let Some(s) = &slot.status {
            lines.push(format!(
                "  {}: {} done, {} failed, {} skipped, {} to go ({})",
                s.id,
                s.done,
                s.failed,
                s.skipped,
                s.remaining,
                s.state.label()
            ));
        }
        lines.extend([
            "  This console then releases the remaining nodes batch by batch, with the".to_string(),
            "  operator hooks and the health gate of this machine's actions.toml.".to_string(),
            "  Heat refuses to release a node twice, but a driver still alive elsewhere would"
                .to_string(),
            "  release the next nodes beside this one's (two at once): pause it there first."
                .to_string(),
        ]);
        if let Some(host) = slot.started_on_other_machine() {
            lines.push(format!(
                "  Note: {}.",
                crate::rollout::engine::started_elsewhere_words(host)
            ));
        }
        let name = self.production_name(&slot.cluster);
        self.open_dialog(super::action_dialogs::Dialog::Confirm(
            super::form::Confirm::new(
                "Take over this rollout?",
                lines,
                name,
                super::action_dialogs::OnYes::Rollout {
                    key,
                    control: Control::Resume {
                        parameters: BTreeMap::new(),
                    },
                },
            ),
        ));
    }
}

/// Gives each row of a rollout the server name and address the nodes pane has for that
/// member (Heat names members by index only). Rows the pane does not know keep none. The
/// pane is the target's group, whose rows are named by member (`3`), or, `viewed`, a group
/// the rollout holds beside its target, whose rows are `PATH/MEMBER` (`kube_masters/0`).
fn name_nodes(
    status: &mut RolloutStatus,
    nodes: Option<&super::store::NodeSet>,
    viewed: Option<&str>,
) {
    let Some(set) = nodes else {
        return;
    };
    let known: std::collections::HashMap<&str, &crate::model::Node> = set
        .rows
        .iter()
        .map(|r| {
            let member = r.node.key.member.as_str();
            // A pane over several groups names members `group/7`.
            (crate::model::split_member_key(member).1, &r.node)
        })
        .collect();
    for n in &mut status.nodes {
        let Some(member) = crate::rollout::plan::row_in_viewed(&n.name, viewed) else {
            continue;
        };
        if let Some(node) = known.get(member) {
            if node.name != member {
                n.server = Some(node.name.clone());
            }
            n.address = node.ip.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, NodeKey, Status};
    use crate::rollout::{NodeProgress, RolloutState};
    use crate::service::NodeUpdate;

    fn node(member: &str, name: &str, ip: Option<&str>) -> Node {
        Node {
            key: NodeKey {
                nodegroup: "ng".into(),
                member: member.into(),
            },
            index: member.rsplit('/').next().and_then(|m| m.parse().ok()),
            name: name.into(),
            zone: None,
            ip: ip.map(str::to_string),
            status: Status::parse("UPDATE_COMPLETE"),
            status_reason: None,
            image: None,
            since: None,
            hook_paused: false,
            hook_inferred: false,
            held_by_rollout: None,
            stack_id: None,
            server_id: None,
            created: None,
            replacing: false,
        }
    }

    fn progress(name: &str) -> NodeProgress {
        NodeProgress::pending(name, 0)
    }

    #[test]
    fn rollout_rows_get_the_server_names_and_addresses_the_nodes_pane_knows() {
        let now = chrono::Utc::now();
        let mut set = super::super::store::NodeSet::default();
        set.meta.begin(1, now);
        set.apply(
            1,
            Ok(NodeUpdate::Members(vec![
                node("kube_minions/0", "prod-east-node-0", Some("10.0.0.5")),
                node("kube_minions/1", "1", None),
            ])),
            now,
        );
        let mut status = RolloutStatus::new(
            "r1".into(),
            "c/ng".into(),
            "img".into(),
            RolloutState::Running,
            vec![
                progress("masters/0"),
                progress("0"),
                progress("1"),
                progress("2"),
            ],
            3,
            now,
        );
        name_nodes(&mut status, Some(&set), None);
        let got: Vec<(Option<&str>, Option<&str>)> = status
            .nodes
            .iter()
            .map(|n| (n.server.as_deref(), n.address.as_deref()))
            .collect();
        // A member whose server name is not known yet shows none, not its index again; a
        // held group's member (`masters/0`) is not the pane's.
        assert_eq!(
            got,
            [
                (None, None),
                (Some("prod-east-node-0"), Some("10.0.0.5")),
                (None, None),
                (None, None)
            ]
        );
        name_nodes(&mut status, None, None);
        assert_eq!(status.nodes[1].server.as_deref(), Some("prod-east-node-0"));

        // The pane of the group held beside the target (`masters`): its member 0 is the row
        // `masters/0`, never the target's `0`.
        for n in status.nodes.iter_mut() {
            (n.server, n.address) = (None, None);
        }
        name_nodes(&mut status, Some(&set), Some("masters"));
        let got: Vec<Option<&str>> = status.nodes.iter().map(|n| n.server.as_deref()).collect();
        assert_eq!(got, [Some("prod-east-node-0"), None, None, None]);
    }
}
