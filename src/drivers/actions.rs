//! Applying a plan: guard rails, then the journal (the intent, fsynced), then the API calls,
//! then the outcome. The console and the headless commands both come through here.

use super::guard::{Guard, Reach};
use super::{Driver, ScalePlan};
use crate::journal::{Actor, Entry, Journal, Outcome};
use crate::service::{ErrorKind, ServiceError, ServiceResult};

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
        if let Err(e) = self.guard.check(action, cluster, reach, confirm) {
            let _ = self.journal.append(&Entry::new(
                &self.actor,
                action,
                target,
                Outcome::Refused {
                    error: e.message.clone(),
                },
            ));
            return Err(e);
        }
        Ok(())
    }

    pub fn record(&self, entry: &Entry) -> ServiceResult<()> {
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
