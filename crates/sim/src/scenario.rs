//! Built-in scenarios. Each builds its history on a virtual timeline with the same engine
//! that runs live, then the timeline is slid so that its end is "now": the console opens
//! on a cloud that already has events, durations and members at mixed stages.

use crate::faults::{Fault, FaultKind};
use crate::world::build::{create_cluster, create_template, run_virtual};
use crate::world::group::{self, HookRule, Phase, UpdateRequest};
use crate::world::{Action, ClusterSpec, FailSpec, GroupSpec, Resource, State, Status, World};

pub const NAMES: &[&str] = &[
    "demo",
    "empty",
    "small",
    "hostile",
    "magnum-one-image",
    "bench-1000",
    "bench-10000",
];

/// What the `hostile` scenario puts in every piece of text the APIs return: a screen wipe,
/// a window-title change ending in BEL, a C1 CSI, a right-to-left override, a bare CR
/// and DEL. A console or command that passes any of it to the terminal is caught by the
/// tests (the title `pwned`, the raw bytes).
pub const HOSTILE: &str = "\x1b[2J\x1b]0;pwned\x07\u{9b}31m\u{202e}\r\x7f";

/// Fault modifiers a scenario name may carry after `+` (e.g. `demo+flaky+slow`), so the
/// `caldera sim` command can serve a misbehaving cloud without code.
pub const MODIFIERS: &[(&str, &str)] = &[
    ("flaky", "5% of service requests answer 503"),
    ("slow", "every service request takes 200 ms more"),
    (
        "throttled",
        "10% of service requests answer 429 with Retry-After: 2",
    ),
    ("drops", "2% of service requests lose their connection"),
];

/// Splits `demo+flaky` into the scenario and its faults.
pub fn parse(name: &str) -> Result<(&str, Vec<Fault>), String> {
    let mut parts = name.split('+');
    let base = parts.next().unwrap_or("");
    let mut faults = Vec::new();
    for m in parts {
        faults.push(match m {
            "flaky" => Fault::new(FaultKind::Status(503)).rate(0.05),
            "slow" => Fault::new(FaultKind::Latency(std::time::Duration::from_millis(200))),
            "throttled" => Fault::new(FaultKind::Throttle {
                retry_after_secs: 2,
            })
            .rate(0.10),
            "drops" => Fault::new(FaultKind::Drop).rate(0.02),
            other => {
                let known: Vec<&str> = MODIFIERS.iter().map(|(k, _)| *k).collect();
                return Err(format!(
                    "unknown scenario modifier '+{other}' (known: {})",
                    known.join(", ")
                ));
            }
        });
    }
    Ok((base, faults))
}

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

/// Builds `name` into `w` (which must be empty). `bench-N` / `scale-N` accept any N.
pub fn build(w: &mut World, name: &str) -> Result<(), String> {
    let real_now = w.clock.now_ms();
    let start = real_now - 12 * HOUR;
    w.virtual_now = Some(start);
    match name {
        "demo" => demo(w),
        "empty" => {}
        "small" => small(w),
        "hostile" => hostile(w),
        "magnum-one-image" => magnum_one_image(w),
        other => {
            let n = other
                .strip_prefix("bench-")
                .or_else(|| other.strip_prefix("scale-"))
                .and_then(|n| n.parse::<u32>().ok());
            match n {
                Some(n) if n <= 100_000 => bench(w, n),
                _ => {
                    w.virtual_now = None;
                    return Err(format!(
                        "unknown scenario '{name}' (known: {})",
                        NAMES.join(", ")
                    ));
                }
            }
        }
    }
    let end = w.virtual_now.unwrap_or(real_now);
    w.virtual_now = None;
    w.shift_times(real_now - end);
    Ok(())
}

fn spec(name: &str, role: &str, count: u32, image: &str, flavor: &str, zone: &str) -> GroupSpec {
    GroupSpec::new(name, role, count, image, flavor, zone)
}

fn all_idle(w: &World) -> bool {
    w.groups.iter().all(|g| g.op.is_none())
}

