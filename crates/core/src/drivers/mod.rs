//! Drivers: how a cluster's node groups are created, scaled, upgraded and deleted.
//!
//! One trait, [`Driver`], two implementations:
//! - [`heat_native::HeatNativeDriver`]: clusters made of caldera's own Heat templates
//!   (`templates/cluster/`): a cluster stack plus one stack per node group whose
//!   `OS::Heat::ResourceGroup` members are node stacks. Found by stack tags (see
//!   [`heat_native`]). Upgrades are node-by-node rollouts driven by `crate::rollout`.
//! - [`magnum::MagnumDriver`]: Magnum clusters, through Magnum's resize and upgrade actions.
//!
//! Every change is first a *plan* (the members added/removed or updated and the exact API
//! calls), shown to the operator; `crate::drivers::apply` applies a plan behind the guard
//! rails and writes it to the journal.

pub mod any_group;
pub mod apply;
pub mod guard;
pub mod heat_native;
pub mod layout;
pub mod leftover_hooks;
pub mod magnum;
pub mod manual;
pub mod resolve;
pub mod rollout_plan;

use crate::journal::ApiCall;
use crate::model::{DriverKind, Node, StackRef};
use crate::report::{ErrorKind, ServiceError, ServiceResult};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// A node group an action is aimed at, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeGroupTarget {
    pub cluster: String,
    pub nodegroup: String,
    pub driver: DriverKind,
    /// Heat-native: the node group's stack. Magnum: the node group's stack when Magnum says.
    pub stack: Option<StackRef>,
    /// Magnum: the cluster's uuid.
    pub cluster_id: Option<String>,
    pub limits: Limits,
}

impl NodeGroupTarget {
    /// `cluster/nodegroup`, the form commands take and the journal records.
    pub fn label(&self) -> String {
        format!("{}/{}", self.cluster, self.nodegroup)
    }
}

/// How many members a node group may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Limits {
    pub min: u32,
    pub max: Option<u32>,
}

impl Limits {
    pub fn check(&self, count: u32) -> ServiceResult<()> {
        if count < self.min {
            return Err(refused(format!(
                "{count} nodes is below the node group's minimum of {}",
                self.min
            )));
        }
        if let Some(max) = self.max {
            if count > max {
                return Err(refused(format!(
                    "{count} nodes is above the node group's maximum of {max}"
                )));
            }
        }
        Ok(())
    }
}

/// What the operator asks of a scale.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleRequest {
    /// The new member count; `None` = current count minus the removed members.
    pub count: Option<u32>,
    /// Members (names such as `"3"`) to remove first.
    pub remove: Vec<String>,
}

/// A scale, spelled out before anything happens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScalePlan {
    pub target: NodeGroupTarget,
    pub from: u32,
    pub to: u32,
    /// Members after the scale, in index order.
    pub members_after: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Heat-native: every name in the group's removal list after this scale (names removed
    /// once are never reused by Heat).
    pub removal_list: Vec<String>,
    pub calls: Vec<ApiCall>,
    /// A group of an operator's own stack (the console's plain stack, `caldera scale
    /// STACK/GROUP`): planned by [`any_group::plan_group_scale`], shown as that plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_group: Option<StackGroupScale>,
}

/// What a scale of a group of any stack was planned as: its lines (Heat's preview, what
/// else the change reaches) and the parameters its one PATCH sets, which the apply checks
/// again against the stack as it is then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackGroupScale {
    pub lines: Vec<String>,
    pub set: crate::parameter_value::ParameterValues,
}

impl ScalePlan {
    pub fn lines(&self) -> Vec<String> {
        if let Some(g) = &self.stack_group {
            return g.lines.clone();
        }
        let mut out = vec![format!(
            "scale {} ({:?}) from {} to {} nodes",
            self.target.label(),
            self.target.driver,
            self.from,
            self.to
        )];
        // The names known before the scale may be fewer than the count changes: Magnum
        // picks the members it adds, and those it removes beyond `nodes_to_remove`. The
        // counts are still the operator's, and say so.
        let net = i64::from(self.to) - i64::from(self.from);
        let named = self.added.len() as i64 - self.removed.len() as i64;
        let by = match self.target.driver {
            crate::model::DriverKind::Magnum => "Magnum",
            // A ResourceGroup's new members and removal_policies' choices.
            crate::model::DriverKind::HeatNative => "Heat",
        };
        let (more_added, more_removed) = if net >= named {
            ((net - named) as usize, 0)
        } else {
            (0, (named - net) as usize)
        };
        out.push(format!("  add    {}", side(&self.added, more_added, by)));
        out.push(format!(
            "  remove {}",
            side(&self.removed, more_removed, by)
        ));
        out.push("  API calls:".into());
        out.extend(self.calls.iter().map(|c| format!("    {c}")));
        out
    }
}

