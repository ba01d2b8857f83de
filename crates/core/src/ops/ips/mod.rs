//! Node IP retrieval for the node groups of any Heat stack, streamed as addresses are found.
//!
//! Entry point: [`stream_group_ips`] (stack, optional group path). The groups and where their
//! members keep their addresses are discovered from Heat (`crate::ops::discover`): no group
//! name and no output name is assumed. Per group, sources race and each member is reported
//! once, attributed to it by where the value came from (provenance), never by position alone.
//! One module per source:
//! - `aggregate`: the owner's output over the whole group, one request when Heat holds it;
//! - `typed_listing`: one listing of every member's address resource with its attributes,
//!   the fastest way to the *whole* set on real Heat (200 members in about 1.1 s);
//! - **per-member outputs** (the race below): `outputs/{key}` on each member's nested stack, a
//!   bounded fan-out in index order, so the first addresses appear after a few round trips;
//! - `member_servers`: members that are servers themselves, their own attributes;
//! - `nova`, where the cloud has it: servers mapped to members by Heat's listing, addresses,
//!   names and images from Nova's pages. Nova's name rides on the member's address, or, when
//!   another source delivered that address first, follows as [`IpEvent::Named`].
//!
//! Addresses keep their network names where the source gives them, and `--network` keeps one
//! network's (`crate::ops::address_values`). When the typed listing answers, every member it
//! covers is emitted and the fan-out stops. If it fails (old Heat, another template), the
//! fan-out simply runs to the end. A member still being created without an address is
//! reported pending; one no source could resolve is reported failed with the reason; the
//! others still arrive.

use crate::api::error::ApiError;
use crate::api::heat::{HeatClient, ResourceInfo, ResourceQuery};
use crate::api::nova::NovaClient;
use crate::fetch::{fan_out, spawn_stream, AbortOnDrop};
use crate::model::{NodeAddress, StackRef};
pub use crate::ops::address_values::{addresses_in, found_in, Found};
pub use crate::ops::discover::Member;
use crate::ops::discover::{self, AddressPlan, GroupShape, TypedAddress};
pub use crate::ops::warm_outputs::WarmOutputs;
use crate::ops::warm_outputs::{OutputKey, Warmth};
use futures::stream::{BoxStream, StreamExt};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

// One module per address source (the member outputs' fan-out is the race's own, below).
mod aggregate;
mod group_run;
mod member_servers;
mod more;
mod nova;
mod progress;
mod servers;
mod typed_listing;
use aggregate::WarmUp;
use group_run::GroupRun;
use nova::{nova_addresses, NovaMatch};
use progress::{no_address, Progress};
use typed_listing::typed_listing;

/// Addresses kept per member: values from the cloud are bounded (the whole value already is,
/// by the transport's body limit).
const MAX_ADDRESSES: usize = 64;

/// How to find each member's address.
#[derive(Debug, Clone)]
pub struct IpOptions {
    /// Per-member output calls in flight at once (the shared request budget still applies).
    pub concurrency: usize,
    /// The member output holding the address(es), overriding discovery (`--output-key`, or
    /// the cloud's `caldera: {output_key}` in clouds.yaml). `None`: discovered per group.
    pub output_key: Option<String>,
    /// Skip the typed listing (for measuring the fan-out alone).
    pub typed_listing: bool,
    /// Skip the per-member fan-out (for measuring the typed listing alone).
    pub fan_out: bool,
    /// Use Nova's server listing when a Nova client is given.
    pub nova_servers: bool,
    /// Resource type of a member's machine, for mapping Nova servers to members.
    pub server_type: String,
    /// What is known of Heat's output cache (`crate::ops::warm_outputs`): with it, a group
    /// whose aggregate output Heat holds is answered by that one request, and a group found
    /// the long way has its aggregate resolved by Heat in the background for next time.
    /// `None`: the aggregate output is never asked for.
    pub heat_outputs: Option<WarmOutputs>,
    /// How long the aggregate output may take before the other sources start.
    pub aggregate_head_start: Duration,
    /// Only the addresses on this network (`--network NAME`), where the source names
    /// networks (a server's `networks`/`addresses`, Nova, any map of networks).
    pub network: Option<String>,
}

