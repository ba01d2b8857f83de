//! The detail views' calls on a real OpenStack Heat (Heat 27 on 127.0.0.1), on a shape caldera
//! did not design (the TripleO-like overcloud of `tests/fixtures/shapes/tripleo`: a
//! ResourceGroup per role, each member a role stack): `resource show` with the attributes Heat lists, its
//! metadata and its own events; `stack show` with parameters, the outputs list and the
//! template; a `hidden` parameter as Heat hides it (the simulator claims the same). Run by
//! `scripts/real-heat-suite.sh` (`--ignored`, HEAT_URL set).

use crate::support::heat_wait;
use crate::support::heat_wait::delete_settled;
use crate::support::real_heat_client;

use caldera::api::heat::StackCreate;
use caldera::service::live::LiveService;
use caldera::service::CloudService;
use heat_wait::wait_status;
use real_heat_client::{connect, fixture, unique};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn details_of_a_tripleo_like_overcloud_and_a_hidden_parameter() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let template: serde_json::Value =
        serde_yaml_ng::from_str(&fixture("tripleo/overcloud.yaml")).expect("template YAML");
    let create = StackCreate {
        name: unique("details-tripleo"),
        template,
        files: [("role.yaml".to_string(), fixture("tripleo/role.yaml"))].into(),
        parameters: serde_json::from_value(json!({"ControllerCount": 1, "ComputeCount": 2}))
            .expect("parameters"),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let overcloud = heat.create_stack(&create).await.expect("stack create");
    wait_status(&heat, &overcloud, "CREATE_COMPLETE").await;
    let service = LiveService::new(conn.clone());

    // A ResourceGroup of the operator's stack: the attributes Heat lists for one. Heat 27
    // answers `refs`, `refs_map` and `attributes` as null in `resource show` (measured; the
    // simulator answers the same) and `removed_rsrc_list` as a list.
    let group = service
        .resource_detail(overcloud.clone(), "Compute".into())
        .await
        .expect("resource show");
    assert_eq!(group.resource.resource_type, "OS::Heat::ResourceGroup");
    assert_eq!(group.resource.status.raw, "CREATE_COMPLETE");
    let mut names: Vec<&str> = group.attributes.iter().map(|(k, _)| k.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        ["attributes", "refs", "refs_map", "removed_rsrc_list"]
    );
    let removed = group
        .attributes
        .iter()
        .find(|(k, _)| k == "removed_rsrc_list");
    assert_eq!(removed.map(|(_, v)| v.as_str()), Some("[]"));
    assert!(!group.events.is_empty(), "a created resource has events");
    assert!(group.events.iter().all(|e| e.resource_name == "Compute"));
    assert!(group.events.windows(2).all(|w| w[0].time >= w[1].time));

    // The overview: what was passed, Heat's outputs list (keys only: nothing resolved) and
    // the template as written.
    let overview = service
        .stack_overview(overcloud.clone())
        .await
        .expect("stack show");
    let param = |k: &str| {
        overview
            .parameters
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(param("ComputeCount").as_deref(), Some("2"));
    let mut keys: Vec<&str> = overview.outputs.iter().map(|o| o.key.as_str()).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "ComputeIpAddresses",
            "ControllerIpAddresses",
            "HostsEntry",
            "ServerIdData"
        ]
    );
    assert!(
        overview.template.contains("OS::Heat::ResourceGroup"),
        "{}",
        overview.template
    );

    // A `hidden` parameter: Heat answers `******` for it in `stack show`.
    let hidden = StackCreate {
        name: unique("details-hidden"),
        template: json!({
            "heat_template_version": "2021-04-16",
            "parameters": {"password": {"type": "string", "hidden": true}},
            "resources": {"none": {"type": "OS::Heat::None"}},
        }),
        parameters: serde_json::from_value(json!({"password": "s3cr3t-value"}))
            .expect("parameters"),
        ..Default::default()
    };
    let secret = heat.create_stack(&hidden).await.expect("stack create");
    wait_status(&heat, &secret, "CREATE_COMPLETE").await;
    let shown = service
        .stack_overview(secret.clone())
        .await
        .expect("stack show");
    let value = shown
        .parameters
        .iter()
        .find(|(n, _)| n == "password")
        .map(|(_, v)| v.clone());
    assert_eq!(value.as_deref(), Some("******"));
    assert!(!format!("{shown:?}").contains("s3cr3t-value"));

    for s in [&overcloud, &secret] {
        delete_settled(&heat, s).await;
    }
}
