//! A node group's progress from its nodes alone (Heat's member status and hook marks, Nova's
//! image against the group's): what the nodes pane and the dashboard show when no rollout of
//! this machine's is followed, and what a scale shows while Heat creates members.

use super::{Control, Holder, MemberFacts, Progress, UpdateFacts};
use crate::model::{ImagePhase, Node, NodeGroup};
use chrono::{DateTime, Utc};

/// The model of `nodes`, members of `nodegroup`, at `now`.
pub fn of_nodes<'a>(
    nodes: impl Iterator<Item = &'a Node> + Clone,
    nodegroup: &NodeGroup,
    now: DateTime<Utc>,
) -> Progress {
    let facts = member_facts(nodes, nodegroup.image.as_deref());
    Progress::compute(&facts, &update_facts(nodegroup, &facts), now)
}

/// Each node's facts. An upgrade covers every member while any runs another image than the
/// group's; at rest, only a member Heat works on (or holds) moves. Who holds a member is not
/// known from the nodes: Heat (an owner this reading cannot name).
fn member_facts<'a>(
    nodes: impl Iterator<Item = &'a Node> + Clone,
    image: Option<&str>,
) -> Vec<MemberFacts> {
    let upgrading = nodes
        .clone()
        .any(|n| n.image_phase(image) == Some(ImagePhase::Old));
    nodes
        .map(|n| {
            let on_target = n.image_phase(image).map(|p| p == ImagePhase::New);
            MemberFacts {
                name: n.key.member.clone(),
                status: n.status.clone(),
                held_by: n.hook_paused.then_some(Holder::Heat),
                on_target,
                in_update: upgrading || n.status.is_in_progress() || n.hook_paused,
                skipped: false,
                rolled_back: false,
                since: n.since,
                // A member on the target image became new when it entered its status.
                finished_at: n.since.filter(|_| on_target == Some(true)),
            }
        })
        .collect()
}

/// The group's update as Magnum or Heat says: running while its status is in progress or
/// members are still on another image. No plan, so no batches.
fn update_facts(nodegroup: &NodeGroup, members: &[MemberFacts]) -> UpdateFacts {
    let moving = nodegroup.status.is_in_progress() || members.iter().any(|m| m.in_update);
    UpdateFacts {
        stack_status: Some(nodegroup.status.clone()),
        control: if moving {
            Control::Running
        } else {
            Control::None
        },
        batch: None,
        batches: 0,
        started_at: None,
    }
}
