//! `LiveService`: the console's seam served by real HTTP clients (a real cloud, a standalone
//! Heat, or the built-in simulator reached over loopback).

use super::heat_native_rows::{self, join_clusters, settled_image};
use super::plain_stack;
use super::{
    BudgetStats, CloudInfo, CloudService, EventCursor, NodeUpdate, ServiceError, ServiceResult,
};
use crate::api::cloud::CloudConnection;
use crate::api::heat::{EventQuery, HeatClient, ResourceQuery, SortDir};
use crate::api::magnum::MagnumClient;
use crate::drivers::heat_native::HeatNativeDriver;
use crate::drivers::leftover_hooks::leftover_hooks;
use crate::drivers::magnum;
use crate::drivers::resolve::Drivers;
use crate::fetch::{fan_out, spawn_stream, AbortOnDrop};
use crate::model::{
    Cluster, DriverKind, Node, NodeGroup, NodeKey, StackEvent, StackRef, StackResource,
    StackSummary,
};
use crate::ops::capi_nodes;
use crate::ops::event_tracker::MAX_PAGE;
use crate::ops::hooks::{
    inferred_tree_holds, paused_members, update_began, with_inferred_members, HeldMembers, HoldSeen,
};
use crate::ops::ips::{stream_group_ips, IpEvent, IpOptions, Member};
use crate::ops::stack_paths::StackPaths;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use futures::FutureExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Details fetched at once when a list lacks fields the console shows (status_reason...).
const DETAIL_CONCURRENCY: usize = 4;

#[derive(Clone)]
pub struct LiveService {
    conn: CloudConnection,
    /// Clusters made of caldera's templates, found by stack tags (any cloud with Heat).
    heat_native: HeatNativeDriver,
    ip_options: IpOptions,
    /// Nesting learned per root stack, so nested events get readable paths.
    paths: Arc<Mutex<HashMap<String, StackPaths>>>,
    /// Any stack caldera did not write, seen as node groups (their members' facts kept
    /// between refreshes).
    plain: plain_stack::PlainStacks,
}

impl LiveService {
    /// Magnum's clusters alone (`None`: no Magnum here). A lookup that already asked Heat for
    /// its own clusters reads Magnum's answer here, where a failure cannot be hidden by the
    /// Heat-native clusters [`CloudService::list_clusters`] joins to it.
    pub async fn magnum_clusters(&self) -> Option<ServiceResult<Vec<Cluster>>> {
        let magnum = self.conn.magnum.clone()?;
        Some(magnum_clusters(magnum).await)
    }

    pub fn new(conn: CloudConnection) -> Self {
        LiveService {
            heat_native: Drivers::new(&conn).heat_native().clone(),
            plain: plain_stack::PlainStacks::new(conn.heat.clone()),
            // The cloud's `caldera: {output_key}` names the members' address output for
            // the console; unset, it is discovered per node group.
            ip_options: IpOptions {
                output_key: conn.settings.output_key.clone(),
                heat_outputs: Some(crate::ops::warm_outputs::WarmOutputs::default_location()),
                ..IpOptions::default()
            },
            conn,
            paths: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub fn with_ip_options(mut self, options: IpOptions) -> Self {
        self.ip_options = options;
        self
    }

    pub fn connection(&self) -> &CloudConnection {
        &self.conn
    }
}

fn node_from_member(nodegroup: &NodeGroup, m: &Member, hold: Option<HoldSeen>) -> Node {
    Node {
        key: NodeKey {
            nodegroup: nodegroup.id.clone(),
            member: m.name.clone(),
        },
        index: m.index,
        name: m.name.clone(),
        zone: nodegroup.zone.clone(),
        ip: None,
        status: m.status.clone(),
        status_reason: m.status_reason.clone(),
        image: None,
        since: m.since,
        hook_paused: hold.is_some(),
        hook_inferred: hold == Some(HoldSeen::Inferred),
        held_by_rollout: None,
        // A member that is a server itself (`resource_def: {type: OS::Nova::Server}`): Heat's
        // physical id is Nova's server id, so its detail needs no search by name or path.
        server_id: (m.resource_type == crate::ops::node_tree::NOVA_SERVER)
            .then(|| m.physical_id.clone())
            .flatten(),
        created: None,
        stack_id: m.stack.as_ref().map(|s| s.id.clone()),
        replacing: m.replacing,
    }
}

/// Resolves `stack_id` (an id or a name) to `name/id`.
async fn resolve(heat: &HeatClient, stack: &str) -> ServiceResult<StackRef> {
    heat.resolve(stack).await.map_err(ServiceError::from)
}

impl CloudService for LiveService {
    fn info(&self) -> CloudInfo {
        self.conn.info()
    }

    fn budget(&self) -> BudgetStats {
        self.conn.budget()
    }

    fn list_clusters(&self) -> BoxFuture<'static, ServiceResult<Vec<Cluster>>> {
        let magnum = self.conn.magnum.clone();
        let heat_native = self.heat_native.clone();
        async move {
            let magnum = async move {
                match magnum {
                    Some(m) => Some(magnum_clusters(m).await),
                    None => None,
                }
            };
            let (magnum, heat_native) = futures::join!(magnum, heat_native.list_clusters());
            join_clusters(magnum, heat_native)
        }
        .boxed()
    }

    fn cluster(&self, cluster: Cluster) -> BoxFuture<'static, ServiceResult<Cluster>> {
        let magnum = self.conn.magnum.clone();
        let heat_native = self.heat_native.clone();
        let heat = self.conn.heat.clone();
        async move {
            if plain_stack::is_plain_stack(&cluster) {
                return plain_stack::cluster_row(&heat, &cluster).await;
            }
            if cluster.driver == DriverKind::HeatNative {
                return heat_native.cluster(&cluster.id).await;
            }
            match magnum {
                Some(m) => magnum_row(m, cluster.id, None).await,
                None => Err(ServiceError::new(
                    super::ErrorKind::Unsupported,
                    format!("no Magnum here: cluster {} cannot be read", cluster.name),
                )),
            }
        }
        .boxed()
    }