impl Default for IpOptions {
    fn default() -> Self {
        IpOptions {
            concurrency: 16,
            output_key: None,
            typed_listing: true,
            fan_out: true,
            nova_servers: true,
            server_type: "OS::Nova::Server".to_string(),
            heat_outputs: None,
            aggregate_head_start: Duration::from_secs(1),
            network: None,
        }
    }
}

/// Which source delivered an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpSource {
    /// The group's aggregate output, answered from Heat's cache.
    AggregateOutput,
    TypedListing,
    MemberOutput,
    NovaServers,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct IpStats {
    pub members: usize,
    pub found: usize,
    pub failed: usize,
    /// Members still being created, without an address yet.
    pub pending: usize,
    /// Members whose servers have no network (Heat says so): nodes with no address, not
    /// failures.
    pub no_network: usize,
    pub first_address_after: Option<Duration>,
    pub elapsed: Duration,
    pub from_listing: usize,
    pub from_outputs: usize,
    pub from_nova: usize,
    pub from_aggregate: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum IpEvent {
    /// The members are known (in index order, group after group); addresses follow.
    Members(Vec<Member>),
    /// Where a group's addresses are read (`found: true`), or what was tried when no source
    /// was found (`found: false`, one line for the whole group). One per group, after
    /// `Members`.
    Plan {
        group: String,
        found: bool,
        how: String,
        /// More of each member's addresses follow its first ones ([`IpEvent::MoreAddresses`],
        /// until the next `Plan` or `Done`): a printer that cannot amend a row holds the
        /// group's rows until then.
        more: bool,
    },
    /// A member's addresses, reported once per member by whichever source found them first.
    Address(NodeAddress, IpSource),
    /// A later source found more of a member's addresses (its floating IP beside the fixed
    /// one, its address on another network): the member's whole set now, the first ones
    /// first, to replace the row its `Address` made (never a second row). Only after that
    /// `Address`, and only when something was added.
    MoreAddresses(NodeAddress, IpSource),
    /// The server name of a member, when its `Address` did not carry it: another source won
    /// the race to the address, or no source found one (the name then precedes `Failed`).
    /// At most once per member.
    Named {
        member: String,
        name: String,
    },
    /// A member still being created has no address yet (not a failure).
    Pending {
        member: String,
        status: String,
    },
    Failed {
        member: String,
        reason: String,
    },
    /// A member whose servers have no network: Heat lists them complete, their `networks`
    /// and `addresses` empty (Nova's `networks: none`, a batch server on no network). A node
    /// with no address, not a failure: its row (no addresses, its server name where Heat
    /// gives it).
    NoNetwork(NodeAddress),
    /// A member's server as Nova lists it: its id (what the node's detail and a yank of the
    /// node's id name), and the image it runs (none for a boot-from-volume server): how the
    /// nodes view tells members on the old image from updated ones during a rolling update.
    /// Sent only by the Nova source, at most once per member.
    Server {
        member: String,
        id: String,
        image: Option<String>,
    },
    Done(IpStats),
}

/// Members of every node group of `target` (group after group, names prefixed by the group
/// path when there are several), or of the one group at `group` (a resource path).
pub async fn group_members(
    heat: &HeatClient,
    target: &StackRef,
    group: Option<&str>,
) -> Result<Vec<Member>, ApiError> {
    let groups = discover::discover_groups(heat, target).await?;
    let selected = select_groups(target, &groups, group)?;
    Ok(keyed_members(&selected))
}

/// Members of every node group of `target` (see [`group_members`]).
pub async fn list_members(heat: &HeatClient, target: &StackRef) -> Result<Vec<Member>, ApiError> {
    group_members(heat, target, None).await
}

/// The groups at `group` (or all), or a 404-like error that lists the groups there are.
fn select_groups(
    target: &StackRef,
    groups: &[GroupShape],
    group: Option<&str>,
) -> Result<Vec<GroupShape>, ApiError> {
    let selected: Vec<GroupShape> = discover::select(groups, group)
        .into_iter()
        .cloned()
        .collect();
    let Some(path) = group.filter(|_| selected.is_empty()) else {
        return Ok(selected);
    };
    // A member of a group (`datanodes/3`) is named by the group's path and its own name.
    let owner = groups
        .iter()
        .find(|g| !g.path.is_empty() && path.starts_with(&format!("{}/", g.path)));
    let known = match groups.is_empty() {
        true => "none".to_string(),
        false => groups
            .iter()
            .map(|g| g.path.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    };
    Err(ApiError::NotFound(match owner {
        Some(g) => format!(
            "'{path}' is a member of node group {} of stack {}, not a node group: the group's \
             path lists its members' addresses",
            g.path, target.name
        ),
        None => format!(
            "stack {} has no node group at '{path}' (node groups: {known})",
            target.name
        ),
    }))
}

/// The order of member rows in a finished table: by member key (`batch/0`, `web/2`,
/// `racks/1/nodes/10`), the numbers in it compared as numbers (`web/2` before `web/10`),
/// so rows read in the members' order whichever source answered first.
pub fn member_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut x, mut y) = (a, b);
    loop {
        let (Some(cx), Some(cy)) = (x.chars().next(), y.chars().next()) else {
            return x.len().cmp(&y.len());
        };
        let order = if cx.is_ascii_digit() && cy.is_ascii_digit() {
            let dx = x.len() - x.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let dy = y.len() - y.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let (nx, ny) = (&x[..dx], &y[..dy]);
            // Leading zeros aside, a longer run of digits is the larger number.
            let (tx, ty) = (nx.trim_start_matches('0'), ny.trim_start_matches('0'));
            let by_value = tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty));
            x = &x[dx..];
            y = &y[dy..];
            by_value.then_with(|| nx.len().cmp(&ny.len()))
        } else {
            x = &x[cx.len_utf8()..];
            y = &y[cy.len_utf8()..];
            cx.cmp(&cy)
        };
        if order != std::cmp::Ordering::Equal {
            return order;
        }
    }
}

