//! Discovery from Heat's semantics (issue 24, items 3 and 4) on a real OpenStack Heat on
//! 127.0.0.1, on shapes of templates nobody here chose (tests/fixtures/discovery): an
//! AutoScalingGroup whose addresses exist only through `outputs_list` of `networks`, racks of
//! nodes with a nested map inventory, a Sahara-style JSON template whose outputs are lists of
//! instance objects, groups of volumes, VIP ports and random strings beside a server group,
//! and a two-tier application whose image parameters are named differently.
//!
//! There is no Nova, Neutron or Cinder here: provider templates of our own stand in for them,
//! registered under the real type names (`OS::Nova::Server`, ...) so Heat reports the real
//! types, which is all discovery reads. Every address is compared, member by member, with what
//! Heat itself resolves (the stack's outputs, or each member's).
//!
//! `scripts/real-heat-suite.sh` starts a Heat and runs these with `--ignored`; HEAT_URL must
//! point at it.

use crate::support::heat_wait::wait_status;
use crate::support::real_heat_client::{connect, fixture, heat, unique};
use caldera::api::heat::{HeatClient, StackCreate};
use caldera::drivers::any_group::{plan_group_scale, Allow};
use caldera::model::{Cluster, Node, NodeGroup, Role, StackRef};
use caldera::ops::discover::discover_groups;
use caldera::ops::ips::{stream_group_ips, IpEvent, IpOptions, IpStats};
use caldera::service::live::LiveService;
use caldera::service::plain_stack;
use caldera::service::{CloudService, NodeUpdate};
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The stand-ins, by the type they stand for.
const STAND_INS: [(&str, &str); 3] = [
    ("OS::Nova::Server", "server.yaml"),
    ("OS::Neutron::Port", "port.yaml"),
    ("OS::Cinder::Volume", "volume.yaml"),
];

fn shape(path: &str) -> String {
    fixture(&format!("../discovery/{path}"))
}

/// Starts the console's upgrade `plan` through `op` and waits (5 minutes at most) for the
/// rollout to complete.
async fn upgrade_to_the_end(
    op: &caldera::service::live_operator::LiveOperator,
    plan: caldera::drivers::UpgradePlan,
) {
    use caldera::service::operator::Operator;
    let handle = op
        .start_upgrade(plan, None)
        .await
        .expect("started")
        .expect("a rollout caldera drives");
    let end = tokio::time::timeout(std::time::Duration::from_secs(300), handle.wait())
        .await
        .expect("the rollout ends");
    assert_eq!(
        end.state,
        caldera::rollout::RolloutState::Completed,
        "{:?}",
        end.state
    );
}

/// The two-tier application (`twotier/`): app servers and database servers in two
/// ResourceGroups of 2, each member a nested stack reading its image by another name.
async fn two_tier(heat: &HeatClient, name: &str) -> StackRef {
    two_tier_with(heat, name, |_| {}).await
}

/// The two-tier application with its top template changed by `edit` first (a constraint, a
/// resource beside the groups).
async fn two_tier_with(heat: &HeatClient, name: &str, edit: impl FnOnce(&mut Value)) -> StackRef {
    let mut template: Value =
        serde_yaml_ng::from_str(&shape("twotier/top.yaml")).expect("template YAML");
    edit(&mut template);
    create_from(heat, name, template, &[("tier.yaml", "twotier/tier.yaml")]).await
}

/// Creates a stack of `top` with its `files` (name in template -> fixture) and the
/// stand-ins registered under the real types; waits for CREATE_COMPLETE.
async fn create(heat: &HeatClient, prefix: &str, top: &str, files: &[(&str, &str)]) -> StackRef {
    let template: Value = serde_yaml_ng::from_str(&shape(top)).expect("template YAML/JSON");
    create_from(heat, prefix, template, files).await
}

