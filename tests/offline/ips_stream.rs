//! The node IP stream against the simulator: addresses arrive while the rest are still being
//! fetched, every member exactly once, matching the server's own aggregate output.
//!
//! The group is the workers of a Magnum cluster as Magnum's Heat driver lays them out:
//! `kube_minions` of the cluster stack (beside `kube_masters`), members of kubeminion.yaml
//! whose address is the output `kube_minion_ip`, the cluster's aggregate being
//! `kube_minions_private`.

use crate::support::sim_group;
use caldera::api::cloud::CloudConnection;
use caldera::api::heat::HeatClient;
use caldera::model::StackRef;
use caldera::ops::ips::{addresses_in, stream_group_ips, IpEvent, IpOptions, IpSource};
use caldera::sim::{self, SimHandle, SimOptions};
use futures::StreamExt;
use std::collections::HashMap;
use std::time::Duration;

const MEMBERS: usize = 120;
/// The default workers' group in Magnum's cluster stack.
const WORKERS: &str = "kube_minions";

/// The simulator, a connection, the default workers' group stack (`kube_minions`'s nested
/// stack) and the cluster stack.
async fn bench_sim(detail_cost: Duration) -> (SimHandle, CloudConnection, StackRef, StackRef) {
    bench_sim_with(SimOptions {
        detail_cost_per_resource: detail_cost,
        ..SimOptions::default()
    })
    .await
}

/// [`bench_sim`] with `options` (the scenario and the output cost are this file's).
async fn bench_sim_with(options: SimOptions) -> (SimHandle, CloudConnection, StackRef, StackRef) {
    let (sim, conn) = sim_group::connected(SimOptions {
        scenario: format!("bench-{MEMBERS}"),
        output_cost_per_member: Duration::from_millis(2),
        ..options
    })
    .await;
    let magnum = conn.magnum.clone().expect("simulator has Magnum");
    let cluster = magnum
        .get_cluster(&format!("bench-{MEMBERS}"))
        .await
        .expect("cluster");
    let groups = magnum
        .list_nodegroups(&cluster.id, None)
        .await
        .expect("groups");
    let worker = groups
        .iter()
        .find(|g| g.name == "default-worker")
        .expect("worker group");
    let cluster_stack = conn
        .heat
        .resolve(worker.stack_id.as_deref().expect("group stack"))
        .await
        .expect("resolve group stack");
    assert_eq!(Some(&cluster_stack.id), cluster.stack_id.as_ref());
    let stack = caldera::drivers::magnum::members_stack(
        &conn.heat,
        &cluster_stack,
        caldera::model::Role::Worker,
        "default-worker",
    )
    .await
    .expect("groups of the cluster stack")
    .expect("the cluster stack holds masters and workers");
    (sim, conn, stack, cluster_stack)
}

/// The server's truth: the monolithic aggregate output, member index order.
async fn aggregate_ips(heat: &HeatClient, stack: &StackRef) -> Vec<String> {
    let out = heat
        .show_output(stack, "kube_minions_private")
        .await
        .expect("aggregate output");
    addresses_in(&out.value)
}

/// Every member delivered exactly once, with the address the server's aggregate output has.
async fn assert_each_member_once_as_the_server_says(
    heat: &HeatClient,
    stack: &StackRef,
    events: &[IpEvent],
) {
    let got = addresses_by_member(events);
    let truth = aggregate_ips(heat, stack).await;
    assert_eq!(truth.len(), MEMBERS);
    assert_eq!(got.len(), MEMBERS);
    for (i, ip) in truth.iter().enumerate() {
        assert_eq!(
            got.get(&i.to_string()),
            Some(&vec![ip.clone()]),
            "member {i}"
        );
    }
}

/// The default workers of the cluster stack `stack`: its group `kube_minions`, whose member
/// output and address resource caldera discovers from the templates.
async fn collect(heat: HeatClient, stack: StackRef, options: IpOptions) -> Vec<IpEvent> {
    stream_group_ips(heat, None, stack, Some(WORKERS.into()), options)
        .map(|e| e.expect("no stream error"))
        .collect()
        .await
}