/// A group's label in messages: its path, else (the stack is the group's own) its name.
pub fn group_label(group: &GroupShape) -> String {
    if group.path.is_empty() {
        group.name.clone()
    } else {
        group.path.clone()
    }
}

/// The members of `groups` with their group set; several groups prefix names with the path.
fn keyed_members(groups: &[GroupShape]) -> Vec<Member> {
    let qualify = groups.len() > 1;
    groups
        .iter()
        .flat_map(|g| {
            g.members.iter().map(move |m| {
                let mut m = m.clone();
                m.group = g.path.clone();
                if qualify {
                    m.name = crate::model::member_key(&group_label(g), &m.name);
                }
                m
            })
        })
        .collect()
}

/// Streams the addresses of every member of every node group of `target`. See
/// [`stream_group_ips`].
pub fn stream_ips(
    heat: HeatClient,
    target: StackRef,
    options: IpOptions,
) -> BoxStream<'static, Result<IpEvent, ApiError>> {
    stream_group_ips(heat, None, target, None, options)
}

/// Like [`stream_ips`], with Nova as a third source when the cloud has it.
pub fn stream_ips_with(
    heat: HeatClient,
    nova: Option<NovaClient>,
    target: StackRef,
    options: IpOptions,
) -> BoxStream<'static, Result<IpEvent, ApiError>> {
    stream_group_ips(heat, nova, target, None, options)
}

/// Members and addresses of the node group at resource path `group` of `stack`
/// (`kube_minions`, `roles/Compute`), or of every node group of `stack` when `None` (member
/// names then carry their group's path when there are several groups). A path that names no
/// group is a 404 error listing the groups there are.
///
/// Events: `Members` once, then per group a `Plan` line and its addresses, then `Pending` /
/// `Failed` for members without one, then `Done`. Dropping the stream stops all outstanding
/// requests.
pub fn stream_group_ips(
    heat: HeatClient,
    nova: Option<NovaClient>,
    stack: StackRef,
    group: Option<String>,
    options: IpOptions,
) -> BoxStream<'static, Result<IpEvent, ApiError>> {
    spawn_stream(256, move |tx| run(heat, nova, stack, group, options, tx))
}

type Sink = mpsc::Sender<Result<IpEvent, ApiError>>;

