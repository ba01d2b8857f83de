//! The headless commands. Data goes to stdout as it arrives; progress and summaries to stderr.

use super::args::Command;
use super::output::{csv_line, Format, Table};
use crate::api::cloud::CloudConnection;
use crate::api::heat::{HeatClient, ResourceQuery, StackListQuery};
use crate::model::{Cluster, NodeGroup, StackEvent, StackRef};
use crate::ops::failures::deepest_failures;
use crate::ops::ips::{stream_ips_with, IpEvent, IpOptions};
use crate::service::live::LiveService;
use crate::service::{CloudService, ServiceError};
use futures::StreamExt;
use std::io::{self, Write};
use std::time::{Duration, Instant};

/// How deep `failures` looks; Heat caps it at its `max_nested_stack_depth` (5 by default).
const FAILURE_DEPTH: u32 = 5;

pub type CmdResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

pub async fn run(command: Command, conn: CloudConnection) -> CmdResult {
    let service = LiveService::new(conn.clone());
    match command {
        Command::Clusters { format } => clusters(&service, format).await,
        Command::Nodegroups { cluster, format } => {
            nodegroups(&service, &conn, &cluster, format).await
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
        } => {
            let opts = super::follow::FollowOptions {
                follow,
                nested_depth,
                interval: Duration::from_secs_f64(interval.max(0.2)),
                max_events_per_stack,
                until_complete,
                format,
            };
            super::follow::events(&service, &conn.heat, &stack, opts).await
        }
        Command::Ips {
            target,
            format,
            concurrency,
            output_key,
        } => {
            let options = IpOptions {
                concurrency,
                output_key,
                ..Default::default()
            };
            ips(&conn, &target, options, format).await
        }
        Command::Failures { stack, format } => failures(&conn.heat, &stack, format).await,
        Command::Sim { .. } => Err("`caldera sim` is handled before connecting".into()),
        Command::Bench(_) => Err("`caldera bench` is handled before connecting".into()),
        Command::Journal { .. } => Err("`caldera journal` is handled before connecting".into()),
        Command::Scale { .. } | Command::Rollout { .. } => {
            Err("action commands run through cli::actions::run".into())
        }
    }
}

fn print_table(table: &Table, format: Format) -> CmdResult {
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
                        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                        .collect()
                })
                .collect();
            serde_json::to_writer_pretty(&mut out, &rows)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

async fn clusters(service: &LiveService, format: Format) -> CmdResult {
    if !service.info().has_magnum {
        eprintln!(
            "note: no Magnum endpoint on this cloud; no clusters to list (try `caldera stacks`)"
        );
    }
    let clusters = service.list_clusters().await?;
    let mut t = Table::new([
        "name",
        "id",
        "status",
        "health",
        "masters",
        "workers",
        "coe_version",
        "status_reason",
    ]);
    for c in &clusters {
        t.push([
            c.name.clone(),
            c.id.clone(),
            c.status.raw.clone(),
            c.health.as_str().to_string(),
            c.master_count.to_string(),
            c.node_count.to_string(),
            opt(&c.coe_version),
            opt(&c.status_reason),
        ]);
    }
    print_table(&t, format)
}

async fn find_cluster(conn: &CloudConnection, name_or_id: &str) -> Result<Cluster, ServiceError> {
    let magnum = conn.magnum.as_ref().ok_or_else(|| {
        ServiceError::new(
            crate::service::ErrorKind::Unsupported,
            "this cloud has no Magnum endpoint (container-infra)",
        )
    })?;
    magnum
        .get_cluster(name_or_id)
        .await
        .map_err(ServiceError::from)
}

