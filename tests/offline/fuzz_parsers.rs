//! A bounded, seeded random-input harness over every untrusted-input parser (see
//! `tests/support/fuzzing.rs`): no input may panic. It runs in `cargo test` for a few seconds and
//! from `scripts/fuzz-smoke.sh SECONDS` for longer; cargo-fuzz targets in `fuzz/` use the
//! same entry points with coverage guidance.
//!
//! Inputs are mutations of real seeds: the captured Heat 27 bodies in
//! `tests/fixtures/heat`, the simulator's Magnum/Nova/Keystone answers, the built-in
//! themes and sample clouds.yaml / console config files. Mutations are byte-level (flips,
//! inserts, deletes, splices, truncation) and, for JSON, structure-aware (a random node
//! replaced by null, a wrong type, a huge or odd value; keys removed; deep nesting).
//!
//! Environment: `CALDERA_FUZZ_SECS` (default 6), `CALDERA_FUZZ_SEED` (default: from the
//! clock, printed so a failure can be replayed). A panicking input is written to
//! `$CARGO_TARGET_TMPDIR/fuzz-crash-<target>-<seed>.bin` and the test fails.

use crate::support::fuzzing;
use fuzzing::{by_tag, TARGETS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

const TAG_CLOUDS: u8 = 0;
const TAG_THEME: u8 = 1;
const TAG_CONFIG: u8 = 2;
const TAG_HEAT: u8 = 3;
const TAG_MAGNUM: u8 = 4;
const TAG_NOVA: u8 = 5;
const TAG_KEYSTONE: u8 = 6;
const TAG_MISC: u8 = 7;

const CLOUDS: &str = r#"clouds:
  mycloud:
    auth_type: password
    auth:
      auth_url: https://keystone.example.com:5000/v3
      username: operator
      password: "s3cr3t"
      project_name: demo
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: public
    identity_api_version: 3
    verify: false
    cacert: /etc/ssl/ca.pem
    caldera:
      read_only: true
      production: true
  appcred:
    auth_type: v3applicationcredential
    auth:
      auth_url: http://10.0.0.1/identity
      application_credential_id: 0123456789abcdef
      application_credential_secret: xyz
"#;

const SECURE: &str = "clouds:\n  mycloud:\n    auth:\n      password: other\n";

const CONFIG: &str = "theme = \"light\"\nrefresh_secs = 2\nfps = 20\nread_only = true\n[keys]\nquit = [\"ctrl-q\", \"q\"]\nhelp = [\"?\", \"F1\"]\nup = [\"k\", \"up\", \"shift-tab\", \"alt+x\"]\n";

struct Seed {
    tag: u8,
    data: Vec<u8>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn file_seeds() -> Vec<Seed> {
    let mut seeds = vec![
        Seed {
            tag: TAG_CLOUDS,
            data: CLOUDS.as_bytes().to_vec(),
        },
        Seed {
            tag: TAG_CLOUDS,
            data: [CLOUDS.as_bytes(), b"\0", SECURE.as_bytes()].concat(),
        },
        Seed {
            tag: TAG_CONFIG,
            data: CONFIG.as_bytes().to_vec(),
        },
    ];
    for entry in std::fs::read_dir(root().join("themes"))
        .expect("themes dir")
        .flatten()
    {
        if let Ok(data) = std::fs::read(entry.path()) {
            seeds.push(Seed {
                tag: TAG_THEME,
                data,
            });
        }
    }
    for entry in std::fs::read_dir(root().join("tests/fixtures/heat"))
        .expect("fixtures")
        .flatten()
    {
        let p = entry.path();
        if p.extension().is_some_and(|e| e == "json") {
            if let Ok(data) = std::fs::read(&p) {
                let tag = if p.to_string_lossy().contains("error-") {
                    TAG_MISC
                } else {
                    TAG_HEAT
                };
                seeds.push(Seed { tag, data });
            }
        }
    }
    seeds
}

/// Magnum, Nova and Keystone bodies as the simulator serves them.
async fn sim_seeds() -> Vec<Seed> {
    let sim = caldera::sim::start(caldera::sim::SimOptions {
        scenario: "small".into(),
        ..Default::default()
    })
    .await
    .expect("simulator");
    let http = reqwest::Client::new();
    let auth = json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"name": sim.username, "domain": {"name": "Default"}, "password": sim.password}}},
        "scope": {"project": {"name": sim.project_name, "domain": {"name": "Default"}}}
    }});
    let resp = http
        .post(format!("{}/auth/tokens", sim.auth_url))
        .json(&auth)
        .send()
        .await
        .expect("token");
    let token = resp
        .headers()
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut seeds = vec![Seed {
        tag: TAG_KEYSTONE,
        data: resp.bytes().await.expect("body").to_vec(),
    }];
    let get = |url: String| {
        let http = http.clone();
        let token = token.clone();
        async move {
            http.get(url)
                .header("X-Auth-Token", token)
                .header("OpenStack-API-Version", "container-infra 1.10")
                .send()
                .await
                .expect("get")
                .bytes()
                .await
                .expect("body")
                .to_vec()
        }
    };
    let clusters = get(format!("{}/clusters", sim.magnum_url())).await;
    seeds.push(Seed {
        tag: TAG_MAGNUM,
        data: clusters.clone(),
    });
    let v: Value = serde_json::from_slice(&clusters).unwrap_or_default();
    if let Some(id) = v.pointer("/clusters/0/uuid").and_then(Value::as_str) {
        for path in [
            format!("/clusters/{id}"),
            format!("/clusters/{id}/nodegroups"),
        ] {
            seeds.push(Seed {
                tag: TAG_MAGNUM,
                data: get(format!("{}{path}", sim.magnum_url())).await,
            });
        }
    }
    seeds.push(Seed {
        tag: TAG_NOVA,
        data: get(format!("{}/servers/detail", sim.nova_url())).await,
    });
    seeds.push(Seed {
        tag: TAG_HEAT,
        data: get(format!("{}/stacks?show_nested=true", sim.heat_url())).await,
    });
    sim.shutdown().await;
    seeds
}

