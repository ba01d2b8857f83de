//! `caldera deployments TARGET`: every software deployment of a stack tree (Magnum's
//! `kube_minions/*/…`, a deployment group's members), with its action, status, how long it
//! has waited against its siblings, the agent's code and the last lines of its stderr
//! ([`crate::ops::deployments`]). `--failed` keeps the failed and the overdue.

use super::output::{print_lines, CmdResult, Format, Table};
use super::targets::event_scopes;
use crate::api::cloud::CloudConnection;
use crate::api::heat::ResourceQuery;
use crate::ops::deployments::{deployment_resources, read_found, DeploymentView};
use crate::ops::hooks::TREE_DEPTH;
use crate::service::live::LiveService;
use std::io::{self, Write};

const COLUMNS: [&str; 9] = [
    "STACK",
    "PATH",
    "SERVER",
    "CONFIG",
    "ACTION",
    "STATUS",
    "CODE",
    "VERDICT",
    "DEPLOYMENT",
];

pub async fn deployments(
    service: &LiveService,
    conn: &CloudConnection,
    target: &str,
    failed: bool,
    format: Format,
) -> CmdResult {
    let rows = read_target(service, conn, target).await?;
    let rows: Vec<(String, DeploymentView)> = rows
        .into_iter()
        .filter(|(_, v)| !failed || v.verdict.is_problem())
        .collect();
    if format == Format::Json {
        let doc: Vec<serde_json::Value> = rows
            .iter()
            .map(|(stack, v)| serde_json::json!({"stack": stack, "deployment": v}))
            .collect();
        let mut out = io::stdout().lock();
        caldera_cloud::model::write_json(&mut out, &doc, true)?;
        writeln!(out)?;
        return Ok(());
    }
    if rows.is_empty() {
        let what = if failed { "failed or overdue " } else { "" };
        eprintln!(
            "no {what}software deployment in {}",
            crate::model::terminal_safe(target)
        );
    }
    let table = table(&rows);
    let mut out = io::stdout().lock();
    match format {
        Format::Csv => table.write_csv(&mut out)?,
        Format::Table | Format::Json => table.write_aligned(&mut out)?,
    }
    drop(out);
    if format == Format::Table {
        print_lines(&tails(&rows))?;
    }
    Ok(())
}

/// The deployments of each stack `target` covers, with the stack's name.
async fn read_target(
    service: &LiveService,
    conn: &CloudConnection,
    target: &str,
) -> CmdResult<Vec<(String, DeploymentView)>> {
    let heat = &conn.heat;
    let query = ResourceQuery {
        nested_depth: Some(TREE_DEPTH),
        ..Default::default()
    };
    let now = chrono::Utc::now();
    let mut out = Vec::new();
    for scope in event_scopes(service, conn, target).await? {
        let resources: Vec<_> = heat
            .list_resources(&scope.stack, &query)
            .await?
            .into_iter()
            .map(|r| r.resource)
            .collect();
        let prefix = scope.under.as_ref().map(|u| u.join("/"));
        let found = deployment_resources(&scope.stack, &resources)
            .into_iter()
            .filter(|f| {
                prefix
                    .as_ref()
                    .is_none_or(|p| f.path == *p || f.path.starts_with(&format!("{p}/")))
            })
            .collect();
        let views = read_found(heat, found, now).await?;
        out.extend(views.into_iter().map(|v| (scope.stack.name.clone(), v)));
    }
    Ok(out)
}

fn table(rows: &[(String, DeploymentView)]) -> Table {
    let mut t = Table::new(COLUMNS).numbers(&["CODE"]);
    for (stack, v) in rows {
        let d = &v.deployment;
        t.push([
            stack.clone(),
            v.path.clone().unwrap_or_default(),
            d.server_id.clone(),
            v.config_name.clone().unwrap_or_default(),
            d.status.action.clone(),
            d.status.raw.clone(),
            d.status_code.map(|c| c.to_string()).unwrap_or_default(),
            v.verdict.words(v.transport.as_deref()),
            d.id.clone(),
        ]);
    }
    t
}

/// Under the table, each deployment that is not complete with the last lines its script
/// wrote (stderr, else stdout).
fn tails(rows: &[(String, DeploymentView)]) -> Vec<String> {
    const SHOWN: usize = 5;
    let mut lines = Vec::new();
    for (_, v) in rows
        .iter()
        .filter(|(_, v)| !v.deployment.status.is_complete())
    {
        let d = &v.deployment;
        let (name, tail) = match d.stderr.is_empty() {
            false => ("stderr", &d.stderr),
            true => ("stdout", &d.stdout),
        };
        if tail.is_empty() {
            continue;
        }
        lines.push(format!("{} {name}:", v.path.as_deref().unwrap_or(&d.id)));
        let skip = tail.len().saturating_sub(SHOWN);
        lines.extend(tail[skip..].iter().map(|l| format!("  {l}")));
    }
    lines
}