fn finish_all(w: &mut World) {
    let until = w.now() + 6 * HOUR;
    run_virtual(w, until, 1000, all_idle);
}

fn advance(w: &mut World, ms: i64) {
    let until = w.now() + ms;
    run_virtual(w, until, 1000, |_| false);
}

fn group_of(w: &World, cluster: usize, ng: &str) -> usize {
    w.clusters[cluster]
        .groups
        .iter()
        .copied()
        .find(|g| w.groups[*g].name == ng)
        .unwrap_or(0)
}

fn update_group(w: &mut World, g: usize, set: &[(&str, String)]) {
    let mut params = w
        .stack(w.groups[g].ng_stack)
        .map(|s| s.params.clone())
        .unwrap_or_default();
    // Logical keys (`count`, `image`) name the group's own parameters in its template.
    let layout = w.groups[g].layout;
    for (k, v) in set {
        params.insert(layout.key(k).to_string(), v.clone());
    }
    let _ = group::start_update(
        w,
        g,
        UpdateRequest {
            params,
            hooks: None,
            action: Action::Update,
        },
    );
}

fn small(w: &mut World) {
    let t = create_template(w, "k8s-v1.29", "fedora-coreos-39", "v1.29.4");
    create_template(w, "k8s-v1.30", "fedora-coreos-40", "v1.30.2");
    let mut master = spec(
        "default-master",
        "master",
        1,
        "fedora-coreos-39",
        "m1.medium",
        "az-1",
    );
    master.is_default = true;
    let mut worker = spec(
        "default-worker",
        "worker",
        3,
        "fedora-coreos-39",
        "m1.large",
        "az-1",
    );
    worker.is_default = true;
    worker.max_count = Some(20);
    create_cluster(
        w,
        ClusterSpec {
            name: "small".into(),
            template: t,
            groups: vec![master, worker],
        },
    );
    finish_all(w);
}

/// Magnum's layout edited so that masters and minions boot one image parameter (the
/// cluster stack's `minion_image`): cluster `one-image`, 3 masters and 4 minions on
/// `fedora-coreos-39`. An update of `minion_image` changes both groups in the same stack
/// update; unheld, Heat updates every member of a group at once (`update_max_batch_size`
/// 0), so the control plane would be rebuilt all at once.
fn magnum_one_image(w: &mut World) {
    let t = create_template(w, "k8s-v1.29", "fedora-coreos-39", "v1.29.4");
    let mut master = spec(
        "default-master",
        "master",
        3,
        "fedora-coreos-39",
        "m1.medium",
        "az-1",
    );
    master.is_default = true;
    let mut worker = spec(
        "default-worker",
        "worker",
        4,
        "fedora-coreos-39",
        "m1.large",
        "az-1",
    );
    worker.is_default = true;
    let c = create_cluster(
        w,
        ClusterSpec {
            name: "one-image".into(),
            template: t,
            groups: vec![master, worker],
        },
    );
    finish_all(w);
    let masters = group_of(w, c, "default-master");
    w.groups[masters].image_param = Some("minion_image".into());
    if let Some(s) = w.stack_mut(w.groups[masters].ng_stack) {
        s.params.insert("update_max_batch_size".into(), "0".into());
    }
}

