//! Watching an update caldera does not drive (a Magnum upgrade or resize, a Heat update from
//! elsewhere) over a live connection, for [`LiveOperator`](super::live_operator).
//!
//! Each look costs a bounded number of requests, whatever the node group's size: the
//! node-group stack (`resolve_outputs=false`: outputs of a big stack are the slow part), the
//! ResourceGroup's member listing (one call, Heat does not page it) and the group's new
//! events through the console's event follower (`live::follow_step`: newest first, back to
//! what the previous look saw, de-duplicated). The first look reads the retained events
//! (at most `max_events_per_stack`, 1000 by default: five pages); later ones one page.

use super::live::follow_step;
use super::watch_capi;
use super::{ErrorKind, EventCursor, ServiceError, ServiceResult};
use crate::api::cloud::CloudConnection;
use crate::api::heat::{HeatClient, ResourceQuery, StackAction};
use crate::drivers::apply::ActionContext;
use crate::drivers::guard::Reach;
use crate::drivers::heat_native::stack_path;
use crate::drivers::magnum;
use crate::drivers::NodeGroupTarget;
use crate::journal::{ApiCall, Entry, Outcome};
use crate::model::DriverKind;
use crate::rollout::observed::{
    batch_size_parameter, image_parameter, observed_status, MemberFact, ObservedUpdate, Timeline,
    UpdateFacts, UpdateKind, UpdateSource,
};
use crate::rollout::observed_nova::Sightings;
use crate::rollout::RolloutStatus;
use chrono::Utc;
use std::collections::HashMap;
use std::sync::Mutex;

const GROUP_TYPE: &str = "OS::Heat::ResourceGroup";

/// What earlier looks learnt: per group stack id, where the event follower is and the
/// member timings folded so far; per Cluster API node group (`cluster/nodegroup`), the
/// servers Nova listed.
#[derive(Default)]
pub struct Watches {
    heat: Mutex<HashMap<String, (EventCursor, Timeline)>>,
    nova: Mutex<HashMap<String, Sightings>>,
}

/// Takes `key`'s entry out of `map` (a poisoned lock still holds good data: entries are
/// replaced whole).
fn take_from<T: Default>(map: &Mutex<HashMap<String, T>>, key: &str) -> T {
    match map.lock() {
        Ok(mut m) => m.remove(key).unwrap_or_default(),
        Err(p) => p.into_inner().remove(key).unwrap_or_default(),
    }
}

fn put_into<T>(map: &Mutex<HashMap<String, T>>, key: String, value: T) {
    match map.lock() {
        Ok(mut m) => m.insert(key, value),
        Err(p) => p.into_inner().insert(key, value),
    };
}

impl Watches {
    fn take(&self, group_id: &str) -> (EventCursor, Timeline) {
        take_from(&self.heat, group_id)
    }

    fn put(&self, group_id: String, watch: (EventCursor, Timeline)) {
        put_into(&self.heat, group_id, watch)
    }
}

/// The update under way on `target`, from Heat, or from Magnum for a cluster a Cluster API
/// driver runs (no stack: `observed_nova`).
pub async fn find_any(
    conn: &CloudConnection,
    target: &NodeGroupTarget,
) -> ServiceResult<Option<ObservedUpdate>> {
    match (&target.stack, target.driver, &conn.magnum) {
        (None, DriverKind::Magnum, Some(magnum)) => watch_capi::find_update(magnum, target).await,
        _ => find_update(&conn.heat, target).await,
    }
}

/// One look at an observed update, where its source keeps it.
pub async fn observe_any(
    conn: &CloudConnection,
    watches: &Watches,
    update: &ObservedUpdate,
) -> ServiceResult<RolloutStatus> {
    let UpdateSource::Nova { .. } = &update.source else {
        return observe_update(&conn.heat, watches, update).await;
    };
    let magnum = conn.magnum.as_ref().ok_or_else(|| {
        ServiceError::new(ErrorKind::Unsupported, "this cloud has no Magnum endpoint")
    })?;
    let key = update.target.label();
    let mut seen = take_from(&watches.nova, &key);
    let status = watch_capi::observe_update(magnum, conn.nova.as_ref(), &mut seen, update).await;
    put_into(&watches.nova, key, seen);
    status
}

