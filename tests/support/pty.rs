//! Runs the real `caldera` binary in a pseudo-terminal of a fixed size and reads what it
//! draws through a terminal emulator (`vt100`), the way a person at a terminal sees it.
//!
//! The pty is opened with `openpty(3)` directly: the binary becomes a session leader with
//! the pty as its controlling terminal, so job-control signals and `SIGWINCH` behave as
//! under a real shell. Waits poll the screen until a condition holds and fail with the
//! screen and the log dumped; nothing sleeps for a fixed time and then asserts.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long any one wait may take: generous, for a loaded 2-core CI machine running a
/// debug build and a 1000-node simulator in the same process.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Everything the binary wrote, as bytes and as an emulated screen.
struct Output {
    parser: vt100::Parser,
    raw: Vec<u8>,
    /// The reader saw end of file / EIO: every copy of the pty's slave side is closed.
    closed: bool,
}

pub struct Console {
    child: Child,
    master: File,
    output: Arc<Mutex<Output>>,
    reader: Option<JoinHandle<()>>,
    log: PathBuf,
    _home: tempfile::TempDir,
}

fn check(rc: libc::c_int, what: &str) -> std::io::Result<()> {
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

fn set_cloexec(fd: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
    check(flags, "fcntl(F_GETFD)")?;
    // SAFETY: as above.
    check(
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, flags | libc::FD_CLOEXEC) },
        "fcntl(F_SETFD)",
    )
}

fn open_pty(cols: u16, rows: u16) -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut master: libc::c_int = -1;
    let mut slave: libc::c_int = -1;
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: out-pointers to locals; no name buffer; the size is read only.
    check(
        unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        },
        "openpty",
    )?;
    // SAFETY: openpty succeeded, so both are fresh descriptors that nothing else owns.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // Neither leaks into the child past its stdio (the master would keep the pty open).
    set_cloexec(&master)?;
    set_cloexec(&slave)?;
    Ok((master, slave))
}

impl Console {
    /// `caldera --simulator` in a `cols`x`rows` terminal, with a home directory of its own
    /// (no user config, no clouds.yaml) and its log in that directory.
    pub fn start(cols: u16, rows: u16) -> Console {
        Console::start_with(cols, rows, &["--simulator"], &[], |_| {})
    }