/// [`create`] of a top template already read (a fixture changed by the test).
async fn create_from(
    heat: &HeatClient,
    prefix: &str,
    template: Value,
    files: &[(&str, &str)],
) -> StackRef {
    let mut all: BTreeMap<String, String> = files
        .iter()
        .map(|(n, p)| (n.to_string(), shape(p)))
        .collect();
    let mut registry = serde_json::Map::new();
    for (t, file) in STAND_INS {
        all.insert(file.to_string(), shape(file));
        registry.insert(t.to_string(), json!(file));
    }
    let create = StackCreate {
        name: unique(prefix),
        template,
        files: all,
        environment: Some(json!({ "resource_registry": registry })),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    wait_status(heat, &stack, "CREATE_COMPLETE").await;
    stack
}

#[derive(Debug, Default)]
struct Seen {
    members: Vec<String>,
    addresses: BTreeMap<String, BTreeSet<String>>,
    failed: BTreeMap<String, String>,
    pending: BTreeSet<String>,
    /// Each member's network names, where the source named them.
    networks: BTreeMap<String, BTreeSet<String>>,
    stats: IpStats,
}

async fn ips(heat: &HeatClient, stack: &StackRef, group: Option<&str>) -> Seen {
    ips_with(heat, stack, group, IpOptions::default()).await
}

async fn ips_with(
    heat: &HeatClient,
    stack: &StackRef,
    group: Option<&str>,
    options: IpOptions,
) -> Seen {
    let mut seen = Seen::default();
    let mut stream = stream_group_ips(
        heat.clone(),
        None,
        stack.clone(),
        group.map(str::to_string),
        options,
    );
    while let Some(event) = stream.next().await {
        match event.expect("ip stream") {
            IpEvent::Members(m) => seen.members = m.into_iter().map(|m| m.name).collect(),
            IpEvent::Address(a, _) => {
                // Every named network's addresses are among the member's.
                for ips in a.networks.values() {
                    assert!(ips.iter().all(|ip| a.addresses.contains(ip)), "{a:?}");
                }
                seen.networks
                    .insert(a.member.clone(), a.networks.keys().cloned().collect());
                let set = a.addresses.into_iter().collect();
                assert!(seen.addresses.insert(a.member, set).is_none());
            }
            IpEvent::Failed { member, reason } => {
                seen.failed.insert(member, reason);
            }
            IpEvent::Pending { member, .. } => {
                seen.pending.insert(member);
            }
            // A later source's addresses replace the member's set (the first ones kept).
            IpEvent::MoreAddresses(a, _) => {
                let set: BTreeSet<String> = a.addresses.into_iter().collect();
                let before = seen.addresses.insert(a.member, set.clone());
                assert!(before.is_some_and(|b| b.is_subset(&set)), "{set:?}");
            }
            IpEvent::Done(stats) => seen.stats = stats,
            IpEvent::Plan { .. } | IpEvent::Named { .. } | IpEvent::Server { .. } => {}
            IpEvent::NoNetwork(a) => panic!("{} has no network", a.member),
        }
    }
    seen
}

async fn output(heat: &HeatClient, stack: &StackRef, key: &str) -> Value {
    let out = heat.show_output(stack, key).await.expect("output show");
    assert!(out.error.is_none(), "{key}: {:?}", out.error);
    out.value
}

/// Every string leaf of a value, as a set.
fn leaves(v: &Value) -> BTreeSet<String> {
    match v {
        Value::String(s) => [s.clone()].into(),
        Value::Array(a) => a.iter().flat_map(leaves).collect(),
        Value::Object(m) => m.values().flat_map(leaves).collect(),
        _ => BTreeSet::new(),
    }
}

async fn node_group_paths(heat: &HeatClient, stack: &StackRef) -> Vec<(String, usize)> {
    discover_groups(heat, stack)
        .await
        .expect("discover")
        .into_iter()
        .map(|g| (g.path, g.members.len()))
        .collect()
}

fn assert_complete(seen: &Seen, members: usize) {
    assert_eq!(seen.members.len(), members, "{seen:?}");
    assert_eq!(seen.stats.found, members, "{seen:?}");
    assert!(
        seen.failed.is_empty() && seen.pending.is_empty(),
        "{seen:?}"
    );
}

#[tokio::test]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn an_autoscaling_group_whose_addresses_are_only_in_outputs_list() {
    let heat = heat().await;
    let stack = create(
        &heat,
        "disc-asg",
        "asg/top.yaml",
        &[("member.yaml", "asg/member.yaml")],
    )
    .await;
    assert_eq!(
        node_group_paths(&heat, &stack).await,
        vec![("pool".to_string(), 5)]
    );
    let seen = ips(&heat, &stack, None).await;
    assert_complete(&seen, 5);
    // Heat's own: outputs_list of `networks`, one {private: [ip], storage: [ip]} per member,
    // in an order of Heat's: compared as the set of each member's addresses.
    let heat_says: BTreeSet<BTreeSet<String>> = output(&heat, &stack, "networks")
        .await
        .as_array()
        .expect("a list")
        .iter()
        .map(leaves)
        .collect();
    let ours: BTreeSet<BTreeSet<String>> = seen.addresses.values().cloned().collect();
    assert_eq!(ours, heat_says);
    // Each address with its network's name; `--network` picks one.
    let names: BTreeSet<String> = ["private".to_string(), "storage".to_string()].into();
    assert!(
        seen.networks.values().all(|n| *n == names),
        "{:?}",
        seen.networks
    );
    let storage = IpOptions {
        network: Some("storage".into()),
        ..IpOptions::default()
    };
    let picked = ips_with(&heat, &stack, None, storage).await;
    assert_complete(&picked, 5);
    let heat_storage: BTreeSet<BTreeSet<String>> = output(&heat, &stack, "networks")
        .await
        .as_array()
        .expect("a list")
        .iter()
        .map(|n| leaves(&n["storage"]))
        .collect();
    let ours: BTreeSet<BTreeSet<String>> = picked.addresses.values().cloned().collect();
    assert_eq!(ours, heat_storage);
    // A network no member has: every member says so.
    let none = IpOptions {
        network: Some("public".into()),
        ..IpOptions::default()
    };
    let missing = ips_with(&heat, &stack, None, none).await;
    assert_eq!(missing.failed.len(), 5, "{missing:?}");
}

#[tokio::test]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn racks_of_nodes_are_node_groups_the_racks_are_not() {
    let heat = heat().await;
    let files = [
        ("rack.yaml", "racks/rack.yaml"),
        ("node.yaml", "racks/node.yaml"),
    ];
    let stack = create(&heat, "disc-racks", "racks/top.yaml", &files).await;
    let expected: Vec<(String, usize)> = (0..3).map(|r| (format!("racks/{r}/nodes"), 4)).collect();
    assert_eq!(node_group_paths(&heat, &stack).await, expected);
    // Heat's inventory: rack name -> host name -> address; the host's index is its member.
    let inventory = output(&heat, &stack, "inventory").await;
    let switches = leaves(&output(&heat, &stack, "bmc").await);
    let all = ips(&heat, &stack, None).await;
    assert_complete(&all, 12);
    for rack in 0..3 {
        let path = format!("racks/{rack}/nodes");
        let seen = ips(&heat, &stack, Some(&path)).await;
        assert_complete(&seen, 4);
        for (member, addresses) in &seen.addresses {
            let host = format!("rack-{rack}-host-{member}");
            let heat_says = &inventory[format!("rack-{rack}")][&host];
            assert!(
                addresses.contains(heat_says.as_str().expect("an address")),
                "{path}/{member}: {addresses:?}, Heat: {heat_says}"
            );
            // The rack's switch port is no node's address.
            assert!(addresses.is_disjoint(&switches), "{addresses:?}");
            assert_eq!(all.addresses[&format!("{path}/{member}")], *addresses);
        }
    }
    // Scale goes through the parameter the inner group's count reads, at every level.
    let plan = plan_group_scale(
        &heat,
        &stack,
        "racks/1/nodes",
        Some(5),
        &[],
        &Allow::default(),
    )
    .await
    .expect("scale plan");
    assert!(plan.refusals.is_empty(), "{:?}", plan.refusals);
    assert_eq!(plan.scale, Some((4, 5)));
    assert_eq!(
        plan.parameters().keys().collect::<Vec<_>>(),
        vec!["nodes_per_rack"]
    );
}

