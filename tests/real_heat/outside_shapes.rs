//! Stack shapes an outside tester wrote (tests/fixtures/discovery/outside, modelled on the
//! public documentation of TripleO, heat-templates' autoscaling and load-balancer examples,
//! Sahara's decomposed clusters and the like, by someone who had not read caldera's code),
//! created on a real OpenStack Heat on 127.0.0.1, with the checks they made by hand repeated
//! as an operator would see them:
//!
//! - `caldera nodegroups STACK` lists the groups of servers, not the groups of volumes, VIPs
//!   or random strings, nor a lone server;
//! - `caldera rollout start STACK/GROUP --image NEW` without `--yes` (nothing is sent) names
//!   the stack parameter the group's servers boot from, or refuses with its reason: no single
//!   parameter sets the image (a `str_replace`, a `list_join`, an attribute, a literal, a
//!   nested template's default, a member booting two images) and the operator is shown the
//!   `--set` command; or the parameter is read by another group or server too, which Heat
//!   would update unheld, and the operator is shown `--let-heat-update`;
//! - for TripleO's Compute role and a member whose server is three nested stacks down, a real
//!   rollout completes: each member's servers boot the new image (read from Heat, server by
//!   server), the other groups' members are not updated, and no `pre-update` hook is left in
//!   the stack's environment.
//!
//! What each group's answer should be is the table below, read from the fixture the test
//! creates (which parameter its templates pass down to the servers), not from caldera.
//!
//! `scripts/real-heat-suite.sh` starts a Heat and runs these with `--ignored`; HEAT_URL must
//! point at it.

use crate::support::heat_wait::wait_status;
use crate::support::real_heat_client::{caldera_journaled, fixture, heat, unique};
use caldera::api::heat::{HeatClient, ResourceQuery, StackCreate};
use caldera::model::StackRef;
use caldera::ops::discover::discover_groups;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The image every check asks for (TripleO's `ComputeImage` constrains it to `overcloud-*`).
const NEW_IMAGE: &str = "overcloud-full-17.2";

/// What `rollout start STACK/GROUP --image NEW_IMAGE` should answer, from the fixture.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The group's servers, and no other resource, boot from this stack parameter.
    Parameter(&'static str),
    /// No single parameter of the stack sets the image: refused, with the `--set` command.
    NoParameter,
    /// The parameter is read too by this other resource (a group or a lone server), which
    /// Heat would update in the same update with no hook: refused unless the operator lets
    /// Heat update it.
    AlsoReadBy(&'static str),
}

/// One shape: its templates (name in the template -> fixture under `outside/`), the types
/// it maps in `resource_registry` beside the stand-ins, and what each node group should get.
struct Shape {
    prefix: &'static str,
    top: &'static str,
    files: &'static [(&'static str, &'static str)],
    registry: &'static [(&'static str, &'static str)],
    /// `parameter_defaults` of the environment (TripleO sets its images there).
    parameter_defaults: fn() -> Value,
    parameters: fn() -> Value,
    /// The stand-in registered as `OS::Nova::Server` (a fixture under `discovery/`).
    server: &'static str,
    /// Every node group, in the order `caldera nodegroups` lists them (by name).
    groups: &'static [(&'static str, Expect)],
}

fn none() -> Value {
    json!({})
}

/// Octavia's and Designate's types, absent from this Heat: `OS::Heat::None` stands in.
const OCTAVIA: &[(&str, &str)] = &[
    ("OS::Octavia::LoadBalancer", "OS::Heat::None"),
    ("OS::Octavia::Listener", "OS::Heat::None"),
    ("OS::Octavia::Pool", "OS::Heat::None"),
    ("OS::Octavia::HealthMonitor", "OS::Heat::None"),
    ("OS::Octavia::PoolMember", "OS::Heat::None"),
    ("OS::Designate::RecordSet", "OS::Heat::None"),
];

fn octavia_parameters() -> Value {
    json!({"image": "ubuntu-22.04", "flavor": "m1.small", "worker_flavor": "m1.tiny", "subnet": "sub1"})
}