/// One cluster whose every name, reason, description, output and fault holds
/// [`HOSTILE`]: a tenant who can name things (a template's resources, a server, a cluster)
/// or make a service fail with a message of their choosing. The JSON is shaped as the
/// real APIs shape it; only the text is hostile.
fn hostile(w: &mut World) {
    let h = HOSTILE;
    let t = create_template(
        w,
        &format!("tmpl{h}"),
        &format!("img{h}"),
        &format!("v1{h}"),
    );
    let mut master = spec(
        &format!("master{h}"),
        "master",
        1,
        &format!("img{h}"),
        &format!("flavor{h}"),
        &format!("az{h}"),
    );
    master.is_default = true;
    let mut worker = spec(
        &format!("worker{h}"),
        "worker",
        3,
        &format!("img{h}"),
        &format!("flavor{h}"),
        &format!("az{h}"),
    );
    worker.is_default = true;
    worker
        .fail
        .insert(1, FailSpec::nova(&format!("No valid host{h}")));
    let c = create_cluster(
        w,
        ClusterSpec {
            name: format!("evil{h}"),
            template: t,
            groups: vec![master, worker],
        },
    );
    finish_all(w);
    // The cluster's own stack: a description, a resource whose name and type come from the
    // tenant's template, its events with a hostile reason, and an output value.
    let six = w.clusters[c].stack;
    let name = w.intern(&format!("res{h}"));
    let rtype = w.intern(&format!("My::Type{h}"));
    let now = w.now();
    if let Some(st) = w.stack_mut(six) {
        st.description = format!("the cluster{h}\nsecond line{h}");
        st.resources.push(Resource {
            name: name.clone(),
            rtype,
            physical_id: format!("phys{h}"),
            status: Status::new(Action::Init, State::Complete),
            reason: String::new(),
            created_ms: now,
            updated_ms: now,
            nested: None,
            required_by: vec![],
            value: None,
            description: "",
        });
        if let Some(api) = st.resource_mut("api_address") {
            api.value = Some(format!("172.24.4.10{h}"));
        }
    }
    let reason = format!("state changed{h}");
    for state in [State::InProgress, State::Failed] {
        w.set_resource_status(six, &name, Status::new(Action::Create, state), &reason);
    }
    w.set_stack_status(
        six,
        Status::new(Action::Create, State::Failed),
        format!("Resource CREATE failed: {reason}"),
    );
    w.clusters[c].health_reason_override = Some(format!("api down{h}"));
}

fn bench(w: &mut World, n: u32) {
    // Static nodes: build them without the leaf delay (10 000 one-second starts would
    // cost a minute of virtual stepping), then restore it for live operations.
    let leaf = std::mem::replace(&mut w.cfg.leaf_delay_ms, 0);
    bench_nodes(w, n);
    w.cfg.leaf_delay_ms = leaf;
}

fn bench_nodes(w: &mut World, n: u32) {
    let t = create_template(w, "k8s-v1.29", "fedora-coreos-39", "v1.29.4");
    create_template(w, "k8s-v1.30", "fedora-coreos-40", "v1.30.2");
    let mut master = spec(
        "default-master",
        "master",
        3,
        "fedora-coreos-39",
        "m1.large",
        "az-1",
    );
    master.is_default = true;
    let mut worker = spec(
        "default-worker",
        "worker",
        n,
        "fedora-coreos-39",
        "m1.xlarge",
        "az-1",
    );
    worker.is_default = true;
    create_cluster(
        w,
        ClusterSpec {
            name: format!("bench-{n}"),
            template: t,
            groups: vec![master, worker],
        },
    );
    finish_all(w);
}

