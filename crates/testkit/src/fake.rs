//! A deterministic in-memory [`CloudService`] for tests and the `fake_console` example.
//!
//! It holds clusters, node groups, nodes, stacks, resources and events; errors can be
//! injected per operation, latency added, and [`FakeCloud::advance`] moves a rolling
//! upgrade forward so live updates can be tested. No randomness: every value is a
//! function of indices and the step counter.

use crate::model::{
    Cluster, DriverKind, Health, Node, NodeAddress, NodeGroup, NodeKey, Role, StackEvent, StackRef,
    StackResource, StackSummary, Status,
};
use crate::service::{
    BudgetStats, CloudInfo, CloudService, EventCursor, NodeUpdate, ServiceError, ServiceResult,
};
use chrono::{DateTime, Duration as ChronoDuration, TimeZone, Utc};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The operations whose failure can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FakeOp {
    ListClusters,
    /// One cluster read alone ([`CloudService::cluster`]).
    Cluster,
    ListNodegroups,
    ListStacks,
    StreamNodes,
    StackResources,
    PollEvents,
    ServerDetail,
    StackOutputs,
    StackOutput,
    ResourceDetail,
    StackOverview,
}

/// A resource's attributes (name, value as text) and metadata (as text).
pub type ResourceExtras = (Vec<(String, String)>, String);

/// The fake's data; public so tests can shape it directly through [`FakeCloud::with_data`].
#[derive(Debug, Clone, Default)]
pub struct FakeData {
    pub info: CloudInfo,
    pub budget: BudgetStats,
    pub clusters: Vec<Cluster>,
    pub nodegroups: Vec<NodeGroup>,
    /// Nodes by node group id.
    pub nodes: HashMap<String, Vec<Node>>,
    pub stacks: Vec<StackSummary>,
    /// Explicit resources by stack id (node group stacks are generated from their nodes).
    pub resources: HashMap<String, Vec<StackResource>>,
    /// Events by stack id, oldest first.
    pub events: HashMap<String, Vec<StackEvent>>,
    pub errors: HashMap<FakeOp, ServiceError>,
    /// Delay before each answer (and between address batches).
    pub latency: Duration,
    /// Every n-th member's address lookup fails.
    pub address_fail_every: Option<u32>,
    /// The fake's own clock, moved by `advance`.
    pub now: DateTime<Utc>,
    pub step: u64,
    /// Make `info()` panic (to test the console's panic hook).
    pub panic_on_info: bool,
    /// Nova servers by id or name (the node detail); a node without one is "not found".
    pub servers: HashMap<String, crate::model::ServerDetail>,
    /// Stack outputs by stack id: each output and its value as text.
    pub outputs: HashMap<String, Vec<(crate::service::StackOutput, String)>>,
    /// Resource attributes and metadata (as text) by (stack id, resource name), for the
    /// resource detail; a resource without an entry has none.
    pub resource_extras: HashMap<(String, String), ResourceExtras>,
    /// Stack parameters (as Heat shows them) and template (as text) by stack id.
    pub stack_extras: HashMap<String, (Vec<(String, String)>, String)>,
    event_seq: u64,
}

/// The fake cloud. Cheap to clone; clones share data.
#[derive(Debug, Clone, Default)]
pub struct FakeCloud {
    inner: Arc<Mutex<FakeData>>,
}

/// The fixed instant the demo data is built around.
pub fn demo_epoch() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
        .single()
        .unwrap_or_default()
}

const NEW_IMAGE: &str = "fedora-coreos-40";
const OLD_IMAGE: &str = "fedora-coreos-38";
const BATCH: usize = 5;

