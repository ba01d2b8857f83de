//! Heat's software-config API (`heat/api/openstack/v1/software_deployments.py`,
//! `software_configs.py`): reading deployments and configs, and the API's update of a
//! deployment.
//!
//! Two ways a deployment's status changes in Heat 27:
//! - the agent's signal (`HEAT_SIGNAL`: `POST .../resources/{name}/signal`; `CFN_SIGNAL`:
//!   a pre-signed URL; `TEMP_URL_SIGNAL`/`ZAQAR_SIGNAL`: polled by the engine) reaches
//!   `signal_software_deployment`, which works the status out of the outputs:
//!   `deploy_status_code` other than 0 (or an output flagged `error_output`) makes it
//!   `FAILED` with reason "deploy_status_code : Deployment exited with non-zero status code:
//!   N", else `COMPLETE` "Outputs received". It only takes a deployment `IN_PROGRESS`;
//! - the API's update, `PUT /software_deployments/{id}`, takes `status`, `status_reason`,
//!   `output_values` (and `config_id`, `input_values`, `action`) as given, whatever the
//!   current status: what an operator (or a test playing the agent) sends. The deployment
//!   resource polls its row (`_check_complete`), so a `COMPLETE` row completes it and a
//!   `FAILED` one fails it with the row's reason.

use super::heat_client::HeatClient;
use crate::api::http::{decode_json, Response};
use crate::api::time::de_opt_time;
use crate::api_error::ApiResult;
use crate::model::deployment::{config_head, one_line, output_tail, ConfigInput};
use crate::model::{SoftwareConfig, SoftwareDeployment, Status};
use chrono::{DateTime, Utc};
use reqwest::Method;
use serde::{Deserialize, Serialize};

/// The outputs every agent reports (`SOFTWARE_DEPLOYMENT_OUTPUTS` in heat/rpc/api.py).
pub const DEPLOY_STATUS_CODE: &str = "deploy_status_code";
pub const DEPLOY_STDOUT: &str = "deploy_stdout";
pub const DEPLOY_STDERR: &str = "deploy_stderr";

/// Resource types whose physical id is a deployment id (the group forms' members are
/// deployments of their own nested stack).
pub const DEPLOYMENT_TYPES: [&str; 2] = [
    "OS::Heat::SoftwareDeployment",
    "OS::Heat::StructuredDeployment",
];
/// Group types: one deployment resource per server of their `servers` map, in a nested stack.
pub const DEPLOYMENT_GROUP_TYPES: [&str; 2] = [
    "OS::Heat::SoftwareDeploymentGroup",
    "OS::Heat::StructuredDeploymentGroup",
];

/// `PUT /software_deployments/{id}`: what the API's update takes from an operator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeploymentUpdate {
    /// `COMPLETE` or `FAILED` (Heat stores any text; the resource reads these two).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// `deploy_status_code`, `deploy_stdout`, `deploy_stderr` and the config's outputs.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub output_values: serde_json::Map<String, serde_json::Value>,
}

/// `POST /software_configs` (tests and the simulator create configs this way).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigCreate {
    pub name: String,
    pub group: String,
    pub config: String,
    pub inputs: Vec<serde_json::Value>,
    pub outputs: Vec<serde_json::Value>,
}

/// `POST /software_deployments`: a deployment of `config_id` to any server id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeploymentCreate {
    pub config_id: String,
    pub server_id: String,
    pub action: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
}

pub mod wire {
    use super::*;

    #[derive(Debug, Deserialize)]
    pub struct DeploymentList {
        pub software_deployments: Vec<DeploymentItem>,
    }

    #[derive(Debug, Deserialize)]
    pub struct DeploymentShow {
        pub software_deployment: DeploymentItem,
    }

