use super::Status;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Identifies a node across refreshes: the node group and the member's resource name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeKey {
    pub nodegroup: String,
    pub member: String,
}

/// The name of member `name` of the group at `path` where members of several groups are
/// told apart: `kube_masters/0` (a group a rollout holds beside its target; a stream of
/// addresses over several groups). Members of the one group in view go by their bare names
/// (a member name never holds a `/`: Heat names a group's members by index or by a
/// generated id).
pub fn member_key(path: &str, name: &str) -> String {
    format!("{path}/{name}")
}

/// Which group a member key ([`member_key`]) is in and its name there: `(Some("kube_masters"),
/// "0")` for a held group's member, `(None, "3")` for the target's.
pub fn split_member_key(key: &str) -> (Option<&str>, &str) {
    match key.rsplit_once('/') {
        Some((path, name)) => (Some(path), name),
        None => (None, key),
    }
}

/// One node (one ResourceGroup member) as the console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub key: NodeKey,
    /// The member index in the ResourceGroup (`0`, `1`, ...), when the name is numeric.
    pub index: Option<u32>,
    /// A display name (server name when known, else the member name).
    pub name: String,
    pub zone: Option<String>,
    pub ip: Option<String>,
    pub status: Status,
    pub status_reason: Option<String>,
    pub image: Option<String>,
    /// When the node entered its current status.
    pub since: Option<DateTime<Utc>>,
    /// Paused on a Heat hook (e.g. `pre-update`) and waiting to be released.
    pub hook_paused: bool,
    /// The hold is inferred, not seen: Heat purged the member's pause event, and the
    /// stack's environment and times say it is held (see `ops::hooks`).
    #[serde(default)]
    pub hook_inferred: bool,
    /// The caldera rollout whose hooks hold it (its id), when it is held while the stack
    /// under update carries a rollout's marker tag (`caldera-rollout=<id>@<host>`): that
    /// rollout's driver releases it, not Heat nor an operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by_rollout: Option<String>,
    /// The member's nested stack id, when it has one.
    pub stack_id: Option<String>,
    /// The Nova server's id when the listing that found the node knew it (Cluster API nodes
    /// come from Nova's own listing); a Heat member's server is looked up when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// When the node's server was created (Nova), for how long builds take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<DateTime<Utc>>,
    /// Heat is replacing the member (its update replaces the resource): status, reason and
    /// server are its replacement's, which Heat creates (`CREATE_*`) as the member's update.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replacing: bool,
}

/// One member's addresses, as the IP fetcher streams them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAddress {
    /// The member's resource name in its group (`"17"`), or a server name.
    pub member: String,
    pub index: Option<u32>,
    pub addresses: Vec<String>,
    /// The member's server name, when the source that found the address knew it (Nova).
    /// Absent from serialized output when unknown, so older readers see the same shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Network name -> its addresses, where the source names networks (a server's
    /// `networks`, Nova's `addresses`); absent from serialized output when none is known.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub networks: std::collections::BTreeMap<String, Vec<String>>,
    /// The member output each address was read from (`kube_minion_ip`,
    /// `kube_minion_external_ip`, `internal_api_ip`), where a node's addresses come from
    /// several: Heat's own name for what each address is. Absent when not given.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub outputs: std::collections::BTreeMap<String, Vec<String>>,
    /// Addresses the sources gave beyond the bound kept per node, left out (0: none; an
    /// address two sources both gave beyond it is counted twice). Absent when none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_out: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Where a node stands in an image rollout, from the image its server runs (Nova's) against
/// the image its node group is being taken to (the group's stack or Magnum's node group).
/// Counting by status alone calls every member Heat has not reached yet "complete": during
/// a rolling update those still run the old image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImagePhase {
    /// Still on another image than the target (held on a hook, waiting, or failed).
    Old,
    /// Being worked on by Heat right now (in progress, not held on a hook).
    Updating,
    /// On the target image and not being worked on.
    New,
}

/// A UUID as Nova and Glance print image ids.
pub fn looks_like_uuid(s: &str) -> bool {
    s.len() == 36
        && s.chars().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

impl Node {
    /// This node's phase against `target`, when both images are known and comparable.
    /// Nova names a server's image by id; a group given its image by name (Heat accepts
    /// either) cannot be compared without Glance, and then nothing is claimed.
    pub fn image_phase(&self, target: Option<&str>) -> Option<ImagePhase> {
        let (image, target) = (self.image.as_deref()?, target.filter(|t| !t.is_empty())?);
        if looks_like_uuid(image) != looks_like_uuid(target) {
            return None;
        }
        Some(if self.status.is_in_progress() && !self.hook_paused {
            ImagePhase::Updating
        } else if image == target {
            ImagePhase::New
        } else {
            ImagePhase::Old
        })
    }
}

#[cfg(test)]
mod image_tests {
    use super::*;
    use crate::model::Status;

    fn node(status: &str, image: Option<&str>, paused: bool) -> Node {
        Node {
            key: NodeKey {
                nodegroup: "g".into(),
                member: "0".into(),
            },
            index: Some(0),
            name: "0".into(),
            zone: None,
            ip: None,
            status: Status::parse(status),
            status_reason: None,
            image: image.map(str::to_string),
            since: None,
            hook_paused: paused,
            hook_inferred: false,
            held_by_rollout: None,
            stack_id: None,
            server_id: None,
            created: None,
            replacing: false,
        }
    }

    /// Each node's phase against the target image: a member held on a hook or not reached
    /// yet is old (not complete), one Heat works on updating, one on the target new, one with
    /// no image known says nothing. (The counts are the progress model's, in the core.)
    #[test]
    fn members_not_reached_yet_are_old_not_complete() {
        let target = Some("img-v2");
        let cases = [
            (
                node("CREATE_COMPLETE", Some("img-v1"), false),
                Some(ImagePhase::Old),
            ),
            (
                node("CREATE_COMPLETE", Some("img-v1"), true),
                Some(ImagePhase::Old),
            ),
            (
                node("UPDATE_IN_PROGRESS", Some("img-v1"), false),
                Some(ImagePhase::Updating),
            ),
            (
                node("UPDATE_FAILED", Some("img-v1"), false),
                Some(ImagePhase::Old),
            ),
            (
                node("UPDATE_COMPLETE", Some("img-v2"), false),
                Some(ImagePhase::New),
            ),
            (node("UPDATE_COMPLETE", None, false), None),
        ];
        for (n, want) in cases {
            assert_eq!(n.image_phase(target), want, "{n:?}");
        }
    }

    #[test]
    fn an_image_name_is_not_compared_with_nova_ids() {
        let id = "4f1e0c52-7a0b-4d4e-9a57-0c1f3d5e6a7b";
        let n = node("UPDATE_COMPLETE", Some(id), false);
        assert_eq!(n.image_phase(Some("fedora-coreos-40")), None);
        assert_eq!(n.image_phase(Some(id)), Some(ImagePhase::New));
        assert_eq!(n.image_phase(None), None);
    }
}
