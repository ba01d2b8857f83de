//! The image each member's server runs, from Nova, for telling old nodes from new ones during
//! a rolling update (Heat's member listing says only each member's status: a member Heat has
//! not reached yet shows `CREATE_COMPLETE` or `UPDATE_COMPLETE` on the old image).
//!
//! Two kinds of requests whatever the group's size: one typed listing of the members'
//! servers (`resources?nested_depth=2&type=OS::Nova::Server`, no details, so cheap) maps
//! server ids to members, then Nova's `servers/detail` pages (500 a page) give each server's
//! image, stopping once every mapped server is seen. Works for Heat-native and Magnum (Heat
//! driver) node groups alike: both run their members' machines as Nova servers.

use crate::api::error::ApiError;
use crate::api::heat::{HeatClient, ResourceQuery};
use crate::api::nova::{NovaClient, ServerQuery};
use crate::model::StackRef;
use std::collections::HashMap;

const NOVA_PAGE: u32 = 500;
/// Nova pages read at most (a cloud with many more servers than the group: the rest of the
/// members stay without an image rather than the lookup reading the whole cloud).
const MAX_PAGES: usize = 40;

/// Member name (`"17"`) -> image id, for the members of the group whose members live under
/// `members_at` (the node group's stack, or a Magnum default group's own nested stack).
pub async fn member_images(
    heat: &HeatClient,
    nova: &NovaClient,
    members_at: &StackRef,
    server_type: &str,
) -> Result<HashMap<String, String>, ApiError> {
    let query = ResourceQuery {
        nested_depth: Some(2),
        with_detail: false,
        filters: vec![("type".to_string(), server_type.to_string())],
    };
    let servers = heat.list_resources(members_at, &query).await?;
    // A member's server sits in the member's own stack: its parent resource is the member.
    let member_of: HashMap<String, String> = servers
        .into_iter()
        .filter_map(|r| Some((r.resource.physical_id?, r.resource.parent_resource?)))
        .filter(|(id, _)| !id.is_empty())
        .collect();
    let mut out = HashMap::new();
    if member_of.is_empty() {
        return Ok(out);
    }
    let query = ServerQuery {
        limit: Some(NOVA_PAGE),
        filters: Vec::new(),
    };
    let mut marker: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let page = nova.list_servers_page(&query, marker.as_deref()).await?;
        for s in &page.items {
            if let (Some(member), Some(image)) = (member_of.get(&s.id), &s.image) {
                if !image.is_empty() {
                    out.insert(member.clone(), image.clone());
                }
            }
        }
        match page.next {
            Some(next) if out.len() < member_of.len() && Some(&next) != marker.as_ref() => {
                marker = Some(next)
            }
            _ => break,
        }
    }
    Ok(out)
}