    fn list_nodegroups(
        &self,
        cluster: Cluster,
    ) -> BoxFuture<'static, ServiceResult<Vec<NodeGroup>>> {
        let magnum = self.conn.magnum.clone();
        let heat_native = self.heat_native.clone();
        let plain = self.plain.clone();
        async move {
            // Any stack in context: its node groups as `caldera nodegroups STACK` finds them.
            if plain_stack::is_plain_stack(&cluster) {
                return plain.nodegroups(&cluster).await;
            }
            if cluster.driver == DriverKind::HeatNative {
                return heat_native_rows::list_nodegroups(&heat_native, &cluster).await;
            }
            let Some(magnum) = magnum else {
                return Ok(Vec::new());
            };
            let listed = magnum
                .list_nodegroups(&cluster.id, None)
                .await
                .map_err(ServiceError::from)?;
            let ids: Vec<String> = listed.iter().map(|n| n.id.clone()).collect();
            let mut fetches = fan_out(ids, DETAIL_CONCURRENCY, |id: String| {
                let magnum = magnum.clone();
                let cluster = cluster.id.clone();
                async move { magnum.get_nodegroup(&cluster, &id).await }
            });
            let mut details: HashMap<String, NodeGroup> = HashMap::new();
            while let Some((id, result)) = fetches.next().await {
                if let Ok(nodegroup) = result {
                    details.insert(id, nodegroup);
                }
            }
            // A Cluster API cluster's node groups have no stack: their nodes come from Nova.
            Ok(listed
                .into_iter()
                .map(|n| {
                    let mut n = details.get(&n.id).cloned().unwrap_or(n);
                    if cluster.capi.is_some() {
                        n.capi = cluster.capi.clone();
                        n.stack_id = None;
                    }
                    n
                })
                .collect())
        }
        .boxed()
    }

    fn list_stacks(&self) -> BoxFuture<'static, ServiceResult<Vec<StackSummary>>> {
        let heat = self.conn.heat.clone();
        async move {
            heat.list_stacks(Default::default())
                .try_collect()
                .await
                .map_err(ServiceError::from)
        }
        .boxed()
    }

    fn stream_nodes(&self, nodegroup: NodeGroup) -> BoxStream<'static, ServiceResult<NodeUpdate>> {
        let heat = self.conn.heat.clone();
        let nova = self.conn.nova.clone();
        let options = self.ip_options.clone();
        if let Some(capi) = nodegroup.capi.clone() {
            let Some(nova) = nova else {
                let err = ServiceError::new(
                    super::ErrorKind::Unsupported,
                    format!(
                        "node group {} runs on Cluster API ({}): its nodes are Nova servers, \
                         and this cloud has no Nova endpoint",
                        nodegroup.name,
                        capi.driver.as_str()
                    ),
                );
                return futures::stream::once(async move { Err(err) }).boxed();
            };
            return spawn_stream(256, move |tx| forward_capi_nodes(nova, capi, nodegroup, tx));
        }
        let Some(stack_id) = nodegroup.stack_id.clone() else {
            let err = ServiceError::new(
                super::ErrorKind::NotFound,
                format!("node group {} has no Heat stack", nodegroup.name),
            );
            return futures::stream::once(async move { Err(err) }).boxed();
        };
        // The console moving on drops the stream, which cancels the work and its requests.
        let plain = self.plain.clone();
        spawn_stream(256, move |tx| {
            forward_nodes(heat, nova, plain, stack_id, nodegroup, options, tx)
        })
    }

    fn stack_resources(
        &self,
        stack: StackRef,
        nested_depth: u32,
    ) -> BoxFuture<'static, ServiceResult<Vec<StackResource>>> {
        let heat = self.conn.heat.clone();
        let paths = self.paths.clone();
        async move {
            let listing = heat
                .list_resources(
                    &stack,
                    &ResourceQuery {
                        nested_depth: Some(nested_depth),
                        ..Default::default()
                    },
                )
                .await
                .map_err(ServiceError::from)?;
            let resources: Vec<StackResource> = listing.into_iter().map(|r| r.resource).collect();
            if let Ok(mut paths) = paths.lock() {
                paths
                    .entry(stack.id.clone())
                    .or_insert_with(|| StackPaths::new(&stack))
                    .learn(&resources);
            }
            Ok(resources)
        }
        .boxed()
    }

    fn stack_tree(
        &self,
        stack: StackRef,
        nested_depth: u32,
    ) -> BoxFuture<'static, ServiceResult<super::StackTree>> {
        let listed = self.stack_resources(stack.clone(), nested_depth);
        let heat = self.conn.heat.clone();
        async move {
            let resources = listed.await?;
            // No call unless a member looks held with no event to say so; a failed
            // inference costs the holds it would have found, not the tree.
            let inferred_holds = inferred_tree_holds(&heat, &stack, &resources)
                .await
                .unwrap_or_else(|e| {
                    tracing::info!("hooks of {} not inferred: {e}", stack.name);
                    vec![]
                });
            // Read from Heat's stored environment while no update runs (two calls); a
            // failed read costs the warning, not the tree.
            let leftover_hooks = leftover_hooks(&heat, &stack).await.unwrap_or_else(|e| {
                tracing::info!("leftover hooks of {} not read: {e}", stack.name);
                vec![]
            });
            Ok(super::StackTree {
                resources,
                inferred_holds,
                leftover_hooks,
            })
        }
        .boxed()
    }

    fn stack_outputs(
        &self,
        stack: StackRef,
    ) -> BoxFuture<'static, ServiceResult<Vec<super::StackOutput>>> {
        let heat = self.conn.heat.clone();
        async move {
            let list = heat
                .list_outputs(&stack)
                .await
                .map_err(ServiceError::from)?;
            Ok(list
                .into_iter()
                .map(|o| super::StackOutput {
                    key: o.key,
                    description: o.description,
                })
                .collect())
        }
        .boxed()
    }

    fn stack_output(
        &self,
        stack: StackRef,
        key: String,
    ) -> BoxFuture<'static, ServiceResult<super::ResolvedOutput>> {
        let heat = self.conn.heat.clone();
        async move {
            let o = heat
                .show_output(&stack, &key)
                .await
                .map_err(ServiceError::from)?;
            // A string output is shown as it is; lists and maps as (indented) JSON text.
            let value = match o.value {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => String::new(),
                v => serde_json::to_string_pretty(&v).unwrap_or_default(),
            };
            Ok(super::ResolvedOutput {
                key: o.key,
                value,
                error: o.error,
            })
        }
        .boxed()
    }

    /// Three reads at once: `resource show` (attributes included: Heat resolves every
    /// attribute of the type's schema), its metadata and its latest events, newest first.
    fn resource_detail(
        &self,
        stack: StackRef,
        resource: String,
    ) -> BoxFuture<'static, ServiceResult<super::ResourceDetail>> {
        use super::resource_show::{attribute_texts, metadata_text, RESOURCE_EVENTS};
        let heat = self.conn.heat.clone();
        async move {
            let query = EventQuery {
                limit: Some(RESOURCE_EVENTS),
                sort_dir: Some(SortDir::Desc),
                ..EventQuery::default()
            };
            let (info, metadata, events) = futures::try_join!(
                heat.get_resource(&stack, &resource),
                heat.get_resource_metadata(&stack, &resource),
                heat.resource_events(&stack, &resource, &query),
            )
            .map_err(ServiceError::from)?;
            let (attributes, attributes_omitted) = attribute_texts(info.attributes);
            let mut events = events;
            events.truncate(RESOURCE_EVENTS as usize);
            Ok(super::ResourceDetail {
                resource: info.resource,
                created_at: info.created_at,
                attributes,
                attributes_omitted,
                metadata: metadata_text(&metadata),
                events,
            })
        }
        .boxed()
    }

    fn resolve_stack(&self, id: String) -> BoxFuture<'static, ServiceResult<StackRef>> {
        let heat = self.conn.heat.clone();
        async move { heat.resolve(&id).await.map_err(ServiceError::from) }.boxed()
    }

    /// Three reads at once: `stack show` without resolving outputs (resolving walks every
    /// member of a large stack), the outputs list and the template.
    fn stack_overview(
        &self,
        stack: StackRef,
    ) -> BoxFuture<'static, ServiceResult<super::StackOverview>> {
        use super::stack_overview::{bounded_parameters, template_text};
        let heat = self.conn.heat.clone();
        async move {
            let (show, outputs, template) = futures::try_join!(
                heat.get_stack(&stack, false),
                heat.list_outputs(&stack),
                heat.get_template(&stack),
            )
            .map_err(ServiceError::from)?;
            let (parameters, parameters_omitted) = bounded_parameters(show.parameters);
            Ok(super::StackOverview {
                summary: show.summary,
                description: show.description,
                parameters,
                parameters_omitted,
                outputs: outputs
                    .into_iter()
                    .map(|o| super::StackOutput {
                        key: o.key,
                        description: o.description,
                    })
                    .collect(),
                tags: show.tags,
                timeout_mins: show.timeout_mins,
                disable_rollback: show.disable_rollback,
                template: template_text(&template),
            })
        }
        .boxed()
    }

    fn server_detail(
        &self,
        target: crate::model::ServerTarget,
    ) -> BoxFuture<'static, ServiceResult<crate::model::ServerDetail>> {
        let heat = self.conn.heat.clone();
        let nova = self.conn.nova.clone();
        async move {
            let Some(nova) = nova else {
                return Err(ServiceError::new(
                    super::ErrorKind::Unsupported,
                    format!(
                        "this cloud has no Nova endpoint: the server of {} cannot be shown",
                        target.name
                    ),
                ));
            };
            let id = find_server_id(&heat, &nova, &target).await?;
            let now = chrono::Utc::now();
            let (detail, console, deployments) = futures::join!(
                nova.get_server(&id),
                nova.console_output(&id, crate::model::server::CONSOLE_LINES),
                crate::ops::deployments::for_servers(&heat, vec![id.clone()], now)
            );
            let mut detail = detail.map_err(ServiceError::from)?;
            detail.console = console_tail(console);
            detail.deployments = match deployments {
                Ok(views) => crate::model::server::ServerDeployments::Read(
                    views.iter().map(|v| v.for_server_detail()).collect(),
                ),
                Err(e) => crate::model::server::ServerDeployments::NotRead(format!(
                    "Heat's software deployments could not be read: {e}"
                )),
            };
            // Nova names the image by id; the operator wrote a name.
            if let Some(image) = detail
                .image
                .clone()
                .filter(|i| crate::model::looks_like_uuid(i))
            {
                detail.image_name = nova.image_name(&image).await.ok().flatten();
            }
            Ok(detail)
        }
        .boxed()
    }

    fn poll_events(
        &self,
        stack: StackRef,
        nested_depth: u32,
        cursor: EventCursor,
    ) -> BoxFuture<'static, ServiceResult<(Vec<StackEvent>, EventCursor)>> {
        // Each request of a poll within the follow timeout (the follower retries on its own).
        let heat = self.conn.follower_heat().clone();
        let paths = self.paths.clone();
        // The cloud's retention from clouds.yaml, unless the caller said otherwise.
        let cursor = match self.conn.settings.max_events_per_stack {
            Some(n) if !cursor.retention_known() => cursor.with_retention(n as usize),
            _ => cursor,
        };
        async move {
            let mut cursor = cursor;
            let mut events = follow_step(&heat, &stack, nested_depth, &mut cursor).await?;
            if nested_depth > 0 {
                label_paths(&heat, &paths, &stack, nested_depth, &mut events).await;
            }
            Ok((events, cursor))
        }
        .boxed()
    }
}

