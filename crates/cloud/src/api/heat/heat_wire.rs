//! Heat's JSON, as serde structs. Unknown fields are ignored (Heat adds fields across releases);
//! fields the console cannot do without are required, so a body missing them is a decode error
//! naming the field rather than a row of blanks.

use crate::api::time::{de_opt_time, de_time};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
pub struct Link {
    pub href: String,
    #[serde(default)]
    pub rel: String,
}

/// The `href` of the link with relation `rel`.
pub fn link<'a>(links: &'a [Link], rel: &str) -> Option<&'a str> {
    links.iter().find(|l| l.rel == rel).map(|l| l.href.as_str())
}

/// Heat sends `""` or `null` for "no value" depending on the field and release.
fn de_opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v: Option<String> = Option::deserialize(d)?;
    Ok(v.filter(|s| !s.is_empty()))
}

fn de_null_vec<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Deserialize)]
pub struct StackList {
    pub stacks: Vec<StackItem>,
    #[serde(default)]
    pub count: Option<u64>,
}

/// A stack in the list, and the common part of a stack show.
#[derive(Debug, Clone, Deserialize)]
pub struct StackItem {
    pub id: String,
    pub stack_name: String,
    pub stack_status: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub stack_status_reason: Option<String>,
    #[serde(default, deserialize_with = "de_opt_time")]
    pub creation_time: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "de_opt_time")]
    pub updated_time: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub parent: Option<String>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub links: Vec<Link>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub tags: Vec<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct StackShow {
    pub stack: StackShowItem,
}

#[derive(Debug, Deserialize)]
pub struct StackShowItem {
    #[serde(flatten)]
    pub item: StackItem,
    #[serde(default)]
    pub parameters: BTreeMap<String, serde_json::Value>,
    /// Absent or without values when shown with `resolve_outputs=false`.
    #[serde(default)]
    pub outputs: Option<Vec<OutputItem>>,
    #[serde(default)]
    pub disable_rollback: Option<bool>,
    #[serde(default)]
    pub timeout_mins: Option<u32>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub template_description: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OutputItem {
    pub output_key: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub description: Option<String>,
    /// Arbitrary JSON by nature (a template decides what an output is).
    #[serde(default)]
    pub output_value: serde_json::Value,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub output_error: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct OutputList {
    pub outputs: Vec<OutputItem>,
}

#[derive(Debug, Deserialize)]
pub struct OutputShow {
    pub output: OutputItem,
}

#[derive(Debug, Deserialize)]
pub struct ResourceList {
    pub resources: Vec<ResourceItem>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResourceItem {
    pub resource_name: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub logical_resource_id: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub physical_resource_id: Option<String>,
    pub resource_type: String,
    pub resource_status: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub resource_status_reason: Option<String>,
    #[serde(default, deserialize_with = "de_opt_time")]
    pub updated_time: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "de_opt_time")]
    pub creation_time: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub required_by: Vec<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub parent_resource: Option<String>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub links: Vec<Link>,
    /// Resolved attributes (only with `with_detail=true`): arbitrary JSON per resource type.
    #[serde(default)]
    pub attributes: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Deserialize)]
pub struct EventList {
    pub events: Vec<EventItem>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EventItem {
    pub id: String,
    #[serde(deserialize_with = "de_time")]
    pub event_time: DateTime<Utc>,
    pub resource_name: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub logical_resource_id: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub physical_resource_id: Option<String>,
    pub resource_status: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub resource_status_reason: Option<String>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub links: Vec<Link>,
}

/// The body of a 201 to `POST /stacks`.
#[derive(Debug, Deserialize)]
pub struct StackCreated {
    pub stack: CreatedRef,
}

#[derive(Debug, Deserialize)]
pub struct CreatedRef {
    pub id: String,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub links: Vec<Link>,
}

#[derive(Debug, Deserialize)]
pub struct PreviewUpdate {
    pub resource_changes: PreviewChangesWire,
}

#[derive(Debug, Default, Deserialize)]
pub struct PreviewChangesWire {
    #[serde(default, deserialize_with = "de_null_vec")]
    pub added: Vec<PreviewResource>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub deleted: Vec<PreviewResource>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub replaced: Vec<PreviewResource>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub unchanged: Vec<PreviewResource>,
    #[serde(default, deserialize_with = "de_null_vec")]
    pub updated: Vec<PreviewResource>,
}

#[derive(Debug, Deserialize)]
pub struct PreviewResource {
    pub resource_name: String,
    #[serde(default)]
    pub resource_type: Option<String>,
}