/// TripleO: roles are `OS::TripleO::<Role>` aliases of one role template, whose server is an
/// `OS::TripleO::Server` alias of a template holding the Nova server and its ctlplane port.
const TRIPLEO: Shape = Shape {
    prefix: "out-tripleo",
    top: "tripleo/top.yaml",
    files: &[
        ("role.yaml", "tripleo/role.yaml"),
        ("server-wrap.yaml", "tripleo/server-wrap.yaml"),
    ],
    registry: &[
        ("OS::TripleO::Controller", "role.yaml"),
        ("OS::TripleO::Compute", "role.yaml"),
        ("OS::TripleO::CephStorage", "role.yaml"),
        ("OS::TripleO::Server", "server-wrap.yaml"),
    ],
    parameter_defaults: || {
        json!({"ControllerImage": "overcloud-full", "ComputeImage": "overcloud-full-17.1",
               "CephStorageImage": "overcloud-full"})
    },
    // Two computes (the template's default is 3): the rollout's time is per member.
    parameters: || json!({"ComputeCount": 2}),
    server: "server.yaml",
    groups: &[
        ("CephStorage", Expect::Parameter("CephStorageImage")),
        ("Compute", Expect::Parameter("ComputeImage")),
        ("Controller", Expect::Parameter("ControllerImage")),
    ],
};

/// heat-templates' autoscaling + lb_server: an AutoScalingGroup and a ResourceGroup of the
/// same member (server, data volume, attachment), both reading `image`; a db server apart.
const LBAAS: Shape = Shape {
    prefix: "out-lbaas",
    top: "lbaas/top.yaml",
    files: &[("lb_server.yaml", "lbaas/lb_server.yaml")],
    registry: &[],
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[
        ("asg", Expect::AlsoReadBy("workers")),
        ("workers", Expect::AlsoReadBy("asg")),
    ],
};

/// Members three nested stacks deep, a nested template's default image, an image from a
/// key of a `json` parameter, two servers per member booting two images.
const DEEP: Shape = Shape {
    prefix: "out-deep",
    top: "deep/top.yaml",
    files: &[
        ("defaulted.yaml", "deep/defaulted.yaml"),
        ("l1.yaml", "deep/l1.yaml"),
        ("l2.yaml", "deep/l2.yaml"),
        ("l3.yaml", "deep/l3.yaml"),
        ("plain.yaml", "deep/plain.yaml"),
        ("two.yaml", "deep/two.yaml"),
    ],
    registry: &[],
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[
        ("deep4", Expect::Parameter("deep_image")),
        ("defaulted", Expect::NoParameter),
        ("mapped", Expect::NoParameter),
        ("twoserv", Expect::NoParameter),
    ],
};

/// An app with a sidecar (two images per member), a literal image (heat-templates'
/// resource_group example), blue/green groups sharing one image parameter.
const SIDECAR: Shape = Shape {
    prefix: "out-sidecar",
    top: "c/top.yaml",
    files: &[("app_with_sidecar.yaml", "c/app_with_sidecar.yaml")],
    registry: &[],
    parameter_defaults: none,
    parameters: || json!({"app_image": "app-1.0", "sidecar_image": "envoy-1.27", "image": "rhel-9.2"}),
    server: "server.yaml",
    groups: &[
        ("app_group", Expect::NoParameter),
        ("blue", Expect::AlsoReadBy("green")),
        ("cirros_group", Expect::NoParameter),
        ("green", Expect::AlsoReadBy("blue")),
    ],
};

/// A bastion server booting the nodes' image.
const BASTION: Shape = Shape {
    prefix: "out-bastion",
    top: "bast/top.yaml",
    files: &[("plain.yaml", "bast/plain.yaml")],
    registry: &[],
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[("nodes", Expect::AlsoReadBy("bastion"))],
};

/// Images no single parameter sets (`str_replace`, `list_join`, `get_attr`, a literal)
/// beside a group that reads one.
const REFUSALS: Shape = Shape {
    prefix: "out-refusals",
    top: "refuse/top.yaml",
    files: &[
        ("literal_member.yaml", "refuse/literal_member.yaml"),
        ("plain_member.yaml", "refuse/plain_member.yaml"),
        ("sr_member.yaml", "refuse/sr_member.yaml"),
    ],
    registry: &[],
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[
        ("g_attr", Expect::NoParameter),
        ("g_join", Expect::NoParameter),
        ("g_literal", Expect::NoParameter),
        ("g_ok", Expect::Parameter("ok_image")),
        ("g_strrep", Expect::NoParameter),
    ],
};

