//! The real Keystone (and the Heat behind it) the `tests/real_keystone/` suites drive:
//! where it is, the fixture names and passwords (scripts/keystone_fixtures.py), a token the
//! test itself holds ([`Session`]), running the real `caldera` binary against a clouds.yaml
//! ([`Dir`]), and the secret scan every run goes through ([`assert_no_secrets`]).
//!
//! Every token the test process is issued is remembered ([`tokens_seen`]) so the scan can
//! look for those exact values besides the passwords and anything shaped like a Fernet token.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const DOMAIN: &str = "caldera-ops";
pub const USER: &str = "operator";
pub const PROJECT: &str = "ops";

pub fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

pub fn keystone_url() -> String {
    std::env::var("KEYSTONE_URL").expect(
        "KEYSTONE_URL must point at a real Keystone (scripts/real-keystone-suite.sh starts one)",
    )
}

/// The defaults are scripts/keystone-standalone.sh's.
pub fn operator_password() -> String {
    env_or("KEYSTONE_OPERATOR_PASSWORD", "caldera-operator-Secret-8e2")
}

pub fn admin_password() -> String {
    env_or("KEYSTONE_ADMIN_PASSWORD", "caldera-admin-Secret-5d1")
}

pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000)
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

// ---------------------------------------------------------------- Keystone and Heat directly

/// A token the test itself holds (for fixtures and for checking what caldera did). Tokens
/// live only seconds in the suite, so a 401 logs in again once.
pub struct Session {
    token: std::sync::Mutex<String>,
    auth: Value,
    body: Value,
    http: reqwest::Client,
}

impl Session {
    pub async fn login(http: &reqwest::Client, auth: &Value) -> (String, Value) {
        let resp = http
            .post(format!("{}/v3/auth/tokens", keystone_url()))
            .json(auth)
            .send()
            .await
            .expect("Keystone answers");
        assert_eq!(resp.status().as_u16(), 201, "token for {auth:?}");
        let token = resp
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .expect("X-Subject-Token")
            .to_string();
        remember_token(&token);
        (token, resp.json().await.expect("token body"))
    }

    pub async fn password(
        user: &str,
        user_domain: &str,
        password: &str,
        project: Value,
    ) -> Session {
        let http = reqwest::Client::new();
        let auth = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"name": user_domain}, "password": password}}},
            "scope": {"project": project}
        }});
        let (token, body) = Session::login(&http, &auth).await;
        Session {
            token: std::sync::Mutex::new(token),
            auth,
            body,
            http,
        }
    }

    pub fn token(&self) -> String {
        self.token.lock().expect("token lock").clone()
    }

    pub async fn operator() -> Session {
        Session::password(
            USER,
            DOMAIN,
            &operator_password(),
            json!({"name": PROJECT, "domain": {"name": DOMAIN}}),
        )
        .await
    }

    pub fn user_id(&self) -> String {
        self.body["token"]["user"]["id"]
            .as_str()
            .expect("user id")
            .into()
    }

    pub fn project_id(&self) -> String {
        self.body["token"]["project"]["id"]
            .as_str()
            .expect("project id")
            .into()
    }

    pub fn domain_id(&self) -> String {
        self.body["token"]["user"]["domain"]["id"]
            .as_str()
            .expect("domain id")
            .into()
    }

    /// This token's orchestration endpoint (RegionOne, public).
    pub fn heat_url(&self) -> String {
        let catalog = self.body["token"]["catalog"].as_array().expect("catalog");
        catalog
            .iter()
            .filter(|s| s["type"] == "orchestration")
            .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
            .find(|e| e["interface"] == "public" && e["region_id"] == "RegionOne")
            .and_then(|e| e["url"].as_str().map(str::to_string))
            .expect("orchestration endpoint in RegionOne")
    }

    pub async fn call(&self, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
        for attempt in 0..2 {
            let mut req = self
                .http
                .request(method.clone(), url)
                .header("X-Auth-Token", self.token());
            if let Some(body) = &body {
                req = req.json(body);
            }
            let resp = req.send().await.expect("request");
            let status = resp.status();
            let text = resp.text().await.unwrap_or_default();
            // Heat answers 500 with Keystone's `Unauthorized` when the token it was handed
            // expired while Heat used it (to make the stack's trust): tokens here live 20 s,
            // and a loaded machine gets there. Renewed and sent again, as after a 401.
            let stale = status.as_u16() == 401
                || (status.as_u16() == 500 && text.contains("\"type\": \"Unauthorized\""));
            if stale && attempt == 0 {
                let (token, _) = Session::login(&self.http, &self.auth).await;
                *self.token.lock().expect("token lock") = token;
                continue;
            }
            assert!(status.is_success(), "{method} {url}: {status}: {text}");
            return serde_json::from_str(&text).unwrap_or(Value::Null);
        }
        unreachable!("the loop returns or asserts")
    }

    /// Creates an application credential of this token's user for its project.
    pub async fn application_credential(&self, body: Value) -> Value {
        let url = format!(
            "{}/v3/users/{}/application_credentials",
            keystone_url(),
            self.user_id()
        );
        let out = self
            .call(
                reqwest::Method::POST,
                &url,
                Some(json!({ "application_credential": body })),
            )
            .await;
        out["application_credential"].clone()
    }

    pub async fn create_stack(&self, name: &str, template: Value) -> String {
        let url = format!("{}/stacks", self.heat_url());
        let out = self
            .call(
                reqwest::Method::POST,
                &url,
                Some(json!({"stack_name": name, "template": template})),
            )
            .await;
        out["stack"]["id"].as_str().expect("stack id").into()
    }

    pub async fn wait_stack(&self, name: &str, id: &str, timeout: Duration) -> String {
        let started = Instant::now();
        loop {
            let url = format!("{}/stacks/{name}/{id}", self.heat_url());
            let out = self.call(reqwest::Method::GET, &url, None).await;
            let status = out["stack"]["stack_status"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if !status.ends_with("IN_PROGRESS") {
                return status;
            }
            assert!(started.elapsed() < timeout, "{name} still {status}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

pub fn quick_template() -> Value {
    json!({"heat_template_version": "2018-08-31",
           "resources": {"r": {"type": "OS::Heat::RandomString"}}})
}

// ---------------------------------------------------------------- running caldera

pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
    pub log: String,
}

/// A temporary directory holding clouds.yaml (and what else a case writes).
pub struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path().join(name);
        std::fs::write(&path, text).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        path
    }

    /// Runs `caldera ARGS` with this directory's clouds.yaml as OS_CLIENT_CONFIG_FILE and as
    /// working directory (so a secure.yaml here is found by discovery), and checks that no
    /// secret reached its output or log.
    pub async fn caldera(&self, args: &[&str], secrets: &[String]) -> Run {
        self.caldera_env(args, &[], secrets).await
    }

    /// [`Dir::caldera`] with extra environment variables.
    pub async fn caldera_env(
        &self,
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
        secrets: &[String],
    ) -> Run {
        let log = self.path().join(format!("{}.log", unique("caldera")));
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_caldera"));
        cmd.args(args)
            .arg("--log-file")
            .arg(&log)
            .current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env("OS_CLIENT_CONFIG_FILE", self.path().join("clouds.yaml"))
            .env("RUST_LOG", "debug")
            .envs(env.iter().copied())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(240), cmd.output())
            .await
            .expect("caldera finishes in time")
            .expect("the binary runs");
        let run = Run {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            log: std::fs::read_to_string(&log).unwrap_or_default(),
        };
        let what = format!("caldera {args:?}");
        assert_no_secrets(&format!("{what}: stdout"), &run.stdout, secrets);
        assert_no_secrets(&format!("{what}: stderr"), &run.stderr, secrets);
        assert_no_secrets(&format!("{what}: log"), &run.log, secrets);
        run
    }
}

