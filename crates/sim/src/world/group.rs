//! Node-group dynamics: a ResourceGroup whose members are nested stacks (`server` +
//! `address`). Members are created, updated (batch by batch when a rolling update asks for
//! it), paused on hooks and deleted as simulated time passes, emitting the events real
//! Heat emits: for each member its resource in the group stack, its own nested stack and
//! its `server`; then the group stack, the `nodes` resource and the node-group stack.

use super::{
    completed, started, Action, Resource, ServerRef, Stack, StackRole, State, Status, World,
    STATE_CHANGED,
};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// A hook registered in the environment for members whose name matches `pattern`
/// (fnmatch-style `*`, `?`, `[...]`, as Heat's resource_registry does).
#[derive(Debug, Clone, PartialEq)]
pub struct HookRule {
    pub pattern: String,
    pub hooks: Vec<String>,
}

/// How a member fails when it is created or updated: Heat words it
/// `{class}: {path to the server}: {message}` at every level.
#[derive(Debug, Clone, PartialEq)]
pub struct FailSpec {
    pub class: String,
    pub message: String,
    /// What Nova reports as the server's fault.
    pub nova_fault: String,
}

impl FailSpec {
    /// A Nova server that goes to ERROR (e.g. "No valid host was found.").
    pub fn nova(reason: &str) -> FailSpec {
        FailSpec {
            class: "ResourceInError".into(),
            message: format!("Went to status ERROR due to \"Message: {reason}, Code: 500\""),
            nova_fault: reason.into(),
        }
    }
    /// OS::Heat::TestResource with `fail: true` (caldera's test templates, `node_fail_index`).
    pub fn test_resource() -> FailSpec {
        FailSpec {
            class: "ValueError".into(),
            message: "Test Resource failed server".into(),
            nova_fault: "Test Resource failed server".into(),
        }
    }
    fn at(&self, path: &str) -> String {
        format!("{}: {path}: {}", self.class, self.message)
    }
}

/// Which template a group's stack was made from: the names of its parameters, of the group
/// resource, of each member's resources and outputs. caldera's own templates (`templates/`)
/// hold one group `nodes` per node-group stack; Magnum's Heat driver (k8s_fedora_coreos_v1,
/// `kubecluster.yaml`) holds the masters (`kube_masters`, members from `kubemaster.yaml`) and
/// the workers (`kube_minions`, members from `kubeminion.yaml`) of its default node groups in
/// the one cluster stack, and gives each later node group a stack of its own from the same
/// template with only the group of its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Caldera,
    MagnumMasters,
    MagnumMinions,
}

