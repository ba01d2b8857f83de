//! What Heat says of each member's servers beside their addresses: the server's name (Heat's
//! `OS::Nova::Server` has a `name` attribute: Nova's name for it, `db-0`, `web-2`), and whether
//! it has a network at all. A server Heat lists complete whose `networks` and `addresses`
//! attributes are empty maps has no NIC (Nova's `networks: none`, a batch server on no
//! network): its member is a node with no address, not a failure ([`IpEvent::NoNetwork`]).
//!
//! One listing of the group's stack, filtered to the server type with details, carries every
//! member's servers with their resolved attributes; each server is given to its member by the
//! stack that owns it (a member's own stack, or a nested stack inside it, mapped by a second,
//! cheap listing only when needed). It runs beside the address sources and is read once they
//! are done.

use super::*;
use crate::ops::discover::SERVER_ADDRESS_ATTRIBUTES;
use serde_json::Value;

/// How deep below the group's stack servers are looked for: the member's stack and three
/// nested stacks inside it (a member wrapping its VM in another template).
const SERVER_DEPTH: u32 = 4;

/// One member's servers, as Heat lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct MemberServers {
    /// The servers' names, where Heat gives them (in the listing's order, each once).
    pub names: Vec<String>,
    /// Servers found.
    pub servers: usize,
    /// Of them, those Heat lists complete with no network.
    pub without_network: usize,
}

impl MemberServers {
    /// Every server of the member is there, complete, with no network.
    pub fn has_no_network(&self) -> bool {
        self.servers > 0 && self.without_network == self.servers
    }

    /// The name the operator knows the node by: its server's, or its servers' together.
    pub fn name(&self) -> Option<String> {
        (!self.names.is_empty()).then(|| self.names.join(", "))
    }
}

type ServersTask = AbortOnDrop<Result<HashMap<String, MemberServers>, ApiError>>;

impl GroupRun<'_> {
    /// Starts the listing of the group's servers (see the module's doc).
    pub(super) fn servers_task(&self, group_stack: &StackRef) -> ServersTask {
        let heat = self.heat.clone();
        let group_stack = group_stack.clone();
        let server_type = self.options.server_type.clone();
        let (by_stack, by_name) = self.member_index();
        AbortOnDrop(tokio::spawn(async move {
            member_servers(&heat, &group_stack, &server_type, by_stack, &by_name).await
        }))
    }

    /// Applies what the servers' listing found: each member's server name, and the members
    /// without an address whose servers have no network. A failed listing changes nothing.
    /// False when the consumer is gone.
    pub(super) async fn read_servers(
        &self,
        task: Option<ServersTask>,
        state: &mut Progress,
        tx: &Sink,
    ) -> bool {
        let Some(mut task) = task else {
            return true;
        };
        let found = match (&mut task.0).await {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                tracing::info!("servers of {}: {e}", self.group.path);
                return true;
            }
            Err(join) => {
                tracing::warn!("servers of {}: {join}", self.group.path);
                return true;
            }
        };
        for (key, _) in self.keys {
            let Some(servers) = found.get(key) else {
                continue;
            };
            if let Some(name) = servers.name() {
                if !state.name(tx, key, name).await {
                    return false;
                }
            }
            if servers.has_no_network() && !state.emitted.contains(key) {
                state.no_network.insert(key.clone());
            }
        }
        true
    }
}

/// Every member's servers (by member key), from the group's stack.
async fn member_servers(
    heat: &HeatClient,
    group_stack: &StackRef,
    server_type: &str,
    by_stack: HashMap<String, String>,
    by_name: &HashMap<String, String>,
) -> Result<HashMap<String, MemberServers>, ApiError> {
    let servers = heat
        .list_resources(
            group_stack,
            &ResourceQuery {
                nested_depth: Some(SERVER_DEPTH),
                with_detail: true,
                filters: vec![("type".to_string(), server_type.to_string())],
            },
        )
        .await?;
    let mut owners = by_stack;
    let deeper = servers.iter().any(|r| {
        r.resource
            .owner
            .as_ref()
            .is_some_and(|o| o.id != group_stack.id && !owners.contains_key(&o.id))
    });
    if deeper {
        // A server inside a nested stack of its member: the stacks between, mapped.
        let all = heat
            .list_resources(
                group_stack,
                &ResourceQuery {
                    nested_depth: Some(SERVER_DEPTH - 1),
                    ..Default::default()
                },
            )
            .await?;
        owners = stacks_to_members(owners, &all);
    }
    Ok(by_member(&servers, group_stack, &owners, by_name))
}

