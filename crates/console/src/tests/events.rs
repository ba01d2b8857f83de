//! The events view: the tail's modes, following and saving, reconnecting after an outage,
//! and its columns' widths by need.

use super::*;

#[tokio::test]
async fn snapshot_events_tail_modes() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Events { .. }));
    snap!(h, "events");
    h.key(KeyAction::TimeMode);
    h.key(KeyAction::Wrap);
    snap!(h, "events_abs_wrap");
    h.key(KeyAction::Wrap);
    h.key(KeyAction::PausePoll);
    h.press(KeyCode::Char('/'));
    h.type_str("re:hook.*cleared|FAILED");
    snap!(h, "events_filter_typing");
    h.press(KeyCode::Enter);
    snap!(h, "events_filtered");
    // Wrapping keeps the filter (and the filtered count) in the title.
    h.key(KeyAction::Wrap);
    let screen = h.render(200, 60);
    let title = screen
        .lines()
        .find(|l| l.contains("Events of"))
        .unwrap_or_default();
    assert!(title.contains("/re:hook.*cleared|FAILED"), "{screen}");
    snap!(h, "events_filtered_wrap");
}

#[tokio::test]
async fn events_follow_new_events_and_save_to_file() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    let count = |h: &Harness| {
        h.app
            .store()
            .events
            .values()
            .map(|l| l.events.len())
            .max()
            .unwrap_or(0)
    };
    let n0 = count(&h);
    h.fake.advance();
    h.key(KeyAction::Refresh);
    h.settle().await;
    let n1 = count(&h);
    assert!(n1 > n0, "{n1} > {n0}");
    h.app.prepare();
    assert_eq!(
        h.app.view().table.selected_pos(),
        Some(n1 - 1),
        "follow keeps the newest selected"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ev.txt");
    h.key(KeyAction::Save);
    assert!(matches!(h.app.mode(), Mode::Input(_)));
    // Replace the suggested name with our path.
    h.app
        .on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    h.type_str(&path.display().to_string());
    h.press(KeyCode::Enter);
    h.settle().await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), n1);
    assert!(text.contains("UPDATE_IN_PROGRESS"));
    assert!(h.app.status().as_ref().unwrap().text.contains("saved"));
}

/// The events view through an outage: polls fail, the status line says for how long the
/// follower has been reconnecting and when it tries next (backing off), the events already
/// shown stay, and when the cloud answers again the follower carries on from its cursor.
#[tokio::test]
async fn events_view_reconnects_with_backoff_and_says_so() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    let shown = |h: &Harness| h.app.store().events.values().map(|l| l.events.len()).max();
    let before = shown(&h).expect("events shown");
    h.fake.set_error(
        FakeOp::PollEvents,
        Some(ServiceError::new(
            ErrorKind::Transport,
            "GET http://heat/v1/p/stacks/x/events: connection failed",
        )),
    );
    let mut now = demo_epoch();
    let mut tick = |h: &mut Harness, secs: i64| {
        now += chrono::Duration::seconds(secs);
        h.app.update(Action::Tick {
            now,
            info: Box::new(h.fake.info()),
            budget: h.fake.budget(),
        });
    };
    let mut waits = Vec::new();
    for _ in 0..4 {
        // Past any refresh interval: the follower polls when its backoff says so.
        tick(&mut h, 40);
        h.settle().await;
        let status = h.app.status().cloned().expect("a status line");
        assert!(
            status.text.contains("events: reconnecting for")
                && status.text.contains("connection failed"),
            "{}",
            status.text
        );
        let next = status
            .text
            .split("next try in ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .expect("next try");
        waits.push(next);
    }
    assert_eq!(waits, vec![1, 2, 4, 8], "the wait doubles while it fails");
    assert_eq!(shown(&h), Some(before), "what was shown stays");
    // The backoff holds the next poll back: a second later nothing is asked.
    tick(&mut h, 1);
    assert!(
        !h.app
            .take_requests()
            .iter()
            .any(|r| matches!(r, Request::Events { .. })),
        "polled before the backoff elapsed"
    );
    h.fake.set_error(FakeOp::PollEvents, None);
    h.fake.advance();
    tick(&mut h, 10);
    h.settle().await;
    let status = h.app.status().cloned().expect("a status line");
    assert!(
        status.text.starts_with("events: reconnected after"),
        "{}",
        status.text
    );
    assert!(
        shown(&h) > Some(before),
        "new events arrive after the outage"
    );
}

