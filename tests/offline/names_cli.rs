//! The headless read commands (`nodegroups`, `ips`, `events`, `failures`) take the names the
//! console shows: a Heat-native `CLUSTER`, its `CLUSTER/NODEGROUP`, or any `STACK`
//! (`STACK/GROUP` for one group), against an in-process simulator reached through a
//! clouds.yaml, as an operator runs them.

use crate::support::sim_group;

use crate::support::cli::{on_cloud as caldera, Caldera};
use caldera::drivers::heat_native::HeatNativeDriver;
use caldera::model::StackRef;
use caldera::sim::{SimHandle, SimOptions};
use std::path::Path;
use std::time::{Duration, Instant};

async fn start() -> (SimHandle, HeatNativeDriver) {
    sim_group::sim_driver(SimOptions::fast("empty", 50.0)).await
}

async fn create(driver: &HeatNativeDriver, cluster: &str, nodegroup: &str, count: u32) -> StackRef {
    let t = sim_group::create_group(driver, cluster, nodegroup, count).await;
    let stack = t.stack.expect("stack");
    let t0 = Instant::now();
    loop {
        let d = driver.heat().get_stack(&stack, false).await.expect("show");
        if !d.summary.status.is_in_progress() {
            assert_eq!(d.summary.status.raw, "CREATE_COMPLETE");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stack
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_commands_take_cluster_nodegroup_and_stack_names() {
    let (sim, driver) = start().await;
    let workers = create(&driver, "hn1", "workers", 3).await;
    create(&driver, "hn1", "infra", 2).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("write clouds.yaml");

    // nodegroups CLUSTER: the Heat-native cluster's node groups (Magnum was asked before).
    let (ok, out, err) = caldera(&clouds, &["nodegroups", "hn1", "--format", "csv"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\nworkers,") && out.contains("\ninfra,"),
        "{out}"
    );

    // ips CLUSTER: every node group; CLUSTER/NODEGROUP: one.
    let (ok, out, err) = caldera(&clouds, &["ips", "hn1", "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 1 + 5, "{out}");
    assert!(out.contains("\nhn1/workers,2,2,"), "{out}");
    assert!(err.contains("5/5 addresses, 0 failed"), "{err}");
    let (ok, out, err) = caldera(&clouds, &["ips", "hn1/infra", "--format", "json"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(err.contains("addresses from member output 'ip'"), "{err}");

    // The node group's stack by name, and one group in it by path.
    let (ok, out, err) = caldera(&clouds, &["ips", &workers.name, "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 4, "{out}");
    let (ok, out, err) = caldera(&clouds, &["ips", &format!("{}/nodes", workers.name)]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 4, "{out}");
    let (ok, _, err) = caldera(&clouds, &["ips", &format!("{}/kube_minions", workers.name)]);
    assert!(!ok);
    assert!(
        err.contains("has no node group at 'kube_minions' (node groups: nodes)")
            && !err.contains("HTTP 404"),
        "{err}"
    );
    // A member's path names the member, and the group that lists it.
    let (ok, _, err) = caldera(&clouds, &["ips", &format!("{}/nodes/3", workers.name)]);
    assert!(!ok);
    assert!(
        err.contains("'nodes/3' is a member of node group nodes"),
        "{err}"
    );
    let (ok, out, err) = caldera(&clouds, &["nodegroups", &workers.name, "--format", "csv"]);
    assert!(ok, "{err}");
    assert!(out.contains("\nnodes,"), "{out}");

    // events and failures: the cluster's stacks, one node group's, or a stack.
    let (ok, out, err) = caldera(&clouds, &["events", "hn1", "--format", "csv"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&workers.name),
        "the workers stack's events: {out}"
    );
    let (ok, out, err) = caldera(&clouds, &["events", "hn1/workers", "--nested-depth", "1"]);
    assert!(ok, "{err}");
    assert!(out.contains("CREATE_COMPLETE"), "{out}");
    let (ok, _, err) = caldera(&clouds, &["failures", "hn1"]);
    assert!(ok, "{err}");
    assert_eq!(err.matches("no failed resources").count(), 2, "{err}");

    // The cloud's `caldera: {output_key}` names the member output (here the node's name
    // output, to tell it from the discovered `ip`); the flag still wins over it.
    let named = dir.path().join("clouds-named.yaml");
    let mut text = sim.clouds_yaml("simcloud");
    text.push_str("    caldera: {output_key: name}\n");
    std::fs::write(&named, text).expect("write clouds.yaml");
    let (ok, out, err) = caldera(&named, &["ips", "hn1/workers", "--format", "csv"]);
    assert!(ok, "{err}");
    assert!(err.contains("member output 'name'"), "{err}");
    assert!(!out.contains(",10."), "names, not addresses: {out}");
    let (ok, out, err) = caldera(
        &named,
        &[
            "ips",
            "hn1/workers",
            "--format",
            "csv",
            "--output-key",
            "ip",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out.matches(",10.").count(), 3, "{out}");

    // A name nothing knows says so.
    let (ok, _, err) = caldera(&clouds, &["ips", "nosuch"]);
    assert!(!ok);
    assert!(
        err.contains("'nosuch' is neither a cluster nor a stack"),
        "{err}"
    );

    sim.shutdown().await;
}

/// The built-in demo cloud, through the binary with a home of its own.
fn demo(home: &Path, args: &[&str]) -> (bool, String, String) {
    Caldera::simulator(home).args(args).run_ok()
}

/// A Magnum cluster in Magnum's own Heat layout (the demo's `dev-small`: one cluster stack
/// holding `kube_masters` and `kube_minions`) by `CLUSTER/NODEGROUP`: default-worker's
/// addresses are the workers' (from `kube_minion_ip`), default-master's the master's, and the
/// cluster's both; never the masters reported as the whole cluster.
#[test]
fn magnum_node_groups_by_name_read_their_own_group_of_the_cluster_stack() {
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let (ok, out, err) = demo(h, &["nodegroups", "dev-small", "--format", "csv"]);
    assert!(ok, "{err}");
    let stack_ids: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap_or(""))
        .collect();
    assert_eq!(stack_ids.len(), 2, "{out}");
    assert_eq!(
        stack_ids[0], stack_ids[1],
        "both in the cluster stack: {out}"
    );

    let (ok, out, err) = demo(h, &["ips", "dev-small/default-worker", "--format", "csv"]);
    assert!(ok, "{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(
        rows.iter()
            .all(|r| r.starts_with("dev-small/default-worker,")),
        "{out}"
    );
    assert!(err.contains("member output 'kube_minion_ip'"), "{err}");
    assert!(err.contains("3/3 addresses, 0 failed"), "{err}");

    let (ok, out, err) = demo(h, &["ips", "dev-small/default-master", "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(err.contains("member output 'kube_master_ip'"), "{err}");

    let (ok, out, err) = demo(h, &["ips", "dev-small", "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 1 + 4, "{out}");
    assert!(err.contains("4/4 addresses, 0 failed"), "{err}");

    // The failed worker of batch-jobs, by its node group's name.
    let (ok, out, err) = demo(h, &["failures", "batch-jobs/default-worker"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("kube_minions.5.kube-minion") && out.contains("No valid host"),
        "{out}"
    );
}

/// The `ips` table's group column is as wide as the groups it prints: the demo's Magnum stack
/// named alone labels its rows `dev-small-<suffix>/kube_minions` (35 columns, once pushed past
/// a fixed 24), and the cluster's short group names waste none. Every row's columns line up
/// under the header's.
#[test]
fn the_ips_group_column_is_as_wide_as_its_groups() {
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let (ok, out, err) = demo(h, &["stacks", "--format", "csv"]);
    assert!(ok, "{err}");
    let stack = out
        .lines()
        .filter_map(|l| l.split(',').next())
        .find(|n| n.starts_with("dev-small-"))
        .unwrap_or_else(|| panic!("the demo's dev-small stack: {out}"))
        .to_string();
    for target in [stack.as_str(), "dev-small", "hn-demo"] {
        let (ok, out, err) = demo(h, &["ips", target]);
        assert!(ok, "{target}: {err}");
        let mut lines = out.lines();
        let header = lines.next().unwrap_or_default();
        let rows: Vec<&str> = lines.collect();
        assert!(!rows.is_empty(), "{target}: {out}");
        let widest = rows
            .iter()
            .map(|r| r.split(' ').next().unwrap_or_default().chars().count())
            .max()
            .unwrap_or(0);
        // `group` padded to the widest group, a space, then the 6-column member.
        assert_eq!(
            header.find("member"),
            Some(widest.max(5) + 1),
            "{target}:\n{out}"
        );
        let at = header.find("addresses").expect("addresses column");
        for row in &rows {
            assert!(
                row.get(at - 1..at) == Some(" ") && !row[at..].starts_with(' '),
                "{target}: a row off the header's columns:\n{out}"
            );
        }
    }
}

/// Labels do not depend on how many outputs a group has: the demo's workers read one
/// address output (`kube_minion_ip`, no floating IPs), and each address says so as it would
/// beside a floating one; the rows come in member order, each named as its server.
#[test]
fn a_single_address_output_labels_its_addresses_as_several_do() {
    let home = tempfile::tempdir().expect("home");
    let (ok, out, err) = demo(home.path(), &["ips", "dev-small/default-worker"]);
    assert!(ok, "{err}");
    assert!(err.contains("member output 'kube_minion_ip'"), "{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{out}");
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells.get(1), Some(&i.to_string().as_str()), "{out}");
        assert!(
            cells
                .get(2)
                .is_some_and(|n| n.ends_with(&format!("-node-{i}"))),
            "{out}"
        );
        assert!(row.ends_with(" (kube_minion_ip)"), "{out}");
    }
}