/// heat-templates' Octavia example: the web tier a nested stack holding the group, each
/// member wrapping its VM in another nested stack; a group of random strings beside it.
const OCTAVIA_WRAPPED: Shape = Shape {
    prefix: "out-octavia-wrapped",
    top: "b/top.yaml",
    files: &[
        ("app_tier.yaml", "b/app_tier.yaml"),
        ("lb_member.yaml", "b/lb_member.yaml"),
        ("vm.yaml", "b/vm.yaml"),
    ],
    registry: OCTAVIA,
    parameter_defaults: none,
    parameters: octavia_parameters,
    server: "server.yaml",
    groups: &[("app_tier/web_nodes", Expect::Parameter("image"))],
};

/// The same web tier with the member's server directly in it.
const OCTAVIA_FLAT: Shape = Shape {
    prefix: "out-octavia-flat",
    top: "b/top.yaml",
    files: &[
        ("app_tier.yaml", "b/app_tier.yaml"),
        ("lb_member.yaml", "b2/lb_member.yaml"),
    ],
    registry: OCTAVIA,
    parameter_defaults: none,
    parameters: octavia_parameters,
    server: "server.yaml",
    groups: &[("app_tier/web_nodes", Expect::Parameter("image"))],
};

/// heat-templates' AutoScaling WordPress: the web servers' image boots the database too.
const WORDPRESS: Shape = Shape {
    prefix: "out-wordpress",
    top: "sa/autoscaling.yaml",
    files: &[("lb_server.yaml", "sa/lb_server.yaml")],
    registry: &[
        ("OS::Neutron::PoolMember", "OS::Heat::None"),
        ("OS::Neutron::HealthMonitor", "OS::Heat::None"),
        ("OS::Neutron::Pool", "OS::Heat::None"),
        ("OS::Neutron::LoadBalancer", "OS::Heat::None"),
        ("OS::Neutron::FloatingIP", "OS::Heat::None"),
        ("OS::Ceilometer::Alarm", "OS::Heat::None"),
    ],
    parameter_defaults: none,
    parameters: || {
        json!({"database_flavor": "m1.large", "external_network_id": "public",
               "flavor": "m1.small", "image": "fedora-38", "key": "ops", "subnet_id": "sub1"})
    },
    server: "outside/server_user_data.yaml",
    groups: &[("web_server_group", Expect::AlsoReadBy("db"))],
};

/// Sahara's decomposed cluster: a master group one nested stack down, a worker group, a
/// group of journal volumes and a wait condition.
const SAHARA: Shape = Shape {
    prefix: "out-sahara",
    top: "shape/cluster.yaml",
    files: &[
        ("control.yaml", "shape/control.yaml"),
        ("dn_instance.yaml", "shape/dn_instance.yaml"),
    ],
    registry: &[],
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[
        (
            "control_plane/namenodes",
            Expect::Parameter("nn_glance_ref"),
        ),
        ("datanodes", Expect::Parameter("dn_glance_ref")),
    ],
};

/// The second round's stand-ins (`outside/round2/standins`): a server taking Nova's
/// `name`, `networks`, `security_groups` and `metadata`, with no address where it has no
/// network; a port; a floating IP on a port; a volume.
const ROUND2_STANDINS: &[(&str, &str)] = &[
    ("OS::Nova::Server", "round2-server.yaml"),
    ("OS::Neutron::Port", "round2-port.yaml"),
    ("OS::Neutron::FloatingIP", "round2-fip.yaml"),
    ("OS::Cinder::Volume", "round2-volume.yaml"),
];

