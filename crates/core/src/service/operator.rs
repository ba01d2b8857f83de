//! The console's hands: every operator action (scale, upgrade, rollout control, node
//! actions) and the audit journal, behind one trait, so the UI never sees a driver, an HTTP
//! client or the journal file.
//!
//! The console's workers call an `Arc<dyn Operator>` exactly as they call the
//! [`CloudService`](super::CloudService) for reads. Every change is two steps, as in the
//! headless commands: a *plan* (nothing changes; the operator sees the exact nodes and API
//! calls) and then the *apply*, which passes the guard rails, writes the plan to the journal
//! (fsynced) and only then calls the cloud. `live_operator::LiveOperator` is the real one;
//! `fake::FakeOperator` drives the console's own tests.
//!
//! Targets are the console's own `Cluster` / `NodeGroup` rows; the implementation resolves
//! them to a driver by `Cluster::driver`.

use super::ServiceResult;
use crate::drivers::guard::Guard;
use crate::drivers::manual::{ControlPlan, Request as ControlRequest};
use crate::drivers::{ScalePlan, ScaleRequest, UpgradePlan};
use crate::journal::Entry;
use crate::lifecycle::HookRun;
use crate::model::{Cluster, Node, NodeGroup};
use crate::rollout::observed::ObservedUpdate;
use crate::rollout::{Control, RolloutHandle, RolloutOptions, RolloutPlan, RolloutStatus};
use futures::future::BoxFuture;

/// Everything the console can change, and its journal.
pub trait Operator: Send + Sync + 'static {
    /// The guard rails in force (read-only, production). The console asks for the typed
    /// cluster name up front on a production cloud; the apply calls check again.
    fn guard(&self) -> Guard;

    /// Reads the node group's members and works out exactly what `request` would do.
    fn plan_scale(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        request: ScaleRequest,
    ) -> BoxFuture<'static, ServiceResult<ScalePlan>>;

    /// Applies a plan the operator saw. `confirm` is the cluster name as typed (production).
    fn apply_scale(
        &self,
        plan: ScalePlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>>;

    /// Plans an upgrade to `to`: an image for a Heat-native node group (a node-by-node
    /// rollout with `options`), a cluster template for Magnum (one upgrade call whose
    /// batches Magnum runs; the error says so where the cloud has no upgrade API).
    fn plan_upgrade(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        to: String,
        options: RolloutOptions,
    ) -> BoxFuture<'static, ServiceResult<UpgradePlan>>;

    /// Starts a planned upgrade. A rollout returns the handle of its engine, which runs in
    /// this process until it ends or is killed; a Magnum upgrade returns `None` once Magnum
    /// accepted it.
    fn start_upgrade(
        &self,
        plan: UpgradePlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<Option<RolloutHandle>>>;

    /// The rollout under way on this node group, if any: from the journal (ours, even from
    /// before a restart), else from Heat (another operator's). `None` when nothing is.
    fn find_rollout(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
    ) -> BoxFuture<'static, ServiceResult<Option<RolloutPlan>>>;

    /// A rollout's status from Heat and the journal, with no engine in this process.
    fn observe_rollout(
        &self,
        plan: RolloutPlan,
    ) -> BoxFuture<'static, ServiceResult<RolloutStatus>>;

    /// An update of the node group that no caldera rollout drives — a Magnum upgrade or
    /// resize (from this console or anyone's), a Heat update sent from elsewhere — when its
    /// stack is being updated or its update failed. `None` when nothing is under way.
    fn find_update(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
    ) -> BoxFuture<'static, ServiceResult<Option<ObservedUpdate>>>;

    /// Such an update's progress from Heat, in the rollout view's shape, at a bounded cost
    /// per look whatever the node group's size.
    fn observe_update(
        &self,
        update: ObservedUpdate,
    ) -> BoxFuture<'static, ServiceResult<RolloutStatus>>;

    /// Stops an observed Heat update with Heat's cancel (`rollback`: `cancel_update`, else
    /// `cancel_without_rollback`), guarded and journaled. Refused, with the reason, where
    /// the update is not Heat's to cancel (Magnum's). `confirm`: the typed cluster name.
    fn cancel_update(
        &self,
        update: ObservedUpdate,
        rollback: bool,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>>;

    /// Takes over a rollout under way (after a restart, or another console's) by starting an
    /// engine on it here; `initial` controls (a resume) apply before it first acts.
    fn reattach_rollout(
        &self,
        plan: RolloutPlan,
        initial: Vec<Control>,
    ) -> BoxFuture<'static, ServiceResult<RolloutHandle>>;

    /// Asks the process driving `plan` (another console or command) for `control`, through
    /// the journal. An abort with a cancel mode also sends Heat's cancel here, once.
    fn request_rollout(
        &self,
        plan: RolloutPlan,
        control: Control,
    ) -> BoxFuture<'static, ServiceResult<()>>;

    /// Runs `command` on `nodes` of the node group, `batch_size` at a time, stopping after a
    /// batch with a failure; every run and its output go to the journal.
    fn node_action(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        command: String,
        nodes: Vec<Node>,
        batch_size: usize,
    ) -> BoxFuture<'static, ServiceResult<Vec<HookRun>>>;

    /// Plans a manual Heat control on the stack `stack` (a name or id): the exact calls,
    /// and why it is refused if it is. Reads Heat only.
    fn plan_control(
        &self,
        stack: String,
        request: ControlRequest,
    ) -> BoxFuture<'static, ServiceResult<ControlPlan>>;

    /// Sends a control plan the operator saw: guard rails, the journal entry, then the
    /// calls (a refused plan is only journaled). `confirm`: the typed stack name.
    fn apply_control(
        &self,
        plan: ControlPlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>>;

    /// Journal entries from byte `offset` on, and the offset to read from next time.
    fn read_journal(&self, offset: u64) -> BoxFuture<'static, ServiceResult<(Vec<Entry>, u64)>>;

    /// Where the journal is (for the console's journal view and export).
    fn journal_path(&self) -> std::path::PathBuf;
}
