//! Node IP retrieval for large node groups, streamed as addresses are found.
//!
//! The stock path (`stack show` or `output show` of an aggregate output) makes Heat resolve
//! every member's output in one request: about 50 ms per member cold, minutes for 1000 nodes,
//! and nothing to show until the end. Here two sources race, and each member is reported once:
//! - **typed listing**: `resources?nested_depth=2&with_detail=true&type=<address type>`, one
//!   request that returns every member's address resource with its resolved attributes (the
//!   fastest way to the *whole* set on real Heat: 200 members in about 1.1 s);
//! - **per-member outputs**: `outputs/{key}` on each member's nested stack, a bounded fan-out in
//!   index order, so the first addresses appear after two round trips;
//! - **Nova**, where the cloud has it: the members' `OS::Nova::Server` resources (one typed
//!   listing without details, so cheap) map server ids to members, then `servers/detail` pages
//!   deliver addresses a page at a time. This is the path that works for any template whose
//!   machines are Nova servers (Magnum's own templates among them). Nova also knows each
//!   server's name, the name operators use for a node: it rides on the member's address, or,
//!   when another source delivered that address first, follows as [`IpEvent::Named`].
//!
//! When the typed listing answers, every member it covers is emitted and the fan-out stops.
//! If it fails (old Heat, another template), the fan-out simply runs to the end. A member
//! neither source could resolve is reported as failed with the reason; the others still arrive.

use crate::api::error::ApiError;
use crate::api::heat::{HeatClient, ResourceInfo, ResourceQuery};
use crate::api::nova::{NovaClient, ServerQuery};
use crate::fetch::{fan_out, spawn_stream, AbortOnDrop};
use crate::model::{NodeAddress, StackRef, Status};
use futures::stream::{BoxStream, StreamExt};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Servers asked of Nova per page.
const NOVA_PAGE: u32 = 500;

/// How to find each member's address.
#[derive(Debug, Clone)]
pub struct IpOptions {
    /// Per-member output calls in flight at once (the shared request budget still applies).
    pub concurrency: usize,
    /// Output of a member stack that holds its address(es).
    pub output_key: String,
    /// Resource type whose attribute holds a member's address, for the typed listing.
    pub address_type: String,
    /// Attribute of that resource holding the address(es).
    pub address_attribute: String,
    /// Skip the typed listing (for measuring the fan-out alone).
    pub typed_listing: bool,
    /// Skip the per-member fan-out (for measuring the typed listing alone).
    pub fan_out: bool,
    /// Use Nova's server listing when a Nova client is given.
    pub nova_servers: bool,
    /// Resource type of a member's machine, for mapping Nova servers to members.
    pub server_type: String,
}

impl Default for IpOptions {
    fn default() -> Self {
        IpOptions {
            concurrency: 16,
            output_key: "ip".to_string(),
            address_type: "OS::Heat::Value".to_string(),
            address_attribute: "value".to_string(),
            typed_listing: true,
            fan_out: true,
            nova_servers: true,
            server_type: "OS::Nova::Server".to_string(),
        }
    }
}

/// One member of a node group (a ResourceGroup member with its own nested stack).
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Resource name in the group: `"0"`, `"1"`, ...
    pub name: String,
    pub index: Option<u32>,
    pub stack: Option<StackRef>,
    pub status: Status,
    pub status_reason: Option<String>,
    /// When the member's resource last changed status.
    pub since: Option<chrono::DateTime<chrono::Utc>>,
}