#[tokio::test]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn a_sahara_style_json_template_with_lists_of_instance_objects() {
    let heat = heat().await;
    let files = [("instance.template", "sahara/instance.template")];
    let stack = create(&heat, "disc-sahara", "sahara/top.json", &files).await;
    assert_eq!(
        node_group_paths(&heat, &stack).await,
        vec![("master".to_string(), 1), ("worker".to_string(), 8)]
    );
    let seen = ips(&heat, &stack, None).await;
    assert_complete(&seen, 9);
    for group in ["master", "worker"] {
        // Heat's own: a list of {name, physical_id, internal_ip, management_ip} in index order.
        let instances = output(&heat, &stack, &format!("{group}_instances")).await;
        for (i, instance) in instances.as_array().expect("a list").iter().enumerate() {
            let ours = &seen.addresses[&format!("{group}/{i}")];
            let heat_says: BTreeSet<String> = ["internal_ip", "management_ip"]
                .iter()
                .filter_map(|k| instance[*k].as_str().map(str::to_string))
                .collect();
            assert_eq!(ours, &heat_says, "{group}/{i}");
        }
    }
}

#[tokio::test]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn groups_of_volumes_vips_and_strings_are_not_node_groups() {
    let heat = heat().await;
    let stack = create(&heat, "disc-mixed", "mixed/top.yaml", &[]).await;
    assert_eq!(
        node_group_paths(&heat, &stack).await,
        vec![("web".to_string(), 3)]
    );
    let seen = ips(&heat, &stack, None).await;
    // Nothing left "still being created" on a COMPLETE stack.
    assert_complete(&seen, 3);
    let web = output(&heat, &stack, "web_ips").await;
    let vips = leaves(&output(&heat, &stack, "vip_ips").await);
    for (i, ip) in web.as_array().expect("a list").iter().enumerate() {
        let ours = &seen.addresses[&i.to_string()];
        assert!(
            ours.contains(ip.as_str().expect("an address")),
            "{i}: {ours:?}"
        );
        assert!(
            ours.is_disjoint(&vips),
            "a VIP taken for node {i}: {ours:?}"
        );
    }
    // Not a node group, but still a group of the stack: asking for it says what there is.
    let mut stream = stream_group_ips(
        heat.clone(),
        None,
        stack.clone(),
        Some("volumes".into()),
        IpOptions::default(),
    );
    let err = stream
        .next()
        .await
        .expect("an answer")
        .expect_err("no node group");
    assert!(
        err.to_string()
            .contains("has no node group at 'volumes' (node groups: web)")
            && err.is_not_found(),
        "{err}"
    );
}

#[tokio::test]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn a_two_tier_application_whose_image_parameters_have_other_names() {
    let heat = heat().await;
    let stack = two_tier(&heat, "disc-2tier").await;
    let groups = discover_groups(&heat, &stack).await.expect("discover");
    let paths: Vec<&str> = groups.iter().map(|g| g.path.as_str()).collect();
    assert_eq!(paths, vec!["app_tier", "db_tier"]);
    let seen = ips(&heat, &stack, None).await;
    assert_complete(&seen, 4);
    // Heat's own: each member's `vm_networks` output.
    for g in &groups {
        for m in &g.members {
            let member_stack = m.stack.as_ref().expect("a member stack");
            let heat_says = leaves(&output(&heat, member_stack, "vm_networks").await);
            assert_eq!(seen.addresses[&format!("{}/{}", g.path, m.name)], heat_says);
        }
    }
}

/// The node groups the console's panes show for a stack in context (`:ng`, `d`, the nodes
/// pane), through the service the console reads.
async fn console_view(stack: &StackRef) -> (Vec<NodeGroup>, Cluster, Vec<Node>) {
    let service = LiveService::new(connect().await);
    let cluster = plain_stack::cluster_of(&stack.id, &stack.name);
    let rows = service
        .list_nodegroups(cluster.clone())
        .await
        .expect("node group rows");
    let line = service.cluster(cluster).await.expect("cluster line");
    let mut updates =
        service.stream_nodes(NodeGroup::of_stack(&stack.id, &stack.name, Role::Other));
    let mut nodes = Vec::new();
    while let Some(update) = updates.next().await {
        match update.expect("node update") {
            NodeUpdate::Members(n) | NodeUpdate::Listed { nodes: n, .. } => nodes = n,
            NodeUpdate::Done => break,
            NodeUpdate::Address(_)
            | NodeUpdate::Named { .. }
            | NodeUpdate::AddressFailed { .. } => {}
        }
    }
    (rows, line, nodes)
}

