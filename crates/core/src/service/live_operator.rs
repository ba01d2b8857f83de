//! `LiveOperator`: the console's [`Operator`] over a real connection (a cloud, a standalone
//! Heat or the simulator). It resolves the console's rows to a driver the same way the
//! headless commands do (`drivers::resolve`) and acts through the same guarded, journaled
//! paths (`drivers::apply`, `rollout::engine`, `rollout::control`), so an action from the
//! console and the same action from `caldera scale` / `caldera rollout` leave the same trail.

use super::operator::Operator;
use super::plain_stack;
use super::watch::{self, Watches};
use super::{ErrorKind, ServiceError, ServiceResult};
use crate::api::cloud::CloudConnection;
use crate::api::heat::HeatClient;
use crate::command_line::CommandLine;
use crate::drivers::any_group;
use crate::drivers::apply::{self, ActionContext};
use crate::drivers::guard::Guard;
use crate::drivers::manual::{self, ControlPlan, Request as ControlRequest};
use crate::drivers::resolve::Drivers;
use crate::drivers::{
    NodeGroupTarget, ScalePlan, ScaleRequest, StackGroupScale, UpgradePlan, UpgradeTarget,
};
use crate::journal::Entry;
use crate::lifecycle::{ActionsConfig, HookContext, HookRun};
use crate::model::{Cluster, DriverKind, Node, NodeGroup};
use crate::parameter_value::{ParameterValue, ParameterValues};
use crate::rollout::observed::ObservedUpdate;
use crate::rollout::{control, engine};
use crate::rollout::{Control, RolloutHandle, RolloutOptions, RolloutPlan, RolloutStatus};
use futures::future::BoxFuture;
use futures::FutureExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Least time a control request waits for the acknowledgement of an engine in another
/// process (at least three of our polls).
const REQUEST_ACK_WAIT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct LiveOperator {
    inner: Arc<Inner>,
}

struct Inner {
    heat: HeatClient,
    /// The connection, for updates read from Magnum and Nova (Cluster API clusters).
    conn: CloudConnection,
    drivers: Drivers,
    action: ActionContext,
    config: ActionsConfig,
    poll: Duration,
    /// Observed updates: what earlier looks learnt (event cursor, member timings).
    watches: Watches,
}

impl LiveOperator {
    /// `poll` is how often a rollout engine started here looks at Heat.
    pub fn new(
        conn: &CloudConnection,
        action: ActionContext,
        config: ActionsConfig,
        poll: Duration,
    ) -> LiveOperator {
        LiveOperator {
            inner: Arc::new(Inner {
                heat: conn.heat.clone(),
                conn: conn.clone(),
                drivers: Drivers::new(conn),
                action,
                config,
                poll,
                watches: Watches::default(),
            }),
        }
    }
}