fn odd_value(rng: &mut StdRng, depth: usize) -> Value {
    match rng.gen_range(0..16) {
        0 => Value::Null,
        1 => json!(""),
        2 => json!(-1),
        3 => json!(1e308),
        4 => json!(u64::MAX),
        5 => json!(i64::MIN),
        6 => json!(true),
        7 => json!([]),
        8 => json!({}),
        9 => json!("x".repeat(rng.gen_range(0..5000))),
        10 => json!("\u{0}\u{202e}\u{fffd}é漢字\u{1F600}"),
        11 => json!("9999-99-99T99:99:99Z"),
        12 => json!("http://[::1]:0/v1/%zz/stacks/a/b/c/../../"),
        13 if depth < 64 => json!([odd_value(rng, depth + 1)]),
        14 if depth < 64 => json!({"k": odd_value(rng, depth + 1)}),
        _ => json!(0.5),
    }
}

/// Replaces, removes or deepens one random node of a JSON document.
fn mutate_json(rng: &mut StdRng, v: &mut Value, depth: usize) {
    let roll = rng.gen_range(0..10);
    match v {
        Value::Object(map) if !map.is_empty() && roll < 8 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let k = &keys[rng.gen_range(0..keys.len())];
            match rng.gen_range(0..6) {
                0 => {
                    map.remove(k);
                }
                1 => {
                    map.insert(k.clone(), odd_value(rng, depth));
                }
                _ => {
                    if let Some(child) = map.get_mut(k) {
                        mutate_json(rng, child, depth + 1);
                    }
                }
            }
        }
        Value::Array(items) if !items.is_empty() && roll < 8 => {
            let i = rng.gen_range(0..items.len());
            match rng.gen_range(0..6) {
                0 => {
                    items.remove(i);
                }
                1 => items[i] = odd_value(rng, depth),
                2 => {
                    let dup = items[i].clone();
                    items.push(dup);
                }
                _ => mutate_json(rng, &mut items[i], depth + 1),
            }
        }
        _ => *v = odd_value(rng, depth),
    }
}

const TOKENS: &[&[u8]] = &[
    b"null",
    b"\"\"",
    b"[]",
    b"{}",
    b"-",
    b"1e999",
    b"\\u0000",
    b"\\ud800",
    b"\"",
    b"\n",
    b": ",
    b"- ",
    b"&a",
    b"*a",
    b"!!binary",
    b"<<: *a",
    b"{{",
    b"]]",
    b"[[keys]]",
    b"=",
    b"ctrl-",
    b"shift+alt-",
    b"\xff\xfe",
    b"\t",
    b"#",
    b"'",
    b"\"\"\"",
    b"0x",
    b"#zzzzzz",
    b"~",
    b"\r\n",
    b"%",
    b"\x00",
];

