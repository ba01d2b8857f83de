//! `HeatClient`: typed calls to the orchestration API over `{heat_base}` = `.../v1/{project}`.
//!
//! Stacks are addressed by [`StackRef`] (`name/id`) everywhere: Heat redirects name-only URLs,
//! and some (output show) answer 404 to a name alone, so names are resolved once with
//! [`HeatClient::resolve`].

use super::heat_wire::{self as wire, link};
use super::hooks_env::EnvironmentHooks;
use crate::api::http::{Redirect, Request, Transport};
use crate::api_error::{ApiError, ApiResult};
use crate::fetch::{paginate, Page};
use crate::model::{StackEvent, StackRef, StackResource, StackSummary, Status};
use chrono::{DateTime, Utc};
use futures::Stream;
use reqwest::Method;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use url::Url;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortDir {
    Asc,
    Desc,
}

impl SortDir {
    fn as_str(self) -> &'static str {
        match self {
            SortDir::Asc => "asc",
            SortDir::Desc => "desc",
        }
    }
}

/// Parameters of `GET /stacks`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackListQuery {
    /// Page size (Heat has no server maximum). `list_stacks` uses 100 when unset.
    pub limit: Option<u32>,
    /// `stack_name`, `stack_status`, `creation_time`, `updated_time`.
    pub sort_keys: Vec<String>,
    pub sort_dir: Option<SortDir>,
    /// Repeatable filters: `id`, `status`, `name`, `action`, `tenant`, `username`, `owner_id`.
    pub filters: Vec<(String, String)>,
    pub show_nested: bool,
    pub show_hidden: bool,
    pub with_count: bool,
    pub tags: Vec<String>,
    pub tags_any: Vec<String>,
    pub not_tags: Vec<String>,
    pub not_tags_any: Vec<String>,
    pub global_tenant: bool,
}

/// Parameters of `GET .../resources`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResourceQuery {
    pub nested_depth: Option<u32>,
    pub with_detail: bool,
    /// Repeatable: `type`, `status`, `name`, `action`, `id`, `physical_resource_id`.
    pub filters: Vec<(String, String)>,
}

/// Parameters of `GET .../events`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventQuery {
    pub limit: Option<u32>,
    pub marker: Option<String>,
    /// `event_time`, `resource_type`.
    pub sort_keys: Vec<String>,
    pub sort_dir: Option<SortDir>,
    pub nested_depth: Option<u32>,
    /// `resource_status`, `resource_action`, `resource_name`, `resource_type`.
    pub filters: Vec<(String, String)>,
}

/// A stack as `stack show` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct StackDetail {
    pub summary: StackSummary,
    pub description: Option<String>,
    /// Parameter values as Heat reports them (strings; JSON text for structured values).
    pub parameters: BTreeMap<String, String>,
    /// Present when shown with outputs resolved.
    pub outputs: Option<Vec<OutputValue>>,
    pub disable_rollback: Option<bool>,
    pub timeout_mins: Option<u32>,
    pub tags: Vec<String>,
    /// `self` link and friends, as `(rel, href)`.
    pub links: Vec<(String, String)>,
}

/// One output of a stack. The value is arbitrary JSON (a template decides its shape); it stays
/// inside the API layer's users that know the template.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputValue {
    pub key: String,
    pub description: Option<String>,
    pub value: serde_json::Value,
    /// Heat could not resolve the output (e.g. an attribute of a failed resource).
    pub error: Option<String>,
}

/// An output's key and description, as `GET .../outputs` lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputInfo {
    pub key: String,
    pub description: Option<String>,
}