impl FakeCloud {
    pub fn new(data: FakeData) -> Self {
        FakeCloud {
            inner: Arc::new(Mutex::new(data)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, FakeData> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Read or change the data.
    pub fn with_data<R>(&self, f: impl FnOnce(&mut FakeData) -> R) -> R {
        f(&mut self.lock())
    }

    pub fn set_error(&self, op: FakeOp, error: Option<ServiceError>) {
        let mut d = self.lock();
        match error {
            Some(e) => d.errors.insert(op, e),
            None => d.errors.remove(&op),
        };
    }

    pub fn set_latency(&self, latency: Duration) {
        self.lock().latency = latency;
    }

    /// A demo cloud: `prod-k8s` mid-upgrade with `workers` worker nodes in two groups
    /// (80% / 20%), plus a healthy, a failed and a Heat-native cluster.
    pub fn demo(workers: u32) -> Self {
        FakeCloud::demo_at(demo_epoch(), workers)
    }

    /// The demo cloud built around `now` (the example uses the wall clock).
    pub fn demo_at(now: DateTime<Utc>, workers: u32) -> Self {
        let mut d = FakeData {
            info: CloudInfo {
                cloud: "simulator".into(),
                region: Some("RegionOne".into()),
                project: Some("ops".into()),
                api_versions: vec!["container-infra 1.10".into(), "heat v1".into()],
                is_simulator: true,
                read_only: false,
                has_magnum: true,
                services: Vec::new(),
            },
            budget: BudgetStats {
                in_flight: 2,
                max_in_flight: 8,
                per_second: 3.0,
                max_per_second: 20.0,
                total_requests: 1234,
                total_retries: 3,
            },
            now,
            address_fail_every: Some(97),
            ..FakeData::default()
        };
        let big = workers * 4 / 5;
        let small = workers - big;
        add_cluster(
            &mut d,
            "prod-k8s",
            "UPDATE_IN_PROGRESS",
            Health::Unhealthy,
            Some("Upgrading node groups to fedora-coreos-40"),
            DriverKind::Magnum,
            &[
                ("default-master", Role::Master, 3, "nova-a"),
                ("default-worker", Role::Worker, big, "nova-a"),
                ("gpu-worker", Role::Worker, small, "nova-b"),
            ],
            now - ChronoDuration::days(41),
        );
        add_cluster(
            &mut d,
            "staging",
            "CREATE_COMPLETE",
            Health::Healthy,
            Some("Stack CREATE completed successfully"),
            DriverKind::Magnum,
            &[
                ("default-master", Role::Master, 1, "nova-a"),
                ("default-worker", Role::Worker, 12, "nova-a"),
            ],
            now - ChronoDuration::hours(30),
        );
        add_cluster(
            &mut d,
            "broken-ci",
            "CREATE_FAILED",
            Health::Unknown,
            Some("Resource CREATE failed: ResourceInError: resources.kube_masters.resources[0].resources.kube-master: Went to status ERROR due to \"No valid host was found\""),
            DriverKind::Magnum,
            &[("default-master", Role::Master, 1, "nova-b")],
            now - ChronoDuration::minutes(50),
        );
        add_cluster(
            &mut d,
            "edge-native",
            "UPDATE_COMPLETE",
            Health::Healthy,
            None,
            DriverKind::HeatNative,
            &[("edge", Role::Worker, 6, "edge-1")],
            now - ChronoDuration::days(3),
        );
        FakeCloud::new(d)
    }

    /// One step of the rolling upgrade: the in-progress batch completes, the next batch of
    /// paused members is released, the clock moves 10 s, events are appended.
    pub fn advance(&self) {
        let next = self.lock().now + ChronoDuration::seconds(10);
        self.advance_to(next);
    }

    /// One step of the rolling upgrade, happening at `now`.
    pub fn advance_to(&self, now: DateTime<Utc>) {
        let mut d = self.lock();
        d.step += 1;
        d.now = now;
        let ng_ids: Vec<(String, Option<String>)> = d
            .nodegroups
            .iter()
            .filter(|g| g.status.is_in_progress())
            .map(|g| (g.id.clone(), g.stack_id.clone()))
            .collect();
        let mut new_events: Vec<(String, Vec<NewEvent>)> = Vec::new();
        for (ng_id, stack_id) in ng_ids {
            let Some(nodes) = d.nodes.get_mut(&ng_id) else {
                continue;
            };
            let mut evs = Vec::new();
            let mut released = 0;
            for n in nodes.iter_mut() {
                if n.status.is_in_progress() && !n.hook_paused {
                    let fail = n.index.is_some_and(|i| i % 61 == 60);
                    if fail {
                        n.status = Status::parse("UPDATE_FAILED");
                        n.status_reason =
                            Some("Timed out waiting for kubelet to become Ready".into());
                    } else {
                        n.status = Status::parse("UPDATE_COMPLETE");
                        n.status_reason = Some("state changed".into());
                        n.image = Some(NEW_IMAGE.into());
                    }
                    n.since = Some(now);
                    evs.push((
                        n.key.member.clone(),
                        vec!["nodes".to_string()],
                        if fail {
                            "UPDATE_FAILED"
                        } else {
                            "UPDATE_COMPLETE"
                        },
                        n.status_reason.clone().unwrap_or_default(),
                    ));
                }
            }
            for n in nodes.iter_mut() {
                if released >= BATCH {
                    break;
                }
                if n.hook_paused {
                    n.hook_paused = false;
                    n.status_reason = Some("Hook pre-update is cleared".into());
                    n.since = Some(now);
                    released += 1;
                    evs.push((
                        n.key.member.clone(),
                        vec!["nodes".to_string()],
                        "UPDATE_IN_PROGRESS",
                        "Hook pre-update is cleared".into(),
                    ));
                    evs.push((
                        "server".into(),
                        vec!["nodes".to_string(), n.key.member.clone()],
                        "UPDATE_IN_PROGRESS",
                        "state changed".into(),
                    ));
                }
            }
            let any_active = nodes.iter().any(|n| n.status.is_in_progress());
            if let Some(sid) = stack_id {
                new_events.push((sid, evs));
            }
            if !any_active {
                if let Some(g) = d.nodegroups.iter_mut().find(|g| g.id == ng_id) {
                    g.status = Status::parse("UPDATE_COMPLETE");
                    g.image = Some(NEW_IMAGE.into());
                }
            }
        }
        for (sid, evs) in new_events {
            let stack = d
                .stacks
                .iter()
                .find(|s| s.stack.id == sid)
                .map(|s| s.stack.clone());
            for (res, path, status, reason) in evs {
                d.event_seq += 1;
                let seq = d.event_seq;
                let ev = StackEvent {
                    id: format!("ev-{seq:08}"),
                    time: now,
                    resource_name: res.clone(),
                    logical_id: res,
                    physical_id: None,
                    status: Status::parse(status),
                    status_reason: Some(reason),
                    stack: stack.clone(),
                    path,
                };
                d.events.entry(sid.clone()).or_default().push(ev);
            }
        }
        d.budget.total_requests += 7;
        d.budget.per_second = 2.0 + (d.step % 5) as f64;
    }

    fn error(&self, op: FakeOp) -> Option<ServiceError> {
        self.lock().errors.get(&op).cloned()
    }

    fn answer<T: Send + 'static>(
        &self,
        op: FakeOp,
        f: impl FnOnce(&FakeData) -> T,
    ) -> BoxFuture<'static, ServiceResult<T>> {
        let (latency, result) = {
            let d = self.lock();
            let r = match d.errors.get(&op) {
                Some(e) => Err(e.clone()),
                None => Ok(f(&d)),
            };
            (d.latency, r)
        };
        async move {
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            result
        }
        .boxed()
    }
}

/// (resource name, path, status, reason) of an event `advance` emits.
type NewEvent = (String, Vec<String>, &'static str, String);

#[allow(clippy::too_many_arguments)]
fn add_cluster(
    d: &mut FakeData,
    name: &str,
    status: &str,
    health: Health,
    reason: Option<&str>,
    driver: DriverKind,
    groups: &[(&str, Role, u32, &str)],
    created: DateTime<Utc>,
) {
    let cid = format!("{name}-uuid");
    let cluster_stack = StackRef {
        name: format!("{name}-stack"),
        id: format!("{name}-stack-id"),
    };
    let upgrading = status == "UPDATE_IN_PROGRESS";
    let masters: u32 = groups
        .iter()
        .filter(|g| g.1 == Role::Master)
        .map(|g| g.2)
        .sum();
    let workers: u32 = groups
        .iter()
        .filter(|g| g.1 != Role::Master)
        .map(|g| g.2)
        .sum();
    d.clusters.push(Cluster {
        id: cid.clone(),
        name: name.into(),
        driver,
        status: Status::parse(status),
        status_reason: reason.map(Into::into),
        health,
        health_reason: None,
        master_count: masters,
        node_count: workers,
        nodegroup_count: Some(groups.len() as u32),
        template_id: Some("k8s-1.30".into()),
        coe_version: Some("v1.30.4".into()),
        api_address: Some(format!("https://{name}.example:6443")),
        stack_id: Some(cluster_stack.id.clone()),
        created_at: Some(created),
        updated_at: Some(d.now - ChronoDuration::minutes(12)),
        capi: None,
    });
    d.stacks.push(StackSummary {
        stack: cluster_stack.clone(),
        status: Status::parse(status),
        status_reason: reason.map(Into::into),
        created_at: Some(created),
        updated_at: Some(d.now - ChronoDuration::minutes(12)),
        parent: None,
    });
    let mut root_resources = Vec::new();
    for (gi, (gname, role, count, zone)) in groups.iter().enumerate() {
        let ng_id = format!("{name}-{gname}-uuid");
        let sref = StackRef {
            name: format!("{name}-{gname}"),
            id: format!("{name}-{gname}-stack-id"),
        };
        let ng_upgrading = upgrading && *role == Role::Worker;
        let ng_status = if ng_upgrading {
            "UPDATE_IN_PROGRESS"
        } else if status == "CREATE_FAILED" {
            "CREATE_FAILED"
        } else {
            "CREATE_COMPLETE"
        };
        d.nodegroups.push(NodeGroup {
            id: ng_id.clone(),
            name: (*gname).into(),
            cluster_id: cid.clone(),
            role: *role,
            flavor: Some(
                if gname.contains("gpu") {
                    "g1.xlarge"
                } else {
                    "m1.large"
                }
                .into(),
            ),
            // An upgrading group already names the image it is being taken to (Heat's
            // `image` parameter, Magnum's `image_id`); its members show the old one until
            // updated.
            image: Some(if ng_upgrading { NEW_IMAGE } else { OLD_IMAGE }.into()),
            version: Some("v1.30.4".into()),
            zone: Some((*zone).into()),
            node_count: *count,
            min_node_count: Some(if *role == Role::Master { *count } else { 1 }),
            max_node_count: if *role == Role::Master {
                Some(*count)
            } else {
                Some(count * 2)
            },
            status: Status::parse(ng_status),
            status_reason: if ng_upgrading {
                Some("Rolling update paused on pre-update hooks".into())
            } else {
                None
            },
            is_default: gname.starts_with("default"),
            stack_id: Some(sref.id.clone()),
            capi: None,
            node_labels: Default::default(),
            node_taints: Vec::new(),
            created_at: Some(created),
            // The upgrade started 20 minutes ago; the others were never touched.
            updated_at: ng_upgrading.then(|| d.now - ChronoDuration::minutes(20)),
        });
        d.stacks.push(StackSummary {
            stack: sref.clone(),
            status: Status::parse(ng_status),
            status_reason: None,
            created_at: Some(created),
            updated_at: Some(d.now - ChronoDuration::minutes(12)),
            parent: None,
        });
        root_resources.push(StackResource {
            name: format!("nodegroup_{gi}"),
            logical_id: format!("nodegroup_{gi}"),
            physical_id: Some(sref.id.clone()),
            resource_type: "Magnum::NodeGroup".into(),
            status: Status::parse(ng_status),
            status_reason: None,
            updated_at: Some(d.now - ChronoDuration::minutes(12)),
            owner: Some(cluster_stack.clone()),
            nested: None,
            parent_resource: None,
            required_by: vec![],
        });
        let mut nodes = Vec::with_capacity(*count as usize);
        let mut events = Vec::new();
        for i in 0..*count {
            let member = i.to_string();
            let (st, reason, paused, image, since_s) = if ng_upgrading {
                let done = (*count as usize * 3 / 10) as u32;
                if i < done {
                    if i % 53 == 17 {
                        (
                            "UPDATE_FAILED",
                            "Timed out waiting for kubelet to become Ready",
                            false,
                            OLD_IMAGE,
                            300 + i as i64,
                        )
                    } else {
                        (
                            "UPDATE_COMPLETE",
                            "state changed",
                            false,
                            NEW_IMAGE,
                            60 + (i as i64 * 7) % 900,
                        )
                    }
                } else if i < done + BATCH as u32 {
                    (
                        "UPDATE_IN_PROGRESS",
                        "state changed",
                        false,
                        OLD_IMAGE,
                        20 + i as i64 % 40,
                    )
                } else {
                    (
                        "UPDATE_IN_PROGRESS",
                        "UPDATE paused until Hook pre-update is cleared",
                        true,
                        OLD_IMAGE,
                        720 + i as i64 % 30,
                    )
                }
            } else if status == "CREATE_FAILED" {
                (
                    "CREATE_FAILED",
                    "ResourceInError: Went to status ERROR due to \"No valid host was found\"",
                    false,
                    OLD_IMAGE,
                    2400,
                )
            } else {
                (
                    "CREATE_COMPLETE",
                    "state changed",
                    false,
                    OLD_IMAGE,
                    86400 + i as i64,
                )
            };
            nodes.push(Node {
                key: NodeKey {
                    nodegroup: ng_id.clone(),
                    member: member.clone(),
                },
                index: Some(i),
                name: format!("{name}-{gname}-{i}"),
                zone: Some(if *role == Role::Worker && i % 3 == 2 {
                    format!("{zone}2")
                } else {
                    (*zone).to_string()
                }),
                ip: None,
                status: Status::parse(st),
                status_reason: Some(reason.into()),
                image: Some(image.into()),
                since: Some(d.now - ChronoDuration::seconds(since_s)),
                hook_paused: paused,
                hook_inferred: false,
                held_by_rollout: None,
                server_id: None,
                created: None,
                stack_id: Some(format!("{name}-{gname}-member-{i}")),
                replacing: false,
            });
            if ng_upgrading && i < 40 {
                d.event_seq += 1;
                events.push(StackEvent {
                    id: format!("ev-{:08}", d.event_seq),
                    time: d.now - ChronoDuration::seconds(1200 - i as i64 * 20),
                    resource_name: member.clone(),
                    logical_id: member.clone(),
                    physical_id: None,
                    status: Status::parse(st),
                    status_reason: Some(reason.into()),
                    stack: Some(sref.clone()),
                    path: vec!["nodes".into()],
                });
            }
        }
        if !events.is_empty() {
            d.event_seq += 1;
            events.insert(
                0,
                StackEvent {
                    id: format!("ev-{:08}", d.event_seq),
                    time: d.now - ChronoDuration::seconds(1300),
                    resource_name: sref.name.clone(),
                    logical_id: sref.name.clone(),
                    physical_id: Some(sref.id.clone()),
                    status: Status::parse("UPDATE_IN_PROGRESS"),
                    status_reason: Some("Stack UPDATE started".into()),
                    stack: Some(sref.clone()),
                    path: vec![],
                },
            );
            d.events.insert(sref.id.clone(), events);
        }
        d.nodes.insert(ng_id, nodes);
    }
    if status == "CREATE_FAILED" {
        d.event_seq += 1;
        d.events.insert(
            cluster_stack.id.clone(),
            vec![StackEvent {
                id: format!("ev-{:08}", d.event_seq),
                time: d.now - ChronoDuration::minutes(40),
                resource_name: "kube-master".into(),
                logical_id: "kube-master".into(),
                physical_id: None,
                status: Status::parse("CREATE_FAILED"),
                status_reason: Some(
                    "ResourceInError: Went to status ERROR due to \"No valid host was found\""
                        .into(),
                ),
                stack: Some(cluster_stack.clone()),
                path: vec!["kube_masters".into(), "0".into()],
            }],
        );
    }
    d.resources.insert(cluster_stack.id.clone(), root_resources);
}

/// Resources of a node group stack, generated from its nodes: `nodes` (a ResourceGroup)
/// with one member per node, and each member's `server`, `port` and `deployment`.
fn nodegroup_resources(d: &FakeData, stack: &StackRef, depth: u32) -> Option<Vec<StackResource>> {
    let ng = d
        .nodegroups
        .iter()
        .find(|g| g.stack_id.as_deref() == Some(&stack.id))?;
    let nodes = d.nodes.get(&ng.id)?;
    let group_ref = StackRef {
        name: format!("{}-nodes", stack.name),
        id: format!("{}-nodes-id", stack.id),
    };
    let mut out = vec![StackResource {
        name: "nodes".into(),
        logical_id: "nodes".into(),
        physical_id: Some(group_ref.id.clone()),
        resource_type: "OS::Heat::ResourceGroup".into(),
        status: ng.status.clone(),
        status_reason: ng.status_reason.clone(),
        updated_at: Some(d.now - ChronoDuration::minutes(20)),
        owner: Some(stack.clone()),
        nested: Some(group_ref.clone()),
        parent_resource: None,
        required_by: vec![],
    }];
    if depth == 0 {
        return Some(out);
    }
    for n in nodes {
        let member_ref = StackRef {
            name: format!("{}-{}", group_ref.name, n.key.member),
            id: n.stack_id.clone().unwrap_or_default(),
        };
        out.push(StackResource {
            name: n.key.member.clone(),
            logical_id: n.key.member.clone(),
            physical_id: Some(member_ref.id.clone()),
            resource_type: "node.yaml".into(),
            status: n.status.clone(),
            status_reason: n.status_reason.clone(),
            updated_at: n.since,
            owner: Some(group_ref.clone()),
            nested: Some(member_ref.clone()),
            parent_resource: Some("nodes".into()),
            required_by: vec![],
        });
        if depth >= 2 {
            for (res, ty) in [
                ("server", "OS::Nova::Server"),
                ("port", "OS::Neutron::Port"),
                ("deployment", "OS::Heat::SoftwareDeployment"),
            ] {
                let st = if res == "server" || n.status.is_complete() {
                    n.status.clone()
                } else {
                    Status::parse("CREATE_COMPLETE")
                };
                out.push(StackResource {
                    name: res.into(),
                    logical_id: res.into(),
                    physical_id: Some(format!("{}-{res}", n.key.member)),
                    resource_type: ty.into(),
                    status: st,
                    status_reason: if res == "server" {
                        n.status_reason.clone()
                    } else {
                        None
                    },
                    updated_at: if res == "server" {
                        n.since
                    } else {
                        Some(d.now - ChronoDuration::hours(2))
                    },
                    owner: Some(member_ref.clone()),
                    nested: None,
                    parent_resource: Some(n.key.member.clone()),
                    required_by: vec![],
                });
            }
        }
    }
    Some(out)
}

/// Resources of a stack nested in a node group stack (the group or a member), down to
/// `depth` more levels.
fn nested_resources(d: &FakeData, stack: &StackRef, depth: u32) -> Option<Vec<StackResource>> {
    for g in &d.nodegroups {
        let Some(sid) = &g.stack_id else {
            continue;
        };
        let root = StackRef {
            name: sid.clone(),
            id: sid.clone(),
        };
        let name = d
            .stacks
            .iter()
            .find(|s| &s.stack.id == sid)
            .map(|s| s.stack.name.clone())
            .unwrap_or_else(|| sid.clone());
        let all = nodegroup_resources(d, &StackRef { name, ..root }, 2)?;
        if !all
            .iter()
            .any(|r| r.owner.as_ref().is_some_and(|o| o.id == stack.id))
        {
            continue;
        }
        // Breadth-first from the asked stack, `depth` levels of nesting below it.
        let mut wanted = vec![stack.id.clone()];
        let mut out = Vec::new();
        for _ in 0..=depth {
            let level: Vec<&StackResource> = all
                .iter()
                .filter(|r| r.owner.as_ref().is_some_and(|o| wanted.contains(&o.id)))
                .collect();
            if level.is_empty() {
                break;
            }
            wanted = level
                .iter()
                .filter_map(|r| r.nested.as_ref().map(|n| n.id.clone()))
                .collect();
            out.extend(level.into_iter().cloned());
        }
        return Some(out);
    }
    None
}

impl CloudService for FakeCloud {
    // The panic is the fake's to give when asked (`panic_on_info`: `examples/fake_console.rs
    // --panic-after`, to watch the console's panic handling).
    #[allow(clippy::panic)]
    fn info(&self) -> CloudInfo {
        let d = self.lock();
        if d.panic_on_info {
            drop(d);
            panic!("fake cloud: info() asked to panic");
        }
        d.info.clone()
    }

    fn budget(&self) -> BudgetStats {
        self.lock().budget
    }

    fn list_clusters(&self) -> BoxFuture<'static, ServiceResult<Vec<Cluster>>> {
        self.answer(FakeOp::ListClusters, |d| d.clusters.clone())
    }

    fn cluster(&self, cluster: Cluster) -> BoxFuture<'static, ServiceResult<Cluster>> {
        let found = self.answer(FakeOp::Cluster, move |d| {
            d.clusters.iter().find(|c| c.id == cluster.id).cloned()
        });
        async move {
            found.await?.ok_or_else(|| {
                ServiceError::new(
                    crate::service::ErrorKind::NotFound,
                    "no such cluster".to_string(),
                )
            })
        }
        .boxed()
    }

