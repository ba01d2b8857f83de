//! Software deployments on a real OpenStack Heat on 127.0.0.1 (Heat 27): a config and three
//! deployments made through the API for server ids of the test's choosing (the API takes any
//! id), then the test plays each server's agent: one signals success, one fails with code 2
//! and a hostile stderr (a megabyte of output, terminal escapes), one never signals. caldera
//! reads them by server and judges them; then `caldera heat signal-deployment` reports the
//! silent one COMPLETE, journaled first, and Heat shows it so.
//!
//! `HEAT_URL=http://127.0.0.1:8504/v1/admin cargo test --test real_heat deployments:: -- --ignored`

use crate::support::real_heat_client::caldera_journaled as caldera;
use crate::support::real_heat_client::{heat, unique};
use caldera::api::heat::{ConfigCreate, DeploymentCreate, DeploymentUpdate, HeatClient};
use caldera::journal::{Journal, Outcome};
use caldera::model::text::is_unsafe_char;
use caldera::ops::deployments::{for_servers, DeploymentVerdict};
use serde_json::json;

async fn make(heat: &HeatClient, config_id: &str, server: &str) -> String {
    let create = DeploymentCreate {
        config_id: config_id.into(),
        server_id: server.into(),
        action: "CREATE".into(),
        status: "IN_PROGRESS".into(),
        status_reason: Some("Deploy data available".into()),
    };
    heat.create_deployment(&create)
        .await
        .expect("create deployment")
        .id
}

/// What an agent reports at the end of its script (the API's update with the outputs).
async fn agent_reports(
    heat: &HeatClient,
    id: &str,
    status: &str,
    code: i64,
    stdout: &str,
    stderr: &str,
) {
    let mut output_values = serde_json::Map::new();
    output_values.insert("deploy_status_code".into(), code.into());
    output_values.insert("deploy_stdout".into(), stdout.into());
    output_values.insert("deploy_stderr".into(), stderr.into());
    let update = DeploymentUpdate {
        status: status.into(),
        status_reason: Some(match code {
            0 => "Outputs received".to_string(),
            c => format!("deploy_status_code : Deployment exited with non-zero status code: {c}"),
        }),
        output_values,
    };
    heat.update_deployment(id, &update)
        .await
        .expect("agent signal");
}

#[tokio::test]
#[ignore = "needs a real Heat: HEAT_URL"]
async fn agents_that_succeed_fail_and_never_signal_are_read_judged_and_signalled_by_hand() {
    let heat = heat().await;
    let name = unique("deploy");
    let config = ConfigCreate {
        name: name.clone(),
        group: "script".into(),
        config: "#!/bin/sh\nmkfs.ext4 /dev/vdb\n".into(),
        inputs: vec![json!({"name": "deploy_signal_transport", "value": "HEAT_SIGNAL"})],
        outputs: vec![json!({"name": "result"})],
    };
    let config_id = heat.create_config(&config).await.expect("config");
    let servers: Vec<String> = ["ok", "bad", "mute"]
        .iter()
        .map(|s| format!("{name}-{s}"))
        .collect();
    let ok = make(&heat, &config_id, &servers[0]).await;
    let bad = make(&heat, &config_id, &servers[1]).await;
    let mute = make(&heat, &config_id, &servers[2]).await;
    agent_reports(&heat, &ok, "COMPLETE", 0, "formatted\n", "").await;
    let mut stdout: String = (0..40_000)
        .map(|i| format!("progress {i:06} \u{1b}[32mok\u{1b}[0m\n"))
        .collect();
    stdout.push_str("\u{1b}]0;owned\u{7}last line\n");
    let stderr = "warning\n\u{1b}[31mmkfs.ext4: /dev/vdb: No such device\u{1b}[0m\u{202e}\n";
    agent_reports(&heat, &bad, "FAILED", 2, &stdout, stderr).await;

    // By server, as a node's or a node group's deployments are read.
    let listed = heat.list_deployments(&servers[1]).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, bad);
    let c = heat.get_config(&config_id).await.expect("config show");
    assert_eq!(c.name.as_deref(), Some(name.as_str()));
    assert_eq!(c.group, "script");
    assert_eq!(c.signal_transport(), Some("HEAT_SIGNAL"));
    assert_eq!(c.outputs, ["result"]);

    let views = for_servers(&heat, servers.clone(), chrono::Utc::now())
        .await
        .expect("read");
    assert_eq!(views.len(), 3);
    let of = |id: &str| views.iter().find(|v| v.deployment.id == id).expect("view");
    assert!(
        matches!(of(&ok).verdict, DeploymentVerdict::Complete { .. }),
        "{:?}",
        of(&ok).verdict
    );
    let failed = of(&bad);
    assert_eq!(failed.deployment.status.raw, "CREATE_FAILED");
    assert_eq!(failed.deployment.status_code, Some(2));
    assert_eq!(
        failed.verdict.words(None),
        "failed, code 2: mkfs.ext4: /dev/vdb: No such device"
    );
    assert_eq!(
        failed.deployment.stdout.last().map(String::as_str),
        Some("last line")
    );
    let kept: usize = failed.deployment.stdout.iter().map(String::len).sum();
    assert!(
        kept <= caldera::model::deployment::OUTPUT_TAIL_BYTES,
        "{kept}"
    );
    for l in failed
        .deployment
        .stdout
        .iter()
        .chain(&failed.deployment.stderr)
    {
        assert!(!l.chars().any(is_unsafe_char), "{l:?}");
    }
    match &of(&mute).verdict {
        DeploymentVerdict::Waiting { siblings, .. } => assert!(siblings.is_some()),
        other => panic!("{other:?}"),
    }
    assert_eq!(of(&mute).transport.as_deref(), Some("HEAT_SIGNAL"));

    // By hand: planned, journaled first, then sent; a settled one is refused.
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("journal.jsonl");
    let (okay, out, err) = caldera(
        &journal,
        &[
            "heat",
            "signal-deployment",
            &mute,
            "--status",
            "COMPLETE",
            "--yes",
        ],
    );
    assert!(okay, "{out}\n{err}");
    assert!(
        out.contains(&format!("PUT /software_deployments/{mute}")),
        "{out}"
    );
    let now = heat.get_deployment(&mute).await.expect("show");
    assert_eq!(now.status.raw, "CREATE_COMPLETE");
    assert_eq!(now.status_code, Some(0));
    assert_eq!(
        now.status_reason.as_deref(),
        Some("Outputs received (reported by hand)")
    );
    let (okay, out, err) = caldera(
        &journal,
        &[
            "heat",
            "signal-deployment",
            &bad,
            "--status",
            "COMPLETE",
            "--yes",
        ],
    );
    assert!(!okay, "{out}\n{err}");
    assert_eq!(
        heat.get_deployment(&bad).await.expect("show").status.raw,
        "CREATE_FAILED"
    );
    let outcomes: Vec<String> = Journal::open(&journal)
        .read_all()
        .expect("journal")
        .iter()
        .filter(|e| e.action == "heat.signal_deployment")
        .map(|e| match &e.outcome {
            Outcome::Started => "started".to_string(),
            Outcome::Ok => "ok".into(),
            Outcome::Failed { error } => format!("failed {error}"),
            Outcome::Refused { .. } => "refused".into(),
        })
        .collect();
    assert_eq!(outcomes, ["started", "ok", "refused"]);
}
