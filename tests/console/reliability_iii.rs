//! Reliability III (issue 26), checked on the real binary:
//! - numbers a user gives on the command line are read with bounds: `1e308`, `inf`, `NaN`,
//!   zero where zero means nothing are refused by name, never a panic (rc 101);
//! - JSON output (`clusters`, `stacks`, `journal --format json`) carries text from the
//!   cloud and from hooks exactly, with C1, DEL and bidi overrides escaped as `\uXXXX`
//!   like C0: nothing in it that a terminal obeys.

use std::path::Path;
use std::process::{Command, Output};

/// The binary with a home of its own: no clouds.yaml, config or journal of the machine.
fn caldera(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_caldera"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .current_dir(home);
    cmd
}

fn run(home: &Path, args: &[&str]) -> Output {
    caldera(home).args(args).output().expect("run caldera")
}

#[test]
fn numbers_past_their_bounds_are_usage_errors_naming_the_flag_never_a_panic() {
    let home = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--simulator", "events", "x", "--interval", "1e308"][..],
            "expected a number of seconds from 0.2 to 86400, got 1e308",
        ),
        (
            &["--simulator", "events", "x", "--interval", "inf"][..],
            "expected a number of seconds from 0.2 to 86400, got inf",
        ),
        (
            &["--simulator", "fleet", "--cloud-timeout", "NaN"][..],
            "got NaN",
        ),
        (
            &[
                "--simulator",
                "rollout",
                "pause",
                "c/w",
                "--wait-secs",
                "1e300",
            ][..],
            "got 1e300",
        ),
        (
            &["--simulator", "--page-size", "0", "stacks"][..],
            "expected a whole number from 1 to 10000, got 0",
        ),
        (
            &["--simulator", "ips", "c", "--concurrency", "0"][..],
            "expected a whole number from 1 to 1024, got 0",
        ),
    ] {
        let out = run(home.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        let flag = args
            .iter()
            .find(|a| a.starts_with("--") && **a != "--simulator");
        assert!(err.contains(flag.unwrap()), "{args:?}: {err}");
    }
}

/// Text a tenant can put in names and reasons, and a hook in its output: a screen wipe, a
/// title change, a C1 CSI, a right-to-left override, a CR, DEL, and an isolate.
const HOSTILE: &str = "\x1b[2J\x1b]0;pwned\x07\u{9b}31m\u{202e}\r\x7f\u{2066}";

/// No character a terminal obeys, only the line feeds ending lines.
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Some((i, c)) = text
        .char_indices()
        .find(|(_, c)| *c != '\n' && caldera::model::text::is_unsafe_char(*c))
    {
        panic!("{what}: {c:?} at byte {i}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_escapes_c1_del_and_bidi_and_keeps_the_exact_text() {
    use caldera::sim::{self, SimOptions};
    let sim = sim::start(SimOptions {
        scenario: "hostile".into(),
        output_cost_per_member: std::time::Duration::ZERO,
        detail_cost_per_resource: std::time::Duration::ZERO,
        ..SimOptions::default()
    })
    .await
    .expect("simulator");
    let dir = tempfile::tempdir().unwrap();
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("hostile")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&clouds, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    // A journal entry whose hook output holds the same text.
    let journal = dir.path().join("journal.jsonl");
    let actor = caldera::journal::Actor {
        cloud: "hostile".into(),
        user: "alice".into(),
    };
    caldera::journal::Journal::open(&journal)
        .append(
            &caldera::journal::Entry::new(
                &actor,
                "hook.post_node",
                "c1/w/0",
                caldera::journal::Outcome::Ok,
            )
            .output(format!("drained{HOSTILE}")),
        )
        .unwrap();
    let home = dir.path().to_path_buf();
    let run_json = |args: Vec<&'static str>| {
        let (home, clouds, journal) = (home.clone(), clouds.clone(), journal.clone());
        tokio::task::spawn_blocking(move || {
            let out = caldera(&home)
                .args(&args)
                .env("OS_CLIENT_CONFIG_FILE", &clouds)
                .env("OS_CLOUD", "hostile")
                .env("CALDERA_JOURNAL", &journal)
                .output()
                .expect("run caldera");
            let err = String::from_utf8_lossy(&out.stderr).to_string();
            assert!(out.status.success(), "{args:?}: {err}");
            assert_inert(&format!("{args:?}"), &out.stdout);
            out.stdout
        })
    };
    let out = run_json(vec!["clusters", "--format", "json"])
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(
        v[0]["name"],
        serde_json::json!(format!("evil{}", caldera::sim::scenario::HOSTILE))
    );
    let out = run_json(vec!["stacks", "--format", "json"]).await.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert!(
        v.as_array().unwrap().iter().any(|s| s["status_reason"]
            .as_str()
            .is_some_and(|n| n.contains(caldera::sim::scenario::HOSTILE))),
        "{v}"
    );
    let out = run_json(vec!["journal", "--format", "json"]).await.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(
        v[0]["output"],
        serde_json::json!(format!("drained{HOSTILE}"))
    );
    sim.shutdown().await;
}

