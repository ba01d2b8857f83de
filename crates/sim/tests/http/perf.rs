use crate::common::{fast, Api};
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

async fn median(api: &Api, url: &str, n: usize) -> Duration {
    let mut v = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let r = api
            .call(
                reqwest::Method::GET,
                url,
                None,
                &[("OpenStack-API-Version", "container-infra 1.12")],
            )
            .await;
        v.push(t.elapsed());
        assert!(
            r.status.is_success() || r.status == reqwest::StatusCode::FOUND,
            "{url}: {}",
            r.status
        );
    }
    v.sort();
    v[n / 2]
}

/// Prints memory and latency figures for the demo scenario; asserts loose bounds
/// (debug builds are slower; see examples/sim_bench.rs for release figures).
#[tokio::test]
async fn demo_memory_and_latency() {
    let before = rss_mb();
    let api = Api::start(fast("demo")).await;
    let after = rss_mb();
    let ng = api
        .mget("/clusters/prod-east/nodegroups/default-worker")
        .await
        .body;
    let path = api.stack_path(ng["stack_id"].as_str().unwrap()).await;
    let cases = [
        (
            "events page (50)",
            api.heat(&format!("{path}/events?limit=50")),
        ),
        ("cluster list", api.magnum("/clusters")),
        (
            "node group show (1000 nodes)",
            api.magnum("/clusters/prod-east/nodegroups/default-worker"),
        ),
        (
            "stack show, outputs unresolved",
            api.heat(&format!("{path}?resolve_outputs=false")),
        ),
        (
            "servers page (100)",
            format!("{}/servers/detail?limit=100", api.h.nova_url()),
        ),
    ];
    println!("demo scenario: RSS {after:.1} MB (process before start {before:.1} MB)");
    for (name, url) in &cases {
        let m = median(&api, url, 41).await;
        println!("median {name}: {:.2} ms", m.as_secs_f64() * 1000.0);
        assert!(m < Duration::from_millis(200), "{name}: {m:?}");
    }
    assert!(after < 400.0, "RSS {after} MB");
    api.h.shutdown().await;
}