#[tokio::test]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn the_console_on_a_plain_stack_shows_its_node_groups_counts_and_images() {
    let heat = heat().await;
    let stack = two_tier(&heat, "disc-2tier-console").await;
    let parameters = heat
        .get_stack(&stack, false)
        .await
        .expect("stack")
        .parameters;
    let (rows, line, nodes) = console_view(&stack).await;
    // Each group's image is the parameter its members' server reads, by whatever name.
    let shown: Vec<(&str, u32, Option<&str>)> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.node_count, r.image.as_deref()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (
                "app_tier",
                2,
                parameters.get("frontend_image").map(String::as_str)
            ),
            (
                "db_tier",
                2,
                parameters.get("database_image").map(String::as_str)
            ),
        ]
    );
    assert_eq!(line.status.raw, "CREATE_COMPLETE");
    assert_eq!((line.node_count, line.nodegroup_count), (4, Some(2)));
    // The nodes pane: each member with its own group's image.
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    for n in &nodes {
        let param = if n.key.member.starts_with("app_tier/") {
            "frontend_image"
        } else {
            "database_image"
        };
        assert_eq!(n.image.as_ref(), parameters.get(param), "{}", n.key.member);
    }
    // `caldera nodegroups STACK` says the same images as the console's rows.
    let (ok, out, err) =
        crate::support::real_heat_client::caldera(&["nodegroups", &stack.name, "--format", "csv"]);
    assert!(ok, "{err}");
    for (group, param) in [
        ("app_tier", "frontend_image"),
        ("db_tier", "database_image"),
    ] {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("{group},")))
            .unwrap_or_else(|| panic!("{group} listed: {out}"));
        let image = row.split(',').nth(4).unwrap_or_default();
        assert_eq!(
            Some(image),
            parameters.get(param).map(String::as_str),
            "{row}"
        );
    }

    // Beside groups that are not nodes: one row, the servers' image, their real count.
    let mixed = create(&heat, "disc-mixed-console", "mixed/top.yaml", &[]).await;
    let parameters = heat
        .get_stack(&mixed, false)
        .await
        .expect("stack")
        .parameters;
    let (rows, line, nodes) = console_view(&mixed).await;
    let shown: Vec<(&str, u32, Option<&String>)> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.node_count, r.image.as_ref()))
        .collect();
    assert_eq!(shown, vec![("web", 3, parameters.get("image"))]);
    assert_eq!((line.node_count, line.nodegroup_count), (3, Some(1)));
    assert_eq!(nodes.len(), 3, "{nodes:?}");

    // A group of racks' nodes drilled into: its members, counted.
    let files = [
        ("rack.yaml", "racks/rack.yaml"),
        ("node.yaml", "racks/node.yaml"),
    ];
    let racks = create(&heat, "disc-racks-console", "racks/top.yaml", &files).await;
    let (rows, line, _) = console_view(&racks).await;
    let names: Vec<(&str, u32)> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.node_count))
        .collect();
    assert_eq!(
        names,
        vec![
            ("racks/0/nodes", 4),
            ("racks/1/nodes", 4),
            ("racks/2/nodes", 4)
        ]
    );
    assert_eq!(line.node_count, 12);
}

