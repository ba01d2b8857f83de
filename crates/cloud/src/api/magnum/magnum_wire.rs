//! Magnum's JSON. Unknown fields are ignored; `uuid` and `name` are required.

use crate::api::time::de_opt_time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// Labels are strings in Magnum, but old clusters carry numbers and booleans too.
fn de_labels<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let raw: Option<BTreeMap<String, serde_json::Value>> = Option::deserialize(d)?;
    Ok(raw
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            (k, v)
        })
        .collect())
}

/// `health_status_reason` is a mapping (`{"api": "ok", "node-0.Ready": "True"}`) in Magnum.
fn de_reason_map<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let raw: Option<serde_json::Value> = Option::deserialize(d)?;
    Ok(match raw {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) if s.is_empty() => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Object(m)) if m.is_empty() => None,
        Some(serde_json::Value::Object(m)) => Some(
            m.iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => format!("{k}: {s}"),
                    other => format!("{k}: {other}"),
                })
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Some(other) => Some(other.to_string()),
    })
}

fn de_opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v: Option<String> = Option::deserialize(d)?;
    Ok(v.filter(|s| !s.is_empty()))
}

#[derive(Debug, Deserialize)]
pub struct ClusterList {
    pub clusters: Vec<ClusterItem>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub next: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ClusterItem {
    pub uuid: String,
    pub name: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub status_reason: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub health_status: Option<String>,
    #[serde(default, deserialize_with = "de_reason_map")]
    pub health_status_reason: Option<String>,
    #[serde(default)]
    pub node_count: Option<u32>,
    #[serde(default)]
    pub master_count: Option<u32>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub cluster_template_id: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub stack_id: Option<String>,
    /// 1.13+: replaces `stack_id` (the Heat stack id, or a Cluster API driver's cluster name).
    #[serde(default, deserialize_with = "de_opt_string")]
    pub cluster_id: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub coe_version: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub api_address: Option<String>,
    #[serde(default, deserialize_with = "de_labels")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "de_opt_time")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "de_opt_time")]
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Deserialize)]
pub struct NodeGroupList {
    pub nodegroups: Vec<NodeGroupItem>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub next: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct NodeGroupItem {
    pub uuid: String,
    pub name: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub cluster_id: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub role: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub flavor_id: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub image_id: Option<String>,
    #[serde(default)]
    pub node_count: Option<u32>,
    #[serde(default)]
    pub min_node_count: Option<u32>,
    #[serde(default)]
    pub max_node_count: Option<u32>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub status_reason: Option<String>,
    #[serde(default)]
    pub is_default: Option<bool>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub stack_id: Option<String>,
    #[serde(default, deserialize_with = "de_labels")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub version: Option<String>,
    /// 1.14+: Kubernetes labels of the group's nodes.
    #[serde(default, deserialize_with = "de_labels")]
    pub node_labels: BTreeMap<String, String>,
    /// 1.14+: Kubernetes taints of the group's nodes, `{key, value, effect}` each.
    #[serde(default, deserialize_with = "de_taints")]
    pub node_taints: Vec<String>,
    #[serde(default, deserialize_with = "de_opt_time")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "de_opt_time")]
    pub updated_at: Option<DateTime<Utc>>,
}

/// Taints as `key=value:Effect` (`key:Effect` without a value); strings are kept as given.
fn de_taints<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let raw: Option<Vec<serde_json::Value>> = Option::deserialize(d)?;
    Ok(raw
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| match t {
            serde_json::Value::String(s) => Some(s),
            serde_json::Value::Object(m) => {
                let get = |k: &str| m.get(k).and_then(|v| v.as_str()).unwrap_or("");
                let key = get("key");
                if key.is_empty() {
                    return None;
                }
                let value = get("value");
                let effect = get("effect");
                let kv = if value.is_empty() {
                    key.to_string()
                } else {
                    format!("{key}={value}")
                };
                Some(if effect.is_empty() {
                    kv
                } else {
                    format!("{kv}:{effect}")
                })
            }
            _ => None,
        })
        .collect())
}

/// `GET /v1/clustertemplates/{id}`: the fields that tell which driver runs its clusters.
#[derive(Debug, Clone, Deserialize)]
pub struct ClusterTemplateItem {
    pub uuid: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub name: Option<String>,
    /// The Magnum driver's entry-point name, where this Magnum shows it.
    #[serde(default, deserialize_with = "de_opt_string")]
    pub driver: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub cluster_distro: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub image_id: Option<String>,
    #[serde(default, deserialize_with = "de_labels")]
    pub labels: BTreeMap<String, String>,
}

/// 202 body of resize/upgrade.
#[derive(Debug, Deserialize)]
pub struct ActionAccepted {
    pub uuid: String,
}