async fn nodegroups(
    service: &LiveService,
    conn: &CloudConnection,
    cluster: &str,
    format: Format,
) -> CmdResult {
    let cluster = find_cluster(conn, cluster).await?;
    let groups = service.list_nodegroups(cluster).await?;
    let mut t = Table::new([
        "name", "id", "role", "flavor", "image", "zone", "nodes", "min", "max", "status",
        "stack_id",
    ]);
    for g in &groups {
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
            opt(&g.stack_id),
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

pub(super) fn event_line(e: &StackEvent, format: Format) -> String {
    let time = e.time.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let path = e.display_path();
    let reason = opt(&e.status_reason);
    match format {
        Format::Table => format!("{time}  {:<22}  {path}  {reason}", e.status.raw),
        Format::Csv => csv_line(&[time, e.id.clone(), path, e.status.raw.clone(), reason]),
        Format::Json => serde_json::json!({
            "time": time,
            "id": e.id,
            "path": e.path,
            "resource_name": e.resource_name,
            "status": e.status.raw,
            "reason": e.status_reason,
            "stack_id": e.stack.as_ref().map(|s| s.id.clone()),
        })
        .to_string(),
    }
}

/// Stacks whose members' IPs `ips TARGET` fetches.
async fn ip_targets(
    conn: &CloudConnection,
    target: &str,
) -> Result<Vec<(String, StackRef)>, ServiceError> {
    let heat = &conn.heat;
    if let Some(magnum) = &conn.magnum {
        let (cluster_name, group_name) = match target.split_once('/') {
            Some((c, g)) => (c, Some(g)),
            None => (target, None),
        };
        match magnum.get_cluster(cluster_name).await {
            Ok(cluster) => {
                let groups: Vec<NodeGroup> = magnum
                    .list_nodegroups(&cluster.id, None)
                    .await
                    .map_err(ServiceError::from)?;
                let mut out = Vec::new();
                for g in groups {
                    if group_name.is_some_and(|n| n != g.name && n != g.id) {
                        continue;
                    }
                    if let Some(stack_id) = &g.stack_id {
                        out.push((
                            g.name.clone(),
                            heat.resolve(stack_id).await.map_err(ServiceError::from)?,
                        ));
                    }
                }
                if out.is_empty() {
                    return Err(ServiceError::new(
                        crate::service::ErrorKind::NotFound,
                        format!(
                            "cluster {cluster_name}: no node group {} with a stack",
                            group_name.unwrap_or("")
                        ),
                    ));
                }
                return Ok(out);
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    let stack = heat.resolve(target).await.map_err(ServiceError::from)?;
    Ok(vec![(stack.name.clone(), stack)])
}

async fn ips(
    conn: &CloudConnection,
    target: &str,
    options: IpOptions,
    format: Format,
) -> CmdResult {
    let started = Instant::now();
    let targets = ip_targets(conn, target).await?;
    let stdout = io::stdout();
    match format {
        // NAME is appended to the CSV columns so readers by position keep working.
        Format::Csv => println!("group,member,index,addresses,name"),
        Format::Table => println!("{:<24} {:>6}  {:<32} addresses", "group", "member", "name"),
        Format::Json => {}
    }
    let (mut found, mut failed, mut members, mut late_names) = (0usize, 0usize, 0usize, 0usize);
    let mut first: Option<Duration> = None;
    for (group, stack) in targets {
        let mut stream =
            stream_ips_with(conn.heat.clone(), conn.nova.clone(), stack, options.clone());
        while let Some(event) = stream.next().await {
            match event? {
                IpEvent::Members(m) => {
                    members += m.len();
                    eprintln!("{group}: {} members", m.len());
                }
                IpEvent::Address(a, _) => {
                    found += 1;
                    first.get_or_insert_with(|| started.elapsed());
                    let mut out = stdout.lock();
                    match format {
                        Format::Table => writeln!(
                            out,
                            "{group:<24} {:>6}  {:<32} {}",
                            a.member,
                            a.name.as_deref().unwrap_or("-"),
                            a.addresses.join(" ")
                        )?,
                        Format::Csv => writeln!(
                            out,
                            "{}",
                            csv_line(&[
                                group.clone(),
                                a.member.clone(),
                                a.index.map(|i| i.to_string()).unwrap_or_default(),
                                a.addresses.join(" "),
                                a.name.clone().unwrap_or_default(),
                            ])
                        )?,
                        Format::Json => {
                            let mut row = serde_json::json!({"group": group, "member": a.member, "index": a.index, "addresses": a.addresses});
                            // Only when known, so existing readers see the same keys.
                            if let Some(name) = &a.name {
                                row["name"] = serde_json::json!(name);
                            }
                            writeln!(out, "{row}")?
                        }
                    }
                    out.flush()?;
                }
                // The member's row is already out; each member keeps one row on stdout, so a
                // name that lost the race is not printed (the console applies it).
                IpEvent::Named { .. } => late_names += 1,
                IpEvent::Failed { member, reason } => {
                    failed += 1;
                    eprintln!("{group}: member {member}: no address: {reason}");
                }
                IpEvent::Done(_) => {}
            }
        }
    }
    eprintln!(
        "{found}/{members} addresses, {failed} failed, first after {:.3}s, all in {:.3}s",
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

async fn failures(heat: &HeatClient, stack: &str, format: Format) -> CmdResult {
    let root = heat.resolve(stack).await?;
    let listing = heat
        .list_resources(
            &root,
            &ResourceQuery {
                nested_depth: Some(FAILURE_DEPTH),
                ..Default::default()
            },
        )
        .await?;
    let resources: Vec<_> = listing.into_iter().map(|r| r.resource).collect();
    let found = deepest_failures(&root, &resources);
    let mut t = Table::new(["path", "status", "type", "reason"]);
    for f in &found {
        t.push([
            f.path.clone(),
            f.resource.status.raw.clone(),
            f.resource.resource_type.clone(),
            opt(&f.resource.status_reason),
        ]);
    }
    if found.is_empty() {
        let detail = heat.get_stack(&root, false).await?;
        eprintln!(
            "no failed resources; stack {} is {}",
            root.name, detail.summary.status
        );
    }
    print_table(&t, format)
}
