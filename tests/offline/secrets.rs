//! Secrets never leave the process: the real `caldera` binary runs headless commands
//! against the simulator from a clouds.yaml (password and application-credential auth),
//! with debug logging to a file, through successes and failures (bad password, injected
//! 500s, dropped connections), and its stdout, stderr and log are searched for the
//! password, the application-credential secret and every token the simulator issued.
//! Also: the clouds.yaml permission warning shows up in the headless commands and the
//! console.

use caldera::sim::{self, SimHandle, SimOptions};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Unusual enough that a match can only be a leak.
const PASSWORD: &str = "pw7f3cUnusualPassw0rd9d1";
const APP_SECRET: &str = "acs5e2bUnusualS3cret71q";
const WRONG_PASSWORD: &str = "wrong4a1bUnusualGuess00";

struct Run {
    label: String,
    ok: bool,
    stdout: String,
    stderr: String,
}

async fn start_sim() -> SimHandle {
    sim::start(SimOptions {
        scenario: "small".into(),
        speed: 20.0,
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        password: PASSWORD.into(),
        app_cred_secret: APP_SECRET.into(),
        ..SimOptions::default()
    })
    .await
    .expect("simulator starts")
}

fn clouds_yaml(sim: &SimHandle, password: &str) -> String {
    format!(
        "clouds:\n  pw:\n    auth_type: password\n    auth:\n      auth_url: {auth}\n      username: {user}\n      password: {password}\n      project_name: {proj}\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: RegionOne\n  appcred:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {auth}\n      application_credential_id: {acid}\n      application_credential_secret: {APP_SECRET}\n    region_name: RegionOne\n",
        auth = sim.auth_url,
        user = sim.username,
        proj = sim.project_name,
        acid = sim.application_credential_id,
    )
}

