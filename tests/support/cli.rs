//! The `caldera` binary run from a test to its end: a small builder for what it runs with (a
//! home of its own on the built-in simulator, a `clouds.yaml`, a Heat URL, a journal, any
//! other environment and the arguments) and the run's exit code, stdout and stderr.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

/// One `caldera` run, built up before it runs.
pub struct Caldera(Command);

impl Caldera {
    /// `caldera` with the test's own environment.
    pub fn new() -> Caldera {
        Caldera(Command::new(env!("CARGO_BIN_EXE_caldera")))
    }

    /// `caldera --simulator` with a home of its own: an environment of `PATH` only, `HOME`,
    /// `XDG_CONFIG_HOME` and `XDG_STATE_HOME` in `home`, and `home` the working directory.
    pub fn simulator(home: &Path) -> Caldera {
        let mut c = Caldera::new();
        c.0.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_STATE_HOME", home.join("state"))
            .current_dir(home)
            .arg("--simulator");
        c
    }

    /// `caldera` on the `simcloud` cloud of the `clouds` file, its state beside that file.
    pub fn cloud(clouds: &Path) -> Caldera {
        Caldera::new()
            .env("OS_CLIENT_CONFIG_FILE", clouds)
            .env("OS_CLOUD", "simcloud")
            .env("XDG_STATE_HOME", clouds.parent().expect("dir"))
    }

    /// `caldera --heat-url URL`.
    pub fn heat(url: &str) -> Caldera {
        Caldera::new().args(["--heat-url", url])
    }

    /// The journal it writes and the actions file it reads.
    pub fn journal(self, journal: &Path, actions: &Path) -> Caldera {
        self.env("CALDERA_JOURNAL", journal)
            .env("CALDERA_ACTIONS_CONFIG", actions)
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Caldera {
        self.0.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Caldera {
        self.0.env_remove(key);
        self
    }

    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Caldera {
        self.0.args(args);
        self
    }

    /// Stdin not a terminal (nothing to read).
    pub fn no_stdin(mut self) -> Caldera {
        self.0.stdin(Stdio::null());
        self
    }

    /// The command, to spawn (a driver the test stops or reads line by line).
    pub fn command(self) -> Command {
        self.0
    }

    /// Runs it to its end: (exit code, stdout, stderr).
    pub fn run(mut self) -> (Option<i32>, String, String) {
        let o = self.0.output().expect("run caldera");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    /// Runs it to its end: (exited 0, stdout, stderr).
    pub fn run_ok(self) -> (bool, String, String) {
        let (code, out, err) = self.run();
        (code == Some(0), out, err)
    }
}

/// `caldera --simulator ARGS` with a home of its own: (exit code, stdout, stderr).
pub fn simulator(home: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    Caldera::simulator(home).args(args).run()
}

/// `caldera ARGS` on the `simcloud` cloud of the `clouds` file: (exited 0, stdout, stderr).
pub fn on_cloud(clouds: &Path, args: &[&str]) -> (bool, String, String) {
    Caldera::cloud(clouds).args(args).run_ok()
}