/// The Nova server behind a node: the id the node listing knew (Cluster API), else the
/// `OS::Nova::Server` inside the member's nested stack (Magnum's and caldera's templates:
/// a member is a stack holding its server), else the member resource itself when it is the
/// server (a plain `ResourceGroup` of servers), else the one server Nova knows by the node's
/// name.
async fn find_server_id(
    heat: &HeatClient,
    nova: &crate::api::nova::NovaClient,
    target: &crate::model::ServerTarget,
) -> ServiceResult<String> {
    if let Some(id) = &target.server_id {
        return Ok(id.clone());
    }
    let server_type = IpOptions::default().server_type;
    if let Some(member_stack) = &target.member_stack {
        let stack = resolve(heat, member_stack).await?;
        let query = ResourceQuery {
            nested_depth: Some(1),
            with_detail: false,
            filters: vec![("type".into(), server_type.clone())],
        };
        let found = heat
            .list_resources(&stack, &query)
            .await
            .map_err(ServiceError::from)?;
        if let Some(id) = found.into_iter().find_map(|r| r.resource.physical_id) {
            return Ok(id);
        }
    } else if let Some(group_stack) = &target.group_stack {
        let stack = resolve(heat, group_stack).await?;
        let query = ResourceQuery {
            nested_depth: None,
            with_detail: false,
            filters: vec![("name".into(), target.key.member.clone())],
        };
        let found = heat
            .list_resources(&stack, &query)
            .await
            .map_err(ServiceError::from)?;
        if let Some(id) = found
            .into_iter()
            .filter(|r| r.resource.resource_type == server_type)
            .find_map(|r| r.resource.physical_id)
        {
            return Ok(id);
        }
    }
    // Nova's `name` filter is a regular expression: anchored and escaped, one exact name.
    let exact = format!("^{}$", regex::escape(&target.name));
    let servers: Vec<crate::api::nova::ServerInfo> = nova
        .list_servers_detail(crate::api::nova::ServerQuery {
            limit: Some(2),
            filters: vec![("name".into(), exact)],
        })
        .take(2)
        .try_collect()
        .await
        .map_err(ServiceError::from)?;
    match servers.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => Err(ServiceError::new(
            super::ErrorKind::NotFound,
            format!(
                "{} has no Nova server yet (Heat has not created it, or it is gone)",
                target.name
            ),
        )),
        _ => Err(ServiceError::new(
            super::ErrorKind::NotFound,
            format!("more than one Nova server is named {}", target.name),
        )),
    }
}