async fn run(
    heat: HeatClient,
    nova: Option<NovaClient>,
    target: StackRef,
    group: Option<String>,
    options: IpOptions,
    tx: Sink,
) {
    let started = Instant::now();
    let groups = match discover::discover_groups(&heat, &target).await {
        Ok(g) => g,
        Err(e) => {
            let _ = tx.send(Err(e)).await;
            return;
        }
    };
    let selected = match select_groups(&target, &groups, group.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            let _ = tx.send(Err(e)).await;
            return;
        }
    };
    let members = keyed_members(&selected);
    let mut state = Progress::new(started, members.iter().map(|m| m.name.clone()).collect());
    if tx
        .send(Ok(IpEvent::Members(members.clone())))
        .await
        .is_err()
    {
        return;
    }
    if selected.is_empty() {
        let event = IpEvent::Plan {
            group: String::new(),
            found: false,
            how: format!(
                "no node group: stack {} has no {} (searched nested stacks too)",
                target.name,
                discover::GROUP_TYPES.join(" or ")
            ),
            more: false,
        };
        if tx.send(Ok(event)).await.is_err() {
            return;
        }
    }
    // Every group's plan at once (template reads), then the groups' sources one group after
    // the other.
    let plans = futures::future::join_all(
        selected
            .iter()
            .map(|g| discover::plan_addresses(&heat, g, options.output_key.as_deref())),
    )
    .await;
    let qualify = selected.len() > 1;
    let mut reasons: HashMap<String, String> = HashMap::new();
    let mut warm_ups = Vec::new();
    for (group, plan) in selected.iter().zip(&plans) {
        let label = group_label(group);
        // Without an output to read, Nova's server list may still know the members' servers.
        let nova_only = plan.is_empty() && nova.is_some() && options.nova_servers;
        let event = IpEvent::Plan {
            group: label.clone(),
            found: !plan.is_empty() || group.members.is_empty() || nova_only,
            how: if group.members.is_empty() {
                "no members".to_string()
            } else if nova_only {
                format!("Nova's server list only ({})", plan.describe())
            } else {
                plan.describe()
            },
            more: !plan.more.is_empty(),
        };
        if tx.send(Ok(event)).await.is_err() {
            return;
        }
        let keys: Vec<(String, &Member)> = group
            .members
            .iter()
            .map(|m| {
                let key = if qualify {
                    format!("{label}/{}", m.name)
                } else {
                    m.name.clone()
                };
                (key, m)
            })
            .collect();
        if plan.is_empty() {
            for (key, _) in &keys {
                reasons.insert(key.clone(), format!("{label}: {}", plan.describe()));
            }
        }
        let ctx = GroupRun {
            heat: &heat,
            nova: nova.as_ref(),
            group,
            plan,
            options: &options,
            keys: &keys,
        };
        if !ctx.run(&mut state, &mut reasons, &mut warm_ups, &tx).await {
            return;
        }
    }

    for member in &members {
        if state.emitted.contains(&member.name) {
            continue;
        }
        // A node with no network: its row says so, with its server's name.
        if state.no_network.contains(&member.name) {
            state.stats.no_network += 1;
            let row = state.row(&member.name, None);
            if tx.send(Ok(IpEvent::NoNetwork(row))).await.is_err() {
                return;
            }
            continue;
        }
        // Nova listed the server without an address (still building): its name is still the
        // one the operator knows the node by.
        if let Some(name) = state.pending_names.remove(&member.name) {
            let event = IpEvent::Named {
                member: member.name.clone(),
                name,
            };
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
        let event = if member.is_pending() {
            state.stats.pending += 1;
            IpEvent::Pending {
                member: member.name.clone(),
                status: member.status.raw.clone(),
            }
        } else {
            // A failed member's own status says why better than its unresolvable output.
            let reason = member
                .status
                .is_failed()
                .then(|| {
                    format!(
                        "{}: {}",
                        member.status,
                        member.status_reason.clone().unwrap_or_default()
                    )
                })
                .or_else(|| reasons.remove(&member.name))
                .unwrap_or_else(|| "no address found".to_string());
            state.stats.failed += 1;
            IpEvent::Failed {
                member: member.name.clone(),
                reason,
            }
        };
        if tx.send(Ok(event)).await.is_err() {
            return;
        }
    }
    state.stats.elapsed = started.elapsed();
    if tx.send(Ok(IpEvent::Done(state.stats))).await.is_err() {
        return;
    }
    for w in warm_ups {
        w.send(&heat).await;
    }
}