/// `N: names`, with the members only `by` will name counted in: `1: picked by Magnum`,
/// `2: 3, and 1 picked by Magnum`.
fn side(names: &[String], more: usize, by: &str) -> String {
    let total = names.len() + more;
    match (names.is_empty(), more) {
        (_, 0) => format!("{total}: {}", list_or_none(names)),
        (true, _) => format!("{total}: picked by {by}"),
        (false, n) => format!("{total}: {}, and {n} picked by {by}", names.join(", ")),
    }
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

/// A new node group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeGroupSpec {
    pub cluster: String,
    pub nodegroup: String,
    pub count: u32,
    pub image: String,
    pub limits: Limits,
    /// Heat-native: seconds each test machine takes per action (tests only; 0 on Nova).
    pub action_wait_secs: u32,
}

/// What an upgrade asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpgradeTarget {
    /// Heat-native: the new image of every member.
    Image(String),
    /// Magnum: the cluster template to move to.
    ClusterTemplate(String),
}

/// An upgrade, spelled out: a node-by-node rollout on Heat hooks (Heat-native) or one
/// Magnum upgrade call whose batches Magnum runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpgradePlan {
    Rollout(Box<rollout_plan::RolloutPlan>),
    Magnum(magnum::MagnumUpgradePlan),
}

impl UpgradePlan {
    pub fn lines(&self) -> Vec<String> {
        match self {
            UpgradePlan::Rollout(p) => p.lines(),
            UpgradePlan::Magnum(p) => p.lines(),
        }
    }
}

/// Node ordering by member index (`"2"` before `"10"`), names that are not numbers last.
pub fn member_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        _ => a.cmp(b),
    }
}

pub(crate) fn refused(msg: impl Into<String>) -> ServiceError {
    ServiceError::new(ErrorKind::Refused, msg)
}

pub(crate) fn unsupported(msg: impl Into<String>) -> ServiceError {
    ServiceError::new(ErrorKind::Unsupported, msg)
}

/// The operations every driver offers. Reads may be called freely; `apply_*` change the cloud
/// and are only called by `actions` after the guard rails passed and the journal has the plan.
pub trait Driver: Send + Sync {
    fn kind(&self) -> DriverKind;

    /// Finds `nodegroup` of `cluster`.
    fn find_nodegroup<'a>(
        &'a self,
        cluster: &'a str,
        nodegroup: &'a str,
    ) -> BoxFuture<'a, ServiceResult<NodeGroupTarget>>;

    fn list_nodegroups<'a>(
        &'a self,
        cluster: &'a str,
    ) -> BoxFuture<'a, ServiceResult<Vec<NodeGroupTarget>>>;

    /// The members of a node group, in index order.
    fn list_nodes<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
    ) -> BoxFuture<'a, ServiceResult<Vec<Node>>>;

    /// Reads the current members and works out exactly what `request` would do.
    fn plan_scale<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
        request: &'a ScaleRequest,
    ) -> BoxFuture<'a, ServiceResult<ScalePlan>>;

    fn apply_scale<'a>(&'a self, plan: &'a ScalePlan) -> BoxFuture<'a, ServiceResult<()>>;

    fn create_nodegroup<'a>(
        &'a self,
        spec: &'a NodeGroupSpec,
    ) -> BoxFuture<'a, ServiceResult<NodeGroupTarget>>;

    fn delete_nodegroup<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
    ) -> BoxFuture<'a, ServiceResult<()>>;

    /// Plans an upgrade of the node group. Heat-native: a rollout (`crate::rollout::engine`
    /// runs it); Magnum: the upgrade call (`MagnumDriver::apply_upgrade` sends it). A target
    /// the driver cannot upgrade to (an image for Magnum, a template for Heat-native) is an
    /// Unsupported error that says what it takes instead.
    fn plan_upgrade<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
        to: &'a UpgradeTarget,
        options: &'a crate::drivers::rollout_plan::RolloutOptions,
    ) -> BoxFuture<'a, ServiceResult<UpgradePlan>>;
}
