use crate::common::{fast, Api};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

#[tokio::test]
async fn name_lookup_redirects_like_heat() {
    let api = Api::start(fast("small")).await;
    let r = api.get(&api.heat("/stacks")).await;
    let stacks = r.body["stacks"].as_array().unwrap();
    assert!(
        stacks.iter().all(|s| s["parent"].is_null()),
        "nested stacks hidden by default"
    );
    // Magnum's cluster stack (`{cluster}-{short id}`), which holds the default node groups.
    let ng = stacks
        .iter()
        .find(|s| s["stack_name"].as_str().unwrap().starts_with("small-"))
        .unwrap();
    let (name, id) = (
        ng["stack_name"].as_str().unwrap(),
        ng["id"].as_str().unwrap(),
    );

    let r = api.get(&api.heat(&format!("/stacks/{name}"))).await;
    assert_eq!(r.status, StatusCode::FOUND);
    assert_eq!(
        r.headers["location"].to_str().unwrap(),
        api.heat(&format!("/stacks/{name}/{id}"))
    );
    let r = api
        .get(&api.heat(&format!("/stacks/{name}/resources?nested_depth=2")))
        .await;
    assert_eq!(r.status, StatusCode::FOUND);
    assert_eq!(
        r.headers["location"].to_str().unwrap(),
        api.heat(&format!("/stacks/{name}/{id}/resources?nested_depth=2"))
    );
    // outputs/{key} needs name/id on Heat 27.
    assert_eq!(
        api.get(&api.heat(&format!("/stacks/{name}/outputs/kube_minions_private")))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let r = api
        .get(&api.heat(&format!("/stacks/{name}/{id}/outputs/kube_minions_private")))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body["output"]["output_value"].as_array().unwrap().len(),
        3
    );
    let r = api.get(&api.heat("/stacks/nope")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        r.body["error"]["message"],
        "The Stack (nope) could not be found."
    );
    assert_eq!(r.body["code"], 404);

    // Stack show: outputs only when resolved.
    let r = api.get(&api.heat(&format!("/stacks/{name}/{id}"))).await;
    let st = &r.body["stack"];
    assert_eq!(st["stack_status"], "CREATE_COMPLETE");
    assert_eq!(
        st["stack_status_reason"],
        "Stack CREATE completed successfully"
    );
    assert_eq!(st["parameters"]["number_of_minions"], "3");
    let keys: Vec<&str> = st["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["output_key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "api_address",
            "kube_masters_private",
            "kube_masters",
            "kube_minions_private",
            "kube_minions"
        ]
    );
    let r = api
        .get(&api.heat(&format!("/stacks/{name}/{id}?resolve_outputs=false")))
        .await;
    assert!(r.body["stack"].get("outputs").is_none());
    api.h.shutdown().await;
}

#[tokio::test]
async fn stack_list_pages_cover_every_stack_once() {
    let api = Api::start(fast("small")).await;
    let all = api
        .get(&api.heat("/stacks?show_nested=true&with_count=true"))
        .await;
    let total = all.body["count"].as_u64().unwrap() as usize;
    // The cluster stack, its two group stacks and 1 + 3 member stacks: three pages of 3.
    assert_eq!(total, 7);
    let mut seen = HashSet::new();
    let mut marker = String::new();
    loop {
        let url = if marker.is_empty() {
            api.heat("/stacks?show_nested=true&limit=3")
        } else {
            api.heat(&format!("/stacks?show_nested=true&limit=3&marker={marker}"))
        };
        let page = api.get(&url).await.body["stacks"]
            .as_array()
            .unwrap()
            .clone();
        for s in &page {
            assert!(seen.insert(s["id"].as_str().unwrap().to_string()));
        }
        if page.len() < 3 {
            break;
        }
        marker = page.last().unwrap()["id"].as_str().unwrap().to_string();
    }
    assert_eq!(seen.len(), total);
    api.h.shutdown().await;
}

