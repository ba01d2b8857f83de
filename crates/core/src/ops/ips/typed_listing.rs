//! The typed listing source: `resources?nested_depth=N&with_detail=true&type=<T>&name=<R>`
//! from the group's stack, one request that returns every member's address resource (the one
//! the members' address output reads, at whatever depth it sits) with its resolved attributes.

use super::*;

/// The typed listing of a group's address resource: listings of each nested template between
/// member and resource (cheap, no details) map the resource's owner stack to its member; the
/// resource's own listing (with details) carries the addresses. `(key, addresses)` pairs.
pub(super) async fn typed_listing(
    heat: HeatClient,
    group_stack: StackRef,
    typed: TypedAddress,
    by_stack: HashMap<String, String>,
    network: Option<String>,
) -> Result<Vec<(String, Found)>, ApiError> {
    let hop_queries: Vec<ResourceQuery> = typed
        .hops
        .iter()
        .enumerate()
        .map(|(i, hop)| ResourceQuery {
            nested_depth: Some(u32::try_from(i).unwrap_or(0) + 1),
            with_detail: false,
            filters: vec![
                ("type".to_string(), hop.resource_type.clone()),
                ("name".to_string(), hop.name.clone()),
            ],
        })
        .collect();
    let leaf = ResourceQuery {
        nested_depth: Some(typed.depth()),
        with_detail: true,
        filters: vec![
            ("type".to_string(), typed.resource_type.clone()),
            ("name".to_string(), typed.resource_name.clone()),
        ],
    };
    let (hops, resources) = futures::join!(
        futures::future::try_join_all(
            hop_queries
                .iter()
                .map(|q| heat.list_resources(&group_stack, q))
        ),
        heat.list_resources(&group_stack, &leaf)
    );
    let owners = discover::member_of_stacks(&by_stack, &hops?);
    Ok(addresses_from_listing(
        &resources?,
        &owners,
        &typed,
        network.as_deref(),
    ))
}

/// `(member key, addresses)` from a typed listing of the address resource, keyed by the
/// member whose stack (at whatever depth, see `discover::member_of_stacks`) owns it.
fn addresses_from_listing(
    resources: &[ResourceInfo],
    owners: &HashMap<String, String>,
    typed: &TypedAddress,
    network: Option<&str>,
) -> Vec<(String, Found)> {
    let mut out = Vec::new();
    for r in resources {
        // A resource never created (INIT, its member failed first) or being deleted holds
        // no address, whatever its attributes compute from properties (measured on Heat 27:
        // an INIT_COMPLETE OS::Heat::Value lists its value; Heat's outputs say null).
        if r.resource.name != typed.resource_name
            || matches!(r.resource.status.action.as_str(), "INIT" | "DELETE")
        {
            continue;
        }
        let Some(member) = r.resource.owner.as_ref().and_then(|o| owners.get(&o.id)) else {
            continue;
        };
        let addresses = r
            .attributes
            .as_ref()
            .and_then(|a| a.get(&typed.attribute))
            .and_then(|v| discover::value_at(v, &typed.path))
            .map(|v| found_in(&v, network))
            .unwrap_or_default();
        if !addresses.is_empty() {
            out.push((member.clone(), addresses));
        }
    }
    out
}
