//! Applying a plan: guard rails, then the journal (the intent, fsynced), then the API calls,
//! then the outcome. The console and the headless commands both come through here.

use super::guard::{Guard, Reach};
use super::{Driver, ScalePlan};
use crate::journal::{Actor, Entry, Journal, Outcome};
use crate::report::{ErrorKind, ServiceError, ServiceResult};

/// Who acts, where it is recorded, and what is allowed.
#[derive(Debug, Clone)]
pub struct ActionContext {
    pub actor: Actor,
    pub journal: Journal,
    pub guard: Guard,
}

impl ActionContext {
    /// Records a refusal too: a blocked attempt is part of the audit trail.
    pub fn check(
        &self,
        action: &str,
        target: &str,
        cluster: &str,
        reach: Reach,
        confirm: Option<&str>,
    ) -> ServiceResult<()> {
        match self.guard.check(action, cluster, reach, confirm) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.refuse(action, target, e.message)),
        }
    }

    /// An action refused before anything was sent: recorded as refused (a blocked attempt is
    /// part of the audit trail), and the error to return. Nothing reaches the cloud, so a
    /// journal that cannot be written does not stop the refusal; the error says so.
    pub fn refuse(&self, action: &str, target: &str, error: String) -> ServiceError {
        let entry = Entry::new(
            &self.actor,
            action,
            target,
            Outcome::Refused {
                error: error.clone(),
            },
        );
        match self.journal.append(&entry) {
            Ok(_) => ServiceError::new(ErrorKind::Refused, error),
            Err(e) => ServiceError::new(
                ErrorKind::Refused,
                format!("{error} (the refusal could not be journaled: {e})"),
            ),
        }
    }

    pub fn record(&self, entry: &Entry) -> ServiceResult<()> {
        self.record_at(entry).map(|_| ())
    }

    /// Records `entry`; returns the journal offset just after it.
    pub fn record_at(&self, entry: &Entry) -> ServiceResult<u64> {
        self.journal
            .append(entry)
            .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))
    }
}

/// Applies a scale plan the operator has seen.
pub async fn scale(
    ctx: &ActionContext,
    driver: &dyn Driver,
    plan: &ScalePlan,
    confirm: Option<&str>,
) -> ServiceResult<()> {
    let target = plan.target.label();
    ctx.check(
        "scale",
        &target,
        &plan.target.cluster,
        Reach::Fleet,
        confirm,
    )?;
    still_as_planned(ctx, driver, plan).await?;
    let entry = Entry::new(&ctx.actor, "scale", &target, Outcome::Started)
        .plan(plan.lines())
        .calls(plan.calls.clone());
    ctx.record(&entry)?;
    let result = driver.apply_scale(plan).await;
    let outcome = match &result {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed {
            error: e.message.clone(),
        },
    };
    ctx.record(
        &Entry::new(&ctx.actor, "scale", &target, outcome)
            .plan(vec![format!("{} -> {} nodes", plan.from, plan.to)]),
    )?;
    result
}

/// A scale is confirmed after the operator read its plan, for as long as they liked: the
/// group's count is read again, and a group that moved meanwhile (someone scaled it: the same
/// target count would now add or remove other members than the plan said) is refused and
/// journaled, nothing sent.
async fn still_as_planned(
    ctx: &ActionContext,
    driver: &dyn Driver,
    plan: &ScalePlan,
) -> ServiceResult<()> {
    let target = plan.target.label();
    let again = super::ScaleRequest {
        count: Some(plan.to),
        remove: Vec::new(),
    };
    let error = match driver.plan_scale(&plan.target, &again).await {
        Ok(now) if now.from == plan.from => return Ok(()),
        Ok(now) => format!(
            "{target} changed while the plan was read: it has {} members now (the plan said \
             {} -> {}); nothing was sent, plan again",
            now.from, plan.from, plan.to
        ),
        Err(e) => format!(
            "{target}: its count could not be read again before sending ({}); nothing was \
             sent, plan again",
            e.message
        ),
    };
    Err(ctx.refuse("scale", &target, error))
}

