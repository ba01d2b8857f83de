//! Memory and latency figures of the simulator:
//! `cargo run --release --example sim_bench -- [scenario]` (default: demo, then bench-10000).

use caldera::sim::{self, SimOptions};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

async fn measure(scenario: &str) -> Res<()> {
    let before = rss_mb();
    let t = Instant::now();
    let h = sim::start(SimOptions {
        scenario: scenario.into(),
        ..Default::default()
    })
    .await?;
    let built = t.elapsed();
    let rss = rss_mb();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let body = json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"name": h.username, "domain": {"name": "Default"}, "password": h.password}}},
        "scope": {"project": {"name": h.project_name, "domain": {"name": "Default"}}}}});
    let r = http
        .post(format!("{}/auth/tokens", h.auth_url))
        .json(&body)
        .send()
        .await?;
    let token = r
        .headers()
        .get("x-subject-token")
        .ok_or("no X-Subject-Token")?
        .to_str()?
        .to_string();
    let get = |url: String| {
        let http = http.clone();
        let token = token.clone();
        async move {
            let r = http
                .get(&url)
                .header("X-Auth-Token", token)
                .header("OpenStack-API-Version", "container-infra 1.12")
                .send()
                .await?;
            let status = r.status();
            let v: Value = r.json().await.unwrap_or(Value::Null);
            Res::Ok((status, v))
        }
    };
    let (_, clusters) = get(format!("{}/clusters", h.magnum_url())).await?;
    let cl = clusters["clusters"][0]["uuid"]
        .as_str()
        .ok_or("no cluster")?
        .to_string();
    let (_, ngs) = get(format!(
        "{}/clusters/{cl}/nodegroups?role=worker",
        h.magnum_url()
    ))
    .await?;
    let ng = ngs["nodegroups"]
        .as_array()
        .ok_or("no node groups")?
        .iter()
        .max_by_key(|n| n["node_count"].as_u64())
        .ok_or("no node group")?
        .clone();
    let stack_id = ng["stack_id"].as_str().ok_or("no stack_id")?;
    let r = http
        .get(format!("{}/stacks/{stack_id}", h.heat_url()))
        .header("X-Auth-Token", &token)
        .send()
        .await?;
    let path = r
        .headers()
        .get("location")
        .ok_or("no Location")?
        .to_str()?
        .to_string();
    println!("scenario {scenario}: built in {built:.2?}; RSS {rss:.1} MB (before {before:.1} MB); {} servers", h.with_world(|w| w.servers.len()));
    let cases = vec![
        ("events page (limit 50)", format!("{path}/events?limit=50")),
        (
            "events page, nested_depth=2 (limit 50)",
            format!("{path}/events?limit=50&nested_depth=2"),
        ),
        ("cluster list", format!("{}/clusters", h.magnum_url())),
        ("cluster show", format!("{}/clusters/{cl}", h.magnum_url())),
        (
            "node group show (largest)",
            format!(
                "{}/clusters/{cl}/nodegroups/{}",
                h.magnum_url(),
                ng["uuid"].as_str().ok_or("no node group uuid")?
            ),
        ),
        (
            "stack show resolve_outputs=false",
            format!("{path}?resolve_outputs=false"),
        ),
        ("resources (top)", format!("{path}/resources")),
        (
            "servers/detail page (limit 100)",
            format!("{}/servers/detail?limit=100", h.nova_url()),
        ),
    ];
    for (name, url) in cases {
        let mut v = Vec::new();
        for _ in 0..101 {
            let t = Instant::now();
            let (s, _) = get(url.clone()).await?;
            v.push(t.elapsed());
            assert!(s.is_success(), "{name}: {s}");
        }
        v.sort();
        println!(
            "  {name:42} median {:7.3} ms  p95 {:7.3} ms",
            ms(v[50]),
            ms(v[95])
        );
    }
    h.shutdown().await;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scenarios = if args.is_empty() {
        vec!["demo".to_string(), "bench-10000".to_string()]
    } else {
        args
    };
    for s in scenarios {
        measure(&s).await?;
    }
    Ok(())
}