#[cfg(test)]
mod tests {
    use super::aggregate::aggregate_addresses;
    use super::*;
    use crate::model::Status;
    use serde_json::json;

    #[test]
    fn aggregate_values_line_up_with_members_or_are_not_used() {
        let members = [
            member("0", "CREATE_COMPLETE", true),
            member("1", "CREATE_COMPLETE", true),
            member("3", "CREATE_COMPLETE", true),
        ];
        let keys: Vec<(String, &Member)> = members.iter().map(|m| (m.name.clone(), m)).collect();
        let list = json!(["10.0.0.1", ["10.0.0.2", "fd00::2"], null]);
        assert_eq!(
            plain(aggregate_addresses(&list, false, &keys, None)),
            vec![
                ("0".to_string(), vec!["10.0.0.1".to_string()]),
                (
                    "1".to_string(),
                    vec!["10.0.0.2".to_string(), "fd00::2".to_string()]
                ),
            ]
        );
        // A list of another length cannot be matched to members by position.
        assert!(aggregate_addresses(&json!(["10.0.0.1"]), false, &keys, None).is_empty());
        let map = json!({"3": "10.0.0.4", "9": "10.0.0.9"});
        assert_eq!(
            plain(aggregate_addresses(&map, true, &keys, None)),
            vec![("3".to_string(), vec!["10.0.0.4".to_string()])]
        );
        assert!(aggregate_addresses(&list, true, &keys, None).is_empty());
        // A map of networks per member: `--network` keeps one, and a member without it is
        // left to the other sources.
        let nets = json!([{"private": ["10.0.0.1"]}, {"private": ["10.0.0.2"], "storage": ["172.16.0.2"]}, {}]);
        assert_eq!(
            plain(aggregate_addresses(&nets, false, &keys, Some("storage"))),
            vec![("1".to_string(), vec!["172.16.0.2".to_string()])]
        );
    }

    fn plain(found: Vec<(String, Found)>) -> Vec<(String, Vec<String>)> {
        found.into_iter().map(|(k, f)| (k, f.addresses)).collect()
    }

    #[test]
    fn members_are_ordered_by_their_numbers_as_numbers() {
        let mut keys = vec![
            "web/10",
            "web/2",
            "db/1",
            "web/0",
            "racks/1/nodes/10",
            "racks/1/nodes/9",
            "batch",
            "web/02",
        ];
        keys.sort_by(|a, b| member_order(a, b));
        assert_eq!(
            keys,
            vec![
                "batch",
                "db/1",
                "racks/1/nodes/9",
                "racks/1/nodes/10",
                "web/0",
                "web/2",
                "web/02",
                "web/10"
            ]
        );
    }

    #[test]
    fn flattens_address_shapes() {
        assert_eq!(addresses_in(&json!("10.0.0.1")), vec!["10.0.0.1"]);
        assert_eq!(
            addresses_in(&json!(["10.0.0.1", "fd00::1"])),
            vec!["10.0.0.1", "fd00::1"]
        );
        assert_eq!(
            addresses_in(&json!({"private": [{"addr": "10.0.0.9", "version": 4}]})),
            vec!["10.0.0.9"]
        );
        assert!(addresses_in(&json!(null)).is_empty());
        assert!(addresses_in(&json!("")).is_empty());
        // Neutron's fixed_ips: the address, not the subnet id.
        assert_eq!(
            addresses_in(&json!([{"subnet_id": "3b1f-aa", "ip_address": "10.0.0.7"}])),
            vec!["10.0.0.7"]
        );
        // A map of named addresses; other values that are not addresses are left out.
        assert_eq!(
            addresses_in(&json!({"private": "10.0.0.8", "mac": "fa:16:3e:00:00:01"})),
            vec!["10.0.0.8"]
        );
        // JSON text holding any of these.
        assert_eq!(
            addresses_in(&json!("{\"ctlplane\": {\"ip\": \"192.168.24.9\"}}")),
            vec!["192.168.24.9"]
        );
        // Control characters from the cloud never reach the terminal.
        assert!(addresses_in(&json!("10.0.0.1\u{1b}[2J")).is_empty());
    }