/// Sends a Magnum upgrade the operator has seen: guard rails, the plan and its call in the
/// journal, the call, then its outcome. Magnum runs the batches; nothing waits here.
pub async fn magnum_upgrade(
    ctx: &ActionContext,
    magnum: &super::magnum::MagnumDriver,
    plan: &super::magnum::MagnumUpgradePlan,
    confirm: Option<&str>,
) -> ServiceResult<()> {
    let target = plan.target.label();
    ctx.check(
        "upgrade",
        &target,
        &plan.target.cluster,
        Reach::Fleet,
        confirm,
    )?;
    ctx.record(
        &Entry::new(&ctx.actor, "upgrade", &target, Outcome::Started)
            .plan(plan.lines())
            .calls(plan.calls.clone()),
    )?;
    let result = magnum.apply_upgrade(plan).await;
    let outcome = match &result {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed {
            error: e.message.clone(),
        },
    };
    ctx.record(&Entry::new(&ctx.actor, "upgrade", &target, outcome))?;
    result
}

/// Runs an operator command on marked nodes, `batch_size` at a time, stopping after a batch
/// with a failure (lifecycle hooks' runner); every run and its output go to the journal.
pub async fn node_action(
    ctx: &ActionContext,
    target: &super::NodeGroupTarget,
    command: &str,
    nodes: Vec<crate::lifecycle::HookContext>,
    batch_size: usize,
    timeout: std::time::Duration,
) -> ServiceResult<Vec<crate::lifecycle::HookRun>> {
    let label = target.label();
    ctx.check("node_action", &label, &target.cluster, Reach::Nodes, None)?;
    // The journal names nodes by member, as rollouts and `rollout skip` do.
    let names: Vec<String> = nodes
        .iter()
        .filter_map(|n| n.member().map(str::to_string))
        .collect();
    ctx.record(
        &Entry::new(&ctx.actor, "node_action", &label, Outcome::Started).plan(vec![
            format!(
                "run `{command}` on {} node(s), {batch_size} at a time",
                names.len()
            ),
            format!("  nodes: {}", names.join(", ")),
        ]),
    )?;
    let runs = crate::lifecycle::run_node_action(command, nodes, batch_size, timeout).await;
    for (run, name) in runs.iter().zip(names.iter()) {
        let outcome = if run.ok() {
            Outcome::Ok
        } else {
            Outcome::Failed {
                error: run.summary(),
            }
        };
        ctx.record(
            &Entry::new(
                &ctx.actor,
                "node_action",
                &format!("{label}/{name}"),
                outcome,
            )
            .output(run.output.clone()),
        )?;
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::guard::Guard;
    use crate::drivers::{Limits, NodeGroupTarget};
    use crate::journal::{Actor, Journal};
    use crate::lifecycle::HookContext;
    use crate::model::DriverKind;

    #[tokio::test]
    async fn node_action_is_guarded_and_journaled() {
        let dir = tempfile::tempdir().unwrap();
        let target = NodeGroupTarget {
            cluster: "c".into(),
            nodegroup: "w".into(),
            driver: DriverKind::HeatNative,
            stack: None,
            cluster_id: None,
            limits: Limits::default(),
        };
        let nodes: Vec<HookContext> = (0..3)
            .map(|i| HookContext {
                cluster: "c".into(),
                nodegroup: "w".into(),
                node_name: Some(i.to_string()),
                node_index: Some(i),
                ..Default::default()
            })
            .collect();
        let mut ctx = ActionContext {
            actor: Actor {
                cloud: "t".into(),
                user: "u".into(),
            },
            journal: Journal::open(dir.path().join("j.jsonl")),
            guard: Guard::default(),
        };
        let runs = node_action(
            &ctx,
            &target,
            "echo on $CALDERA_NODE_NAME",
            nodes.clone(),
            2,
            std::time::Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(runs.len(), 3);
        let lines = ctx.journal.read_all().unwrap();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[3].target, "c/w/2");
        assert_eq!(lines[3].output.as_deref(), Some("on 2\n"));

        ctx.guard.read_only = true;
        let e = node_action(
            &ctx,
            &target,
            "true",
            nodes,
            1,
            std::time::Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Refused);
        assert!(matches!(
            ctx.journal.read_all().unwrap().last().unwrap().outcome,
            Outcome::Refused { .. }
        ));
    }
}
