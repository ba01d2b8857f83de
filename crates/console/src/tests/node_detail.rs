//! The node detail: a node's Nova server, its fault and console log.

use super::*;

/// A failed server as Nova shows it to an admin: a long fault, its traceback, two networks
/// and a console log with colours and hostile bytes in it.
pub(super) fn failed_server(name: &str) -> crate::model::ServerDetail {
    use crate::model::server::{
        console_lines, DeploymentState, ServerAddr, ServerDeployment, ServerDeployments,
    };
    use crate::model::{ConsoleTail, ServerDetail, ServerFault};
    let at = demo_epoch() - chrono::Duration::minutes(42);
    let console = "[    0.000000] Linux version 5.15.0\r\n\u{1b}[0;32m[  OK  ]\u{1b}[0m Started cloud-init.service.\r\n\u{1b}]0;owned\u{7}cloud-init[712]: failed to fetch metadata from http://169.254.169.254/openstack/latest/meta_data.json after 120 attempts, giving up and continuing without it\r\nlogin: \n";
    ServerDetail {
        id: "5b1c0e9a-2f4d-4c1b-9a77-0d3e6f1a2b3c".into(),
        name: name.into(),
        status: "ERROR".into(),
        task_state: None,
        vm_state: Some("error".into()),
        power_state: Some("nostate".into()),
        host: Some("compute-az-2-05".into()),
        zone: Some("az-2".into()),
        flavor: Some("r1.2xlarge".into()),
        image: Some("fedora-coreos-38".into()),
        image_name: None,
        fault: Some(ServerFault {
            code: Some(500),
            message: "Build of instance 5b1c0e9a-2f4d-4c1b-9a77-0d3e6f1a2b3c aborted: Failed to allocate the network(s) with error Maximum number of ports exceeded for network private, not rescheduling.\u{1b}[2J".into(),
            details: Some("Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/nova/compute/manager.py\", line 2441, in _build_and_run_instance\n    with self._build_resources(context, instance,\nnova.exception.BuildAbortException: Build of instance aborted: Failed to allocate the network(s)\n".into()),
            created: Some(at),
        }),
        addresses: vec![
            ServerAddr { network: "private".into(), addr: "10.0.3.17".into(), kind: "fixed".into() },
            ServerAddr { network: "storage".into(), addr: "fd00:5::17".into(), kind: "fixed".into() },
            ServerAddr { network: "private".into(), addr: "172.24.4.201".into(), kind: "floating".into() },
        ],
        created: Some(at - chrono::Duration::minutes(3)),
        updated: Some(at),
        console: ConsoleTail::Lines(console_lines(console, 50)),
        // As core judges them: one done, one failed with its script's stderr (hostile bytes
        // included: the view makes them safe).
        deployments: ServerDeployments::Read(vec![
            ServerDeployment {
                name: "kube_minions/3/write_heat_params".into(),
                id: "d1".into(),
                action: "CREATE".into(),
                verdict: "complete (signalled in 35s)".into(),
                state: DeploymentState::Complete,
                stderr: vec![],
            },
            ServerDeployment {
                name: "kube_minions/3/format_volume".into(),
                id: "d2".into(),
                action: "CREATE".into(),
                verdict: "failed, code 2: mkfs.ext4: /dev/vdb: No such device".into(),
                state: DeploymentState::Failed,
                stderr: vec![
                    "mke2fs 1.46.5 (30-Dec-2021)".into(),
                    "\u{1b}[31mmkfs.ext4: /dev/vdb: No such device\u{1b}[0m".into(),
                ],
            },
        ]),
    }
}

/// Enter on a node opens its Nova server: status, host, fault with its traceback wrapped,
/// addresses and the console log tail, nothing from the cloud reaching the terminal raw.
#[tokio::test]
async fn snapshot_node_detail_of_a_failed_server() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::FaultsOnly);
    h.key(KeyAction::Top);
    h.app.prepare();
    let ViewKind::Nodes { nodegroup, .. } = &h.app.view().kind else {
        panic!("not in the nodes view")
    };
    let rows = &h.app.store().nodes[&nodegroup.id].rows;
    let node = h
        .app
        .view()
        .table
        .selected(rows)
        .expect("a failed node")
        .node
        .clone();
    h.fake.with_data(|d| {
        d.servers
            .insert(node.name.clone(), failed_server(&node.name));
    });
    h.key(KeyAction::Open);
    assert!(matches!(&h.app.view().kind, ViewKind::Server { target } if target.key == node.key));
    h.settle().await;
    snap!(h, "node_detail_failed");
    insta::assert_snapshot!("node_detail_failed_120x40", h.render(120, 40));
    let screen = h.render(200, 60);
    assert!(
        screen.contains("Maximum number of ports exceeded"),
        "{screen}"
    );
    assert!(
        screen.contains("\\e[2J"),
        "the fault's escape is shown, not obeyed"
    );
    assert!(
        !screen.contains("owned"),
        "an OSC title sequence is dropped: {screen}"
    );
    // Scrolled to the end at 80x24: the console's last line shows.
    h.render(80, 24);
    h.key(KeyAction::Bottom);
    let end = h.render(80, 24);
    assert!(end.contains("login:"), "{end}");
    // Back returns to the nodes.
    h.key(KeyAction::Back);
    assert!(matches!(h.app.view().kind, ViewKind::Nodes { .. }));
}

/// Nova refusing the console log (policy, not ready) and a node whose server cannot be
/// found are said in the view.
#[tokio::test]
async fn node_detail_says_why_there_is_no_console_or_server() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    let screen = h.render(120, 40);
    assert!(
        screen.contains("Could not load:") && screen.contains("no Nova server named"),
        "{screen}"
    );
    h.key(KeyAction::Back);
    h.app.prepare();
    let ViewKind::Nodes { nodegroup, .. } = &h.app.view().kind else {
        panic!("not in the nodes view")
    };
    let rows = &h.app.store().nodes[&nodegroup.id].rows;
    let name = h
        .app
        .view()
        .table
        .selected(rows)
        .expect("a node")
        .node
        .name
        .clone();
    let mut detail = failed_server(&name);
    detail.console = crate::model::ConsoleTail::Unavailable(
        "Nova's policy does not let this user read the console log (403): Policy doesn't allow os_compute_api:os-console-output to be performed.".into(),
    );
    h.fake.with_data(|d| {
        d.servers.insert(name.clone(), detail);
    });
    h.key(KeyAction::Open);
    h.settle().await;
    let screen = h.render(120, 40);
    assert!(screen.contains("Policy doesn't allow"), "{screen}");
}
