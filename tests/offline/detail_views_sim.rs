//! The detail views' calls over the in-process simulator, through the live service the
//! console uses: a resource (`resource show` with attributes as text, its metadata and its
//! own events, newest first and bounded) and a stack (`stack show` without resolving
//! outputs, its outputs list and its template as YAML text); a missing one is Heat's 404,
//! said as an error.

use crate::support::sim_group;
use caldera::service::live::LiveService;
use caldera::service::resource_show::RESOURCE_EVENTS;
use caldera::service::CloudService;
use caldera::sim::SimOptions;

#[tokio::test]
async fn a_resource_is_shown_with_its_attributes_metadata_and_events() {
    let (_sim, conn) = sim_group::connected(SimOptions::fast("demo", 1.0)).await;
    let service = LiveService::new(conn);
    let stacks = service.list_stacks().await.expect("stacks");
    let stack = stacks.first().expect("a demo stack").stack.clone();
    let resources = service
        .stack_resources(stack.clone(), 0)
        .await
        .expect("resources");
    let listed = resources.first().expect("a resource").clone();
    let detail = service
        .resource_detail(stack.clone(), listed.name.clone())
        .await
        .expect("resource shown");
    assert_eq!(detail.resource.name, listed.name);
    assert_eq!(detail.resource.resource_type, listed.resource_type);
    assert_eq!(detail.resource.status, listed.status);
    assert!(detail.created_at.is_some());
    // The simulated resources carry no metadata: Heat's `{}` is shown as none.
    assert_eq!(detail.metadata, "");
    // Its events only, newest first, at most the bound.
    assert!(!detail.events.is_empty(), "a created resource has events");
    assert!(detail.events.len() <= RESOURCE_EVENTS as usize);
    assert!(detail.events.iter().all(|e| e.resource_name == listed.name));
    assert!(detail.events.windows(2).all(|w| w[0].time >= w[1].time));

    let missing = service
        .resource_detail(stack, "no-such-resource".into())
        .await
        .expect_err("no such resource");
    assert!(
        missing.message.contains("no-such-resource"),
        "{}",
        missing.message
    );
}

#[tokio::test]
async fn a_stack_is_shown_with_parameters_outputs_and_template() {
    let (_sim, conn) = sim_group::connected(SimOptions::fast("demo", 1.0)).await;
    let service = LiveService::new(conn);
    let stacks = service.list_stacks().await.expect("stacks");
    let mut seen = 0;
    for s in stacks.iter().take(5) {
        let detail = service
            .stack_overview(s.stack.clone())
            .await
            .expect("stack shown");
        assert_eq!(detail.summary.stack, s.stack);
        assert_eq!(detail.summary.status, s.status);
        // Heat's pseudo-parameters are always there.
        assert!(
            detail.parameters.iter().any(|(k, _)| k == "OS::stack_name"),
            "{:?}",
            detail.parameters
        );
        assert!(
            detail.template.starts_with("heat_template_version"),
            "{}",
            detail.template
        );
        let listed = service
            .stack_outputs(s.stack.clone())
            .await
            .expect("outputs listed");
        assert_eq!(detail.outputs, listed);
        seen += usize::from(!detail.outputs.is_empty());
    }
    assert!(seen > 0, "a demo stack with outputs");
    let mut gone = stacks[0].stack.clone();
    gone.id = "00000000-0000-0000-0000-000000000000".into();
    gone.name = "no-such-stack".into();
    let missing = service
        .stack_overview(gone)
        .await
        .expect_err("no such stack");
    assert!(!missing.message.is_empty());
}

/// Heat gives a parameter the template declares `hidden: true` back as `******` (its
/// `stack show`), and so does the simulator; the stack detail shows it so.
#[tokio::test]
async fn a_hidden_parameter_stays_hidden() {
    use caldera::api::heat::StackCreate;
    use serde_json::json;
    let (_sim, conn) = sim_group::connected(SimOptions::fast("demo", 1.0)).await;
    let heat = conn.heat.clone();
    let create = StackCreate {
        name: "with-secret".into(),
        template: json!({
            "heat_template_version": "2021-04-16",
            "parameters": {
                "count": {"type": "number"},
                "db_password": {"type": "string", "hidden": true},
            },
            "resources": {"nodes": {"type": "OS::Heat::ResourceGroup"}},
        }),
        parameters: [
            ("count".to_string(), json!(1)),
            ("db_password".to_string(), json!("s3cret")),
        ]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack created");
    let service = LiveService::new(conn);
    let detail = service.stack_overview(stack).await.expect("stack shown");
    let value = |k: &str| {
        detail
            .parameters
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(value("db_password").as_deref(), Some("******"));
    assert_eq!(value("count").as_deref(), Some("1"));
    assert!(!detail.template.contains("s3cret"));
    assert!(
        detail.template.contains("hidden: true"),
        "{}",
        detail.template
    );
}