/// heat-templates' servers_in_existing_neutron_net + autoscaling, second round: web members
/// of a port, a server and a floating IP; a db tier of bare servers (a literal flavor, an
/// image parameter whose default is `24.04`); a batch tier with no network; a VIP port, a
/// group of volumes and a random password, which are not node groups.
const WEBFARM: Shape = Shape {
    prefix: "out-webfarm",
    top: "round2/webfarm/top.yaml",
    files: &[
        ("web_member.yaml", "round2/webfarm/web_member.yaml"),
        ("round2-server.yaml", "round2/standins/server.yaml"),
        ("round2-port.yaml", "round2/standins/port.yaml"),
        ("round2-fip.yaml", "round2/standins/fip.yaml"),
        ("round2-volume.yaml", "round2/standins/volume.yaml"),
    ],
    registry: ROUND2_STANDINS,
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[
        ("batch", Expect::Parameter("batch_image")),
        ("db", Expect::Parameter("db_image")),
        ("web", Expect::Parameter("web_image")),
    ],
};

/// Members of two servers booting two images (an app and a log-shipper sidecar).
const TWO_IMAGES: Shape = Shape {
    prefix: "out-twoimg",
    top: "round2/twoimg/top.yaml",
    files: &[
        ("member.yaml", "round2/twoimg/member.yaml"),
        ("round2-server.yaml", "round2/standins/server.yaml"),
        ("round2-port.yaml", "round2/standins/port.yaml"),
        ("round2-fip.yaml", "round2/standins/fip.yaml"),
        ("round2-volume.yaml", "round2/standins/volume.yaml"),
    ],
    registry: ROUND2_STANDINS,
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[("nodes", Expect::NoParameter)],
};

/// heat-templates' resource_group examples: groups of VIP ports, random strings and volumes
/// beside a group of bare servers whose flavor is computed from a random string.
const NOT_NODES: Shape = Shape {
    prefix: "out-misc",
    top: "round2/misc/top.yaml",
    files: &[
        ("round2-server.yaml", "round2/standins/server.yaml"),
        ("round2-port.yaml", "round2/standins/port.yaml"),
        ("round2-fip.yaml", "round2/standins/fip.yaml"),
        ("round2-volume.yaml", "round2/standins/volume.yaml"),
    ],
    registry: ROUND2_STANDINS,
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[("nodes", Expect::Parameter("image"))],
};

/// Sahara's heat engine (sahara/service/heat/templates.py), second round: a master and a
/// worker group of one instance template, whose only output is Sahara's instance object
/// `{name, instance_id, internal_ip, management_ip}` (a port's fixed address and a floating
/// IP's); both groups boot the cluster's one image parameter.
const SAHARA_INSTANCES: Shape = Shape {
    prefix: "out-sahara-inst",
    top: "round2/sahara/top.yaml",
    files: &[
        ("instance.yaml", "round2/sahara/instance.yaml"),
        ("round2-server.yaml", "round2/standins/server.yaml"),
        ("round2-port.yaml", "round2/standins/port.yaml"),
        ("round2-fip.yaml", "round2/standins/fip.yaml"),
        ("round2-volume.yaml", "round2/standins/volume.yaml"),
    ],
    registry: ROUND2_STANDINS,
    parameter_defaults: none,
    parameters: none,
    server: "server.yaml",
    groups: &[
        ("master", Expect::AlsoReadBy("worker")),
        ("worker", Expect::AlsoReadBy("master")),
    ],
};

fn outside(path: &str) -> String {
    fixture(&format!("../discovery/outside/{path}"))
}