/// The console log, or why Nova would not give it: the detail shows either.
fn console_tail(found: crate::api::ApiResult<String>) -> crate::model::ConsoleTail {
    use crate::model::ConsoleTail;
    match found {
        Ok(raw) => ConsoleTail::Lines(crate::model::server::console_lines(
            &raw,
            crate::model::server::CONSOLE_LINES,
        )),
        Err(crate::api::ApiError::Http {
            status, message, ..
        }) => ConsoleTail::Unavailable(match status {
            403 => format!(
                "Nova's policy does not let this user read the console log (403): {message}"
            ),
            409 => format!("Nova has no console log for this server yet (409): {message}"),
            501 => format!("this hypervisor keeps no console log (501): {message}"),
            s => format!("Nova refused the console log (HTTP {s}): {message}"),
        }),
        Err(e) => ConsoleTail::Unavailable(format!("console log not read: {e}")),
    }
}

/// A Cluster API node group's nodes from Nova: one listing of the cluster's servers (by
/// name), matched to the node group by the driver's naming, then each node's addresses.
async fn forward_capi_nodes(
    nova: crate::api::nova::NovaClient,
    capi: crate::model::CapiCluster,
    nodegroup: NodeGroup,
    tx: tokio::sync::mpsc::Sender<ServiceResult<NodeUpdate>>,
) {
    let servers = match capi_nodes::cluster_servers(&nova, &capi).await {
        Ok(s) => s,
        Err(e) => {
            let _ = tx.send(Err(ServiceError::from(e))).await;
            return;
        }
    };
    let nodes = capi_nodes::nodegroup_nodes(
        &capi,
        &nodegroup.id,
        &nodegroup.name,
        nodegroup.role,
        &servers,
    );
    // A server in ERROR without an address never gets one (Nova could not place it).
    let unplaced: Vec<String> = servers
        .iter()
        .filter(|s| s.status == "ERROR" && s.fixed_ips().is_empty())
        .filter(|s| nodes.iter().any(|n| n.name == s.name))
        .map(|s| s.name.clone())
        .collect();
    let addresses: Vec<crate::model::NodeAddress> = servers
        .iter()
        .filter(|s| nodes.iter().any(|n| n.name == s.name))
        .map(|s| crate::model::NodeAddress {
            member: s.name.clone(),
            index: None,
            addresses: s.fixed_ips(),
            name: Some(s.name.clone()),
            networks: Default::default(),
            outputs: Default::default(),
            left_out: 0,
        })
        .collect();
    if tx.send(Ok(NodeUpdate::Members(nodes))).await.is_err() {
        return;
    }
    for a in addresses {
        if a.addresses.is_empty() {
            continue;
        }
        if tx.send(Ok(NodeUpdate::Address(a))).await.is_err() {
            return;
        }
    }
    for member in unplaced {
        let error = ServiceError::new(
            super::ErrorKind::NotFound,
            "no address: the server is in ERROR",
        );
        if tx
            .send(Ok(NodeUpdate::AddressFailed { member, error }))
            .await
            .is_err()
        {
            return;
        }
    }
    let _ = tx.send(Ok(NodeUpdate::Done)).await;
}