impl Inner {
    /// The console's rows to a resolved target. Heat-native clusters are known by name;
    /// Magnum clusters by uuid (names need not be unique in Magnum).
    async fn target(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> ServiceResult<NodeGroupTarget> {
        if plain_stack::is_plain_stack(cluster) {
            // A stack no driver owns: its group by resource path, labelled STACK/GROUP as
            // `caldera scale|rollout STACK/GROUP` label (and lock) it.
            let stack = self.heat.resolve(&cluster.id).await?;
            return Ok(any_group::group_target(&stack, &nodegroup.name));
        }
        let cluster_key = match cluster.driver {
            DriverKind::HeatNative => &cluster.name,
            DriverKind::Magnum => &cluster.id,
        };
        let (target, _) = self
            .drivers
            .find(cluster.driver, cluster_key, &nodegroup.name)
            .await?;
        Ok(target)
    }

    /// A scale of a group of a plain stack (the console's cluster of a stack no driver
    /// owns; its node group row is the group's resource path): planned as `caldera scale
    /// STACK/GROUP` plans it, refused for the same reasons (journaled as such).
    async fn plan_stack_group_scale(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
        request: &ScaleRequest,
    ) -> ServiceResult<ScalePlan> {
        let stack = self.heat.resolve(&cluster.id).await?;
        let plan = any_group::plan_group_scale(
            &self.heat,
            &stack,
            &nodegroup.name,
            request.count,
            &request.remove,
            &any_group::Allow::default(),
        )
        .await?;
        if !plan.refusals.is_empty() {
            let target = format!("{}/{}", stack.name, nodegroup.name);
            let line = self.with_connection(CommandLine::caldera(&["scale"]).arg(target.clone()));
            let line = match request.count {
                Some(n) => line.flag("count", n.to_string()),
                None => line,
            };
            let line = request
                .remove
                .iter()
                .fold(line, |line, m| line.flag("remove", m.clone()));
            let why = with_command_line(&plan, line);
            return Err(self.action.refuse("scale", &target, why));
        }
        plan.scale_plan().ok_or_else(|| {
            ServiceError::new(ErrorKind::Refused, "not a scale of the group".to_string())
        })
    }

    /// A rollout of a group of a plain stack to image `to`: the parameter its servers' image
    /// reads is found from Heat's structure (the templates along the group's path and a
    /// member's, [`any_group::image_parameter`]), then planned as `caldera rollout start
    /// STACK/GROUP --set PARAMETER=to` plans it: Heat's preview, the blast radius and the
    /// same refusals (journaled as such). Where the templates do not say which parameter it
    /// is, refused with the command that lets the operator name it.
    async fn plan_stack_group_upgrade(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
        to: String,
        options: RolloutOptions,
    ) -> ServiceResult<UpgradePlan> {
        let stack = self.heat.resolve(&cluster.id).await?;
        let group = nodegroup.name.as_str();
        let label = format!("{}/{group}", stack.name);
        // An image's name is a string, whatever it looks like (an image named `2024`).
        let image = ParameterValue::text(to);
        // The command that does what the form asked, for where the console cannot.
        let command = |parameter: &str| {
            let line = CommandLine::caldera(&["rollout", "start"])
                .arg(label.clone())
                .set(parameter, &image);
            self.with_connection(options.with_flags(line))
        };
        // The templates along the group's path, read once for the parameter and the plan.
        let templates = any_group::templates_along(&self.heat, &stack, group).await?;
        let parameter =
            match any_group::image_parameter(&self.heat, &stack, group, &templates).await? {
                Ok(p) => p,
                Err(why) => {
                    return Err(self.action.refuse(
                        "rollout.start",
                        &label,
                        any_group::image_parameter_refusal(&label, &why, &command("PARAMETER")),
                    ))
                }
            };
        let set: ParameterValues = [(parameter.clone(), image.clone())].into_iter().collect();
        let preview = any_group::plan_group_rollout_in(
            &self.heat,
            &stack,
            group,
            &set,
            &any_group::Allow::default(),
            &templates,
        )
        .await?;
        if !preview.refusals.is_empty() {
            let why = with_command_line(&preview, command(&parameter));
            return Err(self.action.refuse("rollout.start", &label, why));
        }
        let mut plan = preview.rollout_plan(options);
        // What the group's members boot now, as the node-group row read it.
        plan.from_image = nodegroup.image.clone();
        Ok(UpgradePlan::Rollout(Box::new(plan)))
    }

    /// Applies a plain stack's group scale: planned again against the stack as it is now,
    /// and applied only when the group and what the plan sets are as the operator read them.
    async fn apply_stack_group_scale(
        &self,
        confirmed: &ScalePlan,
        planned: &StackGroupScale,
        confirm: Option<&str>,
    ) -> ServiceResult<()> {
        let target = &confirmed.target;
        let stack = target.stack.clone().ok_or_else(|| {
            ServiceError::new(ErrorKind::Refused, format!("{}: no stack", target.label()))
        })?;
        let now = any_group::replan_confirmed_scale(
            &self.action,
            &self.heat,
            &stack,
            &target.nodegroup,
            (confirmed.from, confirmed.to),
            &confirmed.removed,
            &planned.set,
            &any_group::Allow::default(),
        )
        .await?;
        any_group::apply_group_update(&self.action, &self.heat, &now, confirm).await
    }

    /// `line` with the connection the console uses, so the command shown reaches the same
    /// cloud from any shell: `--cloud NAME` (and `--region`) for a cloud of clouds.yaml,
    /// `--heat-url URL` for a standalone Heat. The built-in simulator lives only as long as
    /// the console: no flag reaches it.
    fn with_connection(&self, line: CommandLine) -> CommandLine {
        let info = self.conn.info();
        if info.is_simulator {
            return line;
        }
        match info.cloud.as_str() {
            "standalone" => line.flag("heat-url", self.heat.base().trim_end_matches('/')),
            name => {
                let line = line.flag("cloud", name);
                match info.region {
                    Some(region) => line.flag("region", region),
                    None => line,
                }
            }
        }
    }

    fn engine_options(&self, target: &NodeGroupTarget) -> engine::EngineOptions {
        control::engine_options(&self.config, &self.action.actor.cloud, target, self.poll)
    }
}

/// A refused plan's reasons, for the console: where only `--let-heat-update` would lift them
/// (the blast radius), the command that can, with its flags, since the form cannot take them.
fn with_command_line(plan: &any_group::GroupUpdatePlan, command: CommandLine) -> String {
    let reasons = plan.refusals.join("; ");
    let hold = plan.hold_flags(command.clone());
    match plan.override_flags(command) {
        None => reasons,
        Some(command) => {
            let hold = hold
                .map(|h| {
                    format!("; or, to hold them too, one member at a time before the target: `{h}`")
                })
                .unwrap_or_default();
            format!(
                "{reasons}. The console does not let Heat update other resources unheld; from the \
                 command line, with its preview: `{command}`{hold}"
            )
        }
    }
}

impl Operator for LiveOperator {
    fn guard(&self) -> Guard {
        self.inner.action.guard
    }