/// Creates the shape's stack with the stand-ins of tests/fixtures/discovery registered under
/// the real type names; waits for CREATE_COMPLETE.
async fn create(heat: &HeatClient, shape: &Shape) -> StackRef {
    let template: Value = serde_yaml_ng::from_str(&outside(shape.top)).expect("template YAML");
    let mut files: BTreeMap<String, String> = shape
        .files
        .iter()
        .map(|(n, p)| (n.to_string(), outside(p)))
        .collect();
    let stand_ins = [
        ("OS::Nova::Server", shape.server),
        ("OS::Neutron::Port", "port.yaml"),
        ("OS::Cinder::Volume", "volume.yaml"),
        ("OS::Cinder::VolumeAttachment", "outside/attach.yaml"),
    ];
    let mut registry = serde_json::Map::new();
    for (t, file) in stand_ins {
        files.insert(file.to_string(), fixture(&format!("../discovery/{file}")));
        registry.insert(t.to_string(), json!(file));
    }
    for (t, target) in shape.registry {
        registry.insert(t.to_string(), json!(target));
    }
    let create = StackCreate {
        name: unique(shape.prefix),
        template,
        files,
        environment: Some(json!({
            "resource_registry": registry,
            "parameter_defaults": (shape.parameter_defaults)(),
        })),
        parameters: serde_json::from_value((shape.parameters)()).expect("parameters"),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    wait_status(heat, &stack, "CREATE_COMPLETE").await;
    stack
}

/// `caldera ARGS` with a journal of its own: (exited 0, stdout and stderr together).
fn run(journal: &std::path::Path, args: &[&str]) -> (bool, String) {
    let (ok, out, err) = caldera_journaled(journal, args);
    (ok, format!("{out}\n{err}"))
}

/// What the operator is told for one group, checked against what the fixture says.
fn check_rollout_answer(stack: &StackRef, group: &str, expect: Expect, ok: bool, said: &str) {
    let target = format!("{}/{group}", stack.name);
    // Nothing is sent without --yes on a stdin that is not a terminal: it exits non-zero
    // either way.
    assert!(!ok, "{target}: {said}");
    match expect {
        Expect::Parameter(p) => {
            assert!(
                said.contains(&format!("set {p}={NEW_IMAGE}"))
                    && said.contains("give --yes to proceed"),
                "{target} should roll out through {p}: {said}"
            );
            assert!(!said.contains("refused"), "{target}: {said}");
        }
        Expect::NoParameter => assert!(
            said.contains("refused: which parameter is")
                && said.contains("cannot be told from its templates")
                && said.contains(&format!(
                    "caldera rollout start {target} --set PARAMETER={NEW_IMAGE}"
                )),
            "{target} should be refused with a --set command: {said}"
        ),
        Expect::AlsoReadBy(other) => assert!(
            said.contains("refused:")
                && said.contains(&format!("{other} ("))
                // `reads image too`, `reads default_image_id too`: the parameter's name.
                && said.contains(" too: Heat would update it in the same update")
                && said.contains(&format!("--let-heat-update {other}")),
            "{target} should be refused for {other}, which reads the image too: {said}"
        ),
    }
}

/// Creates the shape and checks `nodegroups` and each group's `rollout start` answer (the
/// groups' questions asked at once: nothing is sent, and each waits on Heat's preview).
async fn created_and_checked(shape: &Shape) -> (HeatClient, StackRef, tempfile::TempDir) {
    let heat = heat().await;
    let stack = create(&heat, shape).await;
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("journal.jsonl");
    // The table on stdout alone: stderr may say Heat is slow to answer.
    let (ok, listed, err) =
        caldera_journaled(&journal, &["nodegroups", &stack.name, "--format", "csv"]);
    assert!(ok, "{listed}\n{err}");
    let names: Vec<&str> = listed
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| l.split(',').next())
        .collect();
    let want: Vec<&str> = shape.groups.iter().map(|(g, _)| *g).collect();
    assert_eq!(names, want, "{}: {listed}", stack.name);
    let answers: Vec<(bool, String)> = std::thread::scope(|s| {
        let asked: Vec<_> = shape
            .groups
            .iter()
            .map(|(group, _)| {
                let target = format!("{}/{group}", stack.name);
                let journal = &journal;
                s.spawn(move || {
                    run(
                        journal,
                        &["rollout", "start", &target, "--image", NEW_IMAGE],
                    )
                })
            })
            .collect();
        asked
            .into_iter()
            .map(|h| h.join().expect("caldera ran"))
            .collect()
    });
    for ((group, expect), (ok, said)) in shape.groups.iter().zip(&answers) {
        check_rollout_answer(&stack, group, *expect, *ok, said);
    }
    let after = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(
        after.summary.status.raw, "CREATE_COMPLETE",
        "nothing sent without --yes"
    );
    (heat, stack, dir)
}

