//! The Nova source: the members' `OS::Nova::Server` resources (one typed listing without
//! details) map server ids to members, then `servers/detail` pages deliver addresses (by
//! network), server names and images a page at a time.

use super::*;
use crate::api::nova::{AddressKind, NovaClient, ServerQuery};

/// Servers asked of Nova per page.
const NOVA_PAGE: u32 = 500;

/// One member's server as Nova lists it.
#[derive(Debug)]
pub(super) struct NovaMatch {
    pub(super) member: String,
    /// The server's name (Magnum's `k8s-prod-abc123-node-17`).
    pub(super) name: String,
    /// Nova's id of the server.
    pub(super) server_id: String,
    /// Empty while the server has no fixed address yet; its name is still worth sending.
    pub(super) addresses: Found,
    /// The image id the server was booted from (none for boot-from-volume).
    pub(super) image: Option<String>,
    /// Nova has the server ACTIVE with no address on any network: it was booted with no
    /// network (`networks: none`), so its member is a node with no address, not a failure.
    pub(super) no_network: bool,
}

/// How a server found in Heat's listing is given to its member: by the member stack that
/// owns it, by the member's name, and (for members that are servers themselves) by the server
/// id discovery settled.
pub(super) struct MemberIndex {
    pub(super) by_stack: HashMap<String, String>,
    pub(super) by_name: HashMap<String, String>,
    pub(super) server_members: HashMap<String, String>,
}

/// Maps the members' servers to members, then pages through Nova's servers sending each
/// page's matches. Errors end this source quietly: the other sources carry on.
pub(super) async fn nova_addresses(
    heat: HeatClient,
    nova: NovaClient,
    group_stack: StackRef,
    server_type: String,
    index: MemberIndex,
    out: mpsc::Sender<Vec<NovaMatch>>,
) {
    let MemberIndex {
        by_stack,
        by_name,
        server_members,
    } = index;
    // Members that are servers themselves carry the server id discovery settled (their
    // replacement's, where Heat's listing still gives the replaced row): when every member
    // is one, Heat's typed listing would say nothing more.
    let servers = match server_members.len() == by_name.len() {
        true => Vec::new(),
        false => {
            let query = ResourceQuery {
                nested_depth: Some(2),
                with_detail: false,
                filters: vec![("type".to_string(), server_type)],
            };
            match heat.list_resources(&group_stack, &query).await {
                Ok(listing) => listing,
                Err(e) => {
                    tracing::info!("server listing for Nova lookups failed: {e}");
                    return;
                }
            }
        }
    };
    // A member whose template holds several servers: its server is the one Heat created
    // last.
    let mut newest: HashMap<String, (Option<chrono::DateTime<chrono::Utc>>, String)> =
        HashMap::new();
    let listed = servers.into_iter().filter_map(|r| {
        // The server's stack is a member's stack, else its parent resource is a member,
        // else it is a member itself (a group of servers: owned by the group's stack).
        let owner = r.resource.owner.as_ref();
        let member = owner
            .and_then(|o| by_stack.get(&o.id))
            .or_else(|| by_name.get(r.resource.parent_resource.as_deref()?))
            .or_else(|| {
                owner
                    .is_some_and(|o| o.id == group_stack.id)
                    .then(|| by_name.get(&r.resource.name))?
            })?
            .clone();
        Some((r.created_at, r.resource.physical_id?, member))
    });
    for (created, id, member) in listed {
        match newest.get(&member) {
            Some((seen, _)) if *seen >= created => {}
            _ => {
                newest.insert(member, (created, id));
            }
        }
    }
    // A member that is a server itself: the id discovery settled stands.
    let settled: HashSet<&String> = server_members.values().collect();
    let member_of: HashMap<String, String> = newest
        .into_iter()
        .filter(|(member, _)| !settled.contains(member))
        .map(|(member, (_, id))| (id, member))
        .chain(server_members.clone())
        .collect();
    if member_of.is_empty() {
        return;
    }
    let query = ServerQuery {
        limit: Some(NOVA_PAGE),
        filters: Vec::new(),
    };
    let mut marker: Option<String> = None;
    let mut seen: HashSet<String> = HashSet::new();
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
            .filter(|server| seen.insert(server.id.clone()))
            .filter_map(|server| {
                let member = member_of.get(&server.id)?;
                Some(NovaMatch {
                    member: member.clone(),
                    name: server.name.clone(),
                    server_id: server.id.clone(),
                    addresses: nova_found(server),
                    image: server.image.clone().filter(|i| !i.is_empty()),
                    no_network: server.status == "ACTIVE" && server.addresses.is_empty(),
                })
            })
            .collect();
        if !batch.is_empty() && out.send(batch).await.is_err() {
            return;
        }
        // Stop once every member's server has been seen, or at the last page.
        let missing = member_of.keys().any(|id| !seen.contains(id));
        match page.next {
            Some(next) if missing && Some(&next) != marker.as_ref() => marker = Some(next),
            _ => break,
        }
    }
    let missed: Vec<(String, String)> = member_of
        .into_iter()
        .filter(|(id, _)| !seen.contains(id))
        .take(MAX_MISSED)
        .collect();
    for chunk in missed.chunks(4) {
        let asked = chunk.iter().map(|(id, member)| {
            let nova = nova.clone();
            async move {
                nova.get_server(id)
                    .await
                    .ok()
                    .map(|s| missed_match(member, &s))
            }
        });
        let found: Vec<NovaMatch> = futures::future::join_all(asked)
            .await
            .into_iter()
            .flatten()
            .collect();
        if !found.is_empty() && out.send(found).await.is_err() {
            return;
        }
    }
}

/// Member servers Nova's pages did not give, asked for one by one, at most: paging with a
/// marker while servers are created or deleted beside it skips some (measured on Nova 34:
/// 5 of 7 came back in one listing; README's known differences), and a member left without
/// its server would read as having no address. A server gone since Heat listed it (404) is
/// left out, as the pages would have left it.
const MAX_MISSED: usize = 32;

/// One server asked for by id, as a page's match would have given it.
fn missed_match(member: &str, s: &crate::model::ServerDetail) -> NovaMatch {
    let mut addresses = Found::default();
    for a in s.addresses.iter().filter(|a| a.kind != "floating") {
        addresses.addresses.push(a.addr.clone());
        addresses
            .networks
            .entry(a.network.clone())
            .or_default()
            .push(a.addr.clone());
    }
    NovaMatch {
        member: member.to_string(),
        name: s.name.clone(),
        server_id: s.id.clone(),
        addresses,
        image: s.image.clone().filter(|i| !i.is_empty()),
        no_network: s.status == "ACTIVE" && s.addresses.is_empty(),
    }
}

/// A server's fixed addresses as Nova lists them, by network.
fn nova_found(server: &crate::api::nova::ServerInfo) -> Found {
    let mut found = Found::default();
    for a in server
        .addresses
        .iter()
        .filter(|a| a.kind != AddressKind::Floating)
    {
        found.addresses.push(a.addr.clone());
        found
            .networks
            .entry(a.network.clone())
            .or_default()
            .push(a.addr.clone());
    }
    found
}