// ---------------------------------------------------------------- secrets

/// Every token Keystone issued to this test process (the X-Subject-Token values it saw).
static TOKENS_SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn remember_token(token: &str) {
    TOKENS_SEEN
        .lock()
        .expect("tokens lock")
        .push(token.to_string());
}

pub fn tokens_seen() -> Vec<String> {
    TOKENS_SEEN.lock().expect("tokens lock").clone()
}

/// Panics if `text` (caldera's output, log, journal or screen, named by `what`) holds a
/// fixture password, one of `secrets` (application-credential secrets, ...), a token this
/// test was issued, or anything shaped like a Fernet token: base64url of a version byte 0x80,
/// always `gAAAAA...`. Only a prefix of the secret is printed.
pub fn assert_no_secrets(what: &str, text: &str, secrets: &[String]) {
    let mut all = vec![operator_password(), admin_password()];
    all.extend(secrets.iter().cloned());
    all.extend(tokens_seen());
    for s in all.iter().filter(|s| !s.is_empty()) {
        assert!(
            !text.contains(s.as_str()),
            "{what} holds a secret ({}...)",
            &s[..4.min(s.len())]
        );
    }
    assert!(!text.contains("gAAAAA"), "{what} holds a token");
}

/// One cloud's YAML: `auth` lines (already indented by the caller) plus extras.
pub fn cloud(name: &str, auth: &str, extra: &str) -> String {
    format!(
        "  {name}:\n    auth:\n      auth_url: {url}\n{auth}{extra}",
        url = keystone_url()
    )
}

pub fn clouds(entries: &[String]) -> String {
    format!("clouds:\n{}", entries.concat())
}

pub fn password_auth(user_domain: &str, project: &str) -> String {
    format!(
        "      username: {USER}\n      password: {pw}\n{user_domain}{project}",
        pw = operator_password()
    )
}

/// The URLs of the Heat requests caldera made, from its debug log.
pub fn heat_hosts(log: &str) -> Vec<String> {
    let mut hosts: Vec<String> = log
        .lines()
        .filter(|l| l.contains("/v1/") && l.contains("http"))
        .filter_map(|l| {
            let start = l.find("http://")?;
            let rest = &l[start + 7..];
            Some(rest[..rest.find('/')?].to_string())
        })
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// The operator's cloud as most cases write it: password auth, user and project in
/// caldera-ops, RegionOne public.
pub fn operator_cloud(name: &str) -> String {
    cloud(
        name,
        &password_auth(
            "      user_domain_name: caldera-ops\n",
            "      project_name: ops\n      project_domain_name: caldera-ops\n",
        ),
        "",
    )
}