/// Magnum's clusters with their details and node-group counts: the list, then each
/// cluster's row ([`magnum_row`]) side by side, in the list's order.
async fn magnum_clusters(magnum: MagnumClient) -> ServiceResult<Vec<Cluster>> {
    let listed: Vec<Cluster> = magnum
        .list_clusters(None)
        .try_collect()
        .await
        .map_err(ServiceError::from)?;
    let order: Vec<String> = listed.iter().map(|c| c.id.clone()).collect();
    let mut rows: HashMap<String, Cluster> = fan_out(listed, DETAIL_CONCURRENCY, |c: Cluster| {
        magnum_row(magnum.clone(), c.id.clone(), Some(c))
    })
    .filter_map(|(c, row)| async move { row.ok().map(|row| (c.id, row)) })
    .collect()
    .await;
    Ok(order.iter().filter_map(|id| rows.remove(id)).collect())
}

/// One Magnum cluster as the clusters list shows it, the per-cluster work of the list:
/// the detail (the list lacks status_reason and friends), the node-group count (the NGS
/// column, one small listing) and, for a cluster whose id is not a Heat stack UUID, the
/// driver its template names (one template read). `listed` is the list's entry, kept when
/// the detail fails; read alone (no entry), a failed detail is the answer.
async fn magnum_row(
    magnum: MagnumClient,
    id: String,
    listed: Option<Cluster>,
) -> ServiceResult<Cluster> {
    let mut cluster = match (magnum.get_cluster(&id).await, listed) {
        (Ok(detail), _) => detail,
        (Err(_), Some(entry)) => entry,
        (Err(e), None) => return Err(e.into()),
    };
    cluster.nodegroup_count = match magnum.list_nodegroups(&id, None).await {
        Ok(groups) => Some(u32::try_from(groups.len()).unwrap_or(u32::MAX)),
        Err(_) => None,
    };
    magnum.refine_backend(&mut cluster).await;
    Ok(cluster)
}

