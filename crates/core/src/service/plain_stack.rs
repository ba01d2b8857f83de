//! Any Heat stack, one caldera did not write, seen by the console as a cluster of node groups:
//! the same discovery as `caldera nodegroups STACK` and `caldera ips STACK`
//! (`crate::ops::discover`), so the node-groups pane, the dashboard and the scale form show
//! what the CLI says. The console makes such a cluster of the stack in context
//! (`Cluster.id` = `Cluster.stack_id` = the stack's id); a node group row is one scaling
//! group whose members are nodes, named by its resource path, its id and `stack_id` the
//! group's nested stack (whose resources are the members).

use super::{ServiceError, ServiceResult};
use crate::api::heat::HeatClient;
use crate::drivers::any_group;
use crate::model::{Cluster, DriverKind, NodeGroup, Role, StackRef};
use crate::ops::discover::{discover_groups, GroupShape};
use crate::ops::ips::group_label;
use crate::ops::node_tree::is_server_type;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Stack `id` (named `name`) seen as a cluster: not a cluster of any driver, so no action
/// reaches it by name; its figures come from [`cluster_row`].
pub fn cluster_of(id: &str, name: &str) -> Cluster {
    let unknown = crate::model::Status::parse("");
    Cluster {
        id: id.to_string(),
        name: name.to_string(),
        driver: DriverKind::HeatNative,
        status: unknown,
        status_reason: None,
        health: crate::model::Health::Unknown,
        health_reason: None,
        master_count: 0,
        node_count: 0,
        nodegroup_count: None,
        template_id: None,
        coe_version: None,
        api_address: None,
        stack_id: Some(id.to_string()),
        created_at: None,
        updated_at: None,
        capi: None,
    }
}

/// Whether the console's cluster is a plain stack seen as one ([`cluster_of`]).
pub fn is_plain_stack(cluster: &Cluster) -> bool {
    cluster.driver == DriverKind::HeatNative && cluster.stack_id.as_deref() == Some(&cluster.id)
}

async fn stack_of(heat: &HeatClient, cluster: &Cluster) -> ServiceResult<StackRef> {
    heat.resolve(&cluster.id).await.map_err(ServiceError::from)
}

/// The stack as the dashboard's cluster line: its status, and nodes counted over its node
/// groups.
pub async fn cluster_row(heat: &HeatClient, cluster: &Cluster) -> ServiceResult<Cluster> {
    let stack = stack_of(heat, cluster).await?;
    let (detail, groups) = futures::join!(heat.get_stack(&stack, false), async {
        discover_groups(heat, &stack).await
    });
    let (detail, groups) = (detail?, groups?);
    let mut row = cluster.clone();
    row.name = stack.name.clone();
    row.status = detail.summary.status.clone();
    row.status_reason = detail.summary.status_reason.clone();
    row.created_at = detail.summary.created_at;
    row.updated_at = detail.summary.updated_at;
    row.node_count =
        u32::try_from(groups.iter().map(|g| g.members.len()).sum::<usize>()).unwrap_or(u32::MAX);
    row.nodegroup_count = Some(u32::try_from(groups.len()).unwrap_or(u32::MAX));
    Ok(row)
}

fn row(cluster: &Cluster, g: &GroupShape, facts: MemberFacts) -> NodeGroup {
    let group_stack = g.stack.as_ref().map(|s| s.id.clone());
    let mut row = NodeGroup::of_stack(
        group_stack.as_deref().unwrap_or(&g.owner.id),
        &group_label(g),
        Role::Other,
    );
    row.cluster_id = cluster.id.clone();
    row.stack_id = group_stack;
    row.image = facts.image;
    row.flavor = facts.flavor;
    row.node_count = u32::try_from(g.members.len()).unwrap_or(u32::MAX);
    row.status = g.status.clone();
    row.updated_at = g.updated_at;
    row
}

/// What a node group's members are made of, as Heat resolved it for their servers: the
/// IMAGE and FLAVOR columns of its row. `None` where no single value can be said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberFacts {
    pub image: Option<String>,
    pub flavor: Option<String>,
}

/// The driver of plain stacks for a long-lived reader (the console's service): the same
/// reads as the free functions, with each group's [`MemberFacts`] kept between refreshes.
/// The walk behind them costs a request per level of the members' nested stacks, for every
/// group, on every refresh; the facts change only when Heat changes the group, which moves
/// what a group's stamp holds, so a refresh of an unchanged stack walks nothing.
#[derive(Clone)]
pub struct PlainStacks {
    heat: HeatClient,
    facts: Arc<Mutex<FactsCache>>,
}

impl PlainStacks {
    pub fn new(heat: HeatClient) -> Self {
        PlainStacks {
            heat,
            facts: Arc::new(Mutex::new(FactsCache::default())),
        }
    }