    /// `caldera ARGS` in a `cols`x`rows` terminal with a home directory of its own (as
    /// [`Console::start`]) plus `env`; `setup` writes files into that home first (e.g.
    /// `config/caldera/config.toml`).
    pub fn start_with(
        cols: u16,
        rows: u16,
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
        setup: impl FnOnce(&Path),
    ) -> Console {
        let home = tempfile::tempdir().expect("temp home");
        setup(home.path());
        let log = home.path().join("caldera.log");
        let (master, slave) = open_pty(cols, rows).expect("open a pty");
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
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(stdio(&slave))
            .stdout(stdio(&slave))
            .stderr(stdio(&slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                // A session of its own with the pty as the controlling terminal, as a login
                // shell would give it.
                check(libc::setsid(), "setsid")?;
                check(libc::ioctl(0, libc::TIOCSCTTY, 0), "TIOCSCTTY")
            });
        }
        let child = cmd.spawn().expect("start caldera");
        // The child holds the slave now; with ours closed, reads see EIO once it exits.
        drop(slave);
        let output = Arc::new(Mutex::new(Output {
            parser: vt100::Parser::new(rows, cols, 0),
            raw: Vec::new(),
            closed: false,
        }));
        let master = File::from(master);
        let mut read_side = master.try_clone().expect("dup the pty master");
        let sink = output.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                match read_side.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut out = sink.lock().expect("output lock");
                        out.parser.process(&buf[..n]);
                        out.raw.extend_from_slice(&buf[..n]);
                    }
                }
            }
            sink.lock().expect("output lock").closed = true;
        });
        Console {
            child,
            master,
            output,
            reader: Some(reader),
            log,
            _home: home,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Type bytes as a keyboard would (`\r` Enter, `\x1b` Esc, `\x1a` ctrl-z...).
    pub fn send(&mut self, keys: &str) {
        self.master
            .write_all(keys.as_bytes())
            .and_then(|()| self.master.flush())
            .expect("write to the pty");
    }

    /// One key, then wait for the screen to show what it should.
    pub fn press(&mut self, keys: &str, what: &str, cond: impl Fn(&Screen) -> bool) -> Screen {
        self.send(keys);
        self.wait_for(what, cond)
    }

    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child's pid.
        check(unsafe { libc::kill(self.pid(), sig) }, "kill").expect("signal caldera");
    }

    pub fn screen(&self) -> Screen {
        let out = self.output.lock().expect("output lock");
        let s = out.parser.screen();
        Screen {
            text: s.contents(),
            alternate: s.alternate_screen(),
            cursor_hidden: s.hide_cursor(),
            title: s.title().to_string(),
        }
    }

    /// Everything written to the terminal so far.
    pub fn raw(&self) -> Vec<u8> {
        self.output.lock().expect("output lock").raw.clone()
    }

    /// Poll the screen until `cond` holds; panic with the screen and the log after
    /// [`TIMEOUT`].
    pub fn wait_for(&mut self, what: &str, cond: impl Fn(&Screen) -> bool) -> Screen {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let screen = self.screen();
            if cond(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                self.fail(&format!("timed out waiting for {what}"));
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // One last look once everything written has been read: the final frame
                // may have landed after the check.
                while !self.output.lock().expect("output lock").closed && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let screen = self.screen();
                if cond(&screen) {
                    return screen;
                }
                self.fail(&format!(
                    "caldera exited ({status}) while waiting for {what}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The terminal's line discipline as the binary left it: `true` when canonical input
    /// and echo are on (not raw mode).
    pub fn cooked(&self) -> bool {
        // SAFETY: a zeroed termios is a valid out-buffer; tcgetattr on our own master
        // reads the settings of the pty pair.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        check(
            unsafe { libc::tcgetattr(self.master.as_raw_fd(), &mut t) },
            "tcgetattr",
        )
        .expect("read the pty's termios");
        t.c_lflag & libc::ICANON != 0 && t.c_lflag & libc::ECHO != 0
    }

    /// Wait for the binary to exit, then for its last output to be read.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => self.fail("caldera did not exit"),
                Err(e) => self.fail(&format!("waiting for caldera: {e}")),
            }
        };
        // The child's end is closed now, so the reader ends at EIO after the last bytes.
        if let Some(reader) = self.reader.take() {
            let deadline = Instant::now() + TIMEOUT;
            while !self.output.lock().expect("output lock").closed {
                if Instant::now() > deadline {
                    self.fail("the pty stayed open after caldera exited");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            reader.join().expect("pty reader");
        }
        status
    }

    /// Whether the process is stopped (state `T` in /proc), e.g. after ctrl-z.
    pub fn stopped(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))
            .ok()
            .and_then(|s| {
                // The state follows the `(comm)` field, which may hold spaces.
                let after = s.rsplit_once(')')?.1.trim_start().chars().next()?;
                Some(after == 'T')
            })
            .unwrap_or(false)
    }

    pub fn wait_until(&mut self, what: &str, cond: impl Fn(&Console) -> bool) {
        let deadline = Instant::now() + TIMEOUT;
        while !cond(self) {
            if Instant::now() > deadline {
                self.fail(&format!("timed out waiting for {what}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The shell's screen is as it was: primary screen, cursor shown, canonical mode with
    /// echo, and the alternate screen's exit is the last one written.
    pub fn assert_restored(&mut self) {
        let screen = self.screen();
        assert!(!screen.alternate, "still on the alternate screen");
        assert!(!screen.cursor_hidden, "cursor left hidden");
        assert!(self.cooked(), "raw mode left on");
        let raw = self.raw();
        let text = String::from_utf8_lossy(&raw);
        let entered = text
            .rfind("\x1b[?1049h")
            .expect("entered the alternate screen");
        let left = text
            .rfind("\x1b[?1049l")
            .expect("left the alternate screen");
        assert!(
            left > entered,
            "the last alternate-screen switch was not the exit"
        );
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    pub fn fail(&mut self, why: &str) -> ! {
        let screen = self.screen();
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let _ = self.child.kill();
        panic!(
            "{why}\n--- screen (alternate: {}) ---\n{}\n--- log tail ---\n{}",
            screen.alternate,
            screen.text,
            tail.join("\n")
        );
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        // A failed test must not leave a console running (SIGCONT first, in case it is
        // stopped).
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(self.pid(), libc::SIGCONT) };
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One look at the emulated terminal.
#[derive(Debug, Clone)]
pub struct Screen {
    pub text: String,
    /// On the alternate screen (the console's), not the shell's.
    pub alternate: bool,
    pub cursor_hidden: bool,
    /// The window title, as set by OSC 0/2 (empty unless something set it).
    #[allow(dead_code)]
    pub title: String,
}

impl Screen {
    pub fn has(&self, needle: &str) -> bool {
        self.text.contains(needle)
    }

    pub fn has_all(&self, needles: &[&str]) -> bool {
        needles.iter().all(|n| self.has(n))
    }

    /// The screen line holding `needle`.
    pub fn line_with(&self, needle: &str) -> Option<&str> {
        self.text.lines().find(|l| l.contains(needle))
    }

    /// Capture group 1.. of the first match of `re`, as numbers.
    pub fn numbers(&self, re: &regex::Regex) -> Option<Vec<u64>> {
        let caps = re.captures(&self.text)?;
        caps.iter()
            .skip(1)
            .map(|m| m.and_then(|m| m.as_str().parse().ok()))
            .collect()
    }
}