/// Streams a node group's members and addresses into `tx`. Which members are paused on a
/// hook (from events) and the group's settled image (from its stack) are read beside the
/// member listing and applied to the member list.
async fn forward_nodes(
    heat: HeatClient,
    nova: Option<crate::api::nova::NovaClient>,
    plain: plain_stack::PlainStacks,
    stack_id: String,
    nodegroup: NodeGroup,
    options: IpOptions,
    tx: tokio::sync::mpsc::Sender<ServiceResult<NodeUpdate>>,
) {
    let stack = match resolve(&heat, &stack_id).await {
        Ok(stack) => stack,
        Err(e) => {
            let _ = tx.send(Err(e)).await;
            return;
        }
    };
    // Magnum's default node groups share the cluster stack (masters in one group, workers
    // in another): their members are listed from their own group's nested stack.
    let (group_path, members_at) = if nodegroup.is_default {
        match magnum::group_in_stack(&heat, &stack, nodegroup.role, &nodegroup.name).await {
            Ok(Some((path, nested))) => (Some(path), nested),
            Ok(None) => (None, stack.clone()),
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        }
    } else {
        (None, stack.clone())
    };
    let role = nodegroup.role;
    // The side lookups run beside the member listing; members go out at once and again with
    // their hook marks and images when those are known (always before `Done`, which settles
    // the view).
    let mut hooks = Some(AbortOnDrop({
        let heat = heat.clone();
        let stack = stack.clone();
        let members_at = members_at.clone();
        tokio::spawn(async move {
            let (seen, detail) = futures::join!(
                paused_members(&heat, &members_at),
                heat.get_stack(&stack, false)
            );
            // The stack read says whether an update runs: only then can a member be held
            // with its pause event purged, and is more than the group's events read.
            let began = detail.as_ref().ok().and_then(|d| update_began(&d.summary));
            let paused = match seen {
                Ok(seen) => with_inferred_members(&heat, &stack, began, seen).await,
                Err(e) => Err(e),
            };
            let paused = match (paused, &detail) {
                (Ok(mut held), Ok(d)) if !(held.seen.is_empty() && held.inferred.is_empty()) => {
                    held.rollout = marked_rollout_id(&heat, d).await;
                    Ok(held)
                }
                (paused, _) => paused,
            };
            let image = match &detail {
                Ok(d) => settled_image(d).or_else(|| magnum_settled_image(d, role)),
                Err(e) => {
                    tracing::info!("node group image unknown: {e}");
                    None
                }
            };
            // A stack of no known layout: each group's members' image as Heat resolved it,
            // whatever parameter their servers read (once settled, as above).
            let settled = detail
                .as_ref()
                .is_ok_and(|d| crate::progress::at_rest(&d.summary.status));
            let by_group = match role {
                crate::model::Role::Other if settled => plain.group_images(&stack).await,
                _ => HashMap::new(),
            };
            (
                paused,
                GroupImages {
                    all: image,
                    by_group,
                },
            )
        })
    }));
    // Each member's image as Nova lists its server (the address stream's Nova source):
    // applied with the last member list, at `Done`.
    let mut images: HashMap<String, String> = HashMap::new();
    // Each member's server id as Nova lists it: for a member that is a template holding its
    // server, Heat's listing of the group gives only the member's stack.
    let mut servers: HashMap<String, String> = HashMap::new();
    let mut paused: Option<SideFacts> = None;
    let mut members: Option<Vec<Member>> = None;
    let image_source = nova.clone();
    let mut ips = stream_group_ips(heat, nova, stack, group_path, options);
    let to_nodes = |members: &[Member], facts: Option<&SideFacts>| {
        let nodes = members
            .iter()
            .map(|m| {
                let hold = facts.and_then(|f| f.paused.hold(&m.name, &m.group));
                let mut node = node_from_member(&nodegroup, m, hold);
                node.held_by_rollout = hold.and(facts.and_then(|f| f.paused.rollout.clone()));
                // The image its server runs (Nova), else, for a member that settled
                // while its group is settled, the group's image.
                node.image = facts.and_then(|f| f.member_image(m));
                if node.server_id.is_none() {
                    node.server_id = facts.and_then(|f| f.servers.get(&m.name)).cloned();
                }
                node
            })
            .collect();
        // Nova's images come with the last list, at `Done`: until then a list is
        // provisional, with or without the hook marks.
        match facts {
            Some(f) if f.images_read => NodeUpdate::Members(nodes),
            _ => NodeUpdate::Listed {
                nodes,
                marks: facts.is_some(),
            },
        }
    };
    loop {
        let event = tokio::select! {
            found = async {
                match hooks.as_mut() {
                    Some(h) => (&mut h.0).await,
                    // Not polled: the branch runs only while `hooks` is there.
                    None => std::future::pending().await,
                }
            }, if hooks.is_some() => {
                hooks = None;
                paused = Some(hook_result(found));
                if let Some(members) = &members {
                    if tx.send(Ok(to_nodes(members, paused.as_ref()))).await.is_err() {
                        return;
                    }
                }
                continue;
            }
            event = ips.next() => event,
        };
        let Some(event) = event else { return };
        let update = match event {
            Err(e) => Err(ServiceError::from(e)),
            Ok(IpEvent::Members(listed)) => {
                let update = to_nodes(&listed, paused.as_ref());
                members = Some(listed);
                Ok(update)
            }
            // A later source's addresses come as the member's whole set: the row is updated.
            Ok(IpEvent::Address(address, _) | IpEvent::MoreAddresses(address, _)) => {
                Ok(NodeUpdate::Address(address))
            }
            Ok(IpEvent::Named { member, name }) => Ok(NodeUpdate::Named { member, name }),
            // Where addresses are read is for the log; the nodes show the outcome.
            Ok(IpEvent::Plan {
                group, found, how, ..
            }) => {
                tracing::info!("node group {group}: addresses from {how} (found: {found})");
                continue;
            }
            // A member still being created shows its status; no address yet is no failure.
            Ok(IpEvent::Pending { .. }) => continue,
            // A node with no network has no address to show, and did not fail: its name.
            Ok(IpEvent::NoNetwork(row)) => match row.name {
                Some(name) => Ok(NodeUpdate::Named {
                    member: row.member,
                    name,
                }),
                None => continue,
            },
            Ok(IpEvent::Failed { member, reason }) => Ok(NodeUpdate::AddressFailed {
                member,
                error: ServiceError::new(super::ErrorKind::NotFound, reason),
            }),
            Ok(IpEvent::Server { member, id, image }) => {
                if let Some(image) = image {
                    images.insert(member.clone(), image);
                }
                servers.insert(member, id);
                continue;
            }
            Ok(IpEvent::Done(_)) => {
                let pending = hooks.take();
                let mut found = match pending {
                    Some(mut task) => hook_result((&mut task.0).await),
                    None => paused.take().unwrap_or_default(),
                };
                let mut read = std::mem::take(&mut images);
                if let Some(nova) = &image_source {
                    crate::ops::image_names::as_target_says(
                        nova,
                        nodegroup.image.as_deref(),
                        read.values_mut(),
                    )
                    .await;
                }
                found.members.extend(read);
                found.servers.extend(std::mem::take(&mut servers));
                found.images_read = true;
                // Every list before was provisional: this one, with all that is known,
                // is the one a reader keeps.
                if let Some(members) = &members {
                    if tx.send(Ok(to_nodes(members, Some(&found)))).await.is_err() {
                        return;
                    }
                }
                paused = Some(found);
                Ok(NodeUpdate::Done)
            }
        };
        if tx.send(update).await.is_err() {
            return;
        }
    }
}