impl Layout {
    /// For a Magnum node group of `role`.
    pub fn magnum(role: &str) -> Layout {
        if role == "master" {
            Layout::MagnumMasters
        } else {
            Layout::MagnumMinions
        }
    }
    pub fn is_magnum(self) -> bool {
        self != Layout::Caldera
    }
    /// The ResourceGroup's name in its stack.
    pub fn resource(self) -> &'static str {
        match self {
            Layout::Caldera => "nodes",
            Layout::MagnumMasters => "kube_masters",
            Layout::MagnumMinions => "kube_minions",
        }
    }
    /// The stack parameter a logical key (`count`, `image`) is read from.
    pub fn key(self, logical: &str) -> &str {
        match (self, logical) {
            (Layout::MagnumMasters, "count") => "number_of_masters",
            (Layout::MagnumMinions, "count") => "number_of_minions",
            (Layout::MagnumMasters, "image") => "master_image",
            (Layout::MagnumMinions, "image") => "minion_image",
            (Layout::MagnumMasters, "flavor") => "master_flavor",
            (Layout::MagnumMinions, "flavor") => "minion_flavor",
            (_, other) => other,
        }
    }
    /// The parameter naming members to remove: a list of removal policies (caldera), a
    /// list of members (Magnum's `minions_to_remove`), none (Magnum's masters).
    pub fn removal_key(self) -> Option<&'static str> {
        match self {
            Layout::Caldera => Some("removal_policies"),
            Layout::MagnumMinions => Some("minions_to_remove"),
            Layout::MagnumMasters => None,
        }
    }
    /// The member's machine.
    pub fn server(self) -> &'static str {
        match self {
            Layout::Caldera => "server",
            Layout::MagnumMasters => "kube-master",
            Layout::MagnumMinions => "kube-minion",
        }
    }
    /// The member's address resource and its type.
    pub fn address(self) -> (&'static str, &'static str) {
        match self {
            Layout::Caldera => ("address", "OS::Heat::Value"),
            Layout::MagnumMasters => ("kube_master_eth0", "OS::Neutron::Port"),
            Layout::MagnumMinions => ("kube_minion_eth0", "OS::Neutron::Port"),
        }
    }
    /// The member's floating IP resource (Magnum's, when the cluster has floating IPs).
    pub fn floating(self) -> Option<&'static str> {
        match self {
            Layout::Caldera => None,
            Layout::MagnumMasters => Some("kube_master_floating"),
            Layout::MagnumMinions => Some("kube_minion_floating"),
        }
    }
    /// Whether Heat makes the address resource before the server: Magnum's server takes its
    /// port (`networks: [{port: {get_resource: kube_minion_eth0}}]`), so the port comes
    /// first; caldera's address is a Value reading the server's networks, so it comes after.
    pub fn address_first(self) -> bool {
        !matches!(self, Layout::Caldera)
    }
    /// The member resource's type in the group's nested stack.
    pub fn member_type(self) -> &'static str {
        match self {
            Layout::Caldera => "Caldera::Node",
            Layout::MagnumMasters => "kubemaster.yaml",
            Layout::MagnumMinions => "kubeminion.yaml",
        }
    }
    /// A member stack's outputs, in the template's order.
    pub fn member_outputs(self) -> &'static [&'static str] {
        match self {
            Layout::Caldera => &["image", "name", "server_id", "ip"],
            Layout::MagnumMasters => &["OS::stack_id", "kube_master_ip", "kube_master_external_ip"],
            Layout::MagnumMinions => &["kube_minion_ip", "kube_minion_external_ip", "OS::stack_id"],
        }
    }
    /// The group stack's aggregate outputs of this group: (private, public) addresses.
    pub fn stack_outputs(self) -> Option<(&'static str, &'static str)> {
        match self {
            Layout::Caldera => None,
            Layout::MagnumMasters => Some(("kube_masters_private", "kube_masters")),
            Layout::MagnumMinions => Some(("kube_minions_private", "kube_minions")),
        }
    }
    /// `%index%` names: Magnum's `{stack}-master-N` / `{stack}-node-N`.
    fn server_name(self, stack_name: &str, cluster: &str, group: &str, i: u32) -> String {
        match self {
            Layout::Caldera => format!("{cluster}-{group}-{i}"),
            Layout::MagnumMasters => format!("{stack_name}-master-{i}"),
            Layout::MagnumMinions => format!("{stack_name}-node-{i}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Idle,
    /// Queued in the current rolling update, waiting for its batch.
    Pending(Action),
    /// Scheduled to start at `at`: Heat starts the leaves of a traversal one per second
    /// (stock leaf delay), in no particular order.
    Starting {
        action: Action,
        at: i64,
        hooks: bool,
    },
    /// Waiting for a hook (`pre-create`, `pre-update`, `pre-delete`) to be cleared.
    Paused(Action, &'static str),
    Running {
        action: Action,
        due: i64,
    },
    Failed(Action),
}

#[derive(Debug, Clone)]
pub struct Member {
    pub stack: usize,
    pub server_id: String,
    pub server_name: String,
    pub ip: String,
    pub image: String,
    pub created_ms: i64,
    pub phase: Phase,
    pub since_ms: i64,
    pub fault: Option<String>,
    /// A Cluster API cluster's machine being replaced: the machine taking its place.
    pub replacement: Option<Replacement>,
}

/// The machine Cluster API creates to replace a member's during a rolling update
/// (a MachineDeployment's default strategy is maxSurge 1, maxUnavailable 0; a
/// KubeadmControlPlane's rollout surges one machine too): a new Machine, so a new Nova
/// server with a new name, is created first; once its server is ACTIVE the old Machine is
/// deleted (its server shows the task `deleting`), and only then does the member *become*
/// the new machine. Heat's rolling update instead updates the same server in place.
#[derive(Debug, Clone)]
pub struct Replacement {
    pub server_id: String,
    pub server_name: String,
    pub ip: String,
    pub image: String,
    pub created_ms: i64,
    pub since_ms: i64,
    /// The new server is ACTIVE: the old one is being deleted.
    pub ready: bool,
    /// Nova's fault when the new server went to ERROR.
    pub fault: Option<String>,
}

#[derive(Debug, Clone)]
pub struct GroupOp {
    /// The node-group stack's action (CREATE, UPDATE or ROLLBACK).
    pub action: Action,
    /// Members per batch for image updates; 0 updates every member at once.
    pub batch: usize,
    pub queue: VecDeque<u32>,
    /// Members of the current batch (and creates/deletes), running or paused.
    pub active: BTreeSet<u32>,
    pub target_image: String,
    /// Parameters before the update, restored by a rollback.
    pub previous_params: BTreeMap<String, String>,
    pub failed: Option<String>,
    /// When the next scheduled member may start (see `Phase::Starting`).
    pub next_start: i64,
}

#[derive(Debug, Clone)]
pub struct Group {
    pub uuid: String,
    pub name: String,
    pub role: String,
    pub is_default: bool,
    pub cluster: Option<usize>,
    pub layout: Layout,
    /// The stack holding the group resource (`layout.resource()`); Magnum's default groups
    /// share theirs, the cluster stack.
    pub ng_stack: usize,
    pub rg_stack: usize,
    pub flavor: String,
    pub zone: String,
    pub min_count: u32,
    pub max_count: Option<u32>,
    pub labels: BTreeMap<String, String>,
    pub version: String,
    pub created_ms: i64,
    pub members: BTreeMap<u32, Member>,
    /// Names removed through removal_policies: never reused, as in Heat.
    pub blacklist: BTreeSet<u32>,
    pub hooks: Vec<HookRule>,
    /// Injected faults: members that fail create/update, members that never finish.
    pub fail: HashMap<u32, FailSpec>,
    pub stuck: BTreeSet<u32>,
    pub ip_base: u32,
    pub next_ip: u32,
    pub op: Option<GroupOp>,
    /// The stack parameter its members' image reads when the template gives it another
    /// group's (Magnum's layout edited so masters and minions boot one image parameter:
    /// an update of it changes both groups); `None`: its layout's own.
    pub image_param: Option<String>,
}

impl Group {
    pub fn image(&self, w: &World) -> String {
        w.stack(self.ng_stack)
            .and_then(|s| s.params.get(self.image_key()).cloned())
            .unwrap_or_default()
    }

    /// The stack parameter its members' image reads.
    pub fn image_key(&self) -> &str {
        self.image_param
            .as_deref()
            .unwrap_or(self.layout.key("image"))
    }

    pub fn hook_for(&self, member: u32, hook: &str) -> bool {
        let name = member.to_string();
        self.hooks
            .iter()
            .any(|h| h.hooks.iter().any(|x| x == hook) && fnmatch(&h.pattern, &name))
    }

    pub fn ips(&self) -> Vec<String> {
        self.members.values().map(|m| m.ip.clone()).collect()
    }
}

/// What an update asks of a node group, already merged with the existing parameters.
#[derive(Debug, Clone)]
pub struct UpdateRequest {
    pub params: BTreeMap<String, String>,
    pub hooks: Option<Vec<HookRule>>,
    pub action: Action,
}

/// fnmatch as Heat's registry uses it for resource names.
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    fn rec(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|i| rec(&p[1..], &n[i..])),
            Some('?') => !n.is_empty() && rec(&p[1..], &n[1..]),
            Some('[') => {
                let Some(end) = p.iter().position(|c| *c == ']') else {
                    return n.first() == Some(&'[') && rec(&p[1..], &n[1..]);
                };
                let Some(c) = n.first() else { return false };
                let set = &p[1..end];
                let (neg, set) = match set.first() {
                    Some('!') => (true, &set[1..]),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= *c && *c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == *c;
                        i += 1;
                    }
                }
                hit != neg && rec(&p[end + 1..], &n[1..])
            }
            Some(c) => n.first() == Some(c) && rec(&p[1..], &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    rec(&p, &n)
}

/// Parses hook rules for the group `resource` (`nodes`, `kube_minions`...) out of a Heat
/// environment.
pub fn hooks_from_env(env: &serde_json::Value, resource: &str) -> Vec<HookRule> {
    let mut out = Vec::new();
    let Some(nodes) = env
        .get("resource_registry")
        .and_then(|r| r.get("resources"))
        .and_then(|r| r.get(resource))
        .and_then(|v| v.as_object())
    else {
        return out;
    };
    for (pattern, def) in nodes {
        let hooks = match def.get("hooks") {
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            _ => continue,
        };
        out.push(HookRule {
            pattern: pattern.clone(),
            hooks,
        });
    }
    out
}

/// Members named for removal by the group's parameters: caldera's `removal_policies` (a
/// JSON list of `{resource_list: [...]}`) or Magnum's `minions_to_remove` (a list parameter
/// feeding `removal_policies: [{resource_list: ...}]`, given as JSON or comma-separated).
/// Entries may be member names or refs (member stack ids, Magnum's server ids from
/// `OS::stack_id`), or server names.
pub fn removal_from(
    w: &World,
    g: usize,
    params: &BTreeMap<String, String>,
) -> Result<Vec<u32>, String> {
    let layout = w.groups[g].layout;
    let Some(key) = layout.removal_key() else {
        return Ok(Vec::new());
    };
    let raw = params.get(key).map(String::as_str).unwrap_or("").trim();
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let items: Vec<String> = if layout == Layout::Caldera {
        let v: serde_json::Value =
            serde_json::from_str(raw).map_err(|e| format!("Invalid removal_policies: {e}"))?;
        v.as_array()
            .into_iter()
            .flatten()
            .flat_map(|pol| {
                pol.get("resource_list")
                    .and_then(|l| l.as_array())
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|item| scalar(&item))
            .collect()
    } else {
        match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(serde_json::Value::Array(a)) => a.iter().filter_map(scalar).collect(),
            _ => raw
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        }
    };
    let mut out = Vec::new();
    for s in items {
        if let Ok(i) = s.parse::<u32>() {
            out.push(i);
        } else if let Some((i, _)) = w.groups[g].members.iter().find(|(_, m)| {
            w.stack(m.stack).map(|st| st.id == s).unwrap_or(false)
                || m.server_id == s
                || m.server_name == s
        }) {
            out.push(*i);
        }
    }
    Ok(out)
}

fn scalar(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn stack_ref(w: &World, ix: usize) -> String {
    w.stack(ix)
        .map(|s| format!("{}/{}", s.name, s.id))
        .unwrap_or_default()
}

/// Adds member `i` (its resource in the group stack, its nested stack and server) in INIT state.
pub fn add_member(w: &mut World, g: usize, i: u32) {
    let now = w.now();
    let rg = w.groups[g].rg_stack;
    let rg_name = w.stack(rg).map(|s| s.name.clone()).unwrap_or_default();
    let suffix = w.ids.suffix();
    let stack_name = format!("{rg_name}-{i}-{suffix}");
    let stack_id = w.ids.uuid();
    let server_id = w.ids.uuid();
    let addr_suffix = w.ids.suffix();
    let ip_n = w.groups[g].ip_base + w.groups[g].next_ip;
    w.groups[g].next_ip += 1;
    let ip = std::net::Ipv4Addr::from(ip_n).to_string();
    let image = w.groups[g].image(w);
    let layout = w.groups[g].layout;
    let cluster_name = w.groups[g]
        .cluster
        .map(|c| w.clusters[c].name.clone())
        .unwrap_or_else(|| "node".into());
    let ng_name = w
        .stack(w.groups[g].ng_stack)
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let server_name = match super::capi::server_name(w, g) {
        Some(name) => name,
        None => layout.server_name(&ng_name, &cluster_name, &w.groups[g].name, i),
    };
    let init = Status::new(Action::Init, State::Complete);
    let t_server = w.intern("OS::Nova::Server");
    let (address, address_type) = layout.address();
    let t_address = w.intern(address_type);
    let t_member = w.intern(layout.member_type());
    let n_server = w.intern(layout.server());
    let n_address = w.intern(address);
    let name_i = w.intern(&i.to_string());
    let mut params = BTreeMap::new();
    params.insert("OS::stack_id".to_string(), stack_id.clone());
    params.insert("OS::project_id".to_string(), w.cfg.project_id.clone());
    params.insert("OS::stack_name".to_string(), stack_name.clone());
    params.insert("name".to_string(), server_name.clone());
    if layout.is_magnum() {
        params.insert("server_image".to_string(), image.clone());
        params.insert("nodegroup_name".to_string(), w.groups[g].name.clone());
        params.insert("nodegroup_role".to_string(), w.groups[g].role.clone());
    } else {
        params.insert("image".to_string(), image.clone());
        params.insert("index".to_string(), i.to_string());
        let fail_index = w
            .stack(w.groups[g].ng_stack)
            .and_then(|s| s.params.get("node_fail_index").cloned());
        params.insert(
            "fail_index".to_string(),
            fail_index.unwrap_or_else(|| "-1".into()),
        );
        params.insert("action_wait_secs".to_string(), "0".to_string());
    }
    let res = |name: &std::sync::Arc<str>,
               t: &std::sync::Arc<str>,
               phys: String,
               value: Option<String>| Resource {
        name: name.clone(),
        rtype: t.clone(),
        physical_id: phys,
        status: init,
        reason: String::new(),
        created_ms: now,
        updated_ms: now,
        nested: None,
        required_by: vec![],
        value,
        description: "",
    };
    // caldera's address is an OS::Heat::Value named after the member stack; Magnum's is a
    // Neutron port (a uuid) whose `fixed_ips` hold it.
    let address_id = if layout.is_magnum() {
        w.ids.uuid()
    } else {
        format!("{stack_name}-address-{addr_suffix}")
    };
    let address_value = (!layout.is_magnum()).then(|| ip.clone());
    // Magnum's floating IP on the member's port, where the cluster has them.
    let floating = match (layout.floating(), w.cfg.floating_ips) {
        (Some(name), true) => Some((
            w.intern(name),
            w.intern("OS::Neutron::FloatingIP"),
            w.ids.uuid(),
        )),
        _ => None,
    };
    let (description, member_outputs) = match layout {
        Layout::Caldera => ("caldera node: one machine and its address.", "No description given"),
        Layout::MagnumMasters => ("This is a nested stack that defines a single Kubernetes master, This stack is included by an ResourceGroup resource in the parent template (kubecluster.yaml).", ""),
        Layout::MagnumMinions => ("This is a nested stack that defines a single Kubernetes minion, This stack is included by an AutoScalingGroup resource in the parent template (kubecluster.yaml).", ""),
    };
    let member_stack = Stack {
        id: stack_id.clone(),
        name: stack_name.clone(),
        parent: Some(rg),
        owner_resource: Some(name_i.clone()),
        status: init,
        reason: String::new(),
        created_ms: now,
        updated_ms: None,
        deleted_ms: None,
        params,
        hidden_params: Default::default(),
        param_types: Default::default(),
        description: description.into(),
        tags: vec![],
        disable_rollback: true,
        timeout_mins: None,
        environment: serde_json::json!({}),
        previous_environment: None,
        resources: vec![
            res(&n_server, &t_server, server_id.clone(), None),
            res(&n_address, &t_address, address_id, address_value),
        ]
        .into_iter()
        .chain(floating.map(|(n, t, id)| res(&n, &t, id, None)))
        .collect(),
        events: Default::default(),
        // The member template's outputs, in Heat's order; caldera's node.yaml has no
        // descriptions (Heat's default text), Magnum's are described.
        outputs: layout
            .member_outputs()
            .iter()
            .map(|key| super::Output {
                key,
                description: if member_outputs.is_empty() {
                    member_output_description(key)
                } else {
                    member_outputs
                },
            })
            .collect(),
        role: StackRole::Member(g, i),
    };
    let mix = w.add_stack(member_stack);
    if let Some(st) = w.stack_mut(rg) {
        let mut r = res(&name_i, &t_member, stack_id, None);
        r.nested = Some(mix);
        // Keep the group's resources in member order, like the refs list.
        let pos = st
            .resources
            .iter()
            .position(|x| x.name.parse::<u32>().map(|n| n > i).unwrap_or(false));
        match pos {
            Some(p) => st.resources.insert(p, r),
            None => st.resources.push(r),
        }
    }
    w.register_server(
        &server_id,
        ServerRef {
            group: g,
            index: i,
            created_ms: now,
        },
    );
    w.groups[g].members.insert(
        i,
        Member {
            stack: mix,
            server_id,
            server_name,
            ip,
            image,
            created_ms: now,
            phase: Phase::Idle,
            since_ms: now,
            fault: None,
            replacement: None,
        },
    );
}

/// Whether group `g` belongs to a cluster run by Cluster API: its members are machines that
/// a change of image replaces instead of rebuilding.
pub fn replaces_machines(w: &World, g: usize) -> bool {
    w.groups[g]
        .cluster
        .and_then(|c| w.clusters.get(c))
        .is_some_and(|c| c.capi.is_some())
}

/// Creates the machine that replaces member `i` (see [`Replacement`]): a new server, in the
/// group's current MachineSet (its name) and with the update's image. A replacement left
/// from a failed attempt is deleted first, as Cluster API deletes a failed Machine.
fn start_replacement(w: &mut World, g: usize, i: u32) {
    let now = w.now();
    let stale = w.groups[g]
        .members
        .get_mut(&i)
        .and_then(|m| m.replacement.take());
    if let Some(r) = stale {
        w.unregister_server(&r.server_id);
    }
    let image = match w.groups[g].op.as_ref() {
        Some(op) if !op.target_image.is_empty() => op.target_image.clone(),
        _ => w.groups[g].image(w),
    };
    let server_id = w.ids.uuid();
    let server_name = super::capi::server_name(w, g).unwrap_or_else(|| server_id.clone());
    let ip_n = w.groups[g].ip_base + w.groups[g].next_ip;
    w.groups[g].next_ip += 1;
    w.register_server(
        &server_id,
        ServerRef {
            group: g,
            index: i,
            created_ms: now,
        },
    );
    if let Some(m) = w.groups[g].members.get_mut(&i) {
        m.replacement = Some(Replacement {
            server_id,
            server_name,
            ip: std::net::Ipv4Addr::from(ip_n).to_string(),
            image,
            created_ms: now,
            since_ms: now,
            ready: false,
            fault: None,
        });
    }
}

/// The second step of a replacement: the new server is ACTIVE; the old Machine is deleted
/// (a quarter of a create, as the engine deletes members). `false` when there is nothing
/// left to wait for (the old server is gone: adopt the new one).
fn replacement_built(w: &mut World, g: usize, i: u32) -> bool {
    let now = w.now();
    let ready = w.groups[g]
        .members
        .get(&i)
        .and_then(|m| m.replacement.as_ref())
        .map(|r| r.ready);
    if ready != Some(false) {
        return false;
    }
    let d = match action_wait_ms(w, g) {
        Some(ms) => ms / 4,
        None => w
            .ids
            .lognormal_ms(w.cfg.create_median_ms / 4.0, w.cfg.duration_sigma),
    };
    if let Some(m) = w.groups[g].members.get_mut(&i) {
        if let Some(r) = m.replacement.as_mut() {
            r.ready = true;
            r.since_ms = now;
        }
        m.phase = Phase::Running {
            action: Action::Update,
            due: now + d.max(1),
        };
        m.since_ms = now;
    }
    true
}

/// The old server is gone: member `i` is now the machine that replaced it.
fn adopt_replacement(w: &mut World, g: usize, i: u32) {
    let server = w.groups[g].layout.server();
    let Some(m) = w.groups[g].members.get_mut(&i) else {
        return;
    };
    let Some(r) = m.replacement.take() else {
        return;
    };
    let old = std::mem::replace(&mut m.server_id, r.server_id.clone());
    m.server_name = r.server_name;
    m.ip = r.ip;
    m.image = r.image;
    m.created_ms = r.created_ms;
    let mstack = m.stack;
    w.unregister_server(&old);
    if let Some(st) = w.stack_mut(mstack) {
        if let Some(res) = st.resources.iter_mut().find(|x| &*x.name == server) {
            res.physical_id = r.server_id;
        }
    }
}

/// Magnum's member output descriptions (kubemaster.yaml / kubeminion.yaml).
fn member_output_description(key: &str) -> &'static str {
    match key {
        "OS::stack_id" => "This is the Nova server id of the node.",
        "kube_master_ip" => "This is the \"private\" IP address of the Kubernetes master node.",
        "kube_minion_ip" => "This is the \"public\" IP address of the Kubernetes minion node.",
        _ => "This is the \"public\" IP address of the Kubernetes node.",
    }
}

fn hook_name(action: Action) -> &'static str {
    match action {
        Action::Create => "pre-create",
        Action::Delete => "pre-delete",
        _ => "pre-update",
    }
}

/// Starts work on a member, pausing first if a hook matches it.
fn begin(w: &mut World, g: usize, i: u32, action: Action, hooks_apply: bool) {
    let hook = hook_name(action);
    if hooks_apply && w.groups[g].hook_for(i, hook) {
        let now = w.now();
        let rg = w.groups[g].rg_stack;
        let name = i.to_string();
        // The paused event carries the resource's state from before the action, like Heat.
        let cur = w
            .stack(rg)
            .and_then(|s| s.resource(&name))
            .map(|r| r.status);
        let status = cur.unwrap_or(Status::new(Action::Init, State::Complete));
        w.emit(
            rg,
            Some(&name),
            status,
            format!("{} paused until Hook {} is cleared", action.as_str(), hook),
        );
        if let Some(m) = w.groups[g].members.get_mut(&i) {
            m.phase = Phase::Paused(action, hook);
            m.since_ms = now;
        }
        return;
    }
    run(w, g, i, action);
}

fn run(w: &mut World, g: usize, i: u32, action: Action) {
    let now = w.now();
    let rg = w.groups[g].rg_stack;
    let Some(m) = w.groups[g].members.get(&i) else {
        return;
    };
    let mstack = m.stack;
    let name = i.to_string();
    let ip = Status::new(action, State::InProgress);
    w.set_resource_status(rg, &name, ip, STATE_CHANGED);
    w.set_stack_status(mstack, ip, started(action));
    let layout = w.groups[g].layout;
    if action == Action::Create && layout.address_first() {
        create_address(w, mstack, layout);
    }
    w.set_resource_status(mstack, layout.server(), ip, STATE_CHANGED);
    let replace = action == Action::Update && replaces_machines(w, g);
    if replace {
        start_replacement(w, g, i);
    }
    let (median, sigma) = match action {
        Action::Create => (w.cfg.create_median_ms, w.cfg.duration_sigma),
        // Cluster API's update is a new machine: as long as a create.
        Action::Update if replace => (w.cfg.create_median_ms, w.cfg.duration_sigma),
        Action::Delete => (w.cfg.create_median_ms / 4.0, w.cfg.duration_sigma),
        _ => (w.cfg.update_median_ms, w.cfg.duration_sigma),
    };
    // A template's fixed `action_wait_secs` (caldera's test machines) wins over the
    // simulated spread, as the TestResource it stands for waits exactly that long.
    let d = match action_wait_ms(w, g) {
        Some(ms) => ms,
        None => w.ids.lognormal_ms(median, sigma),
    };
    // A stuck member hangs once (like a resource whose engine died); a retry can finish.
    let stuck = action != Action::Delete && w.groups[g].stuck.remove(&i);
    let due = if stuck { i64::MAX } else { now + d };
    if let Some(m) = w.groups[g].members.get_mut(&i) {
        m.phase = Phase::Running { action, due };
        m.since_ms = now;
    }
}

/// The member's address resource goes through its create (a port or a Value: instant).
fn create_address(w: &mut World, mstack: usize, layout: Layout) {
    let address = layout.address().0;
    let ip = Status::new(Action::Create, State::InProgress);
    w.set_resource_status(mstack, address, ip, STATE_CHANGED);
    let done = Status::new(Action::Create, State::Complete);
    w.set_resource_status(mstack, address, done, STATE_CHANGED);
    // The floating IP is associated with the port as soon as the port is there.
    if let Some(floating) = layout.floating() {
        w.set_resource_status(mstack, floating, ip, STATE_CHANGED);
        w.set_resource_status(mstack, floating, done, STATE_CHANGED);
    }
}

/// The node group stack's `action_wait_secs` parameter in ms, when set and positive.
fn action_wait_ms(w: &World, g: usize) -> Option<i64> {
    let secs: i64 = w
        .stack(w.groups[g].ng_stack)?
        .params
        .get("action_wait_secs")?
        .trim()
        .parse()
        .ok()?;
    (secs > 0).then(|| secs.saturating_mul(1000))
}

fn finish(w: &mut World, g: usize, i: u32, action: Action) {
    let now = w.now();
    let rg = w.groups[g].rg_stack;
    let Some(m) = w.groups[g].members.get(&i) else {
        return;
    };
    let mstack = m.stack;
    let server_id = m.server_id.clone();
    let surge = m.replacement.as_ref().map(|r| r.server_id.clone());
    let name = i.to_string();
    let a = action.as_str();
    let failing = w.groups[g].fail.contains_key(&i);
    if action == Action::Update && !failing && replacement_built(w, g, i) {
        return;
    }
    if action == Action::Delete {
        if let Some(id) = surge {
            w.unregister_server(&id);
        }
        let done = Status::new(Action::Delete, State::Complete);
        w.set_resource_status(mstack, w.groups[g].layout.server(), done, STATE_CHANGED);
        w.set_stack_status(mstack, done, completed(Action::Delete));
        w.set_resource_status(rg, &name, done, STATE_CHANGED);
        if let Some(st) = w.stack_mut(rg) {
            st.resources.retain(|r| *r.name != *name);
        }
        w.remove_stack(mstack);
        w.unregister_server(&server_id);
        w.groups[g].members.remove(&i);
        return;
    }
    if let Some(spec) = w.groups[g].fail.get(&i).cloned() {
        let failed = Status::new(action, State::Failed);
        let server = w.groups[g].layout.server();
        let server_reason = spec.at(&format!("resources.{server}"));
        w.set_resource_status(mstack, w.groups[g].layout.server(), failed, &server_reason);
        w.set_stack_status(
            mstack,
            failed,
            format!("Resource {a} failed: {server_reason}"),
        );
        let member_reason = spec.at(&format!("resources[{i}].resources.{server}"));
        w.set_resource_status(rg, &name, failed, &member_reason);
        if let Some(m) = w.groups[g].members.get_mut(&i) {
            m.phase = Phase::Failed(action);
            m.since_ms = now;
            // A replacement that fails is the new server in ERROR; the old one stands.
            match m.replacement.as_mut() {
                Some(r) => {
                    r.fault = Some(spec.nova_fault.clone());
                    r.since_ms = now;
                }
                None => m.fault = Some(spec.nova_fault.clone()),
            }
        }
        fail_op(w, g, i, &spec);
        return;
    }
    adopt_replacement(w, g, i);
    let done = Status::new(action, State::Complete);
    w.set_resource_status(mstack, w.groups[g].layout.server(), done, STATE_CHANGED);
    let layout = w.groups[g].layout;
    if action == Action::Create && !layout.address_first() {
        create_address(w, mstack, layout);
    }
    w.set_stack_status(mstack, done, completed(action));
    w.set_resource_status(rg, &name, done, STATE_CHANGED);
    let target = w.groups[g].op.as_ref().map(|o| o.target_image.clone());
    if let Some(m) = w.groups[g].members.get_mut(&i) {
        m.phase = Phase::Idle;
        m.since_ms = now;
        m.fault = None;
        if let Some(t) = target {
            m.image = t.clone();
        }
    }
    if let Some(t) = w.groups[g].op.as_ref().map(|o| o.target_image.clone()) {
        let key = if w.groups[g].layout.is_magnum() {
            "server_image"
        } else {
            "image"
        };
        if let Some(st) = w.stack_mut(mstack) {
            st.params.insert(key.into(), t);
        }
    }
}

/// The first member failure fails the group stack, the `nodes` resource and the
/// node-group stack at once (Heat does not wait for the other members).
fn fail_op(w: &mut World, g: usize, i: u32, spec: &FailSpec) {
    let Some(op) = w.groups[g].op.as_mut() else {
        return;
    };
    if op.failed.is_some() {
        return;
    }
    op.failed = Some(spec.message.clone());
    let action = op.action;
    let nested_action = if action == Action::Rollback {
        Action::Update
    } else {
        action
    };
    let (rg, ng) = (w.groups[g].rg_stack, w.groups[g].ng_stack);
    let (group, server) = (w.groups[g].layout.resource(), w.groups[g].layout.server());
    let inner = spec.at(&format!("resources[{i}].resources.{server}"));
    let a = nested_action.as_str();
    w.set_stack_status(
        rg,
        Status::new(nested_action, State::Failed),
        format!("Resource {a} failed: {inner}"),
    );
    let nodes_reason = spec.at(&format!(
        "resources.{group}.resources[{i}].resources.{server}"
    ));
    w.set_resource_status(
        ng,
        group,
        Status::new(nested_action, State::Failed),
        &nodes_reason,
    );
    // A stack holding several groups fails once, with the first member failure.
    let already = w.stack(ng).is_some_and(|s| s.status.state == State::Failed);
    if !already {
        w.set_stack_status(
            ng,
            Status::new(action, State::Failed),
            format!("Resource {} failed: {nodes_reason}", action.as_str()),
        );
    }
}

/// Other groups of the same stack with an operation under way (Magnum's cluster stack
/// holds the masters and the workers; their traversal is one stack action).
fn siblings_busy(w: &World, g: usize) -> bool {
    let ng = w.groups[g].ng_stack;
    w.groups
        .iter()
        .enumerate()
        .any(|(k, o)| k != g && o.ng_stack == ng && o.op.is_some())
}

/// Starts an update (or the initial create) of a node group.
pub fn start_update(w: &mut World, g: usize, req: UpdateRequest) -> Result<(), String> {
    begin_update(w, g, req)?;
    tick(w, g);
    Ok(())
}

/// Starts updates of several groups of one stack (one stack action): every group has its
/// operation before any is advanced, so a group with nothing to do cannot complete the
/// stack while the others are still to start.
pub fn start_updates(w: &mut World, reqs: Vec<(usize, UpdateRequest)>) -> Result<(), String> {
    let groups: Vec<usize> = reqs.iter().map(|(g, _)| *g).collect();
    for (g, req) in reqs {
        begin_update(w, g, req)?;
    }
    for g in groups {
        tick(w, g);
    }
    Ok(())
}

fn begin_update(w: &mut World, g: usize, req: UpdateRequest) -> Result<(), String> {
    let ng = w.groups[g].ng_stack;
    let rg = w.groups[g].rg_stack;
    let layout = w.groups[g].layout;
    let count: u32 = req
        .params
        .get(layout.key("count"))
        .map(|c| {
            c.trim()
                .parse::<u32>()
                .map_err(|_| format!("Value '{c}' is not an integer"))
        })
        .transpose()?
        .unwrap_or(0);
    let removal = removal_from(w, g, &req.params)?;
    let batch: usize = req
        .params
        .get("update_max_batch_size")
        .and_then(|b| b.parse().ok())
        .unwrap_or(0);
    let image = req
        .params
        .get(w.groups[g].image_key())
        .cloned()
        .unwrap_or_default();
    // Heat (convergence) accepts an update while another runs: the new traversal
    // supersedes the old one, which is cancelled.
    let superseded = w.groups[g].op.take();
    let previous_params = match &superseded {
        Some(old) => old.previous_params.clone(),
        None => w.stack(ng).map(|s| s.params.clone()).unwrap_or_default(),
    };
    let creating = req.action == Action::Create;

    if let Some(h) = req.hooks {
        w.groups[g].hooks = h;
    }
    for i in removal {
        w.groups[g].blacklist.insert(i);
    }
    let desired: BTreeSet<u32> = (0u32..)
        .filter(|i| !w.groups[g].blacklist.contains(i))
        .take(count as usize)
        .collect();
    let current: BTreeSet<u32> = w.groups[g].members.keys().copied().collect();
    if let Some(st) = w.stack_mut(ng) {
        st.params = req.params.clone();
    }
    // caldera's test template: `node_fail_index` makes that member's machine fail.
    if let Some(idx) = req
        .params
        .get("node_fail_index")
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        let grp = &mut w.groups[g];
        grp.fail.retain(|_, f| *f != FailSpec::test_resource());
        if idx >= 0 {
            grp.fail.insert(idx as u32, FailSpec::test_resource());
        }
    }
    let mut op = GroupOp {
        action: req.action,
        batch,
        queue: VecDeque::new(),
        active: BTreeSet::new(),
        target_image: image.clone(),
        previous_params,
        failed: None,
        next_start: 0,
    };
    let nested_action = if req.action == Action::Rollback {
        Action::Update
    } else {
        req.action
    };
    // The stack action starts once, however many of its groups take part.
    // (A create cannot be superseded: its stack is created once, whatever group starts.)
    let under_way = w
        .stack(ng)
        .is_some_and(|s| s.status == Status::new(req.action, State::InProgress));
    if !(under_way && (req.action == Action::Create || siblings_busy(w, g))) {
        w.set_stack_status(
            ng,
            Status::new(req.action, State::InProgress),
            started(req.action),
        );
    }
    // Members the superseded traversal was working on: running ones carry on, waiting ones
    // (queued or paused on a hook) are taken up again by the new traversal.
    let mut carried = BTreeSet::new();
    let mut retake = BTreeSet::new();
    if let Some(old) = &superseded {
        cancelled_traversal_events(w, g, old.action);
        for i in old.active.iter().chain(old.queue.iter()).copied() {
            let Some(m) = w.groups[g].members.get_mut(&i) else {
                continue;
            };
            match m.phase {
                // A member stuck for good (its engine died) is taken over: Heat's new
                // traversal fails the orphaned resource and works on it again.
                Phase::Running { due: i64::MAX, .. } => {
                    retake.insert(i);
                }
                Phase::Running { .. } => {
                    carried.insert(i);
                }
                Phase::Paused(..) | Phase::Pending(_) | Phase::Starting { .. } => {
                    m.phase = Phase::Idle;
                    retake.insert(i);
                }
                _ => {}
            }
        }
    }
    let orphans: Vec<u32> = retake.iter().copied().collect();
    interrupt_running(w, g, &orphans);
    op.active.extend(carried.iter().copied());
    w.set_resource_status(
        ng,
        layout.resource(),
        Status::new(nested_action, State::InProgress),
        STATE_CHANGED,
    );
    w.set_stack_status(
        rg,
        Status::new(nested_action, State::InProgress),
        started(nested_action),
    );

    let to_delete: Vec<u32> = current
        .difference(&desired)
        .copied()
        .filter(|i| !carried.contains(i))
        .collect();
    let to_create: Vec<u32> = desired.difference(&current).copied().collect();
    // Members that failed or were marked unhealthy (CHECK_FAILED) are updated by the next
    // update even when their definition did not change, like Heat.
    let unhealthy = |i: &u32| {
        w.stack(rg)
            .and_then(|s| s.resource(&i.to_string()))
            .map(|r| r.status.state == State::Failed)
            .unwrap_or(false)
    };
    // Members whose create never happened or failed are created again, not updated.
    let uncreated = |i: &u32| {
        w.stack(rg)
            .and_then(|s| s.resource(&i.to_string()))
            .map(|r| {
                r.status.action == Action::Init
                    || r.status == Status::new(Action::Create, State::Failed)
            })
            .unwrap_or(false)
    };
    let recreate: Vec<u32> = desired
        .intersection(&current)
        .copied()
        .filter(|i| !carried.contains(i) && uncreated(i))
        .collect();
    let to_update: Vec<u32> = desired
        .intersection(&current)
        .copied()
        .filter(|i| !recreate.contains(i))
        .filter(|i| {
            w.groups[g]
                .members
                .get(i)
                .map(|m| m.image != image || matches!(m.phase, Phase::Failed(_)))
                .unwrap_or(false)
                || unhealthy(i)
                || retake.contains(i)
        })
        .filter(|i| !carried.contains(i))
        .collect();
    for i in to_update {
        if let Some(m) = w.groups[g].members.get_mut(&i) {
            m.phase = Phase::Pending(Action::Update);
        }
        op.queue.push_back(i);
    }
    w.groups[g].op = Some(op);
    // Hooks hold members in rollbacks too (measured on Heat 27); they pause creates only
    // while the stack itself is being created.
    let mut start: Vec<(u32, Action, bool)> = to_delete
        .into_iter()
        .map(|i| (i, Action::Delete, true))
        .collect();
    for i in to_create {
        add_member(w, g, i);
        start.push((i, Action::Create, creating));
    }
    for i in recreate {
        if let Some(m) = w.groups[g].members.get_mut(&i) {
            m.phase = Phase::Idle;
        }
        start.push((i, Action::Create, creating));
    }
    schedule(w, g, start);
    Ok(())
}