/// The events view of prod-k8s's default worker, with (`magnum`) a Magnum member's server
/// and port (members 406 and 405) as Heat names them.
async fn worker_events(magnum: bool) -> Harness {
    let mut h = Harness::demo(1000);
    if magnum {
        add_magnum_events(&h);
    }
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Events { .. }));
    h
}

fn add_magnum_events(h: &Harness) {
    // A Magnum member's server and port (member 406 and 405), as Heat names them.
    h.fake.with_data(|d| {
        let (id, sref) = d
            .events
            .iter()
            .find_map(|(id, evs)| {
                let sref = evs.first()?.stack.clone()?;
                (sref.name == "prod-k8s-default-worker").then(|| (id.clone(), sref))
            })
            .expect("the worker stack's events");
        let events = d.events.entry(id).or_default();
        let now = d.now;
        for (k, (member, resource)) in [
            ("405", "kube-minion"),
            ("406", "kube-minion"),
            ("406", "kube-minion-port"),
        ]
        .into_iter()
        .enumerate()
        {
            events.push(crate::model::StackEvent {
                id: format!("ev-magnum-{k}"),
                time: now - chrono::Duration::seconds(30 - k as i64),
                resource_name: resource.into(),
                logical_id: resource.into(),
                physical_id: None,
                status: crate::model::Status::parse("UPDATE_IN_PROGRESS"),
                status_reason: Some("state changed".into()),
                stack: Some(sref.clone()),
                path: vec!["kube_minions".into(), member.into()],
            });
        }
    });
}

/// #26 item 8: the events table's widths by need. At 40 columns TIME and STATUS keep their
/// natural width (they were `TI…` and `S…`: RESOURCE took 28 columns for 12 of text); at 60
/// RESOURCE keeps what tells a member's server from its port and from another member's
/// (`…406 > kube-minion-port`), REASON what is left; at 80 the paths keep the same and REASON
/// a few words; at 200 nothing that fits is cut. Every cut is marked.
#[tokio::test]
async fn events_columns_get_widths_by_need_at_40_80_and_200() {
    let mut h = worker_events(false).await;
    let narrow = h.render(40, 20);
    insta::assert_snapshot!("events_by_need_40x20", narrow);
    let heading = narrow.lines().nth(3).unwrap_or_default();
    assert!(
        heading.contains(" TIME ") && heading.contains(" STATUS "),
        "{narrow}"
    );
    let body: Vec<&str> = narrow.lines().skip(4).take(13).collect();
    for l in &body {
        assert!(
            l.contains(" ago ") && l.contains("UPDATE_COMPLETE "),
            "{narrow}"
        );
        // The member (what tells the rows apart), its group's name cut, marked.
        let member = l.split_whitespace().any(|w| {
            w.strip_prefix('…')
                .is_some_and(|n| n.parse::<u32>().is_ok())
        });
        assert!(member, "the member is shown: {narrow}");
    }
    let mut h = worker_events(true).await;
    let mid = h.render(60, 20);
    let row = |end: &str| {
        mid.lines()
            .find(|l| l.contains(end))
            .unwrap_or_else(|| panic!("no row with {end}:\n{mid}"))
            .to_string()
    };
    for end in [
        "405 > kube-minion ",
        "406 > kube-minion ",
        "406 > kube-minion-port ",
    ] {
        let r = row(end);
        assert!(
            r.contains(" ago ") && r.contains(" UPDATE_IN_PROGRESS "),
            "{r}"
        );
        assert!(r.contains('…'), "the cut path is marked: {r}");
    }
    insta::assert_snapshot!("events_by_need_60x20", mid);
    // At 40 columns with the nested paths, nothing fits the member, TIME and STATUS whole:
    // a status cut keeps its state (`…IN_PROGRESS`), never just its action (`UPDATE…`).
    let narrow = h.render(40, 20);
    insta::assert_snapshot!("events_by_need_nested_40x20", narrow);
    assert!(!narrow.contains("UPDATE…"), "{narrow}");
    assert!(
        narrow.lines().any(|l| l.contains("IN_PROGRESS")),
        "{narrow}"
    );
    insta::assert_snapshot!("events_by_need_80x24", h.render(80, 24));
    let wide = h.render(200, 60);
    insta::assert_snapshot!("events_by_need_200x60", wide);
    assert!(
        wide.contains("kube_minions > 406 > kube-minion-port state changed")
            && !wide
                .lines()
                .any(|l| l.contains("kube_minions") && l.contains('…')),
        "{wide}"
    );
}
