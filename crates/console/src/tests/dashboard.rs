//! The cluster dashboard: a thousand nodes, and its line by image during an upgrade.

use super::*;

#[tokio::test]
async fn snapshot_dashboard_1000_nodes() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    assert!(matches!(h.app.view().kind, ViewKind::Dashboard { .. }));
    snap!(h, "dashboard_1000");
}

/// #15: during the Magnum upgrade the dashboard's line says old / updating / new, each node
/// group's nodes against its own image (the sum of what each group's nodes pane says), and
/// the heat map goes by image with its legend; once every node is on its group's image the
/// map and the line go back to statuses.
#[tokio::test]
async fn dashboard_counts_by_image_during_an_upgrade_only() {
    use crate::model::{ImagePhase, Status};
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    let c = h.fake.list_clusters().await.unwrap()[0].clone();
    let groups = h.fake.list_nodegroups(c).await.unwrap();
    // Only the groups with a member on another image are being upgraded: their members on
    // the image are new, those held on a hook held; another group's members are idle.
    let (new, held, total) = h.fake.with_data(|d| {
        let mut out = (0, 0, 0);
        for g in &groups {
            let nodes = d.nodes.get(&g.id).map(Vec::as_slice).unwrap_or(&[]);
            out.2 += nodes.len();
            let phase = |n: &crate::model::Node| n.image_phase(g.image.as_deref());
            if !nodes.iter().any(|n| phase(n) == Some(ImagePhase::Old)) {
                continue;
            }
            let ok = |n: &&crate::model::Node| !n.status.is_failed();
            out.0 += nodes
                .iter()
                .filter(ok)
                .filter(|n| phase(n) == Some(ImagePhase::New))
                .count();
            out.1 += nodes.iter().filter(ok).filter(|n| n.hook_paused).count();
        }
        out
    });
    assert!(new > 0 && held > 0, "{new} {held}");
    let screen = h.render(200, 60);
    let line = format!("█ new {new}/{total}  ▓ updating");
    assert!(screen.contains(&line), "{line}\n{screen}");
    assert!(screen.contains(&format!("‖ held {held}")), "{screen}");
    assert!(
        screen.contains("Fleet heat map █ new ▓ updating ‖ held"),
        "{screen}"
    );
    // The upgrade is over: every node on its group's image, done.
    h.fake.with_data(|d| {
        for g in &groups {
            for n in d.nodes.get_mut(&g.id).into_iter().flatten() {
                n.image.clone_from(&g.image);
                n.status = Status::parse("UPDATE_COMPLETE");
                n.hook_paused = false;
            }
        }
    });
    h.app.plan_refresh(true);
    h.settle().await;
    let screen = h.render(200, 60);
    assert!(!screen.contains("‖ held"), "{screen}");
    assert!(screen.contains("█ complete 1003"), "{screen}");
}

/// The first member list of a load mid-upgrade comes before the images and hook marks (the
/// stream's `Listed`): Heat calls the members not reached yet complete and the held ones in
/// progress, so the line says that both are still being read and claims no pace or
/// percentiles; the full list then counts by image.
#[tokio::test]
async fn a_first_member_list_mid_upgrade_claims_no_done_before_the_images() {
    use crate::service::NodeUpdate;
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    h.app.plan_refresh(false);
    // Answer each node group's stream with provisional lists only, as the worker would
    // before the hook lookup (`marks` false) and the images (`Members`) come in.
    let streams = h.node_streams();
    assert!(!streams.is_empty(), "the dashboard asked for no nodes");
    let listed = |h: &mut Harness, streams: &[(String, u64)], marks: bool| {
        for (id, gen) in streams {
            let nodes = h.fake.with_data(|d| {
                let nodes = d.nodes.get(id).cloned().unwrap_or_default();
                let bare = |mut n: crate::model::Node| {
                    (n.image, n.ip) = (None, None);
                    n.hook_paused &= marks;
                    n
                };
                nodes.into_iter().map(bare).collect()
            });
            h.app.update(Action::Reply(Reply::Nodes {
                nodegroup_id: id.clone(),
                gen: *gen,
                update: Ok(NodeUpdate::Listed { nodes, marks }),
            }));
        }
    };
    listed(&mut h, &streams, false);
    let screen = h.render(200, 60);
    assert!(screen.contains("⟳ reading images and hooks"), "{screen}");
    for derived in ["ETA", "p50", "█ new"] {
        assert!(!screen.contains(derived), "{derived}: {screen}");
    }
    let narrow = h.render(80, 24);
    assert!(narrow.contains("⟳ reading images"), "{narrow}");
    // The hook lookup answered: the held members are counted, the images still awaited.
    listed(&mut h, &streams, true);
    let screen = h.render(200, 60);
    assert!(screen.contains("⟳ reading images"), "{screen}");
    assert!(!screen.contains("reading images and hooks"), "{screen}");
    assert!(!screen.contains("held 0"), "{screen}");
    // The full lists: by image, and nothing pending any more.
    h.settle().await;
    h.app.plan_refresh(true);
    h.settle().await;
    let screen = h.render(200, 60);
    assert!(screen.contains("█ new"), "{screen}");
    assert!(!screen.contains("⟳ reading"), "{screen}");
    // A refresh's provisional list keeps what was known: still by image.
    h.app.plan_refresh(true);
    let streams = h.node_streams();
    assert!(!streams.is_empty(), "the refresh asked for no nodes");
    listed(&mut h, &streams, false);
    let screen = h.render(200, 60);
    assert!(screen.contains("█ new"), "{screen}");
    assert!(!screen.contains("⟳ reading"), "{screen}");
}