/// Starts members one leaf delay apart, in a shuffled order (as Heat's traversal does).
fn schedule(w: &mut World, g: usize, mut items: Vec<(u32, Action, bool)>) {
    let delay = w.cfg.leaf_delay_ms;
    if delay <= 0 {
        for (i, action, hooks) in items {
            if let Some(op) = w.groups[g].op.as_mut() {
                op.active.insert(i);
            }
            begin(w, g, i, action, hooks);
        }
        return;
    }
    for k in (1..items.len()).rev() {
        let j = (w.ids.unit() * (k + 1) as f64) as usize;
        items.swap(k, j.min(k));
    }
    let now = w.now();
    let grp = &mut w.groups[g];
    let Some(op) = grp.op.as_mut() else {
        return;
    };
    let mut t = op.next_start.max(now);
    for (i, action, hooks) in items {
        op.active.insert(i);
        if let Some(m) = grp.members.get_mut(&i) {
            m.phase = Phase::Starting {
                action,
                at: t,
                hooks,
            };
        }
        t += delay;
    }
    op.next_start = t;
}

/// Advances one group: finishes due members, starts the next batch, completes the op.
pub fn tick(w: &mut World, g: usize) {
    let now = w.now();
    let Some(op) = w.groups[g].op.as_ref() else {
        return;
    };
    let mut starting: Vec<(i64, u32, Action, bool)> = op
        .active
        .iter()
        .filter_map(|i| match w.groups[g].members.get(i).map(|m| m.phase) {
            Some(Phase::Starting { action, at, hooks }) if at <= now => {
                Some((at, *i, action, hooks))
            }
            _ => None,
        })
        .collect();
    starting.sort_by_key(|x| (x.0, x.1));
    for (at, i, action, hooks) in starting {
        w.at_time(at, |w| begin(w, g, i, action, hooks));
    }
    let Some(op) = w.groups[g].op.as_ref() else {
        return;
    };
    let mut due: Vec<(i64, u32, Action)> = op
        .active
        .iter()
        .filter_map(|i| match w.groups[g].members.get(i).map(|m| m.phase) {
            Some(Phase::Running { action, due }) if due <= now => Some((due, *i, action)),
            _ => None,
        })
        .collect();
    due.sort_by_key(|x| (x.0, x.1));
    for (at, i, action) in due {
        w.at_time(at, |w| finish(w, g, i, action));
        // A Cluster API replacement runs on (its old machine is being deleted).
        let running = matches!(
            w.groups[g].members.get(&i).map(|m| m.phase),
            Some(Phase::Running { .. })
        );
        if let Some(op) = w.groups[g].op.as_mut().filter(|_| !running) {
            op.active.remove(&i);
        }
    }
    // Members that failed or vanished no longer hold their batch.
    let settled: Vec<u32> = {
        let grp = &w.groups[g];
        let Some(op) = grp.op.as_ref() else {
            return;
        };
        op.active
            .iter()
            .copied()
            .filter(|i| {
                matches!(
                    grp.members.get(i).map(|m| m.phase),
                    None | Some(Phase::Idle) | Some(Phase::Failed(_))
                )
            })
            .collect()
    };
    if let Some(op) = w.groups[g].op.as_mut() {
        for i in settled {
            op.active.remove(&i);
        }
    }
    let (start_batch, failed) = {
        let Some(op) = w.groups[g].op.as_ref() else {
            return;
        };
        (
            op.active.is_empty() && !op.queue.is_empty() && op.failed.is_none(),
            op.failed.is_some(),
        )
    };
    if start_batch {
        let batch = {
            let Some(op) = w.groups[g].op.as_mut() else {
                return;
            };
            let n = if op.batch == 0 {
                op.queue.len()
            } else {
                op.batch
            };
            let b: Vec<u32> = (0..n).filter_map(|_| op.queue.pop_front()).collect();
            b
        };
        schedule(
            w,
            g,
            batch
                .into_iter()
                .map(|i| (i, Action::Update, true))
                .collect(),
        );
        // Without a leaf delay the batch may already have started (and, with no work,
        // finished); the completion check below sees it either way.
    }
    let Some(op) = w.groups[g].op.as_ref() else {
        return;
    };
    if op.active.is_empty() && (op.queue.is_empty() || failed) {
        let Some(op) = w.groups[g].op.take() else {
            return;
        };
        // Members still queued when a failure stopped the update keep their old state.
        for i in op.queue {
            if let Some(m) = w.groups[g].members.get_mut(&i) {
                m.phase = Phase::Idle;
            }
        }
        if op.failed.is_none() {
            let (rg, ng) = (w.groups[g].rg_stack, w.groups[g].ng_stack);
            let nested_action = if op.action == Action::Rollback {
                Action::Update
            } else {
                op.action
            };
            w.set_stack_status(
                rg,
                Status::new(nested_action, State::Complete),
                completed(nested_action),
            );
            w.set_resource_status(
                ng,
                w.groups[g].layout.resource(),
                Status::new(nested_action, State::Complete),
                STATE_CHANGED,
            );
            // The stack completes with its last group, unless another group failed it, or
            // with the last slow resource beside its groups (`siblings.rs`).
            let failed = w.stack(ng).is_some_and(|s| s.status.state == State::Failed);
            if !siblings_busy(w, g) && !super::siblings::busy(w, ng) && !failed {
                w.set_stack_status(
                    ng,
                    Status::new(op.action, State::Complete),
                    completed(op.action),
                );
                if op.action == Action::Delete {
                    w.mark_deleted(ng);
                }
            }
        }
    }
}

