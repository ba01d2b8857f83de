//! A node group's progress from its nodes alone (Heat's member status and hook marks, Nova's
//! image against the group's): what the nodes pane and the dashboard show when no rollout of
//! this machine's is followed, and what a scale shows while Heat creates members.

use super::{Control, Holder, MemberFacts, Progress, UpdateFacts};
use crate::model::{ImagePhase, Node, NodeGroup};
use chrono::{DateTime, Utc};

/// The model of `nodes`, members of `nodegroup`, at `now`. `driven_here`: the ids of the
/// rollouts the reader drives itself (a console's own engines), whose held members are held
/// by this rollout, not by another caldera, wherever they are read (a stack's `:nodes` pane
/// follows no rollout).
pub fn of_nodes<'a>(
    nodes: impl Iterator<Item = &'a Node> + Clone,
    nodegroup: &NodeGroup,
    driven_here: &[String],
    now: DateTime<Utc>,
) -> Progress {
    let facts = member_facts(nodes, nodegroup, driven_here);
    Progress::compute(&facts, &update_facts(nodegroup, &facts), now)
}

/// When the update under way on the group began, as Heat says: a stack's (or a group
/// resource's) `updated_time` is set when an update of it starts, and stays while it runs.
/// `None` when no update runs on the group.
fn update_began(g: &NodeGroup) -> Option<DateTime<Utc>> {
    let updating = g.status.action == "UPDATE" && g.status.is_in_progress();
    g.updated_at.filter(|_| updating)
}

/// Heat updated the member in the update under way (begun at `began`): its resource is
/// `UPDATE_COMPLETE` since then. Heat updates a member only when the group's new definition
/// changes it, and its nested stack then carries the new values: it is on the update's
/// target, which is what tells old from new where the group's image is not known.
fn updated_in_this_update(n: &Node, began: Option<DateTime<Utc>>) -> bool {
    let Some(began) = began else {
        return false;
    };
    n.status.action == "UPDATE" && n.status.is_complete() && n.since.is_some_and(|s| s >= began)
}

/// Whether Heat's update of the group goes over its members: a member runs another image
/// than the group's, or Heat updated one in this update, holds one on a hook or updates
/// one now. Heat updates (and holds on a `pre-update` hook) only members whose definition
/// the update changes; a scale creates members and leaves the others alone, so it does not
/// make the others old.
fn members_updated(n: &Node, image: Option<&str>, began: Option<DateTime<Utc>>) -> bool {
    n.image_phase(image) == Some(ImagePhase::Old)
        || updated_in_this_update(n, began)
        || n.hook_paused
        || (n.status.action == "UPDATE" && n.status.is_in_progress())
}

/// Each node's facts. An upgrade covers every member while Heat's update goes over members
/// ([`members_updated`]); at rest, only a member Heat works on (or holds) moves. Who holds a
/// member: [`holder`].
fn member_facts<'a>(
    nodes: impl Iterator<Item = &'a Node> + Clone,
    nodegroup: &NodeGroup,
    driven_here: &[String],
) -> Vec<MemberFacts> {
    let image = nodegroup.image.as_deref();
    // Where the group's image is known, Nova's image of each member against it says which
    // are on it (a list read before Nova's images claims none); where it is not (a plain
    // stack's group while Heat updates it, any stack's nodes), Heat's word that it updated a
    // member in this update does.
    let began = update_began(nodegroup).filter(|_| image.is_none());
    let upgrading = nodes.clone().any(|n| members_updated(n, image, began));
    nodes
        .map(|n| {
            let by_image = n.image_phase(image).map(|p| p == ImagePhase::New);
            let on_target = by_image.or(updated_in_this_update(n, began).then_some(true));
            MemberFacts {
                name: n.key.member.clone(),
                status: n.status.clone(),
                held_by: n.hook_paused.then(|| holder(n, driven_here)),
                on_target,
                in_update: upgrading || n.status.is_in_progress() || n.hook_paused,
                skipped: false,
                rolled_back: false,
                since: n.since,
                // A member on the target image became new when it entered its status.
                finished_at: n.since.filter(|_| on_target == Some(true)),
                replacing: n.replacing,
            }
        })
        .collect()
}

