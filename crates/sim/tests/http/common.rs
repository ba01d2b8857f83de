use caldera_sim::{self as sim, SimHandle, SimOptions};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

/// Fast options: no output cost, quick members, fast clock.
pub fn fast(scenario: &str) -> SimOptions {
    SimOptions {
        scenario: scenario.into(),
        speed: 20.0,
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        create_median: Duration::from_secs(2),
        update_median: Duration::from_secs(2),
        ..SimOptions::default()
    }
}

pub struct Api {
    pub h: SimHandle,
    pub http: reqwest::Client,
    pub token: String,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

pub async fn password_token(http: &reqwest::Client, h: &SimHandle) -> reqwest::Response {
    let body = json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"name": h.username, "domain": {"name": h.user_domain_name}, "password": h.password}}},
        "scope": {"project": {"name": h.project_name, "domain": {"name": h.project_domain_name}}}
    }});
    http.post(format!("{}/auth/tokens", h.auth_url))
        .json(&body)
        .send()
        .await
        .unwrap()
}

impl Api {
    /// `POST {group}/resources/{member}/signal {"unset_hook": hook}`.
    pub async fn unset_hook(&self, group: &str, member: &str, hook: &str) -> Resp {
        self.call(
            Method::POST,
            &self.heat(&format!("{group}/resources/{member}/signal")),
            Some(json!({ "unset_hook": hook })),
            &[],
        )
        .await
    }

    /// `POST {stack}/actions {"<action>": null}` (cancel_update, check, ...).
    pub async fn stack_action(&self, stack: &str, action: &str) -> Resp {
        self.call(
            Method::POST,
            &self.heat(&format!("{stack}/actions")),
            Some(json!({ action: null })),
            &[],
        )
        .await
    }

    pub async fn start(opts: SimOptions) -> Api {
        let h = sim::start(opts).await.unwrap();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let r = password_token(&http, &h).await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let token = r.headers()["x-subject-token"].to_str().unwrap().to_string();
        Api { h, http, token }
    }

    pub async fn call(
        &self,
        method: Method,
        url: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut rb = self
            .http
            .request(method, url)
            .header("X-Auth-Token", &self.token);
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        let r = rb.send().await.unwrap();
        let status = r.status();
        let headers = r.headers().clone();
        let bytes = r.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, url: &str) -> Resp {
        self.call(Method::GET, url, None, &[]).await
    }

    pub fn heat(&self, path: &str) -> String {
        format!("{}{}", self.h.heat_url(), path)
    }

    pub fn magnum(&self, path: &str) -> String {
        format!("{}{}", self.h.magnum_url(), path)
    }

    pub async fn mget(&self, path: &str) -> Resp {
        self.call(
            Method::GET,
            &self.magnum(path),
            None,
            &[("OpenStack-API-Version", "container-infra 1.12")],
        )
        .await
    }

    /// Resolves a stack name to `name/id` like heatclient, from the 302.
    pub async fn stack_path(&self, name: &str) -> String {
        let r = self.get(&self.heat(&format!("/stacks/{name}"))).await;
        assert_eq!(r.status, StatusCode::FOUND, "{name}: {:?}", r.body);
        let loc = r.headers["location"].to_str().unwrap().to_string();
        loc.strip_prefix(&self.h.heat_url()).unwrap().to_string()
    }

    /// Polls a stack until its status matches.
    pub async fn wait_status(&self, path: &str, want: &str, secs: u64) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let r = self
                .get(&self.heat(&format!("{path}?resolve_outputs=false")))
                .await;
            let st = r.body["stack"]["stack_status"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if st == want {
                return r.body;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{path} stayed {st}, wanted {want}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Creates a standalone node group through `POST /stacks`, waits for it.
    pub async fn create_group(&self, name: &str, count: u32, env: Option<Value>) -> String {
        let mut body = json!({"stack_name": name, "template": {}, "parameters": {"count": count, "image": "img-v1"}});
        if let Some(e) = env {
            body["environment"] = e;
        }
        let r = self
            .call(Method::POST, &self.heat("/stacks"), Some(body), &[])
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        let path = self.stack_path(name).await;
        self.wait_status(&path, "CREATE_COMPLETE", 20).await;
        path
    }

    /// All events of a stack, following markers.
    pub async fn all_events(&self, path: &str, extra: &str, page: usize) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let mut url = self.heat(&format!("{path}/events?limit={page}{extra}"));
            if let Some(m) = &marker {
                url.push_str(&format!("&marker={m}"));
            }
            let r = self.get(&url).await;
            assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
            let evs = r.body["events"].as_array().unwrap().clone();
            let n = evs.len();
            marker = evs.last().map(|e| e["id"].as_str().unwrap().to_string());
            out.extend(evs);
            if n < page {
                return out;
            }
        }
    }
}

impl Api {
    /// Waits until `stack` has at least `n` events with `reason`; returns all its events.
    pub async fn wait_events(&self, stack: &str, reason: &str, n: usize) -> Vec<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let evs = self.all_events(stack, "", 500).await;
            if evs
                .iter()
                .filter(|e| e["resource_status_reason"] == reason)
                .count()
                >= n
            {
                return evs;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{stack}: fewer than {n} '{reason}'"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
