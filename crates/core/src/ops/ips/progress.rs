//! What the stream has sent so far: each member's addresses (added to by later sources,
//! bounded), its server's name and image, and the counts `ips` ends with.

use super::*;
/// Adds `found` to a member's `address` (each address once, its network and `label` kept),
/// at most [`MAX_ADDRESSES`]: the ones beyond are counted in `left_out`, the marker that the
/// list was cut, each once however many sources give it (`left`: those left out so far).
/// True when an address was added or left out.
pub(super) fn add_to(
    address: &mut NodeAddress,
    left: &mut HashSet<String>,
    found: Found,
    label: Option<&str>,
) -> bool {
    let mut changed = false;
    for ip in found.addresses {
        // One address met twice (an instance object's `internal_ip` and `management_ip`
        // both reading the server's first address, a floating IP output that is the fixed
        // one without floating IPs) is listed once; left out, counted once.
        if address.addresses.contains(&ip) || left.contains(&ip) {
            continue;
        }
        changed = true;
        if address.addresses.len() >= MAX_ADDRESSES {
            address.left_out = address.left_out.saturating_add(1);
            left.insert(ip);
            continue;
        }
        for (net, ips) in &found.networks {
            if ips.contains(&ip) {
                let on = address.networks.entry(net.clone()).or_default();
                on.push(ip.clone());
            }
        }
        if let Some(label) = label {
            let from = address.outputs.entry(label.to_string()).or_default();
            from.push(ip.clone());
        }
        address.addresses.push(ip);
    }
    changed
}

/// The reason a member output gave no address.
pub(super) fn no_address(key: &str, network: Option<&str>) -> String {
    match network {
        Some(n) => format!("output '{key}' has no address on network {n}"),
        None => format!("output '{key}' has no address"),
    }
}

pub(super) struct Progress {
    pub(super) started: Instant,
    /// The members listed; anything else a source reports (a member being deleted) is ignored.
    pub(super) members: HashSet<String>,
    pub(super) emitted: HashSet<String>,
    /// Members whose server name has been sent (with the address or after it).
    pub(super) named: HashSet<String>,
    /// Members whose server (its id and image) has been sent.
    pub(super) servers_sent: HashSet<String>,
    /// Names learned before any source had the member's address; they ride on that address.
    pub(super) pending_names: HashMap<String, String>,
    /// What was sent of each member: a later source's addresses are added to it.
    pub(super) shown: HashMap<String, NodeAddress>,
    /// The member output the current group's first addresses come from (the addresses are
    /// labelled with it).
    pub(super) label: Option<String>,
    /// Per member, the addresses left out past [`MAX_ADDRESSES`] (each counted once).
    pub(super) left: HashMap<String, HashSet<String>>,
    /// Members whose servers Heat lists with no network (see [`IpEvent::NoNetwork`]).
    pub(super) no_network: HashSet<String>,
    pub(super) stats: IpStats,
}

impl Progress {
    pub(super) fn new(started: Instant, members: HashSet<String>) -> Self {
        Progress {
            started,
            stats: IpStats {
                members: members.len(),
                ..Default::default()
            },
            members,
            emitted: HashSet::new(),
            named: HashSet::new(),
            servers_sent: HashSet::new(),
            pending_names: HashMap::new(),
            shown: HashMap::new(),
            label: None,
            left: HashMap::new(),
            no_network: HashSet::new(),
        }
    }

    /// Sends one member's addresses unless already sent, with its server name when known;
    /// a name for an already-sent member goes out on its own. False when the consumer is gone.
    pub(super) async fn emit(
        &mut self,
        tx: &Sink,
        member: &str,
        found: Found,
        source: IpSource,
        name: Option<String>,
    ) -> bool {
        let label = self.label.clone();
        self.emit_labelled(tx, member, found, source, name, label)
            .await
    }

    /// [`Progress::emit`], the addresses labelled with the member output they came from.
    pub(super) async fn emit_labelled(
        &mut self,
        tx: &Sink,
        member: &str,
        found: Found,
        source: IpSource,
        name: Option<String>,
        label: Option<String>,
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
            IpSource::AggregateOutput => self.stats.from_aggregate += 1,
        }
        if self.stats.first_address_after.is_none() {
            self.stats.first_address_after = Some(self.started.elapsed());
        }
        let mut address = self.row(member, name);
        let left = self.left.entry(member.to_string()).or_default();
        add_to(&mut address, left, found, label.as_deref());
        self.shown.insert(member.to_string(), address.clone());
        tx.send(Ok(IpEvent::Address(address, source))).await.is_ok()
    }

    /// Adds the addresses a later source found for a member (`label`: the member output they
    /// were read from): sent as the member's whole set in [`IpEvent::MoreAddresses`] when
    /// something is new, as its first [`IpEvent::Address`] when no source had found it yet.
    /// False when the consumer is gone.
    pub(super) async fn add(
        &mut self,
        tx: &Sink,
        member: &str,
        found: Found,
        source: IpSource,
        label: &str,
    ) -> bool {
        let Some(shown) = self.shown.get_mut(member) else {
            let label = Some(label.to_string());
            return self
                .emit_labelled(tx, member, found, source, None, label)
                .await;
        };
        let left = self.left.entry(member.to_string()).or_default();
        if !add_to(shown, left, found, Some(label)) {
            return true;
        }
        let event = IpEvent::MoreAddresses(shown.clone(), source);
        tx.send(Ok(event)).await.is_ok()
    }

    /// A member's row with no address yet, its server name (given, else one learned before)
    /// on it.
    pub(super) fn row(&mut self, member: &str, name: Option<String>) -> NodeAddress {
        let name = name.or_else(|| self.pending_names.remove(member));
        if name.is_some() {
            self.named.insert(member.to_string());
        }
        NodeAddress {
            // `"17"`, or `"kube_minions/17"` in a stream over several groups.
            index: crate::model::split_member_key(member).1.parse().ok(),
            member: member.to_string(),
            addresses: Vec::new(),
            name,
            networks: BTreeMap::new(),
            outputs: BTreeMap::new(),
            left_out: 0,
        }
    }

    /// Sends a member's server (its id and image), once per member. False when the
    /// consumer is gone.
    pub(super) async fn server(
        &mut self,
        tx: &Sink,
        member: &str,
        id: &str,
        image: Option<&str>,
    ) -> bool {
        if !self.members.contains(member) || !self.servers_sent.insert(member.to_string()) {
            return true;
        }
        let event = IpEvent::Server {
            member: member.to_string(),
            id: id.to_string(),
            image: image.map(str::to_string),
        };
        tx.send(Ok(event)).await.is_ok()
    }

    /// Records a member's server name: sent at once if its address is out (and the name is
    /// not), else kept for the address. False when the consumer is gone.
    pub(super) async fn name(&mut self, tx: &Sink, member: &str, name: String) -> bool {
        if !self.members.contains(member) || self.named.contains(member) {
            return true;
        }
        if !self.emitted.contains(member) {
            self.pending_names.insert(member.to_string(), name);
            return true;
        }
        self.named.insert(member.to_string());
        if let Some(shown) = self.shown.get_mut(member) {
            shown.name = Some(name.clone());
        }
        let event = IpEvent::Named {
            member: member.to_string(),
            name,
        };
        tx.send(Ok(event)).await.is_ok()
    }
}