fn demo(w: &mut World) {
    let old = create_template(w, "k8s-v1.29", "fedora-coreos-39", "v1.29.4");
    let new = create_template(w, "k8s-v1.30", "fedora-coreos-40", "v1.30.2");
    let img_old = "fedora-coreos-39";
    let img_new = w.templates[new].image.clone();

    // prod-east: 1000 workers rolling out an image upgrade, heterogeneous groups.
    let mut masters = spec("default-master", "master", 3, img_old, "m1.large", "az-1");
    masters.is_default = true;
    let mut workers = spec(
        "default-worker",
        "worker",
        1000,
        img_old,
        "m1.xlarge",
        "az-1",
    );
    workers.is_default = true;
    workers.max_count = Some(1500);
    workers.min_count = 100;
    let mut az2 = spec("workers-az2", "worker", 40, img_old, "m1.large", "az-2");
    az2.max_count = Some(200);
    let mut az3 = spec("workers-az3", "worker", 20, img_old, "c1.xlarge", "az-3");
    az3.max_count = Some(100);
    let gpu = spec("gpu-az3", "worker", 4, img_old, "g1.large", "az-3");
    let prod = create_cluster(
        w,
        ClusterSpec {
            name: "prod-east".into(),
            template: old,
            groups: vec![masters, workers, az2, az3, gpu],
        },
    );

    let mut m = spec("default-master", "master", 1, img_old, "m1.medium", "az-1");
    m.is_default = true;
    let mut wk = spec("default-worker", "worker", 3, img_old, "m1.medium", "az-2");
    wk.is_default = true;
    create_cluster(
        w,
        ClusterSpec {
            name: "dev-small".into(),
            template: old,
            groups: vec![m, wk],
        },
    );
    advance(w, 10 * MIN);

    // batch-jobs: one member cannot be scheduled, so the node group fails to create.
    let mut m = spec("default-master", "master", 1, img_old, "m1.medium", "az-1");
    m.is_default = true;
    let mut wk = spec("default-worker", "worker", 8, img_old, "r1.2xlarge", "az-2");
    wk.is_default = true;
    wk.fail.insert(
        5,
        FailSpec::nova("No valid host was found. There are not enough hosts available."),
    );
    create_cluster(
        w,
        ClusterSpec {
            name: "batch-jobs".into(),
            template: old,
            groups: vec![m, wk],
        },
    );
    advance(w, 10 * MIN);

    let mut m = spec("default-master", "master", 1, img_old, "m1.medium", "az-1");
    m.is_default = true;
    let mut wk = spec("default-worker", "worker", 6, img_old, "m1.large", "az-3");
    wk.is_default = true;
    let staging = create_cluster(
        w,
        ClusterSpec {
            name: "staging".into(),
            template: old,
            groups: vec![m, wk],
        },
    );
    finish_all(w);
    capi_demo(w);

    // staging: an image update whose member 2 never finishes (stuck IN_PROGRESS).
    advance(w, HOUR);
    let sg = group_of(w, staging, "default-worker");
    w.groups[sg].stuck.insert(2);
    update_group(w, sg, &[("image", img_new.clone())]);
    let staging_update = w.now();
    advance(w, 4 * HOUR);

    // prod-east: upgrade of default-worker in batches of 50, three members of the
    // current batch held by pre-update hooks (an operator releases them one by one).
    let pg = group_of(w, prod, "default-worker");
    w.groups[pg].hooks = ["412", "433", "447"]
        .iter()
        .map(|p| HookRule {
            pattern: p.to_string(),
            hooks: vec!["pre-update".into()],
        })
        .collect();
    let resource = w.groups[pg].layout.resource();
    if let Some(s) = w.stack_mut(w.groups[pg].ng_stack) {
        s.environment["resource_registry"]["resources"][resource] = serde_json::json!({
            "412": {"hooks": ["pre-update"]}, "433": {"hooks": ["pre-update"]}, "447": {"hooks": ["pre-update"]}
        });
    }
    update_group(
        w,
        pg,
        &[
            ("image", img_new.clone()),
            ("update_max_batch_size", "50".into()),
        ],
    );
    w.groups[pg].version = w.templates[new].coe_version.clone();
    let updated = move |w: &World, n: usize| {
        w.groups[pg]
            .members
            .values()
            .filter(|m| m.image == img_new && matches!(m.phase, Phase::Idle))
            .count()
            >= n
    };
    let until = w.now() + 6 * HOUR;
    run_virtual(w, until, 1000, |w| updated(w, 418));

    // prod-east workers-az3: a scale-out from 20 to 60 that has just started.
    let g3 = group_of(w, prod, "workers-az3");
    update_group(w, g3, &[("count", "60".into())]);
    let until = w.now() + HOUR;
    run_virtual(w, until, 1000, |w| updated(w, 428));
    let batch = w.cluster_by_ident("batch-jobs");
    deployments_demo(w, staging, batch, staging_update);
}

