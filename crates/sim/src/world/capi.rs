//! Magnum clusters run by a Cluster API driver (vexxhost `magnum-cluster-api`), as Magnum and
//! Nova show them: no Heat stack, the driver's Cluster API name where Magnum shows
//! `stack_id`/`cluster_id`, every node a Nova server named after its Cluster API Machine.
//!
//! The simulator drives such a cluster's machines with the same engine as any node group,
//! on stacks Heat never shows (`World::heat_hidden`): what an operator can read of it is
//! only what Magnum and Nova say.
//!
//! Names (from the driver's sources; see `crate::ops::capi_nodes` for the rule the client
//! reads them with): the cluster `kube-` + 5 of `[a-z0-9]` (`utils.generate_cluster_api_name`),
//! a worker of node group `ng` `{cluster}-{ng}-{r5}-{r5}-{r5}` (MachineDeployment,
//! MachineSet, Machine), a control-plane node `{cluster}-{r5}-{r5}` (KubeadmControlPlane,
//! Machine).
//!
//! A change of image (Magnum's upgrade) replaces machines one at a time per
//! MachineDeployment and for the control plane (`group::Replacement`), a new MachineSet for
//! the workers (`new_machine_set`); a resize adds machines to the current MachineSet or
//! deletes the ones asked for.

use super::World;
use std::collections::BTreeMap;

/// A cluster's Cluster API facts.
#[derive(Debug, Clone)]
pub struct SimCapi {
    /// The Cluster API cluster name Magnum shows as `stack_id` / `cluster_id`.
    pub name: String,
    /// Per node group name: the owner's name part after the cluster name
    /// (`{ng}-{md}-{ms}` for workers, `{kcp}` for the control plane).
    pub owners: BTreeMap<String, String>,
}

/// 5 of `[a-z0-9]`, Cluster API's random name suffix.
pub fn token(w: &mut World) -> String {
    w.ids.suffix()[..5].to_string()
}

/// A new Cluster API cluster name, `kube-xxxxx`.
pub fn cluster_name(w: &mut World) -> String {
    format!("kube-{}", token(w))
}

/// The server name of a new machine of group `g`, when its cluster runs on Cluster API.
pub fn server_name(w: &mut World, g: usize) -> Option<String> {
    let c = w.groups[g].cluster?;
    w.clusters[c].capi.as_ref()?;
    let ng = w.groups[g].name.clone();
    let master = w.groups[g].role == "master";
    let owner = match w.clusters[c].capi.as_ref().and_then(|k| k.owners.get(&ng)) {
        Some(o) => o.clone(),
        None => {
            let o = if master {
                token(w)
            } else {
                format!("{ng}-{}-{}", token(w), token(w))
            };
            if let Some(k) = w.clusters[c].capi.as_mut() {
                k.owners.insert(ng, o.clone());
            }
            o
        }
    };
    let name = w.clusters[c].capi.as_ref()?.name.clone();
    Some(format!("{name}-{owner}-{}", token(w)))
}

/// A worker group's new MachineSet, as a MachineDeployment's rolling update makes one when
/// its machine template changes (a new image): the machines created from now on are named
/// `{cluster}-{ng}-{md}-{new ms}-{r}`. A control plane (KubeadmControlPlane) has no
/// MachineSet: its new machines keep the `{cluster}-{kcp}-` prefix.
pub fn new_machine_set(w: &mut World, g: usize) {
    if w.groups[g].role == "master" {
        return;
    }
    let Some(c) = w.groups[g].cluster else {
        return;
    };
    let ng = w.groups[g].name.clone();
    let deployment = w.clusters[c]
        .capi
        .as_ref()
        .and_then(|k| k.owners.get(&ng))
        .and_then(|o| o.rsplit_once('-'))
        .map(|(md, _)| md.to_string());
    let Some(deployment) = deployment else {
        return;
    };
    let owner = format!("{deployment}-{}", token(w));
    if let Some(k) = w.clusters[c].capi.as_mut() {
        k.owners.insert(ng, owner);
    }
}

impl World {
    /// Whether stack `ix` belongs to a Cluster API cluster: Heat does not know it.
    pub fn heat_hidden(&self, ix: usize) -> bool {
        use super::StackRole;
        let root = self.root_of(ix);
        let Some(s) = self.stack(root) else {
            return false;
        };
        let cluster = match s.role {
            StackRole::Cluster(c) => Some(c),
            StackRole::NodeGroup(g) | StackRole::Group(g) | StackRole::Member(g, _) => {
                self.groups.get(g).and_then(|g| g.cluster)
            }
        };
        cluster
            .and_then(|c| self.clusters.get(c))
            .is_some_and(|c| c.capi.is_some())
    }
}
