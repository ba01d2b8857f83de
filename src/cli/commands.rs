//! The headless commands. Data goes to stdout as it arrives; progress and summaries to stderr.

use super::args::{ActionArgs, Command};
use super::ips_table::{IpsOut, IpsRow};
use super::output::{csv_line, Format, Table};
use super::targets::{
    find_cluster, node_targets, stacks_of, target_head, ClusterTarget, NodeTargets,
};
use crate::api::cloud::CloudConnection;
use crate::api::heat::{HeatClient, ResourceQuery, StackListQuery};
use crate::drivers::apply::ActionContext;
use crate::model::terminal_safe;
use crate::ops::discover::discover_groups;
use crate::ops::failures::deepest_failures;
use crate::ops::ips::{group_label, stream_group_ips, IpEvent, IpOptions};
use crate::progress::{cluster_in_state, group_in_state, InState, Progress};
use crate::service::live::LiveService;
use crate::service::{CloudService, ServiceError};
use futures::StreamExt;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::time::{Duration, Instant};

/// How deep `failures` looks; Heat caps it at its `max_nested_stack_depth` (5 by default).
const FAILURE_DEPTH: u32 = 5;

pub use super::output::CmdResult;

/// `actions`: where the journal is (`nodegroups` reads this machine's rollouts from it).
pub async fn run(command: Command, conn: CloudConnection, actions: &ActionArgs) -> CmdResult {
    let service = LiveService::new(conn.clone());
    match command {
        Command::Clusters { format } => clusters(&service, format).await,
        Command::Nodegroups { cluster, format } => {
            let action = super::operate::action_context(&conn, actions);
            nodegroups(&service, &conn, &action, &cluster, format).await
        }
        Command::Stacks { nested, format } => stacks(&conn.heat, nested, format).await,
        Command::Events {
            stack,
            follow,
            nested_depth,
            interval,
            max_events_per_stack,
            until_complete,
            format,
            since,
            tail,
        } => {
            let opts = super::follow::FollowOptions {
                follow,
                nested_depth,
                interval: Duration::from_secs_f64(interval.max(0.2)),
                max_events_per_stack,
                until_complete,
                format,
                since: since.map(Duration::from_secs_f64),
                tail,
            };
            super::follow::events(&service, &conn, &stack, opts).await
        }
        Command::Ips {
            target,
            format,
            concurrency,
            output_key,
            network,
            stream,
        } => {
            let options = IpOptions {
                concurrency,
                network,
                // The flag, else the cloud's setting, else discovered per node group.
                output_key: output_key.or_else(|| conn.settings.output_key.clone()),
                heat_outputs: Some(crate::ops::warm_outputs::WarmOutputs::default_location()),
                ..Default::default()
            };
            ips(&service, &conn, &target, options, format, stream).await
        }
        Command::Failures { stack, format } => failures(&service, &conn, &stack, format).await,
        Command::Deployments {
            target,
            failed,
            format,
        } => super::deployments::deployments(&service, &conn, &target, failed, format).await,
        Command::Why { target, format } => {
            // The journal: a rollout of this machine paused with nobody driving it is named.
            let action = super::operate::action_context(&conn, actions);
            super::why::why(&service, &conn, &action, &target, format).await
        }
        Command::Sim { .. } => Err("`caldera sim` is handled before connecting".into()),
        Command::Bench(_) => Err("`caldera bench` is handled before connecting".into()),
        Command::Journal { .. } => Err("`caldera journal` is handled before connecting".into()),
        Command::Fleet { .. } => Err("`caldera fleet` is handled before connecting".into()),
        Command::Scale { .. } | Command::Rollout { .. } | Command::Heat { .. } => {
            Err("action commands run through cli::operate::run".into())
        }
    }
}