/// The demo's software deployments (`OS::Heat::SoftwareDeployment` `node_config` in each
/// worker's member stack): in `staging`, the image update's deployment on member 2 never
/// hears from its agent while its siblings signalled in 30-40 s; in `batch-jobs`, member
/// 3's script failed (code 2, a stderr). Drawn with ids of their own, so that everything
/// else draws what it drew before they existed.
fn deployments_demo(w: &mut World, staging: usize, batch: Option<usize>, update_at: i64) {
    let main_ids = std::mem::replace(&mut w.ids, crate::world::Ids::new(0xDE91));
    use crate::world::deployments::Ending;
    let sg = group_of(w, staging, "default-worker");
    let members: Vec<(u32, usize, String)> = w.groups[sg]
        .members
        .iter()
        .map(|(i, m)| (*i, m.stack, m.server_id.clone()))
        .collect();
    for (i, stack, server) in members {
        let ending = match i {
            2 => Ending::Silent,
            i => Ending::Signalled(30 + 2 * i64::from(i)),
        };
        let started = update_at + 60_000 * i64::from(i);
        w.add_deployment(stack, &server, Action::Update, started, ending);
    }
    if let Some(batch) = batch {
        let bg = group_of(w, batch, "default-worker");
        let created = w.groups[bg].created_ms;
        let members: Vec<(u32, usize, String)> = w.groups[bg]
            .members
            .iter()
            .filter(|(_, m)| m.fault.is_none())
            .map(|(i, m)| (*i, m.stack, m.server_id.clone()))
            .collect();
        for (i, stack, server) in members {
            let ending = match i {
                3 => Ending::Fails(25),
                i => Ending::Signalled(31 + i64::from(i)),
            };
            w.add_deployment(stack, &server, Action::Create, created + 90_000, ending);
        }
    }
    w.ids = main_ids;
}

/// The Cluster API cluster of the demo.
pub const CAPI_CLUSTER: &str = "capi-prod";
/// Its node group one of whose machines Nova cannot place: the cluster stays
/// `CREATE_IN_PROGRESS` (Cluster API keeps retrying) with that machine in ERROR.
pub const CAPI_STALLED_GROUP: &str = "gpu";

/// A template `capi-prod` can be upgraded to (a new image and Kubernetes version).
pub const CAPI_UPGRADE_TEMPLATE: &str = "k8s-v1.31-capi";

/// `capi-prod`: a Magnum cluster on vexxhost's `magnum-cluster-api` (API 1.13+ shapes, no
/// Heat stack, Nova servers named after their Machines). Built while the rest of the demo is
/// idle and with its own random numbers, so that everything else draws exactly what it drew
/// before it existed (same ids, durations and rollout stages).
fn capi_demo(w: &mut World) {
    let main_ids = std::mem::replace(&mut w.ids, crate::world::Ids::new(0xCA91));
    capi_build(w);
    w.ids = main_ids;
}

