//! Node groups and where their members keep their addresses, discovered from what Heat says
//! about a stack: its resource listings, its template (`GET .../template`, outputs with their
//! `get_attr` expressions) and its members' templates. Nothing here knows a name we chose.
//!
//! - **Groups.** Every scaling group (`OS::Heat::ResourceGroup`, `OS::Heat::AutoScalingGroup`)
//!   of the stack's tree whose members are nodes (their subtree holds a server, see
//!   `crate::ops::node_tree`) is a node group named by its resource path: `kube_minions`,
//!   `roles/Compute`, `racks/1/nodes`. Its members (the group's nested stack's resources)
//!   are the nodes.
//! - **Addresses.** Per group, the member output that holds an address: named by the owner
//!   template's outputs that read `{get_attr: [group, attr]}` (Magnum's
//!   `kube_minions_private: {get_attr: [kube_minions, kube_minion_ip]}`), else the member
//!   template's own outputs whose names say address. That output's expression, followed down
//!   through nested templates, names the resource and attribute that really hold the address
//!   (`{get_attr: [kube_minion_eth0, fixed_ips, 0, ip_address]}`, a Neutron port), which the
//!   typed listing reads for every member in one request.

use crate::api::error::ApiError;
use crate::api::heat::{HeatClient, ResourceInfo, ResourceQuery};
use crate::model::{StackRef, Status};
use crate::ops::{node_tree, replaced};
use serde_json::Value;
use std::collections::HashMap;

pub use node_tree::{is_group_type, GROUP_TYPES};
/// Template levels followed from a member's output down to the resource holding the address.
const MAX_HOPS: usize = 4;
/// Expression nesting looked through for `get_attr`.
const MAX_EXPR_DEPTH: usize = 12;

/// A scaling group of a stack: one node group.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupShape {
    /// Resource path from the stack asked about: `kube_minions`, `roles/Compute`. Empty when
    /// the stack asked about is itself a group's nested stack.
    pub path: String,
    /// The group's resource name in its owner.
    pub name: String,
    pub resource_type: String,
    pub status: Status,
    /// The stack holding the group resource.
    pub owner: StackRef,
    /// The group's nested stack, whose resources are the members (none before it exists).
    pub stack: Option<StackRef>,
    /// Members in index order.
    pub members: Vec<Member>,
    /// When Heat last changed the group resource (any update of the group moves it).
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Nested stacks listed (one small listing each) in search of groups: bounds the work on a
/// stack of many nested stacks (or of many racks).
const MAX_NESTED_SEARCHED: usize = 32;

/// Every node group of `stack`, in resource path order: groups in the stack, in its nested
/// stacks and inside other groups' members (`racks/1/nodes`), those whose members are not
/// nodes left out (`crate::ops::node_tree`). A `nested_depth=1` listing of each stack searched
/// gives its groups and their members; one member's subtree per group says what the members
/// hold.
pub async fn discover_groups(
    heat: &HeatClient,
    stack: &StackRef,
) -> Result<Vec<GroupShape>, ApiError> {
    let root_listing = heat.list_resources(stack, &depth_one()).await?;
    let mut judged: Vec<(GroupShape, node_tree::Holds)> = Vec::new();
    let mut wave = vec![(stack.clone(), String::new(), root_listing.clone())];
    let mut searched = 0;
    while !wave.is_empty() {
        let mut next: Vec<(StackRef, String)> = Vec::new();
        let mut sampled: Vec<(GroupShape, Sample)> = Vec::new();
        for (s, prefix, listing) in &wave {
            let found = scan(s, prefix, listing);
            next.extend(found.nested);
            sampled.extend(found.groups);
        }
        let held =
            futures::future::join_all(sampled.iter().map(|(_, sample)| probe(heat, sample))).await;
        for ((g, _), held) in sampled.into_iter().zip(held) {
            // Members holding groups of their own: those groups are searched, member by member.
            if held.group {
                next.extend(g.members.iter().filter_map(|m| {
                    let prefix = format!("{}/{}/", g.path, m.name);
                    m.stack.clone().map(|s| (s, prefix))
                }));
            }
            judged.push((g, held));
        }
        let take: Vec<(StackRef, String)> = next
            .into_iter()
            .take(MAX_NESTED_SEARCHED.saturating_sub(searched))
            .collect();
        searched += take.len();
        wave = list_all(heat, take).await;
    }
    let any_server = judged.iter().any(|(_, h)| h.server);
    let mut groups: Vec<GroupShape> = judged
        .into_iter()
        .filter(|(g, h)| node_tree::is_node_group(*h, g.members.is_empty(), any_server))
        .map(|(g, _)| g)
        .collect();
    if groups.is_empty() {
        groups.extend(stack_as_group(stack, &root_listing));
    }
    groups.sort_by(|a, b| a.path.cmp(&b.path));
    for g in &mut groups {
        with_replacements(heat, g).await;
    }
    Ok(groups)
}

/// Members Heat is replacing, as their replacement stands (see [`super::replaced`]): where the
/// listing gave a member's old row (deleted, or marked for replacement), its group's newest
/// events are read (a few pages, only then) and the replacement's newest event stands for
/// it: status, reason, time and the new server's id. Where it gave the replacement's own row
/// (being created) in an update of the group, the same events tell it from a member a scale
/// adds ([`replaced::group_may_replace`]). Members that are nested stacks are left as listed
/// (Heat updates a template member in place). An unreadable event list leaves the listing as
/// it is.
async fn with_replacements(heat: &HeatClient, g: &mut GroupShape) {
    let replaced = |m: &Member| {
        m.stack.is_none()
            && m.physical_id.is_some()
            && replaced::may_be_replaced(&m.status, m.status_reason.as_deref())
    };
    // The listing may give the replacement's own row instead, being created: told from a
    // member a scale adds by the same events, while the group's update could replace.
    let may_replace = replaced::group_may_replace(&g.status);
    let being_made = |m: &Member| {
        may_replace && m.stack.is_none() && m.status.action == "CREATE" && m.status.is_in_progress()
    };
    let Some(stack) = g
        .stack
        .as_ref()
        .filter(|_| g.members.iter().any(|m| replaced(m) || being_made(m)))
    else {
        return;
    };
    let events = match replaced::group_events(heat, stack).await {
        Ok(events) => events,
        Err(e) => {
            tracing::info!(
                "events of {} not read for its replacements: {e}",
                stack.name
            );
            return;
        }
    };
    for m in g.members.iter_mut() {
        if replaced(m) {
            if let Some(r) = replaced::replacement_in(&events, &m.name, m.physical_id.as_deref()) {
                m.status = r.status;
                m.status_reason = r.reason;
                m.since = Some(r.time);
                m.physical_id = r.physical_id;
                m.replacing = true;
            }
        } else if being_made(m) {
            m.replacing = replaced::is_a_replacement(&events, &m.name, m.physical_id.as_deref());
        }
    }
}

