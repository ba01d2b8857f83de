use crate::common::{fast, Api};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

const V: (&str, &str) = ("OpenStack-API-Version", "container-infra 1.12");

#[tokio::test]
async fn microversion_headers_and_406() {
    let api = Api::start(fast("small")).await;
    let r = api
        .call(
            Method::GET,
            &api.magnum("/clusters"),
            None,
            &[("OpenStack-API-Version", "container-infra 1.9")],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    // Magnum answers with the first of its service strings (a real Magnum 22 does), and
    // takes `container-infra` in requests.
    assert_eq!(
        r.headers["openstack-api-minimum-version"],
        "container-infrastructure-management 1.1"
    );
    assert_eq!(
        r.headers["openstack-api-maximum-version"],
        "container-infrastructure-management 1.14"
    );
    assert_eq!(
        r.headers["openstack-api-version"],
        "container-infrastructure-management 1.9"
    );
    let r = api
        .call(
            Method::GET,
            &api.magnum("/clusters"),
            None,
            &[("OpenStack-API-Version", "container-infra 1.99")],
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(r.body["errors"][0]["status"], 406);
    assert!(r.body["errors"][0]["detail"]
        .as_str()
        .unwrap()
        .contains("[1.1, 1.14]"));
    let r = api
        .call(
            Method::GET,
            &api.magnum("/clusters"),
            None,
            &[("OpenStack-API-Version", "container-infra latest")],
        )
        .await;
    assert_eq!(
        r.headers["openstack-api-version"],
        "container-infrastructure-management 1.14"
    );
    // Node groups need 1.9.
    let r = api.get(&api.magnum("/clusters/small/nodegroups")).await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    let r = api
        .http
        .get(format!("{}/container-infra/", api.h.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = api.mget("/clusters/nope").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        r.body["errors"][0]["detail"],
        "Cluster nope could not be found."
    );
    api.h.shutdown().await;
}

#[tokio::test]
async fn cluster_paging_and_detail() {
    let api = Api::start(fast("demo")).await;
    let mut seen = HashSet::new();
    let mut url = api.magnum("/clusters?limit=1");
    loop {
        let r = api.call(Method::GET, &url, None, &[V]).await;
        let list = r.body["clusters"].as_array().unwrap();
        for c in list {
            assert!(seen.insert(c["uuid"].as_str().unwrap().to_string()));
            assert!(
                c.get("status_reason").is_none(),
                "list has no status_reason"
            );
        }
        match r.body["next"].as_str() {
            Some(n) => url = n.to_string(),
            None => break,
        }
    }
    // prod-east, dev-small, batch-jobs, staging and capi-prod (on Cluster API).
    assert_eq!(seen.len(), 5);
    let r = api.mget("/clusters/prod-east").await;
    let c = &r.body;
    assert_eq!(c["status"], "UPDATE_IN_PROGRESS");
    // Requested counts: 1000 + 40 + 60 (az3 is scaling out from 20) + 4.
    assert_eq!(c["node_count"], 1104);
    assert_eq!(c["master_count"], 3);
    assert_eq!(c["master_addresses"].as_array().unwrap().len(), 3);
    assert!(c["api_address"].as_str().unwrap().starts_with("https://"));
    let r = api.mget("/clusters/batch-jobs").await;
    assert_eq!(r.body["status"], "CREATE_FAILED");
    assert_eq!(r.body["health_status"], "UNHEALTHY");
    assert!(r.body["status_reason"]
        .as_str()
        .unwrap()
        .contains("No valid host was found"));
    let r = api.mget("/clusters/prod-east/nodegroups?role=worker").await;
    let ngs = r.body["nodegroups"].as_array().unwrap();
    assert_eq!(ngs.len(), 4);
    let r = api.mget("/clusters/prod-east/nodegroups/workers-az2").await;
    assert_eq!(r.body["labels"]["availability_zone"], "az-2");
    assert_eq!(r.body["node_addresses"].as_array().unwrap().len(), 40);
    assert_eq!(r.body["max_node_count"], 200);
    api.h.shutdown().await;
}

#[tokio::test]
async fn resize_removes_named_nodes_and_never_reuses_names() {
    let api = Api::start(fast("small")).await;
    let ng = api
        .mget("/clusters/small/nodegroups/default-worker")
        .await
        .body;
    let stack_id = ng["stack_id"].as_str().unwrap().to_string();
    let servers = api
        .get(&format!("{}/servers/detail", api.h.nova_url()))
        .await
        .body["servers"]
        .as_array()
        .unwrap()
        .clone();
    // Magnum names workers `{cluster stack}-node-{index}` (kubecluster.yaml).
    let victim = servers
        .iter()
        .find(|s| s["name"].as_str().unwrap().ends_with("-node-1"))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = api
        .call(Method::POST, &api.magnum("/clusters/small/actions/resize"), Some(json!({"node_count": 3, "nodes_to_remove": [victim], "nodegroup": "default-worker"})), &[V])
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    let r = api.mget("/clusters/small").await;
    assert_eq!(r.body["status"], "UPDATE_IN_PROGRESS");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = api.mget("/clusters/small/nodegroups/default-worker").await;
        if r.body["status"] == "UPDATE_COMPLETE" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            r.body["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(members(&api, &stack_id).await, vec![0, 2, 3]);
    // Scale down and up again: "1" stays retired.
    let r = api
        .call(
            Method::POST,
            &api.magnum("/clusters/small/actions/resize"),
            Some(json!({"node_count": 5})),
            &[V],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let r = api
        .call(
            Method::POST,
            &api.magnum("/clusters/small/actions/resize"),
            Some(json!({"node_count": 6})),
            &[V],
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "busy node group");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while api
        .mget("/clusters/small/nodegroups/default-worker")
        .await
        .body["status"]
        != "UPDATE_COMPLETE"
    {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(members(&api, &stack_id).await, vec![0, 2, 3, 4, 5]);
    let r = api.mget("/clusters/small/nodegroups/default-worker").await;
    assert_eq!(r.body["node_count"], 5);
    assert_eq!(r.body["node_addresses"].as_array().unwrap().len(), 5);
    let r = api
        .call(
            Method::POST,
            &api.magnum("/clusters/small/actions/resize"),
            Some(json!({"node_count": 50})),
            &[V],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "above max_node_count");
    api.h.shutdown().await;
}

#[tokio::test]
async fn upgrade_rolls_in_batches() {
    let api = Api::start(fast("small")).await;
    let tpl = api.mget("/clustertemplates").await.body["clustertemplates"][1]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = api
        .call(
            Method::POST,
            &api.magnum("/clusters/small/actions/upgrade"),
            Some(json!({"cluster_template": tpl, "max_batch_size": 1})),
            &[V],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    let ng = api
        .mget("/clusters/small/nodegroups/default-worker")
        .await
        .body;
    let path = api.stack_path(ng["stack_id"].as_str().unwrap()).await;
    api.wait_status(&path, "UPDATE_COMPLETE", 30).await;
    let evs = api
        .all_events(
            &path,
            "&nested_depth=2&sort_dir=asc&resource_type=OS::Nova::Server&resource_action=UPDATE",
            100,
        )
        .await;
    // One server at a time: each update starts after the previous one completed.
    let statuses: Vec<&str> = evs
        .iter()
        .map(|e| e["resource_status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"].repeat(3)
    );
    let ng = api
        .mget("/clusters/small/nodegroups/default-worker")
        .await
        .body;
    assert_eq!(ng["image_id"], "fedora-coreos-40");
    assert_eq!(ng["version"], "v1.30.2");
    api.h.shutdown().await;
}

async fn members(api: &Api, stack_id: &str) -> Vec<u32> {
    let path = api.stack_path(stack_id).await;
    let r = api
        .get(&api.heat(&format!(
            "{path}/resources?nested_depth=1&type=kubeminion.yaml"
        )))
        .await;
    let mut names: Vec<u32> = r.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["resource_name"].as_str().unwrap().parse().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn patch_node_count_resizes_default_workers() {
    let api = Api::start(fast("small")).await;
    let patch = json!([{"op": "replace", "path": "/node_count", "value": 4}]);
    let r = api
        .call(
            Method::PATCH,
            &api.magnum("/clusters/small"),
            Some(patch),
            &[V],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    let r = api.mget("/clusters/small").await;
    assert_eq!(r.body["node_count"], 4);
    let bad = json!([{"op": "replace", "path": "/name", "value": "x"}]);
    let r = api
        .call(
            Method::PATCH,
            &api.magnum("/clusters/small"),
            Some(bad),
            &[V],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    api.h.shutdown().await;
}

/// Magnum's Heat driver layout: the default node groups are the two ResourceGroups of the
/// one cluster stack (`kube_masters` of kubemaster.yaml members, `kube_minions` of
/// kubeminion.yaml members), later node groups have a stack of their own from the same
/// template with only the group of their role; addresses are the members' ports'
/// fixed_ips, aggregated by the cluster's outputs in member order.
#[tokio::test]
async fn node_groups_sit_where_magnum_puts_them() {
    let api = Api::start(fast("small")).await;
    let cluster = api.mget("/clusters/small").await.body;
    let master = api
        .mget("/clusters/small/nodegroups/default-master")
        .await
        .body;
    let worker = api
        .mget("/clusters/small/nodegroups/default-worker")
        .await
        .body;
    assert_eq!(master["stack_id"], cluster["stack_id"]);
    assert_eq!(worker["stack_id"], cluster["stack_id"]);
    let path = api.stack_path(cluster["stack_id"].as_str().unwrap()).await;
    let top = api.get(&api.heat(&format!("{path}/resources"))).await.body;
    let groups: Vec<(&str, &str)> = top["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resource_type"] == "OS::Heat::ResourceGroup")
        .map(|r| {
            (
                r["resource_name"].as_str().unwrap(),
                r["physical_resource_id"].as_str().unwrap(),
            )
        })
        .collect();
    let mut names: Vec<&str> = groups.iter().map(|g| g.0).collect();
    names.sort();
    assert_eq!(names, ["kube_masters", "kube_minions"]);
    let stack = api.get(&api.heat(&path)).await.body["stack"].clone();
    let params = &stack["parameters"];
    assert_eq!(params["number_of_masters"], "1");
    assert_eq!(params["number_of_minions"], "3");
    assert_eq!(params["is_cluster_stack"], "True");
    assert_eq!(params["worker_nodegroup_name"], "default-worker");
    let output = |key: &str| {
        stack["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["output_key"] == key)
            .unwrap_or_else(|| panic!("output {key}"))["output_value"]
            .clone()
    };
    let mut private: Vec<String> = serde_json::from_value(output("kube_minions_private")).unwrap();
    let mut addresses: Vec<String> =
        serde_json::from_value(worker["node_addresses"].clone()).unwrap();
    private.sort();
    addresses.sort();
    assert_eq!(private, addresses, "workers are kube_minions");
    assert_eq!(output("kube_masters_private").as_array().unwrap().len(), 1);
    assert_eq!(
        output("kube_minions"),
        json!([null, null, null]),
        "no floating IPs"
    );
    assert!(output("api_address").as_str().is_some());

    // A worker member: kubeminion.yaml, address on its port, OS::stack_id = its server.
    let minions = groups.iter().find(|g| g.0 == "kube_minions").unwrap().1;
    let gpath = api.stack_path(minions).await;
    let members = api.get(&api.heat(&format!("{gpath}/resources"))).await.body;
    let member = members["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource_name"] == "0")
        .expect("member 0 of kube_minions")
        .clone();
    assert_eq!(member["resource_type"], "kubeminion.yaml");
    let member_stack = member["physical_resource_id"].as_str().unwrap();
    let mpath = api.stack_path(member_stack).await;
    let ip = api
        .get(&api.heat(&format!("{mpath}/outputs/kube_minion_ip")))
        .await
        .body["output"]["output_value"]
        .clone();
    assert!(addresses.contains(&ip.as_str().unwrap().to_string()));
    let server = api
        .get(&api.heat(&format!("{mpath}/outputs/OS::stack_id")))
        .await
        .body["output"]["output_value"]
        .clone();
    let nova = api
        .get(&format!(
            "{}/servers/{}",
            api.h.nova_url(),
            server.as_str().unwrap()
        ))
        .await
        .body;
    assert!(nova["server"]["name"]
        .as_str()
        .unwrap()
        .ends_with("-node-0"));
    let port = api
        .get(&api.heat(&format!("{mpath}/resources/kube_minion_eth0")))
        .await
        .body;
    assert_eq!(port["resource"]["resource_type"], "OS::Neutron::Port");
    assert_eq!(
        port["resource"]["attributes"]["fixed_ips"][0]["ip_address"],
        ip
    );
    api.h.shutdown().await;
}

#[tokio::test]
async fn later_node_groups_have_a_stack_of_their_own() {
    let api = Api::start(fast("demo")).await;
    let cluster = api.mget("/clusters/prod-east").await.body;
    let az2 = api
        .mget("/clusters/prod-east/nodegroups/workers-az2")
        .await
        .body;
    assert_ne!(az2["stack_id"], cluster["stack_id"]);
    let path = api.stack_path(az2["stack_id"].as_str().unwrap()).await;
    assert!(path.contains("/prod-east-workers-a"), "{path}");
    let stack = api.get(&api.heat(&path)).await.body["stack"].clone();
    assert_eq!(stack["parameters"]["is_cluster_stack"], "False");
    assert_eq!(stack["parameters"]["number_of_minions"], "40");
    let keys: Vec<&str> = stack["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["output_key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["kube_minions_private", "kube_minions"]);
    let top = api.get(&api.heat(&format!("{path}/resources"))).await.body;
    let names: Vec<&str> = top["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["resource_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["kube_minions"]);
    api.h.shutdown().await;
}

/// A Heat update of Magnum's cluster stack updates only the members whose inputs changed,
/// and the stack's action starts and ends once however many groups it holds; hooks in the
/// environment under `kube_minions` hold the workers' members as they do caldera's `nodes`.
#[tokio::test]
async fn a_heat_update_of_the_cluster_stack_updates_no_unchanged_member() {
    let api = Api::start(fast("small")).await;
    let cluster = api.mget("/clusters/small").await.body;
    let path = api.stack_path(cluster["stack_id"].as_str().unwrap()).await;
    let top_events = |evs: &[serde_json::Value], reason: &str| {
        evs.iter()
            .filter(|e| e["resource_status_reason"] == reason)
            .count()
    };
    let created = api.all_events(&path, "", 500).await;
    assert_eq!(top_events(&created, "Stack CREATE started"), 1);
    assert_eq!(
        top_events(&created, "Stack CREATE completed successfully"),
        1
    );

    let patch = json!({
        "parameters": {"number_of_minions": 4, "minion_image": "fedora-coreos-40"},
        "environment": {"resource_registry": {"resources": {"kube_minions": {"1": {"hooks": "pre-update"}}}}},
    });
    let r = api
        .call(Method::PATCH, &api.heat(&path), Some(patch), &[])
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    // Magnum syncs the stack's new state into the cluster record: its `updated_at` moves (the
    // console's IN STATE column reads it), as it does when Magnum's own API changes it.
    let synced = api.mget("/clusters/small").await.body;
    let (was, now) = (
        cluster["updated_at"].as_str().unwrap_or(""),
        synced["updated_at"].as_str().unwrap_or(""),
    );
    assert!(now > was, "updated_at {was:?} -> {now:?}");
    // Member 1 of the workers waits on its hook; the masters are not touched.
    let top = api.get(&api.heat(&format!("{path}/resources"))).await.body;
    let group = |name: &str| {
        top["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource_name"] == name)
            .unwrap()["physical_resource_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let minions = api.stack_path(&group("kube_minions")).await;
    api.wait_events(
        &minions,
        "UPDATE paused until Hook pre-update is cleared",
        1,
    )
    .await;
    let r = api.unset_hook(&minions, "1", "pre-update").await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    api.wait_status(&path, "UPDATE_COMPLETE", 30).await;
    let evs = api.all_events(&path, "", 500).await;
    assert_eq!(top_events(&evs, "Stack UPDATE started"), 1);
    assert_eq!(top_events(&evs, "Stack UPDATE completed successfully"), 1);
    // As on a real Heat (tests/real_heat/magnum.rs): the masters' group is updated and
    // nothing inside its members changes. (Heat also updates each member as a no-op, its
    // resource and stack writing UPDATE events; the simulator leaves the members alone: a
    // known difference, README.)
    let masters_group = evs
        .iter()
        .filter(|e| e["resource_name"] == "kube_masters")
        .any(|e| e["resource_status"] == "UPDATE_COMPLETE");
    assert!(masters_group, "the masters' group resource is updated");
    let masters_path = api.stack_path(&group("kube_masters")).await;
    // Heat 27 lists nothing for nested_depth on a nested stack (measured; it filters on
    // the resources' root stack), where the same stack lists its own events without it.
    let nested = api.all_events(&masters_path, "&nested_depth=2", 500).await;
    assert!(nested.is_empty(), "{nested:?}");
    assert!(!api.all_events(&masters_path, "", 500).await.is_empty());
    let members = api
        .get(&api.heat(&format!("{masters_path}/resources")))
        .await
        .body;
    let members = members["resources"].as_array().unwrap().clone();
    assert!(!members.is_empty(), "{members:?}");
    for m in &members {
        let id = m["physical_resource_id"].as_str().unwrap();
        let member_path = api.stack_path(id).await;
        // Stack by stack: like Heat, the simulator lists no nested events of a nested stack.
        let inside = api.all_events(&member_path, "", 500).await;
        assert!(!inside.is_empty(), "the master's events are read");
        let touched: Vec<&serde_json::Value> = inside
            .iter()
            .filter(|e| {
                e["resource_status"].as_str().unwrap().starts_with("UPDATE")
                    && !member_path.contains(&format!("/{}/", e["resource_name"].as_str().unwrap()))
            })
            .collect();
        assert!(
            touched.is_empty(),
            "nothing inside a master updated: {touched:?}"
        );
    }
    let workers = api
        .mget("/clusters/small/nodegroups/default-worker")
        .await
        .body;
    assert_eq!(workers["node_count"], 4);
    assert_eq!(workers["image_id"], "fedora-coreos-40");
    let masters = api
        .mget("/clusters/small/nodegroups/default-master")
        .await
        .body;
    assert_eq!(masters["node_count"], 1);
    assert_eq!(masters["image_id"], "fedora-coreos-39");
    api.h.shutdown().await;
}

/// A Magnum member's server takes its port (`networks: [{port: {get_resource:
/// kube_minion_eth0}}]`), so Heat creates the port first: in each member stack the port is
/// CREATE_COMPLETE before the server is CREATE_IN_PROGRESS.
#[tokio::test]
async fn a_magnum_member_makes_its_port_before_its_server() {
    let api = Api::start(fast("small")).await;
    let stack_id = api
        .mget("/clusters/small/nodegroups/default-worker")
        .await
        .body["stack_id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = api.stack_path(&stack_id).await;
    let events = api
        .all_events(&path, "&nested_depth=3&sort_dir=asc", 500)
        .await;
    // Each event's own stack, from its `stack` link.
    let stack_of = |e: &Value| -> String {
        e["links"]
            .as_array()
            .and_then(|l| l.iter().find(|l| l["rel"] == "stack"))
            .and_then(|l| l["href"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let mut checked = 0;
    let stacks: std::collections::BTreeSet<String> = events.iter().map(stack_of).collect();
    for stack in stacks {
        let at = |resource: &str, status: &str| {
            events.iter().position(|e| {
                stack_of(e) == stack
                    && e["resource_name"] == resource
                    && e["resource_status"] == status
            })
        };
        let (Some(port), Some(server)) = (
            at("kube_minion_eth0", "CREATE_COMPLETE"),
            at("kube-minion", "CREATE_IN_PROGRESS"),
        ) else {
            continue;
        };
        assert!(
            port < server,
            "port {port} after server {server} in {stack}"
        );
        checked += 1;
    }
    assert!(checked >= 2, "members checked: {checked}");
    api.h.shutdown().await;
}
