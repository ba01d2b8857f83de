//! `caldera why TARGET`: the console's why-stuck verdict with no console. Each stack the
//! target covers is read once ([`crate::ops::why`]); a Cluster API cluster, which has no
//! stack, is judged by its Nova servers ([`crate::ops::capi_stall`]). The exit status is the
//! worst verdict's, so a script can wait, page someone or act.

use super::output::{print_lines, CmdResult, Format};
use super::targets::{find_cluster, scopes_of, target_head, ClusterTarget};
use crate::api::cloud::CloudConnection;
use crate::drivers::apply::ActionContext;
use crate::model::terminal_safe;
use crate::ops::why::{self, StackWhy, Verdict};
use crate::service::live::LiveService;
use std::io::{self, Write};

pub async fn why(
    service: &LiveService,
    conn: &CloudConnection,
    action: &ActionContext,
    target: &str,
    format: Format,
) -> CmdResult {
    let found = find_cluster(service, conn, target_head(target)).await?;
    let reports = match found.as_ref().and_then(|f| f.cluster.capi.as_ref()) {
        Some(_) => capi_reports(conn, found, target).await?,
        None => stack_reports(conn, action, found, target).await?,
    };
    let worst = reports
        .iter()
        .map(|r| r.verdict)
        .max()
        .unwrap_or(Verdict::Settled);
    print_reports(target, &reports, worst, format)?;
    match worst.exit_code() {
        0 => Ok(()),
        code => {
            io::stdout().flush()?;
            std::process::exit(code)
        }
    }
}

/// One report per stack the target covers, with the hooks its environment keeps and the
/// caldera rollouts paused there with nobody driving them.
async fn stack_reports(
    conn: &CloudConnection,
    action: &ActionContext,
    found: Option<ClusterTarget>,
    target: &str,
) -> CmdResult<Vec<StackWhy>> {
    let heat = &conn.heat;
    let mut out = Vec::new();
    for scope in scopes_of(conn, found, target).await? {
        let under = scope.under.clone().unwrap_or_default();
        let mut report = why::read(heat, &scope.stack, &under).await?;
        // A rollout that cannot be read leaves the verdict Heat's, said so.
        if let Err(e) = crate::rollout::why_paused::name_paused_rollouts(
            &mut report,
            heat,
            action,
            &scope.stack,
        )
        .await
        {
            report.lines.push(format!(
                "caldera's rollout of this stack could not be read: {}",
                terminal_safe(&e.message)
            ));
        }
        if let Some(nova) = &conn.nova {
            why::with_nova(&mut report, nova).await;
        }
        // A node group at rest in a stack that failed elsewhere: its own verdict stands, and
        // the line says where the stack's failure is to be read (it read "CREATE_FAILED:
        // settled" as if the two disagreed).
        if !under.is_empty()
            && report.verdict == Verdict::Settled
            && caldera_cloud::model::Status::parse(&report.status).is_failed()
        {
            report.add(
                Verdict::Settled,
                format!(
                    "{} is settled; the stack failed outside it: caldera why {}",
                    terminal_safe(&under.join("/")),
                    terminal_safe(target_head(target))
                ),
            );
        }
        let left = crate::drivers::leftover_hooks::leftover_hooks(heat, &scope.stack).await?;
        for l in left {
            report.add(
                Verdict::HooksLeft,
                format!("hooks left: {}", l.line(&scope.stack.name)),
            );
        }
        out.push(report);
    }
    Ok(out)
}

/// A Cluster API cluster: one report per node group the target names, from its servers.
async fn capi_reports(
    conn: &CloudConnection,
    found: Option<ClusterTarget>,
    target: &str,
) -> CmdResult<Vec<StackWhy>> {
    use crate::ops::capi_nodes::cluster_servers;
    let Some(found) = found else {
        return Ok(vec![]);
    };
    let (Some(capi), Some(nova)) = (&found.cluster.capi, &conn.nova) else {
        return Err(format!(
            "{}: runs on Cluster API and this cloud has no Nova endpoint to judge its servers",
            terminal_safe(target)
        )
        .into());
    };
    let servers = cluster_servers(nova, capi).await?;
    let rest = target.split_once('/').map(|(_, r)| r);
    let now = chrono::Utc::now();
    let cluster = &found.cluster;
    let mut out = Vec::new();
    for g in &found.nodegroups {
        if rest.is_some_and(|n| n != g.name && n != g.id) {
            continue;
        }
        let verdict = crate::progress::verdict_of_servers(g, cluster, capi, &servers, now);
        out.push(StackWhy {
            stack: format!("{}/{}", cluster.name, g.name),
            status: g.status.raw.clone(),
            verdict: Verdict::of_capi(&verdict),
            lines: verdict.line(now).into_iter().collect(),
            servers: vec![],
        });
    }
    if out.is_empty() {
        return Err(format!("{}: no such node group", terminal_safe(target)).into());
    }
    Ok(out)
}

fn print_reports(target: &str, reports: &[StackWhy], worst: Verdict, format: Format) -> CmdResult {
    if format == Format::Json {
        let doc = serde_json::json!({
            "target": target,
            "verdict": worst,
            "exit_code": worst.exit_code(),
            "stacks": reports,
        });
        let mut out = io::stdout().lock();
        caldera_cloud::model::write_json(&mut out, &doc, true)?;
        writeln!(out)?;
        return Ok(());
    }
    let mut lines = vec![format!("{target}: {}", worst.word())];
    for r in reports {
        lines.push(format!(
            "stack {} {}: {}",
            r.stack,
            r.status,
            r.verdict.word()
        ));
        if r.lines.is_empty() {
            lines.push("  nothing in progress, failed or held".to_string());
        }
        lines.extend(r.lines.iter().map(|l| format!("  {l}")));
    }
    print_lines(&lines)
}