fn depth_one() -> ResourceQuery {
    ResourceQuery {
        nested_depth: Some(1),
        ..Default::default()
    }
}

/// `nested_depth=1` listings of `stacks`; one gone or unreadable holds no group we can show.
async fn list_all(
    heat: &HeatClient,
    stacks: Vec<(StackRef, String)>,
) -> Vec<(StackRef, String, Vec<ResourceInfo>)> {
    let query = depth_one();
    let listed = futures::future::join_all(stacks.into_iter().map(|(s, prefix)| {
        let query = &query;
        async move {
            let listing = heat.list_resources(&s, query).await;
            (s, prefix, listing)
        }
    }))
    .await;
    listed
        .into_iter()
        .filter_map(|(s, prefix, listing)| match listing {
            Ok(l) => Some((s, prefix, l)),
            Err(e) => {
                tracing::info!("searching {} for groups: {e}", s.name);
                None
            }
        })
        .collect()
}

/// What one member of a group is, to judge all (they share one definition).
#[derive(Debug, Clone, PartialEq)]
enum Sample {
    /// The member is a server itself.
    Server,
    /// A member stack to list (its subtree).
    Stack(StackRef),
    /// No member, or one that is neither a server nor a stack (a volume, a string).
    Nothing,
}

/// What a group's sampled member holds: its subtree listed (one small request).
async fn probe(heat: &HeatClient, sample: &Sample) -> node_tree::Holds {
    let depth = node_tree::TREE_DEPTH - 1;
    match sample {
        Sample::Server => node_tree::Holds {
            server: true,
            ..Default::default()
        },
        Sample::Nothing => node_tree::Holds::default(),
        Sample::Stack(s) => {
            let query = ResourceQuery {
                nested_depth: Some(depth),
                ..Default::default()
            };
            match heat.list_resources(s, &query).await {
                Ok(listing) => node_tree::Tree::new(s, &listing, depth).holds_stack(&s.id),
                // Unreadable (deleted under us): not known, so shown.
                Err(e) => {
                    tracing::info!("member {} of a group: {e}", s.name);
                    node_tree::Holds {
                        unlisted: true,
                        ..Default::default()
                    }
                }
            }
        }
    }
}

/// What a `nested_depth=1` listing of `stack` shows.
#[derive(Debug, Default)]
struct Scan {
    /// Its groups, with their members and the member that stands for all.
    groups: Vec<(GroupShape, Sample)>,
    /// Its plain nested stacks (not groups), to search next, with their path prefix.
    nested: Vec<(StackRef, String)>,
}

fn scan(stack: &StackRef, prefix: &str, listing: &[ResourceInfo]) -> Scan {
    let tree = node_tree::Tree::new(stack, listing, 1);
    let mut found = Scan::default();
    for r in tree.resources_of(&stack.id) {
        let path = format!("{prefix}{}", r.resource.name);
        let Some(nested) = &r.resource.nested else {
            continue;
        };
        if !is_group_type(&r.resource.resource_type) {
            found.nested.push((nested.clone(), format!("{path}/")));
            continue;
        }
        let g = group(stack, path, r, tree.resources_of(&nested.id));
        let sample = sample_of(&g.members);
        found.groups.push((g, sample));
    }
    found
}

/// The member that stands for all: the first (in index order) that is a server or has a
/// stack (a failed one may have none).
fn sample_of(members: &[Member]) -> Sample {
    members
        .iter()
        .find_map(|m| match (&m.stack, m.is_server()) {
            (_, true) => Some(Sample::Server),
            (Some(s), false) => Some(Sample::Stack(s.clone())),
            (None, false) => None,
        })
        .unwrap_or(Sample::Nothing)
}

/// The group at `path` (exactly), or every group when `path` is `None`.
pub fn select<'a>(groups: &'a [GroupShape], path: Option<&str>) -> Vec<&'a GroupShape> {
    match path {
        None => groups.iter().collect(),
        Some(p) => {
            let p = p.trim_matches('/');
            groups.iter().filter(|g| g.path == p).collect()
        }
    }
}

fn is_top(stack: &StackRef, r: &ResourceInfo) -> bool {
    r.resource.owner.as_ref().is_none_or(|o| o.id == stack.id)
}

pub(crate) fn sort_members(members: &mut [Member]) {
    members.sort_by(|a, b| {
        (a.index.is_none(), a.index, &a.name).cmp(&(b.index.is_none(), b.index, &b.name))
    });
}

fn group(
    stack: &StackRef,
    path: String,
    r: &ResourceInfo,
    members: &[&ResourceInfo],
) -> GroupShape {
    let mut members: Vec<Member> = members.iter().map(|m| Member::from_resource(m)).collect();
    sort_members(&mut members);
    GroupShape {
        path,
        name: r.resource.name.clone(),
        resource_type: r.resource.resource_type.clone(),
        status: r.resource.status.clone(),
        owner: r.resource.owner.clone().unwrap_or_else(|| stack.clone()),
        stack: r.resource.nested.clone(),
        members,
        updated_at: r.resource.updated_at,
    }
}

/// A stack with no group but whose resources are all nested stacks of one type is itself a
/// group's nested stack (someone named the group's stack directly): its resources are the
/// members.
fn stack_as_group(stack: &StackRef, listing: &[ResourceInfo]) -> Option<GroupShape> {
    let top: Vec<&ResourceInfo> = listing.iter().filter(|r| is_top(stack, r)).collect();
    let first = top.first()?;
    let one_type = top
        .iter()
        .all(|r| r.resource.resource_type == first.resource.resource_type);
    if !one_type || top.iter().any(|r| r.resource.nested.is_none()) {
        return None;
    }
    let mut members: Vec<Member> = top.iter().map(|r| Member::from_resource(r)).collect();
    sort_members(&mut members);
    Some(GroupShape {
        path: String::new(),
        name: stack.name.clone(),
        resource_type: first.resource.resource_type.clone(),
        status: first.resource.status.clone(),
        owner: stack.clone(),
        stack: Some(stack.clone()),
        members,
        updated_at: first.resource.updated_at,
    })
}

// ---- where the addresses live ----

/// One step into an attribute's value: a list index or a map key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    Index(usize),
    Key(String),
}

/// A template resource between a member stack and the address resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub name: String,
    pub resource_type: String,
}

