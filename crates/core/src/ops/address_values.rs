//! Addresses in the values Heat and Nova give: a string, a list, a map of networks (Nova's
//! `networks` `{NET: [ip]}` and `addresses` `{NET: [{addr}]}`, `{"private": "10.0.0.5"}`),
//! Neutron's `fixed_ips` (`[{subnet_id, ip_address}]`), objects with address fields, or JSON
//! text holding any of those. A map's keys name the networks where the value says so; the
//! operator's `--network NAME` keeps the addresses on that one.

use crate::ops::discover::parse_json_text;
use serde_json::Value;
use std::collections::BTreeMap;

/// Characters per address: values from the cloud are bounded (the whole value already is, by
/// the transport's body limit).
const MAX_ADDRESS_LEN: usize = 255;
/// Nesting looked through.
const MAX_DEPTH: usize = 6;
/// Keys that name an address inside a map, best first.
const ADDRESS_KEYS: [&str; 5] = ["addr", "ip_address", "ip", "address", "fixed_ip"];

/// A member's addresses, with the networks that name them where the value does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub addresses: Vec<String>,
    /// Network name -> its addresses (a subset of `addresses`).
    pub networks: BTreeMap<String, Vec<String>>,
}

impl From<Vec<String>> for Found {
    fn from(addresses: Vec<String>) -> Found {
        Found {
            addresses,
            networks: BTreeMap::new(),
        }
    }
}

impl Found {
    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }

    /// Only the addresses on `network` (none when no network of the value has that name).
    pub fn on_network(self, network: Option<&str>) -> Found {
        let Some(name) = network else {
            return self;
        };
        let addresses = self.networks.get(name).cloned().unwrap_or_default();
        let networks = match addresses.is_empty() {
            true => BTreeMap::new(),
            false => [(name.to_string(), addresses.clone())].into(),
        };
        Found {
            addresses,
            networks,
        }
    }
}

/// The addresses in `value` with their network names, keeping those on `network` when given.
pub fn found_in(value: &Value, network: Option<&str>) -> Found {
    let parsed = match value {
        Value::String(s) => parse_json_text(s),
        _ => None,
    };
    let value = parsed.as_ref().unwrap_or(value);
    Found {
        addresses: addresses_in(value),
        networks: networks_in(value),
    }
    .on_network(network)
}

/// A map of networks: each key whose value holds addresses (`{NET: [ip]}`, `{NET: ip}`), unless
/// the map is itself one address (`{addr: ..}`, `{ip_address: ..}`).
fn networks_in(value: &Value) -> BTreeMap<String, Vec<String>> {
    let Value::Object(map) = value else {
        return BTreeMap::new();
    };
    if ADDRESS_KEYS.iter().any(|k| map.contains_key(*k)) {
        return BTreeMap::new();
    }
    map.iter()
        .filter_map(|(net, v)| {
            let mut out = Vec::new();
            collect_addresses(v, &mut out, 1, true);
            (!out.is_empty()).then(|| (net.clone(), out))
        })
        .collect()
}

/// Flattens an address value into strings (see the module doc). Bounded in depth and length;
/// strings with control characters are dropped.
pub fn addresses_in(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_addresses(value, &mut out, 0, false);
    out
}

fn collect_addresses(value: &Value, out: &mut Vec<String>, depth: usize, in_map: bool) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::String(s) => {
            if let Some(parsed) = parse_json_text(s) {
                collect_addresses(&parsed, out, depth + 1, false);
                return;
            }
            let t = s.trim();
            if t.is_empty() || t.len() > MAX_ADDRESS_LEN || t.chars().any(char::is_control) {
                return;
            }
            // A map's other values (subnet ids, MACs, names) are not addresses: only take
            // those that read as an IP address.
            if in_map
                && t.split('/')
                    .next()
                    .and_then(|a| a.parse::<std::net::IpAddr>().ok())
                    .is_none()
            {
                return;
            }
            out.push(t.to_string());
        }
        Value::Array(items) => {
            for item in items {
                collect_addresses(item, out, depth + 1, false);
            }
        }
        Value::Object(map) => {
            if let Some(v) = ADDRESS_KEYS.iter().find_map(|k| map.get(*k)) {
                collect_addresses(v, out, depth + 1, false);
            } else {
                for v in map.values() {
                    collect_addresses(v, out, depth + 1, true);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn networks_are_named_where_the_value_names_them() {
        let networks = json!({"private": ["10.0.0.4"], "storage": ["172.16.0.4"]});
        let found = found_in(&networks, None);
        assert_eq!(found.addresses, vec!["10.0.0.4", "172.16.0.4"]);
        assert_eq!(found.networks["storage"], vec!["172.16.0.4"]);
        assert_eq!(
            found_in(&networks, Some("storage")).addresses,
            vec!["172.16.0.4"]
        );
        assert!(found_in(&networks, Some("public")).is_empty());
        // Nova's addresses, as JSON text.
        let text = json!("{\"ctlplane\": [{\"addr\": \"192.168.24.9\", \"version\": 4}]}");
        assert_eq!(
            found_in(&text, Some("ctlplane")).addresses,
            vec!["192.168.24.9"]
        );
        // Neutron's fixed_ips name no network: listed, but no network picks them.
        let fixed = json!([{"subnet_id": "s", "ip_address": "10.0.0.7"}]);
        assert_eq!(found_in(&fixed, None).addresses, vec!["10.0.0.7"]);
        assert!(found_in(&fixed, None).networks.is_empty());
        assert!(found_in(&fixed, Some("private")).is_empty());
    }
}