/// The update under way on `target`'s stack, when it is being updated (or its last update
/// failed). `None` when the stack is settled or Heat is not reachable for it (a Magnum
/// node group whose `stack_id` is gone or which Magnum runs without Heat).
pub async fn find_update(
    heat: &HeatClient,
    target: &NodeGroupTarget,
) -> ServiceResult<Option<ObservedUpdate>> {
    let Some(stack) = target.stack.clone() else {
        return Ok(None);
    };
    let detail = heat.get_stack(&stack, false).await?;
    let status = &detail.summary.status;
    if crate::progress::at_rest(status) {
        return Ok(None);
    }
    // The members live in the ResourceGroup's nested stack, as the drivers list them; a
    // Magnum cluster stack holds two (its default masters and workers), told apart by the
    // node-group names Magnum gave the stack.
    let top: Vec<crate::model::StackResource> = heat
        .list_resources(&stack, &ResourceQuery::default())
        .await?
        .into_iter()
        .map(|r| r.resource)
        .collect();
    let role = magnum::role_in_stack(&detail.parameters, &target.nodegroup)
        .unwrap_or(crate::model::Role::Worker);
    let group = magnum::pick_group(&top, role, &target.nodegroup)?
        .filter(|r| r.resource_type == GROUP_TYPE)
        .and_then(|r| r.nested.clone())
        .ok_or_else(|| {
            ServiceError::new(
                ErrorKind::NotFound,
                format!(
                    "{} is being updated, but its stack {} has no member group to watch",
                    target.label(),
                    stack.name
                ),
            )
        })?;
    let kind = match target.driver {
        DriverKind::Magnum => UpdateKind::Magnum,
        DriverKind::HeatNative => UpdateKind::Heat,
    };
    Ok(Some(ObservedUpdate::heat(
        target.clone(),
        kind,
        stack,
        group,
    )))
}

/// One look at an observed update: three requests plus any further event pages.
pub async fn observe_update(
    heat: &HeatClient,
    watches: &Watches,
    update: &ObservedUpdate,
) -> ServiceResult<RolloutStatus> {
    let Some((stack, group)) = update.stacks() else {
        return Err(ServiceError::new(
            ErrorKind::Unsupported,
            "this update is not Heat's: observe_any reads it",
        ));
    };
    let all = ResourceQuery::default();
    let (detail, members) = futures::join!(
        heat.get_stack(stack, false),
        heat.list_resources(group, &all)
    );
    let (detail, members) = (detail?, members?);
    let (mut cursor, mut timeline) = watches.take(&group.id);
    let events = follow_step(heat, group, 0, &mut cursor).await;
    let events = match events {
        Ok(events) => events,
        Err(e) => {
            // Keep what was learnt: the next look continues from there.
            watches.put(group.id.clone(), (cursor, timeline));
            return Err(e);
        }
    };
    timeline.ingest(&group.name, &events);
    let facts = UpdateFacts {
        id: update.id(),
        target: update.target.label(),
        image: image_parameter(&detail.parameters)
            .or_else(|| magnum::image_in_stack(&detail.parameters, &update.target.nodegroup))
            .unwrap_or_else(|| "?".into()),
        stack_status: detail.summary.status.clone(),
        stack_reason: detail.summary.status_reason.clone().unwrap_or_default(),
        started_at: detail.summary.updated_at,
        batch_size: batch_size_parameter(&detail.parameters),
        members: members
            .into_iter()
            .map(|r| MemberFact {
                name: r.resource.name,
                status: r.resource.status,
                reason: r.resource.status_reason,
                updated_at: r.resource.updated_at,
            })
            .collect(),
    };
    let status = observed_status(&facts, &timeline, Utc::now());
    watches.put(group.id.clone(), (cursor, timeline));
    Ok(status)
}

/// Heat's cancel of a foreign Heat update (`cancel_update` rolls back,
/// `cancel_without_rollback` stops where it is), after the guard rails, journaled.
pub async fn cancel_update(
    heat: &HeatClient,
    ctx: &ActionContext,
    update: &ObservedUpdate,
    rollback: bool,
    confirm: Option<&str>,
) -> ServiceResult<()> {
    if let Some(why) = update.cancel_refusal() {
        return Err(ServiceError::new(ErrorKind::Unsupported, why));
    }
    let Some((stack, _)) = update.stacks() else {
        return Err(ServiceError::new(
            ErrorKind::Unsupported,
            "no Heat stack to cancel",
        ));
    };
    let t = &update.target;
    let what = "update.cancel";
    // Stopping a node group's update reaches all its nodes (a rollback touches every one).
    ctx.check(what, &t.label(), &t.cluster, Reach::Fleet, confirm)?;
    let action = if rollback {
        StackAction::CancelUpdate
    } else {
        StackAction::CancelWithoutRollback
    };
    // The journal holds the call before Heat sees it (a failed write stops it here), then
    // its outcome.
    ctx.record(
        &Entry::new(&ctx.actor, what, &t.label(), Outcome::Started).calls(vec![ApiCall::new(
            "POST",
            format!("{}/actions", stack_path(stack)),
            format!("{{\"{}\":null}}", action.key()),
        )]),
    )?;
    let result = heat.action(stack, action).await;
    let outcome = match &result {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed {
            error: e.to_string(),
        },
    };
    ctx.record(&Entry::new(&ctx.actor, what, &t.label(), outcome))?;
    result.map_err(ServiceError::from)
}