pub fn print_table(table: &Table, format: Format) -> CmdResult {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match format {
        Format::Table => table.write_aligned(&mut out)?,
        Format::Csv => table.write_csv(&mut out)?,
        Format::Json => {
            let rows: Vec<serde_json::Map<String, serde_json::Value>> = table
                .rows
                .iter()
                .map(|row| {
                    table
                        .header
                        .iter()
                        .zip(row)
                        .enumerate()
                        .map(|(i, (k, v))| (k.clone(), table.json_value(i, v)))
                        .collect()
                })
                .collect();
            caldera_cloud::model::write_json(&mut out, &rows, true)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

/// The `in_state` and `since` cells: how long a cluster or node group has been in its
/// status (`12m`) and since when (RFC 3339, for scripts), by the core's rule (see
/// `progress::in_state`: an upgrade's age survives a scale).
fn since_cells(s: &InState, now: chrono::DateTime<chrono::Utc>) -> [String; 2] {
    match s.since {
        Some(t) => [s.age_text(now), t.to_rfc3339()],
        None => [String::new(), String::new()],
    }
}

/// A cluster's time in state: while it is in progress, its node groups' say when its update
/// started (a scale of another group saved the cluster again; see `progress::in_state`).
async fn cluster_since(service: &LiveService, c: &crate::model::Cluster) -> InState {
    let groups = match c.status.is_in_progress() {
        true => service.list_nodegroups(c.clone()).await.unwrap_or_default(),
        false => Vec::new(),
    };
    let states: Vec<InState> = groups
        .iter()
        .map(|g| group_in_state(g, None, None))
        .collect();
    let of_groups = groups.iter().map(|g| &g.status).zip(&states);
    cluster_in_state(c, of_groups, None)
}

async fn clusters(service: &LiveService, format: Format) -> CmdResult {
    let clusters = service.list_clusters().await?;
    if !service.info().has_magnum {
        // Heat-native clusters are listed all the same: say what the list is, not that
        // there is none.
        if clusters.is_empty() {
            eprintln!(
                "note: no Magnum endpoint on this cloud and no Heat-native clusters (try `caldera stacks`)"
            );
        } else {
            eprintln!("note: no Magnum endpoint on this cloud: Heat-native clusters only");
        }
    }
    let mut t = Table::new([
        "name",
        "id",
        "status",
        "in_state",
        "since",
        "health",
        "masters",
        "workers",
        "coe_version",
        "status_reason",
    ])
    .numbers(&["masters", "workers"]);
    let capi: Vec<String> = clusters
        .iter()
        .filter_map(|c| {
            c.capi
                .as_ref()
                .map(|k| format!("{} ({}, {})", c.name, k.driver.as_str(), k.name))
        })
        .collect();
    if !capi.is_empty() {
        eprintln!(
            "note: on Cluster API, no Heat stack (nodes from Nova): {}",
            terminal_safe(&capi.join(", "))
        );
    }
    let now = chrono::Utc::now();
    for c in &clusters {
        let [in_state, since] = since_cells(&cluster_since(service, c).await, now);
        t.push([
            c.name.clone(),
            c.id.clone(),
            c.status.raw.clone(),
            in_state,
            since,
            c.health.as_str().to_string(),
            c.master_count.to_string(),
            c.node_count.to_string(),
            opt(&c.coe_version),
            opt(&c.status_reason),
        ]);
    }
    print_table(&t, format)
}

/// A Cluster API cluster stays `CREATE_IN_PROGRESS` when it cannot be built: what its Nova
/// servers say instead, one line per node group that failed or stalled (on stderr, so the
/// table stays machine-readable; see `ops::capi_stall`). A single look: a stall is seen from
/// how long servers take, not from counts that never move.
async fn capi_verdicts(
    nova: &crate::api::nova::NovaClient,
    cluster: &crate::model::Cluster,
    capi: &crate::model::CapiCluster,
    groups: &[crate::model::NodeGroup],
) -> bool {
    use crate::ops::capi_nodes::cluster_servers;
    let servers = match cluster_servers(nova, capi).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "cluster {}: its servers could not be read from Nova: {}",
                terminal_safe(&cluster.name),
                terminal_safe(&e.to_string())
            );
            return true;
        }
    };
    let now = chrono::Utc::now();
    let mut said = false;
    for g in groups {
        let verdict = crate::progress::verdict_of_servers(g, cluster, capi, &servers, now);
        if let Some(line) = verdict.line(now) {
            eprintln!(
                "node group {} {}",
                terminal_safe(&g.name),
                terminal_safe(&line)
            );
            said = true;
        }
    }
    said
}