/// The image of every `OS::Nova::Server` inside a member (at any depth), read from the
/// parameters Heat gave the stand-in's stack.
async fn server_images(heat: &HeatClient, member: &StackRef) -> Vec<String> {
    let query = ResourceQuery {
        nested_depth: Some(6),
        filters: vec![("type".into(), "OS::Nova::Server".into())],
        ..Default::default()
    };
    let servers = heat
        .list_resources(member, &query)
        .await
        .expect("resources");
    let mut images = Vec::new();
    for s in servers {
        let nested = s.resource.nested.expect("the stand-in's stack");
        let p = heat
            .get_stack(&nested, false)
            .await
            .expect("server")
            .parameters;
        images.push(p.get("image").cloned().expect("an image parameter"));
    }
    images
}

/// What Heat did to the other groups' members, resource by resource: each leaf resource (one
/// with no nested stack of its own, at any depth inside a member) with its `updated_time` (its
/// creation time until Heat updates it) and status, and each server's image. Heat hands every
/// nested stack of the stack the update (a template resource's stack is always updated, its
/// resources each deciding), so a member's own stack `updated_time` moves even when nothing in
/// it changes; a leaf resource's moves only when Heat updated it.
async fn others_state(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
) -> BTreeMap<String, String> {
    let mut seen = BTreeMap::new();
    let everything = ResourceQuery {
        nested_depth: Some(6),
        ..Default::default()
    };
    for g in discover_groups(heat, stack).await.expect("groups") {
        if g.path == group {
            continue;
        }
        for m in &g.members {
            let member = m.stack.as_ref().expect("member stack");
            let at = format!("{}/{}", g.path, m.name);
            for r in heat
                .list_resources(member, &everything)
                .await
                .expect("resources")
            {
                let r = r.resource;
                if r.nested.is_some() {
                    continue;
                }
                let owner = r.owner.map(|o| o.id).unwrap_or_default();
                seen.insert(
                    format!("{at}: {owner}/{}", r.name),
                    format!("{:?} {}", r.updated_at, r.status.raw),
                );
            }
            seen.insert(
                format!("{at}: images"),
                format!("{:?}", server_images(heat, member).await),
            );
        }
    }
    seen
}

/// A real rollout of `group` to NEW_IMAGE: completes, each member's servers boot it, the
/// other groups' members are not updated, no `pre-update` hook is left.
async fn rolled_out(heat: &HeatClient, stack: &StackRef, dir: &tempfile::TempDir, group: &str) {
    let before = others_state(heat, stack, group).await;
    assert!(!before.is_empty(), "other groups to watch");
    let members_before = discover_groups(heat, stack)
        .await
        .expect("groups")
        .into_iter()
        .find(|g| g.path == group)
        .expect("the group")
        .members
        .len();
    let target = format!("{}/{group}", stack.name);
    let started = std::time::Instant::now();
    let (ok, said) = run(
        &dir.path().join("journal.jsonl"),
        &[
            "rollout",
            "start",
            &target,
            "--image",
            NEW_IMAGE,
            "--poll-secs",
            "0.5",
            "--yes",
        ],
    );
    // The wall time and caldera's own summary (per node p50 / p95), for the suite's log.
    let summary: Vec<&str> = said.lines().filter(|l| l.contains("per node")).collect();
    eprintln!(
        "{target}: rollout took {:?}; {summary:?}",
        started.elapsed()
    );
    assert!(ok && said.contains("completed"), "{said}");
    let groups = discover_groups(heat, stack).await.expect("groups");
    let rolled = groups.iter().find(|g| g.path == group).expect("the group");
    assert_eq!(
        rolled.members.len(),
        members_before,
        "no member added or removed"
    );
    for m in &rolled.members {
        let images = server_images(heat, m.stack.as_ref().expect("member stack")).await;
        assert!(!images.is_empty(), "{group}/{}: no server found", m.name);
        assert!(
            images.iter().all(|i| i == NEW_IMAGE),
            "{group}/{}: {images:?}",
            m.name
        );
    }
    assert_eq!(
        others_state(heat, stack, group).await,
        before,
        "Heat changed the other groups' members"
    );
    let hooks = heat
        .get_environment_hooks(stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "hooks left: {hooks:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn tripleo_roles_through_registry_aliases_and_a_compute_rollout() {
    let (heat, stack, dir) = created_and_checked(&TRIPLEO).await;
    rolled_out(&heat, &stack, &dir, "Compute").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn members_three_stacks_deep_and_a_rollout_of_them() {
    let (heat, stack, dir) = created_and_checked(&DEEP).await;
    rolled_out(&heat, &stack, &dir, "deep4").await;
}

macro_rules! shape_tests {
    ($($test:ident => $shape:ident,)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = "needs a real Heat (HEAT_URL)"]
            async fn $test() {
                created_and_checked(&$shape).await;
            }
        )*
    };
}

