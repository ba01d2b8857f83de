//! Operator actions and the console through a real OpenStack Keystone, with the real Heat
//! behind it, on 127.0.0.1: clouds.yaml -> Keystone -> catalog -> Heat, while the suite's
//! tokens (scripts/real-keystone-suite.sh: 20 s) expire under them.
//!
//! - a node-by-node rollout of a Heat-native cluster (the repo's templates/) that spans
//!   more than two token lifetimes: every member updated exactly once as Heat's own events
//!   show, the journal complete and parseable, no 401 shown to the operator, the renewals in
//!   caldera's log;
//! - the console in a pseudo-terminal: the stack list through Keystone, still refreshing
//!   after the first token has expired, a clean quit that restores the terminal;
//! - after each, caldera's log, the journal and everything written to the terminal are
//!   scanned for the password and every token the test saw (and any Fernet-shaped string).
//!
//! `scripts/real-keystone-suite.sh` runs these with `--ignored`.

use crate::support::pty;
use crate::support::real_keystone_env;
use crate::support::scenarios;

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::config::clouds::{load_cloud, DiscoveryEnv};
use caldera::journal::{Journal, Outcome};
use real_keystone_env::*;
use std::ffi::OsStr;
use std::time::{Duration, Instant};

/// The suite's token lifetime; the cases need it short to see tokens expire.
fn token_ttl() -> u64 {
    let ttl: u64 = env_or("KEYSTONE_TOKEN_EXPIRATION", "3600")
        .parse()
        .expect("KEYSTONE_TOKEN_EXPIRATION");
    assert!(
        (4..=60).contains(&ttl),
        "the suite must shorten the token expiration (KEYSTONE_TOKEN_EXPIRATION={ttl})"
    );
    ttl
}

/// caldera's own connection (the library, through Keystone) for the cloud `name` of
/// `dir`'s clouds.yaml: the test builds its fixtures the way caldera reaches Heat.
async fn connect(dir: &Dir, name: &str) -> CloudConnection {
    let discovery = DiscoveryEnv {
        client_config_file: Some(dir.path().join("clouds.yaml")),
        ..Default::default()
    };
    let cloud = load_cloud(&discovery, Some(name)).expect("the test's clouds.yaml");
    CloudConnection::from_cloud(&cloud, &ConnectOptions::default())
        .await
        .expect("connect through Keystone")
}

/// The `token issued` lines of a caldera debug log.
fn tokens_issued(log: &str) -> usize {
    log.matches("token issued").count()
}

/// A batch-1 rollout of 4 members whose machines take 5/8 of a token lifetime per update
/// runs for well over two lifetimes; caldera renews its token on the way and nothing is
/// lost or repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Keystone and Heat: scripts/real-keystone-suite.sh"]
async fn token_expires_during_a_rollout() {
    let ttl = token_ttl();
    let dir = Dir::new();
    dir.write("clouds.yaml", &clouds(&[operator_cloud("ks")]));
    let conn = connect(&dir, "ks").await;
    // Each member update waits 5/8 of a token lifetime in the machine resource, so 4
    // one-by-one updates take at least 2.5 lifetimes.
    let members = 4u32;
    let env = scenarios::Env::new(
        conn.heat.clone(),
        Duration::from_millis(500),
        Duration::from_secs(240),
        (ttl * 5 / 8) as u32,
    );
    let cluster = unique("ksroll").replace('-', "x");
    let target = env.create(&cluster, members).await;
    let names = env.member_names(&target).await;
    assert_eq!(names.len(), members as usize);
    let mark = env.event_mark(&target).await;

    let journal = dir.path().join("journal.jsonl");
    let label = format!("{cluster}/workers");
    let r = dir
        .caldera_env(
            &[
                "--cloud",
                "ks",
                "rollout",
                "start",
                &label,
                "--image",
                "img-v2",
                "--batch",
                "1",
                "--yes",
                "--poll-secs",
                "0.5",
            ],
            &[("CALDERA_JOURNAL", journal.as_os_str())],
            &[],
        )
        .await;
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    assert!(
        // The progress model's words: every member new, none failed.
        r.stdout.contains(": completed")
            && r.stdout.contains(&format!("new {members}/{members}"))
            && !r.stdout.contains(" failed "),
        "{}",
        r.stdout
    );
    // The renewals happened and the operator never saw them.
    for (what, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
        assert!(!says_unauthorized(text), "{what}: {text}");
    }
    let issued = tokens_issued(&r.log);
    // Renewal is ahead of expiry; a 401 (a token revoked or expired in flight) is repeated
    // once with a fresh token. Either way the operator sees nothing.
    let repeated = r.log.matches("status=401").count();
    eprintln!("rollout over Keystone: {issued} tokens issued, {repeated} requests answered 401 and repeated");
    assert!(
        issued >= 3,
        "a rollout over 2.5 token lifetimes renews at least twice: {issued} tokens issued"
    );

    // Heat's record: every member updated exactly once, all at the new image.
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v2"), "{images:?}");
    let events = env.group_events(&target, mark).await;
    let windows = scenarios::update_windows(&events);
    for m in &names {
        assert_eq!(
            windows.get(m).map(|w| w.2),
            Some(1),
            "member {m} updates: {windows:?}"
        );
    }

    // The journal: every line JSON, the rollout from start to a successful finish, each
    // member's batch started and finished once.
    let text = std::fs::read_to_string(&journal).expect("journal written");
    for (i, line) in text.lines().enumerate() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("journal line {} does not parse ({e}): {line}", i + 1));
    }
    let entries = Journal::open(journal.clone()).read_all().expect("journal");
    let count = |action: &str| entries.iter().filter(|e| e.action == action).count();
    assert_eq!(count("rollout.start"), 1, "{text}");
    assert_eq!(count("rollout.batch_started"), members as usize, "{text}");
    assert_eq!(count("rollout.batch_finished"), members as usize, "{text}");
    let finish: Vec<_> = entries
        .iter()
        .filter(|e| e.action == "rollout.finish")
        .collect();
    assert!(
        finish.len() == 1 && finish[0].outcome == Outcome::Ok,
        "{text}"
    );
    assert_no_secrets("the journal", &text, &[]);
    env.delete(&target).await;
}