/// The resource and attribute holding each member's address, for the typed listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedAddress {
    /// Nested template resources from the member stack down to the address resource.
    pub hops: Vec<Hop>,
    pub resource_name: String,
    pub resource_type: String,
    pub attribute: String,
    /// Steps into the attribute's value (`fixed_ips` -> `0` -> `ip_address`).
    pub path: Vec<PathStep>,
}

impl TypedAddress {
    /// Nesting depth of the address resource below the group's stack.
    pub fn depth(&self) -> u32 {
        u32::try_from(self.hops.len()).unwrap_or(u32::MAX - 1) + 1
    }
}

/// Where a group's member addresses are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPlan {
    /// The member stacks' output holding the address(es).
    pub output_key: Option<String>,
    /// The member template's other address outputs, best first, read for a member whose
    /// `output_key` holds none (an external address that is null without floating IPs,
    /// where the member's own port address is another output). Empty when the operator
    /// named the output.
    pub fallback_keys: Vec<String>,
    /// The resource holding it, for the typed listing.
    pub typed: Option<TypedAddress>,
    /// What was looked at, for the one line shown when nothing was found.
    pub tried: Vec<String>,
    /// An output of the group's owner stack that is the member output over the whole group
    /// (`kube_minions_private: {get_attr: [kube_minions, kube_minion_ip]}`): one request
    /// for every address when Heat has resolved it before (`crate::ops::warm_outputs`).
    pub aggregate: Option<Aggregate>,
    /// The members are servers themselves: their own attributes hold their addresses
    /// (`crate::ops::server_members`).
    pub member_servers: bool,
    /// The member's other outputs the owner's outputs read through the group
    /// (`kube_minions: {get_attr: [kube_minions, kube_minion_external_ip]}` beside
    /// `kube_minions_private: {get_attr: [kube_minions, kube_minion_ip]}`; TripleO's
    /// `RoleNetIpMap` reading each role's `internal_api_ip` beside its `ctlplane_ip`): Heat
    /// gives each member a value of each, so the addresses among them are the node's too (a
    /// floating IP beside the fixed one, an address on another network). Read after the
    /// first set is out. Empty when the operator named the output.
    pub more: Vec<MoreOutput>,
}

/// Another member output holding a node's addresses, and the resource it reads (a
/// FloatingIP associated with the member's port, another port), for one typed listing of
/// every member's instead of one request per member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoreOutput {
    pub key: String,
    pub typed: Option<TypedAddress>,
}

/// Other member outputs read per node, at most (a template is bounded, a hostile one too).
const MAX_MORE_OUTPUTS: usize = 8;

/// An aggregate output and how its value lines up with the members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aggregate {
    pub key: String,
    /// `true`: a map keyed by member name (`[group, attributes, attr]`, an
    /// AutoScalingGroup's `[group, outputs, attr]`); `false`: a ResourceGroup's list in
    /// member index order (`[group, attr]`).
    pub by_name: bool,
}

impl AddressPlan {
    pub fn is_empty(&self) -> bool {
        self.output_key.is_none() && self.typed.is_none() && !self.member_servers
    }

    /// One line: where addresses are read, or what was tried.
    pub fn describe(&self) -> String {
        let servers = "each member server's own attributes (networks, addresses, first_address)";
        match (&self.output_key, &self.typed) {
            (None, None) if self.member_servers => servers.to_string(),
            (None, None) => format!("no address found: {}", self.tried.join("; ")),
            (key, typed) => {
                let mut parts = Vec::new();
                if let Some(k) = key {
                    match self.fallback_keys.as_slice() {
                        [] => parts.push(format!("member output '{k}'")),
                        more => parts.push(format!(
                            "member output '{k}' (where empty: '{}')",
                            more.join("', '")
                        )),
                    }
                }
                if let Some(t) = typed {
                    let mut at: Vec<&str> = t.hops.iter().map(|h| h.name.as_str()).collect();
                    at.push(&t.resource_name);
                    let mut attribute = vec![t.attribute.clone()];
                    attribute.extend(t.path.iter().map(|s| match s {
                        PathStep::Index(i) => i.to_string(),
                        PathStep::Key(k) => k.clone(),
                    }));
                    parts.push(format!(
                        "{} ({}) attribute {}",
                        at.join("/"),
                        t.resource_type,
                        attribute.join("/")
                    ));
                }
                if !self.more.is_empty() {
                    let keys: Vec<&str> = self.more.iter().map(|m| m.key.as_str()).collect();
                    parts.push(format!("then member output '{}'", keys.join("', '")));
                }
                parts.join(", ")
            }
        }
    }
}

/// Works out where `group`'s members keep their addresses. `output_key` (the operator's
/// override) wins over anything found; it is still followed to its resource for the typed
/// listing. Errors reading templates become lines in `tried`.
pub async fn plan_addresses(
    heat: &HeatClient,
    group: &GroupShape,
    output_key: Option<&str>,
) -> AddressPlan {
    let mut plan = AddressPlan {
        member_servers: output_key.is_none()
            && !group.members.is_empty()
            && group.members.iter().all(Member::is_server),
        ..AddressPlan::default()
    };
    if plan.member_servers {
        return plan;
    }
    let Some(member_stack) = group.members.iter().find_map(|m| m.stack.clone()) else {
        plan.tried
            .push(format!("group {} has no member stack", label(group)));
        if let Some(k) = output_key {
            plan.output_key = Some(k.to_string());
        }
        return plan;
    };
    let (owner_template, member_template) = futures::join!(
        async {
            if output_key.is_some() {
                None
            } else {
                Some(heat.get_template(&group.owner).await)
            }
        },
        heat.get_template(&member_stack)
    );
    let member_template = match member_template {
        Ok(t) => t,
        Err(e) => {
            plan.tried.push(format!("member template: {e}"));
            plan.output_key = output_key.map(str::to_string);
            return plan;
        }
    };
    let member_outputs = outputs_of(&member_template);
    let mut owner_outputs = None;
    let mut read_by_parent = Vec::new();
    let chosen = match output_key {
        Some(k) => Some(k.to_string()),
        None => {
            let from_parent = match owner_template {
                Some(Ok(t)) => {
                    let attrs = member_attrs_read_by_parent(&t, &group.name);
                    owner_outputs = Some(t);
                    attrs
                }
                Some(Err(e)) => {
                    plan.tried
                        .push(format!("template of {}: {e}", group.owner.name));
                    Vec::new()
                }
                None => Vec::new(),
            };
            read_by_parent = from_parent.clone();
            let keys: Vec<&str> = member_outputs.keys().map(String::as_str).collect();
            let choice = choose_output(&from_parent, &keys)
                .or_else(|| server_address_output(&member_template, &from_parent));
            if choice.is_none() {
                plan.tried.push(format!(
                    "outputs of {} reading the group: {}",
                    group.owner.name,
                    list_or_none(&from_parent)
                ));
                plan.tried.push(format!(
                    "member outputs: {}",
                    list_or_none(&keys.iter().map(|k| k.to_string()).collect::<Vec<_>>())
                ));
            }
            choice
        }
    };
    let Some(key) = chosen else {
        return plan;
    };
    plan.typed = match follow_output(heat, &member_stack, &member_template, &key).await {
        Some(t) => Some(t),
        // An output that wraps the address (`{name: .., internal_ip: {get_attr: [inst,
        // first_address]}}`): the server attribute inside it is read for every member.
        None => output_value(&member_template, &key)
            .and_then(|v| server_address_in(&member_template, v)),
    };
    plan.aggregate = owner_outputs
        .as_ref()
        .and_then(|t| aggregate_output(t, group, &key));
    let others: Vec<&String> = read_by_parent
        .iter()
        .filter(|a| **a != key && member_outputs.contains_key(a.as_str()))
        .filter(|a| reads_an_attribute(&member_template, a))
        .take(MAX_MORE_OUTPUTS)
        .collect();
    for other in others {
        let typed = follow_output(heat, &member_stack, &member_template, other).await;
        plan.more.push(MoreOutput {
            key: other.clone(),
            typed,
        });
    }
    if output_key.is_none() {
        plan.fallback_keys = fallback_outputs(&member_outputs, &key);
    }
    plan.output_key = Some(key);
    plan
}