shape_tests! {
    an_autoscaling_group_and_a_resource_group_sharing_an_image => LBAAS,
    an_app_with_a_sidecar_a_literal_image_and_blue_green_groups => SIDECAR,
    a_bastion_booting_the_nodes_image => BASTION,
    images_no_single_parameter_sets => REFUSALS,
    an_octavia_web_tier_whose_members_wrap_their_vm => OCTAVIA_WRAPPED,
    an_octavia_web_tier_whose_members_hold_their_server => OCTAVIA_FLAT,
    autoscaling_wordpress_whose_image_boots_the_database_too => WORDPRESS,
    a_sahara_decomposed_cluster_with_journal_volumes => SAHARA,
    groups_of_ports_strings_and_volumes_beside_bare_servers => NOT_NODES,
}

/// The web farm's groups, and a rollout that would also change how many web members there
/// are: refused, naming the scale (Heat would delete members the rollout waits on), and
/// nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn a_web_farm_with_floating_ips_and_a_rollout_that_sets_the_count() {
    let (heat, stack, dir) = created_and_checked(&WEBFARM).await;
    let journal = dir.path().join("journal.jsonl");
    let target = format!("{}/web", stack.name);
    let (ok, said) = run(
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "web_count=2",
            "--set",
            "web_image=cirros-0.7",
            "--yes",
        ],
    );
    assert!(!ok, "{said}");
    assert!(
        said.contains("web_count is the member count of web")
            && said.contains(&format!("caldera scale {target} --count 2")),
        "{said}"
    );
    let detail = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(detail.summary.status.raw, "CREATE_COMPLETE", "nothing sent");
}

/// One row of `caldera ips --format csv`: (group, member, addresses, name, note).
type CsvRow = (String, String, Vec<String>, String, String);

/// `caldera ips TARGET --format csv`: its rows (stdout alone), and stderr.
fn ips_csv(journal: &std::path::Path, target: &str) -> (Vec<CsvRow>, String) {
    let (ok, out, err) = caldera_journaled(journal, &["ips", target, "--format", "csv"]);
    assert!(ok, "ips {target} exits 0: {out}\n{err}");
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("group,member,index,addresses,name,left_out,note"),
        "{out}"
    );
    let rows = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), 7, "{l}");
            assert_eq!(cells[5], "0", "nothing left out: {l}");
            let addresses = cells[3].split_whitespace().map(str::to_string).collect();
            let group = cells[0].rsplit('/').next().unwrap_or_default().to_string();
            (
                group,
                cells[1].into(),
                addresses,
                cells[4].into(),
                cells[6].into(),
            )
        })
        .collect();
    (rows, err)
}

/// A stack output's value as Heat resolves it.
async fn output(heat: &HeatClient, stack: &StackRef, key: &str) -> Value {
    heat.show_output(stack, key).await.expect("output").value
}

/// The strings of a list output, in order.
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|s| s.as_str().expect("a string").to_string())
        .collect()
}