/// The console's scale form on a plain stack (a cluster of a stack no driver owns, its node
/// group rows the groups Heat's types show): planned and applied as `caldera scale
/// STACK/GROUP` is, journaled before Heat hears of it, the other group untouched; an upgrade
/// from the form is refused with the command that does it, not a lookup of caldera's tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn the_console_scales_a_group_of_a_plain_stack_as_the_cli_does() {
    use crate::support::scenarios;
    use caldera::drivers::ScaleRequest;
    use caldera::journal::{Journal, Outcome};
    use caldera::service::operator::Operator;

    let heat = heat().await;
    let stack = two_tier(&heat, "disc-2tier-scale").await;
    let conn = connect().await;
    let service = LiveService::new(conn.clone());
    let cluster = plain_stack::cluster_of(&stack.id, &stack.name);
    let rows = service
        .list_nodegroups(cluster.clone())
        .await
        .expect("node group rows");
    let app = rows
        .iter()
        .find(|r| r.name == "app_tier")
        .expect("app_tier row")
        .clone();
    let dir = tempfile::tempdir().expect("dir");
    let journal = Journal::open(dir.path().join("journal.jsonl"));
    let op = scenarios::live_operator(
        &conn,
        scenarios::action_context(journal.clone(), "tester"),
        std::time::Duration::from_millis(200),
    );

    let request = ScaleRequest {
        count: Some(3),
        remove: Vec::new(),
    };
    let plan = op
        .plan_scale(cluster.clone(), app.clone(), request)
        .await
        .expect("plan");
    let lines = plan.lines().join("\n");
    assert!(lines.contains("members: 2 -> 3"), "{lines}");
    assert!(lines.contains("app_count"), "{lines}");
    // Heat lists both groups as updated, in no fixed order (it hands every nested stack the
    // update); the plan says which one's members change.
    let updated: Vec<&str> = lines
        .lines()
        .find_map(|l| l.trim().strip_prefix("Heat's preview, updated: "))
        .map(|list| list.split(", ").collect())
        .unwrap_or_default();
    assert!(updated.contains(&"app_tier"), "{lines}");
    assert!(updated.contains(&"db_tier"), "{lines}");
    assert!(
        lines.contains("db_tier: in Heat's preview because Heat hands every nested stack"),
        "{lines}"
    );
    assert_eq!((plan.from, plan.to), (2, 3));
    assert!(journal.read_all().unwrap_or_default().is_empty());

    op.apply_scale(plan, None).await.expect("apply");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let groups = discover_groups(&heat, &stack).await.expect("groups");
    let counts: Vec<(&str, usize)> = groups
        .iter()
        .map(|g| (g.path.as_str(), g.members.len()))
        .collect();
    assert_eq!(counts, vec![("app_tier", 3), ("db_tier", 2)]);
    let entries: Vec<(String, String, bool)> = journal
        .read_all()
        .expect("journal")
        .into_iter()
        .map(|e| {
            let ok = matches!(e.outcome, Outcome::Ok);
            (e.action, e.target, ok)
        })
        .collect();
    let target = format!("{}/app_tier", stack.name);
    assert_eq!(
        entries,
        vec![
            ("scale".to_string(), target.clone(), false),
            ("scale".to_string(), target.clone(), true)
        ]
    );

    // The same count again: refused, and the refusal journaled.
    let again = op
        .plan_scale(
            cluster.clone(),
            app.clone(),
            ScaleRequest {
                count: Some(3),
                remove: Vec::new(),
            },
        )
        .await
        .expect_err("nothing to scale");
    assert!(again.message.contains("already has 3 members"), "{again}");
    let refused = journal.read_all().expect("journal");
    assert!(
        matches!(
            refused.last().map(|e| &e.outcome),
            Some(Outcome::Refused { .. })
        ),
        "{refused:?}"
    );

    // A plan confirmed after someone else scaled the group further: the same count would now
    // remove a member the plan never showed. Planned again at apply, and refused (journaled)
    // rather than sent.
    let stale = op
        .plan_scale(
            cluster.clone(),
            app.clone(),
            ScaleRequest {
                count: Some(4),
                remove: Vec::new(),
            },
        )
        .await
        .expect("plan to 4");
    let behind = caldera::api::heat::StackUpdate {
        parameters: [("app_count".to_string(), json!("5"))].into(),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &behind)
        .await
        .expect("scaled behind");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let before = journal.read_all().expect("journal").len();
    let refused = op
        .apply_scale(stale, None)
        .await
        .expect_err("the group changed since the plan");
    assert!(
        refused
            .message
            .contains("has 5 members now (the plan said 3 -> 4); nothing was sent"),
        "{refused}"
    );
    let groups = discover_groups(&heat, &stack).await.expect("groups");
    assert_eq!(groups[0].members.len(), 5, "nothing removed");
    let after = journal.read_all().expect("journal");
    assert_eq!(after.len(), before + 1);
    assert!(
        matches!(
            after.last().map(|e| &e.outcome),
            Some(Outcome::Refused { .. })
        ),
        "{after:?}"
    );

    // The upgrade form: the parameter the group's servers boot from is found from Heat's
    // structure (the member's server reads `boot_image`, which app_tier passes from the
    // stack's `frontend_image`), planned with Heat's preview and rolled out member by member
    // on hooks; db_tier reads `database_image` and keeps its members.
    let plan = op
        .plan_upgrade(
            cluster.clone(),
            app,
            "nginx-1.28".into(),
            caldera::rollout::RolloutOptions {
                batch_size: 5,
                ..Default::default()
            },
        )
        .await
        .expect("the image parameter is found from the templates");
    let lines = plan.lines().join("\n");
    assert!(lines.contains("set frontend_image=nginx-1.28"), "{lines}");
    assert!(
        lines.contains("Heat's preview, updated: app_tier, db_tier"),
        "{lines}"
    );
    assert!(
        lines.contains("db_tier: in Heat's preview because Heat hands every nested stack"),
        "{lines}"
    );
    upgrade_to_the_end(&op, plan).await;
    let parameters = heat
        .get_stack(&stack, false)
        .await
        .expect("stack")
        .parameters;
    assert_eq!(
        parameters.get("frontend_image").map(String::as_str),
        Some("nginx-1.28")
    );
    assert_eq!(
        parameters.get("database_image").map(String::as_str),
        Some("postgres-16")
    );
    for g in discover_groups(&heat, &stack).await.expect("groups") {
        let want = if g.path == "app_tier" {
            "nginx-1.28"
        } else {
            "postgres-16"
        };
        for m in &g.members {
            let member = m.stack.as_ref().expect("member stack");
            let p = heat
                .get_stack(member, false)
                .await
                .expect("member")
                .parameters;
            assert_eq!(
                p.get("boot_image").map(String::as_str),
                Some(want),
                "{}/{}",
                g.path,
                m.name
            );
        }
    }
    let hooks = heat
        .get_environment_hooks(&stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "hooks left: {hooks:?}"
    );

    // The command line's prompt: the plan read, the group scaled behind it, then `y`. The
    // confirmed plan is made again and refused; Heat keeps what it has.
    let url = crate::support::real_heat_client::heat_url();
    let target = format!("{}/app_tier", stack.name);
    let cli_journal = dir.path().join("cli.jsonl");
    let mut c = crate::support::pty::Console::start_with(
        120,
        40,
        &["--heat-url", &url, "scale", &target, "--count", "6"],
        &[("CALDERA_JOURNAL", cli_journal.as_os_str())],
        |_| {},
    );
    c.wait_for("the plan and its question", |s| {
        s.has("members: 5 -> 6") && s.has("apply this scale?")
    });
    let behind = caldera::api::heat::StackUpdate {
        parameters: [("app_count".to_string(), json!("7"))].into(),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &behind)
        .await
        .expect("scaled behind");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    c.send("y\r");
    let screen = c.wait_for("the refusal", |s| s.has("changed while the plan was read"));
    assert!(
        screen.has("has 7 members now (the plan said 5 -> 6)"),
        "{}",
        screen.text
    );
    assert!(!c.wait_exit().success());
    let groups = discover_groups(&heat, &stack).await.expect("groups");
    assert_eq!(groups[0].members.len(), 7, "nothing removed");

    // A scale down names the members Heat will drop: a ResourceGroup's highest-numbered.
    let app = service
        .list_nodegroups(cluster.clone())
        .await
        .expect("rows")
        .into_iter()
        .find(|r| r.name == "app_tier")
        .expect("app_tier row");
    let down = op
        .plan_scale(
            cluster,
            app,
            ScaleRequest {
                count: Some(5),
                remove: Vec::new(),
            },
        )
        .await
        .expect("plan down");
    let lines = down.lines().join("\n");
    assert!(
        lines.contains("removed: 5, 6 (a ResourceGroup drops its highest-numbered members)"),
        "{lines}"
    );
}

