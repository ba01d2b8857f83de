//! `rollout status --format json`: a rollout's status as a script reads it, its top-level
//! fields as its progress model says them, as the text does. `state` is the model's state
//! (`paused: nobody releases its members` where no driver runs) and the journal's word is
//! beside it as `journal_state`; `current_batch` is the model's batch (1-based, the one
//! `progress.batch` gives), and each node's `batch` is 1-based too, as its text line's.
//! What the rollout sets is `set` (its plan's values), and `image` is there only where it is
//! caldera's own node group's image. With groups held beside the target, `groups` gives
//! each group's counts, as the text's `kube_masters: new …` lines do. A summary has no
//! per-node entries (`nodes` empty, no `progress.members`).

use super::plan::RolloutPlan;
use super::progress::{DriverInfo, NodeProgress, RolloutState, RolloutStatus};
use crate::progress::{Counts, Progress, State};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;

/// The JSON of one rollout's status (see the module's words).
#[derive(Debug, Serialize)]
pub struct StatusJson<'a> {
    id: &'a str,
    target: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<&'a str>,
    state: &'a State,
    journal_state: &'a RolloutState,
    nodes: Vec<NodeProgress>,
    current_batch: Option<usize>,
    batches: usize,
    stack_status: &'a str,
    done: usize,
    failed: usize,
    skipped: usize,
    remaining: usize,
    throughput_per_min: Option<f64>,
    p50_ms: Option<i64>,
    p95_ms: Option<i64>,
    eta_secs: Option<f64>,
    stragglers: usize,
    updated_at: DateTime<Utc>,
    driver: Option<&'a DriverInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hooks_left: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    unhealthy: &'a [String],
    progress: Progress,
    #[serde(skip_serializing_if = "Option::is_none")]
    set: Option<BTreeMap<&'a str, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    groups: Option<Vec<GroupCounts<'a>>>,
}

/// One group's counts in a rollout holding groups beside its target.
#[derive(Debug, Serialize)]
struct GroupCounts<'a> {
    /// A held group by its path, the target by its own (`STACK/GROUP` without the stack).
    group: &'a str,
    target: bool,
    counts: Counts,
}

impl<'a> StatusJson<'a> {
    /// `status` as JSON, with what `plan` (when found) sets; `summary`: no per-node entries.
    pub fn new(
        status: &'a RolloutStatus,
        plan: Option<&'a RolloutPlan>,
        summary: bool,
    ) -> StatusJson<'a> {
        let nodes = match summary {
            true => Vec::new(),
            false => status
                .nodes
                .iter()
                .map(|n| NodeProgress {
                    batch: n.batch + 1,
                    ..n.clone()
                })
                .collect(),
        };
        let mut progress = (*status.progress).clone();
        if summary {
            progress.members.clear();
        }
        let image = match plan {
            Some(plan) => plan.image_parameter(),
            None => Some(status.image.as_str()),
        };
        let set = plan.filter(|p| !p.extra_parameters.is_empty()).map(|p| {
            p.extra_parameters
                .iter()
                .map(|(k, v)| (k.as_str(), v.display_text()))
                .collect()
        });
        StatusJson {
            id: &status.id,
            target: &status.target,
            image,
            state: &status.progress.state,
            journal_state: &status.state,
            nodes,
            current_batch: status.progress.batch.map(|(b, _)| b),
            batches: status.batches,
            stack_status: &status.stack_status,
            done: status.done,
            failed: status.failed,
            skipped: status.skipped,
            remaining: status.remaining,
            throughput_per_min: status.throughput_per_min,
            p50_ms: status.p50_ms,
            p95_ms: status.p95_ms,
            eta_secs: status.eta_secs,
            stragglers: status.stragglers,
            updated_at: status.updated_at,
            driver: status.driver.as_ref(),
            hooks_left: status.hooks_left.as_deref(),
            unhealthy: &status.unhealthy,
            progress,
            set,
            groups: group_counts(status),
        }
    }
}

/// The counts `RolloutStatus::group_lines` prints, named as it names them; none for a
/// rollout of one group.
fn group_counts(status: &RolloutStatus) -> Option<Vec<GroupCounts<'_>>> {
    let groups = status.progress.counts_by_group();
    if groups.len() <= 1 {
        return None;
    }
    let own = status
        .target
        .split_once('/')
        .map_or(status.target.as_str(), |(_, path)| path);
    Some(
        groups
            .into_iter()
            .map(|(group, counts)| GroupCounts {
                group: group.unwrap_or(own),
                target: group.is_none(),
                counts,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> RolloutPlan {
        crate::drivers::rollout_plan::sample_plan("img-2", &["0", "1"])
    }

    #[test]
    fn nodes_count_batches_from_one_and_a_summary_lists_none() {
        let plan = plan();
        let status = super::super::engine::initial_status(&plan);
        let full = serde_json::to_value(StatusJson::new(&status, Some(&plan), false)).unwrap();
        let batches: Vec<u64> = full["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["batch"].as_u64().unwrap())
            .collect();
        let expected: Vec<u64> = status.nodes.iter().map(|n| n.batch as u64 + 1).collect();
        assert_eq!(batches, expected);
        assert_eq!(full["image"], "img-2", "caldera's own group: its image");
        assert!(full.get("set").is_none() && full.get("groups").is_none());
        assert_eq!(
            full["journal_state"],
            serde_json::to_value(&status.state).unwrap()
        );
        let summary = serde_json::to_value(StatusJson::new(&status, Some(&plan), true)).unwrap();
        assert_eq!(summary["nodes"], serde_json::json!([]));
        assert!(summary["progress"].get("members").is_none());
    }
}