    #[derive(Debug, Clone, Deserialize)]
    pub struct DeploymentItem {
        pub id: String,
        #[serde(default)]
        pub server_id: Option<String>,
        #[serde(default)]
        pub config_id: Option<String>,
        #[serde(default)]
        pub action: Option<String>,
        #[serde(default)]
        pub status: Option<String>,
        #[serde(default)]
        pub status_reason: Option<String>,
        #[serde(default, deserialize_with = "de_opt_time")]
        pub creation_time: Option<DateTime<Utc>>,
        #[serde(default, deserialize_with = "de_opt_time")]
        pub updated_time: Option<DateTime<Utc>>,
        /// Arbitrary JSON per config: read for the `deploy_*` keys only.
        #[serde(default)]
        pub output_values: Option<serde_json::Map<String, serde_json::Value>>,
    }

    #[derive(Debug, Deserialize)]
    pub struct ConfigShow {
        pub software_config: ConfigItem,
    }

    #[derive(Debug, Clone, Deserialize)]
    pub struct ConfigItem {
        pub id: String,
        #[serde(default)]
        pub name: Option<String>,
        #[serde(default)]
        pub group: Option<String>,
        /// A script is a string; a `StructuredConfig`'s body is a map.
        #[serde(default)]
        pub config: serde_json::Value,
        #[serde(default)]
        pub inputs: Option<Vec<IoItem>>,
        #[serde(default)]
        pub outputs: Option<Vec<IoItem>>,
    }

    #[derive(Debug, Clone, Deserialize)]
    pub struct IoItem {
        #[serde(default)]
        pub name: String,
        #[serde(default)]
        pub value: serde_json::Value,
    }
}

/// A JSON value as one short line (a string as itself, anything else as JSON text).
fn value_line(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(one_line(s)),
        other => Some(one_line(&other.to_string())),
    }
}