    fn list_nodegroups(
        &self,
        cluster: Cluster,
    ) -> BoxFuture<'static, ServiceResult<Vec<NodeGroup>>> {
        self.answer(FakeOp::ListNodegroups, move |d| {
            d.nodegroups
                .iter()
                .filter(|g| g.cluster_id == cluster.id)
                .cloned()
                .collect()
        })
    }

    fn list_stacks(&self) -> BoxFuture<'static, ServiceResult<Vec<StackSummary>>> {
        self.answer(FakeOp::ListStacks, |d| d.stacks.clone())
    }

    fn stream_nodes(&self, nodegroup: NodeGroup) -> BoxStream<'static, ServiceResult<NodeUpdate>> {
        if let Some(e) = self.error(FakeOp::StreamNodes) {
            return futures::stream::iter(vec![Err(e)]).boxed();
        }
        let (nodes, latency, fail_every) = {
            let d = self.lock();
            (
                d.nodes.get(&nodegroup.id).cloned().unwrap_or_default(),
                d.latency,
                d.address_fail_every,
            )
        };
        let mut steps: Vec<ServiceResult<NodeUpdate>> = Vec::with_capacity(nodes.len() + 2);
        let members: Vec<Node> = nodes
            .iter()
            .map(|n| Node {
                ip: None,
                ..n.clone()
            })
            .collect();
        steps.push(Ok(NodeUpdate::Members(members)));
        for n in &nodes {
            let i = n.index.unwrap_or(0);
            if fail_every.is_some_and(|k| k > 0 && i % k == k - 1) {
                steps.push(Ok(NodeUpdate::AddressFailed {
                    member: n.key.member.clone(),
                    error: ServiceError::new(
                        crate::service::ErrorKind::Http,
                        format!("output ip of member {} : HTTP 500", n.key.member),
                    ),
                }));
            } else {
                steps.push(Ok(NodeUpdate::Address(NodeAddress {
                    member: n.key.member.clone(),
                    index: n.index,
                    addresses: vec![format!(
                        "10.{}.{}.{}",
                        10 + i / 65536,
                        (i / 256) % 256,
                        i % 256
                    )],
                    // The fake's nodes carry their display names from the start.
                    name: None,
                    networks: Default::default(),
                    outputs: Default::default(),
                    left_out: 0,
                })));
            }
        }
        steps.push(Ok(NodeUpdate::Done));
        let chunks: Vec<Vec<ServiceResult<NodeUpdate>>> =
            steps.chunks(64).map(|c| c.to_vec()).collect();
        futures::stream::iter(chunks)
            .then(move |chunk| async move {
                if !latency.is_zero() {
                    tokio::time::sleep(latency / 4).await;
                }
                futures::stream::iter(chunk)
            })
            .flatten()
            .boxed()
    }

    fn stack_resources(
        &self,
        stack: StackRef,
        nested_depth: u32,
    ) -> BoxFuture<'static, ServiceResult<Vec<StackResource>>> {
        self.answer(FakeOp::StackResources, move |d| {
            nodegroup_resources(d, &stack, nested_depth)
                .or_else(|| d.resources.get(&stack.id).cloned())
                .or_else(|| nested_resources(d, &stack, nested_depth))
                .unwrap_or_default()
        })
    }

    fn stack_outputs(
        &self,
        stack: StackRef,
    ) -> BoxFuture<'static, ServiceResult<Vec<crate::service::StackOutput>>> {
        self.answer(FakeOp::StackOutputs, move |d| {
            let outputs = d
                .outputs
                .get(&stack.id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            outputs.iter().map(|(o, _)| o.clone()).collect()
        })
    }

    fn stack_output(
        &self,
        stack: StackRef,
        key: String,
    ) -> BoxFuture<'static, ServiceResult<crate::service::ResolvedOutput>> {
        let found = self.answer(FakeOp::StackOutput, move |d| {
            let outputs = d
                .outputs
                .get(&stack.id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            outputs
                .iter()
                .find(|(o, _)| o.key == key)
                .map(|(o, value)| crate::service::ResolvedOutput {
                    key: o.key.clone(),
                    value: value.clone(),
                    error: None,
                })
                .ok_or_else(|| {
                    ServiceError::new(
                        crate::service::ErrorKind::NotFound,
                        format!("stack {} has no output {key}", stack.name),
                    )
                })
        });
        async move { found.await? }.boxed()
    }

    /// The resource as `stack_resources` gives it (depth 0 of its stack), its attributes
    /// and metadata from `resource_extras`, and its events newest first, bounded as Heat's
    /// `limit` bounds them.
    fn resource_detail(
        &self,
        stack: StackRef,
        resource: String,
    ) -> BoxFuture<'static, ServiceResult<crate::service::ResourceDetail>> {
        use crate::service::resource_show::RESOURCE_EVENTS;
        let found = self.answer(FakeOp::ResourceDetail, move |d| {
            let listed = nodegroup_resources(d, &stack, 0)
                .or_else(|| d.resources.get(&stack.id).cloned())
                .or_else(|| nested_resources(d, &stack, 0))
                .unwrap_or_default();
            let Some(r) = listed.into_iter().find(|r| r.name == resource) else {
                return Err(ServiceError::new(
                    crate::service::ErrorKind::NotFound,
                    format!("The Resource ({resource}) could not be found."),
                ));
            };
            let (attributes, metadata) = d
                .resource_extras
                .get(&(stack.id.clone(), resource.clone()))
                .cloned()
                .unwrap_or_default();
            let events: Vec<StackEvent> = d
                .events
                .get(&stack.id)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .rev()
                .filter(|e| e.resource_name == resource)
                .take(RESOURCE_EVENTS as usize)
                .cloned()
                .collect();
            Ok(crate::service::ResourceDetail {
                created_at: r.updated_at,
                resource: r,
                attributes,
                attributes_omitted: 0,
                metadata,
                events,
            })
        });
        async move { found.await? }.boxed()
    }

    /// The stack as listed, its outputs from `outputs`, parameters and template from
    /// `stack_extras`; an unknown stack is Heat's 404.
    fn stack_overview(
        &self,
        stack: StackRef,
    ) -> BoxFuture<'static, ServiceResult<crate::service::StackOverview>> {
        let found = self.answer(FakeOp::StackOverview, move |d| {
            let Some(summary) = d.stacks.iter().find(|s| s.stack.id == stack.id).cloned() else {
                return Err(ServiceError::new(
                    crate::service::ErrorKind::NotFound,
                    format!("The Stack ({}) could not be found.", stack.name),
                ));
            };
            let (parameters, template) = d.stack_extras.get(&stack.id).cloned().unwrap_or_default();
            let outputs = d
                .outputs
                .get(&stack.id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            Ok(crate::service::StackOverview {
                summary,
                description: None,
                parameters,
                parameters_omitted: 0,
                outputs: outputs.iter().map(|(o, _)| o.clone()).collect(),
                tags: vec![],
                timeout_mins: Some(60),
                disable_rollback: Some(true),
                template,
            })
        });
        async move { found.await? }.boxed()
    }

    fn server_detail(
        &self,
        target: crate::model::ServerTarget,
    ) -> BoxFuture<'static, ServiceResult<crate::model::ServerDetail>> {
        let found = self.answer(FakeOp::ServerDetail, move |d| {
            let by_id = target.server_id.as_ref().and_then(|id| d.servers.get(id));
            by_id
                .or_else(|| d.servers.get(&target.name))
                .cloned()
                .ok_or_else(|| {
                    ServiceError::new(
                        crate::service::ErrorKind::NotFound,
                        format!("no Nova server named {}", target.name),
                    )
                })
        });
        async move { found.await? }.boxed()
    }

    fn poll_events(
        &self,
        stack: StackRef,
        _nested_depth: u32,
        cursor: EventCursor,
    ) -> BoxFuture<'static, ServiceResult<(Vec<StackEvent>, EventCursor)>> {
        self.answer(FakeOp::PollEvents, move |d| {
            let mut cursor = cursor;
            // Like Heat after a purge: always answer from the start; the cursor dedups.
            let page = d.events.get(&stack.id).cloned().unwrap_or_default();
            let fresh = cursor.ingest(page);
            (fresh, cursor)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn demo_has_requested_size_and_advances() {
        let fake = FakeCloud::demo(1000);
        let clusters = fake.list_clusters().await.unwrap();
        assert_eq!(clusters.len(), 4);
        let ngs = fake.list_nodegroups(clusters[0].clone()).await.unwrap();
        let total: u32 = ngs
            .iter()
            .filter(|g| g.role == Role::Worker)
            .map(|g| g.node_count)
            .sum();
        assert_eq!(total, 1000);
        let worker = ngs
            .iter()
            .find(|g| g.name == "default-worker")
            .unwrap()
            .clone();
        let updates: Vec<_> = fake.stream_nodes(worker.clone()).collect().await;
        assert!(matches!(updates.last(), Some(Ok(NodeUpdate::Done))));
        let stack = StackRef {
            name: "prod-k8s-default-worker".into(),
            id: worker.stack_id.clone().unwrap(),
        };
        let (first, cursor) = fake
            .poll_events(stack.clone(), 2, EventCursor::default())
            .await
            .unwrap();
        assert!(!first.is_empty());
        let (none, cursor) = fake.poll_events(stack.clone(), 2, cursor).await.unwrap();
        assert!(none.is_empty());
        fake.advance();
        let (more, _) = fake.poll_events(stack, 2, cursor).await.unwrap();
        assert!(!more.is_empty());
    }

    #[tokio::test]
    async fn injected_errors_are_returned() {
        let fake = FakeCloud::demo(10);
        fake.set_error(
            FakeOp::ListClusters,
            Some(ServiceError::new(
                crate::service::ErrorKind::Transport,
                "connection refused",
            )),
        );
        assert!(fake.list_clusters().await.is_err());
        fake.set_error(FakeOp::ListClusters, None);
        assert!(fake.list_clusters().await.is_ok());
    }
}