#[tokio::test]
async fn resource_filters_and_unknown_filter() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ng1", 4, None).await;
    let r = api
        .get(&api.heat(&format!(
            "{path}/resources?nested_depth=2&with_detail=true&type=OS::Heat::Value"
        )))
        .await;
    let res = r.body["resources"].as_array().unwrap();
    assert_eq!(res.len(), 4);
    for x in res {
        assert_eq!(x["resource_name"], "address");
        assert!(x["attributes"]["value"]
            .as_str()
            .unwrap()
            .starts_with("10."));
        assert!(x["parent_resource"].is_string());
        let rels: Vec<&str> = x["links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["rel"].as_str().unwrap())
            .collect();
        assert_eq!(rels, ["self", "stack"]);
    }
    let r = api
        .get(&api.heat(&format!("{path}/resources?nested_depth=1&name=0&name=1")))
        .await;
    assert_eq!(r.body["resources"].as_array().unwrap().len(), 2);
    let r = api.get(&api.heat(&format!("{path}/resources"))).await;
    let nodes = &r.body["resources"][0];
    assert_eq!(nodes["resource_type"], "OS::Heat::ResourceGroup");
    assert!(nodes["links"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["rel"] == "nested"));
    let r = api
        .get(&api.heat(&format!(
            "{path}/resources?nested_depth=2&status=COMPLETE&type=OS::Nova::Server"
        )))
        .await;
    assert_eq!(r.body["resources"].as_array().unwrap().len(), 4);
    let r = api
        .get(&api.heat(&format!("{path}/resources?colour=blue")))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["error"]["message"],
        "Invalid filter parameters ['colour']"
    );
    assert_eq!(r.body["title"], "Bad Request");
    // Heat 27 shows the group's list attributes as null (measured); members show outputs.
    let r = api.get(&api.heat(&format!("{path}/resources/nodes"))).await;
    assert!(r.body["resource"]["attributes"]["refs"].is_null());
    assert!(r.body["resource"].get("parent_resource").is_none());
    let group = group_stack_path(&api, &path).await;
    let r = api.get(&api.heat(&format!("{group}/resources/2"))).await;
    let attrs = &r.body["resource"]["attributes"];
    assert!(
        attrs["ip"].is_string() && attrs["server_id"].is_string(),
        "{attrs}"
    );
    assert_eq!(r.body["resource"]["parent_resource"], "nodes");
    api.h.shutdown().await;
}

#[tokio::test]
async fn nested_events_and_paging() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ng2", 5, None).await;
    let own = api.get(&api.heat(&format!("{path}/events"))).await.body["events"]
        .as_array()
        .unwrap()
        .clone();
    // Default order is newest first; the stack's own events carry its name.
    assert_eq!(own[0]["resource_name"], "ng2");
    assert_eq!(own[0]["resource_status"], "CREATE_COMPLETE");
    assert_eq!(
        own[0]["resource_status_reason"],
        "Stack CREATE completed successfully"
    );
    assert!(own.iter().all(|e| e["links"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["rel"] != "root_stack")));

    let nested = api
        .all_events(&path, "&nested_depth=2&sort_dir=asc", 7)
        .await;
    let ids: HashSet<&str> = nested.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), nested.len(), "each event exactly once");
    let unpaged = api
        .get(&api.heat(&format!("{path}/events?nested_depth=2")))
        .await
        .body["events"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(unpaged, nested.len());
    // 5 members x (member resource 2, stack 2, server 2, address 2) + group 2 + nodes 2 + stack 2.
    assert_eq!(nested.len(), 5 * 8 + 6);
    assert_eq!(nested[0]["resource_status"], "CREATE_IN_PROGRESS");
    let root = api.heat(&path);
    for e in &nested {
        let links = e["links"].as_array().unwrap();
        assert_eq!(
            links.iter().find(|l| l["rel"] == "root_stack").unwrap()["href"],
            root.as_str()
        );
    }
    let server_evs: Vec<&Value> = nested
        .iter()
        .filter(|e| e["resource_name"] == "server")
        .collect();
    assert_eq!(server_evs.len(), 10);
    assert!(server_evs[0]["links"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["rel"] == "stack" && l["href"] != root.as_str()));

    let r = api.get(&api.heat(&format!("{path}/events?nested_depth=2&resource_status=IN_PROGRESS&resource_type=OS::Nova::Server"))).await;
    assert_eq!(r.body["events"].as_array().unwrap().len(), 5);
    let r = api
        .get(&api.heat(&format!("{path}/resources/nodes/events")))
        .await;
    assert_eq!(r.body["events"].as_array().unwrap().len(), 2);
    api.h.shutdown().await;
}