/// Extends `owners` (stack id -> member key) with every nested stack below those stacks.
fn stacks_to_members(
    mut owners: HashMap<String, String>,
    listing: &[ResourceInfo],
) -> HashMap<String, String> {
    // A listing's order is not depth order: one pass per level.
    for _ in 0..SERVER_DEPTH {
        let mut added = false;
        for r in listing {
            let (Some(owner), Some(nested)) = (&r.resource.owner, &r.resource.nested) else {
                continue;
            };
            let Some(member) = owners.get(&owner.id).cloned() else {
                continue;
            };
            if !owners.contains_key(&nested.id) {
                owners.insert(nested.id.clone(), member);
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    owners
}

/// The servers of `listing` by member: a server in the group's own stack is a member itself
/// (by name), one deeper belongs to the member owning its stack.
pub(super) fn by_member(
    listing: &[ResourceInfo],
    group_stack: &StackRef,
    owners: &HashMap<String, String>,
    by_name: &HashMap<String, String>,
) -> HashMap<String, MemberServers> {
    let mut out: HashMap<String, MemberServers> = HashMap::new();
    for r in listing {
        let Some(owner) = &r.resource.owner else {
            continue;
        };
        let member = match owner.id == group_stack.id {
            true => by_name.get(&r.resource.name),
            false => owners.get(&owner.id),
        };
        let Some(member) = member else {
            continue;
        };
        let entry = out.entry(member.clone()).or_default();
        entry.servers += 1;
        if has_no_network(r) {
            entry.without_network += 1;
        }
        let name = r
            .attributes
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        if let Some(name) = name {
            if !entry.names.iter().any(|n| n == name) {
                entry.names.push(name.to_string());
            }
        }
    }
    out
}

/// A server Heat lists complete (created or updated, not being made or removed) whose
/// `networks` or `addresses` attribute is an empty map and whose other address attributes
/// are empty too: Nova gave it no NIC. An attribute Heat could not resolve (null) says
/// nothing.
fn has_no_network(r: &ResourceInfo) -> bool {
    let status = &r.resource.status;
    if !status.is_complete() || matches!(status.action.as_str(), "INIT" | "DELETE") {
        return false;
    }
    let Some(attributes) = &r.attributes else {
        return false;
    };
    let empty_map = |k: &str| {
        attributes
            .get(k)
            .and_then(Value::as_object)
            .is_some_and(|m| m.is_empty())
    };
    let no_value = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    };
    (empty_map("networks") || empty_map("addresses"))
        && SERVER_ADDRESS_ATTRIBUTES
            .iter()
            .all(|a| attributes.get(*a).is_none_or(no_value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{StackResource, Status};
    use serde_json::json;

    fn stack(id: &str) -> StackRef {
        StackRef {
            name: id.into(),
            id: id.into(),
        }
    }

    fn server(name: &str, owner: &str, status: &str, attributes: Value) -> ResourceInfo {
        ResourceInfo {
            resource: StackResource {
                name: name.into(),
                logical_id: name.into(),
                physical_id: None,
                resource_type: "OS::Nova::Server".into(),
                status: Status::parse(status),
                status_reason: None,
                updated_at: None,
                owner: Some(stack(owner)),
                nested: None,
                parent_resource: None,
                required_by: vec![],
            },
            created_at: None,
            attributes: attributes.as_object().cloned(),
        }
    }

    /// Heat's word on a server with no NIC: complete, `networks` and `addresses` empty maps,
    /// `first_address` empty. One still being built, or whose attributes Heat could not
    /// resolve, says nothing.
    #[test]
    fn a_complete_server_with_empty_networks_has_no_network() {
        let none = json!({"name": "batch-0", "networks": {}, "addresses": {}, "first_address": ""});
        let group = stack("g");
        let listing = vec![
            server("0", "g", "CREATE_COMPLETE", none.clone()),
            server("1", "g", "CREATE_IN_PROGRESS", none.clone()),
            server("2", "g", "CREATE_COMPLETE", json!({"networks": null})),
            server(
                "3",
                "g",
                "CREATE_COMPLETE",
                json!({"name": "db-3", "networks": {}, "first_address": "10.0.0.3"}),
            ),
            // Two servers of one member (by its stack), one with a network.
            server(
                "app",
                "m4",
                "CREATE_COMPLETE",
                json!({"name": "app-4", "networks": {"p": ["10.0.0.4"]}}),
            ),
            server(
                "side",
                "m4",
                "CREATE_COMPLETE",
                json!({"name": "side-4", "networks": {}}),
            ),
        ];
        let by_name: HashMap<String, String> = ["0", "1", "2", "3"]
            .iter()
            .map(|k| (k.to_string(), format!("batch/{k}")))
            .collect();
        let owners: HashMap<String, String> = [("m4".to_string(), "web/4".to_string())].into();
        let found = by_member(&listing, &group, &owners, &by_name);
        let verdict = |k: &str| found[k].has_no_network();
        assert!(verdict("batch/0"));
        assert!(!verdict("batch/1"), "still being built");
        assert!(!verdict("batch/2"), "Heat could not say");
        assert!(!verdict("batch/3"), "it has an address");
        assert!(!verdict("web/4"), "one of its servers has a network");
        assert_eq!(found["batch/0"].name().as_deref(), Some("batch-0"));
        assert_eq!(found["web/4"].name().as_deref(), Some("app-4, side-4"));
        assert_eq!(found["batch/2"].name(), None);
    }

    #[test]
    fn servers_in_nested_stacks_belong_to_the_member_above_them() {
        let nested = |name: &str, owner: &str, inner: &str| {
            let mut r = server(name, owner, "CREATE_COMPLETE", json!({}));
            r.resource.nested = Some(stack(inner));
            r
        };
        // Member stack m0 holds `vm` (stack v0), which holds `wrap` (stack w0).
        let listing = vec![nested("wrap", "v0", "w0"), nested("vm", "m0", "v0")];
        let owners = stacks_to_members([("m0".into(), "0".into())].into(), &listing);
        assert_eq!(owners.get("w0").map(String::as_str), Some("0"));
        assert_eq!(owners.get("v0").map(String::as_str), Some("0"));
    }
}
