//! A rollout seen with no engine of this process driving it: its status read from Heat and
//! the journal (another process, or another machine, may drive it; or nobody), and the plan
//! of a rollout Heat shows under way that this machine's journal does not know.

use super::*;

/// A rollout's status read from Heat and the journal, with no engine running (another
/// process may be driving it). Paused means Heat holds members on hooks and nobody has
/// released the next batch.
pub async fn observe_status(
    heat: &HeatClient,
    journal: &Journal,
    plan: &RolloutPlan,
) -> ServiceResult<RolloutStatus> {
    let mut obs = reader_for(heat, plan).await?;
    obs.attach(plan.image_parameter()).await?;
    // What the members' own stacks say is done, before the events are applied: the truth
    // after an abort (below).
    let on_image: BTreeSet<String> = obs
        .members
        .iter()
        .filter(|(_, t)| t.done)
        .map(|(m, _)| m.clone())
        .collect();
    obs.refresh().await?;
    let (_, memory) = journal_memory(journal, plan)?;
    let mut status = initial_status(plan);
    status.progress.paused = memory.paused.clone();
    // The journal's last word on this rollout says whether it is paused or over.
    let entries = journal
        .rollout_entries(&plan.id)
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    status.state = RolloutState::Running;
    for e in &entries {
        match (e.action.as_str(), &e.outcome) {
            ("rollout.pause", Outcome::Failed { error }) => {
                status.state = RolloutState::Paused {
                    reason: error.clone(),
                }
            }
            ("rollout.pause", _) => {
                status.state = RolloutState::Paused {
                    reason: OPERATOR_PAUSE.into(),
                }
            }
            ("rollout.resume", Outcome::Ok) | ("rollout.reattach", _) => {
                status.state = RolloutState::Running
            }
            ("rollout.aborting", _) => {
                status.state = RolloutState::Aborting {
                    reason: "Heat's cancel under way".into(),
                }
            }
            ("rollout.abort", _) => {
                status.state = RolloutState::Aborted {
                    reason: e.output.clone().unwrap_or_else(|| "aborted".into()),
                }
            }
            ("rollout.finish", Outcome::Ok) => status.state = RolloutState::Completed,
            ("rollout.finish", Outcome::Failed { error }) => {
                status.state = RolloutState::Failed {
                    // Ends journaled before the reason was kept alone carry the word.
                    reason: error.strip_prefix("failed: ").unwrap_or(error).to_string(),
                }
            }
            (ENDED_ELSEWHERE, _) => {
                status.state = RolloutState::EndedElsewhere {
                    reason: e.output.clone().unwrap_or_default(),
                }
            }
            _ => {}
        }
    }
    // The journal says it runs, Heat that it runs another update or none: it ended
    // elsewhere, whatever this journal last said (was: "running", or "paused: nobody
    // releases its members", under one name while Heat ran another rollout).
    if !status.state.is_final() {
        if let Some(reason) = heat_runs_another(
            plan,
            &entries,
            &obs.stack_tags,
            &obs.stack_status,
            obs.stack_updated_at,
        ) {
            status.state = RolloutState::EndedElsewhere { reason };
        }
    }
    if status.state == RolloutState::Running && memory.pause.operator {
        // A reattached engine keeps the operator's pause until a resume.
        status.state = RolloutState::Paused {
            reason: OPERATOR_PAUSE.into(),
        };
    }
    let rolled_back = obs.stack_status.action == "ROLLBACK";
    if matches!(status.state, RolloutState::Aborted { .. })
        && recount_after_cancel(plan, rolled_back)
    {
        // A cancel (and its rollback) updated members behind the events' backs: Heat's
        // rollback completes members that were never released. What is done is what the
        // members' own stacks say, as the engine counted when it ended.
        for (m, t) in obs.members.iter_mut() {
            t.done = on_image.contains(m);
        }
    }
    let settled =
        |m: &String| memory.skipped.contains(m) || obs.members.get(m).is_some_and(|t| t.done);
    let current = plan.batches.iter().position(|b| !b.iter().all(settled));
    fill_nodes(&mut status, &obs, &memory.skipped, current);
    if matches!(
        status.state,
        RolloutState::Aborted { .. } | RolloutState::Aborting { .. }
    ) && obs.stack_status.action == "ROLLBACK"
    {
        let released: BTreeSet<String> = entries
            .iter()
            .filter(|e| e.action == "rollout.release" && e.outcome == Outcome::Ok)
            .map(|e| plan.member_of_label(&e.target))
            .collect();
        mark_rolled_back(&mut status, &released);
    }
    // The end's PATCH that takes the hooks out was sent and has no outcome yet: its update
    // is the rollout's own closing, not a new one.
    let unhook_sent = entries
        .iter()
        .rev()
        .find(|e| e.action == "rollout.unhook")
        .filter(|e| e.outcome == Outcome::Started)
        .map(|e| e.time);
    // ... unless Heat started an update after it was journaled and has ended it: the PATCH
    // landed, and only its outcome is missing (its driver died, or the journal broke,
    // between the two entries). Heat's clock against ours: a skew hides it only while
    // larger than the time from the unhook back to the rollout's own update. Heat says
    // `updated_time` in whole seconds (cut, not rounded): an update it started in the
    // entry's own second reads as that second, so the entry is compared at Heat's
    // resolution (was: `12:00:07` against `12:00:07.6`, never after, and the rollout read
    // "closing" forever on the real Heat).
    let landed = unhook_sent
        .zip(obs.stack_updated_at)
        .is_some_and(|(sent, updated)| updated >= chrono::SubsecRound::trunc_subsecs(sent, 0));
    let unhooking = unhook_sent.is_some() && !landed;
    let mut closing = false;
    if current.is_none() && !status.state.is_final() && obs.stack_status.is_complete() {
        // Heat's update is over with every node done: the rollout is complete once Heat's
        // environment no longer holds its hooks, unless the operator paused it (then it
        // waits for their resume, which completes it).
        status.state = if memory.pause.operator {
            RolloutState::Paused {
                reason: operator_pause_after_heat(plan, &obs.stack_status),
            }
        } else if !unhooking && crate::rollout::unhook::hooks_out(heat, plan).await == Some(true) {
            RolloutState::Completed
        } else {
            closing = true;
            RolloutState::Running
        };
    } else if current.is_none() && !status.state.is_final() && unhooking {
        closing = true;
    }
    if !status.state.is_final() {
        let mut driver = driver_info(journal, plan);
        if let DriverInfo::Nobody {
            released_elsewhere, ..
        } = &mut driver
        {
            *released_elsewhere = elsewhere::released_not_here(plan, &status, &entries);
        }
        if closing {
            let (reason, hooks) = closing_words(plan, &driver, &obs.stack_status);
            status.state = RolloutState::Closing { reason };
            status.hooks_left = Some(hooks);
        }
        status.driver = Some(driver);
    } else {
        status.hooks_left = hooks_left_now(heat, plan).await;
    }
    let now = obs
        .last_event_time
        .map_or(Utc::now(), |t| t.max(Utc::now()));
    status.compute(now);
    Ok(status)
}

