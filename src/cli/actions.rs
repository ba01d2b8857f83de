//! Headless action commands: `scale`, `rollout start|status|pause|resume|skip|abort` and
//! `journal`. Plans go to stdout before anything happens; progress goes to stderr.

use super::args::{ActionArgs, Command, JournalFormat, RolloutCommand};
use super::commands::CmdResult;
use crate::api::cloud::CloudConnection;
use crate::drivers::actions::{self, ActionContext};
use crate::drivers::guard::{Guard, Reach};
use crate::drivers::heat_native::HeatNativeDriver;
use crate::drivers::magnum::MagnumDriver;
use crate::drivers::{Driver, NodeGroupTarget, ScaleRequest, UpgradePlan, UpgradeTarget};
use crate::journal::{Actor, Entry, Journal, Outcome};
use crate::lifecycle::ActionsConfig;
use crate::model::DriverKind;
use crate::rollout::engine::{self, find_active, observe_status, plan_from_heat, EngineOptions};
use crate::rollout::{
    AbortMode, Control, RolloutOptions, RolloutPlan, RolloutState, RolloutStatus,
};
use crate::service::{ErrorKind, ServiceError};
use crate::templates::Machines;
use std::collections::BTreeMap;
use std::io::{self, BufRead, IsTerminal, Write};
use std::time::Duration;

/// Exit status of a rollout command that stopped on a pause (not an error of the command).
pub const PAUSED_EXIT: i32 = 3;

pub fn journal_of(args: &ActionArgs) -> Journal {
    match &args.journal {
        Some(p) => Journal::open(p),
        None => Journal::open_default(),
    }
}