fn capi_build(w: &mut World) {
    use crate::world::build::create_cluster_with;
    use crate::world::capi::{self, SimCapi};
    let image = "ubuntu-2204-kube-v1.30.2";
    let t = create_template(w, "k8s-v1.30-capi", image, "v1.30.2");
    let name = capi::cluster_name(w);
    let mut m = spec("default-master", "master", 3, image, "m1.large", "az-1");
    m.is_default = true;
    let mut wk = spec("default-worker", "worker", 5, image, "m1.large", "az-1");
    wk.is_default = true;
    wk.min_count = 1;
    wk.max_count = Some(20);
    let mut gpu = spec(CAPI_STALLED_GROUP, "worker", 2, image, "g1.large", "az-3");
    gpu.fail.insert(
        1,
        FailSpec::nova("No valid host was found. There are not enough hosts available."),
    );
    for g in [&mut m, &mut wk, &mut gpu] {
        g.action_wait_secs = 40;
    }
    let c = create_cluster_with(
        w,
        ClusterSpec {
            name: CAPI_CLUSTER.into(),
            template: t,
            groups: vec![m, wk, gpu],
        },
        Some(SimCapi {
            name,
            owners: Default::default(),
        }),
    );
    // The template an upgrade of it goes to (Magnum's upgrade takes a template).
    create_template(
        w,
        CAPI_UPGRADE_TEMPLATE,
        "ubuntu-2204-kube-v1.31.1",
        "v1.31.1",
    );
    let groups = w.clusters[c].groups.clone();
    let start = w.now();
    for step in 1..=600 {
        if groups.iter().all(|g| w.groups[*g].op.is_none()) {
            break;
        }
        w.virtual_now = Some(start + step * 1000);
        for g in &groups {
            group::tick(w, *g);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SimClock;
    use crate::world::{Phase, WorldConfig};

    fn world() -> World {
        World::new(
            SimClock::new(1_800_000_000_000, 1.0),
            42,
            WorldConfig {
                project_id: "p".into(),
                project_name: "demo".into(),
                user_id: "u".into(),
                user_name: "operator".into(),
                max_events_per_stack: 1000,
                create_median_ms: 90_000.0,
                update_median_ms: 45_000.0,
                duration_sigma: 0.35,
                leaf_delay_ms: 1000,
                floating_ips: false,
            },
        )
    }

    #[test]
    fn demo_has_mixed_stages() {
        let mut w = world();
        build(&mut w, "demo").unwrap();
        let prod = w.cluster_by_ident("prod-east").unwrap();
        let pg = group_of(&w, prod, "default-worker");
        let c = group::phase_counts(&w.groups[pg]);
        assert_eq!(c.get("paused"), Some(&3), "{c:?}");
        assert!(c.get("running").copied().unwrap_or(0) > 0, "{c:?}");
        assert!(c.get("pending").copied().unwrap_or(0) > 400, "{c:?}");
        let g3 = group_of(&w, prod, "workers-az3");
        assert!(w.groups[g3]
            .members
            .values()
            .any(|m| matches!(m.phase, Phase::Running { .. })));
        let failed = w.cluster_by_ident("batch-jobs").unwrap();
        let fg = group_of(&w, failed, "default-worker");
        assert_eq!(
            w.stack(w.groups[fg].ng_stack).unwrap().status.to_string(),
            "CREATE_FAILED"
        );
        let st = w.cluster_by_ident("staging").unwrap();
        let sg = group_of(&w, st, "default-worker");
        assert_eq!(
            w.stack(w.groups[sg].ng_stack).unwrap().status.to_string(),
            "UPDATE_IN_PROGRESS"
        );
        // Timeline slid to now: nothing is in the future.
        let now = w.now();
        assert!(w
            .stacks()
            .all(|(_, s)| s.events.iter().all(|e| e.time_ms <= now + 1000)));
    }

    #[test]
    fn demo_has_a_cluster_api_cluster_named_as_the_driver_names_it() {
        let mut w = world();
        build(&mut w, "demo").unwrap();
        let c = w.cluster_by_ident(CAPI_CLUSTER).unwrap();
        let capi = w.clusters[c].capi.clone().expect("on Cluster API");
        assert!(capi.name.starts_with("kube-") && capi.name.len() == 10);
        let worker = group_of(&w, c, "default-worker");
        for m in w.groups[worker].members.values() {
            let rest = m
                .server_name
                .strip_prefix(&format!("{}-default-worker-", capi.name))
                .unwrap_or_else(|| panic!("{}", m.server_name));
            assert_eq!(rest.split('-').count(), 3, "{}", m.server_name);
            assert!(matches!(m.phase, Phase::Idle));
        }
        let gpu = group_of(&w, c, CAPI_STALLED_GROUP);
        let c = group::phase_counts(&w.groups[gpu]);
        assert_eq!(c.get("failed"), Some(&1), "{c:?}");
        // Heat shows none of its stacks.
        let hidden = w.stacks().filter(|(ix, _)| w.heat_hidden(*ix)).count();
        assert!(hidden > 0);
        assert!(w
            .stacks()
            .filter(|(ix, _)| !w.heat_hidden(*ix))
            .all(|(_, s)| !s.name.starts_with(CAPI_CLUSTER)));
    }

    #[test]
    fn unknown_scenario_is_an_error() {
        let mut w = world();
        assert!(build(&mut w, "nope").is_err());
        assert!(build(&mut w, "bench-3").is_ok());
    }
}