/// Whether the member output `key` may hold an address: it reads an attribute (`get_attr`)
/// somewhere, of a resource the template holds. A resource's id (`get_resource`, TripleO's
/// `server_id`) or a parameter is no address; an attribute of a resource the template does
/// not hold (`{get_attr: [kube_minion_floating, floating_ip_address]}` where the member was
/// laid out without floating IPs) has no value.
fn reads_an_attribute(member_template: &Value, key: &str) -> bool {
    let Some(value) = output_value(member_template, key) else {
        return false;
    };
    if let Some((resource, _, _)) = direct_get_attr(value) {
        return resource_type_in(member_template, &resource).is_some();
    }
    let mut calls = Vec::new();
    get_attrs_in(value, &mut calls, 0);
    !calls.is_empty()
}

/// The member outputs but `chosen` whose names say they hold an address, best first (as
/// [`choose_output`] ranks a member's own outputs).
fn fallback_outputs(member_outputs: &serde_json::Map<String, Value>, chosen: &str) -> Vec<String> {
    let mut keys: Vec<&str> = member_outputs
        .keys()
        .map(String::as_str)
        .filter(|k| *k != chosen && address_score(k) > 0)
        .collect();
    keys.sort_by_key(|k| (std::cmp::Reverse(address_score(k)), k.len(), k.to_string()));
    keys.into_iter().map(str::to_string).collect()
}

/// The owner template's output whose whole value is member output `attr` over `group`, in a
/// shape whose entries can be matched to members (see [`Aggregate`]).
pub fn aggregate_output(template: &Value, group: &GroupShape, attr: &str) -> Option<Aggregate> {
    let resource_group = group.resource_type == "OS::Heat::ResourceGroup";
    let mut found: Vec<(String, Aggregate)> = outputs_of(template)
        .iter()
        .filter_map(|(key, out)| {
            let value = out.get("value").or_else(|| out.get("Value"))?;
            let args = value
                .get("get_attr")
                .or_else(|| value.get("Fn::GetAtt"))?
                .as_array()?;
            if value.as_object().map(|o| o.len()) != Some(1) {
                return None;
            }
            let args: Vec<&str> = args.iter().map(Value::as_str).collect::<Option<_>>()?;
            let by_name = match args.as_slice() {
                [g, a] if *g == group.name && *a == attr && resource_group => false,
                [g, "attributes", a] if *g == group.name && *a == attr && resource_group => true,
                [g, "outputs", a] if *g == group.name && *a == attr && !resource_group => true,
                _ => return None,
            };
            Some((
                key.clone(),
                Aggregate {
                    key: key.clone(),
                    by_name,
                },
            ))
        })
        .collect();
    // Several: the keyed one first, then by name, so the choice does not depend on map order.
    found.sort_by(|a, b| (!a.1.by_name, &a.0).cmp(&(!b.1.by_name, &b.0)));
    found.into_iter().next().map(|(_, a)| a)
}