/// `caldera ips` of the web farm, against Heat's own outputs and the fixture's server names:
/// every node a row in member order (groups by path, members by number), named as its
/// server (`name: db-%index%`, `web-INDEX`, `batch-%index%`); the batch tier's servers,
/// which have no network, are rows saying so, and the command succeeds; each web node holds
/// its port's address and its floating IP, each labelled with the output it came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn a_web_farms_nodes_in_member_order_named_and_its_batch_tier_without_a_network() {
    let heat = heat().await;
    let stack = create(&heat, &WEBFARM).await;
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("journal.jsonl");
    let (rows, err) = ips_csv(&journal, &stack.name);
    let db_ips = strings(&output(&heat, &stack, "db_ips").await);
    let private = strings(&output(&heat, &stack, "web_private_ips").await);
    let public = strings(&output(&heat, &stack, "web_public_ips").await);
    // The fixture's counts: batch_count 2, db_count 2, web_count 3.
    let mut want: Vec<CsvRow> = Vec::new();
    for i in 0..2 {
        let (member, name) = (i.to_string(), format!("batch-{i}"));
        want.push(("batch".into(), member, vec![], name, "no network".into()));
    }
    for (i, ip) in db_ips.iter().enumerate() {
        let (member, name) = (i.to_string(), format!("db-{i}"));
        want.push(("db".into(), member, vec![ip.clone()], name, String::new()));
    }
    for (i, (fixed, floating)) in private.iter().zip(&public).enumerate() {
        let addresses = vec![fixed.clone(), floating.clone()];
        let (member, name) = (i.to_string(), format!("web-{i}"));
        want.push(("web".into(), member, addresses, name, String::new()));
    }
    assert_eq!(rows, want, "{err}");
    assert!(
        err.contains("5/7 addresses, 0 failed, 2 with no network"),
        "{err}"
    );
    // The table: each web address labelled with its output, each db one with its network.
    let (ok, out, err) = caldera_journaled(&journal, &["ips", &stack.name]);
    assert!(ok, "{err}");
    let web: Vec<&str> = out.lines().filter(|l| l.contains("/web ")).collect();
    assert_eq!(web.len(), 3, "{out}");
    for (i, row) in web.iter().enumerate() {
        assert!(
            row.contains(&format!(
                "{} (private_ip) {} (public_ip)",
                private[i], public[i]
            )),
            "{row}"
        );
    }
    assert!(
        out.lines()
            .filter(|l| l.contains("/batch "))
            .all(|l| l.ends_with("(no network)")),
        "{out}"
    );
}

/// Sahara's instance objects: each node's addresses are its port's fixed address and its
/// floating IP, as Heat's own `master_instances`/`worker_instances` outputs give them, found
/// without `--output-key`, each row named as the instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn sahara_instance_objects_give_each_node_its_fixed_and_floating_address() {
    let (heat, stack, dir) = created_and_checked(&SAHARA_INSTANCES).await;
    let journal = dir.path().join("journal.jsonl");
    let (rows, err) = ips_csv(&journal, &stack.name);
    let mut want: Vec<CsvRow> = Vec::new();
    for (group, key) in [
        ("master", "master_instances"),
        ("worker", "worker_instances"),
    ] {
        let instances = output(&heat, &stack, key).await;
        for (i, inst) in instances.as_array().expect("a list").iter().enumerate() {
            let text = |k: &str| inst[k].as_str().expect(k).to_string();
            want.push((
                group.into(),
                i.to_string(),
                vec![text("internal_ip"), text("management_ip")],
                text("name"),
                String::new(),
            ));
        }
    }
    assert_eq!(want.len(), 4, "the fixture's 1 master and 3 workers");
    assert_eq!(rows, want, "{err}");
    assert!(err.contains("4/4 addresses, 0 failed"), "{err}");
}

/// Members of an app server and a sidecar: `nodegroups` says both images and both flavors
/// (the fixture's `app_image` 1.0 and `sidecar_image` 2.0, `m1.small` and `m1.tiny`), by
/// one rule for both columns; `ips` labels the one address output as it would several.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn members_booting_two_images() {
    let (_heat, stack, dir) = created_and_checked(&TWO_IMAGES).await;
    let journal = dir.path().join("journal.jsonl");
    let (ok, out, err) =
        caldera_journaled(&journal, &["nodegroups", &stack.name, "--format", "json"]);
    assert!(ok, "{err}");
    let groups: Value = serde_json::from_str(&out).expect("JSON");
    let nodes = &groups[0];
    assert_eq!(nodes["name"], "nodes", "{out}");
    assert_eq!(nodes["image"], "mixed (1.0, 2.0)", "{out}");
    assert_eq!(nodes["flavor"], "mixed (m1.small, m1.tiny)", "{out}");
    let (ok, out, err) = caldera_journaled(&journal, &["ips", &format!("{}/nodes", stack.name)]);
    assert!(ok, "{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows.iter().all(|r| r.ends_with(" (app_ip)")), "{out}");
}