/// An image the stack's parameter constraints reject (`allowed_pattern`): Heat's preview
/// refuses the update (HTTP 400). The console's upgrade form and the command line both say
/// it as a refusal with Heat's reason, journal it, and send nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn an_update_heats_preview_refuses_is_a_refusal_journaled_and_nothing_sent() {
    use caldera::journal::{Journal, Outcome};
    use caldera::service::operator::Operator;
    let heat = heat().await;
    let stack = two_tier_with(&heat, "disc-2tier-constrained", |t| {
        t["parameters"]["frontend_image"]["constraints"] =
            json!([{"allowed_pattern": "nginx-.*", "description": "frontends run nginx"}]);
    })
    .await;
    let updated = heat
        .get_stack(&stack, false)
        .await
        .expect("stack")
        .summary
        .updated_at;
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("journal.jsonl");
    let conn = connect().await;
    let op = crate::support::scenarios::live_operator(
        &conn,
        crate::support::scenarios::action_context(Journal::open(&journal), "tester"),
        std::time::Duration::from_millis(200),
    );
    let cluster = plain_stack::cluster_of(&stack.id, &stack.name);
    let app = LiveService::new(conn.clone())
        .list_nodegroups(cluster.clone())
        .await
        .expect("rows")
        .into_iter()
        .find(|r| r.name == "app_tier")
        .expect("app_tier row");
    let e = op
        .plan_upgrade(cluster, app, "apache-2.4".into(), Default::default())
        .await
        .expect_err("Heat's preview refuses it");
    assert!(
        e.message
            .contains("Heat refuses this update in its preview")
            && e.message.contains("frontends run nginx"),
        "{e}"
    );
    let target = format!("{}/app_tier", stack.name);
    let (ok, out, err) = crate::support::real_heat_client::caldera_journaled(
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "frontend_image=apache-2.4",
            "--yes",
        ],
    );
    assert!(!ok, "{out}\n{err}");
    assert!(
        err.contains("Heat refuses this update in its preview")
            && err.contains("frontends run nginx"),
        "{out}\n{err}"
    );
    let refused: Vec<String> = Journal::open(&journal)
        .read_all()
        .expect("journal")
        .into_iter()
        .filter(|e| matches!(e.outcome, Outcome::Refused { .. }) && e.action == "rollout.start")
        .map(|e| e.target)
        .collect();
    assert_eq!(refused, [target.clone(), target], "both refusals journaled");
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.updated_at, updated, "nothing sent");
}

/// Heat's update goes on beside the group after every member is done (a resource the
/// operator let Heat update, here one that takes 120 s): past the node timeout the rollout
/// pauses and names what Heat is still doing instead of reading "running" with nothing
/// moving; resumed, it waits again and completes by itself when Heat's update does, its
/// hooks taken out.
/// A two-tier stack whose `slow_sibling`, beside group `app_tier`, takes 120 s to update,
/// and a rollout of `app_tier` to `nginx-1.28` that lets Heat update the sibling too, started
/// by the command line: it returns on the rollout's closing pause (every member done, Heat
/// still updating the sibling), naming what Heat does; the engine goes with the process.
/// The stack and the journal (in `dir`).
async fn rollout_in_its_closing_wait(
    heat: &HeatClient,
    name: &str,
    dir: &std::path::Path,
) -> (StackRef, std::path::PathBuf) {
    use crate::support::real_heat_client::caldera_journaled;
    let stack = two_tier_with(heat, name, |t| {
        t["resources"]["slow_sibling"] = json!({
            "type": "OS::Heat::TestResource",
            "properties": {
                "value": {"get_param": "frontend_image"},
                "action_wait_secs": {"update": 120}
            }
        });
    })
    .await;
    let journal = dir.join("journal.jsonl");
    let target = format!("{}/app_tier", stack.name);
    let (ok, out, err) = caldera_journaled(
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "frontend_image=nginx-1.28",
            "--let-heat-update",
            "slow_sibling",
            "--node-timeout-secs",
            "20",
            "--poll-secs",
            "0.5",
            "--yes",
        ],
    );
    assert!(!ok, "paused, not completed: {out}\n{err}");
    assert!(
        err.contains("every node is done, but Heat's update of stack")
            && err.contains("slow_sibling")
            && err.contains("nothing is left to release"),
        "{out}\n{err}"
    );
    (stack, journal)
}

