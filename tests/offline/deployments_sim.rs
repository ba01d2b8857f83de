//! Software deployments on the simulator's demo: `staging`'s image update has a deployment
//! on member 2 whose agent never signalled (its siblings did in 30-40 s), `batch-jobs` has
//! one whose script failed with code 2. `caldera deployments` lists and judges them, `why`
//! names them as the deepest cause, and `heat signal-deployment` reports the silent one
//! COMPLETE by hand (journaled first), after which its resource completes.

use crate::support::cli::{simulator as caldera_sim, Caldera};
use crate::support::sim_group;
use caldera::journal::{Journal, Outcome};
use caldera::sim::SimOptions;

fn json(out: &str) -> Vec<serde_json::Value> {
    serde_json::from_str(out).expect("JSON array")
}

#[test]
fn a_silent_agent_and_a_failed_script_are_listed_judged_and_named_by_why() {
    let home = tempfile::tempdir().expect("home");
    let (rc, out, err) = caldera_sim(home.path(), &["deployments", "staging", "--format", "json"]);
    assert_eq!(rc, Some(0), "{out}\n{err}");
    let rows = json(&out);
    assert_eq!(rows.len(), 6, "{out}");
    let waiting: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["deployment"]["verdict"]["state"] == "waiting")
        .collect();
    assert_eq!(waiting.len(), 1, "{out}");
    let w = &waiting[0]["deployment"];
    assert_eq!(w["path"], "kube_minions/2/node_config");
    assert_eq!(w["transport"], "HEAT_SIGNAL");
    assert_eq!(w["verdict"]["siblings"], serde_json::json!([30, 40]));
    assert_eq!(w["verdict"]["overdue"], true);
    // --failed keeps the overdue one only.
    let (_, out, _) = caldera_sim(
        home.path(),
        &["deployments", "staging", "--failed", "--format", "json"],
    );
    assert_eq!(json(&out).len(), 1, "{out}");

    let (rc, out, err) = caldera_sim(home.path(), &["deployments", "batch-jobs", "--failed"]);
    assert_eq!(rc, Some(0), "{out}\n{err}");
    assert!(
        out.contains("failed, code 2: The file /dev/vdb does not exist and no size was specified."),
        "{out}"
    );
    assert!(
        out.contains("kube_minions/3/node_config stderr:\n  + mkfs.ext4 -F /dev/vdb\n"),
        "{out}"
    );
    assert_eq!(out.matches("CREATE_FAILED").count(), 1, "{out}");

    let (rc, out, err) = caldera_sim(home.path(), &["why", "staging"]);
    assert_eq!(rc, Some(5), "{out}\n{err}");
    let first_cause = out.lines().nth(2).unwrap_or_default();
    assert!(
        first_cause.starts_with("  stalled: deployment kube_minions/2/node_config (")
            && first_cause.contains("UPDATE waiting for a signal for 4h")
            && first_cause.ends_with("(siblings signalled in 30s-40s); transport HEAT_SIGNAL"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_deployment_reported_complete_by_hand_completes_its_resource() {
    let (sim, conn) = sim_group::connected(SimOptions::fast("demo", 1.0)).await;
    let silent = sim.with_world(|w| {
        w.sw_deployments
            .iter()
            .find(|d| d.status == caldera::sim::world::State::InProgress)
            .map(|d| d.id.clone())
            .expect("the demo's silent deployment")
    });
    let dir = tempfile::tempdir().expect("dir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("clouds.yaml");
    let journal = dir.path().join("journal.jsonl");
    let actions = dir.path().join("actions.toml");
    std::fs::write(&actions, "").expect("actions");
    let run = |args: &[&str]| {
        Caldera::cloud(&clouds)
            .journal(&journal, &actions)
            .args(args)
            .run_ok()
    };
    // FAILED wants a reason: refused, journaled, nothing sent.
    let (ok, out, err) = run(&[
        "heat",
        "signal-deployment",
        &silent,
        "--status",
        "FAILED",
        "--yes",
    ]);
    assert!(!ok, "{out}\n{err}");
    assert!(conn
        .heat
        .get_deployment(&silent)
        .await
        .expect("show")
        .status
        .is_in_progress());
    let (ok, out, err) = run(&[
        "heat",
        "signal-deployment",
        &silent,
        "--status",
        "COMPLETE",
        "--yes",
    ]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains(&format!("PUT /software_deployments/{silent}")),
        "{out}"
    );
    let d = conn.heat.get_deployment(&silent).await.expect("show");
    assert_eq!(d.status.raw, "UPDATE_COMPLETE");
    assert_eq!(d.status_code, Some(0));
    let resource = sim.with_world(|w| {
        (0..w.stack_count())
            .filter_map(|ix| w.stack(ix))
            .flat_map(|s| s.resources.iter())
            .find(|r| r.physical_id == silent)
            .map(|r| r.status.to_string())
    });
    assert_eq!(resource.as_deref(), Some("UPDATE_COMPLETE"));
    let outcomes: Vec<String> = Journal::open(&journal)
        .read_all()
        .expect("journal")
        .iter()
        .filter(|e| e.action == "heat.signal_deployment")
        .map(|e| match &e.outcome {
            Outcome::Started => format!("started {}", e.calls.len()),
            Outcome::Ok => "ok".into(),
            Outcome::Failed { error } => format!("failed {error}"),
            Outcome::Refused { .. } => "refused".into(),
        })
        .collect();
    assert_eq!(outcomes, ["refused", "started 1", "ok"]);
}

/// The node detail of a server lists its software deployments as core judges them: the
/// failed script with its stderr's last lines, the silent agent as waiting (read by server,
/// its siblings are not known: the wait is said, and overdue past the floor).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_detail_lists_a_servers_deployments_judged() {
    use caldera::model::server::{DeploymentState, ServerDeployments};
    use caldera::model::{NodeKey, ServerTarget};
    use caldera::service::{live::LiveService, CloudService};
    let (sim, conn) = sim_group::connected(SimOptions::fast("demo", 1.0)).await;
    let server_of = |state: caldera::sim::world::State| {
        sim.with_world(|w| {
            w.sw_deployments
                .iter()
                .find(|d| d.status == state)
                .map(|d| d.server_id.clone())
                .expect("a demo deployment in that state")
        })
    };
    let service = LiveService::new(conn);
    let detail = |server: String| {
        service.server_detail(ServerTarget {
            key: NodeKey {
                nodegroup: "ng".into(),
                member: "m".into(),
            },
            name: "m".into(),
            server_id: Some(server),
            member_stack: None,
            group_stack: None,
        })
    };
    let failed = detail(server_of(caldera::sim::world::State::Failed))
        .await
        .expect("the failed node's detail");
    let ServerDeployments::Read(list) = &failed.deployments else {
        panic!("deployments read: {:?}", failed.deployments)
    };
    let d = list
        .iter()
        .find(|d| d.state == DeploymentState::Failed)
        .unwrap_or_else(|| panic!("the failed deployment in {list:?}"));
    assert!(d.verdict.starts_with("failed, code 2: "), "{d:?}");
    assert!(
        d.stderr
            .last()
            .is_some_and(|l| d.verdict.ends_with(l.trim())),
        "the verdict names stderr's last line: {d:?}"
    );
    let silent = detail(server_of(caldera::sim::world::State::InProgress))
        .await
        .expect("the silent node's detail");
    let ServerDeployments::Read(list) = &silent.deployments else {
        panic!("deployments read: {:?}", silent.deployments)
    };
    assert!(
        list.iter().any(|d| d.state == DeploymentState::Overdue
            && d.verdict.starts_with("waiting for a signal for ")
            && d.verdict.ends_with("transport HEAT_SIGNAL")),
        "{list:?}"
    );
}