/// The progress model of each node group under an update (Heat or Magnum says it runs), by
/// group id: the same status `rollout status CLUSTER/GROUP` prints, so the two agree (a group
/// a rollout holds beside its target counts its own members of it).
async fn updates_of(
    conn: &CloudConnection,
    action: &ActionContext,
    cluster: &crate::model::Cluster,
    groups: &[crate::model::NodeGroup],
) -> HashMap<String, Progress> {
    let drivers = crate::drivers::resolve::Drivers::new(conn);
    let mut out = HashMap::new();
    for g in groups.iter().filter(|g| g.status.is_in_progress()) {
        let label = format!("{}/{}", cluster.name, g.name);
        let progress = match drivers.resolve(&label).await {
            Ok((target, _)) => super::operate::group_progress(conn, action, &target).await,
            Err(e) => Err(e),
        };
        match progress {
            Ok(p) => {
                out.insert(g.id.clone(), p);
            }
            // The list stays whole: the group's row says nothing of its update.
            Err(e) => eprintln!(
                "node group {}: its update could not be read: {}",
                terminal_safe(&g.name),
                terminal_safe(&e.to_string())
            ),
        }
    }
    out
}

/// The progress cells of a group's row: the model's when the group is under an update, else
/// idle (nothing moves: Heat and Magnum say it is at rest).
fn progress_cells(p: Option<&Progress>) -> [String; 4] {
    match p {
        Some(p) => p.cells(),
        None => [
            String::new(),
            crate::progress::State::Idle.label(),
            String::new(),
            String::new(),
        ],
    }
}

async fn nodegroups(
    service: &LiveService,
    conn: &CloudConnection,
    action: &ActionContext,
    target: &str,
    format: Format,
) -> CmdResult {
    let mut t = Table::new([
        "name", "id", "role", "flavor", "image", "zone", "nodes", "min", "max", "status",
        "in_state", "since", "progress", "state", "pace", "eta", "stack_id",
    ])
    .numbers(&["nodes", "min", "max"]);
    if let Some(found) = find_cluster(service, conn, target).await? {
        if let Some(capi) = &found.cluster.capi {
            eprintln!(
                "cluster {} runs on Cluster API ({}, cluster {}): no Heat stacks, nodes from Nova",
                terminal_safe(&found.cluster.name),
                capi.driver.as_str(),
                terminal_safe(&capi.name)
            );
        }
        if let (Some(capi), Some(nova)) = (&found.cluster.capi, &conn.nova) {
            capi_verdicts(nova, &found.cluster, capi, &found.nodegroups).await;
        }
        let updates = updates_of(conn, action, &found.cluster, &found.nodegroups).await;
        let now = chrono::Utc::now();
        for g in &found.nodegroups {
            let model = updates.get(&g.id);
            let [in_state, since] = since_cells(&group_in_state(g, model, None), now);
            let [progress, state, pace, eta] = progress_cells(model);
            t.push([
                g.name.clone(),
                g.id.clone(),
                g.role.as_str().to_string(),
                opt(&g.flavor),
                opt(&g.image),
                opt(&g.zone),
                g.node_count.to_string(),
                g.min_node_count.map(|n| n.to_string()).unwrap_or_default(),
                g.max_node_count.map(|n| n.to_string()).unwrap_or_default(),
                g.status.raw.clone(),
                in_state,
                since,
                progress,
                state,
                pace,
                eta,
                opt(&g.stack_id),
            ]);
        }
        return print_table(&t, format);
    }
    // Any stack: its scaling groups, named by resource path.
    let stack = conn.heat.resolve(target).await.map_err(|e| {
        if e.is_not_found() {
            ServiceError::new(
                crate::service::ErrorKind::NotFound,
                format!(
                    "'{}' is neither a cluster nor a stack",
                    terminal_safe(target)
                ),
            )
        } else {
            ServiceError::from(e)
        }
    })?;
    let groups = discover_groups(&conn.heat, &stack).await?;
    if groups.is_empty() {
        eprintln!(
            "stack {} has no scaling group ({})",
            terminal_safe(&stack.name),
            crate::ops::discover::GROUP_TYPES.join(", ")
        );
    }
    // Each group's image and flavor as the console's node groups show them: what its
    // members' servers boot, as Heat resolved it.
    let facts = futures::future::join_all(
        groups
            .iter()
            .map(|g| crate::service::plain_stack::member_facts(&conn.heat, g)),
    )
    .await;
    // Each group under an update: its progress as `rollout status STACK/GROUP` reads it
    // (a group a rollout holds beside its target counts its own members of it).
    let mut updates = HashMap::new();
    for g in groups.iter().filter(|g| g.status.is_in_progress()) {
        let label = group_label(g);
        let target = crate::drivers::any_group::group_target(&stack, &label);
        match super::operate::group_progress(conn, action, &target).await {
            Ok(p) => {
                updates.insert(label, p);
            }
            // The list stays whole: the group's row says nothing of its update.
            Err(e) => eprintln!(
                "group {}: its update could not be read: {}",
                terminal_safe(&label),
                terminal_safe(&e.to_string())
            ),
        }
    }
    for (g, facts) in groups.iter().zip(facts) {
        let [progress, state, pace, eta] = progress_cells(updates.get(&group_label(g)));
        t.push([
            group_label(g),
            g.stack.as_ref().map(|s| s.id.clone()).unwrap_or_default(),
            g.resource_type.clone(),
            facts.flavor.unwrap_or_default(),
            facts.image.unwrap_or_default(),
            String::new(),
            g.members.len().to_string(),
            String::new(),
            String::new(),
            g.status.raw.clone(),
            // A scaling group found in any stack: its resource status has no `created_at`.
            String::new(),
            String::new(),
            progress,
            state,
            pace,
            eta,
            g.owner.id.clone(),
        ]);
    }
    print_table(&t, format)
}