/// The closing pauses the journal holds (every node done, Heat's update still going on).
fn closing_pauses(journal: &std::path::Path) -> usize {
    caldera::journal::Journal::open(journal)
        .read_all()
        .expect("journal")
        .into_iter()
        .filter(|e| {
            e.action == "rollout.pause"
                && matches!(&e.outcome, caldera::journal::Outcome::Failed { error }
                    if error.starts_with("every node is done"))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn a_rollout_whose_members_are_done_while_heat_updates_beside_them_says_what_heat_does() {
    let heat = heat().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (stack, journal) =
        rollout_in_its_closing_wait(&heat, "disc-2tier-slow-sibling", dir.path()).await;
    // Resumed while Heat still works (as the console's engine runs on): it waits again,
    // and completes by itself when Heat's update does, its hooks taken out.
    use caldera::journal::Journal;
    use caldera::rollout::{engine, Control, RolloutState};
    let ctx = crate::support::scenarios::action_context(Journal::open(&journal), "tester");
    let group_target = caldera::drivers::any_group::group_target(&stack, "app_tier");
    let plan = caldera::rollout::control::find_rollout(&heat, &ctx, &group_target)
        .await
        .expect("read the rollout")
        .expect("the paused rollout is found");
    let handle = engine::reattach(
        heat.clone(),
        ctx,
        plan,
        engine::EngineOptions {
            poll: std::time::Duration::from_millis(500),
            ..Default::default()
        },
        vec![Control::Resume {
            parameters: Default::default(),
        }],
        engine::TakeOver::ThisMachine,
    )
    .await
    .expect("reattached");
    let end = tokio::time::timeout(std::time::Duration::from_secs(300), handle.wait())
        .await
        .expect("the rollout ends with Heat's update");
    assert_eq!(end.state, RolloutState::Completed, "{:?}", end.state);
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.status.raw, "UPDATE_COMPLETE");
    // The resumed engine paused on Heat again (the sibling has ~60 s to go by then), and
    // that pause ended by itself with Heat's update.
    assert_eq!(
        closing_pauses(&journal),
        2,
        "one pause before the resume, one after"
    );
    let hooks = heat
        .get_environment_hooks(&stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "hooks left: {hooks:?}"
    );
}

/// caldera restarted during the closing wait: an engine reattached with nothing but the
/// journal and Heat is in the same wait at once (not "running" with nothing moving until a
/// node's time passes again), and completes by itself when Heat's update does: each member
/// updated once, the hooks taken out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn a_rollout_restarted_in_its_closing_wait_completes_by_itself_when_heat_does() {
    use caldera::journal::Journal;
    use caldera::rollout::{engine, RolloutState};
    let heat = heat().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (stack, journal) =
        rollout_in_its_closing_wait(&heat, "disc-2tier-slow-restart", dir.path()).await;
    let ctx = crate::support::scenarios::action_context(Journal::open(&journal), "tester");
    let group_target = caldera::drivers::any_group::group_target(&stack, "app_tier");
    let plan = caldera::rollout::control::find_rollout(&heat, &ctx, &group_target)
        .await
        .expect("read the rollout")
        .expect("the paused rollout is found");
    let members = plan.members().count();
    let mut handle = engine::reattach(
        heat.clone(),
        ctx,
        plan,
        engine::EngineOptions {
            poll: std::time::Duration::from_millis(500),
            ..Default::default()
        },
        Vec::new(),
        engine::TakeOver::ThisMachine,
    )
    .await
    .expect("reattached");
    let first = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        handle.wait_for(|s| s.state != RolloutState::Starting),
    )
    .await
    .expect("a status");
    assert!(
        matches!(&first.state, RolloutState::Paused { reason }
            if reason.starts_with("every node is done")),
        "{:?}",
        first.state
    );
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.status.raw, "UPDATE_IN_PROGRESS");
    let end = tokio::time::timeout(std::time::Duration::from_secs(300), handle.wait())
        .await
        .expect("the rollout ends with Heat's update");
    assert_eq!(end.state, RolloutState::Completed, "{:?}", end.state);
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.status.raw, "UPDATE_COMPLETE");
    // The wait went on from where it was: no second pause, though the sibling had more
    // than a node's time (20 s) left.
    assert_eq!(closing_pauses(&journal), 1);
    let hooks = heat
        .get_environment_hooks(&stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "hooks left: {hooks:?}"
    );
    // Heat's own record: each member updated once by the rollout's update.
    let group = caldera::drivers::heat_native::group_stack_of(&heat, &stack, "app_tier")
        .await
        .expect("the group's stack");
    let events: Vec<caldera::model::StackEvent> = heat
        .list_events(
            group,
            caldera::api::heat::EventQuery {
                sort_dir: Some(caldera::api::heat::SortDir::Asc),
                ..Default::default()
            },
        )
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|e| e.expect("event"))
        .collect();
    // From the rollout's update on (the create's events before it are not the rollout's).
    let from = events
        .iter()
        .position(|e| e.is_stack_event() && e.status.raw == "UPDATE_IN_PROGRESS")
        .expect("the update's start");
    let rollout_update = crate::support::scenarios::until_next_update(events[from..].to_vec());
    let windows = crate::support::scenarios::update_windows(&rollout_update);
    assert_eq!(windows.len(), members, "{windows:?}");
    for (m, w) in &windows {
        assert_eq!(w.2, 1, "member {m} updated {} times", w.2);
    }
}