/// `DELETE` of a node-group stack: every member of each of its groups goes, then the
/// groups, then the stack.
pub fn delete(w: &mut World, g: usize) -> Result<(), String> {
    let ng = w.groups[g].ng_stack;
    let mut params = w.stack(ng).map(|s| s.params.clone()).unwrap_or_default();
    let groups = w.stack_groups(ng);
    for &k in &groups {
        params.insert(w.groups[k].layout.key("count").into(), "0".into());
    }
    let reqs = groups
        .into_iter()
        .map(|k| {
            let req = UpdateRequest {
                params: params.clone(),
                hooks: None,
                action: Action::Delete,
            };
            (k, req)
        })
        .collect();
    start_updates(w, reqs)
}

/// `POST .../resources/{member}/signal {"unset_hook": ...}` on the group stack.
pub fn clear_hook(w: &mut World, g: usize, i: u32, hook: &str) -> Result<(), String> {
    let Some(m) = w.groups[g].members.get(&i) else {
        return Err(format!("The Resource ({i}) could not be found."));
    };
    match m.phase {
        Phase::Paused(action, h) if h == hook => {
            let rg = w.groups[g].rg_stack;
            let name = i.to_string();
            let status = w
                .stack(rg)
                .and_then(|s| s.resource(&name))
                .map(|r| r.status)
                .unwrap_or(Status::new(Action::Init, State::Complete));
            w.emit(rg, Some(&name), status, format!("Hook {hook} is cleared"));
            run(w, g, i, action);
            Ok(())
        }
        _ => Err(format!(
            "The \"{hook}\" hook is not defined on {} \"{i}\"",
            w.groups[g].layout.member_type()
        )),
    }
}