fn label(group: &GroupShape) -> String {
    if group.path.is_empty() {
        group.name.clone()
    } else {
        group.path.clone()
    }
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Follows the member output `key` down to a resource that is not a nested template: the
/// typed listing's target. `None` when the output is not a plain `get_attr` chain.
async fn follow_output(
    heat: &HeatClient,
    member_stack: &StackRef,
    member_template: &Value,
    key: &str,
) -> Option<TypedAddress> {
    let mut hops = Vec::new();
    let mut stack = member_stack.clone();
    let mut template = member_template.clone();
    let mut key = key.to_string();
    let mut outer_path: Vec<PathStep> = Vec::new();
    for _ in 0..MAX_HOPS {
        let value = output_value(&template, &key)?;
        let (resource, attribute, mut path) = direct_get_attr(value)?;
        let rtype = resource_type_in(&template, &resource)?;
        path.append(&mut outer_path);
        if !is_template_type(&rtype) {
            return Some(TypedAddress {
                hops,
                resource_name: resource,
                resource_type: rtype,
                attribute,
                path,
            });
        }
        // A nested template: the attribute is one of its outputs. Read that stack's template.
        let inner = heat
            .get_resource(&stack, &resource)
            .await
            .ok()?
            .resource
            .nested?;
        template = heat.get_template(&inner).await.ok()?;
        hops.push(Hop {
            name: resource,
            resource_type: rtype,
        });
        stack = inner;
        key = attribute;
        outer_path = path;
    }
    None
}

/// Attributes of a server that hold its addresses, as Heat's `OS::Nova::Server` defines them:
/// `networks` (`{NET: [ip, ..]}`, network names kept), `addresses` (`{NET: [{addr, ..}]}`),
/// `first_address` (one), `accessIPv4`/`accessIPv6`.
pub const SERVER_ADDRESS_ATTRIBUTES: [&str; 5] = [
    "networks",
    "addresses",
    "first_address",
    "accessIPv4",
    "accessIPv6",
];

/// Whether attribute `attribute` of a resource of type `rtype` is an address, by the type's
/// own schema: a server's address attributes (a provider registered under a server type
/// keeps the server's name), a Neutron port's `fixed_ips`, a floating IP's
/// `floating_ip_address`.
fn is_address_attribute(rtype: &str, attribute: &str) -> bool {
    match rtype {
        "OS::Neutron::Port" => attribute == "fixed_ips",
        "OS::Neutron::FloatingIP" => attribute == "floating_ip_address",
        t => node_tree::is_server_type(t) && SERVER_ADDRESS_ATTRIBUTES.contains(&attribute),
    }
}

/// Every `get_attr` in `value` (at any depth: a map or list of them, Sahara's instance
/// object `{name, internal_ip: {get_attr: [port, fixed_ips, 0, ip_address]}, management_ip:
/// {get_attr: [fip, floating_ip_address]}}`) that reads an address attribute of a resource
/// of `template` (see [`is_address_attribute`]), each read once.
fn address_reads_in(template: &Value, value: &Value) -> Vec<TypedAddress> {
    let mut calls = Vec::new();
    get_attrs_in(value, &mut calls, 0);
    let mut reads: Vec<TypedAddress> = Vec::new();
    for args in calls {
        let call = serde_json::json!({ "get_attr": args });
        let Some((resource, attribute, path)) = direct_get_attr(&call) else {
            continue;
        };
        let Some(rtype) = resource_type_in(template, &resource) else {
            continue;
        };
        if !is_address_attribute(&rtype, &attribute) {
            continue;
        }
        let read = TypedAddress {
            hops: Vec::new(),
            resource_name: resource,
            resource_type: rtype,
            attribute,
            path,
        };
        if !reads.contains(&read) {
            reads.push(read);
        }
    }
    reads
}

/// The typed listing's target for an output that wraps its address reads in a map or list:
/// the one resource attribute it reads, when it reads one. An output reading two (a port's
/// fixed address and a floating IP) has none: a listing of one would miss the other, so
/// each member's output is read whole.
fn server_address_in(template: &Value, value: &Value) -> Option<TypedAddress> {
    let mut reads = address_reads_in(template, value);
    match reads.len() {
        1 => reads.pop(),
        _ => None,
    }
}

/// The member output that reads an address attribute (see [`is_address_attribute`]),
/// whatever its name: those the parent reads through the group first, then the member's own
/// in name order (Heat's autoscaling examples: `networks: {get_attr: [server, networks]}`;
/// Sahara's instance object holding `internal_ip: {get_attr: [inst, first_address]}`, or
/// its port's `fixed_ips` and its floating IP's `floating_ip_address`).
fn server_address_output(member_template: &Value, read_by_parent: &[String]) -> Option<String> {
    let outputs = outputs_of(member_template);
    let reads = |key: &String| {
        outputs
            .get(key)
            .and_then(|o| o.get("value").or_else(|| o.get("Value")))
            .is_some_and(|v| !address_reads_in(member_template, v).is_empty())
    };
    read_by_parent
        .iter()
        .find(|k| reads(k))
        .or_else(|| outputs.keys().find(|k| reads(k)))
        .cloned()
}

/// A resource type that is itself a template (a nested stack).
pub fn is_template_type(t: &str) -> bool {
    let lower = t.to_ascii_lowercase();
    t == "OS::Heat::Stack"
        || lower.ends_with(".yaml")
        || lower.ends_with(".yml")
        || lower.ends_with(".template")
        || lower.ends_with(".json")
        || lower.contains("://")
}

/// The outputs map of a template (HOT `outputs`, CFN `Outputs`).
pub fn outputs_of(template: &Value) -> serde_json::Map<String, Value> {
    template
        .get("outputs")
        .or_else(|| template.get("Outputs"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn output_value<'a>(template: &'a Value, key: &str) -> Option<&'a Value> {
    let out = template
        .get("outputs")
        .or_else(|| template.get("Outputs"))?
        .get(key)?;
    out.get("value").or_else(|| out.get("Value"))
}

fn resource_type_in(template: &Value, resource: &str) -> Option<String> {
    let r = template
        .get("resources")
        .or_else(|| template.get("Resources"))?
        .get(resource)?;
    r.get("type")
        .or_else(|| r.get("Type"))?
        .as_str()
        .map(str::to_string)
}

/// `{get_attr: [resource, attribute, path...]}` (or `Fn::GetAtt`) as the whole expression.
fn direct_get_attr(value: &Value) -> Option<(String, String, Vec<PathStep>)> {
    let args = value
        .get("get_attr")
        .or_else(|| value.get("Fn::GetAtt"))?
        .as_array()?;
    let resource = args.first()?.as_str()?.to_string();
    let mut rest = args[1..].iter();
    let attribute = match rest.next()? {
        Value::String(s) => s.clone(),
        _ => return None,
    };
    let mut path = Vec::new();
    for step in rest {
        path.push(match step {
            Value::Number(n) => PathStep::Index(usize::try_from(n.as_u64()?).ok()?),
            Value::String(s) => match s.parse::<usize>() {
                Ok(i) => PathStep::Index(i),
                Err(_) => PathStep::Key(s.clone()),
            },
            // A computed path step (another function): not followable.
            _ => return None,
        });
    }
    Some((resource, attribute, path))
}

/// Every `get_attr` argument list anywhere in an expression (bounded depth).
fn get_attrs_in<'a>(value: &'a Value, out: &mut Vec<&'a [Value]>, depth: usize) {
    if depth > MAX_EXPR_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "get_attr" || k == "Fn::GetAtt" {
                    if let Some(args) = v.as_array() {
                        out.push(args);
                    }
                }
                get_attrs_in(v, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for v in items {
                get_attrs_in(v, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// Member outputs the template's outputs read through the group `group`:
/// `{get_attr: [group, attr]}`, `[group, attributes, attr]` (ResourceGroup),
/// `[group, outputs_list, attr]` (AutoScalingGroup), `[group, resource.0, attr]`,
/// `[group, resource.0.attr]`. In the order the outputs come (Heat's template map order),
/// without repeats.
pub fn member_attrs_read_by_parent(template: &Value, group: &str) -> Vec<String> {
    let mut calls = Vec::new();
    let outputs = outputs_of(template);
    for out in outputs.values() {
        get_attrs_in(out, &mut calls, 0);
    }
    let mut attrs: Vec<String> = Vec::new();
    for args in calls {
        if args.first().and_then(Value::as_str) != Some(group) {
            continue;
        }
        let Some(attr) = member_attr(&args[1..]) else {
            continue;
        };
        if !attrs.contains(&attr) {
            attrs.push(attr);
        }
    }
    attrs
}

fn member_attr(args: &[Value]) -> Option<String> {
    let first = args.first()?.as_str()?;
    match first {
        "attributes" | "outputs" | "outputs_list" => args.get(1)?.as_str().map(str::to_string),
        "refs" | "refs_map" | "removed_rsrc_list" | "current_size" => None,
        s if s.starts_with("resource.") => {
            // `resource.0.attr` or `resource.0` followed by the attribute.
            let mut parts = s.splitn(3, '.');
            parts.next();
            parts.next();
            match parts.next() {
                Some(attr) if !attr.is_empty() => Some(attr.to_string()),
                _ => args.get(1)?.as_str().map(str::to_string),
            }
        }
        s => Some(s.to_string()),
    }
}

/// How much an output's name says "address": 0 = not at all.
fn address_score(name: &str) -> u8 {
    let n = name.to_ascii_lowercase();
    let says_address = n.contains("ip") || n.contains("addr") || n.contains("address");
    if !says_address {
        return 0;
    }
    // The node's own (private) address first; external ones are still addresses.
    if ["external", "floating", "public"]
        .iter()
        .any(|w| n.contains(w))
    {
        1
    } else {
        2
    }
}

/// The member output holding the address: one the parent reads through the group (best named
/// first, then in the parent's order), else a member output whose name says address.
pub fn choose_output(read_by_parent: &[String], member_outputs: &[&str]) -> Option<String> {
    let exists = |k: &str| member_outputs.is_empty() || member_outputs.contains(&k);
    let from_parent = read_by_parent
        .iter()
        .filter(|a| exists(a) && address_score(a) > 0)
        .max_by_key(|a| {
            (
                address_score(a),
                std::cmp::Reverse(read_by_parent.iter().position(|x| x == *a)),
            )
        });
    if let Some(a) = from_parent {
        return Some(a.clone());
    }
    let mut own: Vec<&str> = member_outputs
        .iter()
        .copied()
        .filter(|k| address_score(k) > 0)
        .collect();
    own.sort_by_key(|k| (std::cmp::Reverse(address_score(k)), k.len(), k.to_string()));
    own.first().map(|k| k.to_string())
}

/// Applies `path` to an attribute value (a JSON string is parsed first).
pub fn value_at<'a>(value: &'a Value, path: &[PathStep]) -> Option<std::borrow::Cow<'a, Value>> {
    use std::borrow::Cow;
    let mut current: Cow<'a, Value> = Cow::Borrowed(value);
    for step in path {
        if let Value::String(s) = current.as_ref() {
            if let Some(parsed) = parse_json_text(s) {
                current = Cow::Owned(parsed);
            }
        }
        current = match (current, step) {
            (Cow::Borrowed(v), PathStep::Index(i)) => Cow::Borrowed(v.get(*i)?),
            (Cow::Borrowed(v), PathStep::Key(k)) => Cow::Borrowed(v.get(k.as_str())?),
            (Cow::Owned(v), PathStep::Index(i)) => Cow::Owned(v.get(*i)?.clone()),
            (Cow::Owned(v), PathStep::Key(k)) => Cow::Owned(v.get(k.as_str())?.clone()),
        };
    }
    Some(current)
}

/// Maps nested stack ids to the member owning them, level by level, from typed listings of
/// each hop (`nested_depth = level`): the address resource's owner stack then names its
/// member however deep it sits.
pub fn member_of_stacks(
    members: &HashMap<String, String>,
    hop_listings: &[Vec<ResourceInfo>],
) -> HashMap<String, String> {
    let mut known = members.clone();
    for listing in hop_listings {
        let mut next = HashMap::new();
        for r in listing {
            let (Some(owner), Some(nested)) = (&r.resource.owner, &r.resource.nested) else {
                continue;
            };
            if let Some(member) = known.get(&owner.id) {
                next.insert(nested.id.clone(), member.clone());
            }
        }
        known = next;
    }
    known
}

/// One member of a node group (a scaling group member with its own nested stack).
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Resource name in the group (`"0"`, `"1"`, ...); in a stream over several groups,
    /// prefixed with the group's path (`"kube_minions/0"`) so it is unique in the stream.
    pub name: String,
    pub index: Option<u32>,
    pub stack: Option<StackRef>,
    pub status: Status,
    pub status_reason: Option<String>,
    /// When the member's resource last changed status.
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// Resource path of the member's group (`kube_minions`, `roles/Compute`; empty when the
    /// stack asked about is itself the group's stack).
    pub group: String,
    /// The member's type as Heat reports it: a template (its nested stack holds the server),
    /// or a server itself (`resource_def: {type: OS::Nova::Server}`: with a real Nova, no
    /// nested stack at all).
    pub resource_type: String,
    /// The member resource's physical id: the Nova server's id when the member is a server
    /// itself, its nested stack's id when it is a template.
    pub physical_id: Option<String>,
    /// Heat is replacing this member (its update replaces the resource: `UpdateReplace`), and
    /// what is shown of it is its replacement's, read from the group's events (see
    /// [`super::replaced`]): a replacement being created is the member's update, not a member
    /// a scale adds.
    pub replacing: bool,
}

impl Member {
    pub fn from_resource(r: &ResourceInfo) -> Member {
        Member {
            name: r.resource.name.clone(),
            index: r.resource.name.parse().ok(),
            stack: r.resource.nested.clone(),
            status: r.resource.status.clone(),
            status_reason: r.resource.status_reason.clone(),
            since: r.resource.updated_at.or(r.created_at),
            group: String::new(),
            resource_type: r.resource.resource_type.clone(),
            physical_id: r.resource.physical_id.clone(),
            replacing: false,
        }
    }

    /// Still being created (or not yet started): no address yet is not a failure. A member
    /// whose nested stack is not there yet is pending, unless it is a server itself (it has
    /// none).
    pub fn is_pending(&self) -> bool {
        !self.status.is_failed()
            && (self.status.is_in_progress()
                || self.status.action == "INIT"
                || (self.stack.is_none() && !self.is_server()))
    }

    /// The member is a server itself, not a stack holding one.
    pub fn is_server(&self) -> bool {
        node_tree::is_server_type(&self.resource_type)
    }
}

/// Largest JSON text inside a value that is parsed (for addresses, for outputs).
const MAX_JSON_TEXT: usize = 64 * 1024;

/// Parses a JSON object or list held in a string value (bounded); `None` for anything else.
pub fn parse_json_text(s: &str) -> Option<serde_json::Value> {
    let t = s.trim();
    if t.len() > MAX_JSON_TEXT || !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str(t).ok()
}

#[cfg(test)]
mod tests {

    /// Sahara's instance template: its one output is an object whose addresses are a port's
    /// `fixed_ips` and a floating IP's `floating_ip_address`, under names that say nothing
    /// of addresses. The types say it: the output holds the node's addresses, read whole
    /// per member (a typed listing of one of the two would miss the other).
    #[test]
    fn an_output_mapping_reads_of_a_port_and_a_floating_ip_holds_addresses() {
        let member = json!({
            "resources": {
                "port": {"type": "OS::Neutron::Port"},
                "fip": {"type": "OS::Neutron::FloatingIP"},
                "inst": {"type": "OS::Nova::Server"},
                "vol": {"type": "OS::Cinder::Volume"}},
            "outputs": {
                "instance": {"value": {
                    "name": {"get_param": "instance_name"},
                    "instance_id": {"get_resource": "inst"},
                    "internal_ip": {"get_attr": ["port", "fixed_ips", 0, "ip_address"]},
                    "management_ip": {"get_attr": ["fip", "floating_ip_address"]}}},
                "disk": {"value": {"get_attr": ["vol", "size"]}},
                "both": {"value": [{"get_attr": ["inst", "first_address"]},
                                   {"get_attr": ["inst", "first_address"]}]}}});
        assert_eq!(
            server_address_output(&member, &["instance".to_string()]).as_deref(),
            Some("instance")
        );
        let value = output_value(&member, "instance").expect("output");
        assert_eq!(address_reads_in(&member, value).len(), 2);
        assert_eq!(
            server_address_in(&member, value),
            None,
            "two reads: read whole"
        );
        // A volume's attribute is no address; one read met twice is one read.
        assert_eq!(
            server_address_output(&member, &["disk".to_string()]).as_deref(),
            Some("both")
        );
        let both = output_value(&member, "both").expect("output");
        assert_eq!(
            server_address_in(&member, both)
                .map(|t| t.resource_name)
                .as_deref(),
            Some("inst")
        );
    }

    /// Swarm's secondary masters: the parent reads their external address (null without
    /// floating IPs); the other address outputs are the fallbacks, ranked as a member's own
    /// outputs are (by how surely the name says address, then shorter first).
    #[test]
    fn the_other_address_outputs_are_the_fallbacks_best_first() {
        let outputs = json!({
            "swarm_master_external_ip": {}, "swarm_master_ip": {}, "OS::stack_id": {},
            "node_ips": {}, "name": {}
        });
        let outputs = outputs.as_object().expect("map");
        assert_eq!(
            fallback_outputs(outputs, "swarm_master_external_ip"),
            ["node_ips", "swarm_master_ip"]
        );
        let plan = AddressPlan {
            output_key: Some("swarm_master_external_ip".into()),
            fallback_keys: vec!["swarm_master_ip".into()],
            ..AddressPlan::default()
        };
        assert_eq!(
            plan.describe(),
            "member output 'swarm_master_external_ip' (where empty: 'swarm_master_ip')"
        );
    }

    #[test]
    fn the_aggregate_output_is_the_member_output_over_the_group() {
        let template = json!({"outputs": {
            "kube_minions_private": {"value": {"get_attr": ["kube_minions", "kube_minion_ip"]}},
            "kube_minions": {"value": {"get_attr": ["kube_minions", "kube_minion_external_ip"]}},
            "joined": {"value": {"list_join": [",", {"get_attr": ["kube_minions", "kube_minion_ip"]}]}},
            "by_name": {"value": {"get_attr": ["kube_minions", "attributes", "kube_minion_ip"]}},
            "asg": {"value": {"get_attr": ["pool", "outputs", "addr"]}},
            "asg_list": {"value": {"get_attr": ["pool", "outputs_list", "addr"]}}
        }});
        let mut rg = GroupShape {
            path: "kube_minions".into(),
            name: "kube_minions".into(),
            resource_type: "OS::Heat::ResourceGroup".into(),
            status: crate::model::Status::parse("CREATE_COMPLETE"),
            owner: StackRef {
                name: "c".into(),
                id: "c".into(),
            },
            stack: None,
            members: Vec::new(),
            updated_at: None,
        };
        // The keyed form wins over the list; a wrapped value (list_join) is no aggregate.
        assert_eq!(
            aggregate_output(&template, &rg, "kube_minion_ip"),
            Some(Aggregate {
                key: "by_name".into(),
                by_name: true
            })
        );
        let list_only = json!({"outputs": {
            "kube_minions_private": {"value": {"get_attr": ["kube_minions", "kube_minion_ip"]}}
        }});
        assert_eq!(
            aggregate_output(&list_only, &rg, "kube_minion_ip"),
            Some(Aggregate {
                key: "kube_minions_private".into(),
                by_name: false
            })
        );
        assert_eq!(aggregate_output(&list_only, &rg, "other"), None);
        // An AutoScalingGroup's list has no member order to trust; its map does.
        rg.name = "pool".into();
        rg.resource_type = "OS::Heat::AutoScalingGroup".into();
        assert_eq!(
            aggregate_output(&template, &rg, "addr"),
            Some(Aggregate {
                key: "asg".into(),
                by_name: true
            })
        );
    }
    use super::*;
    use crate::model::StackResource;
    use serde_json::json;

    fn sref(id: &str) -> StackRef {
        StackRef {
            name: format!("{id}-name"),
            id: id.into(),
        }
    }

    fn res(name: &str, rtype: &str, owner: &str, nested: Option<&str>) -> ResourceInfo {
        ResourceInfo {
            resource: StackResource {
                name: name.into(),
                logical_id: name.into(),
                physical_id: nested.map(str::to_string),
                resource_type: rtype.into(),
                status: Status::parse("CREATE_COMPLETE"),
                status_reason: None,
                updated_at: None,
                owner: Some(sref(owner)),
                nested: nested.map(sref),
                parent_resource: None,
                required_by: vec![],
            },
            created_at: None,
            attributes: None,
        }
    }

    #[test]
    fn every_group_is_found_none_preferred() {
        // Magnum's layout: two groups in the cluster stack, plus plain nested stacks.
        let root = sref("root");
        let listing = vec![
            res("network", "lib/network.yaml", "root", Some("net")),
            res("private_network", "OS::Neutron::Net", "net", None),
            res(
                "kube_masters",
                "OS::Heat::ResourceGroup",
                "root",
                Some("gm"),
            ),
            res(
                "kube_minions",
                "OS::Heat::ResourceGroup",
                "root",
                Some("gw"),
            ),
            res("0", "kubemaster.yaml", "gm", Some("m0")),
            res("1", "kubeminion.yaml", "gw", Some("w1")),
            res("0", "kubeminion.yaml", "gw", Some("w0")),
            res("10", "kubeminion.yaml", "gw", Some("w10")),
            res("2", "kubeminion.yaml", "gw", Some("w2")),
        ];
        let found = scan(&root, "", &listing);
        let paths: Vec<&str> = found.groups.iter().map(|(g, _)| g.path.as_str()).collect();
        assert_eq!(paths, vec!["kube_masters", "kube_minions"]);
        let workers = &found.groups[1];
        let names: Vec<&str> = workers.0.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec!["0", "1", "2", "10"]);
        // Member 0 stands for all: its subtree is listed next.
        assert_eq!(workers.1, Sample::Stack(sref("w0")));
        assert_eq!(found.nested, vec![(sref("net"), "network/".to_string())]);
    }

    #[test]
    fn a_member_stands_for_its_group() {
        let root = sref("root");
        let listing = vec![
            res("web", "OS::Heat::ResourceGroup", "root", Some("gw")),
            res("1", "OS::Nova::Server", "gw", None),
            res("0", "OS::Nova::Server", "gw", None),
            res("tokens", "OS::Heat::ResourceGroup", "root", Some("gt")),
            res("0", "OS::Heat::RandomString", "gt", None),
            res("racks", "OS::Heat::ResourceGroup", "root", Some("gr")),
            res("0", "rack.yaml", "gr", None),
            res("1", "rack.yaml", "gr", Some("r1")),
            res("empty", "OS::Heat::ResourceGroup", "root", Some("ge")),
        ];
        let found = scan(&root, "up/", &listing);
        let samples: Vec<(&str, &Sample)> = found
            .groups
            .iter()
            .map(|(g, s)| (g.path.as_str(), s))
            .collect();
        assert_eq!(
            samples,
            vec![
                ("up/web", &Sample::Server),
                ("up/tokens", &Sample::Nothing),
                // Rack 0 failed before its stack existed: rack 1 stands for all.
                ("up/racks", &Sample::Stack(sref("r1"))),
                ("up/empty", &Sample::Nothing),
            ]
        );
    }

    #[test]
    fn a_group_stack_named_directly_is_its_own_group() {
        let gs = sref("gs");
        let listing = vec![
            res("1", "node.yaml", "gs", Some("n1")),
            res("0", "node.yaml", "gs", Some("n0")),
            res("server", "OS::Heat::None", "n0", None),
        ];
        let g = stack_as_group(&gs, &listing).expect("a group");
        assert_eq!(g.members.len(), 2);
        assert_eq!(g.members[0].name, "0");
        // A plain stack with mixed resources is not a group.
        let plain = vec![
            res("a", "node.yaml", "gs", Some("n1")),
            res("b", "OS::Heat::None", "gs", None),
        ];
        assert!(stack_as_group(&gs, &plain).is_none());
    }

    #[test]
    fn parent_outputs_name_the_member_output() {
        // As in Magnum's kubecluster.yaml.
        let t = json!({"outputs": {
            "api_address": {"value": {"str_replace": {"template": "https://x", "params": {"x": {"get_attr": ["api_lb", "address"]}}}}},
            "kube_masters_private": {"value": {"get_attr": ["kube_masters", "kube_master_ip"]}},
            "kube_masters": {"value": {"get_attr": ["kube_masters", "kube_master_external_ip"]}},
            "kube_minions_private": {"value": {"get_attr": ["kube_minions", "kube_minion_ip"]}},
            "kube_minions": {"value": {"get_attr": ["kube_minions", "kube_minion_external_ip"]}},
            "refs": {"value": {"get_attr": ["kube_minions", "refs"]}},
            "asg": {"value": {"get_attr": ["pool", "outputs_list", "addr"]}},
            "one": {"value": {"get_attr": ["kube_minions", "resource.0.kube_minion_ip"]}}
        }});
        let read = member_attrs_read_by_parent(&t, "kube_minions");
        let mut sorted = read.clone();
        sorted.sort();
        assert_eq!(sorted, vec!["kube_minion_external_ip", "kube_minion_ip"]);
        assert_eq!(member_attrs_read_by_parent(&t, "pool"), vec!["addr"]);
        let member = ["kube_minion_ip", "kube_minion_external_ip", "OS::stack_id"];
        assert_eq!(
            choose_output(&read, &member).as_deref(),
            Some("kube_minion_ip")
        );
        // The parent reading an output the members do not have does not count.
        assert_eq!(
            choose_output(&["nope_ip".into()], &member).as_deref(),
            Some("kube_minion_ip")
        );
        // Nothing says address: nothing chosen.
        assert_eq!(choose_output(&[], &["name", "OS::stack_id"]), None);
    }

    #[test]
    fn get_attr_paths_are_read() {
        let v = json!({"get_attr": ["kube_minion_eth0", "fixed_ips", 0, "ip_address"]});
        assert_eq!(
            direct_get_attr(&v),
            Some((
                "kube_minion_eth0".to_string(),
                "fixed_ips".to_string(),
                vec![PathStep::Index(0), PathStep::Key("ip_address".into())]
            ))
        );
        assert_eq!(direct_get_attr(&json!({"list_join": [",", []]})), None);
        let fixed = json!([{"subnet_id": "s", "ip_address": "10.0.0.5"}]);
        let path = [PathStep::Index(0), PathStep::Key("ip_address".into())];
        assert_eq!(
            value_at(&fixed, &path).unwrap().as_ref(),
            &json!("10.0.0.5")
        );
        let text = json!("{\"net\": {\"ip\": \"10.1.0.3\"}}");
        let path = [PathStep::Key("net".into()), PathStep::Key("ip".into())];
        assert_eq!(value_at(&text, &path).unwrap().as_ref(), &json!("10.1.0.3"));
    }

    #[test]
    fn hop_listings_map_deep_stacks_to_members() {
        let members: HashMap<String, String> = [
            ("m0".to_string(), "0".to_string()),
            ("m1".to_string(), "1".to_string()),
        ]
        .into();
        let hop1 = vec![
            res("inner", "inner.yaml", "m0", Some("i0")),
            res("inner", "inner.yaml", "m1", Some("i1")),
        ];
        let hop2 = vec![res("deeper", "deeper.yaml", "i1", Some("d1"))];
        let map = member_of_stacks(&members, &[hop1, hop2]);
        assert_eq!(map.get("d1").map(String::as_str), Some("1"));
        assert_eq!(map.len(), 1);
    }
}