/// `--set KEY=VALUE` of a `string` parameter sends the operator's text: `24.10` reaches the
/// members as `24.10`, not as the number 24.1 (found by an outside tester).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn a_string_parameter_set_to_a_number_like_text_keeps_the_text() {
    let heat = heat().await;
    let stack = two_tier(&heat, "disc-2tier-text").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("journal.jsonl");
    let target = format!("{}/app_tier", stack.name);
    let (ok, out, err) = crate::support::real_heat_client::caldera_journaled(
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "frontend_image=24.10",
            "--batch",
            "2",
            "--poll-secs",
            "0.5",
            "--yes",
        ],
    );
    assert!(ok, "{out}\n{err}");
    let parameters = heat
        .get_stack(&stack, false)
        .await
        .expect("stack")
        .parameters;
    assert_eq!(
        parameters.get("frontend_image").map(String::as_str),
        Some("24.10")
    );
    for g in discover_groups(&heat, &stack).await.expect("groups") {
        if g.path != "app_tier" {
            continue;
        }
        for m in &g.members {
            let p = heat
                .get_stack(m.stack.as_ref().expect("member stack"), false)
                .await
                .expect("member")
                .parameters;
            assert_eq!(
                p.get("boot_image").map(String::as_str),
                Some("24.10"),
                "{}",
                m.name
            );
        }
    }
}

/// A member whose server sits one nested stack down (`lb_member.yaml` holds `vm.yaml`), the
/// image renamed at each level (`image` -> `node_image` -> `image_ref`): the console's
/// upgrade form follows it down through the nested stack Heat made of the member's `vm`
/// resource, rolls `web_nodes` out member by member, and `workers`, reading another
/// parameter, keeps its members.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat (HEAT_URL)"]
async fn the_image_parameter_is_followed_into_a_members_nested_stack() {
    use crate::support::scenarios;
    use caldera::journal::Journal;
    use caldera::service::operator::Operator;

    let heat = heat().await;
    let stack = create(
        &heat,
        "disc-deepimage",
        "deepimage/top.yaml",
        &[
            ("lb_member.yaml", "deepimage/lb_member.yaml"),
            ("vm.yaml", "deepimage/vm.yaml"),
        ],
    )
    .await;
    let conn = connect().await;
    let cluster = plain_stack::cluster_of(&stack.id, &stack.name);
    // One service throughout, as the console keeps it: the facts it keeps between refreshes
    // must give way to the new image once the rollout has changed the group.
    let service = LiveService::new(conn.clone());
    let row = service
        .list_nodegroups(cluster.clone())
        .await
        .expect("node group rows")
        .into_iter()
        .find(|r| r.name == "web_nodes")
        .expect("the web_nodes row");
    // The row's IMAGE is what the servers inside the members boot, found by the same walk
    // down the members' nested stacks as the rollout's parameter; its FLAVOR, the same way,
    // the servers' `size` as Heat resolved it (the default of vm.yaml here).
    assert_eq!(row.image.as_deref(), Some("ubuntu-22.04"), "{row:?}");
    assert_eq!(row.flavor.as_deref(), Some("m1.small"), "{row:?}");
    // `caldera nodegroups STACK` says the same flavors and images (columns 3 and 4).
    let (ok, out, err) =
        crate::support::real_heat_client::caldera(&["nodegroups", &stack.name, "--format", "csv"]);
    assert!(ok, "{err}");
    let cli: Vec<(String, String, String)> = out
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let cell = |i: usize| cells.get(i).copied().unwrap_or_default().to_string();
            (cell(0), cell(3), cell(4))
        })
        .collect();
    assert_eq!(
        cli,
        [
            ("web_nodes".into(), "m1.small".into(), "ubuntu-22.04".into()),
            ("workers".into(), "m1.large".into(), "debian-12".into())
        ],
        "{out}"
    );
    let dir = tempfile::tempdir().expect("dir");
    let op = scenarios::live_operator(
        &conn,
        scenarios::action_context(Journal::open(dir.path().join("journal.jsonl")), "tester"),
        std::time::Duration::from_millis(200),
    );
    let plan = op
        .plan_upgrade(
            cluster,
            row,
            "ubuntu-24.04".into(),
            caldera::rollout::RolloutOptions {
                batch_size: 2,
                ..Default::default()
            },
        )
        .await
        .expect("the image parameter is found through the member's nested stack");
    let lines = plan.lines().join("\n");
    assert!(lines.contains("set image=ubuntu-24.04"), "{lines}");
    upgrade_to_the_end(&op, plan).await;
    let facts: Vec<(String, Option<String>, Option<String>)> = service
        .list_nodegroups(plain_stack::cluster_of(&stack.id, &stack.name))
        .await
        .expect("node group rows")
        .into_iter()
        .map(|r| (r.name, r.image, r.flavor))
        .collect();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        facts,
        [
            (
                "web_nodes".to_string(),
                some("ubuntu-24.04"),
                some("m1.small")
            ),
            ("workers".to_string(), some("debian-12"), some("m1.large"))
        ]
    );
    // Each member's VM stack (one level inside the member) boots the new image; the worker
    // keeps its own.
    for g in discover_groups(&heat, &stack).await.expect("groups") {
        let want = match g.path.as_str() {
            "web_nodes" => "ubuntu-24.04",
            _ => "debian-12",
        };
        for m in &g.members {
            let member = m.stack.as_ref().expect("member stack");
            let image = match g.path.as_str() {
                "web_nodes" => {
                    let vm = heat
                        .get_resource(member, "vm")
                        .await
                        .expect("vm")
                        .resource
                        .nested
                        .expect("vm's stack");
                    heat.get_stack(&vm, false)
                        .await
                        .expect("vm stack")
                        .parameters["image_ref"]
                        .clone()
                }
                _ => heat
                    .get_stack(member, false)
                    .await
                    .expect("member")
                    .parameters["image_ref"]
                    .clone(),
            };
            assert_eq!(image, want, "{}/{}", g.path, m.name);
        }
    }
    let hooks = heat
        .get_environment_hooks(&stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "hooks left: {hooks:?}"
    );
}