    fn member(name: &str, status: &str, stack: bool) -> Member {
        Member {
            name: name.into(),
            index: name.parse().ok(),
            stack: stack.then(|| StackRef {
                name: format!("m{name}"),
                id: format!("m{name}"),
            }),
            status: Status::parse(status),
            status_reason: None,
            since: None,
            group: String::new(),
            resource_type: String::new(),
            physical_id: None,
            replacing: false,
        }
    }

    fn shape(path: &str, members: Vec<Member>) -> GroupShape {
        GroupShape {
            path: path.into(),
            name: path.rsplit('/').next().unwrap_or(path).into(),
            resource_type: "OS::Heat::ResourceGroup".into(),
            status: Status::parse("CREATE_COMPLETE"),
            owner: StackRef {
                name: "s".into(),
                id: "s".into(),
            },
            stack: None,
            members,
            updated_at: None,
        }
    }

    #[test]
    fn members_still_being_created_are_pending_not_failed() {
        assert!(member("0", "CREATE_IN_PROGRESS", true).is_pending());
        assert!(member("1", "INIT_COMPLETE", false).is_pending());
        assert!(member("2", "CREATE_COMPLETE", false).is_pending());
        assert!(!member("3", "CREATE_COMPLETE", true).is_pending());
        assert!(!member("4", "CREATE_FAILED", false).is_pending());
        assert!(!member("5", "UPDATE_FAILED", true).is_pending());
        // A server member has no nested stack with a real Nova: complete, not pending.
        let mut server = member("6", "CREATE_COMPLETE", false);
        server.resource_type = "OS::Nova::Server".into();
        assert!(!server.is_pending());
    }

    #[test]
    fn several_groups_prefix_member_names_with_the_path_one_does_not() {
        let groups = vec![
            shape("kube_masters", vec![member("0", "CREATE_COMPLETE", true)]),
            shape("roles/Compute", vec![member("3", "CREATE_COMPLETE", true)]),
        ];
        let keyed = keyed_members(&groups);
        let names: Vec<(&str, &str, Option<u32>)> = keyed
            .iter()
            .map(|m| (m.name.as_str(), m.group.as_str(), m.index))
            .collect();
        assert_eq!(
            names,
            vec![
                ("kube_masters/0", "kube_masters", Some(0)),
                ("roles/Compute/3", "roles/Compute", Some(3))
            ]
        );
        let one = keyed_members(&groups[1..]);
        assert_eq!(one[0].name, "3");
        assert_eq!(one[0].group, "roles/Compute");
        let target = StackRef {
            name: "s".into(),
            id: "s".into(),
        };
        let err = select_groups(&target, &groups, Some("nodes")).expect_err("no such group");
        assert!(err.is_not_found());
        assert!(
            err.to_string().contains("kube_masters, roles/Compute"),
            "{err}"
        );
        assert_eq!(
            select_groups(&target, &groups, Some("/roles/Compute/"))
                .unwrap()
                .len(),
            1
        );
    }

    fn progress(members: &[&str]) -> (Progress, Sink, mpsc::Receiver<Result<IpEvent, ApiError>>) {
        let (tx, rx) = mpsc::channel(16);
        let members = members.iter().map(|m| m.to_string()).collect();
        (Progress::new(Instant::now(), members), tx, rx)
    }

    fn drain(rx: &mut mpsc::Receiver<Result<IpEvent, ApiError>>) -> Vec<IpEvent> {
        let mut out = Vec::new();
        while let Ok(event) = rx.try_recv() {
            out.push(event.expect("no error events"));
        }
        out
    }

    fn address(member: &str, ip: &str, name: Option<&str>) -> NodeAddress {
        NodeAddress {
            member: member.to_string(),
            index: member.parse().ok(),
            addresses: vec![ip.to_string()],
            name: name.map(str::to_string),
            networks: Default::default(),
            outputs: Default::default(),
            left_out: 0,
        }
    }

