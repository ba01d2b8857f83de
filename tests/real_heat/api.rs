//! The API layer against a REAL Heat (scripts/heat-standalone.sh), ignored in a plain
//! `cargo test`. Run with:
//!
//!   HEAT_URL=http://127.0.0.1:8004/v1/admin cargo test --test real_heat -- --ignored api::
//!
//! Creates small stacks of `OS::Heat::Value` (no servers) named `caldera-api-*` and deletes them.

use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::heat::{
    EventQuery, HeatClient, ResourceQuery, SortDir, StackAction, StackCreate, StackUpdate,
};
use caldera::model::{StackRef, StatusState};
use futures::TryStreamExt;
use serde_json::json;
use std::collections::HashSet;
use std::time::{Duration, Instant};

async fn heat() -> HeatClient {
    let url = std::env::var("HEAT_URL").unwrap_or_else(|_| "http://127.0.0.1:8004/v1/admin".into());
    let conn =
        CloudConnection::no_auth(&NoAuthEndpoints::heat_only(url), &ConnectOptions::default())
            .await
            .expect("connect to HEAT_URL");
    conn.heat
}

fn unique(prefix: &str) -> String {
    format!("caldera-api-{prefix}-{}", rand::random::<u32>())
}

/// Polls until the stack leaves IN_PROGRESS; returns the final status text.
async fn settle(heat: &HeatClient, stack: &StackRef) -> String {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let d = heat.get_stack(stack, false).await.expect("stack show");
        if d.summary.status.state != StatusState::InProgress {
            return d.summary.status.raw;
        }
        assert!(
            Instant::now() < deadline,
            "stack {} stuck in {}",
            stack.path(),
            d.summary.status
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn template() -> serde_json::Value {
    json!({
        "heat_template_version": "2018-08-31",
        "parameters": {"v": {"type": "string", "default": "one"}},
        "resources": {
            "val": {"type": "OS::Heat::Value", "properties": {"value": {"get_param": "v"}}},
            "grp": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": 3,
                "resource_def": {"type": "OS::Heat::Value", "properties": {"value": "m%index%"}}}}
        },
        "outputs": {"out": {"description": "the value", "value": {"get_attr": ["val", "value"]}}}
    })
}

#[tokio::test]
#[ignore = "needs a real Heat at HEAT_URL (scripts/heat-standalone.sh)"]
async fn stack_lifecycle_on_real_heat() {
    let heat = heat().await;
    let name = unique("life");
    let stack = heat
        .create_stack(&StackCreate {
            name: name.clone(),
            template: template(),
            disable_rollback: Some(true),
            tags: vec!["caldera-test".into()],
            ..StackCreate::default()
        })
        .await
        .expect("create");
    assert_eq!(stack.name, name);
    assert_eq!(settle(&heat, &stack).await, "CREATE_COMPLETE");
    assert_eq!(heat.resolve(&name).await.unwrap(), stack);
    assert_eq!(heat.resolve(&stack.id).await.unwrap(), stack);

    let detail = heat.get_stack(&stack, true).await.unwrap();
    assert_eq!(detail.parameters.get("v").map(String::as_str), Some("one"));
    assert_eq!(detail.tags, ["caldera-test"]);
    let outputs = heat.list_outputs(&stack).await.unwrap();
    assert_eq!(
        outputs.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(),
        ["out"]
    );
    assert_eq!(
        heat.show_output(&stack, "out").await.unwrap().value,
        json!("one")
    );

    let resources = heat
        .list_resources(
            &stack,
            &ResourceQuery {
                nested_depth: Some(1),
                ..ResourceQuery::default()
            },
        )
        .await
        .unwrap();
    let grp = resources
        .iter()
        .find(|r| r.resource.name == "grp")
        .expect("grp");
    let nested = grp
        .resource
        .nested
        .clone()
        .expect("grp owns a nested stack");
    assert_eq!(grp.resource.owner.as_ref(), Some(&stack));
    let members: Vec<_> = resources
        .iter()
        .filter(|r| r.resource.parent_resource.as_deref() == Some("grp"))
        .collect();
    assert_eq!(members.len(), 3);
    assert!(members
        .iter()
        .all(|m| m.resource.owner.as_ref() == Some(&nested)));

    let values = heat
        .list_resources(
            &stack,
            &ResourceQuery {
                nested_depth: Some(1),
                with_detail: true,
                filters: vec![("type".into(), "OS::Heat::Value".into())],
            },
        )
        .await
        .unwrap();
    let mut got: Vec<String> = values
        .iter()
        .filter_map(|r| {
            r.attributes
                .as_ref()?
                .get("value")?
                .as_str()
                .map(str::to_string)
        })
        .collect();
    got.sort();
    assert_eq!(got, ["m0", "m1", "m2", "one"]);

    // Events, two at a time through the paginator: every event once.
    let events: Vec<_> = heat
        .list_events(
            stack.clone(),
            EventQuery {
                limit: Some(2),
                sort_dir: Some(SortDir::Asc),
                nested_depth: Some(1),
                ..EventQuery::default()
            },
        )
        .try_collect()
        .await
        .unwrap();
    let ids: HashSet<_> = events.iter().map(|e| e.id.clone()).collect();
    assert_eq!(ids.len(), events.len());
    assert!(events.len() >= 10, "{} events", events.len());
    assert_eq!(events[0].resource_name, name);
    assert!(events.iter().any(|e| e.stack.as_ref() == Some(&nested)));

    // PATCH keeps the template and changes one parameter.
    let update = StackUpdate {
        parameters: [("v".to_string(), json!("two"))].into(),
        existing: true,
        ..StackUpdate::default()
    };
    let preview = heat.preview_update(&stack, &update).await.unwrap();
    assert!(
        preview.updated.contains(&"val".to_string())
            || preview.replaced.contains(&"val".to_string()),
        "{preview:?}"
    );
    heat.update_stack(&stack, &update).await.unwrap();
    assert_eq!(settle(&heat, &stack).await, "UPDATE_COMPLETE");
    assert_eq!(
        heat.show_output(&stack, "out").await.unwrap().value,
        json!("two")
    );

    heat.action(&stack, StackAction::Check).await.unwrap();
    assert_eq!(settle(&heat, &stack).await, "CHECK_COMPLETE");

    heat.delete_stack(&stack).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match heat.get_stack(&stack, false).await {
            Err(e) if e.is_not_found() => break,
            Ok(d) if d.summary.status.raw == "DELETE_COMPLETE" => break,
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "delete did not finish");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
#[ignore = "needs a real Heat at HEAT_URL (scripts/heat-standalone.sh)"]
async fn real_heat_errors_are_heats_own_words() {
    let heat = heat().await;
    let err = heat.resolve("caldera-api-no-such-stack").await.unwrap_err();
    assert!(err.is_not_found());
    assert!(
        err.to_string()
            .ends_with("HTTP 404: The Stack (caldera-api-no-such-stack) could not be found."),
        "{err}"
    );
    let err = heat
        .create_stack(&StackCreate {
            name: unique("bad"),
            template: json!({"heat_template_version": "2018-08-31",
                "resources": {"v": {"type": "OS::Heat::Value", "properties": {"nope": 1}}}}),
            ..StackCreate::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(err.to_string().contains("nope"), "{err}");
}