fn addresses_by_member(events: &[IpEvent]) -> HashMap<String, Vec<String>> {
    let mut out = HashMap::new();
    for e in events {
        if let IpEvent::Address(a, _) = e {
            assert!(
                out.insert(a.member.clone(), a.addresses.clone()).is_none(),
                "member {} delivered twice",
                a.member
            );
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_addresses_stream_before_the_slow_listing_completes() {
    // The typed listing costs 20 ms per resource here (seconds in all): the per-member
    // outputs must fill the screen long before it answers.
    let (sim, conn, _, cluster_stack) = bench_sim(Duration::from_millis(20)).await;
    let events = collect(
        conn.heat.clone(),
        cluster_stack.clone(),
        IpOptions::default(),
    )
    .await;

    assert!(matches!(events.first(), Some(IpEvent::Members(m)) if m.len() == MEMBERS));
    assert!(matches!(events.last(), Some(IpEvent::Done(_))));
    let first_address = events
        .iter()
        .find_map(|e| match e {
            IpEvent::Address(_, source) => Some(*source),
            _ => None,
        })
        .expect("some address");
    assert_eq!(first_address, IpSource::MemberOutput);
    let Some(IpEvent::Done(stats)) = events.last() else {
        unreachable!()
    };
    assert_eq!(stats.found, MEMBERS);
    assert_eq!(stats.failed, 0);
    assert!(stats.first_address_after < Some(stats.elapsed));

    assert_each_member_once_as_the_server_says(&conn.heat, &cluster_stack, &events).await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_listing_completes_the_set_and_stops_the_fan_out() {
    let (sim, conn, _, cluster_stack) = bench_sim(Duration::ZERO).await;
    let options = IpOptions {
        concurrency: 1,
        ..IpOptions::default()
    };
    let events = collect(conn.heat.clone(), cluster_stack.clone(), options).await;
    let Some(IpEvent::Done(stats)) = events.last() else {
        panic!("stream did not finish: {:?}", events.last())
    };
    assert_eq!(stats.found, MEMBERS);
    assert!(
        stats.from_listing > MEMBERS / 2,
        "the one-call listing should deliver most members: {stats:?}"
    );
    assert_each_member_once_as_the_server_says(&conn.heat, &cluster_stack, &events).await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_whose_lookups_fail_is_reported_and_the_rest_arrive() {
    let (sim, conn, stack, cluster_stack) = bench_sim(Duration::ZERO).await;
    // Both sources fail for member 7: the typed listing is refused, and its output call 500s.
    let member7 = {
        let listing = caldera::ops::ips::list_members(&conn.heat, &stack)
            .await
            .expect("members");
        listing
            .into_iter()
            .find(|m| m.name == "7")
            .and_then(|m| m.stack)
            .expect("member 7 stack")
    };
    let faults = sim.faults();
    faults.add(
        sim::faults::Fault::new(sim::faults::FaultKind::Status(500)).on_path(&format!(
            "/orchestration/v1/{}/stacks/{}/{}/outputs",
            sim.project_id, member7.name, member7.id
        )),
    );
    let options = IpOptions {
        typed_listing: false,
        ..IpOptions::default()
    };
    let events = collect(conn.heat.clone(), cluster_stack.clone(), options).await;
    let failed: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            IpEvent::Failed { member, .. } => Some(member.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(failed, vec!["7"]);
    assert_eq!(addresses_by_member(&events).len(), MEMBERS - 1);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nova_servers_alone_deliver_every_member() {
    // Only the Nova source: the path for templates without an address output.
    let (sim, conn, _, cluster_stack) = bench_sim(Duration::ZERO).await;
    let options = IpOptions {
        typed_listing: false,
        fan_out: false,
        ..IpOptions::default()
    };
    let events: Vec<IpEvent> = stream_group_ips(
        conn.heat.clone(),
        conn.nova.clone(),
        cluster_stack.clone(),
        Some(WORKERS.into()),
        options,
    )
    .map(|e| e.expect("no stream error"))
    .collect()
    .await;
    let Some(IpEvent::Done(stats)) = events.last() else {
        panic!("stream did not finish: {:?}", events.last())
    };
    assert_eq!(stats.from_nova, MEMBERS, "{stats:?}");
    assert_each_member_once_as_the_server_says(&conn.heat, &cluster_stack, &events).await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_member_is_named_once_whichever_source_wins_its_address() {
    // All three sources race; Nova's names arrive on its own addresses or, for members the
    // listing or an output call answered first, as `Named` after them.
    let (sim, conn, _, cluster_stack) = bench_sim(Duration::ZERO).await;
    let events: Vec<IpEvent> = stream_group_ips(
        conn.heat.clone(),
        conn.nova.clone(),
        cluster_stack.clone(),
        Some(WORKERS.into()),
        IpOptions::default(),
    )
    .map(|e| e.expect("no stream error"))
    .collect()
    .await;
    assert!(matches!(events.last(), Some(IpEvent::Done(_))));
    let mut names: HashMap<String, String> = HashMap::new();
    let mut addressed = std::collections::HashSet::new();
    for e in &events {
        match e {
            IpEvent::Address(a, _) => {
                addressed.insert(a.member.clone());
                if let Some(name) = &a.name {
                    assert!(names.insert(a.member.clone(), name.clone()).is_none());
                }
            }
            IpEvent::Named { member, name } => {
                assert!(
                    addressed.contains(member),
                    "{member} named before its address"
                );
                assert!(
                    names.insert(member.clone(), name.clone()).is_none(),
                    "{member} named twice"
                );
            }
            _ => {}
        }
    }
    assert_eq!(names.len(), MEMBERS);
    for i in 0..MEMBERS {
        assert_eq!(
            names.get(&i.to_string()).map(String::as_str),
            Some(format!("{}-node-{i}", cluster_stack.name).as_str())
        );
    }
    assert_each_member_once_as_the_server_says(&conn.heat, &cluster_stack, &events).await;
    sim.shutdown().await;
}

fn stats_of(events: &[IpEvent]) -> caldera::ops::ips::IpStats {
    match events.last() {
        Some(IpEvent::Done(stats)) => stats.clone(),
        other => panic!("stream did not finish: {other:?}"),
    }
}

/// Heat keeps an aggregate output once resolved (the simulator too: here 20 ms per member,
/// 2.4 s cold). The first run finds every address the long way and then has Heat resolve
/// the aggregate for next time, without waiting for it; the next run gets every address from
/// that one request, the same addresses, in a handful of requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_heat_answers_every_address_in_one_request() {
    let (sim, conn) = sim_group::connected(SimOptions {
        scenario: format!("bench-{MEMBERS}"),
        output_cost_per_member: Duration::from_millis(20),
        ..SimOptions::default()
    })
    .await;
    let magnum = conn.magnum.clone().expect("simulator has Magnum");
    let cluster = magnum
        .get_cluster(&format!("bench-{MEMBERS}"))
        .await
        .expect("cluster");
    let cluster_stack = conn
        .heat
        .resolve(cluster.stack_id.as_deref().expect("cluster stack"))
        .await
        .expect("resolve");
    let dir = tempfile::tempdir().unwrap();
    let options = IpOptions {
        heat_outputs: Some(caldera::ops::ips::WarmOutputs::at(
            dir.path().join("heat-outputs.json"),
        )),
        nova_servers: false,
        ..IpOptions::default()
    };

    let cold = collect(conn.heat.clone(), cluster_stack.clone(), options.clone()).await;
    let stats = stats_of(&cold);
    assert_eq!(stats.from_aggregate, 0, "nothing known yet: {stats:?}");
    assert_eq!(stats.found, MEMBERS);
    // Heat resolves the aggregate in the background: 2.4 s from the warm-up request.
    tokio::time::sleep(Duration::from_millis(2600)).await;

    let before = conn.budget().total_requests;
    let warm = collect(conn.heat.clone(), cluster_stack.clone(), options.clone()).await;
    let requests = conn.budget().total_requests - before;
    let stats = stats_of(&warm);
    assert_eq!(stats.from_aggregate, MEMBERS, "{stats:?}");
    assert_eq!(addresses_by_member(&warm), addresses_by_member(&cold));
    // Discovery (listings and two templates) plus the one aggregate request.
    assert!(requests <= 6, "{requests} requests");

    // Without the memory, nothing changes: the long way, no aggregate asked.
    let forgetful = IpOptions {
        heat_outputs: None,
        ..options
    };
    let again = collect(conn.heat.clone(), cluster_stack.clone(), forgetful).await;
    assert_eq!(stats_of(&again).from_aggregate, 0);
    sim.shutdown().await;
}

/// A node with a fixed and a floating address (Magnum's `enable_floating_ip.yaml`: an
/// `OS::Neutron::FloatingIP` on each member's port, read by the member output
/// `kube_minion_external_ip`, which the cluster stack reads through the group beside
/// `kube_minion_ip`). The fixed address comes first and its row is shown; the floating one,
/// from a second source (the members' FloatingIP resources), is added to that same row: one
/// `Address` per member, then one `MoreAddresses` holding both, the first one first, each
/// labelled with the output Heat gives it by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floating_address_from_a_second_source_joins_the_row_already_shown() {
    let (sim, conn, _, cluster_stack) = bench_sim_with(SimOptions {
        detail_cost_per_resource: Duration::ZERO,
        floating_ips: true,
        ..SimOptions::default()
    })
    .await;
    let options = IpOptions {
        nova_servers: false,
        ..IpOptions::default()
    };
    let events = collect(conn.heat.clone(), cluster_stack.clone(), options).await;
    let fixed = aggregate_ips(&conn.heat, &cluster_stack).await;
    let floating = addresses_in(
        &conn
            .heat
            .show_output(&cluster_stack, "kube_minions")
            .await
            .expect("the floating addresses' aggregate")
            .value,
    );
    assert_eq!((fixed.len(), floating.len()), (MEMBERS, MEMBERS));

    // Per member: the row as first shown, and as it stands after every follow-up.
    let mut shown: HashMap<String, Vec<String>> = HashMap::new();
    let mut now: HashMap<String, caldera::model::NodeAddress> = HashMap::new();
    for e in &events {
        match e {
            IpEvent::Address(a, _) => {
                assert!(
                    shown
                        .insert(a.member.clone(), a.addresses.clone())
                        .is_none(),
                    "member {} got a second row",
                    a.member
                );
                now.insert(a.member.clone(), a.clone());
            }
            IpEvent::MoreAddresses(a, _) => {
                let before = now.get(&a.member).expect("more only after the first row");
                assert!(
                    a.addresses.starts_with(&before.addresses),
                    "member {}: {:?} dropped some of {:?}",
                    a.member,
                    a.addresses,
                    before.addresses
                );
                now.insert(a.member.clone(), a.clone());
            }
            _ => {}
        }
    }
    assert_eq!(shown.len(), MEMBERS);
    for i in 0..MEMBERS {
        let member = i.to_string();
        assert_eq!(
            shown[&member],
            vec![fixed[i].clone()],
            "member {i} first shown"
        );
        let row = &now[&member];
        assert_eq!(
            row.addresses,
            vec![fixed[i].clone(), floating[i].clone()],
            "member {i}"
        );
        let by_output: Vec<(&str, &[String])> = row
            .outputs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        assert_eq!(
            by_output,
            vec![
                ("kube_minion_external_ip", &floating[i..=i]),
                ("kube_minion_ip", &fixed[i..=i]),
            ],
            "member {i}"
        );
    }
    let stats = stats_of(&events);
    assert_eq!((stats.found, stats.failed), (MEMBERS, 0), "{stats:?}");
    sim.shutdown().await;
}

/// `caldera ips` on nodes with a floating address beside the fixed one: one row per node
/// holding both (JSON: `addresses`, and `outputs` naming the member output each came from;
/// the table: each address with that name), never a second row for the later one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ips_command_prints_each_node_once_with_all_its_addresses() {
    let (sim, conn, _, cluster_stack) = bench_sim_with(SimOptions {
        detail_cost_per_resource: Duration::ZERO,
        floating_ips: true,
        ..SimOptions::default()
    })
    .await;
    let fixed = aggregate_ips(&conn.heat, &cluster_stack).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("write clouds.yaml");
    let target = format!("{}/{WORKERS}", cluster_stack.name);
    let caldera = |format: &str| {
        crate::support::cli::Caldera::cloud(&clouds)
            .args(["ips", &target, "--format", format])
            .env("XDG_STATE_HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .run_ok()
    };

    let (ok, out, err) = caldera("json");
    assert!(ok, "{err}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    assert_eq!(rows.len(), MEMBERS, "one row per node: {out}");
    for row in &rows {
        let i: usize = row["index"].as_u64().expect("index") as usize;
        let addresses = row["addresses"].as_array().expect("addresses");
        assert_eq!(addresses.len(), 2, "{row}");
        assert_eq!(
            addresses[0],
            fixed[i].as_str(),
            "the fixed one first: {row}"
        );
        assert_eq!(
            row["outputs"]["kube_minion_ip"][0],
            fixed[i].as_str(),
            "{row}"
        );
        assert_eq!(
            row["outputs"]["kube_minion_external_ip"][0], addresses[1],
            "{row}"
        );
    }

    let (ok, out, err) = caldera("table");
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(lines.len(), MEMBERS, "{out}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains(" (kube_minion_ip) ") && l.ends_with(" (kube_minion_external_ip)")),
        "{out}"
    );
    sim.shutdown().await;
}