/// `deploy_status_code`: agents send a number, some a string (`"2"`).
fn status_code(v: Option<&serde_json::Value>) -> Option<i64> {
    match v? {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn output_text(
    values: Option<&serde_json::Map<String, serde_json::Value>>,
    key: &str,
) -> Vec<String> {
    match values.and_then(|m| m.get(key)) {
        Some(serde_json::Value::String(s)) => output_tail(s),
        Some(serde_json::Value::Null) | None => Vec::new(),
        Some(other) => output_tail(&other.to_string()),
    }
}

pub fn deployment_from(d: wire::DeploymentItem) -> SoftwareDeployment {
    let values = d.output_values.as_ref();
    let field = |v: &Option<String>| v.as_deref().map(one_line).unwrap_or_default();
    SoftwareDeployment {
        id: one_line(&d.id),
        server_id: field(&d.server_id),
        config_id: field(&d.config_id),
        status: Status::from_parts(&field(&d.action), &field(&d.status)),
        status_reason: d
            .status_reason
            .as_deref()
            .map(one_line)
            .filter(|s| !s.is_empty()),
        created_at: d.creation_time,
        updated_at: d.updated_time,
        status_code: status_code(values.and_then(|m| m.get(DEPLOY_STATUS_CODE))),
        stdout: output_text(values, DEPLOY_STDOUT),
        stderr: output_text(values, DEPLOY_STDERR),
    }
}

pub fn config_from(c: wire::ConfigItem) -> SoftwareConfig {
    let body = match &c.config {
        serde_json::Value::String(s) => config_head(s),
        serde_json::Value::Null => Vec::new(),
        other => config_head(&other.to_string()),
    };
    SoftwareConfig {
        id: one_line(&c.id),
        name: c.name.as_deref().map(one_line).filter(|s| !s.is_empty()),
        group: c.group.as_deref().map(one_line).unwrap_or_default(),
        inputs: c
            .inputs
            .unwrap_or_default()
            .iter()
            .map(|i| ConfigInput {
                name: one_line(&i.name),
                value: value_line(&i.value),
            })
            .collect(),
        outputs: c
            .outputs
            .unwrap_or_default()
            .iter()
            .map(|o| one_line(&o.name))
            .collect(),
        config: body,
    }
}

/// The body made decodable whatever a script wrote: bytes that are not UTF-8 become U+FFFD
/// (a Heat behind a proxy that passes raw bytes), and so does a `\uD8xx` escape with no
/// partner (Python's `json.dumps` writes a lone surrogate for the `surrogateescape` bytes
/// an agent may keep from undecodable output; serde_json refuses one).
pub fn tolerant_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if !text.contains("\\u") {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest: &str = &text;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let (keep, used) = escape_at(rest);
        out.push_str(keep);
        rest = &rest[used..];
    }
    out.push_str(rest);
    out
}

/// The escape at the start of `s` (which starts with `\`): what to write and how many
/// bytes it used. A lone surrogate escape becomes `\ufffd`; others are kept as they are.
fn escape_at(s: &str) -> (&str, usize) {
    let hex = |at: usize| {
        s.get(at..at + 4)
            .and_then(|h| u16::from_str_radix(h, 16).ok())
    };
    if !s[1..].starts_with('u') {
        // `\\`, `\"`, `\n`...: two bytes (or a lone trailing backslash).
        let used = s.char_indices().nth(2).map_or(s.len(), |(i, _)| i);
        return (&s[..used], used);
    }
    match hex(2) {
        Some(0xD800..=0xDBFF) => {
            let pair = s.get(6..8) == Some("\\u") && matches!(hex(8), Some(0xDC00..=0xDFFF));
            if pair {
                (&s[..12], 12)
            } else {
                ("\\ufffd", 6)
            }
        }
        Some(0xDC00..=0xDFFF) => ("\\ufffd", 6),
        Some(_) => (&s[..6], 6),
        None => (&s[..2], 2),
    }
}

fn decode_tolerant<T: serde::de::DeserializeOwned>(resp: &Response) -> ApiResult<T> {
    let body = tolerant_body(&resp.body);
    decode_json(
        &resp.method,
        &resp.url,
        resp.header("content-type"),
        body.as_bytes(),
    )
}

impl HeatClient {
    /// `GET /software_deployments?server_id=ID`: every deployment to one server (all its
    /// configs and actions; Heat keeps one row per deployment resource).
    pub async fn list_deployments(&self, server_id: &str) -> ApiResult<Vec<SoftwareDeployment>> {
        let mut url = self.url(&["software_deployments"]);
        url.query_pairs_mut().append_pair("server_id", server_id);
        let resp = self
            .transport()
            .get_following(crate::api::http::Request::get(url.as_str()))
            .await?;
        let list: wire::DeploymentList = decode_tolerant(&resp)?;
        Ok(list
            .software_deployments
            .into_iter()
            .map(deployment_from)
            .collect())
    }

    /// `GET /software_deployments/{id}`.
    pub async fn get_deployment(&self, id: &str) -> ApiResult<SoftwareDeployment> {
        let url = self.url(&["software_deployments", id]);
        let resp = self
            .transport()
            .get_following(crate::api::http::Request::get(url.as_str()))
            .await?;
        let show: wire::DeploymentShow = decode_tolerant(&resp)?;
        Ok(deployment_from(show.software_deployment))
    }

    /// `GET /software_configs/{id}` (a deployment's `config_id` is the config Heat derived
    /// for it: the template's config with the `deploy_*` inputs and their values).
    pub async fn get_config(&self, id: &str) -> ApiResult<SoftwareConfig> {
        let url = self.url(&["software_configs", id]);
        let resp = self
            .transport()
            .get_following(crate::api::http::Request::get(url.as_str()))
            .await?;
        let show: wire::ConfigShow = decode_tolerant(&resp)?;
        Ok(config_from(show.software_config))
    }

    /// `PUT /software_deployments/{id}`: the API's update (see the module's note).
    pub async fn update_deployment(
        &self,
        id: &str,
        update: &DeploymentUpdate,
    ) -> ApiResult<SoftwareDeployment> {
        let url = self.url(&["software_deployments", id]);
        let resp = self
            .transport()
            .send_json(Method::PUT, url.as_str(), Some(update))
            .await?;
        let show: wire::DeploymentShow = decode_tolerant(&resp)?;
        Ok(deployment_from(show.software_deployment))
    }

    /// `POST /software_configs`; returns the new config's id.
    pub async fn create_config(&self, create: &ConfigCreate) -> ApiResult<String> {
        let url = self.url(&["software_configs"]);
        let resp = self
            .transport()
            .send_json(Method::POST, url.as_str(), Some(create))
            .await?;
        let show: wire::ConfigShow = decode_tolerant(&resp)?;
        Ok(show.software_config.id)
    }

    /// `POST /software_deployments`; returns the new deployment.
    pub async fn create_deployment(
        &self,
        create: &DeploymentCreate,
    ) -> ApiResult<SoftwareDeployment> {
        let url = self.url(&["software_deployments"]);
        let resp = self
            .transport()
            .send_json(Method::POST, url.as_str(), Some(create))
            .await?;
        let show: wire::DeploymentShow = decode_tolerant(&resp)?;
        Ok(deployment_from(show.software_deployment))
    }
}

/// Fuzzing entry: the deployment and config bodies through the tolerant decoding and the
/// conversion to the model, as a response to a GET would be. Must never panic.
#[cfg(feature = "fuzzing")]
pub fn fuzz_decode(body: &[u8]) {
    let text = tolerant_body(body);
    if let Ok(l) = serde_json::from_str::<wire::DeploymentList>(&text) {
        for d in l.software_deployments {
            std::hint::black_box(deployment_from(d));
        }
    }
    if let Ok(d) = serde_json::from_str::<wire::DeploymentShow>(&text) {
        std::hint::black_box(deployment_from(d.software_deployment));
    }
    if let Ok(c) = serde_json::from_str::<wire::ConfigShow>(&text) {
        std::hint::black_box(config_from(c.software_config));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_and_invalid_bytes_decode() {
        let mut body = br#"{"software_deployment":{"id":"d1","server_id":"s","config_id":"c","action":"CREATE","status":"FAILED","output_values":{"deploy_status_code":"2","deploy_stderr":"bad \udc80 byte\nend \ud83d\ude00 \\udc80 ok","deploy_stdout":"raw "#.to_vec();
        body.extend_from_slice(&[0xff, 0xfe]);
        body.extend_from_slice(br#" bytes"}}}"#);
        let show: wire::DeploymentShow =
            serde_json::from_str(&tolerant_body(&body)).expect("decodes");
        let d = deployment_from(show.software_deployment);
        assert_eq!(d.status_code, Some(2));
        assert_eq!(d.stderr, ["bad \u{fffd} byte", "end \u{1f600} \\udc80 ok"]);
        assert_eq!(d.stdout, ["raw \u{fffd}\u{fffd} bytes"]);
        assert!(d.status.is_failed());
        assert_eq!(d.last_stderr_line(), Some("end \u{1f600} \\udc80 ok"));
    }

    #[test]
    fn a_config_gives_its_transport_and_a_bounded_body() {
        let c = wire::ConfigItem {
            id: "c".into(),
            name: Some("kube_minion_deploy\u{1b}[2J".into()),
            group: Some("script".into()),
            config: serde_json::Value::String("#!/bin/sh\n".repeat(100_000)),
            inputs: Some(vec![
                wire::IoItem {
                    name: "deploy_signal_transport".into(),
                    value: "HEAT_SIGNAL".into(),
                },
                wire::IoItem {
                    name: "deploy_server_id".into(),
                    value: serde_json::Value::Null,
                },
            ]),
            outputs: None,
        };
        let c = config_from(c);
        assert_eq!(c.signal_transport(), Some("HEAT_SIGNAL"));
        assert_eq!(c.name.as_deref(), Some("kube_minion_deploy"));
        assert_eq!(c.input("deploy_server_id"), None);
        assert!(c.config.len() < 1000);
    }
}
