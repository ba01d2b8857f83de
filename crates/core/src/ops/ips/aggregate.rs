//! The aggregate source: the group's owner's output that is the member output over the whole
//! group (`kube_minions_private: {get_attr: [kube_minions, kube_minion_ip]}`), answered in one
//! request when Heat holds it resolved (`crate::ops::warm_outputs`), and warmed for next time
//! after a run that found the addresses the long way.

use super::*;

impl GroupRun<'_> {
    /// The group's aggregate output and its memory entry, when the aggregate may be used: the
    /// plan found one, the caller keeps a memory, and the group is settled (every member
    /// complete: a member being changed has no value yet).
    pub(super) fn aggregate(&self) -> Option<(WarmOutputs, OutputKey, bool)> {
        let memory = self.options.heat_outputs.clone()?;
        let aggregate = self.plan.aggregate.as_ref()?;
        let settled = self.group.status.is_complete()
            && !self.group.members.is_empty()
            && self.group.members.iter().all(|m| m.status.is_complete());
        if !settled || self.options.output_key.is_some() {
            return None;
        }
        let key = OutputKey {
            stack_id: self.group.owner.id.clone(),
            group: self.group.name.clone(),
            stamp: self.group.updated_at?.to_rfc3339(),
            output: aggregate.key.clone(),
        };
        Some((memory, key, aggregate.by_name))
    }

    /// Asks for the aggregate output first when Heat is known to hold it: an answer within
    /// the head start delivers every member it covers; a slow one is given up (Heat goes on
    /// resolving it) and remembered. False when the consumer is gone.
    pub(super) async fn read_aggregate(
        &self,
        memory: &WarmOutputs,
        key: &OutputKey,
        by_name: bool,
        state: &mut Progress,
        tx: &Sink,
    ) -> bool {
        let known = memory.get(key);
        if !matches!(
            known,
            Some(Warmth::Requested | Warmth::Warm | Warmth::Missed)
        ) {
            return true;
        }
        let asked = tokio::time::timeout(
            self.options.aggregate_head_start,
            self.heat.show_output(&self.group.owner, &key.output),
        )
        .await;
        let value = match asked {
            Ok(Ok(out)) if out.error.is_none() => out.value,
            Ok(Ok(out)) => {
                tracing::info!("aggregate {}: {:?}", key.output, out.error);
                return true;
            }
            Ok(Err(e)) => {
                tracing::info!("aggregate {}: {e}", key.output);
                return true;
            }
            Err(_) => {
                // Slow: Heat did not hold it, but resolves it now for this request. Asked
                // once more (Heat may have been busy, or the warm-up never reached it);
                // slow twice in a row, never again for this version of the group.
                let next = match known {
                    Some(Warmth::Missed) => Warmth::Cold,
                    _ => Warmth::Missed,
                };
                memory.set(key, next);
                return true;
            }
        };
        let network = self.options.network.as_deref();
        let found = aggregate_addresses(&value, by_name, self.keys, network);
        if found.is_empty() {
            return true;
        }
        memory.set(key, Warmth::Warm);
        for (member, addresses) in found {
            if !state
                .emit(tx, &member, addresses, IpSource::AggregateOutput, None)
                .await
            {
                return false;
            }
        }
        true
    }
}

/// A group found the long way, whose aggregate output Heat should resolve for next time.
pub(super) struct WarmUp {
    pub(super) memory: WarmOutputs,
    pub(super) key: OutputKey,
    pub(super) owner: StackRef,
}

/// How long the request budget may hold a warm-up back (after a long run it may be at its
/// per-second limit), and how long the sent request is given before it is left to Heat: long
/// enough to go out on the pooled connection, short enough not to hold up the command.
const WARM_UP_QUEUE: Duration = Duration::from_secs(2);
const WARM_UP_WAIT: Duration = Duration::from_millis(300);

impl WarmUp {
    /// Has Heat resolve the aggregate output, without waiting for the answer (Heat goes on
    /// and keeps the value), and remembers that it did. Runs after `Done`: every address is
    /// on screen already.
    pub(super) async fn send(self, heat: &HeatClient) {
        let budget = heat.transport().budget().clone();
        if tokio::time::timeout(WARM_UP_QUEUE, budget.until_free())
            .await
            .is_err()
        {
            return;
        }
        self.memory.set(&self.key, Warmth::Requested);
        let sent = tokio::time::timeout(
            WARM_UP_WAIT,
            heat.show_output(&self.owner, &self.key.output),
        )
        .await;
        if let Ok(Err(e)) = sent {
            tracing::info!("warming aggregate {}: {e}", self.key.output);
        }
    }
}

/// `(key, addresses)` per member from an aggregate output's value: a map by member name, or
/// a list in member index order that must have exactly one entry per member.
pub(super) fn aggregate_addresses(
    value: &serde_json::Value,
    by_name: bool,
    keys: &[(String, &Member)],
    network: Option<&str>,
) -> Vec<(String, Found)> {
    let entries: Vec<(String, &serde_json::Value)> = if by_name {
        let Some(map) = value.as_object() else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|(k, m)| map.get(&m.name).map(|v| (k.clone(), v)))
            .collect()
    } else {
        match value.as_array() {
            Some(list) if list.len() == keys.len() => keys
                .iter()
                .zip(list)
                .map(|((k, _), v)| (k.clone(), v))
                .collect(),
            _ => return Vec::new(),
        }
    };
    entries
        .into_iter()
        .map(|(k, v)| (k, found_in(v, network)))
        .filter(|(_, a)| !a.is_empty())
        .collect()
}