/// Which source delivered an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpSource {
    TypedListing,
    MemberOutput,
    NovaServers,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct IpStats {
    pub members: usize,
    pub found: usize,
    pub failed: usize,
    pub first_address_after: Option<Duration>,
    pub elapsed: Duration,
    pub from_listing: usize,
    pub from_outputs: usize,
    pub from_nova: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum IpEvent {
    /// The members are known (in index order); addresses follow.
    Members(Vec<Member>),
    /// A member's addresses, reported once per member by whichever source found them first.
    Address(NodeAddress, IpSource),
    /// The server name of a member, when its `Address` did not carry it: another source won
    /// the race to the address, or no source found one (the name then precedes `Failed`).
    /// At most once per member.
    Named {
        member: String,
        name: String,
    },
    Failed {
        member: String,
        reason: String,
    },
    Done(IpStats),
}

/// Members of the node group stack `target`: the members of its ResourceGroup, or, when
/// `target` is itself a group's nested stack, its resources that own nested stacks.
pub async fn list_members(heat: &HeatClient, target: &StackRef) -> Result<Vec<Member>, ApiError> {
    let listing = heat
        .list_resources(
            target,
            &ResourceQuery {
                nested_depth: Some(1),
                ..Default::default()
            },
        )
        .await?;
    Ok(members_from_listing(target, &listing))
}

/// Picks the members out of a `nested_depth=1` listing of a node group stack.
pub fn members_from_listing(target: &StackRef, listing: &[ResourceInfo]) -> Vec<Member> {
    let is_root = |r: &ResourceInfo| r.resource.owner.as_ref().is_none_or(|o| o.id == target.id);
    let groups: Vec<&ResourceInfo> = listing
        .iter()
        .filter(|r| is_root(r) && r.resource.resource_type == "OS::Heat::ResourceGroup")
        .collect();
    // Prefer the group named `nodes` (our templates) when a stack has several.
    let group = groups
        .iter()
        .find(|g| g.resource.name == "nodes")
        .or_else(|| groups.first());
    let mut members: Vec<Member> = match group.and_then(|g| g.resource.nested.clone()) {
        Some(group_stack) => listing
            .iter()
            .filter(|r| {
                r.resource
                    .owner
                    .as_ref()
                    .is_some_and(|o| o.id == group_stack.id)
            })
            .map(member_from)
            .collect(),
        None => listing
            .iter()
            .filter(|r| is_root(r) && r.resource.nested.is_some())
            .map(member_from)
            .collect(),
    };
    members.sort_by(|a, b| {
        (a.index.is_none(), a.index, &a.name).cmp(&(b.index.is_none(), b.index, &b.name))
    });
    members
}

fn member_from(r: &ResourceInfo) -> Member {
    Member {
        name: r.resource.name.clone(),
        index: r.resource.name.parse().ok(),
        stack: r.resource.nested.clone(),
        status: r.resource.status.clone(),
        status_reason: r.resource.status_reason.clone(),
        since: r.resource.updated_at.or(r.created_at),
    }
}

/// Flattens an address value (a string, a list, or a map of lists) into strings.
pub fn addresses_in(value: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_addresses(value, &mut out, 0);
    out
}

fn collect_addresses(value: &serde_json::Value, out: &mut Vec<String>, depth: usize) {
    if depth > 4 {
        return;
    }
    match value {
        serde_json::Value::String(s) if !s.is_empty() => out.push(s.clone()),
        serde_json::Value::Array(items) => {
            for item in items {
                collect_addresses(item, out, depth + 1);
            }
        }
        serde_json::Value::Object(map) => {
            // Nova-style `{"net": [{"addr": "10.0.0.5"}]}` or `{"addr": ...}`.
            if let Some(addr) = map.get("addr") {
                collect_addresses(addr, out, depth + 1);
            } else {
                for v in map.values() {
                    collect_addresses(v, out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Streams the addresses of every member of the node group stack `target`.
///
/// Dropping the stream stops all outstanding requests.
pub fn stream_ips(
    heat: HeatClient,
    target: StackRef,
    options: IpOptions,
) -> BoxStream<'static, Result<IpEvent, ApiError>> {
    stream_ips_with(heat, None, target, options)
}

/// Like [`stream_ips`], with Nova as a third source when the cloud has it.
pub fn stream_ips_with(
    heat: HeatClient,
    nova: Option<NovaClient>,
    target: StackRef,
    options: IpOptions,
) -> BoxStream<'static, Result<IpEvent, ApiError>> {
    spawn_stream(256, move |tx| run(heat, nova, target, options, tx))
}

type Sink = mpsc::Sender<Result<IpEvent, ApiError>>;

async fn run(
    heat: HeatClient,
    nova: Option<NovaClient>,
    target: StackRef,
    options: IpOptions,
    tx: Sink,
) {
    let started = Instant::now();
    // Nova pages arrive through a channel, one batch of (member, addresses) per page.
    let (nova_tx, mut nova_rx) = mpsc::channel::<Vec<NovaMatch>>(16);
    let nova_task = match nova.filter(|_| options.nova_servers) {
        Some(nova) => Some(AbortOnDrop(tokio::spawn(nova_addresses(
            heat.clone(),
            nova,
            target.clone(),
            options.server_type.clone(),
            nova_tx,
        )))),
        None => {
            drop(nova_tx);
            None
        }
    };
    // Started before the member listing so both round trips overlap; aborted if we return.
    let mut typed = options.typed_listing.then(|| {
        let heat = heat.clone();
        let target = target.clone();
        let query = ResourceQuery {
            nested_depth: Some(2),
            with_detail: true,
            filters: vec![("type".to_string(), options.address_type.clone())],
        };
        AbortOnDrop(tokio::spawn(async move {
            heat.list_resources(&target, &query).await
        }))
    });

    // Members first (the typed listing is already under way beside it).
    let members = match list_members(&heat, &target).await {
        Ok(m) => m,
        Err(e) => {
            let _ = tx.send(Err(e)).await;
            return;
        }
    };
    let mut state = Progress::new(started, members.iter().map(|m| m.name.clone()).collect());
    if tx
        .send(Ok(IpEvent::Members(members.clone())))
        .await
        .is_err()
    {
        return;
    }

    let by_stack: HashMap<String, String> = members
        .iter()
        .filter_map(|m| m.stack.as_ref().map(|s| (s.id.clone(), m.name.clone())))
        .collect();
    let with_stack: Vec<(String, StackRef)> = if options.fan_out {
        members
            .iter()
            .filter_map(|m| m.stack.clone().map(|s| (m.name.clone(), s)))
            .collect()
    } else {
        Vec::new()
    };
    let output_key = options.output_key.clone();
    let mut outputs = fan_out(with_stack, options.concurrency, move |(_, stack)| {
        let heat = heat.clone();
        let key = output_key.clone();
        async move { heat.show_output(&stack, &key).await }
    })
    .boxed();
    let mut output_errors: HashMap<String, String> = HashMap::new();
    let mut typed_done = typed.is_none();
    let mut outputs_done = !options.fan_out;
    let mut nova_done = nova_task.is_none();

    loop {
        if state.emitted.len() == members.len() {
            // Every address is in: the listing and the output calls have nothing left to
            // give. Nova may still be naming members, so it alone runs on.
            // Both are dropped, not just no longer polled: their requests in flight hold
            // request-budget permits that Nova's pages would otherwise wait for forever.
            typed_done = true;
            typed = None;
            outputs_done = true;
            outputs = futures::stream::empty().boxed();
            if state.named.len() == members.len() {
                nova_done = true;
            }
        }
        if typed_done && outputs_done && nova_done {
            break;
        }
        tokio::select! {
            listing = async { typed.as_mut().map(|t| &mut t.0).expect("guarded by typed_done").await }, if !typed_done => {
                typed_done = true;
                match listing {
                    Ok(Ok(resources)) => {
                        for (member, addresses) in addresses_from_listing(&resources, &by_stack, &options.address_attribute) {
                            if !state.emit(&tx, &member, addresses, IpSource::TypedListing, None).await {
                                return;
                            }
                        }
                        // The listing is the whole truth for the members it covers; members it
                        // lacks still get their output call, which says why.
                    }
                    Ok(Err(e)) => {
                        tracing::info!("typed address listing failed, per-member outputs continue: {e}");
                    }
                    Err(join) => tracing::warn!("typed address listing task ended: {join}"),
                }
            }
            batch = nova_rx.recv(), if !nova_done => {
                match batch {
                    None => nova_done = true,
                    Some(batch) => {
                        for found in batch {
                            let sent = if found.addresses.is_empty() {
                                state.name(&tx, &found.member, found.name).await
                            } else {
                                state.emit(&tx, &found.member, found.addresses, IpSource::NovaServers, Some(found.name)).await
                            };
                            if !sent {
                                return;
                            }
                        }
                    }
                }
            }
            next = outputs.next(), if !outputs_done => {
                match next {
                    None => outputs_done = true,
                    Some(((member, _), Ok(output))) => {
                        let addresses = addresses_in(&output.value);
                        if addresses.is_empty() {
                            let reason = output.error.unwrap_or_else(|| format!("output '{}' has no address", output.key));
                            output_errors.insert(member, reason);
                        } else if !state.emit(&tx, &member, addresses, IpSource::MemberOutput, None).await {
                            return;
                        }
                    }
                    Some(((member, _), Err(e))) => {
                        output_errors.insert(member, e.to_string());
                    }
                }
            }
        }
    }
    drop(outputs);
    drop(nova_task);

    for member in &members {
        if state.emitted.contains(&member.name) {
            continue;
        }
        let reason = output_errors
            .remove(&member.name)
            .or_else(|| {
                member.status.is_failed().then(|| {
                    format!(
                        "{}: {}",
                        member.status,
                        member.status_reason.clone().unwrap_or_default()
                    )
                })
            })
            .unwrap_or_else(|| "no address found".to_string());
        // Nova listed the server without an address (still building): its name is still the
        // one the operator knows the node by.
        if let Some(name) = state.pending_names.remove(&member.name) {
            let event = IpEvent::Named {
                member: member.name.clone(),
                name,
            };
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
        state.stats.failed += 1;
        let event = IpEvent::Failed {
            member: member.name.clone(),
            reason,
        };
        if tx.send(Ok(event)).await.is_err() {
            return;
        }
    }
    state.stats.elapsed = started.elapsed();
    let _ = tx.send(Ok(IpEvent::Done(state.stats))).await;
}

/// One member's server as Nova lists it.
#[derive(Debug)]
struct NovaMatch {
    member: String,
    /// The server's name (Magnum's `k8s-prod-abc123-node-17`).
    name: String,
    /// Empty while the server has no fixed address yet; its name is still worth sending.
    addresses: Vec<String>,
}

/// Maps the members' servers to members, then pages through Nova's servers sending each
/// page's matches. Errors end this source quietly: the other sources carry on.
async fn nova_addresses(
    heat: HeatClient,
    nova: NovaClient,
    target: StackRef,
    server_type: String,
    out: mpsc::Sender<Vec<NovaMatch>>,
) {
    let query = ResourceQuery {
        nested_depth: Some(2),
        with_detail: false,
        filters: vec![("type".to_string(), server_type)],
    };
    let servers = match heat.list_resources(&target, &query).await {
        Ok(listing) => listing,
        Err(e) => {
            tracing::info!("server listing for Nova lookups failed: {e}");
            return;
        }
    };
    let member_of: HashMap<String, String> = servers
        .into_iter()
        .filter_map(|r| {
            let member = r.resource.parent_resource?;
            Some((r.resource.physical_id?, member))
        })
        .collect();
    if member_of.is_empty() {
        return;
    }
    let query = ServerQuery {
        limit: Some(NOVA_PAGE),
        filters: Vec::new(),
    };
    let mut marker: Option<String> = None;
    let mut matched = 0;
    loop {
        let page = match nova.list_servers_page(&query, marker.as_deref()).await {
            Ok(page) => page,
            Err(e) => {
                tracing::info!("Nova server listing failed: {e}");
                return;
            }
        };
        let batch: Vec<NovaMatch> = page
            .items
            .iter()
            .filter_map(|server| {
                let member = member_of.get(&server.id)?;
                Some(NovaMatch {
                    member: member.clone(),
                    name: server.name.clone(),
                    addresses: server.fixed_ips(),
                })
            })
            .collect();
        matched += batch.len();
        if !batch.is_empty() && out.send(batch).await.is_err() {
            return;
        }
        // Stop once every member's server has been seen, or at the last page.
        match page.next {
            Some(next) if matched < member_of.len() && Some(&next) != marker.as_ref() => {
                marker = Some(next)
            }
            _ => return,
        }
    }
}

/// `(member name, addresses)` from a typed listing, keyed by the member that owns each
/// address resource (`parent_resource`, else the owning stack).
fn addresses_from_listing(
    resources: &[ResourceInfo],
    by_stack: &HashMap<String, String>,
    attribute: &str,
) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for r in resources {
        let member = r
            .resource
            .owner
            .as_ref()
            .and_then(|o| by_stack.get(&o.id).cloned())
            .or_else(|| r.resource.parent_resource.clone());
        let Some(member) = member else { continue };
        let addresses = r
            .attributes
            .as_ref()
            .and_then(|a| a.get(attribute))
            .map(addresses_in)
            .unwrap_or_default();
        if !addresses.is_empty() {
            out.push((member, addresses));
        }
    }
    out
}

struct Progress {
    started: Instant,
    /// The members listed; anything else a source reports (a member being deleted) is ignored.
    members: HashSet<String>,
    emitted: HashSet<String>,
    /// Members whose server name has been sent (with the address or after it).
    named: HashSet<String>,
    /// Names learned before any source had the member's address; they ride on that address.
    pending_names: HashMap<String, String>,
    stats: IpStats,
}

impl Progress {
    fn new(started: Instant, members: HashSet<String>) -> Self {
        Progress {
            started,
            stats: IpStats {
                members: members.len(),
                ..Default::default()
            },
            members,
            emitted: HashSet::new(),
            named: HashSet::new(),
            pending_names: HashMap::new(),
        }
    }

    /// Sends one member's addresses unless already sent, with its server name when known;
    /// a name for an already-sent member goes out on its own. False when the consumer is gone.
    async fn emit(
        &mut self,
        tx: &Sink,
        member: &str,
        addresses: Vec<String>,
        source: IpSource,
        name: Option<String>,
    ) -> bool {
        if !self.members.contains(member) {
            return true;
        }
        if !self.emitted.insert(member.to_string()) {
            return match name {
                Some(name) => self.name(tx, member, name).await,
                None => true,
            };
        }
        self.stats.found += 1;
        match source {
            IpSource::TypedListing => self.stats.from_listing += 1,
            IpSource::MemberOutput => self.stats.from_outputs += 1,
            IpSource::NovaServers => self.stats.from_nova += 1,
        }
        if self.stats.first_address_after.is_none() {
            self.stats.first_address_after = Some(self.started.elapsed());
        }
        let name = name.or_else(|| self.pending_names.remove(member));
        if name.is_some() {
            self.named.insert(member.to_string());
        }
        let address = NodeAddress {
            index: member.parse().ok(),
            member: member.to_string(),
            addresses,
            name,
        };
        tx.send(Ok(IpEvent::Address(address, source))).await.is_ok()
    }

    /// Records a member's server name: sent at once if its address is out (and the name is
    /// not), else kept for the address. False when the consumer is gone.
    async fn name(&mut self, tx: &Sink, member: &str, name: String) -> bool {
        if !self.members.contains(member) || self.named.contains(member) {
            return true;
        }
        if !self.emitted.contains(member) {
            self.pending_names.insert(member.to_string(), name);
            return true;
        }
        self.named.insert(member.to_string());
        let event = IpEvent::Named {
            member: member.to_string(),
            name,
        };
        tx.send(Ok(event)).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flattens_address_shapes() {
        assert_eq!(addresses_in(&json!("10.0.0.1")), vec!["10.0.0.1"]);
        assert_eq!(
            addresses_in(&json!(["10.0.0.1", "fd00::1"])),
            vec!["10.0.0.1", "fd00::1"]
        );
        assert_eq!(
            addresses_in(&json!({"private": [{"addr": "10.0.0.9", "version": 4}]})),
            vec!["10.0.0.9"]
        );
        assert!(addresses_in(&json!(null)).is_empty());
        assert!(addresses_in(&json!("")).is_empty());
    }

    fn progress(members: &[&str]) -> (Progress, Sink, mpsc::Receiver<Result<IpEvent, ApiError>>) {
        let (tx, rx) = mpsc::channel(16);
        let members = members.iter().map(|m| m.to_string()).collect();
        (Progress::new(Instant::now(), members), tx, rx)
    }

    fn drain(rx: &mut mpsc::Receiver<Result<IpEvent, ApiError>>) -> Vec<IpEvent> {
        let mut out = Vec::new();
        while let Ok(event) = rx.try_recv() {
            out.push(event.expect("no error events"));
        }
        out
    }

    fn address(member: &str, ip: &str, name: Option<&str>) -> NodeAddress {
        NodeAddress {
            member: member.to_string(),
            index: member.parse().ok(),
            addresses: vec![ip.to_string()],
            name: name.map(str::to_string),
        }
    }

    #[tokio::test]
    async fn nova_name_after_a_listing_address_follows_once() {
        let (mut p, tx, mut rx) = progress(&["0", "1"]);
        assert!(
            p.emit(
                &tx,
                "0",
                vec!["10.0.0.1".into()],
                IpSource::TypedListing,
                None
            )
            .await
        );
        // Nova's page comes later with the same member's address and its server name.
        let nova_ip = vec!["10.0.0.1".to_string()];
        let name = Some("k8s-a-node-0".to_string());
        assert!(
            p.emit(
                &tx,
                "0",
                nova_ip.clone(),
                IpSource::NovaServers,
                name.clone()
            )
            .await
        );
        // A repeated page (or a retry) must not name it twice.
        assert!(p.emit(&tx, "0", nova_ip, IpSource::NovaServers, name).await);
        assert_eq!(
            drain(&mut rx),
            vec![
                IpEvent::Address(address("0", "10.0.0.1", None), IpSource::TypedListing),
                IpEvent::Named {
                    member: "0".into(),
                    name: "k8s-a-node-0".into()
                },
            ]
        );
        assert_eq!(p.stats.found, 1);
        assert_eq!(p.stats.from_nova, 0);
    }

    #[tokio::test]
    async fn name_known_before_the_address_rides_on_it() {
        let (mut p, tx, mut rx) = progress(&["0", "1"]);
        // Nova lists the server while it has no address yet (BUILD): only the name.
        assert!(p.name(&tx, "1", "k8s-a-node-1".into()).await);
        assert!(drain(&mut rx).is_empty());
        assert!(
            p.emit(
                &tx,
                "1",
                vec!["10.0.0.2".into()],
                IpSource::MemberOutput,
                None
            )
            .await
        );
        assert!(p.name(&tx, "1", "k8s-a-node-1".into()).await);
        assert_eq!(
            drain(&mut rx),
            vec![IpEvent::Address(
                address("1", "10.0.0.2", Some("k8s-a-node-1")),
                IpSource::MemberOutput
            )]
        );
    }

    #[tokio::test]
    async fn names_of_members_not_listed_are_ignored() {
        let (mut p, tx, mut rx) = progress(&["0"]);
        assert!(p.name(&tx, "7", "k8s-a-node-7".into()).await);
        assert!(
            p.emit(
                &tx,
                "7",
                vec!["10.0.0.7".into()],
                IpSource::NovaServers,
                Some("k8s-a-node-7".into())
            )
            .await
        );
        assert!(drain(&mut rx).is_empty());
        assert!(p.named.is_empty() && p.pending_names.is_empty());
    }
}