#[tokio::test]
async fn purged_marker_answers_from_the_start() {
    let mut opts = fast("empty");
    opts.max_events_per_stack = 10;
    let api = Api::start(opts).await;
    let path = api.create_group("ng3", 2, None).await;
    let first = api
        .get(&api.heat(&format!("{path}/events?sort_dir=asc&limit=1")))
        .await
        .body["events"][0]
        .clone();
    let marker = first["id"].as_str().unwrap().to_string();
    for i in 0..6 {
        let r = api
            .call(
                Method::PATCH,
                &api.heat(&path),
                Some(json!({"parameters": {"image": format!("img-{i}")}})),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
        api.wait_status(&path, "UPDATE_COMPLETE", 20).await;
    }
    let all = api
        .get(&api.heat(&format!("{path}/events?sort_dir=asc")))
        .await
        .body["events"]
        .as_array()
        .unwrap()
        .clone();
    assert!(all.len() <= 10);
    assert!(all.iter().all(|e| e["id"] != first["id"]), "oldest purged");
    let after = api
        .get(&api.heat(&format!("{path}/events?sort_dir=asc&marker={marker}")))
        .await
        .body["events"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(after, all, "a purged marker is ignored");
    api.h.shutdown().await;
}

#[tokio::test]
async fn patch_merges_parameters_and_put_replaces() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ng4", 3, None).await;
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({"parameters": {"image": "img-v2"}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    // A second update while the first runs supersedes it (Heat 27 convergence): 202.
    let r2 = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({"parameters": {"count": 4}})),
            &[],
        )
        .await;
    assert_eq!(r2.status, StatusCode::ACCEPTED);
    let st = api.wait_status(&path, "UPDATE_COMPLETE", 20).await;
    assert_eq!(st["stack"]["parameters"]["image"], "img-v2");
    assert_eq!(st["stack"]["parameters"]["count"], "4");
    let out = api
        .get(&api.heat(&format!("{path}/outputs/ips")))
        .await
        .body;
    assert_eq!(out["output"]["output_value"].as_array().unwrap().len(), 4);
    let servers = api
        .get(&format!("{}/servers/detail", api.h.nova_url()))
        .await
        .body;
    for s in servers["servers"].as_array().unwrap() {
        assert_eq!(s["image"]["id"], "img-v2", "{}", s["name"]);
    }
    // Heat 27 drops unknown parameters (202) and refuses a bad count synchronously.
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({"parameters": {"nope": 1}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let st = api.wait_status(&path, "UPDATE_COMPLETE", 20).await;
    assert!(st["stack"]["parameters"].get("nope").is_none());
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({"parameters": {"count": "x"}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["error"]["type"], "StackValidationFailed");
    assert_eq!(
        r.body["error"]["message"],
        "Parameter 'count' is invalid: could not convert string to float: 'x'"
    );
    let r = api
        .call(
            Method::PUT,
            &api.heat(&path),
            Some(json!({"parameters": {"count": 2}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "PUT needs a template");
    let r = api
        .call(
            Method::PUT,
            &api.heat(&path),
            Some(json!({"template": {}, "parameters": {"count": 2}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    api.wait_status(&path, "UPDATE_COMPLETE", 20).await;
    let st = api.get(&api.heat(&path)).await.body;
    assert_eq!(st["stack"]["parameters"]["count"], "2");
    assert_eq!(
        st["stack"]["outputs"][1]["output_value"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    api.h.shutdown().await;
}

const PAUSED: &str = "UPDATE paused until Hook pre-update is cleared";

async fn group_stack_path(api: &Api, path: &str) -> String {
    let r = api.get(&api.heat(&format!("{path}/resources/nodes"))).await;
    let nested = r.body["resource"]["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == "nested")
        .unwrap()["href"]
        .as_str()
        .unwrap()
        .to_string();
    nested.strip_prefix(&api.h.heat_url()).unwrap().to_string()
}

#[tokio::test]
async fn hooks_pause_members_until_cleared() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ng5", 3, None).await;
    let env =
        json!({"resource_registry": {"resources": {"nodes": {"*": {"hooks": ["pre-update"]}}}}});
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({"parameters": {"image": "img-v2"}, "environment": env})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let group = group_stack_path(&api, &path).await;
    // Members reach their hooks one leaf delay apart.
    let evs = api.wait_events(&group, PAUSED, 3).await;
    let pauses: Vec<&Value> = evs
        .iter()
        .filter(|e| e["resource_status_reason"] == "UPDATE paused until Hook pre-update is cleared")
        .collect();
    assert_eq!(pauses.len(), 3);
    assert_eq!(
        pauses[0]["resource_status"], "CREATE_COMPLETE",
        "state before the update"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    api.wait_status(&path, "UPDATE_IN_PROGRESS", 1).await;

    // Clearing a hook on a member that is not paused is refused.
    let r = api.unset_hook(&group, "1", "pre-create").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = api.unset_hook(&group, "1", "pre-update").await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let evs = api
        .get(&api.heat(&format!("{group}/resources/1/events?sort_dir=asc")))
        .await
        .body["events"]
        .as_array()
        .unwrap()
        .clone();
    let reasons: Vec<&str> = evs
        .iter()
        .map(|e| e["resource_status_reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons.contains(&"Hook pre-update is cleared"),
        "{reasons:?}"
    );
    // Member 1 finishes its update while 0 and 2 still wait.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = api.get(&api.heat(&format!("{group}/resources/1"))).await;
        if r.body["resource"]["resource_status"] == "UPDATE_COMPLETE" {
            break;
        }
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = api.get(&api.heat(&format!("{group}/resources/0"))).await;
    assert_eq!(r.body["resource"]["resource_status"], "CREATE_COMPLETE");
    api.wait_status(&path, "UPDATE_IN_PROGRESS", 1).await;
    for m in ["0", "2"] {
        let r = api.unset_hook(&group, m, "pre-update").await;
        assert_eq!(r.status, StatusCode::OK);
    }
    let st = api.wait_status(&path, "UPDATE_COMPLETE", 20).await;
    assert_eq!(
        st["stack"]["stack_status_reason"],
        "Stack UPDATE completed successfully"
    );
    api.h.shutdown().await;
}

#[tokio::test]
async fn cancel_update_rolls_back_and_mark_unhealthy() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ng6", 2, None).await;
    let env =
        json!({"resource_registry": {"resources": {"nodes": {"*": {"hooks": "pre-update"}}}}});
    api.call(
        Method::PATCH,
        &api.heat(&path),
        Some(json!({"parameters": {"image": "img-v2"}, "environment": env})),
        &[],
    )
    .await;
    let group = group_stack_path(&api, &path).await;
    api.wait_events(&group, PAUSED, 2).await;
    let r = api.stack_action(&path, "cancel_update").await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // As on Heat 27, the rollback honours the hooks too: both members pause again.
    api.wait_events(&group, PAUSED, 4).await;
    api.wait_status(&path, "ROLLBACK_IN_PROGRESS", 1).await;
    for m in ["0", "1"] {
        let r = api.unset_hook(&group, m, "pre-update").await;
        assert_eq!(r.status, StatusCode::OK);
    }
    let st = api.wait_status(&path, "ROLLBACK_COMPLETE", 20).await;
    assert_eq!(st["stack"]["parameters"]["image"], "img-v1");
    let r = api.stack_action(&path, "cancel_update").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    let r = api
        .call(
            Method::PATCH,
            &api.heat(&format!("{group}/resources/0")),
            Some(json!({"mark_unhealthy": true, "resource_status_reason": "disk gone"})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = api.get(&api.heat(&format!("{group}/resources/0"))).await;
    assert_eq!(r.body["resource"]["resource_status"], "CHECK_FAILED");
    assert_eq!(r.body["resource"]["resource_status_reason"], "disk gone");
    // The next update replaces the unhealthy member, and only it.
    let before = api
        .get(&api.heat(&format!("{group}/resources/1")))
        .await
        .body["resource"]["updated_time"]
        .clone();
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({"environment": {"resource_registry": {"resources": {"nodes": {}}}}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    api.wait_status(&path, "UPDATE_COMPLETE", 20).await;
    let r = api.get(&api.heat(&format!("{group}/resources/0"))).await;
    assert_eq!(r.body["resource"]["resource_status"], "UPDATE_COMPLETE");
    let r = api.get(&api.heat(&format!("{group}/resources/1"))).await;
    assert_eq!(r.body["resource"]["updated_time"], before);
    api.h.shutdown().await;
}

#[tokio::test]
async fn output_resolution_costs_time_per_member() {
    let mut opts = fast("empty");
    opts.output_cost_per_member = Duration::from_millis(20);
    let api = Api::start(opts).await;
    let path = api.create_group("ng7", 10, None).await;
    let t = std::time::Instant::now();
    api.get(&api.heat(&path)).await;
    let slow = t.elapsed();
    let t = std::time::Instant::now();
    api.get(&api.heat(&format!("{path}?resolve_outputs=false")))
        .await;
    let fast_ = t.elapsed();
    assert!(slow >= Duration::from_millis(200), "{slow:?}");
    assert!(fast_ < Duration::from_millis(100), "{fast_:?}");
    // The sleep does not hold the world: other requests go through meanwhile.
    let show_url = api.heat(&path);
    let (a, b) = tokio::join!(api.get(&show_url), async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let t = std::time::Instant::now();
        api.get(&api.heat("/stacks")).await;
        t.elapsed()
    });
    assert_eq!(a.status, StatusCode::OK);
    assert!(b < Duration::from_millis(100), "{b:?}");
    api.h.shutdown().await;
}

async fn wait_resource(api: &Api, url: &str, want: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = api.get(url).await;
        if r.body["resource"]["resource_status"] == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{url}: {:?}",
            r.body["resource"]["resource_status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn rollback_restores_updated_members_and_cancel_without_rollback_fails() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ng8", 3, None).await;
    let group = group_stack_path(&api, &path).await;
    let f = api.h.faults();
    f.stick_node("ng8", 2);
    api.call(
        Method::PATCH,
        &api.heat(&path),
        Some(json!({"parameters": {"image": "img-v2"}})),
        &[],
    )
    .await;
    for m in ["0", "1"] {
        wait_resource(
            &api,
            &api.heat(&format!("{group}/resources/{m}")),
            "UPDATE_COMPLETE",
        )
        .await;
    }
    f.heal_nodes("ng8");
    let r = api.stack_action(&path, "cancel_update").await;
    assert_eq!(r.status, StatusCode::OK);
    let st = api.wait_status(&path, "ROLLBACK_COMPLETE", 20).await;
    assert_eq!(
        st["stack"]["stack_status_reason"],
        "Stack ROLLBACK completed successfully"
    );
    let servers = api
        .get(&format!("{}/servers/detail", api.h.nova_url()))
        .await
        .body;
    for s in servers["servers"].as_array().unwrap() {
        assert_eq!(s["image"]["id"], "img-v1", "{}", s["name"]);
    }
    let evs = api.all_events(&path, "&sort_dir=asc", 100).await;
    let reasons: Vec<&str> = evs
        .iter()
        .filter(|e| e["resource_name"] == "ng8")
        .map(|e| e["resource_status_reason"].as_str().unwrap())
        .collect();
    assert!(
        // The order Heat 27 writes them (measured).
        reasons.ends_with(&[
            "Stack UPDATE started",
            "Stack ROLLBACK started",
            "Resource UPDATE failed: resources.nodes: Stack UPDATE cancelled",
            "Stack ROLLBACK completed successfully"
        ]),
        "{reasons:?}"
    );

    f.stick_node("ng8", 1);
    api.call(
        Method::PATCH,
        &api.heat(&path),
        Some(json!({"parameters": {"image": "img-v3"}})),
        &[],
    )
    .await;
    wait_resource(
        &api,
        &api.heat(&format!("{group}/resources/0")),
        "UPDATE_COMPLETE",
    )
    .await;
    let r = api.stack_action(&path, "cancel_without_rollback").await;
    assert_eq!(r.status, StatusCode::OK);
    let st = api.wait_status(&path, "UPDATE_FAILED", 5).await;
    assert_eq!(st["stack"]["stack_status_reason"], "Stack UPDATE cancelled");
    let r = api.get(&api.heat(&format!("{group}/resources/1"))).await;
    assert_eq!(r.body["resource"]["resource_status"], "UPDATE_FAILED");
    api.h.shutdown().await;
}

/// Error answers as measured on a real Heat 27 (texts, types, statuses).
#[tokio::test]
async fn error_bodies_match_heat_27() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ngx", 2, None).await;
    let group = group_stack_path(&api, &path).await;
    let (gname, gid) = {
        let mut it = group.trim_start_matches("/stacks/").split('/');
        (
            it.next().unwrap().to_string(),
            it.next().unwrap().to_string(),
        )
    };
    let err = |r: &crate::common::Resp| {
        (
            r.status.as_u16(),
            r.body["error"]["type"].as_str().unwrap_or("").to_string(),
            r.body["error"]["message"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        )
    };
    let post = |url: String, body: Value| {
        let api = &api;
        async move { api.call(Method::POST, &url, Some(body), &[]).await }
    };
    let r = post(
        api.heat(&format!("{group}/resources/1/signal")),
        json!({"unset_hook": "pre-create"}),
    )
    .await;
    let member_id = api
        .get(&api.heat(&format!("{group}/resources/1")))
        .await
        .body["resource"]["physical_resource_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        err(&r),
        (400, "InvalidBreakPointHook".into(), format!("The \"pre-create\" hook is not defined on TemplateResource \"1\" [{member_id}] Stack \"{gname}\" [{gid}]"))
    );
    let r = post(
        api.heat(&format!("{group}/resources/1/signal")),
        json!({"unset_hook": "pre-foo"}),
    )
    .await;
    assert!(err(&r)
        .2
        .starts_with("Invalid hook type \"pre-foo\" for TemplateResource \"1\""));
    let r = post(
        api.heat(&format!("{group}/resources/1/signal")),
        json!({"foo": "bar"}),
    )
    .await;
    assert_eq!(
        err(&r),
        (
            400,
            "ResourceActionNotSupported".into(),
            "signal is not supported for resource.".into()
        )
    );
    let r = post(
        api.heat(&format!("{path}/actions")),
        json!({"frobnicate": null}),
    )
    .await;
    assert_eq!(
        err(&r),
        (
            400,
            "HTTPBadRequest".into(),
            "Invalid action frobnicate specified".into()
        )
    );
    let r = post(
        api.heat(&format!("{path}/actions")),
        json!({"check": null, "suspend": null}),
    )
    .await;
    assert_eq!(err(&r).2, "Multiple actions specified");
    let r = api
        .get(&api.heat(&format!("{path}/events?sort_dir=up")))
        .await;
    assert_eq!(
        (r.status.as_u16(), &r.body["error"]["type"]),
        (400, &json!("ValueError"))
    );
    assert!(r.body["error"].get("message").is_none());
    let r = api
        .get(&api.heat("/stacks/ngx/00000000-0000-0000-0000-000000000000"))
        .await;
    assert_eq!(
        err(&r),
        (
            404,
            "EntityNotFound".into(),
            "The Stack (ngx) could not be found.".into()
        )
    );
    let r = api.get(&api.heat("/stacks/ngx/outputs")).await;
    assert_eq!(
        err(&r),
        (
            404,
            "EntityNotFound".into(),
            "The Stack (ngx) could not be found.".into()
        )
    );
    let r = api.get(&api.heat(&format!("{path}/outputs/nope"))).await;
    assert_eq!(
        err(&r),
        (
            404,
            "NotFound".into(),
            "Specified output key {} not found.".into()
        )
    );
    let r = api.get(&api.heat(&format!("{path}/resources/nope"))).await;
    assert_eq!(
        err(&r),
        (
            404,
            "ResourceNotFound".into(),
            "The Resource (nope) could not be found in Stack ngx.".into()
        )
    );
    let r = api
        .get(&api.heat(&format!("{path}/resources/nope/events")))
        .await;
    assert_eq!(
        err(&r),
        (
            404,
            "HTTPNotFound".into(),
            "No events found for resource nope".into()
        )
    );
    let r = api
        .get(&api.heat(&format!("{path}/resources?nested_depth=x")))
        .await;
    assert_eq!(err(&r).2, "Only integer is acceptable by 'nested_depth'.");
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&format!("{path}/resources/nodes")),
            Some(json!({"mark_unhealthy": "maybe"})),
            &[],
        )
        .await;
    assert_eq!(
        err(&r).2,
        "Unrecognized value \"maybe\" for \"mark_unhealthy\", acceptable values are: true, false."
    );
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&format!("{path}/resources/nodes")),
            Some(json!({"foo": 1})),
            &[],
        )
        .await;
    assert_eq!(err(&r).2, "Invalid keys in resource mark unhealthy {'foo'}");
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&format!("{path}/resources/nodes")),
            Some(json!({})),
            &[],
        )
        .await;
    assert_eq!(
        err(&r).2,
        "Missing mandatory (mark_unhealthy) key from mark unhealthy request"
    );
    let r = post(
        api.heat("/stacks"),
        json!({"stack_name": "ngx", "template": {}}),
    )
    .await;
    assert_eq!(
        err(&r),
        (
            409,
            "StackExists".into(),
            "The Stack (ngx) already exists.".into()
        )
    );
    // Name-only lookups redirect whatever the method.
    let r = api
        .call(
            Method::PATCH,
            &api.heat("/stacks/ngx"),
            Some(json!({"parameters": {}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::FOUND);
    assert_eq!(r.headers["location"].to_str().unwrap(), api.heat(&path));
    assert!(r.body.as_str().unwrap().starts_with("302 Found"));
    api.h.shutdown().await;
}

/// Heat 27 starts the members of a traversal one per second, in no particular order.
#[tokio::test]
async fn members_start_one_leaf_delay_apart() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ngl", 6, None).await;
    let group = group_stack_path(&api, &path).await;
    let evs = api
        .all_events(
            &group,
            "&sort_dir=asc&resource_status=IN_PROGRESS&resource_action=CREATE",
            100,
        )
        .await;
    let starts: Vec<(&str, &str)> = evs
        .iter()
        .filter(|e| e["resource_name"].as_str().unwrap().parse::<u32>().is_ok())
        .map(|e| {
            (
                e["event_time"].as_str().unwrap(),
                e["resource_name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(starts.len(), 6);
    let times: std::collections::BTreeSet<&str> = starts.iter().map(|s| s.0).collect();
    assert_eq!(times.len(), 6, "one start per simulated second: {starts:?}");
    api.h.shutdown().await;
}

/// Listing details measured on Heat 27 (tests/fixtures/heat/README.md).
#[tokio::test]
async fn listing_details_match_heat_27() {
    let api = Api::start(fast("empty")).await;
    // caldera's test template parameter, as with the real Heat.
    let body = json!({"stack_name": "ngd", "template": {}, "parameters": {"count": 3, "node_fail_index": 2}});
    let r = api
        .call(Method::POST, &api.heat("/stacks"), Some(body), &[])
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let path = api.stack_path("ngd").await;
    api.wait_status(&path, "CREATE_FAILED", 20).await;
    let st = api
        .get(&api.heat(&format!("{path}?resolve_outputs=false")))
        .await
        .body;
    assert_eq!(
        st["stack"]["stack_status_reason"],
        "Resource CREATE failed: ValueError: resources.nodes.resources[2].resources.server: Test Resource failed server"
    );
    // Events keep action and status apart.
    let q = |s: &str| api.heat(&format!("{path}/events?nested_depth=2&{s}"));
    assert!(!api.get(&q("resource_status=FAILED")).await.body["events"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(
        api.get(&q("resource_status=CREATE_FAILED")).await.body["events"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Resources and stacks accept both forms.
    let r = api
        .get(&api.heat(&format!(
            "{path}/resources?nested_depth=3&status=CREATE_FAILED"
        )))
        .await;
    assert_eq!(r.body["resources"].as_array().unwrap().len(), 3);
    for k in [
        "status=FAILED",
        "status=CREATE_FAILED",
        "stack_status=CREATE_FAILED",
    ] {
        let r = api.get(&api.heat(&format!("/stacks?{k}"))).await;
        assert_eq!(r.body["stacks"].as_array().unwrap().len(), 1, "{k}");
    }
    let r = api.get(&api.heat("/stacks")).await;
    assert_eq!(r.body["stacks"][0]["description"], "");
    // A member that failed before its address existed is null in `ips`.
    let r = api.get(&api.heat(&format!("{path}/outputs/ips"))).await;
    let ips = r.body["output"]["output_value"].as_array().unwrap();
    assert!(ips[2].is_null() && ips[0].is_string(), "{ips:?}");
    // JSON clients get webob's JSON status pages.
    let r = api
        .call(
            Method::GET,
            &api.heat("/stacks/ngd"),
            None,
            &[("Accept", "application/json")],
        )
        .await;
    assert_eq!(r.body["code"], "302 Found");
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({})),
            &[("Accept", "application/json")],
        )
        .await;
    assert_eq!(r.body["code"], "202 Accepted");
    api.h.shutdown().await;
}

#[tokio::test]
async fn delete_soft_deletes_like_heat() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ngdel", 3, None).await;
    let r = api.call(Method::DELETE, &api.heat(&path), None, &[]).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let st = api.wait_status(&path, "DELETE_COMPLETE", 20).await;
    assert_eq!(
        st["stack"]["stack_status_reason"],
        "Stack DELETE completed successfully"
    );
    assert!(st["stack"]["deletion_time"].is_string());
    assert_eq!(
        api.get(&api.heat("/stacks/ngdel")).await.status,
        StatusCode::NOT_FOUND
    );
    let list = api.get(&api.heat("/stacks")).await.body;
    assert!(list["stacks"].as_array().unwrap().is_empty());
    let list = api.get(&api.heat("/stacks?show_deleted=True")).await.body;
    assert_eq!(list["stacks"].as_array().unwrap().len(), 1);
    let servers = api
        .get(&format!("{}/servers/detail", api.h.nova_url()))
        .await
        .body;
    assert!(servers["servers"].as_array().unwrap().is_empty());
    let r = api
        .call(Method::PATCH, &api.heat(&path), Some(json!({})), &[])
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    api.h.shutdown().await;
}

/// After a failed create, fixing the cause and PATCHing creates the failed member again.
#[tokio::test]
async fn failed_member_is_created_again_by_the_next_update() {
    let api = Api::start(fast("empty")).await;
    let body = json!({"stack_name": "ngr", "template": {}, "parameters": {"count": 3, "node_fail_index": 1}});
    api.call(Method::POST, &api.heat("/stacks"), Some(body), &[])
        .await;
    let path = api.stack_path("ngr").await;
    api.wait_status(&path, "CREATE_FAILED", 20).await;
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({"parameters": {"node_fail_index": -1}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    api.wait_status(&path, "UPDATE_COMPLETE", 20).await;
    let group = group_stack_path(&api, &path).await;
    let r = api.get(&api.heat(&format!("{group}/resources/1"))).await;
    assert_eq!(r.body["resource"]["resource_status"], "CREATE_COMPLETE");
    let ips = api
        .get(&api.heat(&format!("{path}/outputs/ips")))
        .await
        .body;
    assert!(
        ips["output"]["output_value"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.is_string()),
        "{ips}"
    );
    api.h.shutdown().await;
}

/// `stack check` as Heat's engine runs it: every resource of the tree is checked, nested
/// stacks depth first (their own events), servers against Nova's `ACTIVE`; values cannot
/// check themselves (one `CHECK_COMPLETE` "not supported"); a failed server fails its
/// member, the group and the stack, and what depends on it is not checked.
#[tokio::test]
async fn stack_check_checks_every_resource_like_heat() {
    let api = Api::start(fast("empty")).await;
    let body = json!({"stack_name": "ngc", "template": {}, "parameters": {"count": 3, "node_fail_index": 2}});
    api.call(Method::POST, &api.heat("/stacks"), Some(body), &[])
        .await;
    let path = api.stack_path("ngc").await;
    api.wait_status(&path, "CREATE_FAILED", 20).await;
    let group = group_stack_path(&api, &path).await;
    // The other members finish their creates after the group failed.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = api.get(&api.heat(&format!("{group}/resources"))).await;
        let members = r.body["resources"].as_array().unwrap().clone();
        if members
            .iter()
            .all(|m| m["resource_status"] != "CREATE_IN_PROGRESS")
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{members:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = api.all_events(&path, "&nested_depth=2", 500).await.len();
    let r = api.stack_action(&path, "check").await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let evs = api
        .all_events(&path, "&nested_depth=2&sort_dir=asc", 500)
        .await;
    let check: Vec<(String, String, String)> = evs
        .iter()
        .filter(|e| e["resource_status"].as_str().unwrap().starts_with("CHECK_"))
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (
                s("resource_name"),
                s("resource_status"),
                s("resource_status_reason"),
            )
        })
        .collect();
    assert!(evs.len() > before);
    let of = |res: &str| -> Vec<(String, String)> {
        check
            .iter()
            .filter(|c| c.0 == res)
            .map(|c| (c.1.clone(), c.2.clone()))
            .collect()
    };
    let pair = |s: &str, r: &str| (s.to_string(), r.to_string());
    // Healthy members: their server checked, their address value not supported.
    let servers = of("server");
    let ok = pair("CHECK_COMPLETE", "state changed");
    assert_eq!(
        servers.iter().filter(|s| **s == ok).count(),
        2,
        "{servers:?}"
    );
    assert_eq!(
        servers
            .iter()
            .filter(|s| s.0 == "CHECK_IN_PROGRESS")
            .count(),
        3,
        "{servers:?}"
    );
    let failed = pair(
        "CHECK_FAILED",
        "Error: resources.server: 'status': expected 'ACTIVE', got 'ERROR'",
    );
    assert!(servers.contains(&failed), "{servers:?}");
    // The failed member's address depends on its server: not checked.
    let addresses = of("address");
    assert_eq!(
        addresses,
        vec![pair("CHECK_COMPLETE", "CHECK not supported for OS::Heat::Value"); 2]
    );
    for m in ["0", "1"] {
        let ev = of(m);
        assert_eq!(ev.first().map(|e| e.0.as_str()), Some("CHECK_IN_PROGRESS"));
        assert_eq!(ev.last(), Some(&ok), "{m}: {ev:?}");
    }
    let member = of("2");
    let last = member.last().expect("member 2 events");
    assert_eq!(last.0, "CHECK_FAILED");
    assert!(
        last.1
            .contains("resources[2].resources.server: 'status': expected 'ACTIVE', got 'ERROR'"),
        "{last:?}"
    );
    let nodes = of("nodes");
    assert_eq!(nodes.last().map(|e| e.0.as_str()), Some("CHECK_FAILED"));
    // Member stacks report their own CHECK, before their resource in the group completes.
    let pos = |stack_res: &str, state: &str| {
        check
            .iter()
            .position(|c| c.0 == stack_res && c.1 == state)
            .unwrap_or_else(|| panic!("{stack_res} {state}: {check:?}"))
    };
    assert!(pos("server", "CHECK_IN_PROGRESS") > pos("0", "CHECK_IN_PROGRESS"));
    // The stack's own events: started, failed, then the "not fully supported" note.
    let stack_events: Vec<(String, String)> = check
        .iter()
        .filter(|c| c.0 == "ngc")
        .map(|c| (c.1.clone(), c.2.clone()))
        .collect();
    assert_eq!(
        stack_events[0],
        pair("CHECK_IN_PROGRESS", "Stack CHECK started")
    );
    assert_eq!(stack_events[1].0, "CHECK_FAILED");
    assert!(stack_events[1].1.starts_with("Resource CHECK failed: "));
    assert!(
        stack_events
            .last()
            .unwrap()
            .1
            .ends_with(". 'CHECK' not fully supported (see resources)"),
        "{stack_events:?}"
    );
    let st = api.wait_status(&path, "CHECK_FAILED", 5).await;
    assert!(st["stack"]["stack_status_reason"]
        .as_str()
        .unwrap()
        .contains("not fully supported"));
    api.h.shutdown().await;
}