/// The console, started on a clouds.yaml in a pseudo-terminal, lists the project's stacks
/// from the Heat in Keystone's catalog; after its first token has expired it still
/// refreshes (a stack made then appears); `q` quits and restores the terminal. Nothing
/// secret is ever written to the terminal or the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Keystone and Heat: scripts/real-keystone-suite.sh"]
async fn console_through_keystone_survives_token_expiry() {
    let ttl = token_ttl();
    let op = Session::operator().await;
    // Both stacks' names start with `prefix`, which nothing else's does.
    let prefix = unique("ks-console");
    let first = format!("{prefix}-a");
    let id = op.create_stack(&first, quick_template()).await;
    op.wait_stack(&first, &id, Duration::from_secs(60)).await;
    let yaml = clouds(&[operator_cloud("ks")]);

    let filter = prefix.clone();
    let console = tokio::task::spawn_blocking(move || {
        let mut c = pty::Console::start_with(
            160,
            40,
            &["--cloud", "ks"],
            &[("RUST_LOG", OsStr::new("debug"))],
            |home| {
                // $XDG_CONFIG_HOME/openstack/clouds.yaml, where the OpenStack clients look;
                // readable by its owner only, as a file with a password should be.
                use std::os::unix::fs::PermissionsExt;
                let dir = home.join("config").join("openstack");
                std::fs::create_dir_all(&dir).expect("config dir");
                let path = dir.join("clouds.yaml");
                std::fs::write(&path, &yaml).expect("clouds.yaml");
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .expect("chmod");
            },
        );
        c.wait_for("the first frame, connected through Keystone", |s| {
            s.alternate && s.has("ks · ops")
        });
        // The stack list, filtered to this test's stacks (others' share the project).
        c.send(":stacks\r");
        c.wait_for("the stack list", |s| s.has("Stacks"));
        c.send("/");
        c.send(&format!("{filter}\r"));
        let name = first.clone();
        c.wait_for("the test's stack, through Keystone", move |s| s.has(&name));
        c
    })
    .await
    .expect("console thread");
    let opened = Instant::now();

    // Let the first token run out: its expiry, from caldera's log, then a little more.
    let log_path = console.log_path().to_path_buf();
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(tokens_issued(&log) >= 1, "no token in the log");
    let linger = Duration::from_secs(ttl + 5).max(Duration::from_secs(25));
    tokio::time::sleep(linger).await;

    // A stack made now shows up only if the console keeps fetching with a renewed token.
    let second = format!("{prefix}-b");
    let id = op.create_stack(&second, quick_template()).await;
    op.wait_stack(&second, &id, Duration::from_secs(60)).await;
    let (console, screen) = tokio::task::spawn_blocking(move || {
        let mut console = console;
        let name = second.clone();
        let screen = console.wait_for("a stack made after the token expired", move |s| {
            s.has(&name)
        });
        (console, screen)
    })
    .await
    .expect("console thread");
    let open_for = opened.elapsed();
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        tokens_issued(&log) >= 2,
        "open {open_for:?} with {ttl} s tokens: the console renewed its token"
    );
    assert!(!says_unauthorized(&screen.text), "{}", screen.text);

    let console = tokio::task::spawn_blocking(move || {
        let mut c = console;
        c.send("q");
        let status = c.wait_exit();
        assert!(status.success(), "caldera exited with {status}");
        c.assert_restored();
        c
    })
    .await
    .expect("console thread");
    let raw = String::from_utf8_lossy(&console.raw()).into_owned();
    assert_no_secrets("the screen", &console.screen().text, &[]);
    assert_no_secrets("the terminal output", &raw, &[]);
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert_no_secrets("the console's log", &log, &[]);
}

/// Whether `text` shows a refusal: "unauthorized", a failed authentication, or a 401 standing
/// alone. Names and ids are random digits and can hold "401" (CI once made the stack
/// `ks-console-18657-607090401`), so a "401" inside a word is not a refusal.
fn says_unauthorized(text: &str) -> bool {
    let lower = text.to_lowercase();
    if lower.contains("unauthorized") || lower.contains("authentication failed") {
        return true;
    }
    let part_of_word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-');
    text.match_indices("401").any(|(at, _)| {
        !part_of_word(text[..at].chars().next_back())
            && !part_of_word(text[at + 3..].chars().next())
    })
}

#[test]
fn a_401_inside_a_name_is_not_a_refusal() {
    assert!(!says_unauthorized(
        "ks-console-18657-607090401-b CREATE_COMPLETE"
    ));
    assert!(!says_unauthorized("id 9a401f2c-0000"));
    assert!(says_unauthorized(
        "GET http://h/v1/stacks: HTTP 401: The request"
    ));
    assert!(says_unauthorized("error: 401"));
    assert!(says_unauthorized("Unauthorized"));
}