async fn stacks(heat: &HeatClient, nested: bool, format: Format) -> CmdResult {
    let query = StackListQuery {
        show_nested: nested,
        ..Default::default()
    };
    let mut stream = Box::pin(heat.list_stacks(query));
    let mut t = Table::new([
        "name",
        "id",
        "status",
        "created",
        "updated",
        "status_reason",
    ]);
    while let Some(stack) = stream.next().await {
        let s = stack?;
        t.push([
            s.stack.name,
            s.stack.id,
            s.status.raw,
            s.created_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
            s.updated_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
            s.status_reason.unwrap_or_default(),
        ]);
    }
    print_table(&t, format)
}

async fn ips(
    service: &LiveService,
    conn: &CloudConnection,
    target: &str,
    options: IpOptions,
    format: Format,
    stream_rows: bool,
) -> CmdResult {
    let started = Instant::now();
    let targets = match node_targets(service, conn, target).await? {
        NodeTargets::Stacks(t) => t,
        NodeTargets::ClusterApi(groups) => {
            return capi_ips(service, groups, format, started, stream_rows).await
        }
    };
    let stdout = io::stdout();
    // NAME is appended to the CSV columns so readers by position keep working.
    // writeln!, not println!: a closed pipe is an error to end on, not a panic.
    if format == Format::Csv {
        writeln!(stdout.lock(), "{CSV_HEADER}")?;
    }
    // The table's header waits for the first group list: by then every group is known (a
    // named group's label is its target's; a stack named alone is the one target).
    let labelled: Vec<String> = targets
        .iter()
        .filter(|t| !t.stack_alone)
        .map(|t| t.label.clone())
        .collect();
    let mut table = IpsOut::new(stream_rows);
    let (mut found, mut failed, mut members, mut late_names) = (0usize, 0usize, 0usize, 0usize);
    let mut first: Option<Duration> = None;
    let (mut pending, mut no_network) = (0usize, 0usize);
    for target in targets {
        let mut stream = stream_group_ips(
            conn.heat.clone(),
            conn.nova.clone(),
            target.stack.clone(),
            target.group.clone(),
            options.clone(),
        );
        // Member key in the stream -> (group column, member column).
        let mut rows: HashMap<String, (String, String)> = HashMap::new();
        let row_of = |rows: &HashMap<String, (String, String)>, key: &str| {
            rows.get(key)
                .cloned()
                .unwrap_or_else(|| (target.label.clone(), key.to_string()))
        };
        // Members without an address, by reason: one line per reason, not one per member.
        let mut failed_by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut pending_members: Vec<String> = Vec::new();
        // Rows are held until the target's last source is done, then printed in member
        // order. Streamed, only a group whose members' addresses come from several outputs
        // holds its rows, until the group's last source has added to them (a printed line
        // cannot be amended, and a member keeps one row).
        let mut holding = !stream_rows;
        let mut held: Vec<caldera_cloud::model::NodeAddress> = Vec::new();
        while let Some(event) = stream.next().await {
            match event? {
                IpEvent::Members(m) => {
                    members += m.len();
                    let mut per_group: BTreeMap<String, usize> = BTreeMap::new();
                    for member in &m {
                        let group = member_group_label(&target, member);
                        let bare = member
                            .name
                            .rsplit_once('/')
                            .map_or(member.name.clone(), |(_, n)| n.to_string());
                        *per_group.entry(group.clone()).or_default() += 1;
                        rows.insert(member.name.clone(), (group, bare));
                    }
                    if format == Format::Table {
                        let groups = per_group.keys().map(String::as_str);
                        table.header_once(
                            &mut stdout.lock(),
                            labelled.iter().map(String::as_str).chain(groups),
                        )?;
                    }
                    if per_group.is_empty() {
                        eprintln!("{}: 0 members", terminal_safe(&target.label));
                    }
                    for (group, n) in per_group {
                        eprintln!("{}: {n} members", terminal_safe(&group));
                    }
                }
                IpEvent::Plan {
                    group,
                    found,
                    how,
                    more,
                } => {
                    if stream_rows {
                        flush_held(&mut held, &rows, &target.label, format, &mut table)?;
                        holding = more;
                    }
                    let label = if target.group.is_some() || group.is_empty() {
                        target.label.clone()
                    } else {
                        format!("{}/{group}", target.label)
                    };
                    if found {
                        eprintln!(
                            "{}: addresses from {}",
                            terminal_safe(&label),
                            terminal_safe(&how)
                        );
                    } else {
                        eprintln!("{}: {}", terminal_safe(&label), terminal_safe(&how));
                    }
                }
                IpEvent::Address(a, _) => {
                    found += 1;
                    first.get_or_insert_with(|| started.elapsed());
                    if holding {
                        held.push(a);
                    } else {
                        let (group, member) = row_of(&rows, &a.member);
                        write_ip_row(&mut stdout.lock(), format, &mut table, &group, &member, &a)?;
                    }
                }
                // More of a held member's addresses: its row, not yet out, takes them.
                IpEvent::MoreAddresses(a, _) => {
                    if let Some(row) = held.iter_mut().find(|h| h.member == a.member) {
                        *row = a;
                    }
                }
                // A held row takes the name; a row already out keeps its one line, so a
                // name that lost the race is not printed (the console applies it).
                IpEvent::Named { member, name } => {
                    match held.iter_mut().find(|h| h.member == member) {
                        Some(row) => row.name = Some(name),
                        None => late_names += 1,
                    }
                }
                // The table lists addresses; images are for the nodes view.
                IpEvent::Server { .. } => {}
                IpEvent::Pending { member, .. } => {
                    pending += 1;
                    pending_members.push(member);
                }
                IpEvent::Failed { member, reason } => {
                    failed += 1;
                    failed_by_reason.entry(reason).or_default().push(member);
                }
                // A node with no network: its row says so (no addresses), no failure.
                IpEvent::NoNetwork(a) => {
                    no_network += 1;
                    if holding {
                        held.push(a);
                    } else {
                        let (group, member) = row_of(&rows, &a.member);
                        write_ip_row(&mut stdout.lock(), format, &mut table, &group, &member, &a)?;
                    }
                }
                IpEvent::Done(_) if stream_rows => {
                    flush_held(&mut held, &rows, &target.label, format, &mut table)?
                }
                IpEvent::Done(_) => {}
            }
        }
        // The rows in member order, whichever source answered first (streamed rows are out).
        held.sort_by(|a, b| crate::ops::ips::member_order(&a.member, &b.member));
        flush_held(&mut held, &rows, &target.label, format, &mut table)?;
        if !pending_members.is_empty() {
            eprintln!(
                "{}: {} member(s) still being created, no address yet: {}",
                terminal_safe(&target.label),
                pending_members.len(),
                terminal_safe(&few(&pending_members))
            );
        }
        for (reason, who) in failed_by_reason {
            eprintln!(
                "{}: {} member(s) without an address ({}): {}",
                terminal_safe(&target.label),
                who.len(),
                terminal_safe(&few(&who)),
                terminal_safe(&reason)
            );
        }
    }
    if format == Format::Table {
        table.finish(&mut stdout.lock(), labelled.iter().map(String::as_str))?;
    }
    let mut pending_note = if pending > 0 {
        format!(", {pending} pending")
    } else {
        String::new()
    };
    if no_network > 0 {
        pending_note.push_str(&format!(", {no_network} with no network"));
    }
    eprintln!(
        "{found}/{members} addresses, {failed} failed{pending_note}, first after {:.3}s, all in {:.3}s",
        first.unwrap_or_default().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    if late_names > 0 {
        eprintln!("{late_names} server name(s) arrived after their member's row");
    }
    if failed > 0 {
        return Err(format!("{failed} member(s) without an address").into());
    }
    Ok(())
}

/// `ips` on a Cluster API cluster: each node group's Nova servers (named after their
/// Machines) and their fixed addresses, in the rows and summary `ips` prints for stacks.
async fn capi_ips(
    service: &LiveService,
    groups: Vec<(String, crate::model::NodeGroup)>,
    format: Format,
    started: Instant,
    stream_rows: bool,
) -> CmdResult {
    use crate::service::NodeUpdate;
    let stdout = io::stdout();
    let labels: Vec<String> = groups.iter().map(|(label, _)| label.clone()).collect();
    let mut table = IpsOut::new(stream_rows);
    match format {
        Format::Csv => writeln!(stdout.lock(), "{CSV_HEADER}")?,
        Format::Table => {
            table.header_once(&mut stdout.lock(), labels.iter().map(String::as_str))?
        }
        Format::Json => {}
    }
    let (mut found, mut members) = (0usize, 0usize);
    let mut without: Vec<String> = Vec::new();
    for (label, g) in groups {
        if let Some(capi) = &g.capi {
            eprintln!(
                "{}: nodes from Nova (Cluster API, {}: servers named {}-...)",
                terminal_safe(&label),
                capi.driver.as_str(),
                terminal_safe(&capi.name)
            );
        }
        let mut stream = service.stream_nodes(g);
        let mut listed: Vec<String> = Vec::new();
        let mut addressed: Vec<String> = Vec::new();
        // Rows in member order at the end, or (`--stream`) as they arrive.
        let mut held: Vec<caldera_cloud::model::NodeAddress> = Vec::new();
        while let Some(update) = stream.next().await {
            match update? {
                // A list is sent again with its marks and images: the last one counts.
                NodeUpdate::Listed { nodes, .. } | NodeUpdate::Members(nodes) => {
                    if listed.is_empty() {
                        eprintln!("{}: {} members", terminal_safe(&label), nodes.len());
                    }
                    listed = nodes.into_iter().map(|n| n.name).collect();
                }
                NodeUpdate::Address(a) => {
                    found += 1;
                    addressed.push(a.member.clone());
                    match stream_rows {
                        true => capi_row(&mut stdout.lock(), format, &mut table, &label, &a)?,
                        // A later update of a member's addresses replaces its row.
                        false => match held.iter_mut().find(|h| h.member == a.member) {
                            Some(row) => *row = a,
                            None => held.push(a),
                        },
                    }
                }
                NodeUpdate::AddressFailed { member, .. } => without.push(member),
                NodeUpdate::Named { .. } | NodeUpdate::Done => {}
            }
        }
        held.sort_by(|a, b| crate::ops::ips::member_order(&a.member, &b.member));
        for a in held {
            capi_row(&mut stdout.lock(), format, &mut table, &label, &a)?;
        }
        members += listed.len();
        for n in listed {
            if !addressed.contains(&n) && !without.contains(&n) {
                without.push(n);
            }
        }
    }
    if format == Format::Table {
        table.finish(&mut stdout.lock(), labels.iter().map(String::as_str))?;
    }
    if !without.is_empty() {
        eprintln!(
            "{} server(s) without a fixed address yet: {}",
            without.len(),
            terminal_safe(&few(&without))
        );
    }
    eprintln!(
        "{found}/{members} addresses, 0 failed, all in {:.3}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One node's row of `ips` on a Cluster API cluster (its member is its server's name).
fn capi_row(
    out: &mut impl Write,
    format: Format,
    table: &mut IpsOut,
    label: &str,
    a: &caldera_cloud::model::NodeAddress,
) -> CmdResult {
    match format {
        Format::Table => table.write(
            out,
            IpsRow {
                group: label.to_string(),
                member: "-".to_string(),
                name: a.member.clone(),
                addresses: a.addresses.join(" "),
            },
        )?,
        Format::Csv => writeln!(
            out,
            "{}",
            csv_line(&[
                label.to_string(),
                a.member.clone(),
                String::new(),
                a.addresses.join(" "),
                a.member.clone(),
                a.left_out.to_string(),
                String::new(),
            ])
        )?,
        Format::Json => writeln!(
            out,
            "{}",
            caldera_cloud::model::json_string(
                &serde_json::json!({"group": label, "member": a.member, "index": null,
                "addresses": a.addresses, "name": a.member})
            )?
        )?,
    }
    out.flush()?;
    Ok(())
}

/// The group column of a member's row: the target's label, with the member's group path
/// when the target is a whole stack of several groups.
fn member_group_label(
    target: &super::targets::StackTarget,
    member: &crate::ops::ips::Member,
) -> String {
    // A stack named alone: each row says its group by path, a stack with one group (a
    // Magnum node group's own stack) too (`STACK/kube_minions`, as `nodegroups` lists it).
    if !target.stack_alone || member.group.is_empty() {
        target.label.clone()
    } else {
        format!("{}/{}", target.label, member.group)
    }
}

/// Up to ten names, then how many more.
fn few(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut out = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        out.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    out
}

const FAILURE_COLUMNS: [&str; 4] = ["path", "status", "type", "reason"];

/// `failures` of a cluster Cluster API runs: no Heat stack holds failed resources, and the
/// cluster never says it failed (see `ops::capi_stall`); its Nova servers do. The verdict per
/// node group goes to stderr as `nodegroups` words it, and stdout keeps the failures table
/// (empty) so scripts read the same shape.
async fn capi_failures(
    nova: &crate::api::nova::NovaClient,
    found: &ClusterTarget,
    capi: &crate::model::CapiCluster,
    target: &str,
    format: Format,
) -> CmdResult {
    let groups: Vec<crate::model::NodeGroup> = match target.split_once('/') {
        Some((_, ng)) => {
            let g = found
                .nodegroups
                .iter()
                .find(|g| g.name == ng || g.id == ng)
                .ok_or_else(|| {
                    ServiceError::new(
                        crate::service::ErrorKind::NotFound,
                        format!(
                            "cluster {} has no node group '{}'",
                            terminal_safe(&found.cluster.name),
                            terminal_safe(ng)
                        ),
                    )
                })?;
            vec![g.clone()]
        }
        None => found.nodegroups.clone(),
    };
    eprintln!(
        "cluster {} runs on Cluster API ({}, cluster {}): no Heat stack to hold failed \
         resources; its Nova servers say:",
        terminal_safe(&found.cluster.name),
        capi.driver.as_str(),
        terminal_safe(&capi.name)
    );
    if !capi_verdicts(nova, &found.cluster, capi, &groups).await {
        eprintln!("no node group failed or stalled");
    }
    print_table(&Table::new(FAILURE_COLUMNS), format)
}

async fn failures(
    service: &LiveService,
    conn: &CloudConnection,
    target: &str,
    format: Format,
) -> CmdResult {
    let heat = &conn.heat;
    let found = find_cluster(service, conn, target_head(target)).await?;
    if let Some(f) = &found {
        if let (Some(capi), Some(nova)) = (&f.cluster.capi, &conn.nova) {
            return capi_failures(nova, f, capi, target, format).await;
        }
    }
    let stacks = stacks_of(conn, found, target).await?;
    let several = stacks.len() > 1;
    let mut t = Table::new(FAILURE_COLUMNS);
    let mut none = Vec::new();
    for root in &stacks {
        let listing = heat
            .list_resources(
                root,
                &ResourceQuery {
                    nested_depth: Some(FAILURE_DEPTH),
                    ..Default::default()
                },
            )
            .await?;
        let resources: Vec<_> = listing.into_iter().map(|r| r.resource).collect();
        let found = deepest_failures(root, &resources);
        for f in &found {
            t.push([
                // Several stacks: each path says which stack it is in.
                if several {
                    format!("{}:{}", root.name, f.path)
                } else {
                    f.path.clone()
                },
                f.resource.status.raw.clone(),
                f.resource.resource_type.clone(),
                opt(&f.resource.status_reason),
            ]);
        }
        if found.is_empty() {
            none.push(root);
        }
    }
    for root in none {
        let detail = heat.get_stack(root, false).await?;
        eprintln!(
            "no failed resources; stack {} is {}",
            terminal_safe(&root.name),
            terminal_safe(&detail.summary.status.to_string())
        );
    }
    print_table(&t, format)
}

/// A member's addresses for the table, each with its network's name where the source named
/// it: `10.0.0.4 (private) 172.16.0.4 (storage)`.
fn with_networks(a: &caldera_cloud::model::NodeAddress) -> String {
    let mut cells: Vec<String> = a
        .addresses
        .iter()
        .map(|ip| {
            // The network Heat or Nova names it on, else the member output it was read from.
            let label = a
                .networks
                .iter()
                .chain(&a.outputs)
                .find(|(_, ips)| ips.contains(ip));
            match label {
                Some((name, _)) => format!("{ip} ({name})"),
                None => ip.clone(),
            }
        })
        .collect();
    if a.left_out > 0 {
        cells.push(format!("… {} more left out", a.left_out));
    }
    cells.join(" ")
}

/// Prints the rows held back while their group's sources were adding to them.
fn flush_held(
    held: &mut Vec<caldera_cloud::model::NodeAddress>,
    rows: &HashMap<String, (String, String)>,
    label: &str,
    format: Format,
    table: &mut IpsOut,
) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for a in held.drain(..) {
        let (group, member) = rows
            .get(&a.member)
            .cloned()
            .unwrap_or_else(|| (label.to_string(), a.member.clone()));
        write_ip_row(&mut out, format, table, &group, &member, &a)?;
    }
    Ok(())
}

/// The columns of `ips --format csv`. NAME, LEFT_OUT (addresses left out past the bound kept
/// per node, as JSON's `left_out`) and NOTE (`no network`) are appended, so readers by
/// position keep working.
const CSV_HEADER: &str = "group,member,index,addresses,name,left_out,note";

/// What a row without addresses says: the only such row is a node with no network.
const NO_NETWORK: &str = "no network";

/// One member's row of `ips` in `format`, flushed at once. A row with no addresses is a
/// node with no network ([`IpEvent::NoNetwork`]: every other row has an address).
fn write_ip_row(
    out: &mut impl Write,
    format: Format,
    table: &mut IpsOut,
    group: &str,
    member: &str,
    a: &caldera_cloud::model::NodeAddress,
) -> io::Result<()> {
    match format {
        Format::Table => {
            let addresses = match a.addresses.is_empty() {
                true => format!("({NO_NETWORK})"),
                false => with_networks(a),
            };
            let row = IpsRow {
                group: group.to_string(),
                member: member.to_string(),
                name: a.name.clone().unwrap_or_else(|| "-".to_string()),
                addresses,
            };
            table.write(out, row)?
        }
        Format::Csv => writeln!(
            out,
            "{}",
            csv_line(&[
                group.to_string(),
                member.to_string(),
                a.index.map(|i| i.to_string()).unwrap_or_default(),
                a.addresses.join(" "),
                a.name.clone().unwrap_or_default(),
                a.left_out.to_string(),
                match a.addresses.is_empty() {
                    true => NO_NETWORK.to_string(),
                    false => String::new(),
                },
            ])
        )?,
        Format::Json => {
            let mut row = serde_json::json!({"group": group, "member": member, "index": a.index, "addresses": a.addresses});
            // Only when known, so existing readers see the same keys.
            if let Some(name) = &a.name {
                row["name"] = serde_json::json!(name);
            }
            if !a.networks.is_empty() {
                row["networks"] = serde_json::json!(a.networks);
            }
            if !a.outputs.is_empty() {
                row["outputs"] = serde_json::json!(a.outputs);
            }
            if a.left_out > 0 {
                row["left_out"] = serde_json::json!(a.left_out);
            }
            if a.addresses.is_empty() {
                row["no_network"] = serde_json::json!(true);
            }
            let line = caldera_cloud::model::json_string(&row).map_err(io::Error::other)?;
            writeln!(out, "{line}")?
        }
    }
    out.flush()
}