/// A minimal pseudo-terminal for the console (after `tests/support/pty.rs`): the binary is
/// a session leader with the pty as its controlling terminal; every byte it writes is kept.
mod pty {
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, ExitStatus, Stdio};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    pub struct Console {
        pub child: Child,
        master: File,
        raw: Arc<Mutex<(Vec<u8>, bool)>>,
        pub log: std::path::PathBuf,
        _home: tempfile::TempDir,
    }

    fn check(rc: libc::c_int, what: &str) -> std::io::Result<()> {
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            return Err(std::io::Error::new(e.kind(), format!("{what}: {e}")));
        }
        Ok(())
    }

    impl Console {
        pub fn start() -> Console {
            Console::start_with(&["--simulator"], |_| Vec::new())
        }

        /// `caldera ARGS` with `env(home)` added to its environment.
        pub fn start_with(
            args: &[&str],
            env: impl FnOnce(&std::path::Path) -> Vec<(String, std::ffi::OsString)>,
        ) -> Console {
            let home = tempfile::tempdir().expect("temp home");
            let extra = env(home.path());
            let log = home.path().join("caldera.log");
            let (mut m, mut s): (libc::c_int, libc::c_int) = (-1, -1);
            let size = libc::winsize {
                ws_row: 30,
                ws_col: 100,
                ws_xpixel: 0,
                ws_ypixel: 0,
            };
            // SAFETY: out-pointers to locals; no name buffer; the size is read only.
            check(
                unsafe {
                    libc::openpty(
                        &mut m,
                        &mut s,
                        std::ptr::null_mut(),
                        std::ptr::null(),
                        &size,
                    )
                },
                "openpty",
            )
            .expect("openpty");
            // SAFETY: fresh descriptors from openpty, owned by nothing else.
            let (master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
            for fd in [&master, &slave] {
                // SAFETY: fcntl on descriptors we own.
                unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
            }
            let stdio = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup the pty slave"));
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_caldera"));
            cmd.args(args)
                .arg("--log-file")
                .arg(&log)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("TERM", "xterm-256color")
                .env("HOME", home.path())
                .env("XDG_CONFIG_HOME", home.path().join("config"))
                .env("XDG_STATE_HOME", home.path().join("state"))
                .env("XDG_DATA_HOME", home.path().join("data"))
                .env("RUST_LOG", "info")
                .envs(extra)
                .stdin(stdio(&slave))
                .stdout(stdio(&slave))
                .stderr(stdio(&slave));
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    check(libc::setsid(), "setsid")?;
                    check(libc::ioctl(0, libc::TIOCSCTTY, 0), "TIOCSCTTY")
                });
            }
            let child = cmd.spawn().expect("start caldera");
            drop(slave);
            let master = File::from(master);
            let mut read_side = master.try_clone().expect("dup the pty master");
            let raw = Arc::new(Mutex::new((Vec::new(), false)));
            let sink = raw.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                loop {
                    match read_side.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => sink.lock().unwrap().0.extend_from_slice(&buf[..n]),
                    }
                }
                sink.lock().unwrap().1 = true;
            });
            Console {
                child,
                master,
                raw,
                log,
                _home: home,
            }
        }

        pub fn raw(&self) -> String {
            String::from_utf8_lossy(&self.raw.lock().unwrap().0).to_string()
        }

        /// Waits (at most a minute) until `cond` holds on what was written so far.
        pub fn wait_for(&mut self, what: &str, cond: impl Fn(&str) -> bool) {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !cond(&self.raw()) {
                if Instant::now() > deadline {
                    let _ = self.child.kill();
                    panic!("timed out waiting for {what}:\n{:?}", self.raw());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }

        /// Waits for the exit, then for the last bytes written to be read.
        pub fn wait_exit(&mut self) -> ExitStatus {
            let deadline = Instant::now() + Duration::from_secs(60);
            let status = loop {
                if let Some(status) = self.child.try_wait().expect("wait") {
                    break status;
                }
                if Instant::now() > deadline {
                    let _ = self.child.kill();
                    panic!("caldera did not exit");
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            while !self.raw.lock().unwrap().1 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            status
        }

        /// Canonical input and echo on: not left in raw mode.
        pub fn cooked(&self) -> bool {
            // SAFETY: a zeroed termios is a valid out-buffer for tcgetattr on our master.
            let mut t: libc::termios = unsafe { std::mem::zeroed() };
            check(
                unsafe { libc::tcgetattr(self.master.as_raw_fd(), &mut t) },
                "tcgetattr",
            )
            .expect("termios");
            t.c_lflag & libc::ICANON != 0 && t.c_lflag & libc::ECHO != 0
        }
    }

    impl Drop for Console {
        fn drop(&mut self) {
            if let Ok(None) = self.child.try_wait() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}

/// SIGUSR1, SIGUSR2 and SIGALRM end a process by default: the console used to die on the
/// alternate screen, raw, cursor hidden. Each now restores the terminal first (the last
/// alternate-screen switch is the exit, the cursor is shown, cooked mode) and exits with
/// 128 + the signal's number.
#[test]
fn every_terminating_signal_restores_the_terminal_and_exits_128_plus_its_number() {
    use std::os::unix::process::ExitStatusExt;
    for sig in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM] {
        let mut c = pty::Console::start();
        // A first frame is drawn from inside the event loop, where signals are listened to.
        c.wait_for("the console's first frame", |raw| {
            raw.rfind("\x1b[?1049h")
                .is_some_and(|at| raw.len() > at + 200)
        });
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(c.child.id() as i32, sig) }, 0);
        let status = c.wait_exit();
        let raw = c.raw();
        let entered = raw
            .rfind("\x1b[?1049h")
            .expect("entered the alternate screen");
        let left = raw.rfind("\x1b[?1049l");
        assert!(
            left.is_some_and(|l| l > entered),
            "signal {sig} ({status:?}, killed by {:?}): the alternate screen was not left",
            status.signal()
        );
        let shown = raw.rfind("\x1b[?25h");
        assert!(
            shown.is_some_and(|s| s > raw.rfind("\x1b[?25l").unwrap_or(0)),
            "signal {sig}: the cursor was left hidden"
        );
        assert!(c.cooked(), "signal {sig}: raw mode left on");
        assert_eq!(status.code(), Some(128 + sig), "signal {sig}: {status:?}");
        let log = std::fs::read_to_string(&c.log).unwrap_or_default();
        assert!(log.contains(": quitting (exit status"), "{log}");
    }
}

/// A service that accepts connections and never answers (a hung Heat behind a load
/// balancer): every headless command says on stderr, within 5 s, which service it waits
/// for and when it gives up, instead of a silence as long as the timeout.
#[test]
fn a_service_that_accepts_and_never_answers_is_named_on_stderr_within_5_s() {
    use std::io::Read;
    use std::time::{Duration, Instant};
    // Accepts every connection and holds it, saying nothing (loopback only).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let url = format!("http://127.0.0.1:{port}/v1/tenant");
    let home = tempfile::tempdir().unwrap();
    let commands: Vec<Vec<String>> = vec![
        vec!["stacks".into()],
        vec!["events".into(), "s1".into(), "--follow".into()],
        vec![
            "clusters".into(),
            "--magnum-url".into(),
            format!("http://127.0.0.1:{port}/v1"),
        ],
    ];
    let mut children: Vec<(Vec<String>, std::process::Child)> = commands
        .into_iter()
        .map(|args| {
            let child = caldera(home.path())
                .arg("--heat-url")
                .arg(&url)
                .args(&args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start caldera");
            (args, child)
        })
        .collect();
    // What each wrote to stderr, read as it comes.
    let readers: Vec<_> = children
        .iter_mut()
        .map(|(_, c)| {
            let mut err = c.stderr.take().expect("stderr");
            let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
            let sink = seen.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sink.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
            seen
        })
        .collect();
    let started = Instant::now();
    let said = |seen: &std::sync::Arc<std::sync::Mutex<String>>| {
        let s = seen.lock().unwrap();
        s.contains(&format!("waiting for Heat at http://127.0.0.1:{port}"))
            && s.contains("gives up after")
    };
    while started.elapsed() < Duration::from_secs(5) && !readers.iter().all(said) {
        std::thread::sleep(Duration::from_millis(100));
    }
    for ((args, child), seen) in children.iter_mut().zip(&readers) {
        let _ = child.kill();
        let _ = child.wait();
        let text = seen.lock().unwrap().clone();
        assert!(
            said(seen),
            "{args:?}: nothing on stderr names the silent service within 5 s:\n{text}"
        );
        // The deadline is a number of seconds, with the flag that changes it.
        assert!(
            text.contains(" s; ") && text.contains("--timeout "),
            "{args:?}: {text}"
        );
    }
}

/// The console connects before it takes the terminal: a Keystone that accepts and never
/// answers is named there too, with its deadline (and nothing is written on stderr once
/// the console draws).
#[test]
fn the_console_names_a_silent_keystone_before_it_draws() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let mut c = pty::Console::start_with(&["--timeout", "keystone=4"], |home| {
        let clouds = home.join("clouds.yaml");
        std::fs::write(
            &clouds,
            format!(
                "clouds:\n  silent:\n    auth:\n      auth_url: http://127.0.0.1:{port}/v3\n      \
                 username: u\n      password: p\n      project_name: p\n      \
                 user_domain_name: Default\n      project_domain_name: Default\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&clouds, std::fs::Permissions::from_mode(0o600)).unwrap();
        vec![
            ("OS_CLIENT_CONFIG_FILE".to_string(), clouds.into_os_string()),
            ("OS_CLOUD".to_string(), "silent".into()),
        ]
    });
    let started = std::time::Instant::now();
    c.wait_for("the Keystone notice", |raw| {
        raw.contains(&format!("waiting for Keystone at http://127.0.0.1:{port}"))
            && raw.contains("gives up after 4 s; --timeout keystone=SECS")
    });
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let _ = c.wait_exit();
}