/// Who holds a held member: the caldera rollout whose marker the stack under update carries
/// (this reader's own when its id is one of `driven_here`, else another caldera's), else
/// Heat (an owner this reading cannot name).
fn holder(n: &Node, driven_here: &[String]) -> Holder {
    match &n.held_by_rollout {
        Some(id) if driven_here.contains(id) => Holder::ThisRollout,
        Some(_) => Holder::OtherCaldera,
        None => Holder::Heat,
    }
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
        paused: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NodeKey, Role, Status};
    use chrono::Duration;

    fn at(mins_ago: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-26T12:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
            - Duration::minutes(mins_ago)
    }

    fn node(member: &str, status: &str, since_mins_ago: i64, held: bool) -> Node {
        Node {
            key: NodeKey {
                nodegroup: "g".into(),
                member: member.into(),
            },
            index: member.parse().ok(),
            name: member.into(),
            zone: None,
            ip: None,
            status: Status::parse(status),
            status_reason: None,
            image: None,
            since: Some(at(since_mins_ago)),
            hook_paused: held,
            hook_inferred: false,
            held_by_rollout: None,
            stack_id: None,
            server_id: None,
            created: None,
            replacing: false,
        }
    }

    fn group(status: &str, updated_mins_ago: i64) -> NodeGroup {
        let mut g = NodeGroup::of_stack("s", "nodes", Role::Other);
        g.status = Status::parse(status);
        g.updated_at = Some(at(updated_mins_ago));
        g
    }

    /// A plain stack's group mid-rollout, its members' images unknown (a stack of test
    /// machines, or servers Nova names by id where the group names its image): Heat updated
    /// member 0 in this update (complete since the update began 10 minutes ago), holds 1 and
    /// 2 on their hook, has not reached 3. Before: `new 0`, members 0 and 3 idle.
    #[test]
    fn members_heat_updated_in_this_update_are_new_without_images() {
        let g = group("UPDATE_IN_PROGRESS", 10);
        let nodes = [
            node("0", "UPDATE_COMPLETE", 4, false),
            node("1", "UPDATE_IN_PROGRESS", 3, true),
            node("2", "UPDATE_IN_PROGRESS", 3, true),
            node("3", "CREATE_COMPLETE", 90, false),
        ];
        let p = of_nodes(nodes.iter(), &g, &[], at(0));
        let c = p.counts;
        assert_eq!(
            (c.new, c.held, c.pending, c.not_in_update),
            (1, 2, 1, 0),
            "{c:?}"
        );
        assert_eq!(c.in_update_total(), 4);
    }

    /// Members held while the stack under update carries another caldera's rollout marker:
    /// held by another caldera, and the state says so. Before: held by Heat.
    #[test]
    fn members_held_under_a_rollouts_marker_are_held_by_another_caldera() {
        let g = group("UPDATE_IN_PROGRESS", 10);
        let mut held = node("1", "UPDATE_IN_PROGRESS", 3, true);
        held.held_by_rollout = Some("r20261126T115000-0a0b0c0d".into());
        let nodes = [node("0", "UPDATE_COMPLETE", 4, false), held];
        let p = of_nodes(nodes.iter(), &g, &[], at(0));
        let phases: Vec<super::super::Phase> = p.members.iter().map(|m| m.phase).collect();
        assert_eq!(
            phases,
            [
                super::super::Phase::New,
                super::super::Phase::Held(Holder::OtherCaldera)
            ]
        );
        assert!(
            p.state
                .label()
                .contains("held on a hook by another caldera"),
            "{}",
            p.state.label()
        );
        // The same members read by the console that drives that rollout: its own.
        let ours = ["r20261126T115000-0a0b0c0d".to_string()];
        let p = of_nodes(nodes.iter(), &g, &ours, at(0));
        assert_eq!(
            p.members[1].phase,
            super::super::Phase::Held(Holder::ThisRollout)
        );
    }

    /// A scale of the group: Heat creates members and leaves the others as they are; none
    /// of them counts as old or new.
    #[test]
    fn a_scale_makes_no_member_old() {
        let g = group("UPDATE_IN_PROGRESS", 2);
        let nodes = [
            node("0", "UPDATE_COMPLETE", 50, false),
            node("1", "CREATE_COMPLETE", 90, false),
            node("2", "CREATE_IN_PROGRESS", 1, false),
        ];
        let c = of_nodes(nodes.iter(), &g, &[], at(0)).counts;
        assert_eq!(
            (c.new, c.pending, c.creating, c.not_in_update),
            (0, 0, 1, 2),
            "{c:?}"
        );
    }
}