    fn plan_scale(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        request: ScaleRequest,
    ) -> BoxFuture<'static, ServiceResult<ScalePlan>> {
        let me = self.inner.clone();
        async move {
            if plain_stack::is_plain_stack(&cluster) {
                return me
                    .plan_stack_group_scale(&cluster, &nodegroup, &request)
                    .await;
            }
            let target = me.target(&cluster, &nodegroup).await?;
            me.drivers
                .of(target.driver)?
                .plan_scale(&target, &request)
                .await
        }
        .boxed()
    }

    fn apply_scale(
        &self,
        plan: ScalePlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>> {
        let me = self.inner.clone();
        async move {
            if let Some(planned) = &plan.stack_group {
                return me
                    .apply_stack_group_scale(&plan, planned, confirm.as_deref())
                    .await;
            }
            let driver = me.drivers.of(plan.target.driver)?;
            apply::scale(&me.action, driver, &plan, confirm.as_deref()).await
        }
        .boxed()
    }

    fn plan_upgrade(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        to: String,
        options: RolloutOptions,
    ) -> BoxFuture<'static, ServiceResult<UpgradePlan>> {
        let me = self.inner.clone();
        async move {
            if plain_stack::is_plain_stack(&cluster) {
                return me
                    .plan_stack_group_upgrade(&cluster, &nodegroup, to, options)
                    .await;
            }
            let target = me.target(&cluster, &nodegroup).await?;
            let to = match target.driver {
                DriverKind::HeatNative => UpgradeTarget::Image(to),
                DriverKind::Magnum => UpgradeTarget::ClusterTemplate(to),
            };
            me.drivers
                .of(target.driver)?
                .plan_upgrade(&target, &to, &options)
                .await
        }
        .boxed()
    }

    fn start_upgrade(
        &self,
        plan: UpgradePlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<Option<RolloutHandle>>> {
        let me = self.inner.clone();
        async move {
            match plan {
                UpgradePlan::Rollout(plan) => {
                    let options = me.engine_options(&plan.target);
                    let handle = engine::start(
                        me.heat.clone(),
                        me.action.clone(),
                        *plan,
                        options,
                        confirm.as_deref(),
                    )
                    .await?;
                    Ok(Some(handle))
                }
                UpgradePlan::Magnum(plan) => {
                    let magnum = me.drivers.magnum()?;
                    apply::magnum_upgrade(&me.action, magnum, &plan, confirm.as_deref()).await?;
                    Ok(None)
                }
            }
        }
        .boxed()
    }

    fn find_rollout(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
    ) -> BoxFuture<'static, ServiceResult<Option<RolloutPlan>>> {
        let me = self.inner.clone();
        async move {
            let target = me.target(&cluster, &nodegroup).await?;
            control::find_rollout(&me.heat, &me.action, &target).await
        }
        .boxed()
    }