/// The events of a traversal that is cancelled (by `cancel_*` or a newer update), in the
/// order Heat 27 writes them; the node-group stack's own event does not change its status.
fn cancelled_traversal_events(w: &mut World, g: usize, old_action: Action) {
    let (rg, ng) = (w.groups[g].rg_stack, w.groups[g].ng_stack);
    let failed = Status::new(Action::Update, State::Failed);
    w.set_stack_status(rg, failed, "Stack UPDATE cancelled".into());
    let group = w.groups[g].layout.resource();
    let cancelled = format!("resources.{group}: Stack UPDATE cancelled");
    w.set_resource_status(ng, group, failed, &cancelled);
    w.emit(
        ng,
        None,
        Status::new(old_action, State::Failed),
        format!("Resource UPDATE failed: {cancelled}"),
    );
}

/// Stops members whose create/update is running: they end FAILED (deletions finish).
/// (Member-level reasons here are the simulator's: not captured from Heat yet.)
fn interrupt_running(w: &mut World, g: usize, members: &[u32]) {
    let rg = w.groups[g].rg_stack;
    for &i in members {
        let Some(m) = w.groups[g].members.get(&i) else {
            continue;
        };
        let (mstack, phase) = (m.stack, m.phase);
        match phase {
            Phase::Running {
                action: Action::Delete,
                ..
            } => finish(w, g, i, Action::Delete),
            Phase::Running { action, .. } => {
                let a = Status::new(action, State::Failed);
                let verb = action.as_str();
                w.set_resource_status(
                    mstack,
                    w.groups[g].layout.server(),
                    a,
                    &format!("{verb} aborted"),
                );
                w.set_stack_status(mstack, a, format!("Stack {verb} cancelled"));
                w.set_resource_status(rg, &i.to_string(), a, &format!("Stack {verb} cancelled"));
                if let Some(m) = w.groups[g].members.get_mut(&i) {
                    m.phase = Phase::Idle;
                }
            }
            _ => {}
        }
    }
}

