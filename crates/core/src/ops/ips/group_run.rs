//! One group's address sources raced: the member outputs' fan-out, the typed listing, the
//! members that are servers, Heat's listing of the group's servers and Nova, each member
//! reported once whichever answers first.

use super::*;
/// One group's address sources, raced.
pub(super) struct GroupRun<'a> {
    pub(super) heat: &'a HeatClient,
    pub(super) nova: Option<&'a NovaClient>,
    pub(super) group: &'a GroupShape,
    pub(super) plan: &'a AddressPlan,
    pub(super) options: &'a IpOptions,
    /// (key in the stream, member) for this group's members.
    pub(super) keys: &'a [(String, &'a Member)],
}

impl GroupRun<'_> {
    /// How a server found in Heat is told to be a member's: member stack id -> key (a member
    /// that is a template holding its server), member resource name -> key (a member that is
    /// the server itself).
    pub(super) fn member_index(&self) -> (HashMap<String, String>, HashMap<String, String>) {
        let by_stack = self
            .keys
            .iter()
            .filter_map(|(k, m)| m.stack.as_ref().map(|s| (s.id.clone(), k.clone())))
            .collect();
        let by_name = self
            .keys
            .iter()
            .map(|(k, m)| (m.name.clone(), k.clone()))
            .collect();
        (by_stack, by_name)
    }

    /// The members that are servers themselves, by their server's id as discovery settled it
    /// (a replacement's new server while Heat replaces one: `crate::ops::replaced`).
    pub(super) fn server_members(&self) -> HashMap<String, String> {
        self.keys
            .iter()
            .filter(|(_, m)| m.is_server())
            .filter_map(|(k, m)| Some((m.physical_id.clone()?, k.clone())))
            .collect()
    }

    /// Runs the sources until every member of the group has its address or every source is
    /// done. Errors of a source become reasons in `reasons`. False when the consumer is gone.
    pub(super) async fn run(
        &self,
        state: &mut Progress,
        reasons: &mut HashMap<String, String>,
        warm_ups: &mut Vec<WarmUp>,
        tx: &Sink,
    ) -> bool {
        let Some(group_stack) = self.group.stack.clone() else {
            return true;
        };
        // Addresses read from a member output are labelled with it, whether the group has
        // one address output or several: the same address reads the same way in both.
        state.label = self.plan.output_key.clone();
        let aggregate = self.aggregate();
        if let Some((memory, key, by_name)) = &aggregate {
            if !self.read_aggregate(memory, key, *by_name, state, tx).await {
                return false;
            }
        }
        if self.plan.member_servers
            && !self
                .read_member_servers(&group_stack, state, reasons, tx)
                .await
        {
            return false;
        }
        let heat = self.heat.clone();
        let options = self.options;
        let (by_stack, by_name) = self.member_index();
        let group_keys: HashSet<&str> = self.keys.iter().map(|(k, _)| k.as_str()).collect();
        // Every address already in (from the aggregate): only Nova's names may be missing.
        let answered = group_keys.iter().all(|k| state.emitted.contains(*k));
        // Heat's listing of the members' servers (their names, and whether they have a
        // network at all) runs beside the address sources. Not where Nova names the servers
        // (its own source), nor where Heat's cached aggregate answered every member in one
        // request (the warm path's point is that one request), nor where the members are
        // servers themselves (their own listing said it all).
        let nova_names = self.nova.is_some() && options.nova_servers;
        let needed = !nova_names && !answered && !self.plan.member_servers;
        let servers = needed.then(|| self.servers_task(&group_stack));

        let (nova_tx, mut nova_rx) = mpsc::channel::<Vec<NovaMatch>>(16);
        let nova_task = match self.nova.filter(|_| options.nova_servers) {
            Some(nova) => Some(AbortOnDrop(tokio::spawn(nova_addresses(
                heat.clone(),
                nova.clone(),
                group_stack.clone(),
                options.server_type.clone(),
                super::nova::MemberIndex {
                    by_stack: by_stack.clone(),
                    by_name: by_name.clone(),
                    server_members: self.server_members(),
                },
                nova_tx,
            )))),
            None => {
                drop(nova_tx);
                None
            }
        };
        let mut typed = match (&self.plan.typed, options.typed_listing && !answered) {
            (Some(t), true) => Some(AbortOnDrop(tokio::spawn(typed_listing(
                heat.clone(),
                group_stack.clone(),
                t.clone(),
                by_stack.clone(),
                options.network.clone(),
            )))),
            _ => None,
        };
        // Each member's stack, and whether it has settled: a member Heat is still creating
        // has not filled its outputs yet, so the other address outputs (`fallback_keys`) are
        // not asked of it; on a large create that would be one request more per key and
        // member for nothing.
        let with_stack: Vec<(String, StackRef, bool)> =
            match (&self.plan.output_key, options.fan_out && !answered) {
                (Some(_), true) => self
                    .keys
                    .iter()
                    .filter_map(|(k, m)| {
                        m.stack
                            .clone()
                            .map(|s| (k.clone(), s, !m.status.is_in_progress()))
                    })
                    .collect(),
                _ => Vec::new(),
            };
        let output_key = self.plan.output_key.clone().unwrap_or_default();
        let fallbacks = self.plan.fallback_keys.clone();
        let network = options.network.clone();
        let mut outputs = fan_out(
            with_stack,
            options.concurrency,
            move |(_, stack, settled)| {
                let heat = heat.clone();
                let key = output_key.clone();
                let fallbacks = fallbacks.clone();
                let network = network.clone();
                async move {
                    // The chosen output, else the first other address output that holds one.
                    let holds = |o: &Result<crate::api::heat::OutputValue, ApiError>| {
                        o.as_ref()
                            .is_ok_and(|o| !found_in(&o.value, network.as_deref()).is_empty())
                    };
                    let first = heat.show_output(&stack, &key).await;
                    if holds(&first) || !settled {
                        return first;
                    }
                    for other in &fallbacks {
                        let next = heat.show_output(&stack, other).await;
                        if holds(&next) {
                            return next;
                        }
                    }
                    first
                }
            },
        )
        .boxed();
        let mut typed_done = typed.is_none();
        let mut outputs_done = false;
        let mut nova_done = nova_task.is_none();
        let all_in = |state: &Progress| group_keys.iter().all(|k| state.emitted.contains(*k));
        let all_named = |state: &Progress| group_keys.iter().all(|k| state.named.contains(*k));

        loop {
            if all_in(state) {
                // Every address is in: the listing and the output calls have nothing left to
                // give. Nova may still be naming members, so it alone runs on.
                // Both are dropped, not just no longer polled: their requests in flight hold
                // request-budget permits that Nova's pages would otherwise wait for forever.
                typed_done = true;
                typed = None;
                outputs_done = true;
                outputs = futures::stream::empty().boxed();
                if all_named(state) {
                    nova_done = true;
                }
            }
            if typed_done && outputs_done && nova_done {
                break;
            }
            tokio::select! {
                // `typed` is there while `typed_done` is false; without it there is nothing to wait on.
                listing = async {
                    match typed.as_mut() {
                        Some(t) => (&mut t.0).await,
                        None => std::future::pending().await,
                    }
                }, if !typed_done => {
                    typed_done = true;
                    match listing {
                        Ok(Ok(found)) => {
                            for (member, addresses) in found {
                                if !state.emit(tx, &member, addresses, IpSource::TypedListing, None).await {
                                    return false;
                                }
                            }
                            // The listing is the whole truth for the members it covers; members
                            // it lacks still get their output call, which says why.
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
                                if !state.server(tx, &found.member, &found.server_id, found.image.as_deref()).await {
                                    return false;
                                }
                                // An output the operator named is the member's value: Nova
                                // then gives names only, never an address that would win the
                                // race against it.
                                if found.no_network && !state.emitted.contains(&found.member) {
                                    state.no_network.insert(found.member.clone());
                                }
                                let addresses = found.addresses.on_network(options.network.as_deref());
                                let sent = if addresses.is_empty() || options.output_key.is_some() {
                                    state.name(tx, &found.member, found.name).await
                                } else {
                                    state.emit(tx, &found.member, addresses, IpSource::NovaServers, Some(found.name)).await
                                };
                                if !sent {
                                    return false;
                                }
                            }
                        }
                    }
                }
                next = outputs.next(), if !outputs_done => {
                    match next {
                        None => outputs_done = true,
                        Some(((member, _, _), Ok(output))) => {
                            let addresses = found_in(&output.value, options.network.as_deref());
                            if addresses.is_empty() {
                                let reason = output.error.unwrap_or_else(|| no_address(&output.key, options.network.as_deref()));
                                reasons.insert(member, reason);
                            } else {
                                // A fallback may have answered: the label is the output read.
                                let label = state.label.as_ref().map(|_| output.key.clone());
                                if !state.emit_labelled(tx, &member, addresses, IpSource::MemberOutput, None, label).await {
                                    return false;
                                }
                            }
                        }
                        Some(((member, _, _), Err(e))) => {
                            reasons.insert(member, e.to_string());
                        }
                    }
                }
            }
        }
        // Every member's first set is out: the other outputs add the rest of each node's.
        if !self.read_more(state, reasons, tx).await {
            return false;
        }
        if !self.read_servers(servers, state, tx).await {
            return false;
        }
        if let Some((memory, key, _)) = aggregate {
            if all_in(state) && memory.get(&key).is_none() {
                warm_ups.push(WarmUp {
                    memory,
                    key,
                    owner: self.group.owner.clone(),
                });
            }
        }
        true
    }
}
