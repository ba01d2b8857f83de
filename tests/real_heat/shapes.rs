//! Stack shapes nobody here chose, on a real OpenStack Heat on 127.0.0.1: Magnum's cluster
//! layout, TripleO-like role groups, an AutoScalingGroup, a group inside a nested stack, an
//! address three levels down, JSON, two addresses per member, an empty group, a failing
//! member, members still being created (templates: tests/fixtures/shapes, see its README).
//!
//! For each: the node groups caldera discovers, every address compared with Heat's own
//! aggregate output of the stack (`{get_attr: [group, attr]}`), through each source alone
//! (typed listing, per-member outputs) and the race of both, with no flag naming anything;
//! failures and pending members.
//!
//! `scripts/real-heat-suite.sh` starts a Heat and runs these with `--ignored`; HEAT_URL must
//! point at it.

use crate::support::heat_wait;
use crate::support::heat_wait::delete_settled;
use crate::support::real_heat_client;
use crate::support::real_heat_client::caldera;

use caldera::api::heat::{HeatClient, StackCreate};
use caldera::model::{NodeGroup, Role, StackRef};
use caldera::ops::discover::{discover_groups, GroupShape};
use caldera::ops::ips::{stream_group_ips, IpEvent, IpOptions, IpSource, IpStats};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, NodeUpdate};
use futures::StreamExt;
use heat_wait::wait_status;
use real_heat_client::{connect, fixture, unique};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// Creates a stack from a fixture template and its files (`name in template` -> fixture).
async fn create(
    heat: &HeatClient,
    prefix: &str,
    top: &str,
    files: &[(&str, &str)],
    parameters: Value,
) -> (String, StackRef) {
    let name = unique(prefix);
    let template: Value = serde_yaml_ng::from_str(&fixture(top)).expect("template YAML");
    let create = StackCreate {
        name: name.clone(),
        template,
        files: files
            .iter()
            .map(|(n, p)| (n.to_string(), fixture(p)))
            .collect(),
        parameters: serde_json::from_value(parameters).expect("parameters"),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    (name, stack)
}

/// Heat's own answer: an aggregate output of the stack, resolved by Heat.
/// Waits (at most 120 s) until no member of any group of `stack` is in progress.
async fn members_settled(heat: &HeatClient, stack: &StackRef) {
    let started = Instant::now();
    loop {
        let groups = discover_groups(heat, stack).await.expect("groups");
        let busy: Vec<String> = groups
            .iter()
            .flat_map(|g| g.members.iter())
            .filter(|m| m.status.is_in_progress())
            .map(|m| m.name.clone())
            .collect();
        if busy.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "members still in progress: {busy:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn aggregate(heat: &HeatClient, stack: &StackRef, key: &str) -> Vec<Value> {
    let out = heat.show_output(stack, key).await.expect("output show");
    assert!(out.error.is_none(), "{key}: {:?}", out.error);
    out.value
        .as_array()
        .unwrap_or_else(|| panic!("{key} is a list: {}", out.value))
        .clone()
}

/// What one stream said.
#[derive(Debug, Default)]
struct Collected {
    members: Vec<String>,
    addresses: BTreeMap<String, Vec<String>>,
    sources: HashMap<String, IpSource>,
    pending: BTreeSet<String>,
    named: BTreeSet<String>,
    failed: BTreeMap<String, String>,
    plans: Vec<(String, bool, String)>,
    stats: Option<IpStats>,
}

async fn collect(
    heat: &HeatClient,
    stack: &StackRef,
    group: Option<&str>,
    options: IpOptions,
) -> Collected {
    let mut c = Collected::default();
    let mut stream = stream_group_ips(
        heat.clone(),
        None,
        stack.clone(),
        group.map(str::to_string),
        options,
    );
    while let Some(event) = stream.next().await {
        match event.expect("ip stream") {
            IpEvent::Members(m) => c.members = m.into_iter().map(|m| m.name).collect(),
            IpEvent::Plan {
                group, found, how, ..
            } => c.plans.push((group, found, how)),
            IpEvent::Address(a, source) => {
                assert!(
                    c.addresses.insert(a.member.clone(), a.addresses).is_none(),
                    "member {} reported twice",
                    a.member
                );
                c.sources.insert(a.member, source);
            }
            // Heat's own server listing names them (its `name` attribute), once each.
            IpEvent::Named { member, .. } => assert!(c.named.insert(member), "named twice"),
            IpEvent::NoNetwork(a) => panic!("{} has no network", a.member),
            IpEvent::Server { member, .. } => panic!("{member}'s server without Nova"),
            IpEvent::Pending { member, .. } => {
                assert!(c.pending.insert(member));
            }
            IpEvent::Failed { member, reason } => {
                assert!(c.failed.insert(member, reason).is_none());
            }
            IpEvent::MoreAddresses(a, _) => {
                let before = c.addresses.insert(a.member.clone(), a.addresses.clone());
                let kept = before.is_some_and(|b| a.addresses.starts_with(&b));
                assert!(kept, "{} lost its first addresses", a.member);
            }
            IpEvent::Done(stats) => c.stats = Some(stats),
        }
    }
    assert!(c.stats.is_some(), "the stream ended without Done");
    c
}

fn listing_only() -> IpOptions {
    IpOptions {
        fan_out: false,
        ..IpOptions::default()
    }
}

fn outputs_only() -> IpOptions {
    IpOptions {
        typed_listing: false,
        ..IpOptions::default()
    }
}

fn paths(groups: &[GroupShape]) -> Vec<(String, usize)> {
    groups
        .iter()
        .map(|g| (g.path.clone(), g.members.len()))
        .collect()
}

/// Checks one group's addresses against Heat's aggregate output, read in member index order
/// (`expected[i]` = the addresses of member `i`), through each source alone and the race.
async fn check_group(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    expected: &[Vec<String>],
    typed_reachable: bool,
) {
    for (label, options) in [
        ("race", IpOptions::default()),
        ("listing", listing_only()),
        ("outputs", outputs_only()),
    ] {
        if label == "listing" && !typed_reachable {
            continue;
        }
        let c = collect(heat, stack, Some(group), options).await;
        assert_eq!(c.plans.len(), 1, "{group} {label}: {:?}", c.plans);
        assert!(c.plans[0].1, "{group} {label}: no plan: {:?}", c.plans);
        assert!(c.failed.is_empty(), "{group} {label}: {:?}", c.failed);
        assert!(c.pending.is_empty(), "{group} {label}: {:?}", c.pending);
        assert_eq!(c.members.len(), expected.len(), "{group} {label}");
        for (i, want) in expected.iter().enumerate() {
            let got = c.addresses.get(&i.to_string()).cloned().unwrap_or_default();
            let got: BTreeSet<String> = got.into_iter().collect();
            let want: BTreeSet<String> = want.iter().cloned().collect();
            assert_eq!(got, want, "{group} {label}: member {i}");
        }
        if label == "listing" {
            let stats = c.stats.expect("stats");
            assert_eq!(
                stats.from_listing,
                expected.len(),
                "{group}: every address from the typed listing ({})",
                c.plans[0].2
            );
        }
    }
}

fn strings(values: &[Value]) -> Vec<Vec<String>> {
    values
        .iter()
        .map(|v| vec![v.as_str().expect("a string address").to_string()])
        .collect()
}

/// Each member's addresses from two of the stack's outputs over the group, in member index
/// order (the private ones and the external ones): a node's every address.
async fn both(
    heat: &HeatClient,
    stack: &StackRef,
    private: &str,
    external: &str,
) -> Vec<Vec<String>> {
    let private = strings(&aggregate(heat, stack, private).await);
    let external = strings(&aggregate(heat, stack, external).await);
    assert_eq!(private.len(), external.len());
    private
        .into_iter()
        .zip(external)
        .map(|(p, e)| p.into_iter().chain(e).collect())
        .collect()
}

/// Magnum's layout: both groups found (no name preferred), each group's addresses from its
/// own members' port, and the headless commands name them by path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn magnum_cluster_layout() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let (name, stack) = create(
        &heat,
        "shape-magnum",
        "magnum/kubecluster.yaml",
        &[
            ("lib/network.yaml", "magnum/network.yaml"),
            ("kubemaster.yaml", "magnum/kubemaster.yaml"),
            ("kubeminion.yaml", "magnum/kubeminion.yaml"),
        ],
        serde_json::json!({"number_of_masters": 3, "number_of_minions": 7}),
    )
    .await;
    wait_status(&heat, &stack, "CREATE_COMPLETE").await;

    let groups = discover_groups(&heat, &stack).await.expect("discover");
    assert_eq!(
        paths(&groups),
        vec![("kube_masters".into(), 3), ("kube_minions".into(), 7)]
    );
    // A node's addresses: its port's and its floating one (`kube_minions` beside
    // `kube_minions_private`).
    let masters = both(&heat, &stack, "kube_masters_private", "kube_masters").await;
    let minions = both(&heat, &stack, "kube_minions_private", "kube_minions").await;
    check_group(&heat, &stack, "kube_masters", &masters, true).await;
    check_group(&heat, &stack, "kube_minions", &minions, true).await;
    let c = collect(&heat, &stack, Some("kube_minions"), IpOptions::default()).await;
    assert!(
        c.plans[0].2.contains("kube_minion_ip") && c.plans[0].2.contains("fixed_ips"),
        "the member output and the port's attribute: {}",
        c.plans[0].2
    );

    // The whole stack: every member of both groups, named by group path.
    let all = collect(&heat, &stack, None, IpOptions::default()).await;
    assert_eq!(all.members.len(), 10);
    assert_eq!(all.addresses.len(), 10, "{:?}", all.failed);
    assert_eq!(all.addresses["kube_minions/6"], minions[6]);
    assert_eq!(all.addresses["kube_masters/0"], masters[0]);

    // The console's nodes pane of the stack (no cluster of any driver): every group's
    // members, with their addresses, through the live service.
    let service = LiveService::new(conn.clone());
    let pane = NodeGroup::of_stack(&stack.id, &name, Role::Other);
    let mut updates = service.stream_nodes(pane);
    let (mut rows, mut filled, mut failed) = (Vec::new(), BTreeMap::new(), 0);
    while let Some(update) = updates.next().await {
        match update.expect("node update") {
            NodeUpdate::Members(nodes) | NodeUpdate::Listed { nodes, .. } => {
                rows = nodes.into_iter().map(|n| n.key.member).collect()
            }
            NodeUpdate::Address(a) => {
                filled.insert(a.member, a.addresses);
            }
            NodeUpdate::AddressFailed { .. } => failed += 1,
            NodeUpdate::Named { .. } => {}
            NodeUpdate::Done => break,
        }
    }
    assert_eq!(rows.len(), 10, "{rows:?}");
    assert!(rows.contains(&"kube_minions/6".to_string()));
    assert_eq!(failed, 0);
    assert_eq!(filled.len(), 10);
    assert_eq!(filled["kube_masters/2"], masters[2]);

    // An override still wins: the external addresses.
    let external = strings(&aggregate(&heat, &stack, "kube_minions").await);
    let c = collect(
        &heat,
        &stack,
        Some("kube_minions"),
        IpOptions {
            output_key: Some("kube_minion_external_ip".into()),
            ..IpOptions::default()
        },
    )
    .await;
    assert_eq!(c.addresses["3"], external[3]);

    // A path that names no group says which there are.
    let mut s = stream_group_ips(
        heat.clone(),
        None,
        stack.clone(),
        Some("nodes".into()),
        IpOptions::default(),
    );
    let err = s
        .next()
        .await
        .expect("an event")
        .expect_err("no group 'nodes'");
    assert!(err.to_string().contains("kube_minions"), "{err}");

    // The headless commands, with no flag naming anything.
    let (ok, out, err) = caldera(&["ips", &name, "--format", "csv"]);
    assert!(ok, "{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 10, "{out}");
    assert!(
        rows.iter()
            .any(|r| r.starts_with(&format!("{name}/kube_minions,6,6,{}", minions[6][0]))),
        "{out}"
    );
    assert!(err.contains("10/10 addresses, 0 failed"), "{err}");
    let (ok, out, err) = caldera(&["ips", &format!("{name}/kube_minions"), "--format", "json"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 7, "{out}");
    assert!(err.contains("7/7 addresses"), "{err}");
    let (ok, out, err) = caldera(&["nodegroups", &name, "--format", "csv"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\nkube_masters,") && out.contains("\nkube_minions,"),
        "{out}"
    );

    delete_settled(&heat, &stack).await;
}

/// TripleO-like roles, an AutoScalingGroup, a group in a nested stack, an address three
/// levels down, JSON text, two addresses per member, an empty group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn shapes_from_the_wild() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let none = serde_json::json!({});
    // One stack at a time: seven creates at once is a burst of database connections a
    // shared Heat may not have (each create is a few seconds).
    let (_, tripleo) = create(
        &heat,
        "shape-tripleo",
        "tripleo/overcloud.yaml",
        &[("role.yaml", "tripleo/role.yaml")],
        serde_json::json!({"ControllerCount": 3, "ComputeCount": 4}),
    )
    .await;
    wait_status(&heat, &tripleo, "CREATE_COMPLETE").await;
    let (_, asg) = create(
        &heat,
        "shape-asg",
        "asg.yaml",
        &[("asg_member.yaml", "asg_member.yaml")],
        none.clone(),
    )
    .await;
    wait_status(&heat, &asg, "CREATE_COMPLETE").await;
    let (_, nested) = create(
        &heat,
        "shape-nested",
        "nested_group/top.yaml",
        &[
            ("roles.yaml", "nested_group/roles.yaml"),
            ("node.yaml", "nested_group/node.yaml"),
        ],
        none.clone(),
    )
    .await;
    wait_status(&heat, &nested, "CREATE_COMPLETE").await;
    let (_, deep) = create(
        &heat,
        "shape-deep",
        "deep/top.yaml",
        &[
            ("member.yaml", "deep/member.yaml"),
            ("net.yaml", "deep/net.yaml"),
            ("port.yaml", "deep/port.yaml"),
        ],
        none.clone(),
    )
    .await;
    wait_status(&heat, &deep, "CREATE_COMPLETE").await;
    let (_, json) = create(
        &heat,
        "shape-json",
        "json_address/top.yaml",
        &[("member.yaml", "json_address/member.yaml")],
        none.clone(),
    )
    .await;
    wait_status(&heat, &json, "CREATE_COMPLETE").await;
    let (_, two) = create(
        &heat,
        "shape-two",
        "two_addresses/top.yaml",
        &[("member.yaml", "two_addresses/member.yaml")],
        none.clone(),
    )
    .await;
    wait_status(&heat, &two, "CREATE_COMPLETE").await;
    let (empty_name, empty) = create(
        &heat,
        "shape-empty",
        "empty/top.yaml",
        &[("member.yaml", "empty/member.yaml")],
        none.clone(),
    )
    .await;
    wait_status(&heat, &empty, "CREATE_COMPLETE").await;

    // TripleO: one group per role.
    let groups = discover_groups(&heat, &tripleo).await.expect("discover");
    assert_eq!(
        paths(&groups),
        vec![("Compute".into(), 4), ("Controller".into(), 3)]
    );
    let controllers = strings(&aggregate(&heat, &tripleo, "ControllerIpAddresses").await);
    let computes = strings(&aggregate(&heat, &tripleo, "ComputeIpAddresses").await);
    check_group(&heat, &tripleo, "Controller", &controllers, true).await;
    check_group(&heat, &tripleo, "Compute", &computes, true).await;

    // AutoScalingGroup: members are named by Heat; compare the sets.
    let groups = discover_groups(&heat, &asg).await.expect("discover");
    assert_eq!(paths(&groups), vec![("pool".into(), 4)]);
    let want: BTreeSet<String> = aggregate(&heat, &asg, "pool_private_ips")
        .await
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect();
    for options in [IpOptions::default(), listing_only(), outputs_only()] {
        let c = collect(&heat, &asg, None, options).await;
        assert!(c.failed.is_empty(), "{:?}", c.failed);
        let got: BTreeSet<String> = c.addresses.values().flatten().cloned().collect();
        assert_eq!(got, want);
        assert_eq!(c.addresses.len(), 4);
    }

    // A group one level down, named by its path.
    let groups = discover_groups(&heat, &nested).await.expect("discover");
    assert_eq!(paths(&groups), vec![("roles/Compute".into(), 3)]);
    let want = strings(&aggregate(&heat, &nested, "compute_ips").await);
    check_group(&heat, &nested, "roles/Compute", &want, true).await;

    // The address three templates below the member: the typed listing finds it there.
    let want = strings(&aggregate(&heat, &deep, "worker_private_addresses").await);
    check_group(&heat, &deep, "workers", &want, true).await;
    let c = collect(&heat, &deep, Some("workers"), IpOptions::default()).await;
    assert!(c.plans[0].2.contains("net/port/fixed"), "{}", c.plans[0].2);

    // JSON text: Heat's aggregate holds the documents; the address is inside.
    let want: Vec<Vec<String>> = aggregate(&heat, &json, "agent_ips")
        .await
        .iter()
        .map(|v| {
            let doc: Value = serde_json::from_str(v.as_str().expect("JSON text")).expect("JSON");
            vec![doc["interfaces"][0]["ip_address"]
                .as_str()
                .expect("address")
                .to_string()]
        })
        .collect();
    check_group(&heat, &json, "agents", &want, true).await;

    // Two addresses per member.
    let want: Vec<Vec<String>> = aggregate(&heat, &two, "storage_node_ips")
        .await
        .iter()
        .map(|v| {
            v.as_object()
                .expect("a map of networks")
                .values()
                .map(|a| a.as_str().expect("address").to_string())
                .collect()
        })
        .collect();
    assert!(want.iter().all(|w| w.len() == 2));
    check_group(&heat, &two, "storage_nodes", &want, true).await;

    // An empty group: found, no members, nothing failed.
    let groups = discover_groups(&heat, &empty).await.expect("discover");
    assert_eq!(paths(&groups), vec![("spare".into(), 0)]);
    let c = collect(&heat, &empty, None, IpOptions::default()).await;
    assert!(c.members.is_empty() && c.failed.is_empty() && c.addresses.is_empty());
    let (ok, _, err) = caldera(&["ips", &empty_name]);
    assert!(ok, "{err}");
    assert!(err.contains("0/0 addresses, 0 failed"), "{err}");

    for s in [&tripleo, &asg, &nested, &deep, &json, &two, &empty] {
        delete_settled(&heat, s).await;
    }
}

/// A failing member is failed (with Heat's reason), members still being created are
/// pending, not failed; the others' addresses arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn failing_and_pending_members() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let none = serde_json::json!({});
    let (failing_name, failing) = create(
        &heat,
        "shape-failing",
        "failing/top.yaml",
        &[("member.yaml", "failing/member.yaml")],
        none.clone(),
    )
    .await;
    let (slow_name, slow) = create(
        &heat,
        "shape-slow",
        "slow/top.yaml",
        &[("member.yaml", "slow/member.yaml")],
        none.clone(),
    )
    .await;
    wait_status(&heat, &failing, "CREATE_FAILED").await;
    // Heat marks the stack failed as member 2 fails and lets the others run on: on a busy
    // engine one may still be creating.
    members_settled(&heat, &failing).await;

    let want = aggregate(&heat, &failing, "node_ips").await;
    assert!(
        want[2].is_null(),
        "Heat has no address for member 2: {want:?}"
    );
    let c = collect(&heat, &failing, None, IpOptions::default()).await;
    assert_eq!(c.members.len(), 4);
    assert_eq!(c.failed.keys().collect::<Vec<_>>(), vec!["2"]);
    assert!(c.failed["2"].contains("CREATE_FAILED"), "{:?}", c.failed);
    assert!(c.pending.is_empty());
    for i in [0usize, 1, 3] {
        assert_eq!(
            c.addresses.get(&i.to_string()),
            Some(&vec![want[i].as_str().expect("address").to_string()])
        );
    }
    let (ok, out, err) = caldera(&["failures", &failing_name, "--format", "csv"]);
    assert!(ok, "{err}");
    assert!(out.contains("nodes_a.2.boot"), "{out}");
    let (ok, _, err) = caldera(&["ips", &failing_name]);
    assert!(!ok, "a member without an address is an error");
    assert!(
        err.contains("1 member(s) without an address (2): CREATE_FAILED"),
        "{err}"
    );

    // The slow stack: members 0 and 1 done, 2 and 3 creating for minutes.
    let started = Instant::now();
    let c = loop {
        let c = collect(&heat, &slow, None, IpOptions::default()).await;
        if c.addresses.len() == 2 && c.members.len() == 4 {
            break c;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "members 0 and 1 never got addresses: {c:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let detail = heat.get_stack(&slow, false).await.expect("show");
    assert_eq!(detail.summary.status.raw, "CREATE_IN_PROGRESS");
    assert!(c.failed.is_empty(), "pending is not failed: {:?}", c.failed);
    assert_eq!(
        c.pending.iter().cloned().collect::<Vec<_>>(),
        vec!["2".to_string(), "3".to_string()]
    );
    assert_eq!(c.stats.as_ref().map(|s| s.pending), Some(2));
    let (ok, _, err) = caldera(&["ips", &slow_name]);
    assert!(ok, "pending members are no error: {err}");
    assert!(err.contains("2 pending"), "{err}");

    delete_settled(&heat, &failing).await;
    delete_settled(&heat, &slow).await;
}

/// Heat keeps an aggregate output once it has resolved it, until the group changes. caldera
/// uses that only when it knows: its first run finds every address the long way and then
/// asks Heat for the aggregate without waiting for it (Heat goes on and keeps the value);
/// the next run gets every address from that one request, the same as Heat's own answer. A
/// scale-out moves the group's `updated_time`: the next run does not trust the old value.
#[tokio::test]
#[ignore = "needs a real Heat (scripts/real-heat-suite.sh)"]
async fn a_warm_aggregate_is_used_only_for_the_group_heat_resolved() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let (_, stack) = create(
        &heat,
        "shape-warm",
        "magnum/kubecluster.yaml",
        &[
            ("lib/network.yaml", "magnum/network.yaml"),
            ("kubemaster.yaml", "magnum/kubemaster.yaml"),
            ("kubeminion.yaml", "magnum/kubeminion.yaml"),
        ],
        // Enough members that Heat's cold resolution (about 60 ms each) outlasts the
        // aggregate's head start: a value Heat did not keep could not pass for a warm one.
        serde_json::json!({"number_of_masters": 1, "number_of_minions": 40}),
    )
    .await;
    wait_status(&heat, &stack, "CREATE_COMPLETE").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let options = IpOptions {
        heat_outputs: Some(caldera::ops::ips::WarmOutputs::at(
            dir.path().join("heat-outputs.json"),
        )),
        ..IpOptions::default()
    };

    let cold = collect(&heat, &stack, Some("kube_minions"), options.clone()).await;
    let stats = cold.stats.clone().expect("done");
    assert_eq!((stats.found, stats.from_aggregate), (40, 0), "{stats:?}");
    // The warm-up was sent and given up at once; Heat resolves it meanwhile, in its own
    // time on a busy engine (bounded wait).
    let started = Instant::now();
    let warm = loop {
        tokio::time::sleep(Duration::from_secs(4)).await;
        let warm = collect(&heat, &stack, Some("kube_minions"), options.clone()).await;
        let stats = warm.stats.clone().expect("done");
        if stats.from_aggregate == 40 || started.elapsed() > Duration::from_secs(90) {
            break warm;
        }
    };
    let stats = warm.stats.clone().expect("done");
    assert_eq!(stats.from_aggregate, 40, "{stats:?}");
    assert_eq!(warm.addresses, cold.addresses);
    // The first addresses from the aggregate, the floating ones added by the listing.
    let truth = both(&heat, &stack, "kube_minions_private", "kube_minions").await;
    for (i, ips) in truth.iter().enumerate() {
        assert_eq!(warm.addresses.get(&i.to_string()), Some(ips), "member {i}");
    }

    // Scale out: the group changes, its remembered value is not used.
    heat.update_stack(
        &stack,
        &caldera::api::heat::StackUpdate {
            parameters: [("number_of_minions".to_string(), serde_json::json!(41))]
                .into_iter()
                .collect(),
            existing: true,
            ..Default::default()
        },
    )
    .await
    .expect("scale out");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let after = collect(&heat, &stack, Some("kube_minions"), options).await;
    let stats = after.stats.clone().expect("done");
    assert_eq!((stats.found, stats.from_aggregate), (41, 0), "{stats:?}");
    delete_settled(&heat, &stack).await;
}