/// A Magnum node group's image from its stack, once settled: Magnum's templates take it as
/// `master_image` / `minion_image` (the node group's `image_id`).
fn magnum_settled_image(
    detail: &crate::api::heat::StackDetail,
    role: crate::model::Role,
) -> Option<String> {
    if !crate::progress::at_rest(&detail.summary.status) {
        return None;
    }
    detail
        .parameters
        .get(magnum::image_parameter(role))
        .filter(|i| !i.is_empty())
        .cloned()
}

/// How many stacks up from a node group's stack the marker of a caldera rollout is looked
/// for: a rollout of a plain stack's group PATCHes the stack the group is in, which may be a
/// few nested stacks above the group's own (`racks/1/nodes`).
const MARKER_LEVELS: usize = 4;

/// The id of the caldera rollout whose hooks hold members of the stack read as `detail`: a
/// rollout's PATCH tags the stack it updates with its marker (`caldera-rollout=<id>@<host>`),
/// and the marker says whose update runs only while that stack's update is in progress (a
/// finished rollout may leave its marker behind). The stack itself, then its parents (one
/// read each, at most [`MARKER_LEVELS`]), while each is under update: Heat updates a nested
/// stack only within its parent's update.
async fn marked_rollout_id(
    heat: &HeatClient,
    detail: &crate::api::heat::StackDetail,
) -> Option<String> {
    let mut current = detail.clone();
    for _ in 0..MARKER_LEVELS {
        if !current.summary.status.is_in_progress() {
            return None;
        }
        if let Some((id, _)) = crate::drivers::rollout_plan::marker_in(&current.tags) {
            return Some(id);
        }
        let parent = current.summary.parent.clone()?;
        let stack = resolve(heat, &parent).await.ok()?;
        current = heat.get_stack(&stack, false).await.ok()?;
    }
    None
}

/// What the side lookups of a node stream found.
#[derive(Default)]
struct SideFacts {
    paused: HeldMembers,
    /// The group's image when it is settled (every member has it).
    image: GroupImages,
    /// Each member's image as Nova says its server runs it (during a rolling update members
    /// differ: this is how old and new nodes are told apart).
    members: HashMap<String, String>,
    /// Each member's server id as Nova lists it (by member name).
    servers: HashMap<String, String>,
    /// Nova's images have been read (they come with the addresses, at their end).
    images_read: bool,
}

impl SideFacts {
    fn member_image(&self, m: &Member) -> Option<String> {
        match self.members.get(&m.name) {
            Some(image) => Some(image.clone()),
            None if m.status.is_complete() => self
                .image
                .by_group
                .get(&m.group)
                .or(self.image.all.as_ref())
                .cloned(),
            None => None,
        }
    }
}