/// A plan for a rollout Heat shows under way but this machine's journal does not know
/// (another operator's): the stack's image, every member not yet at it, `options`.
/// `detail` is the target's stack as its caller just read it (read once per look).
pub async fn plan_from_heat(
    heat: &HeatClient,
    target: &crate::drivers::NodeGroupTarget,
    detail: &crate::api::heat::StackDetail,
    options: crate::rollout::RolloutOptions,
) -> ServiceResult<RolloutPlan> {
    let stack = target.stack.clone().ok_or_else(|| {
        ServiceError::new(
            ErrorKind::NotFound,
            format!("{} has no stack", target.label()),
        )
    })?;
    // The options its start chose, as its tag says (batches, gate, timeout): a take-over
    // from Heat alone releases as the start would have.
    let options = crate::rollout::RolloutOptions::from_tags(&detail.tags).unwrap_or(options);
    // One of caldera's own node-group stacks is said by its role tag, which its driver set
    // at create, not by resemblance: an operator's stack may well have an `image` parameter
    // and no `nodes` group (was: a take-over of `twotier/workers` looked for `nodes`, 404).
    let own = detail
        .tags
        .iter()
        .any(|t| t == crate::drivers::heat_native::ROLE_NODEGROUP);
    let own_image = detail.parameters.get("image").filter(|_| own);
    let mut plan = match own_image {
        // One of caldera's own node-group stacks: the `nodes` group, the `image` parameter.
        Some(image) => {
            let nodes = crate::drivers::heat_native::member_nodes(heat, target).await?;
            let names: Vec<String> = nodes.into_iter().map(|n| n.name).collect();
            RolloutPlan::new(
                target.clone(),
                stack,
                image,
                None,
                &names,
                options,
                BTreeMap::new(),
            )
        }
        // A group of an operator's stack (STACK/GROUP): its members, and what the update
        // sets as the start's tags name it (the keys) and Heat shows it (the values); an
        // update whose start said nothing of it is named for what it is.
        None => {
            let group = target.nodegroup.as_str();
            let members = crate::drivers::any_group::group_members(heat, &stack, group).await?;
            let set = crate::rollout::plan::sets_in(&detail.tags, &detail.parameters);
            let named = !set.is_empty();
            let mut plan =
                RolloutPlan::for_group(target.clone(), stack, group, &members, options, set);
            if !named {
                plan.image = "an update started elsewhere".into();
            }
            plan
        }
    };
    // Events before the current update started belong to earlier actions.
    plan.since_time = detail.summary.updated_at;
    // The rollout's own id and where it was started, from the marker its start set: every
    // look from any machine names the same rollout, and a driver taking it over keeps
    // checking that Heat still runs that update.
    if let Some((id, host)) = crate::rollout::plan::marker_in(&detail.tags) {
        plan.id = id;
        plan.started_on = Some(host);
        plan.stack_tags = Some(detail.tags.clone());
        // The groups it holds besides its target, as its start tagged them: their members
        // are released as its start planned (one at a time, on their side of the target).
        if plan.group.is_some() {
            for (path, after) in crate::rollout::plan::held_in(&detail.tags) {
                let members =
                    crate::drivers::any_group::group_members(heat, &plan.stack, &path).await?;
                plan.hold_also(&path, &members, after);
            }
        }
        // What its hook paths held before it: its end puts that back (an operator's own
        // hooks there stay), as the start's machine would.
        for (path, prior) in crate::rollout::plan::befores_in(&detail.tags) {
            if path.is_empty() {
                plan.hooks_before = Some(prior);
            } else if let Some(held) = plan.also.iter_mut().find(|h| h.path == path) {
                held.hooks_before = Some(prior);
            }
        }
    }
    Ok(plan)
}
