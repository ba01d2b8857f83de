//! The rest of each node's addresses: the member's other outputs that the group's owner reads
//! through the group (`discover::MoreOutput`), read once the first set of every member is
//! out. Heat gives each member a value of each (`{get_attr: [kube_minions,
//! kube_minion_external_ip]}` is one value per member, in index order), so what is an
//! address among them belongs to that node: its floating IP beside its fixed one, its
//! `internal_api` address on a port not attached to the server. Each output is read through
//! the resource it reads, every member's in one typed listing (as the first addresses are),
//! else on each member's stack; what is new is added to the member's row
//! ([`IpEvent::MoreAddresses`]), labelled with the output it came from. (The owner's output
//! over the whole group is not asked: Heat walks every member to resolve it, seconds on a
//! large group, unless it holds it already.)

use super::*;
use crate::ops::discover::MoreOutput;

impl GroupRun<'_> {
    /// Reads every other address output of the group's members and adds what it holds.
    /// Errors are left as reasons for members still without an address. False when the
    /// consumer is gone.
    pub(super) async fn read_more(
        &self,
        state: &mut Progress,
        reasons: &mut HashMap<String, String>,
        tx: &Sink,
    ) -> bool {
        for more in &self.plan.more {
            let listed = match (&more.typed, self.options.typed_listing) {
                (Some(typed), true) => self.more_listed(typed).await,
                _ => None,
            };
            let sent = match listed {
                Some(found) => self.add_all(state, tx, found, &more.key).await,
                None if self.options.fan_out => {
                    self.more_per_member(more, state, reasons, tx).await
                }
                None => true,
            };
            if !sent {
                return false;
            }
        }
        true
    }

    /// Every member's resource that `more` reads, in one typed listing with its attributes:
    /// each member's addresses in it (none for a member whose resource holds none, a
    /// floating IP resource laid out as `OS::Heat::None`). `None` when the listing failed.
    async fn more_listed(&self, typed: &TypedAddress) -> Option<Vec<(String, Found)>> {
        let group_stack = self.group.stack.clone()?;
        let by_stack: HashMap<String, String> = self
            .keys
            .iter()
            .filter_map(|(k, m)| m.stack.as_ref().map(|s| (s.id.clone(), k.clone())))
            .collect();
        let listed = typed_listing(
            self.heat.clone(),
            group_stack,
            typed.clone(),
            by_stack,
            self.options.network.clone(),
        )
        .await;
        listed
            .map_err(|e| tracing::info!("typed listing of {}: {e}", typed.resource_name))
            .ok()
    }

    /// Reads `more` on each settled member's stack (bounded fan-out) and adds what it holds.
    async fn more_per_member(
        &self,
        more: &MoreOutput,
        state: &mut Progress,
        reasons: &mut HashMap<String, String>,
        tx: &Sink,
    ) -> bool {
        let stacks: Vec<(String, StackRef)> = self
            .keys
            .iter()
            .filter(|(_, m)| !m.status.is_in_progress())
            .filter_map(|(k, m)| m.stack.clone().map(|s| (k.clone(), s)))
            .collect();
        let heat = self.heat.clone();
        let key = more.key.clone();
        let mut outputs = fan_out(stacks, self.options.concurrency, move |(_, stack)| {
            let heat = heat.clone();
            let key = key.clone();
            async move { heat.show_output(&stack, &key).await }
        })
        .boxed();
        let network = self.options.network.as_deref();
        while let Some(((member, _), output)) = outputs.next().await {
            match output {
                Ok(output) => {
                    let found = ip_addresses(found_in(&output.value, network));
                    if found.is_empty() {
                        continue;
                    }
                    let source = IpSource::MemberOutput;
                    if !state.add(tx, &member, found, source, &more.key).await {
                        return false;
                    }
                }
                Err(e) => {
                    if !state.emitted.contains(&member) {
                        reasons.insert(member, e.to_string());
                    }
                }
            }
        }
        true
    }

    async fn add_all(
        &self,
        state: &mut Progress,
        tx: &Sink,
        found: Vec<(String, Found)>,
        label: &str,
    ) -> bool {
        for (member, addresses) in found {
            let addresses = ip_addresses(addresses);
            if addresses.is_empty() {
                continue;
            }
            let source = IpSource::TypedListing;
            if !state.add(tx, &member, addresses, source, label).await {
                return false;
            }
        }
        true
    }
}

/// Only the values that are IP addresses (`10.0.0.5`, `fd00::5`, `10.0.0.5/24`): an output
/// read beside the node's address may hold other text (a name, an id), which is not one.
fn ip_addresses(found: Found) -> Found {
    let is_ip = |a: &String| {
        a.split('/')
            .next()
            .is_some_and(|ip| ip.parse::<std::net::IpAddr>().is_ok())
    };
    Found {
        addresses: found.addresses.into_iter().filter(is_ip).collect(),
        networks: found.networks,
    }
}
