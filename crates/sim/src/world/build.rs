//! Building clusters and node groups, and running the engine on a virtual timeline so a
//! scenario starts with a realistic history (events, durations, mixed member stages).

use super::group::{self, hooks_from_env, HookRule, Layout, UpdateRequest};
use super::{
    Action, Cluster, ClusterTemplate, Group, Output, Resource, Stack, StackRole, State, Status,
    World,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Clone)]
pub struct GroupSpec {
    pub name: String,
    pub role: String,
    pub is_default: bool,
    pub count: u32,
    pub image: String,
    pub flavor: String,
    pub zone: String,
    pub min_count: u32,
    pub max_count: Option<u32>,
    pub hooks: Vec<HookRule>,
    pub fail: HashMap<u32, super::group::FailSpec>,
    pub stuck: BTreeSet<u32>,
    /// caldera's test template parameter: this member's machine fails (-1: none).
    pub node_fail_index: i64,
    /// caldera's test template parameter: seconds each machine takes per action, as
    /// `OS::Heat::TestResource` waits on a real Heat (0: the simulator's own durations).
    pub action_wait_secs: u32,
}

impl GroupSpec {
    pub fn new(
        name: &str,
        role: &str,
        count: u32,
        image: &str,
        flavor: &str,
        zone: &str,
    ) -> GroupSpec {
        GroupSpec {
            name: name.into(),
            role: role.into(),
            is_default: false,
            count,
            image: image.into(),
            flavor: flavor.into(),
            zone: zone.into(),
            min_count: if role == "master" { 1 } else { 0 },
            max_count: None,
            hooks: vec![],
            fail: HashMap::new(),
            stuck: BTreeSet::new(),
            node_fail_index: -1,
            action_wait_secs: 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ClusterSpec {
    pub name: String,
    pub template: usize,
    pub groups: Vec<GroupSpec>,
}

pub fn create_template(w: &mut World, name: &str, image: &str, coe_version: &str) -> usize {
    let uuid = w.ids.uuid();
    let now = w.now();
    w.templates.push(ClusterTemplate {
        uuid,
        name: name.into(),
        image: image.into(),
        coe_version: coe_version.into(),
        created_ms: now,
    });
    w.templates.len() - 1
}

fn base_stack(
    w: &mut World,
    name: String,
    parent: Option<usize>,
    owner: Option<&str>,
    role: StackRole,
    description: &str,
) -> Stack {
    let now = w.now();
    let id = w.ids.uuid();
    let mut params = BTreeMap::new();
    params.insert("OS::stack_id".to_string(), id.clone());
    params.insert("OS::project_id".to_string(), w.cfg.project_id.clone());
    params.insert("OS::stack_name".to_string(), name.clone());
    Stack {
        id,
        name,
        parent,
        owner_resource: owner.map(|o| w.intern(o)),
        status: Status::new(Action::Init, State::Complete),
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
        environment: serde_json::json!({"parameters": {}, "resource_registry": {"resources": {}}}),
        previous_environment: None,
        resources: vec![],
        events: Default::default(),
        outputs: vec![],
        role,
    }
}

fn resource(
    w: &mut World,
    name: &str,
    rtype: &str,
    physical_id: String,
    value: Option<String>,
) -> Resource {
    let now = w.now();
    Resource {
        name: w.intern(name),
        rtype: w.intern(rtype),
        physical_id,
        status: Status::new(Action::Init, State::Complete),
        reason: String::new(),
        created_ms: now,
        updated_ms: now,
        nested: None,
        required_by: vec![],
        value,
        description: "",
    }
}

/// A Magnum cluster as Magnum's Heat driver builds it: one cluster stack (from
/// `kubecluster.yaml`, `is_cluster_stack=True`) with its network and API address and the
/// ResourceGroups of its default node groups, `kube_masters` and `kube_minions`; every other
/// node group gets a stack of its own from the same template, holding only the group of its
/// role. Members are created through the engine (so they take simulated time).
pub fn create_cluster(w: &mut World, spec: ClusterSpec) -> usize {
    create_cluster_with(w, spec, None)
}

/// `create_cluster`, for a cluster run by a Cluster API driver when `capi` is given (its
/// stacks only drive the machines; Heat does not show them).
pub fn create_cluster_with(
    w: &mut World,
    spec: ClusterSpec,
    capi: Option<super::capi::SimCapi>,
) -> usize {
    let cix = w.clusters.len();
    let uuid = w.ids.uuid();
    let suffix = w.ids.suffix();
    let now = w.now();
    let api_ip = format!("172.24.{}.{}", 4 + cix, 10);
    // Magnum: `cluster.name[:30]` plus a short id, lower case.
    let short: String = spec.name.chars().take(30).collect();
    let mut st = base_stack(
        w,
        format!("{short}-{suffix}").to_lowercase(),
        None,
        None,
        StackRole::Cluster(cix),
        MAGNUM_DESCRIPTION,
    );
    st.params.insert("is_cluster_stack".into(), "True".into());
    st.params.insert(
        "kube_tag".into(),
        w.templates[spec.template].coe_version.clone(),
    );
    st.params.insert("update_max_batch_size".into(), "1".into());
    if let Some(secs) = spec
        .groups
        .iter()
        .map(|g| g.action_wait_secs)
        .max()
        .filter(|s| *s > 0)
    {
        st.params
            .insert("action_wait_secs".into(), secs.to_string());
    }
    for role in ["master", "worker"] {
        if let Some(g) = spec.groups.iter().find(|g| g.is_default && g.role == role) {
            magnum_role_params(&mut st.params, g);
        }
    }
    let net_id = w.ids.uuid();
    st.resources
        .push(resource(w, "network", "OS::Heat::None", net_id, None));
    let lb = format!("{}-api_address_floating_switch-{}", st.name, w.ids.suffix());
    st.resources.push(resource(
        w,
        "api_address_floating_switch",
        "OS::Heat::Value",
        lb,
        Some(api_ip.clone()),
    ));
    st.outputs = vec![Output {
        key: "api_address",
        description: "This is the API endpoint of the Kubernetes cluster. Use this to access the Kubernetes API.\n",
    }];
    let six = w.add_stack(st);
    let create = Action::Create;
    w.set_stack_status(
        six,
        Status::new(create, State::InProgress),
        super::started(create),
    );
    for r in ["network", "api_address_floating_switch"] {
        w.set_resource_status(
            six,
            r,
            Status::new(create, State::InProgress),
            super::STATE_CHANGED,
        );
        w.set_resource_status(
            six,
            r,
            Status::new(create, State::Complete),
            super::STATE_CHANGED,
        );
    }
    let mut labels = BTreeMap::new();
    labels.insert(
        "kube_tag".to_string(),
        w.templates[spec.template].coe_version.clone(),
    );
    w.clusters.push(Cluster {
        uuid,
        name: spec.name.clone(),
        template: spec.template,
        keypair: "ops-key".into(),
        stack: six,
        groups: vec![],
        created_ms: now,
        updated_ms: None,
        create_timeout: 60,
        labels,
        api_address: format!("https://{api_ip}:6443"),
        docker_volume_size: 50,
        health_reason_override: None,
        capi,
    });
    let defaults = spec.groups.iter().filter(|g| g.is_default).count();
    if defaults == 0 {
        w.set_stack_status(
            six,
            Status::new(create, State::Complete),
            super::completed(create),
        );
    }
    // Masters first, as Magnum lists them.
    let mut groups = spec.groups;
    groups.sort_by_key(|g| (g.role != "master", !g.is_default));
    for g in groups {
        let gix = if g.is_default {
            let layout = Layout::magnum(&g.role);
            add_group(w, Some(cix), g, six, layout)
        } else {
            create_magnum_nodegroup(w, cix, g)
        };
        w.clusters[cix].groups.push(gix);
    }
    cix
}

const MAGNUM_DESCRIPTION: &str = "This template will boot a Kubernetes cluster with one or more minions (as specified by the number_of_minions parameter, which defaults to 1).\n";

/// The parameters Magnum gives its template for a node group of `spec.role`
/// (`k8s_template_def.get_nodegroup_param_maps`).
fn magnum_role_params(params: &mut BTreeMap<String, String>, spec: &GroupSpec) {
    let layout = Layout::magnum(&spec.role);
    let (role_key, name_key) = match layout {
        Layout::MagnumMasters => ("master_role", "master_nodegroup_name"),
        _ => ("worker_role", "worker_nodegroup_name"),
    };
    params.insert(role_key.into(), spec.role.clone());
    params.insert(name_key.into(), spec.name.clone());
    params.insert(layout.key("count").into(), spec.count.to_string());
    params.insert(layout.key("image").into(), spec.image.clone());
    params.insert(layout.key("flavor").into(), spec.flavor.clone());
    if let Some(k) = layout.removal_key() {
        params.insert(k.into(), String::new());
    }
}

/// A Magnum node group created after its cluster: a stack of its own
/// (`{cluster[:20]}-{nodegroup[:9]}-{short id}`), `is_cluster_stack=False`, holding only
/// the group of its role.
fn create_magnum_nodegroup(w: &mut World, cix: usize, spec: GroupSpec) -> usize {
    let gix = w.groups.len();
    let c: String = w.clusters[cix].name.chars().take(20).collect();
    let n: String = spec.name.chars().take(9).collect();
    let suffix = w.ids.suffix();
    let name = format!("{c}-{n}-{suffix}")
        .replace(['_', '.'], "-")
        .to_lowercase();
    let mut st = base_stack(
        w,
        name,
        None,
        None,
        StackRole::NodeGroup(gix),
        MAGNUM_DESCRIPTION,
    );
    st.params.insert("is_cluster_stack".into(), "False".into());
    st.params.insert(
        "kube_tag".into(),
        w.templates[w.clusters[cix].template].coe_version.clone(),
    );
    st.params.insert("update_max_batch_size".into(), "1".into());
    magnum_role_params(&mut st.params, &spec);
    if spec.action_wait_secs > 0 {
        st.params
            .insert("action_wait_secs".into(), spec.action_wait_secs.to_string());
    }
    let ix = w.add_stack(st);
    add_group(w, Some(cix), spec.clone(), ix, Layout::magnum(&spec.role))
}

/// A caldera node-group stack (`nodes`: an OS::Heat::ResourceGroup) and its creation.
/// `exact_name` names the node-group stack (a Heat stack create); otherwise Heat-style
/// `{cluster}-{group}-{suffix}`.
pub fn create_group(
    w: &mut World,
    cluster: Option<usize>,
    spec: GroupSpec,
    exact_name: Option<String>,
) -> usize {
    let gix = w.groups.len();
    let prefix = match cluster {
        Some(c) => format!("{}-{}", w.clusters[c].name, spec.name),
        None => spec.name.clone(),
    };
    let suffix = w.ids.suffix();
    let ng_name = exact_name.unwrap_or_else(|| format!("{prefix}-{suffix}"));
    let mut ng = base_stack(
        w,
        ng_name,
        None,
        None,
        StackRole::NodeGroup(gix),
        "caldera node group: an OS::Heat::ResourceGroup of Caldera::Node members.",
    );
    ng.outputs = vec![
        Output {
            key: "refs_map",
            description: "Member name (\"0\", \"1\", ...) -> member nested stack id.",
        },
        Output {
            key: "ips",
            description: "Member IP addresses, in member index order.",
        },
        Output {
            key: "names",
            description: "Member node names, in member index order.",
        },
        Output {
            key: "count",
            description: "Current number of members.",
        },
    ];
    let name = ng.name.clone();
    ng.params.insert("OS::stack_name".into(), name);
    ng.params.insert("count".into(), spec.count.to_string());
    ng.params.insert("image".into(), spec.image.clone());
    ng.params.insert("flavor".into(), spec.flavor.clone());
    ng.params
        .insert("availability_zone".into(), spec.zone.clone());
    ng.params.insert("removal_policies".into(), "[]".into());
    ng.params.insert("name_prefix".into(), prefix);
    ng.params.insert("update_max_batch_size".into(), "0".into());
    ng.params
        .insert("node_fail_index".into(), spec.node_fail_index.to_string());
    ng.params
        .insert("action_wait_secs".into(), spec.action_wait_secs.to_string());
    let ng_ix = w.add_stack(ng);
    add_group(w, cluster, spec, ng_ix, Layout::Caldera)
}

/// Adds the ResourceGroup of `spec` to stack `ng_ix` (its nested stack, the group's hooks
/// in the stack's environment) and starts creating its members.
fn add_group(
    w: &mut World,
    cluster: Option<usize>,
    spec: GroupSpec,
    ng_ix: usize,
    layout: Layout,
) -> usize {
    let gix = w.groups.len();
    let rname = layout.resource();
    let ng_name = w.stack(ng_ix).map(|s| s.name.clone()).unwrap_or_default();
    let rg_suffix = w.ids.suffix();
    let rg = base_stack(
        w,
        format!("{ng_name}-{rname}-{rg_suffix}"),
        Some(ng_ix),
        Some(rname),
        StackRole::Group(gix),
        "",
    );
    let mut res = resource(w, rname, "OS::Heat::ResourceGroup", rg.id.clone(), None);
    let rg_ix = w.add_stack(rg);
    res.nested = Some(rg_ix);
    if let Some(s) = w.stack_mut(ng_ix) {
        s.resources.push(res);
        if !spec.hooks.is_empty() {
            let mut env = serde_json::Map::new();
            for h in &spec.hooks {
                env.insert(h.pattern.clone(), serde_json::json!({"hooks": h.hooks}));
            }
            if !s.environment["resource_registry"]["resources"].is_object() {
                s.environment["resource_registry"]["resources"] = serde_json::json!({});
            }
            s.environment["resource_registry"]["resources"][rname] = serde_json::Value::Object(env);
        }
        if let Some((private, public)) = layout.stack_outputs() {
            s.outputs.push(Output {
                key: private,
                description: if layout == Layout::MagnumMasters {
                    "This is a list of the \"private\" IP addresses of all the Kubernetes masters.\n"
                } else {
                    "This is a list of the \"private\" IP addresses of all the Kubernetes minions.\n"
                },
            });
            s.outputs.push(Output {
                key: public,
                description: if layout == Layout::MagnumMasters {
                    "This is a list of the \"public\" IP addresses of all the Kubernetes masters. Use these IP addresses to log in to the Kubernetes masters via ssh.\n"
                } else {
                    "This is a list of the \"public\" IP addresses of all the Kubernetes minions. Use these IP addresses to log in to the Kubernetes minions via ssh.\n"
                },
            });
        }
    }
    let now = w.now();
    let mut labels = BTreeMap::new();
    labels.insert("availability_zone".to_string(), spec.zone.clone());
    let version = cluster
        .map(|c| w.templates[w.clusters[c].template].coe_version.clone())
        .unwrap_or_default();
    let uuid = w.ids.uuid();
    let hooks = spec.hooks.clone();
    w.groups.push(Group {
        uuid,
        name: spec.name.clone(),
        role: spec.role.clone(),
        is_default: spec.is_default,
        cluster,
        layout,
        ng_stack: ng_ix,
        rg_stack: rg_ix,
        flavor: spec.flavor.clone(),
        zone: spec.zone.clone(),
        min_count: spec.min_count,
        max_count: spec.max_count,
        labels,
        version,
        created_ms: now,
        members: BTreeMap::new(),
        blacklist: BTreeSet::new(),
        hooks: hooks.clone(),
        fail: spec.fail.clone(),
        stuck: spec.stuck.clone(),
        ip_base: u32::from(std::net::Ipv4Addr::new(10, (gix % 250) as u8 + 1, 0, 0)),
        next_ip: 10,
        op: None,
        image_param: None,
    });
    let mut params = w.stack(ng_ix).map(|s| s.params.clone()).unwrap_or_default();
    params.insert(layout.key("count").into(), spec.count.to_string());
    params.insert(layout.key("image").into(), spec.image.clone());
    let env_hooks = w
        .stack(ng_ix)
        .map(|s| hooks_from_env(&s.environment, rname))
        .unwrap_or_default();
    debug_assert_eq!(env_hooks, hooks);
    // A fresh group cannot be busy, so this cannot fail on "in progress"; bad counts were
    // ruled out by the types above.
    let _ = group::start_update(
        w,
        gix,
        UpdateRequest {
            params,
            hooks: None,
            action: Action::Create,
        },
    );
    gix
}

/// Runs the engine on the virtual timeline from its current point until `until` ms,
/// or until `stop` says so, in steps of `step_ms`.
pub fn run_virtual(w: &mut World, until: i64, step_ms: i64, stop: impl Fn(&World) -> bool) {
    let mut t = w.virtual_now.unwrap_or(until);
    while t < until && !stop(w) {
        t = (t + step_ms).min(until);
        w.virtual_now = Some(t);
        w.tick();
    }
}
