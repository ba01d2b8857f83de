//! Running the real `openstack` CLI (python-openstackclient + heatclient from PyPI, installed
//! into target/osc-venv by scripts/osc-venv.sh) against the simulator or a no-auth Heat.

use crate::sim::SimHandle;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// The CLI to run.
#[derive(Debug, Clone)]
pub struct Osc {
    bin: PathBuf,
}

/// How the CLI reaches the cloud: environment variables and leading arguments.
#[derive(Debug, Clone, Default)]
pub struct OscTarget {
    env: Vec<(String, String)>,
    args: Vec<String>,
}

impl OscTarget {
    /// The simulator through its Keystone, with its fake user (like scripts/osc-against-sim.sh).
    pub fn simulator(h: &SimHandle) -> OscTarget {
        let env = [
            ("OS_AUTH_URL", h.auth_url.clone()),
            ("OS_USERNAME", h.username.clone()),
            ("OS_PASSWORD", h.password.clone()),
            ("OS_PROJECT_NAME", h.project_name.clone()),
            ("OS_USER_DOMAIN_NAME", h.user_domain_name.clone()),
            ("OS_PROJECT_DOMAIN_NAME", h.project_domain_name.clone()),
            ("OS_IDENTITY_API_VERSION", "3".into()),
            ("OS_REGION_NAME", "RegionOne".into()),
            ("OS_INTERFACE", "public".into()),
        ];
        OscTarget {
            env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            args: Vec::new(),
        }
    }

    /// Python flushes each line at once (piped stdout is block-buffered otherwise), so
    /// arrival times measure the CLI, not its buffer.
    pub fn unbuffered(mut self) -> OscTarget {
        self.env.push(("PYTHONUNBUFFERED".into(), "1".into()));
        self
    }

    /// A standalone Heat in no-auth mode: keystoneauth's `none` plugin with the endpoint given
    /// explicitly (verified against Heat 27: `openstack --os-auth-type none --os-endpoint
    /// http://127.0.0.1:8004/v1/admin stack list`).
    pub fn no_auth(heat_url: &str) -> OscTarget {
        OscTarget {
            env: Vec::new(),
            args: vec![
                "--os-auth-type".into(),
                "none".into(),
                "--os-endpoint".into(),
                heat_url.to_string(),
            ],
        }
    }
}

/// One finished CLI run.
#[derive(Debug, Clone)]
pub struct OscRun {
    pub elapsed: Duration,
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Osc {
    pub fn locate(bin: &Path) -> Result<Osc, String> {
        if bin.is_file() {
            Ok(Osc {
                bin: bin.to_path_buf(),
            })
        } else {
            Err(format!(
                "{} not found (install it with scripts/osc-venv.sh, or pass --osc PATH)",
                bin.display()
            ))
        }
    }

    fn command(&self, target: &OscTarget, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        // Only the target's settings: a clouds.yaml or OS_* of the caller must not leak in.
        for (k, _) in std::env::vars() {
            if k.starts_with("OS_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(target.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .args(&target.args)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Runs to completion, timing the whole process (Python start-up included: it is part of
    /// what an operator waits for).
    pub async fn run(&self, target: &OscTarget, args: &[&str]) -> std::io::Result<OscRun> {
        let started = Instant::now();
        let out = self.command(target, args).output().await?;
        Ok(OscRun {
            elapsed: started.elapsed(),
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Starts a long-running command with stdout piped (e.g. `stack event list --follow`).
    pub fn spawn(&self, target: &OscTarget, args: &[&str]) -> std::io::Result<Child> {
        self.command(target, args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    }
}