/// A resource with its resolved attributes (only when listed `with_detail`).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    pub resource: StackResource,
    pub created_at: Option<DateTime<Utc>>,
    pub attributes: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `POST /stacks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StackCreate {
    #[serde(rename = "stack_name")]
    pub name: String,
    /// The template as JSON (YAML templates parse into the same shape).
    pub template: serde_json::Value,
    /// Files the template refers to (nested templates), by the name used in the template.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_mins: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_rollback: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "ser_tags")]
    pub tags: Vec<String>,
}

/// `PUT` (replace) or `PATCH` (`existing`: omitted fields keep their values) of a stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StackUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clear_parameters: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_mins: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_rollback: Option<bool>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_tags"
    )]
    pub tags: Option<Vec<String>>,
    /// PATCH instead of PUT. Not part of the body.
    #[serde(skip)]
    pub existing: bool,
}

fn ser_tags<S: serde::Serializer>(tags: &[String], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&tags.join(","))
}

fn ser_opt_tags<S: serde::Serializer>(tags: &Option<Vec<String>>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&tags.as_deref().unwrap_or_default().join(","))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackAction {
    Suspend,
    Resume,
    Check,
    /// Cancel an update and roll back.
    CancelUpdate,
    CancelWithoutRollback,
}

impl StackAction {
    pub fn key(self) -> &'static str {
        match self {
            StackAction::Suspend => "suspend",
            StackAction::Resume => "resume",
            StackAction::Check => "check",
            StackAction::CancelUpdate => "cancel_update",
            StackAction::CancelWithoutRollback => "cancel_without_rollback",
        }
    }
}

/// What an update would do, by resource name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreviewChanges {
    pub added: Vec<String>,
    pub deleted: Vec<String>,
    pub replaced: Vec<String>,
    pub unchanged: Vec<String>,
    pub updated: Vec<String>,
}

#[derive(Clone)]
pub struct HeatClient {
    transport: Transport,
    base: Url,
    /// Whether each stack whose events were read with `nested_depth` is a root (has no
    /// parent): see [`HeatClient::list_events_page`]. A stack never changes parent, so
    /// what is learned stays true; the map is emptied past [`ROOTS_KEPT`] stacks.
    roots: Arc<Mutex<HashMap<String, bool>>>,
}

/// Stacks whose root-ness a client remembers before it forgets them all and learns again.
const ROOTS_KEPT: usize = 4096;

/// Page size of `list_stacks` when the query sets none.
pub const DEFAULT_STACK_PAGE: u32 = 100;

/// `.../stacks/{name}/{id}` in a link → `StackRef`.
pub fn stack_ref_from_href(href: &str) -> Option<StackRef> {
    let url = Url::parse(href).ok()?;
    let segs: Vec<&str> = url.path_segments()?.collect();
    let pos = segs.iter().rposition(|s| *s == "stacks")?;
    let name = segs.get(pos + 1)?;
    let id = segs.get(pos + 2)?;
    if name.is_empty() || id.is_empty() {
        return None;
    }
    Some(StackRef {
        name: decode_segment(name),
        id: decode_segment(id),
    })
}

fn decode_segment(s: &str) -> String {
    // Stack names are `[a-zA-Z][a-zA-Z0-9_.-]*`, but decode %XX anyway in case a server encodes.
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_string())
}

fn summary_from(item: &wire::StackItem) -> StackSummary {
    StackSummary {
        stack: StackRef {
            name: item.stack_name.clone(),
            id: item.id.clone(),
        },
        status: Status::parse(&item.stack_status),
        status_reason: item.stack_status_reason.clone(),
        created_at: item.creation_time,
        updated_at: item.updated_time,
        parent: item.parent.clone(),
    }
}

fn output_from(o: wire::OutputItem) -> OutputValue {
    OutputValue {
        key: o.output_key,
        description: o.description,
        value: o.output_value,
        error: o.output_error,
    }
}

fn resource_from(r: wire::ResourceItem) -> ResourceInfo {
    let owner = link(&r.links, "stack").and_then(stack_ref_from_href);
    let nested = link(&r.links, "nested").and_then(stack_ref_from_href);
    ResourceInfo {
        resource: StackResource {
            logical_id: r
                .logical_resource_id
                .unwrap_or_else(|| r.resource_name.clone()),
            name: r.resource_name,
            physical_id: r.physical_resource_id,
            resource_type: r.resource_type,
            status: Status::parse(&r.resource_status),
            status_reason: r.resource_status_reason,
            updated_at: r.updated_time.or(r.creation_time),
            owner,
            nested,
            parent_resource: r.parent_resource,
            required_by: r.required_by,
        },
        created_at: r.creation_time,
        attributes: r.attributes,
    }
}

fn event_from(e: wire::EventItem) -> StackEvent {
    StackEvent {
        stack: link(&e.links, "stack").and_then(stack_ref_from_href),
        logical_id: e
            .logical_resource_id
            .unwrap_or_else(|| e.resource_name.clone()),
        id: e.id,
        time: e.event_time,
        resource_name: e.resource_name,
        physical_id: e.physical_resource_id,
        status: Status::parse(&e.resource_status),
        status_reason: e.resource_status_reason,
        path: Vec::new(),
    }
}

fn param_text(v: serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl HeatClient {
    /// `heat_base` is the orchestration endpoint including `/v1/{project_id}`.
    pub fn new(transport: Transport, heat_base: &str) -> ApiResult<HeatClient> {
        let base = Url::parse(heat_base.trim_end_matches('/')).map_err(|e| {
            ApiError::Config(crate::config::ConfigError::Invalid(format!(
                "Heat endpoint '{heat_base}' is not a URL: {e}"
            )))
        })?;
        if base.cannot_be_a_base() {
            return Err(ApiError::Config(crate::config::ConfigError::Invalid(
                format!("Heat endpoint '{heat_base}' is not an http(s) URL"),
            )));
        }
        Ok(HeatClient {
            transport,
            base,
            roots: Arc::default(),
        })
    }

    pub fn base(&self) -> &str {
        self.base.as_str()
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// `{base}/seg/seg...` with each segment percent-encoded here: the `url` crate's own
    /// segment encoding drops tabs, CRs and LFs (WHATWG), and a resource named with a CR
    /// must reach that resource, not another one.
    pub(super) fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        let mut path = url.path().trim_end_matches('/').to_string();
        for seg in segments {
            path.push('/');
            encode_segment(seg, &mut path);
        }
        url.set_path(&path);
        url
    }

    fn stack_url(&self, stack: &StackRef, rest: &[&str]) -> Url {
        let mut segs = vec!["stacks", stack.name.as_str(), stack.id.as_str()];
        segs.extend_from_slice(rest);
        self.url(&segs)
    }

    // ---- reads ----

    /// One page of `GET /stacks`.
    pub async fn list_stacks_page(
        &self,
        query: &StackListQuery,
        marker: Option<&str>,
    ) -> ApiResult<Page<StackSummary>> {
        let mut url = self.url(&["stacks"]);
        {
            let mut q = url.query_pairs_mut();
            if let Some(limit) = query.limit {
                q.append_pair("limit", &limit.to_string());
            }
            if let Some(marker) = marker {
                q.append_pair("marker", marker);
            }
            for k in &query.sort_keys {
                q.append_pair("sort_keys", k);
            }
            if let Some(dir) = query.sort_dir {
                q.append_pair("sort_dir", dir.as_str());
            }
            for (k, v) in &query.filters {
                q.append_pair(k, v);
            }
            for (flag, key) in [
                (query.show_nested, "show_nested"),
                (query.show_hidden, "show_hidden"),
                (query.with_count, "with_count"),
                (query.global_tenant, "global_tenant"),
            ] {
                if flag {
                    q.append_pair(key, "true");
                }
            }
            for (tags, key) in [
                (&query.tags, "tags"),
                (&query.tags_any, "tags_any"),
                (&query.not_tags, "not_tags"),
                (&query.not_tags_any, "not_tags_any"),
            ] {
                if !tags.is_empty() {
                    q.append_pair(key, &tags.join(","));
                }
            }
        }
        let list: wire::StackList = self.transport.get_json(url.as_str()).await?;
        let items: Vec<StackSummary> = list.stacks.iter().map(summary_from).collect();
        let mut page = Page::by_marker(items, query.limit.map(|l| l as usize), |s| {
            s.stack.id.clone()
        });
        page.total = list.count;
        Ok(page)
    }

    /// Every stack matching `query`, page by page (marker = last stack id).
    pub fn list_stacks(
        &self,
        query: StackListQuery,
    ) -> impl Stream<Item = ApiResult<StackSummary>> + Send + 'static {
        let client = self.clone();
        let mut query = query;
        query.limit.get_or_insert(DEFAULT_STACK_PAGE);
        paginate(move |marker| {
            let client = client.clone();
            let query = query.clone();
            async move { client.list_stacks_page(&query, marker.as_deref()).await }
        })
    }

    /// Name or id → `name/id`, reading the redirect Heat answers `GET /stacks/{name}` with.
    pub async fn resolve(&self, name_or_id: &str) -> ApiResult<StackRef> {
        let url = self.url(&["stacks", name_or_id]);
        let bad = |detail: String| ApiError::Decode {
            method: Method::GET,
            url: url.to_string(),
            detail,
        };
        match self.transport.get_redirect_location(url.as_str()).await? {
            Redirect::Location(location) => stack_ref_from_href(&location)
                .ok_or_else(|| bad(format!("redirect to '{location}' does not name a stack"))),
            Redirect::Direct(resp) => {
                let show: wire::StackShow = resp.json()?;
                Ok(StackRef {
                    name: show.stack.item.stack_name,
                    id: show.stack.item.id,
                })
            }
        }
    }

    /// `GET /stacks/{name}/{id}`. Resolving outputs evaluates every output, which on a large
    /// stack is the slow call; pass `false` unless the outputs are needed.
    pub async fn get_stack(
        &self,
        stack: &StackRef,
        resolve_outputs: bool,
    ) -> ApiResult<StackDetail> {
        let mut url = self.stack_url(stack, &[]);
        let mut req = Request::get(url.as_str());
        if !resolve_outputs {
            url.query_pairs_mut()
                .append_pair("resolve_outputs", "false");
            req = Request::get(url.as_str());
        } else {
            // Measured: 10 s for 200 members on first show; allow well beyond the default.
            req = req.timeout(Duration::from_secs(300));
        }
        let (show, _): (wire::StackShow, _) = self.transport.get_json_with(req).await?;
        let s = show.stack;
        Ok(StackDetail {
            summary: summary_from(&s.item),
            description: s.item.description.clone().or(s.template_description),
            parameters: s
                .parameters
                .into_iter()
                .map(|(k, v)| (k, param_text(v)))
                .collect(),
            outputs: if resolve_outputs {
                s.outputs.map(|o| o.into_iter().map(output_from).collect())
            } else {
                None
            },
            disable_rollback: s.disable_rollback,
            timeout_mins: s.timeout_mins,
            tags: s.item.tags.clone(),
            links: s
                .item
                .links
                .iter()
                .map(|l| (l.rel.clone(), l.href.clone()))
                .collect(),
        })
    }

    /// `GET .../template`: the template as Heat holds it (YAML templates come back as JSON),
    /// so structure (outputs and their `get_attr` expressions, resource types) can be read
    /// without resolving anything.
    pub async fn get_template(&self, stack: &StackRef) -> ApiResult<serde_json::Value> {
        let url = self.stack_url(stack, &["template"]);
        self.transport.get_json(url.as_str()).await
    }

    /// `GET .../environment`: the stack's stored environment as Heat answers it (hidden
    /// parameters as `******`), for showing and comparing whole.
    pub async fn get_environment(&self, stack: &StackRef) -> ApiResult<serde_json::Value> {
        let url = self.stack_url(stack, &["environment"]);
        self.transport.get_json(url.as_str()).await
    }

    /// `GET .../environment`, keeping only the hooks it declares by resource path (see
    /// [`super::hooks_env`]): what says a member may be held once its pause event is purged.
    pub async fn get_environment_hooks(&self, stack: &StackRef) -> ApiResult<EnvironmentHooks> {
        let url = self.stack_url(stack, &["environment"]);
        self.transport.get_json(url.as_str()).await
    }

    /// Output keys and descriptions, without evaluating any output.
    pub async fn list_outputs(&self, stack: &StackRef) -> ApiResult<Vec<OutputInfo>> {
        let url = self.stack_url(stack, &["outputs"]);
        let list: wire::OutputList = self.transport.get_json(url.as_str()).await?;
        Ok(list
            .outputs
            .into_iter()
            .map(|o| OutputInfo {
                key: o.output_key,
                description: o.description,
            })
            .collect())
    }

    /// Evaluates one output.
    pub async fn show_output(&self, stack: &StackRef, key: &str) -> ApiResult<OutputValue> {
        let url = self.stack_url(stack, &["outputs", key]);
        let show: wire::OutputShow = self.transport.get_json(url.as_str()).await?;
        Ok(output_from(show.output))
    }

    pub async fn list_resources(
        &self,
        stack: &StackRef,
        query: &ResourceQuery,
    ) -> ApiResult<Vec<ResourceInfo>> {
        let mut url = self.stack_url(stack, &["resources"]);
        {
            let mut q = url.query_pairs_mut();
            if let Some(depth) = query.nested_depth {
                q.append_pair("nested_depth", &depth.to_string());
            }
            if query.with_detail {
                q.append_pair("with_detail", "true");
            }
            for (k, v) in &query.filters {
                q.append_pair(k, v);
            }
        }
        let req = Request::get(url.as_str()).timeout(Duration::from_secs(300));
        let (list, _): (wire::ResourceList, _) = self.transport.get_json_with(req).await?;
        Ok(list.resources.into_iter().map(resource_from).collect())
    }

    /// `GET .../resources/{name}` (with attributes).
    pub async fn get_resource(&self, stack: &StackRef, resource: &str) -> ApiResult<ResourceInfo> {
        #[derive(serde::Deserialize)]
        struct Show {
            resource: wire::ResourceItem,
        }
        let url = self.stack_url(stack, &["resources", resource]);
        let show: Show = self.transport.get_json(url.as_str()).await?;
        Ok(resource_from(show.resource))
    }

    /// `GET .../resources/{name}/metadata`: the resource's metadata (`{"metadata": {...}}`),
    /// what software deployments and signals write there; arbitrary JSON.
    pub async fn get_resource_metadata(
        &self,
        stack: &StackRef,
        resource: &str,
    ) -> ApiResult<serde_json::Value> {
        #[derive(serde::Deserialize)]
        struct Show {
            #[serde(default)]
            metadata: serde_json::Value,
        }
        let url = self.stack_url(stack, &["resources", resource, "metadata"]);
        let show: Show = self.transport.get_json(url.as_str()).await?;
        Ok(show.metadata)
    }

    fn events_url(&self, mut url: Url, query: &EventQuery) -> Url {
        {
            let mut q = url.query_pairs_mut();
            if let Some(limit) = query.limit {
                q.append_pair("limit", &limit.to_string());
            }
            if let Some(marker) = &query.marker {
                q.append_pair("marker", marker);
            }
            for k in &query.sort_keys {
                q.append_pair("sort_keys", k);
            }
            if let Some(dir) = query.sort_dir {
                q.append_pair("sort_dir", dir.as_str());
            }
            if let Some(depth) = query.nested_depth {
                q.append_pair("nested_depth", &depth.to_string());
            }
            for (k, v) in &query.filters {
                q.append_pair(k, v);
            }
        }
        url
    }

    /// One page of a stack's events (`path` left empty; the caller knows the tree).
    ///
    /// Heat lists nested events from a root stack only: with `nested_depth` it takes the
    /// stacks whose resources carry this stack as their `root_stack_id`, at absolute depths
    /// 0..=n (`list_events` in heat/engine/service.py), which for a nested stack (Magnum's
    /// `kube_minions` group, a drilled-into member) is none: no events at all, where the
    /// same stack without `nested_depth` lists its own. So a nested stack's events are read
    /// without it: its own events, which hold its members' (the members are its resources);
    /// what happens inside a member shows in that member's own stack. Whether a stack is a
    /// root is learned once, from its `parent` (one stack show).
    pub async fn list_events_page(
        &self,
        stack: &StackRef,
        query: &EventQuery,
    ) -> ApiResult<Vec<StackEvent>> {
        let own;
        let query = match query.nested_depth {
            Some(d) if d > 0 && !self.is_root(stack).await => {
                own = EventQuery {
                    nested_depth: None,
                    ..query.clone()
                };
                &own
            }
            _ => query,
        };
        let url = self.events_url(self.stack_url(stack, &["events"]), query);
        let list: wire::EventList = self.transport.get_json(url.as_str()).await?;
        Ok(list.events.into_iter().map(event_from).collect())
    }

    /// Whether `stack` has no parent, learned once per stack (see `list_events_page`). A
    /// stack that cannot be shown (deleted: Heat still lists its events; or a failed read)
    /// is taken for a root this time, which reads its events as before, and asked again.
    async fn is_root(&self, stack: &StackRef) -> bool {
        let known = self
            .roots
            .lock()
            .ok()
            .and_then(|m| m.get(&stack.id).copied());
        if let Some(root) = known {
            return root;
        }
        let root = match self.get_stack(stack, false).await {
            Ok(detail) => detail.summary.parent.is_none(),
            Err(e) => {
                tracing::debug!(stack = %stack.name, "parent unknown ({e}): read as a root");
                return true;
            }
        };
        if let Ok(mut m) = self.roots.lock() {
            if m.len() >= ROOTS_KEPT {
                m.clear();
            }
            m.insert(stack.id.clone(), root);
        }
        if !root {
            tracing::info!(
                stack = %stack.name,
                "a nested stack: its own events are read (Heat lists nested events from a root only)"
            );
        }
        root
    }

    /// All events of a stack matching `query`, page by page (marker = last event id).
    pub fn list_events(
        &self,
        stack: StackRef,
        query: EventQuery,
    ) -> impl Stream<Item = ApiResult<StackEvent>> + Send + 'static {
        let client = self.clone();
        let mut query = query;
        query.limit.get_or_insert(DEFAULT_STACK_PAGE);
        let first_marker = query.marker.clone();
        let mut first = true;
        paginate(move |marker| {
            let client = client.clone();
            let mut query = query.clone();
            let stack = stack.clone();
            query.marker = if std::mem::take(&mut first) {
                first_marker.clone()
            } else {
                marker
            };
            async move {
                let limit = query.limit.map(|l| l as usize);
                let events = client.list_events_page(&stack, &query).await?;
                Ok(Page::by_marker(events, limit, |e| e.id.clone()))
            }
        })
    }

    /// Events of one resource.
    pub async fn resource_events(
        &self,
        stack: &StackRef,
        resource: &str,
        query: &EventQuery,
    ) -> ApiResult<Vec<StackEvent>> {
        let url = self.events_url(
            self.stack_url(stack, &["resources", resource, "events"]),
            query,
        );
        let list: wire::EventList = self.transport.get_json(url.as_str()).await?;
        Ok(list.events.into_iter().map(event_from).collect())
    }

    // ---- writes (never retried automatically) ----

    pub async fn create_stack(&self, create: &StackCreate) -> ApiResult<StackRef> {
        let url = self.url(&["stacks"]);
        let resp = self
            .transport
            .send_json(Method::POST, url.as_str(), Some(create))
            .await?;
        let created: wire::StackCreated = resp.json()?;
        Ok(StackRef {
            name: create.name.clone(),
            id: created.stack.id,
        })
    }

    pub async fn update_stack(&self, stack: &StackRef, update: &StackUpdate) -> ApiResult<()> {
        let method = if update.existing {
            Method::PATCH
        } else {
            Method::PUT
        };
        let url = self.stack_url(stack, &[]);
        self.transport
            .send_json(method, url.as_str(), Some(update))
            .await?;
        Ok(())
    }

    /// What `update_stack` would change, without changing anything.
    pub async fn preview_update(
        &self,
        stack: &StackRef,
        update: &StackUpdate,
    ) -> ApiResult<PreviewChanges> {
        let method = if update.existing {
            Method::PATCH
        } else {
            Method::PUT
        };
        let url = self.stack_url(stack, &["preview"]);
        let resp = self
            .transport
            .send_json(method, url.as_str(), Some(update))
            .await?;
        let preview: wire::PreviewUpdate = resp.json()?;
        // Heat builds these lists from sets (heat/engine/update.py, `preview`): their order
        // changes from one engine process to the next, so they are sorted.
        let names = |v: Vec<wire::PreviewResource>| {
            let mut names: Vec<String> = v.into_iter().map(|r| r.resource_name).collect();
            names.sort();
            names
        };
        let c = preview.resource_changes;
        Ok(PreviewChanges {
            added: names(c.added),
            deleted: names(c.deleted),
            replaced: names(c.replaced),
            unchanged: names(c.unchanged),
            updated: names(c.updated),
        })
    }

    pub async fn delete_stack(&self, stack: &StackRef) -> ApiResult<()> {
        let url = self.stack_url(stack, &[]);
        self.transport
            .send_json::<()>(Method::DELETE, url.as_str(), None)
            .await?;
        Ok(())
    }

    pub async fn action(&self, stack: &StackRef, action: StackAction) -> ApiResult<()> {
        let url = self.stack_url(stack, &["actions"]);
        let body = serde_json::json!({ action.key(): null });
        self.transport
            .send_json(Method::POST, url.as_str(), Some(&body))
            .await?;
        Ok(())
    }

    /// `POST .../resources/{resource}/signal` with an arbitrary signal body.
    pub async fn signal(
        &self,
        stack: &StackRef,
        resource: &str,
        body: &serde_json::Value,
    ) -> ApiResult<()> {
        let url = self.stack_url(stack, &["resources", resource, "signal"]);
        self.transport
            .send_json(Method::POST, url.as_str(), Some(body))
            .await?;
        Ok(())
    }

    /// Clears a hook (`pre-update`, ...) on `resource` of `stack` — the stack that owns the
    /// resource, i.e. the nested stack for a ResourceGroup member.
    pub async fn unset_hook(&self, stack: &StackRef, resource: &str, hook: &str) -> ApiResult<()> {
        self.signal(stack, resource, &serde_json::json!({ "unset_hook": hook }))
            .await
    }

    pub async fn mark_unhealthy(
        &self,
        stack: &StackRef,
        resource: &str,
        unhealthy: bool,
        reason: &str,
    ) -> ApiResult<()> {
        let url = self.stack_url(stack, &["resources", resource]);
        let body = serde_json::json!({
            "mark_unhealthy": unhealthy,
            "resource_status_reason": reason,
        });
        self.transport
            .send_json(Method::PATCH, url.as_str(), Some(&body))
            .await?;
        Ok(())
    }
}

/// Fuzzing entry: every Heat body this client decodes, through the decoder and the
/// conversion to the model, as a response to a GET would be. Must never panic.
#[cfg(feature = "fuzzing")]
pub fn fuzz_decode(body: &[u8]) {
    use crate::api::http::decode_json;
    let m = Method::GET;
    let u = "http://fuzz/v1/p/stacks";
    let ct = Some("application/json");
    if let Ok(l) = decode_json::<wire::StackList>(&m, u, ct, body) {
        for item in &l.stacks {
            std::hint::black_box(summary_from(item));
        }
    }
    if let Ok(s) = decode_json::<wire::StackShow>(&m, u, ct, body) {
        let _ = summary_from(&s.stack.item);
        for o in s.stack.outputs.unwrap_or_default() {
            std::hint::black_box(output_from(o));
        }
    }
    if let Ok(o) = decode_json::<wire::OutputShow>(&m, u, ct, body) {
        let _ = output_from(o.output);
    }
    let _ = decode_json::<wire::OutputList>(&m, u, ct, body);
    if let Ok(l) = decode_json::<wire::ResourceList>(&m, u, ct, body) {
        for r in l.resources {
            std::hint::black_box(resource_from(r));
        }
    }
    if let Ok(l) = decode_json::<wire::EventList>(&m, u, ct, body) {
        for e in l.events {
            std::hint::black_box(event_from(e));
        }
    }
    if let Ok(env) = decode_json::<EnvironmentHooks>(&m, u, ct, body) {
        std::hint::black_box(env.matches(&["nodes", "0"], "pre-update"));
    }
    let _ = decode_json::<wire::StackCreated>(&m, u, ct, body);
    let _ = decode_json::<wire::PreviewUpdate>(&m, u, ct, body);
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = stack_ref_from_href(text);
    }
}

/// Appends `seg` percent-encoded as one path segment: everything but unreserved characters
/// and the sub-delimiters (RFC 3986) is `%XX`.
fn encode_segment(seg: &str, out: &mut String) {
    for b in seg.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}
