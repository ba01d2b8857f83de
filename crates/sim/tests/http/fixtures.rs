//! The simulator's Heat bodies have the same fields as bodies captured from a real Heat 27
//! (the workspace's tests/fixtures/heat/, see CAPTURED-BY-API.md there).

use crate::common::{fast, Api};
use serde_json::Value;
use std::collections::BTreeSet;

fn fixture(name: &str) -> Value {
    let p = format!(
        "{}/../../tests/fixtures/heat/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn same_keys(what: &str, real: &Value, sim: &Value) {
    assert_eq!(
        keys(real),
        keys(sim),
        "{what}: fields differ from real Heat"
    );
}

fn rels(v: &Value) -> Vec<String> {
    v["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["rel"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn bodies_have_real_heat_fields() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("fx", 3, None).await;

    let real = fixture("stack-list-limit3");
    let sim = api.get(&api.heat("/stacks?limit=3")).await.body;
    same_keys("stack list item", &real["stacks"][0], &sim["stacks"][0]);
    assert_eq!(sim["stacks"][0]["tags"], Value::Null);

    let real = fixture("stack-show");
    let sim = api.get(&api.heat(&path)).await.body;
    same_keys("stack show", &real["stack"], &sim["stack"]);
    same_keys(
        "stack show output",
        &real["stack"]["outputs"][0],
        &sim["stack"]["outputs"][0],
    );
    for k in [
        "OS::stack_id",
        "OS::project_id",
        "OS::stack_name",
        "count",
        "image",
        "removal_policies",
    ] {
        assert!(sim["stack"]["parameters"].get(k).is_some(), "{k}");
    }

    let real = fixture("resources-top");
    let sim = api.get(&api.heat(&format!("{path}/resources"))).await.body;
    same_keys(
        "resource list item",
        &real["resources"][0],
        &sim["resources"][0],
    );
    assert_eq!(rels(&real["resources"][0]), rels(&sim["resources"][0]));

    let real = fixture("resources-nested2-detail-type-value");
    let sim = api
        .get(&api.heat(&format!(
            "{path}/resources?nested_depth=2&with_detail=true&type=OS::Heat::Value"
        )))
        .await
        .body;
    same_keys(
        "nested detailed resource",
        &real["resources"][0],
        &sim["resources"][0],
    );
    same_keys(
        "Value attributes",
        &real["resources"][0]["attributes"],
        &sim["resources"][0]["attributes"],
    );

    let real = fixture("events-nested1-asc-limit6");
    let sim = api
        .get(&api.heat(&format!(
            "{path}/events?nested_depth=1&limit=6&sort_dir=asc"
        )))
        .await
        .body;
    let r = real["events"].as_array().unwrap();
    let s = sim["events"].as_array().unwrap();
    for (a, b) in r.iter().zip(s) {
        same_keys("event", a, b);
        assert_eq!(rels(a), rels(b));
    }
    // Same opening sequence as real Heat: stack started, nodes, group stack, members.
    let seq = |v: &[Value]| {
        v.iter()
            .take(4)
            .map(|e| {
                (
                    e["resource_status"].clone(),
                    e["resource_status_reason"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(seq(r), seq(s));
    // A member being created shows its nested stack's name as physical id.
    let member = &s[3];
    let name = member["physical_resource_id"].as_str().unwrap();
    assert!(
        name.starts_with("fx-nodes-")
            && name.contains(&format!("-{}-", member["resource_name"].as_str().unwrap())),
        "{name}"
    );

    let real = fixture("outputs-list");
    let sim = api.get(&api.heat(&format!("{path}/outputs"))).await.body;
    same_keys("outputs list item", &real["outputs"][0], &sim["outputs"][0]);
    let mut a: Vec<&str> = real["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["output_key"].as_str().unwrap())
        .collect();
    let mut b: Vec<&str> = sim["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["output_key"].as_str().unwrap())
        .collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);

    // Resource show: a member (template resource) and its address, the group.
    let group_path = {
        let r = api
            .get(&api.heat(&format!("{path}/resources/nodes")))
            .await
            .body;
        let href = r["resource"]["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["rel"] == "nested")
            .unwrap()["href"]
            .as_str()
            .unwrap()
            .to_string();
        href.strip_prefix(&api.h.heat_url()).unwrap().to_string()
    };
    let real = fixture("resource-show-member");
    let sim = api
        .get(&api.heat(&format!("{group_path}/resources/1")))
        .await
        .body;
    same_keys("member resource show", &real["resource"], &sim["resource"]);
    same_keys(
        "member attributes",
        &real["resource"]["attributes"],
        &sim["resource"]["attributes"],
    );
    assert_eq!(rels(&real["resource"]), rels(&sim["resource"]));
    let real = fixture("resource-show-group");
    let sim = api
        .get(&api.heat(&format!("{path}/resources/nodes")))
        .await
        .body;
    same_keys("group resource show", &real["resource"], &sim["resource"]);
    assert_eq!(
        real["resource"]["attributes"],
        sim["resource"]["attributes"]
    );
    let member_stack = sim_nested(&api, &format!("{group_path}/resources/1")).await;
    let real = fixture("resource-show-value");
    let sim = api
        .get(&api.heat(&format!("{member_stack}/resources/address")))
        .await
        .body;
    same_keys("value resource show", &real["resource"], &sim["resource"]);

    // A member's nested stack: parameters and outputs of node.yaml.
    let real = fixture("stack-show-member-nested");
    let sim = api.get(&api.heat(&member_stack)).await.body;
    same_keys("member stack show", &real["stack"], &sim["stack"]);
    same_keys(
        "member stack parameters",
        &real["stack"]["parameters"],
        &sim["stack"]["parameters"],
    );
    let okeys = |v: &Value| {
        v["stack"]["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["output_key"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(okeys(&real), okeys(&sim));

    // Event show adds resource_type and resource_properties, and has no root_stack link.
    let real = fixture("event-show-hook-paused");
    let ev = api
        .get(&api.heat(&format!("{path}/events?limit=1")))
        .await
        .body["events"][0]
        .clone();
    let self_href = ev["links"][0]["href"].as_str().unwrap().to_string();
    let sim = api.get(&self_href).await.body;
    same_keys("event show", &real["event"], &sim["event"]);
    assert_eq!(rels(&real["event"]), rels(&sim["event"]));

    let real = fixture("output-show-ips");
    let sim = api
        .get(&api.heat(&format!("{path}/outputs/ips")))
        .await
        .body;
    same_keys("output show", &real["output"], &sim["output"]);
    assert_eq!(real["output"]["description"], sim["output"]["description"]);
    api.h.shutdown().await;
}

async fn sim_nested(api: &Api, resource_path: &str) -> String {
    let r = api.get(&api.heat(resource_path)).await.body;
    let href = r["resource"]["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == "nested")
        .unwrap()["href"]
        .as_str()
        .unwrap()
        .to_string();
    href.strip_prefix(&api.h.heat_url()).unwrap().to_string()
}