/// `caldera journal`: needs no cloud.
pub async fn journal(args: &ActionArgs, follow: bool, format: JournalFormat) -> CmdResult {
    let journal = journal_of(args);
    if !follow && format != JournalFormat::Text {
        journal.export(&mut io::stdout().lock(), format == JournalFormat::Csv)?;
        return Ok(());
    }
    let mut offset = 0;
    loop {
        let (entries, next) = journal.read_from(offset)?;
        offset = next;
        let stdout = io::stdout();
        let mut out = stdout.lock();
        for e in entries {
            match format {
                JournalFormat::Json => writeln!(out, "{}", serde_json::to_string(&e)?)?,
                _ => writeln!(out, "{}", entry_line(&e))?,
            }
        }
        out.flush()?;
        if !follow {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn entry_line(e: &Entry) -> String {
    let outcome = match &e.outcome {
        Outcome::Started => "started".to_string(),
        Outcome::Ok => "ok".to_string(),
        Outcome::Failed { error } => format!("FAILED: {error}"),
        Outcome::Refused { error } => format!("REFUSED: {error}"),
    };
    let calls: Vec<String> = e
        .calls
        .iter()
        .map(|c| format!("{} {}", c.method, c.path))
        .collect();
    format!(
        "{} {}@{} {} {} {}{}{}",
        e.time.format("%Y-%m-%dT%H:%M:%SZ"),
        e.user,
        e.cloud,
        e.action,
        e.target,
        outcome,
        if calls.is_empty() {
            String::new()
        } else {
            format!(" [{}]", calls.join("; "))
        },
        e.rollout
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    )
}

struct Ctx {
    conn: CloudConnection,
    action: ActionContext,
    config: ActionsConfig,
    heat_native: HeatNativeDriver,
    magnum: Option<MagnumDriver>,
}

fn context(conn: CloudConnection, args: &ActionArgs) -> Result<Ctx, ServiceError> {
    let info = conn.info();
    let guard = Guard::new(conn.settings, info.read_only);
    let config_path = args
        .actions_config
        .clone()
        .or_else(ActionsConfig::default_path);
    let config = match config_path {
        Some(p) => ActionsConfig::load(&p).map_err(|e| ServiceError::new(ErrorKind::Config, e))?,
        None => ActionsConfig::default(),
    };
    let machines = if info.is_simulator {
        Machines::Test
    } else {
        Machines::Nova
    };
    Ok(Ctx {
        heat_native: HeatNativeDriver::new(conn.heat.clone(), machines),
        magnum: conn
            .magnum
            .clone()
            .map(|m| MagnumDriver::new(m, Some(conn.heat.clone()))),
        action: ActionContext {
            actor: Actor::local(&info.cloud),
            journal: journal_of(args),
            guard,
        },
        config,
        conn,
    })
}

impl Ctx {
    /// `CLUSTER/NODEGROUP`, or `CLUSTER` with a single node group: Heat-native first (by
    /// tags), then Magnum.
    async fn resolve(&self, target: &str) -> Result<(NodeGroupTarget, &dyn Driver), ServiceError> {
        let (cluster, nodegroup) = match target.split_once('/') {
            Some((c, n)) => (c, Some(n)),
            None => (target, None),
        };
        let drivers: Vec<&dyn Driver> = match &self.magnum {
            Some(m) => vec![&self.heat_native, m],
            None => vec![&self.heat_native],
        };
        let mut last = ServiceError::new(
            ErrorKind::NotFound,
            format!("no node group '{target}' (Heat-native or Magnum)"),
        );
        for d in drivers {
            let found = match nodegroup {
                Some(ng) => d.find_nodegroup(cluster, ng).await,
                None => match d.list_nodegroups(cluster).await {
                    Ok(groups) if groups.len() == 1 => {
                        d.find_nodegroup(cluster, &groups[0].nodegroup).await
                    }
                    Ok(groups) if groups.is_empty() => Err(last.clone()),
                    Ok(groups) => Err(ServiceError::new(
                        ErrorKind::Config,
                        format!(
                            "cluster {cluster} has {} node groups ({}): say CLUSTER/NODEGROUP",
                            groups.len(),
                            groups
                                .iter()
                                .map(|g| g.nodegroup.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )),
                    Err(e) => Err(e),
                },
            };
            match found {
                Ok(t) => return Ok((t, d)),
                Err(e) if e.kind == ErrorKind::NotFound => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    fn engine_options(&self, target: &NodeGroupTarget, poll_secs: f64) -> EngineOptions {
        EngineOptions {
            poll: Duration::from_secs_f64(poll_secs.max(0.1)),
            hooks: self
                .config
                .hooks_for(&self.action.actor.cloud, &target.cluster),
        }
    }
}

fn print_lines(lines: &[String]) -> CmdResult {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for l in lines {
        writeln!(out, "{l}")?;
    }
    out.flush()?;
    Ok(())
}

/// Asks on the terminal; without one, `--yes` is required.
fn confirm_prompt(question: &str) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    if !io::stdin().is_terminal() {
        return Err("not a terminal: give --yes to proceed without asking".into());
    }
    eprint!("{question} [y/N] ");
    io::stderr().flush()?;
    let mut answer = String::new();
    io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// `KEY=JSON` pairs; a value that is not JSON is taken as a string.
fn parse_sets(sets: &[String]) -> Result<BTreeMap<String, String>, ServiceError> {
    let mut out = BTreeMap::new();
    for s in sets {
        let (k, v) = s.split_once('=').ok_or_else(|| {
            ServiceError::new(ErrorKind::Config, format!("--set {s}: expected KEY=VALUE"))
        })?;
        let v = if serde_json::from_str::<serde_json::Value>(v).is_ok() {
            v.to_string()
        } else {
            serde_json::Value::String(v.to_string()).to_string()
        };
        out.insert(k.to_string(), v);
    }
    Ok(out)
}

pub async fn run(command: Command, conn: CloudConnection, args: &ActionArgs) -> CmdResult {
    let ctx = context(conn, args)?;
    match command {
        Command::Scale {
            target,
            count,
            remove,
            yes,
            confirm,
            no_wait,
        } => scale(&ctx, &target, count, remove, yes, confirm, no_wait).await,
        Command::Rollout { action } => rollout(&ctx, action).await,
        _ => Err("not an action command".into()),
    }
}

async fn scale(
    ctx: &Ctx,
    target: &str,
    count: Option<u32>,
    remove: Vec<String>,
    yes: bool,
    confirm: Option<String>,
    no_wait: bool,
) -> CmdResult {
    let (target, driver) = ctx.resolve(target).await?;
    // Fail fast on guard rails, before reading more.
    ctx.action.check(
        "scale",
        &target.label(),
        &target.cluster,
        Reach::Fleet,
        confirm.as_deref(),
    )?;
    let plan = driver
        .plan_scale(&target, &ScaleRequest { count, remove })
        .await?;
    print_lines(&plan.lines())?;
    if !yes && !confirm_prompt("apply this scale?")? {
        return Err("not applied".into());
    }
    actions::scale(&ctx.action, driver, &plan, confirm.as_deref()).await?;
    eprintln!("scale accepted");
    if no_wait || target.driver != DriverKind::HeatNative {
        return Ok(());
    }
    follow_scale(ctx, driver, &plan).await
}

/// Prints each planned node's arrival or departure as Heat reports it, until the stack settles.
async fn follow_scale(
    ctx: &Ctx,
    driver: &dyn Driver,
    plan: &crate::drivers::ScalePlan,
) -> CmdResult {
    let stack = plan.target.stack.clone().ok_or("no stack")?;
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let nodes = driver.list_nodes(&plan.target).await.unwrap_or_default();
        let now: BTreeMap<String, String> =
            nodes.into_iter().map(|n| (n.name, n.status.raw)).collect();
        for m in plan.added.iter().chain(plan.removed.iter()) {
            let state = now.get(m).cloned().unwrap_or_else(|| "gone".into());
            if last.get(m) != Some(&state) {
                eprintln!("  node {m}: {state}");
                last.insert(m.clone(), state);
            }
        }
        let (status, reason) =
            crate::drivers::heat_native::stack_status(&ctx.conn.heat, &stack).await?;
        if !status.is_in_progress() {
            eprintln!("{}: {status} {reason}", plan.target.label());
            if status.is_failed() {
                return Err(format!("scale failed: {reason}").into());
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

async fn rollout(ctx: &Ctx, command: RolloutCommand) -> CmdResult {
    match command {
        RolloutCommand::Start {
            target,
            image,
            template,
            batch,
            canary,
            gate_secs,
            node_timeout_secs,
            stop_on_failure,
            set,
            yes,
            confirm,
            poll_secs,
        } => {
            let (target, driver) = ctx.resolve(&target).await?;
            ctx.action.check(
                "rollout.start",
                &target.label(),
                &target.cluster,
                Reach::Fleet,
                confirm.as_deref(),
            )?;
            let options = RolloutOptions {
                batch_size: batch.max(1),
                canary,
                gate_wait_ms: (gate_secs.max(0.0) * 1000.0) as u64,
                pause_on_failure: !stop_on_failure,
                node_timeout_ms: node_timeout_secs.saturating_mul(1000),
            };
            let to = match target.driver {
                DriverKind::HeatNative => UpgradeTarget::Image(
                    image.ok_or("--image is required for Heat-native node groups")?,
                ),
                DriverKind::Magnum => UpgradeTarget::ClusterTemplate(template.ok_or(
                    "Magnum node groups are upgraded to a cluster template: give --template \
                     (Magnum runs the batches; node-by-node hooks are for Heat-native node groups)",
                )?),
            };
            let plan = match driver.plan_upgrade(&target, &to, &options).await? {
                UpgradePlan::Magnum(plan) => {
                    return magnum_upgrade(ctx, &target, plan, yes, confirm).await
                }
                UpgradePlan::Rollout(plan) => {
                    let mut plan = *plan;
                    plan.extra_parameters = parse_sets(&set)?;
                    plan
                }
            };
            print_lines(&plan.lines())?;
            if !yes && !confirm_prompt("start this rollout?")? {
                return Err("not started".into());
            }
            let handle = engine::start(
                ctx.conn.heat.clone(),
                ctx.action.clone(),
                plan,
                ctx.engine_options(&target, poll_secs),
                confirm.as_deref(),
            )
            .await?;
            follow(handle).await
        }
        RolloutCommand::Status { target, format } => {
            let (target, _) = ctx.resolve(&target).await?;
            let plan = match find_active(&ctx.action.journal, &target.label())? {
                Some(p) => p,
                None => plan_from_heat(&ctx.conn.heat, &target, RolloutOptions::default()).await?,
            };
            let status = observe_status(&ctx.conn.heat, &ctx.action.journal, &plan).await?;
            match format {
                JournalFormat::Json => println!("{}", serde_json::to_string_pretty(&status)?),
                _ => print_lines(&status.lines())?,
            }
            Ok(())
        }
        RolloutCommand::Pause { target } => request(ctx, &target, Control::Pause).await,
        RolloutCommand::Skip { target, node } => request(ctx, &target, Control::Skip(node)).await,
        RolloutCommand::Abort {
            target,
            rollback,
            cancel,
        } => {
            let (t, _) = ctx.resolve(&target).await?;
            let plan = active_plan(ctx, &t).await?;
            ctx.action
                .check("rollout.abort", &t.label(), &t.cluster, Reach::Nodes, None)?;
            // A running engine stops releasing; Heat's update is cancelled here, once.
            engine::request(&ctx.action, &plan, &Control::Abort(AbortMode::LeavePaused))?;
            let action = if rollback {
                Some(crate::api::heat::StackAction::CancelUpdate)
            } else if cancel {
                Some(crate::api::heat::StackAction::CancelWithoutRollback)
            } else {
                None
            };
            let mut entry = Entry::new(&ctx.action.actor, "rollout.abort", &t.label(), Outcome::Ok)
                .rollout(&plan.id);
            if let Some(a) = action {
                entry = entry.calls(vec![crate::journal::ApiCall::new(
                    "POST",
                    format!(
                        "{}/actions",
                        crate::drivers::heat_native::stack_path(&plan.stack)
                    ),
                    format!("{{\"{}\":null}}", a.key()),
                )]);
                if let Err(e) = ctx.conn.heat.action(&plan.stack, a).await {
                    let mut failed = entry.clone();
                    failed.outcome = Outcome::Failed {
                        error: e.to_string(),
                    };
                    ctx.action.record(&failed)?;
                    return Err(e.into());
                }
            }
            ctx.action.record(&entry)?;
            eprintln!("rollout {} aborted", plan.id);
            Ok(())
        }
        RolloutCommand::Resume {
            target,
            set,
            poll_secs,
        } => {
            let (t, _) = ctx.resolve(&target).await?;
            let plan = active_plan(ctx, &t).await?;
            let handle = engine::reattach(
                ctx.conn.heat.clone(),
                ctx.action.clone(),
                plan,
                ctx.engine_options(&t, poll_secs),
                vec![Control::Resume {
                    parameters: parse_sets(&set)?,
                }],
            )
            .await?;
            follow(handle).await
        }
    }
}

async fn active_plan(ctx: &Ctx, target: &NodeGroupTarget) -> Result<RolloutPlan, ServiceError> {
    match find_active(&ctx.action.journal, &target.label())? {
        Some(p) => Ok(p),
        None => {
            let (status, _) = crate::drivers::heat_native::stack_status(
                &ctx.conn.heat,
                target
                    .stack
                    .as_ref()
                    .ok_or_else(|| ServiceError::new(ErrorKind::NotFound, "no node-group stack"))?,
            )
            .await?;
            if !status.is_in_progress() && !status.is_failed() {
                return Err(ServiceError::new(
                    ErrorKind::NotFound,
                    format!("no rollout of {} under way ({status})", target.label()),
                ));
            }
            // Another operator's rollout: Heat has it, our journal does not.
            plan_from_heat(&ctx.conn.heat, target, RolloutOptions::default()).await
        }
    }
}

async fn request(ctx: &Ctx, target: &str, control: Control) -> CmdResult {
    let (t, _) = ctx.resolve(target).await?;
    let plan = active_plan(ctx, &t).await?;
    ctx.action.check(
        "rollout.request",
        &t.label(),
        &t.cluster,
        Reach::Nodes,
        None,
    )?;
    engine::request(&ctx.action, &plan, &control)?;
    eprintln!(
        "asked rollout {} to {:?} (the process running it acts on its next look)",
        plan.id, control
    );
    Ok(())
}

/// Prints the rollout's progress until it ends or pauses.
async fn follow(handle: engine::RolloutHandle) -> CmdResult {
    let mut last_phases: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut watch = handle.watch();
    loop {
        let status: RolloutStatus = watch.borrow_and_update().clone();
        for n in &status.nodes {
            let p = n.phase.as_str();
            if last_phases.get(&n.name) != Some(&p) {
                eprintln!("  node {:>5} (batch {}): {p}", n.name, n.batch + 1);
                last_phases.insert(n.name.clone(), p);
            }
        }
        if status.state.is_final() {
            let end = handle.wait().await;
            print_lines(&end.lines())?;
            return match end.state {
                RolloutState::Completed | RolloutState::CompletedWithSkips => Ok(()),
                other => Err(other.label().into()),
            };
        }
        if let RolloutState::Paused { reason } = &status.state {
            print_lines(&status.lines())?;
            eprintln!(
                "rollout paused: {reason}\nHeat keeps the remaining nodes on their hooks; \
                 `caldera rollout resume` continues, `caldera rollout abort` stops."
            );
            handle.kill();
            std::process::exit(PAUSED_EXIT);
        }
        if watch.changed().await.is_err() {
            let end = handle.wait().await;
            print_lines(&end.lines())?;
            return Ok(());
        }
    }
}

async fn magnum_upgrade(
    ctx: &Ctx,
    target: &NodeGroupTarget,
    plan: crate::drivers::magnum::MagnumUpgradePlan,
    yes: bool,
    confirm: Option<String>,
) -> CmdResult {
    let magnum = ctx.magnum.as_ref().ok_or("no Magnum endpoint")?;
    print_lines(&plan.lines())?;
    if !yes && !confirm_prompt("start this upgrade?")? {
        return Err("not started".into());
    }
    ctx.action.check(
        "upgrade",
        &target.label(),
        &target.cluster,
        Reach::Fleet,
        confirm.as_deref(),
    )?;
    ctx.action.record(
        &Entry::new(
            &ctx.action.actor,
            "upgrade",
            &target.label(),
            Outcome::Started,
        )
        .plan(plan.lines())
        .calls(plan.calls.clone()),
    )?;
    let result = magnum.apply_upgrade(&plan).await;
    let outcome = match &result {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed {
            error: e.message.clone(),
        },
    };
    ctx.action.record(&Entry::new(
        &ctx.action.actor,
        "upgrade",
        &target.label(),
        outcome,
    ))?;
    result?;
    eprintln!("upgrade accepted by Magnum");
    Ok(())
}