fn write_clouds(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write clouds.yaml");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

async fn caldera(dir: &Path, clouds: &Path, log: &Path, label: &str, args: &[&str]) -> Run {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_caldera"));
    cmd.args(args)
        .arg("--log-file")
        .arg(log)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("OS_CLIENT_CONFIG_FILE", clouds)
        // `SECRETS_RUST_LOG=trace` runs the same check with every library's trace output.
        .env(
            "RUST_LOG",
            std::env::var("SECRETS_RUST_LOG").unwrap_or_else(|_| "debug".into()),
        )
        .env("RUST_BACKTRACE", "1")
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the command finishes in time")
        .expect("the binary runs");
    Run {
        label: label.to_string(),
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn assert_clean(what: &str, text: &str, secrets: &[String]) {
    for s in secrets {
        assert!(
            !text.contains(s.as_str()),
            "{what} contains a secret ({}...): {text}",
            &s[..6.min(s.len())]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_output_logs_or_errors() {
    let sim = start_sim().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let good = write_clouds(
        dir.path(),
        "clouds.yaml",
        &clouds_yaml(&sim, PASSWORD),
        0o600,
    );
    let bad = write_clouds(
        dir.path(),
        "bad.yaml",
        &clouds_yaml(&sim, WRONG_PASSWORD),
        0o600,
    );
    let log = dir.path().join("caldera.log");
    let f = sim.faults();
    let mut runs = Vec::new();

    runs.push(
        caldera(
            dir.path(),
            &good,
            &log,
            "stacks",
            &["--cloud", "pw", "stacks"],
        )
        .await,
    );
    runs.push(
        caldera(
            dir.path(),
            &good,
            &log,
            "ips",
            &["--cloud", "pw", "ips", "small", "--format", "json"],
        )
        .await,
    );
    runs.push(
        caldera(
            dir.path(),
            &good,
            &log,
            "appcred clusters",
            &["--cloud", "appcred", "clusters", "--format", "csv"],
        )
        .await,
    );
    let bad_pw = caldera(
        dir.path(),
        &bad,
        &log,
        "bad password",
        &["--cloud", "pw", "clusters"],
    )
    .await;
    f.error_rate(1.0, 500);
    let failing = caldera(
        dir.path(),
        &good,
        &log,
        "500s",
        &["--cloud", "pw", "clusters"],
    )
    .await;
    f.clear();
    f.drop_next(50);
    let dropped = caldera(
        dir.path(),
        &good,
        &log,
        "dropped",
        &["--cloud", "appcred", "stacks"],
    )
    .await;
    f.clear();

    for r in &runs {
        assert!(r.ok, "{} failed: {}", r.label, r.stderr);
    }
    assert!(
        runs[0].stdout.contains("CREATE_COMPLETE"),
        "{}",
        runs[0].stdout
    );
    assert!(!bad_pw.ok && !failing.ok && !dropped.ok);
    assert!(
        bad_pw.stderr.contains("authentication failed") || bad_pw.stderr.contains("401"),
        "{}",
        bad_pw.stderr
    );
    assert!(failing.stderr.contains("HTTP 500"), "{}", failing.stderr);
    assert!(dropped.stderr.contains("GET"), "{}", dropped.stderr);
    runs.extend([bad_pw, failing, dropped]);

    // Every token the simulator issued to these processes, plus the credentials.
    let mut secrets: Vec<String> = sim.issued_tokens();
    assert!(secrets.len() >= 5, "each successful login issued a token");
    secrets.extend([PASSWORD, APP_SECRET, WRONG_PASSWORD].map(String::from));
    let log_text = std::fs::read_to_string(&log).expect("the log file was written");
    assert!(
        log_text.contains("DEBUG"),
        "debug logging reached the file: {} bytes",
        log_text.len()
    );
    assert!(log_text.contains("auth/tokens"), "the log covers Keystone");
    assert_clean("the log", &log_text, &secrets);
    for r in &runs {
        assert_clean(&format!("{} stdout", r.label), &r.stdout, &secrets);
        assert_clean(&format!("{} stderr", r.label), &r.stderr, &secrets);
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readable_clouds_yaml_with_a_password_is_warned_about() {
    let sim = start_sim().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("caldera.log");
    let open = write_clouds(dir.path(), "open.yaml", &clouds_yaml(&sim, PASSWORD), 0o644);
    let closed = write_clouds(
        dir.path(),
        "closed.yaml",
        &clouds_yaml(&sim, PASSWORD),
        0o600,
    );
    let r = caldera(
        dir.path(),
        &open,
        &log,
        "open",
        &["--cloud", "pw", "stacks"],
    )
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr.contains("warning:")
            && r.stderr.contains("open.yaml")
            && r.stderr.contains("chmod 600"),
        "{}",
        r.stderr
    );
    let r = caldera(
        dir.path(),
        &closed,
        &log,
        "closed",
        &["--cloud", "pw", "stacks"],
    )
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert!(!r.stderr.contains("chmod"), "{}", r.stderr);

    // The console gets the same text as a notice on its status line.
    let env = caldera::config::DiscoveryEnv {
        client_config_file: Some(open.clone()),
        ..Default::default()
    };
    let cloud = caldera::config::load_cloud(&env, Some("pw")).expect("load");
    let conn = caldera::api::cloud::CloudConnection::from_cloud(
        &cloud,
        &caldera::api::cloud::ConnectOptions::default(),
    )
    .await
    .expect("connect");
    let notices: Vec<String> = conn.warnings().to_vec();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let options = caldera::tui::ConsoleOptions {
        notices,
        no_config: true,
        theme_dir: Some(PathBuf::from("/nonexistent")),
        ..Default::default()
    };
    let mut app = caldera::tui::state::App::new(
        conn.info(),
        caldera::tui::config::resolve(&options),
        chrono::Utc::now(),
    );
    app.update(caldera::tui::message::Action::Resize(200, 30));
    app.prepare();
    let mut term =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(200, 30)).expect("terminal");
    term.draw(|f| app.draw(f)).expect("draw");
    let screen = term.backend().to_string();
    assert!(
        screen.contains("open.yaml") && screen.contains("readable by group"),
        "{screen}"
    );
    sim.shutdown().await;
}

/// The audit journal records actions, their API calls and their errors: none of it may
/// carry a credential or a token, whether the action succeeds, fails or is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_journal_holds_no_secret() {
    use caldera::drivers::apply::{scale, ActionContext};
    use caldera::drivers::guard::Guard;
    use caldera::drivers::magnum::MagnumDriver;
    use caldera::drivers::{Driver, ScaleRequest};
    use caldera::journal::{Actor, Journal};

    let sim = start_sim().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = caldera::api::cloud::CloudConnection::from_cloud(
        &sim.cloud_config(),
        &caldera::api::cloud::ConnectOptions::default(),
    )
    .await
    .expect("connect");
    let driver = MagnumDriver::new(
        conn.magnum.clone().expect("magnum"),
        Some(conn.heat.clone()),
    );
    let journal_path = dir.path().join("journal.jsonl");
    let ctx = ActionContext {
        actor: Actor::local("pw"),
        journal: Journal::open(&journal_path),
        guard: Guard::new(Default::default(), false),
    };
    let target = driver
        .find_nodegroup("small", "default-worker")
        .await
        .expect("node group");
    let plan = driver
        .plan_scale(
            &target,
            &ScaleRequest {
                count: Some(4),
                remove: vec![],
            },
        )
        .await
        .expect("plan");
    scale(&ctx, &driver, &plan, Some("small"))
        .await
        .expect("scale");
    // A node group being resized is not resized again (the plan is refused until it
    // settles): wait, bounded, for Magnum to finish this one.
    let t0 = std::time::Instant::now();
    let settle = ScaleRequest {
        count: Some(5),
        remove: vec![],
    };
    while let Err(e) = driver.plan_scale(&target, &settle).await {
        assert!(e.message.contains("wait for it to settle"), "{e}");
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "never settled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // A failing one: the error text goes into the journal.
    sim.faults().error_rate(1.0, 500);
    let plan5 = ScaleRequest {
        count: Some(5),
        remove: vec![],
    };
    if let Ok(p) = driver.plan_scale(&target, &plan5).await {
        let _ = scale(&ctx, &driver, &p, Some("small")).await;
    }
    sim.faults().clear();
    let p = driver
        .plan_scale(&target, &plan5)
        .await
        .expect("plan after faults");
    // The resize itself answered 503 (a POST is not retried): its error is journaled. (The
    // count read again before it goes through.)
    let resize = format!(
        "/container-infra/v1/clusters/{}/actions",
        target.cluster_id.as_deref().expect("cluster id")
    );
    sim.faults().add(
        sim::faults::Fault::new(sim::faults::FaultKind::Status(503))
            .times(1)
            .on_path(&resize),
    );
    assert!(scale(&ctx, &driver, &p, Some("small")).await.is_err());
    // A refused one.
    let ro = ActionContext {
        guard: Guard::new(Default::default(), true),
        ..ctx.clone()
    };
    assert!(scale(&ro, &driver, &p, Some("small")).await.is_err());

    let text = std::fs::read_to_string(&journal_path).expect("journal written");
    assert!(text.lines().count() >= 4, "{text}");
    assert!(
        text.contains(r#""result":"failed""#) && text.contains("read-only"),
        "{text}"
    );
    let mut secrets = sim.issued_tokens();
    assert!(!secrets.is_empty());
    secrets.extend([PASSWORD, APP_SECRET].map(String::from));
    assert_clean("the journal", &text, &secrets);
    sim.shutdown().await;
}