    fn observe_rollout(
        &self,
        plan: RolloutPlan,
    ) -> BoxFuture<'static, ServiceResult<RolloutStatus>> {
        let me = self.inner.clone();
        async move { engine::observe_status(&me.heat, &me.action.journal, &plan).await }.boxed()
    }

    fn find_update(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
    ) -> BoxFuture<'static, ServiceResult<Option<ObservedUpdate>>> {
        let me = self.inner.clone();
        async move {
            let target = me.target(&cluster, &nodegroup).await?;
            watch::find_any(&me.conn, &target).await
        }
        .boxed()
    }

    fn observe_update(
        &self,
        update: ObservedUpdate,
    ) -> BoxFuture<'static, ServiceResult<RolloutStatus>> {
        let me = self.inner.clone();
        async move { watch::observe_any(&me.conn, &me.watches, &update).await }.boxed()
    }

    fn cancel_update(
        &self,
        update: ObservedUpdate,
        rollback: bool,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>> {
        let me = self.inner.clone();
        async move {
            watch::cancel_update(&me.heat, &me.action, &update, rollback, confirm.as_deref()).await
        }
        .boxed()
    }

    fn reattach_rollout(
        &self,
        plan: RolloutPlan,
        initial: Vec<Control>,
    ) -> BoxFuture<'static, ServiceResult<RolloutHandle>> {
        let me = self.inner.clone();
        async move {
            let options = me.engine_options(&plan.target);
            // The console asks before a take-over, and its question says where the
            // rollout was started when that is another machine.
            engine::reattach(
                me.heat.clone(),
                me.action.clone(),
                plan,
                options,
                initial,
                engine::TakeOver::AnyMachine,
            )
            .await
        }
        .boxed()
    }

    fn request_rollout(
        &self,
        plan: RolloutPlan,
        control: Control,
    ) -> BoxFuture<'static, ServiceResult<()>> {
        let me = self.inner.clone();
        async move {
            let options = me.engine_options(&plan.target);
            // `None`: nothing waits for an acknowledgement (an abort driven here to its
            // end, a skip recorded for the next driver).
            let Some(after) = control::ask(&me.heat, &me.action, &plan, &control, options).await?
            else {
                return Ok(());
            };
            // The engine is in another process: say whether it honoured the request, not
            // only that the request was written.
            let wait = REQUEST_ACK_WAIT.max(me.poll * 3);
            match control::acknowledgement(&me.action.journal, &plan, &control, after, wait).await?
            {
                control::Ack::Honoured(_) => Ok(()),
                control::Ack::Refused(e) => Err(ServiceError::new(
                    ErrorKind::Refused,
                    format!(
                        "rollout {} refused the request: {}",
                        plan.id,
                        match &e.outcome {
                            crate::journal::Outcome::Refused { error } => error.as_str(),
                            _ => "",
                        }
                    ),
                )),
                control::Ack::Ended(e) => Err(ServiceError::new(
                    ErrorKind::Config,
                    format!(
                        "rollout {} ended before it honoured the request ({})",
                        plan.id, e.action
                    ),
                )),
                control::Ack::Queued => Err(ServiceError::new(
                    ErrorKind::Config,
                    format!(
                        "queued in the journal, but no engine acknowledged it within {}s: \
                         the process driving rollout {} may be gone or busy (resume drives \
                         it from here)",
                        wait.as_secs(),
                        plan.id
                    ),
                )),
            }
        }
        .boxed()
    }

    fn node_action(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        command: String,
        nodes: Vec<Node>,
        batch_size: usize,
    ) -> BoxFuture<'static, ServiceResult<Vec<HookRun>>> {
        let me = self.inner.clone();
        async move {
            let target = me.target(&cluster, &nodegroup).await?;
            let contexts: Vec<HookContext> = nodes
                .into_iter()
                .map(|n| HookContext {
                    cluster: target.cluster.clone(),
                    nodegroup: target.nodegroup.clone(),
                    // The row's name is the server's where it is known (what `kubectl`
                    // calls the node); the member name is how the journal knows it.
                    node_name: Some(n.name),
                    node_member: Some(n.key.member),
                    node_index: n.index,
                    node_ip: n.ip,
                    ..Default::default()
                })
                .collect();
            let timeout = me
                .config
                .hooks_for(&me.action.actor.cloud, &target.cluster)
                .timeout();
            apply::node_action(
                &me.action,
                &target,
                &command,
                contexts,
                batch_size.max(1),
                timeout,
            )
            .await
        }
        .boxed()
    }

    fn plan_control(
        &self,
        stack: String,
        request: ControlRequest,
    ) -> BoxFuture<'static, ServiceResult<ControlPlan>> {
        let me = self.inner.clone();
        async move {
            let stack = me.heat.resolve(&stack).await?;
            manual::plan(&me.heat, &stack, &request).await
        }
        .boxed()
    }

    fn apply_control(
        &self,
        plan: ControlPlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>> {
        let me = self.inner.clone();
        async move { manual::apply(&me.action, &me.heat, &plan, confirm.as_deref()).await }.boxed()
    }

    fn read_journal(&self, offset: u64) -> BoxFuture<'static, ServiceResult<(Vec<Entry>, u64)>> {
        let journal = self.inner.action.journal.clone();
        async move {
            // The journal is a file read with std I/O: off the async workers.
            tokio::task::spawn_blocking(move || journal.read_from(offset))
                .await
                .map_err(|e| ServiceError::new(ErrorKind::Config, format!("journal reader: {e}")))?
                .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))
        }
        .boxed()
    }

    fn journal_path(&self) -> PathBuf {
        self.inner.action.journal.path().to_path_buf()
    }
}