fn mutate_bytes(rng: &mut StdRng, data: &mut Vec<u8>) {
    for _ in 0..rng.gen_range(1..6) {
        let len = data.len();
        match rng.gen_range(0..8) {
            0 if len > 0 => {
                let i = rng.gen_range(0..len);
                data[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => {
                let i = rng.gen_range(0..=len);
                data.insert(i, rng.gen());
            }
            2 if len > 0 => {
                let a = rng.gen_range(0..len);
                let b = (a + rng.gen_range(0..64)).min(len);
                data.drain(a..b);
            }
            3 if len > 0 => {
                let a = rng.gen_range(0..len);
                let b = (a + rng.gen_range(0..64)).min(len);
                let chunk = data[a..b].to_vec();
                let at = rng.gen_range(0..=data.len());
                data.splice(at..at, chunk);
            }
            4 if len > 0 => data.truncate(rng.gen_range(0..len)),
            5 => {
                let t = TOKENS[rng.gen_range(0..TOKENS.len())];
                let at = rng.gen_range(0..=len);
                data.splice(at..at, t.iter().copied());
            }
            6 => {
                // Deep nesting: parsers must not overflow the stack.
                let n = rng.gen_range(1..400);
                let at = rng.gen_range(0..=len);
                let open: &[u8] = if rng.gen_bool(0.5) { b"[" } else { b"{\"a\":" };
                let chunk: Vec<u8> = open.iter().copied().cycle().take(open.len() * n).collect();
                data.splice(at..at, chunk);
            }
            _ => {}
        }
    }
}

fn mutate(rng: &mut StdRng, seed: &Seed) -> Vec<u8> {
    if rng.gen_bool(0.5) {
        if let Ok(mut v) = serde_json::from_slice::<Value>(&seed.data) {
            for _ in 0..rng.gen_range(1..4) {
                mutate_json(rng, &mut v, 0);
            }
            let mut out = serde_json::to_vec(&v).unwrap_or_default();
            if rng.gen_bool(0.2) {
                mutate_bytes(rng, &mut out);
            }
            return out;
        }
    }
    let mut out = seed.data.clone();
    mutate_bytes(rng, &mut out);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_parser_panics_on_mutated_input() {
    let secs: u64 = std::env::var("CALDERA_FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let seed: u64 = std::env::var("CALDERA_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("fuzz_parsers: seed {seed}, {secs} s (replay with CALDERA_FUZZ_SEED={seed})");
    let mut seeds = file_seeds();
    seeds.extend(sim_seeds().await);
    for tag in 0..TARGETS.len() as u8 {
        assert!(
            seeds.iter().any(|s| s.tag == tag) || tag == TAG_MISC,
            "a seed for {}",
            TARGETS[tag as usize]
        );
    }
    // The unmutated seeds must parse without panicking too (and most must parse at all).
    for s in &seeds {
        by_tag(s.tag, &s.data);
    }
    let deadline = Duration::from_secs(secs);
    let result = tokio::task::spawn_blocking(move || {
        let mut rng = StdRng::seed_from_u64(seed);
        let started = Instant::now();
        let mut runs = vec![0u64; TARGETS.len()];
        // Hard cap on iterations as well as time, so a slow machine still ends.
        let cap = 5_000_000u64;
        let mut n = 0;
        while started.elapsed() < deadline && n < cap {
            n += 1;
            // Targets evenly, whatever their number of seeds (Heat has dozens).
            let want = rng.gen_range(0..TARGETS.len() as u8);
            let pool: Vec<&Seed> = seeds.iter().filter(|s| s.tag == want).collect();
            let s = if pool.is_empty() {
                &seeds[rng.gen_range(0..seeds.len())]
            } else {
                pool[rng.gen_range(0..pool.len())]
            };
            let input = mutate(&mut rng, s);
            // Cross-feed: any body to any decoder now and then.
            let tag = if rng.gen_bool(0.1) {
                rng.gen_range(0..TARGETS.len() as u8)
            } else {
                s.tag
            };
            // Error bodies and small texts go to the misc parsers too.
            let outcome = std::panic::catch_unwind(|| {
                by_tag(tag, &input);
                if input.len() < 4096 {
                    by_tag(TAG_MISC, &input);
                }
            });
            if outcome.is_err() {
                let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
                let path = dir.join(format!(
                    "fuzz-crash-{}-{seed}-{n}.bin",
                    TARGETS[tag as usize]
                ));
                let _ = std::fs::write(&path, &input);
                return Err(format!(
                    "{} panicked on input saved to {}",
                    TARGETS[tag as usize],
                    path.display()
                ));
            }
            runs[tag as usize] += 1;
        }
        Ok((n, runs, started.elapsed()))
    })
    .await
    .expect("harness thread");
    match result {
        Ok((n, runs, took)) => {
            eprintln!(
                "fuzz_parsers: {n} inputs in {:.1} s: {}",
                took.as_secs_f64(),
                TARGETS
                    .iter()
                    .zip(&runs)
                    .map(|(t, r)| format!("{t}={r}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            assert!(n > 100, "the harness ran: {n}");
        }
        Err(e) => panic!("{e}"),
    }
}