/// `cancel_update` (roll back to the previous parameters) or `cancel_without_rollback`,
/// for every group of `g`'s stack that is being updated.
pub fn cancel(w: &mut World, g: usize, rollback: bool) -> Result<(), String> {
    let ng = w.groups[g].ng_stack;
    let status = w.stack(ng).map(|s| s.status).ok_or("gone")?;
    let refuse = || format!("Cancelling update when stack is {status} is not supported.");
    let busy: Vec<usize> = w
        .stack_groups(ng)
        .into_iter()
        .filter(|k| w.groups[*k].op.is_some())
        .collect();
    if status != Status::new(Action::Update, State::InProgress) || busy.is_empty() {
        return Err(refuse());
    }
    if !rollback {
        w.set_stack_status(
            ng,
            Status::new(Action::Update, State::Failed),
            "Stack UPDATE cancelled".into(),
        );
    } else if let Some(s) = w.stack_mut(ng) {
        // The rollback converges to the previous template, whose environment it stores.
        if let Some(prev) = s.previous_environment.take() {
            s.environment = prev;
        }
    }
    for &k in &busy {
        cancel_group(w, k, rollback)?;
    }
    // Rollbacks are advanced once every group has its own (see `start_updates`).
    for k in busy {
        tick(w, k);
    }
    Ok(())
}