    /// The stack's node groups as rows, each with its members' image and flavor.
    pub async fn nodegroups(&self, cluster: &Cluster) -> ServiceResult<Vec<NodeGroup>> {
        let stack = stack_of(&self.heat, cluster).await?;
        let groups = discover_groups(&self.heat, &stack).await?;
        let facts = futures::future::join_all(groups.iter().map(|g| self.member_facts(g))).await;
        Ok(groups
            .iter()
            .zip(facts)
            .map(|(g, facts)| row(cluster, g, facts))
            .collect())
    }

    /// Each node group's members' image (see [`MemberFacts`]), by group path.
    pub async fn group_images(&self, stack: &StackRef) -> HashMap<String, String> {
        let groups = match discover_groups(&self.heat, stack).await {
            Ok(groups) => groups,
            Err(e) => {
                tracing::info!("node group images of {}: {e}", stack.name);
                return Default::default();
            }
        };
        let facts = futures::future::join_all(groups.iter().map(|g| self.member_facts(g))).await;
        groups
            .into_iter()
            .zip(facts)
            .filter_map(|(g, facts)| Some((g.path, facts.image?)))
            .collect()
    }

    /// The group's [`MemberFacts`], walked again only when Heat changed the group since the
    /// last walk.
    pub async fn member_facts(&self, g: &GroupShape) -> MemberFacts {
        if !settled(g) {
            return MemberFacts::default();
        }
        let key = (g.owner.id.clone(), g.name.clone());
        let stamp = Stamp::of(g);
        if let Some(known) = self.cache().get(&key, &stamp) {
            return known;
        }
        match walk(&self.heat, g).await {
            Ok(facts) => {
                self.cache().put(key, stamp, facts.clone());
                facts
            }
            // Not kept: the next refresh asks again.
            Err(e) => {
                tracing::info!("the members of {}: {e}", g.path);
                MemberFacts::default()
            }
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, FactsCache> {
        // A panic while holding the lock leaves a cache that is still whole (every change
        // is one insert or remove), so it is used as it is.
        self.facts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Under an update, or after one that failed, the members may boot different images (a
/// rollout goes member by member): one member's is not the group's, so none is said; the
/// progress model counts old and new.
fn settled(g: &GroupShape) -> bool {
    crate::progress::at_rest(&g.status)
}

/// What moves when Heat changes a group, read from the discovery that lists it (no request
/// of its own). Heat updates a scaling group on every stack update that reaches it (a group
/// is a nested stack: its update always goes down to the members, which decide), moving its
/// `updated_time` and its status (`UPDATE_COMPLETE`, `ROLLBACK_COMPLETE`, `CHECK_COMPLETE`);
/// a replaced group gets a new nested stack, a replaced first member a new stack of its own.
/// A scale through the stack moves the group too (a walk again finds the same image:
/// harmless); one through a scaling policy's signal resizes the nested stack without
/// updating the group, adding members or removing the oldest: no image changes, and a first
/// member removed is another first member here.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    status: String,
    updated_at: Option<chrono::DateTime<chrono::Utc>>,
    group_stack: Option<String>,
    first_member: Option<(
        String,
        Option<String>,
        Option<chrono::DateTime<chrono::Utc>>,
    )>,
}

impl Stamp {
    fn of(g: &GroupShape) -> Stamp {
        Stamp {
            status: g.status.raw.clone(),
            updated_at: g.updated_at,
            group_stack: g.stack.as_ref().map(|s| s.id.clone()),
            first_member: g.members.first().map(|m| {
                let stack = m.stack.as_ref().map(|s| s.id.clone());
                (m.name.clone(), stack, m.since)
            }),
        }
    }
}

/// Groups whose facts are kept: past it, the one read longest ago is dropped (a console
/// reads a few stacks; a fleet of many stays bounded).
const MAX_KEPT: usize = 256;

/// A group's facts as last walked, keyed by the group resource (its owner stack's id and
/// its name): the same group reached from another stack above is one entry.
#[derive(Default)]
struct FactsCache {
    entries: HashMap<(String, String), Kept>,
    /// Reads so far: orders entries by their last use.
    clock: u64,
}

struct Kept {
    stamp: Stamp,
    facts: MemberFacts,
    used: u64,
}

impl FactsCache {
    fn get(&mut self, key: &(String, String), stamp: &Stamp) -> Option<MemberFacts> {
        self.clock += 1;
        let kept = self.entries.get_mut(key).filter(|k| k.stamp == *stamp)?;
        kept.used = self.clock;
        Some(kept.facts.clone())
    }

    fn put(&mut self, key: (String, String), stamp: Stamp, facts: MemberFacts) {
        self.clock += 1;
        if !self.entries.contains_key(&key) && self.entries.len() >= MAX_KEPT {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        let used = self.clock;
        self.entries.insert(key, Kept { stamp, facts, used });
    }
}

/// What the group's members are made of (see [`MemberFacts`]), walked now: for a one-shot
/// reader (`caldera nodegroups STACK`); [`PlainStacks::member_facts`] keeps it between
/// refreshes.
pub async fn member_facts(heat: &HeatClient, g: &GroupShape) -> MemberFacts {
    if !settled(g) {
        return MemberFacts::default();
    }
    walk(heat, g).await.unwrap_or_else(|e| {
        tracing::info!("the members of {}: {e}", g.path);
        MemberFacts::default()
    })
}

/// The image the group's members boot and their flavor, as Heat resolved them. A group
/// whose definition is a server: Heat writes the group's nested template itself, one
/// resource per member holding the definition with every value resolved (`image:
/// fedora-40`, `flavor: m1.small`). Otherwise the first member's servers, followed down
/// through its nested stacks as a rollout follows them ([`any_group::member_image`]): one
/// walk gives both the parameter a rollout sets and the values shown here. Nothing said
/// when no server reads them so (a group whose first member is not yet created, a computed
/// image); an error when Heat could not be read.
async fn walk(heat: &HeatClient, g: &GroupShape) -> ServiceResult<MemberFacts> {
    let (Some(group_stack), Some(first)) = (g.stack.as_ref(), g.members.first()) else {
        return Ok(MemberFacts::default());
    };
    let generated = heat.get_template(group_stack).await?;
    let Some(definition) = generated.get("resources").and_then(|r| r.get(&first.name)) else {
        return Ok(MemberFacts::default());
    };
    let member_type = definition.get("type").and_then(Value::as_str).unwrap_or("");
    if is_server_type(member_type) {
        let properties = definition.get("properties");
        let read = |property: Option<&str>| vec![properties.and_then(|p| text(p.get(property?)?))];
        return Ok(MemberFacts {
            image: any_group::one_or_mixed(&read(
                any_group::image_property(member_type).or(Some("image")),
            )),
            flavor: any_group::one_or_mixed(&read(
                any_group::flavor_property(member_type).or(Some("flavor")),
            )),
        });
    }
    let Some(member_stack) = first.stack.as_ref() else {
        return Ok(MemberFacts::default());
    };
    let template = heat.get_template(member_stack).await?;
    let found = any_group::member_image(heat, member_stack, &template, &g.path).await?;
    Ok(found.map_or_else(MemberFacts::default, |f| MemberFacts {
        image: f.image(),
        flavor: f.flavor(),
    }))
}

fn text(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(status: &str) -> Stamp {
        Stamp {
            status: status.to_string(),
            updated_at: None,
            group_stack: Some("g".into()),
            first_member: None,
        }
    }

    fn facts(image: &str) -> MemberFacts {
        MemberFacts {
            image: Some(image.into()),
            flavor: None,
        }
    }

    fn key(i: usize) -> (String, String) {
        (format!("stack-{i}"), "nodes".to_string())
    }

    /// Kept facts answer only for the stamp they were walked at; the cache holds at most
    /// `MAX_KEPT` groups, dropping the one read longest ago.
    #[test]
    fn kept_facts_answer_for_their_stamp_and_are_bounded() {
        let mut cache = FactsCache::default();
        cache.put(key(0), stamp("CREATE_COMPLETE"), facts("v1"));
        assert_eq!(
            cache.get(&key(0), &stamp("CREATE_COMPLETE")),
            Some(facts("v1"))
        );
        assert_eq!(cache.get(&key(0), &stamp("UPDATE_COMPLETE")), None);
        for i in 1..MAX_KEPT {
            cache.put(key(i), stamp("CREATE_COMPLETE"), facts("v1"));
        }
        // Group 0 read again: group 1 is now the one read longest ago.
        assert!(cache.get(&key(0), &stamp("CREATE_COMPLETE")).is_some());
        cache.put(key(MAX_KEPT), stamp("CREATE_COMPLETE"), facts("v2"));
        assert_eq!(cache.entries.len(), MAX_KEPT);
        assert!(cache.get(&key(1), &stamp("CREATE_COMPLETE")).is_none());
        assert!(cache.get(&key(0), &stamp("CREATE_COMPLETE")).is_some());
        // A group walked again replaces its entry, past the bound or not.
        cache.put(key(0), stamp("UPDATE_COMPLETE"), facts("v2"));
        assert_eq!(cache.entries.len(), MAX_KEPT);
        assert_eq!(
            cache.get(&key(0), &stamp("UPDATE_COMPLETE")),
            Some(facts("v2"))
        );
    }
}
