use crate::common::{fast, Api};
use reqwest::StatusCode;
use std::collections::HashSet;

#[tokio::test]
async fn servers_page_through_every_server_once() {
    let api = Api::start(fast("demo")).await;
    let mut seen = HashSet::new();
    let mut url = format!("{}/servers/detail?limit=250", api.h.nova_url());
    loop {
        let r = api.get(&url).await;
        assert_eq!(r.status, StatusCode::OK);
        for s in r.body["servers"].as_array().unwrap() {
            assert!(seen.insert(s["id"].as_str().unwrap().to_string()));
            // capi-prod's machines (Cluster API, `kube-xxxxx-...`) carry no metadata, and
            // the one Nova could not place has no address.
            if s["name"].as_str().unwrap().starts_with("kube-") {
                assert_eq!(s["metadata"], serde_json::json!({}));
                continue;
            }
            assert_eq!(s["addresses"]["private"][0]["OS-EXT-IPS:type"], "fixed");
            assert!(s["metadata"]["nodegroup"].is_string());
        }
        match r.body["servers_links"][0]["href"].as_str() {
            Some(n) => url = n.to_string(),
            None => break,
        }
    }
    let expected = api.h.with_world(|w| w.servers.len());
    assert_eq!(seen.len(), expected);
    assert!(expected > 1100);
    let r = api
        .get(&format!(
            // Magnum's worker names: `{cluster stack}-node-{index}`.
            "{}/servers/detail?name=^prod-east-[a-z0-9]%2B-node-1$",
            api.h.nova_url()
        ))
        .await;
    assert_eq!(r.body["servers"].as_array().unwrap().len(), 1);
    let r = api
        .get(&format!("{}/servers/detail?status=ERROR", api.h.nova_url()))
        .await;
    // batch-jobs' member 5 and capi-prod's unplaced gpu machine.
    let failed = r.body["servers"].as_array().unwrap();
    assert_eq!(failed.len(), 2, "{failed:?}");
    let heat = failed
        .iter()
        .find(|s| s["name"].as_str().unwrap().starts_with("batch-jobs-"))
        .expect("batch-jobs' failed member");
    assert!(
        heat["name"].as_str().unwrap().ends_with("-node-5"),
        "{heat}"
    );
    for s in failed {
        assert!(s["fault"]["message"]
            .as_str()
            .unwrap()
            .contains("No valid host"));
    }
    let capi = failed
        .iter()
        .find(|s| s["name"].as_str().unwrap().starts_with("kube-"))
        .expect("capi-prod's unplaced machine");
    assert!(capi["name"].as_str().unwrap().contains("-gpu-"), "{capi}");
    assert_eq!(capi["addresses"], serde_json::json!({}));
    let r = api
        .get(&format!("{}/servers/detail?marker=nope", api.h.nova_url()))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["badRequest"]["code"], 400);
    api.h.shutdown().await;
}

#[tokio::test]
async fn compute_microversions() {
    let api = Api::start(crate::common::fast("small")).await;
    let url = format!("{}/servers/detail?limit=1", api.h.nova_url());
    let r = api.get(&url).await;
    assert_eq!(r.headers["openstack-api-version"], "compute 2.1");
    assert!(r.body["servers"][0]["flavor"]["id"].is_string());
    let r = api
        .call(
            reqwest::Method::GET,
            &url,
            None,
            &[("OpenStack-API-Version", "compute 2.79")],
        )
        .await;
    assert_eq!(r.headers["openstack-api-version"], "compute 2.79");
    let flavor = r.body["servers"][0]["flavor"]["original_name"]
        .as_str()
        .unwrap();
    assert!(["m1.medium", "m1.large"].contains(&flavor), "{flavor}");
    let r = api
        .call(
            reqwest::Method::GET,
            &url,
            None,
            &[("OpenStack-API-Version", "compute 2.200")],
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    api.h.shutdown().await;
}