fn cancel_group(w: &mut World, g: usize, rollback: bool) -> Result<(), String> {
    // Members being updated are stopped and fail (a rollback then takes them up again);
    // waiting ones are left as they were.
    let members: Vec<u32> = w.groups[g]
        .op
        .as_ref()
        .map(|o| o.active.iter().chain(o.queue.iter()).copied().collect())
        .unwrap_or_default();
    if rollback {
        interrupt_running(w, g, &members);
        let params = w.groups[g]
            .op
            .as_ref()
            .map(|o| o.previous_params.clone())
            .unwrap_or_default();
        return begin_update(
            w,
            g,
            UpdateRequest {
                params,
                hooks: None,
                action: Action::Rollback,
            },
        );
    }
    interrupt_running(w, g, &members);
    for i in members {
        if let Some(m) = w.groups[g].members.get_mut(&i) {
            if matches!(m.phase, Phase::Pending(_) | Phase::Paused(..)) {
                m.phase = Phase::Idle;
            }
        }
    }
    w.groups[g].op = None;
    cancelled_traversal_events(w, g, Action::Update);
    Ok(())
}

/// Node-group membership counts by phase, for Magnum's statuses and the tests.
pub fn phase_counts(grp: &Group) -> HashMap<&'static str, usize> {
    let mut m = HashMap::new();
    for mem in grp.members.values() {
        let k = match mem.phase {
            Phase::Idle => "idle",
            Phase::Pending(_) | Phase::Starting { .. } => "pending",
            Phase::Paused(..) => "paused",
            Phase::Running { .. } => "running",
            Phase::Failed(_) => "failed",
        };
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

/// `refs_map` output value: member name -> `arn:...` of its nested stack, like Heat.
pub fn refs_map(w: &World, g: usize) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (i, mem) in &w.groups[g].members {
        m.insert(
            i.to_string(),
            serde_json::Value::String(format!(
                "arn:openstack:heat::{}:stacks/{}",
                w.cfg.project_id,
                stack_ref(w, mem.stack)
            )),
        );
    }
    serde_json::Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_like_python() {
        assert!(fnmatch("*", "12"));
        assert!(fnmatch("1?", "12"));
        assert!(!fnmatch("1?", "1"));
        assert!(fnmatch("44[7-9]", "448"));
        assert!(!fnmatch("44[7-9]", "446"));
        assert!(fnmatch("[!0]", "5"));
        assert!(!fnmatch("3", "31"));
    }

    #[test]
    fn hooks_parse() {
        let env = serde_json::json!({"resource_registry": {"resources": {"nodes": {"*": {"hooks": ["pre-update"]}, "3": {"hooks": "pre-create"}}}}});
        let h = hooks_from_env(&env, "nodes");
        assert_eq!(h.len(), 2);
    }
}
