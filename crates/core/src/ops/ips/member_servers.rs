//! Addresses of group members that are servers themselves (`resource_def: {type:
//! OS::Nova::Server}`, Heat's own simplest group): no member stack to read an output of, so
//! the members' own attributes. One listing of the group's stack with details
//! (`resources?with_detail=true`) carries every member's resolved attributes; a server's
//! addresses are its `networks` (`{NET: [ip, ..]}`), else `addresses` (`{NET: [{addr}]}`),
//! else `first_address` (see `discover::SERVER_ADDRESS_ATTRIBUTES`).

use super::*;
use crate::ops::address_values::{found_in, Found};
use crate::ops::discover::SERVER_ADDRESS_ATTRIBUTES;

/// `(key, addresses, server name)` of each member of `group_stack` named in `keys` (member
/// resource name -> key in the stream): the name is the server's `name` attribute. Beside
/// them, what the same listing says of each member's server (`super::servers`: whether it
/// has a network at all).
pub(super) async fn addresses(
    heat: &HeatClient,
    group_stack: &StackRef,
    keys: &HashMap<String, String>,
    network: Option<&str>,
) -> Result<ServerMembers, ApiError> {
    let query = ResourceQuery {
        with_detail: true,
        ..Default::default()
    };
    let listing = heat.list_resources(group_stack, &query).await?;
    let servers = super::servers::by_member(&listing, group_stack, &HashMap::new(), keys);
    Ok((from_listing(&listing, keys, network), servers))
}

/// Each member's addresses and name, and its server as [`super::servers`] reads it.
type ServerMembers = (
    Vec<(String, Found, Option<String>)>,
    HashMap<String, super::servers::MemberServers>,
);

fn from_listing(
    listing: &[ResourceInfo],
    keys: &HashMap<String, String>,
    network: Option<&str>,
) -> Vec<(String, Found, Option<String>)> {
    listing
        .iter()
        .filter_map(|r| {
            let key = keys.get(&r.resource.name)?;
            let attributes = r.attributes.as_ref()?;
            let found = SERVER_ADDRESS_ATTRIBUTES.iter().find_map(|a| {
                let found = found_in(attributes.get(*a)?, network);
                (!found.is_empty()).then_some(found)
            })?;
            let name = attributes
                .get("name")
                .and_then(serde_json::Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_string);
            Some((key.clone(), found, name))
        })
        .collect()
}

impl GroupRun<'_> {
    /// Members that are servers: their own attributes, one listing of the group's stack.
    /// A failed listing leaves them to Nova. False when the consumer is gone.
    pub(super) async fn read_member_servers(
        &self,
        group_stack: &StackRef,
        state: &mut Progress,
        reasons: &mut HashMap<String, String>,
        tx: &Sink,
    ) -> bool {
        if let Some(n) = &self.options.network {
            for (key, _) in self.keys {
                reasons.insert(key.clone(), format!("no address on network {n}"));
            }
        }
        let keys: HashMap<String, String> = self
            .keys
            .iter()
            .map(|(k, m)| (m.name.clone(), k.clone()))
            .collect();
        let network = self.options.network.as_deref();
        let (found, servers) = match addresses(self.heat, group_stack, &keys, network).await {
            Ok(found) => found,
            Err(e) => {
                tracing::info!("server members of {}: {e}", self.group.path);
                return true;
            }
        };
        for (member, addresses, name) in found {
            if !state
                .emit(tx, &member, addresses, IpSource::TypedListing, name)
                .await
            {
                return false;
            }
        }
        // A server Heat lists with no network: a node with no address, not a failure, its
        // row named as its server.
        for (member, server) in servers {
            if server.has_no_network() && !state.emitted.contains(&member) {
                if let Some(name) = server.name() {
                    if !state.name(tx, &member, name).await {
                        return false;
                    }
                }
                state.no_network.insert(member);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{StackResource, Status};
    use serde_json::json;

    fn server(name: &str, attributes: serde_json::Value) -> ResourceInfo {
        ResourceInfo {
            resource: StackResource {
                name: name.into(),
                logical_id: name.into(),
                physical_id: None,
                resource_type: "OS::Nova::Server".into(),
                status: Status::parse("CREATE_COMPLETE"),
                status_reason: None,
                updated_at: None,
                owner: None,
                nested: None,
                parent_resource: None,
                required_by: vec![],
            },
            created_at: None,
            attributes: attributes.as_object().cloned(),
        }
    }

    #[test]
    fn a_server_members_addresses_are_its_own_attributes() {
        let listing = vec![
            server(
                "0",
                json!({"networks": {"private": ["10.0.0.4"], "storage": ["172.16.0.4"]}}),
            ),
            // Nova had no networks for it yet: its first address.
            server("1", json!({"networks": {}, "first_address": "10.0.0.5"})),
            server("2", json!({"networks": null})),
            server("9", json!({"first_address": "10.0.0.9"})),
        ];
        let keys: HashMap<String, String> = ["0", "1", "2"]
            .iter()
            .map(|k| (k.to_string(), format!("web/{k}")))
            .collect();
        let found: Vec<(String, Vec<String>)> = from_listing(&listing, &keys, None)
            .into_iter()
            .map(|(k, f, _)| (k, f.addresses))
            .collect();
        assert_eq!(
            found,
            vec![
                (
                    "web/0".to_string(),
                    vec!["10.0.0.4".to_string(), "172.16.0.4".to_string()]
                ),
                ("web/1".to_string(), vec!["10.0.0.5".to_string()]),
            ]
        );
        // One network picked: the members with an address on it, named.
        let storage = from_listing(&listing, &keys, Some("storage"));
        assert_eq!(storage.len(), 1);
        assert_eq!(storage[0].1.addresses, vec!["172.16.0.4"]);
        assert_eq!(storage[0].1.networks["storage"], vec!["172.16.0.4"]);
    }
}
