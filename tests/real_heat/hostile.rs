//! Hostile text from a REAL Heat (scripts/heat-standalone.sh), ignored in a plain
//! `cargo test`:
//!
//!   HEAT_URL=http://127.0.0.1:8004/v1/admin cargo test --test real_heat -- --ignored hostile::
//!
//! Any tenant who can create a stack chooses its resource names, its description and the
//! values of its outputs. A resource named with `ESC[2J` (wipe the screen) and
//! `ESC]0;pwned BEL` (set the window title) must reach the operator's terminal as visible
//! text through `caldera failures`, `caldera events` and `caldera stacks` (the real
//! binary), while `--format json` keeps the exact name.

use crate::support::heat_wait::delete_settled;
use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::heat::{HeatClient, StackCreate};
use caldera::model::{StackRef, StatusState};
use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};

/// The resource name: a screen wipe and a window-title change, between letters.
const EVIL: &str = "a\x1b[2Jb\x1b]0;pwned\x07c";

fn heat_url() -> String {
    std::env::var("HEAT_URL")
        .expect("HEAT_URL must point at a real Heat (scripts/real-heat-suite.sh starts one)")
}

async fn heat() -> HeatClient {
    CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(heat_url()),
        &ConnectOptions::default(),
    )
    .await
    .expect("connect to HEAT_URL")
    .heat
}

async fn settle(heat: &HeatClient, stack: &StackRef) -> String {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let d = heat.get_stack(stack, false).await.expect("stack show");
        if d.summary.status.state != StatusState::InProgress {
            return d.summary.status.raw;
        }
        assert!(Instant::now() < deadline, "stack {} stuck", stack.name);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `caldera --heat-url HEAT_URL ARGS` → (stdout, stderr, success).
fn caldera(args: &[&str]) -> (Vec<u8>, String, bool) {
    let home = tempfile::tempdir().expect("temp home");
    let out = Command::new(env!("CARGO_BIN_EXE_caldera"))
        .arg("--heat-url")
        .arg(heat_url())
        .args(args)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env_remove("OS_CLOUD")
        .env_remove("OS_CLIENT_CONFIG_FILE")
        .output()
        .expect("run caldera");
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

/// No byte a terminal would obey: ESC, BEL, CR (a line is ended by LF only), DEL.
fn assert_inert(what: &str, bytes: &[u8]) {
    for (i, b) in bytes.iter().enumerate() {
        assert!(
            !matches!(b, 0x1b | 0x07 | 0x0d | 0x7f | 0x00..=0x08),
            "{what}: raw control byte {b:#04x} at {i} in:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat at HEAT_URL (scripts/heat-standalone.sh)"]
async fn escape_sequences_in_a_resource_name_stay_visible_text() {
    let heat = heat().await;
    let name = format!("caldera-hostile-{}", rand::random::<u32>());
    let template = json!({
        "heat_template_version": "2018-08-31",
        "description": format!("desc {EVIL}"),
        "resources": {
            EVIL: {"type": "OS::Heat::TestResource", "properties": {"fail": true, "value": EVIL}},
            "ok": {"type": "OS::Heat::Value", "properties": {"value": EVIL}}
        },
        "outputs": {"out": {"description": EVIL, "value": {"get_attr": ["ok", "value"]}}}
    });
    let stack = heat
        .create_stack(&StackCreate {
            name: name.clone(),
            template,
            disable_rollback: Some(true),
            ..StackCreate::default()
        })
        .await
        .expect("Heat accepts a resource name with control characters");
    assert_eq!(settle(&heat, &stack).await, "CREATE_FAILED");

    // The deepest failure is the hostile resource: shown, escaped, in the table.
    let (out, err, ok) = caldera(&["failures", &stack.id]);
    assert!(ok, "{err}");
    assert_inert("failures stdout", &out);
    assert_inert("failures stderr", err.as_bytes());
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("a\\e[2Jb\\e]0;pwned\\x07c"), "{text}");
    assert!(text.contains("CREATE_FAILED"), "{text}");

    let (out, err, ok) = caldera(&["failures", &stack.id, "--format", "csv"]);
    assert!(ok, "{err}");
    assert_inert("failures csv", &out);

    // Events: every event of the resource, in table and CSV; JSON keeps the exact name.
    for format in ["table", "csv"] {
        let (out, err, ok) = caldera(&["events", &stack.id, "--format", format]);
        assert!(ok, "{err}");
        assert_inert(&format!("events {format}"), &out);
        assert_inert("events stderr", err.as_bytes());
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.lines()
                .filter(|l| l.contains("a\\e[2Jb\\e]0;pwned\\x07c"))
                .count()
                >= 2,
            "{text}"
        );
    }
    let (out, err, ok) = caldera(&["events", &stack.id, "--format", "json"]);
    assert!(ok, "{err}");
    let names: Vec<String> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["resource_name"].as_str().map(str::to_string))
        .collect();
    assert!(names.iter().any(|n| n == EVIL), "{names:?}");
    // JSON escapes the control characters itself: no raw ESC there either.
    assert!(!out.contains(&0x1b), "json carries raw ESC");

    // The stack list (its reason names the resource).
    let (out, err, ok) = caldera(&["stacks"]);
    assert!(ok, "{err}");
    assert_inert("stacks", &out);
    let text = String::from_utf8_lossy(&out);
    let line = text
        .lines()
        .find(|l| l.contains(&name))
        .unwrap_or_else(|| panic!("{name} listed:\n{text}"));
    assert!(line.contains("CREATE_FAILED"), "{line}");
    let (out, _, ok) = caldera(&["stacks", "--format", "csv"]);
    assert!(ok);
    assert_inert("stacks csv", &out);

    delete_settled(&heat, &stack).await;
}