    #[tokio::test]
    async fn nova_name_after_a_listing_address_follows_once() {
        let (mut p, tx, mut rx) = progress(&["0", "1"]);
        assert!(
            p.emit(
                &tx,
                "0",
                Found::from(vec!["10.0.0.1".to_string()]),
                IpSource::TypedListing,
                None
            )
            .await
        );
        // Nova's page comes later with the same member's address and its server name.
        let nova_ip = Found::from(vec!["10.0.0.1".to_string()]);
        let name = Some("k8s-a-node-0".to_string());
        assert!(
            p.emit(
                &tx,
                "0",
                nova_ip.clone(),
                IpSource::NovaServers,
                name.clone()
            )
            .await
        );
        // A repeated page (or a retry) must not name it twice.
        assert!(p.emit(&tx, "0", nova_ip, IpSource::NovaServers, name).await);
        assert_eq!(
            drain(&mut rx),
            vec![
                IpEvent::Address(address("0", "10.0.0.1", None), IpSource::TypedListing),
                IpEvent::Named {
                    member: "0".into(),
                    name: "k8s-a-node-0".into()
                },
            ]
        );
        assert_eq!(p.stats.found, 1);
        assert_eq!(p.stats.from_nova, 0);
    }

    #[tokio::test]
    async fn name_known_before_the_address_rides_on_it() {
        let (mut p, tx, mut rx) = progress(&["0", "1"]);
        // Nova lists the server while it has no address yet (BUILD): only the name.
        assert!(p.name(&tx, "1", "k8s-a-node-1".into()).await);
        assert!(drain(&mut rx).is_empty());
        assert!(
            p.emit(
                &tx,
                "1",
                Found::from(vec!["10.0.0.2".to_string()]),
                IpSource::MemberOutput,
                None
            )
            .await
        );
        assert!(p.name(&tx, "1", "k8s-a-node-1".into()).await);
        assert_eq!(
            drain(&mut rx),
            vec![IpEvent::Address(
                address("1", "10.0.0.2", Some("k8s-a-node-1")),
                IpSource::MemberOutput
            )]
        );
    }

    /// A hostile output with thousands of addresses for one node: the row keeps
    /// `MAX_ADDRESSES`, and says how many it left out; a later source's thousands too.
    #[tokio::test]
    async fn thousands_of_addresses_per_node_are_cut_with_a_marker() {
        let (mut p, tx, mut rx) = progress(&["0"]);
        let many = |net: u8| -> Found {
            let ips = (0..5000u32).map(|i| format!("10.{net}.{}.{}", i / 256, i % 256));
            Found::from(ips.collect::<Vec<_>>())
        };
        assert!(
            p.emit(&tx, "0", many(1), IpSource::MemberOutput, None)
                .await
        );
        assert!(
            p.add(&tx, "0", many(2), IpSource::TypedListing, "external_ip")
                .await
        );
        // What the row holds, met again, adds nothing: no event.
        let kept = p.shown["0"].addresses.clone();
        assert!(
            p.add(&tx, "0", Found::from(kept), IpSource::TypedListing, "ip")
                .await
        );
        let events = drain(&mut rx);
        let [IpEvent::Address(first, _), IpEvent::MoreAddresses(more, _)] = events.as_slice()
        else {
            panic!("{} events", events.len())
        };
        assert_eq!(
            (first.addresses.len(), first.left_out),
            (MAX_ADDRESSES, 5000 - MAX_ADDRESSES)
        );
        assert_eq!(more.addresses, first.addresses);
        assert_eq!(more.left_out, 10_000 - MAX_ADDRESSES);
        // Nothing of the second source was kept: no label for it.
        assert!(!more.outputs.contains_key("external_ip"));
        // The same addresses left out, given again by another source: counted once.
        assert!(
            p.add(&tx, "0", many(2), IpSource::MemberOutput, "public_ip")
                .await
        );
        assert!(drain(&mut rx).is_empty(), "nothing new");
        assert_eq!(p.shown["0"].left_out, 10_000 - MAX_ADDRESSES);
    }

    #[tokio::test]
    async fn names_of_members_not_listed_are_ignored() {
        let (mut p, tx, mut rx) = progress(&["0"]);
        assert!(p.name(&tx, "7", "k8s-a-node-7".into()).await);
        assert!(
            p.emit(
                &tx,
                "7",
                Found::from(vec!["10.0.0.7".to_string()]),
                IpSource::NovaServers,
                Some("k8s-a-node-7".into())
            )
            .await
        );
        assert!(drain(&mut rx).is_empty());
        assert!(p.named.is_empty() && p.pending_names.is_empty());
    }
}