/// The settled image of a node group's members: one for all, or per group of a stack of no
/// known layout (by group path).
#[derive(Debug, Default)]
struct GroupImages {
    all: Option<String>,
    by_group: HashMap<String, String>,
}

type SideLookup = (Result<HeldMembers, crate::api::ApiError>, GroupImages);

fn hook_result(found: Result<SideLookup, tokio::task::JoinError>) -> SideFacts {
    match found {
        Ok((Ok(paused), image)) => SideFacts {
            paused,
            image,
            members: HashMap::new(),
            servers: HashMap::new(),
            images_read: false,
        },
        Ok((Err(e), image)) => {
            tracing::info!("hook state unknown: {e}");
            SideFacts {
                paused: HeldMembers::default(),
                image,
                members: HashMap::new(),
                servers: HashMap::new(),
                images_read: false,
            }
        }
        Err(e) => {
            tracing::warn!("node group lookup task: {e}");
            SideFacts::default()
        }
    }
}

/// One poll: every event not delivered before, without duplicates, oldest first.
///
/// Pages newest-first and stops at the first page reaching back past the cursor's horizon
/// (the newest delivered event minus the late-writer window, see `ops::event_tracker`).
/// Paging forward from a resume marker instead breaks down when Heat purges that marker
/// (`max_events_per_stack`): Heat then answers from its oldest retained event, and every
/// poll re-reads the whole retained tree (measured in the soak: polls of 50,000 events and
/// 20 s each, falling further behind each time). Newest-first, a poll reads what is new
/// plus the window, whatever Heat has purged; its only markers are ids from the same poll,
/// moments old.
///
/// The first request asks for what the last polls' rate predicts (a small probe when quiet),
/// so a quiet poll and most busy ones are a single request. Events are taken into the cursor
/// only once the poll has read back to its horizon: a poll that fails half-way changes
/// nothing, and the next one reads the same span again instead of leaving a gap behind the
/// pages it had read.
pub async fn follow_step(
    heat: &HeatClient,
    stack: &StackRef,
    nested_depth: u32,
    cursor: &mut EventCursor,
) -> ServiceResult<Vec<StackEvent>> {
    let plan = cursor.tracker.begin_poll(std::time::Instant::now());
    let mut marker: Option<String> = None;
    let mut limit = plan.first_limit;
    let mut pages = Vec::new();
    let mut requests = 0u32;
    let complete = loop {
        let query = EventQuery {
            limit: Some(limit),
            marker: marker.clone(),
            sort_dir: Some(SortDir::Desc),
            nested_depth: (nested_depth > 0).then_some(nested_depth),
            ..Default::default()
        };
        requests += 1;
        let page = heat
            .list_events_page(stack, &query)
            .await
            .map_err(ServiceError::from)?;
        let full = page.len() >= limit as usize;
        let last = page.last().map(|e| e.id.clone());
        let reached = plan
            .horizon
            .is_some_and(|h| page.iter().any(|e| e.time < h));
        pages.extend(page);
        if reached || !full {
            break true;
        }
        match last {
            // A full page whose last id we already started from would loop forever.
            Some(last) if Some(&last) != marker.as_ref() => marker = Some(last),
            _ => break false,
        }
        // The prediction fell short (a burst): take big pages for the rest.
        limit = MAX_PAGE;
    };
    Ok(cursor
        .tracker
        .finish_poll(&plan, pages, complete, requests, std::time::Instant::now()))
}

/// Fills `path` of nested events from the learned nesting; learns again (once) when an event
/// comes from a stack not seen before, e.g. a member created since the last listing.
async fn label_paths(
    heat: &HeatClient,
    paths: &Mutex<HashMap<String, StackPaths>>,
    root: &StackRef,
    nested_depth: u32,
    events: &mut [StackEvent],
) {
    let unknown = |paths: &Mutex<HashMap<String, StackPaths>>, events: &[StackEvent]| {
        let Ok(map) = paths.lock() else { return false };
        let known = map.get(&root.id);
        events.iter().any(|e| {
            e.stack
                .as_ref()
                .is_some_and(|s| known.is_none_or(|k| !k.knows(&s.id)))
        })
    };
    if unknown(paths, events) {
        let query = ResourceQuery {
            nested_depth: Some(nested_depth),
            ..Default::default()
        };
        match heat.list_resources(root, &query).await {
            Ok(listing) => {
                let resources: Vec<StackResource> =
                    listing.into_iter().map(|r| r.resource).collect();
                if let Ok(mut map) = paths.lock() {
                    map.entry(root.id.clone())
                        .or_insert_with(|| StackPaths::new(root))
                        .learn(&resources);
                }
            }
            Err(e) => tracing::debug!("could not learn nested stack paths: {e}"),
        }
    }
    let Ok(map) = paths.lock() else { return };
    let known = map.get(&root.id);
    for event in events.iter_mut() {
        let Some(owner) = &event.stack else { continue };
        event.path = known
            .and_then(|k| k.path_of(&owner.id))
            .unwrap_or_else(|| vec![owner.name.clone()]);
    }
}
