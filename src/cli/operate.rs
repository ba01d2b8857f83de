//! Headless action commands: `scale`, `rollout start|status|pause|resume|skip|abort` and
//! `journal`. Plans go to stdout before anything happens; progress goes to stderr.

use super::args::{ActionArgs, Command, HeatCommand, JournalFormat, RolloutCommand};
use super::output::Format;
use super::output::{print_lines, CmdResult};
use crate::api::cloud::CloudConnection;
use crate::drivers::any_group;
use crate::drivers::apply::{self, ActionContext};
use crate::drivers::guard::{Guard, Reach};
use crate::drivers::manual;
use crate::drivers::resolve::Drivers;
use crate::drivers::{Driver, NodeGroupTarget, ScaleRequest, UpgradePlan, UpgradeTarget};
use crate::journal::{Actor, Entry, Journal, Outcome};
use crate::lifecycle::ActionsConfig;
use crate::model::{json_string, json_string_pretty};
use crate::model::{terminal_safe, DriverKind, StackRef};
use crate::parameter_value::{ParameterValue, ParameterValues};
use crate::rollout::control;
use crate::rollout::engine::{self, find_latest, observe_status, EngineOptions};
use crate::rollout::lock::LockState;
use crate::rollout::status_json::StatusJson;
use crate::rollout::{
    AbortMode, Control, RolloutOptions, RolloutPlan, RolloutState, RolloutStatus,
};
use crate::service::{ErrorKind, ServiceError};
use std::collections::BTreeMap;
use std::io::{self, BufRead, IsTerminal, Write};
use std::time::Duration;

/// Poll interval of an engine a command starts without `--poll-secs` (an abort's).
const DEFAULT_POLL_SECS: f64 = 2.0;

/// Exit status of a rollout command that stopped on a pause (not an error of the command).
pub const PAUSED_EXIT: i32 = 3;
/// Exit status of a control request written to the journal that no engine acknowledged in
/// time: queued, not honoured (the process driving the rollout may be gone or busy).
pub const UNACKNOWLEDGED_EXIT: i32 = 4;

pub fn journal_of(args: &ActionArgs) -> Journal {
    match &args.journal {
        Some(p) => Journal::open(p),
        None => Journal::open_default(),
    }
}

/// `caldera journal --repair`: sets aside a torn tail and the lines that are not entries,
/// and says what it did.
pub async fn journal_repair(args: &ActionArgs) -> CmdResult {
    let journal = journal_of(args);
    let (torn, bad) = journal.quarantine_bad_lines()?;
    if let Some(t) = &torn {
        eprintln!(
            "journal {}: moved a torn last line ({} bytes at offset {}) to {}",
            journal.path().display(),
            t.len,
            t.offset,
            t.sidecar.display()
        );
    }
    for b in &bad {
        eprintln!(
            "journal {}: line {} (byte {}) set aside in {}: {}",
            journal.path().display(),
            b.line,
            b.offset,
            journal.quarantine_path().display(),
            b.detail
        );
    }
    if torn.is_none() && bad.is_empty() {
        eprintln!("journal {}: every line reads", journal.path().display());
    }
    // What is left must read, strictly.
    let n = journal.read_all()?.len();
    eprintln!("journal {}: {n} entries", journal.path().display());
    Ok(())
}

/// `caldera journal`: needs no cloud.
pub async fn journal(args: &ActionArgs, follow: bool, format: JournalFormat) -> CmdResult {
    let journal = journal_of(args);
    if !follow && format != JournalFormat::Text {
        let scan = journal.export(&mut io::stdout().lock(), format == JournalFormat::Csv)?;
        report_unreadable(&journal, &scan);
        return Ok(());
    }
    let mut offset = 0;
    loop {
        // The audit view skips lines that are not entries, and says so on stderr.
        let scan = journal.scan_from(offset)?;
        report_unreadable(&journal, &scan);
        if offset == 0 && scan.entries.is_empty() {
            // Said, not left blank: an empty answer reads like a wrong path (was: nothing).
            eprintln!(
                "journal {}: no entries yet (caldera journals every action it sends here){}",
                journal.path().display(),
                if follow { "; following" } else { "" }
            );
        }
        offset = scan.next;
        let stdout = io::stdout();
        let mut out = stdout.lock();
        for e in scan.entries {
            match format {
                JournalFormat::Json => writeln!(out, "{}", json_string(&e)?)?,
                _ => writeln!(out, "{}", terminal_safe(&entry_line(&e)))?,
            }
        }
        out.flush()?;
        if !follow {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn report_unreadable(journal: &Journal, scan: &crate::journal::Scan) {
    for bad in &scan.bad {
        eprintln!("journal {}: {bad}", journal.path().display());
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
        "{} {} {} {} {}{}{}",
        e.time.format("%Y-%m-%dT%H:%M:%SZ"),
        e.who(),
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
    drivers: Drivers,
}

/// The actions file: `--actions-config` (which must exist: a typo must not run a rollout
/// without its drain hooks), else the default path, where a missing file is no hooks.
pub fn actions_config(args: &ActionArgs) -> Result<ActionsConfig, ServiceError> {
    let loaded = match (&args.actions_config, ActionsConfig::default_path()) {
        (Some(named), _) => ActionsConfig::load(named),
        (None, Some(default)) => ActionsConfig::load_default(&default),
        (None, None) => Ok(ActionsConfig::default()),
    };
    loaded.map_err(|e| ServiceError::new(ErrorKind::Config, e))
}

/// Who acts (this user on this cloud), the journal, and the guard rails from the cloud's
/// `caldera:` settings and the connection's read-only flag.
pub fn action_context(conn: &CloudConnection, args: &ActionArgs) -> ActionContext {
    let info = conn.info();
    ActionContext {
        actor: Actor::local(&info.cloud),
        journal: journal_of(args),
        guard: Guard::new(conn.settings.clone(), info.read_only),
    }
}

fn context(conn: CloudConnection, args: &ActionArgs) -> Result<Ctx, ServiceError> {
    Ok(Ctx {
        drivers: Drivers::new(&conn),
        action: action_context(&conn, args),
        config: actions_config(args)?,
        conn,
    })
}

impl Ctx {
    async fn resolve(&self, target: &str) -> Result<(NodeGroupTarget, &dyn Driver), ServiceError> {
        self.drivers.resolve(target).await
    }

    /// `STACK/GROUP` naming a group of an operator's stack (no Heat-native or Magnum node
    /// group of that name): the stack and the group's resource path.
    async fn any_group(&self, target: &str) -> Result<Option<(StackRef, String)>, ServiceError> {
        let Some((head, path)) = target.split_once('/') else {
            return Ok(None);
        };
        match self.drivers.resolve(target).await {
            Ok(_) => return Ok(None),
            Err(e) if e.kind == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let stack = match self.conn.heat.resolve(head).await {
            Ok(s) => s,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(Some((stack, path.trim_matches('/').to_string())))
    }

    /// The target a rollout control names: a node group, or a group of any stack.
    async fn resolve_target(&self, target: &str) -> Result<NodeGroupTarget, ServiceError> {
        if let Some((stack, group)) = self.any_group(target).await? {
            return Ok(any_group::group_target(&stack, &group));
        }
        Ok(self.resolve(target).await?.0)
    }

    fn engine_options(&self, target: &NodeGroupTarget, poll_secs: f64) -> EngineOptions {
        control::engine_options(
            &self.config,
            &self.action.actor.cloud,
            target,
            Duration::from_secs_f64(poll_secs.max(0.0)),
        )
    }
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

/// `--set KEY=VALUE` pairs (JSON where the value reads as JSON, a string otherwise; the
/// template's declared types decide in the end).
fn parse_sets(sets: &[String]) -> Result<ParameterValues, ServiceError> {
    ParameterValue::parse_pairs(sets.iter().map(String::as_str))
        .map_err(|e| ServiceError::new(ErrorKind::Config, e))
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
            allow_magnum_owned,
            let_heat_update,
            no_wait,
        } => {
            if let Some((stack, group)) = ctx.any_group(&target).await? {
                if count.is_none() && remove.is_empty() {
                    return Err("STACK/GROUP: give --count, --remove, or both".into());
                }
                let opts = AnyGroupOpts {
                    yes,
                    confirm,
                    allow: any_group::Allow {
                        magnum: allow_magnum_owned,
                        heat_updates: let_heat_update,
                        held: Vec::new(),
                        held_after: Vec::new(),
                    },
                    no_wait,
                };
                return scale_any_group(&ctx, &stack, &group, count, &remove, opts).await;
            }
            scale(&ctx, &target, count, remove, yes, confirm, no_wait).await
        }
        Command::Rollout { action } => rollout(&ctx, action).await,
        Command::Heat { action } => heat_control(&ctx, action).await,
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
    apply::scale(&ctx.action, driver, &plan, confirm.as_deref()).await?;
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
                eprintln!("  node {}: {}", terminal_safe(m), terminal_safe(&state));
                last.insert(m.clone(), state);
            }
        }
        let (status, reason) =
            crate::drivers::heat_native::stack_status(&ctx.conn.heat, &stack).await?;
        if !status.is_in_progress() {
            eprintln!(
                "{}: {status} {}",
                terminal_safe(&plan.target.label()),
                terminal_safe(&reason)
            );
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
            allow_magnum_owned,
            let_heat_update,
            also,
            also_after,
            poll_secs,
        } => {
            let options = RolloutOptions {
                batch_size: batch.max(1),
                canary,
                gate_wait_ms: (gate_secs.max(0.0) * 1000.0) as u64,
                pause_on_failure: !stop_on_failure,
                node_timeout_ms: node_timeout_secs.saturating_mul(1000),
            };
            if let Some((stack, group)) = ctx.any_group(&target).await? {
                if template.is_some() {
                    return Err(
                        "STACK/GROUP: --template is for Magnum's node groups; say what \
                                changes with --image or --set KEY=VALUE (the template's own \
                                parameters)"
                            .into(),
                    );
                }
                let opts = AnyGroupOpts {
                    yes,
                    confirm,
                    allow: any_group::Allow {
                        magnum: allow_magnum_owned,
                        heat_updates: let_heat_update,
                        held: also,
                        held_after: also_after,
                    },
                    no_wait: false,
                };
                let mut sets = parse_sets(&set)?;
                if let Some(image) = image {
                    let parameter = image_parameter(ctx, &stack, &group, &image, &options).await?;
                    if sets
                        .insert(parameter.clone(), ParameterValue::text(image))
                        .is_some()
                    {
                        return Err(format!(
                            "--image sets {parameter}, and so does --set: give one of them"
                        )
                        .into());
                    }
                }
                return rollout_any_group(ctx, &stack, &group, sets, options, opts, poll_secs)
                    .await;
            }
            if !also.is_empty() {
                return Err(
                    "--also is for STACK/GROUP rollouts: it holds another group of the \
                            same stack"
                        .into(),
                );
            }
            let (target, driver) = ctx.resolve(&target).await?;
            ctx.action.check(
                "rollout.start",
                &target.label(),
                &target.cluster,
                Reach::Fleet,
                confirm.as_deref(),
            )?;
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
                UpgradePlan::Magnum(plan) => return magnum_upgrade(ctx, plan, yes, confirm).await,
                UpgradePlan::Rollout(plan) => {
                    let mut plan = *plan;
                    let sets = parse_sets(&set)?;
                    plan.extra_parameters =
                        any_group::fit_to_stack(&ctx.conn.heat, &plan.stack, sets).await?;
                    plan
                }
            };
            print_lines(&plan.lines())?;
            let options = ctx.engine_options(&target, poll_secs);
            print_lines(&options.hooks.plan_lines())?;
            if !yes && !confirm_prompt("start this rollout?")? {
                return Err("not started".into());
            }
            let handle = engine::start(
                ctx.conn.heat.clone(),
                ctx.action.clone(),
                plan,
                options,
                confirm.as_deref(),
            )
            .await?;
            follow(handle).await
        }
        RolloutCommand::Status {
            target,
            format,
            summary,
        } => {
            let target = ctx.resolve_target(&target).await?;
            let (status, plan) = status_and_plan(&ctx.conn, &ctx.action, &target).await?;
            match (format, summary) {
                (JournalFormat::Json, summary) => {
                    let json = StatusJson::new(&status, plan.as_ref(), summary);
                    writeln!(io::stdout(), "{}", json_string_pretty(&json)?)?
                }
                (JournalFormat::Text | JournalFormat::Csv, true) => {
                    print_lines(&status.summary_lines())?
                }
                (JournalFormat::Text | JournalFormat::Csv, false) => print_lines(&status.lines())?,
            }
            Ok(())
        }
        RolloutCommand::Pause { target, wait_secs } => {
            request(ctx, &target, Control::Pause, wait_secs).await
        }
        RolloutCommand::Skip {
            target,
            node,
            wait_secs,
        } => request(ctx, &target, Control::Skip(node), wait_secs).await,
        RolloutCommand::Abort {
            target,
            rollback,
            cancel,
            yes,
            wait_secs,
        } => {
            let t = ctx.resolve_target(&target).await?;
            let plan = active_plan(ctx, &t).await?;
            let mode = if rollback {
                AbortMode::CancelUpdate
            } else if cancel {
                AbortMode::CancelWithoutRollback
            } else {
                AbortMode::LeavePaused
            };
            // Heat's cancel changes the cloud: said, and confirmed, as a plan is. Stopping
            // the releases alone sends nothing to Heat.
            if let Some(call) = mode.call(&plan.stack) {
                print_lines(&[format!(
                    "abort rollout {} of {}: stop releasing, then {call}",
                    plan.id,
                    t.label()
                )])?;
                if !yes && !confirm_prompt("send Heat's cancel?")? {
                    return Err("not aborted".into());
                }
            }
            let options = ctx.engine_options(&t, DEFAULT_POLL_SECS);
            let driven = control::driver(&ctx.action, &plan);
            match control::abort(&ctx.conn.heat, &ctx.action, &plan, mode, options).await? {
                // Nobody drove it: this process does the abort to its end.
                Some(handle) => follow(handle).await,
                // The live driver got the request: wait for it to record the abort.
                None => {
                    eprintln!(
                        "asked {} to {} rollout {}",
                        who(&driven),
                        Control::Abort(mode).label(),
                        plan.id
                    );
                    acknowledged(ctx, &plan, &Control::Abort(mode), 0, wait_secs).await
                }
            }
        }
        RolloutCommand::Resume {
            target,
            set,
            yes,
            poll_secs,
        } => {
            let t = ctx.resolve_target(&target).await?;
            let plan = active_plan(ctx, &t).await?;
            // What it is about to drive, as `rollout start` says it first.
            print_lines(&[resume_header(&plan)])?;
            let parameters =
                any_group::fit_to_stack(&ctx.conn.heat, &plan.stack, parse_sets(&set)?).await?;
            if !parameters.is_empty() {
                // Values a resume sends change the cloud: said, and confirmed, as a plan is;
                // refused where nothing would send them (the engine refuses them too).
                let (status, _) =
                    crate::drivers::heat_native::stack_status(&ctx.conn.heat, &plan.stack).await?;
                if let Some(why) = engine::resume_overrides_refusal(status.is_failed(), &parameters)
                {
                    let error = ctx.action.refuse("rollout.resume", &t.label(), why);
                    return Err(format!("refused: {}", error.message).into());
                }
                let values: Vec<String> = parameters
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.display_text()))
                    .collect();
                print_lines(&[format!(
                    "resume {}: Heat's update of {} is {status}; the resume sends it again with \
                     {}, and Heat retries the failed members with them",
                    t.label(),
                    plan.stack.name,
                    values.join(" ")
                )])?;
                if !yes && !confirm_prompt("resume with these values?")? {
                    return Err("not resumed".into());
                }
            }
            // A rollout started on another machine, or whose members Heat shows released
            // by a driver this journal does not know, is taken over only when the operator
            // says so: that driver may live, and this machine cannot see it.
            // (One Heat no longer runs is not asked about: the take-over says it ended.)
            let risk = engine::take_over_risk(&ctx.conn.heat, &ctx.action.journal, &plan).await?;
            if let Some(risk) = risk {
                print_lines(&[format!("resume {}: rollout {}: {risk}", t.label(), plan.id)])?;
                if !yes && !confirm_prompt("take it over from this machine?")? {
                    return Err("not taken over".into());
                }
            }
            let handle = engine::reattach(
                ctx.conn.heat.clone(),
                ctx.action.clone(),
                plan,
                ctx.engine_options(&t, poll_secs),
                vec![Control::Resume { parameters }],
                engine::TakeOver::AnyMachine,
            )
            .await?;
            follow(handle).await
        }
    }
}

/// The progress `nodegroups` shows in `target`'s row: its update's, as [`status_and_plan`]
/// reads it, counted over the group's own members where a rollout holds it beside its
/// target (a Magnum cluster's masters: `new 1/3`, not the whole rollout's `new 1/7`).
pub(super) async fn group_progress(
    conn: &CloudConnection,
    action: &ActionContext,
    target: &NodeGroupTarget,
) -> Result<crate::progress::Progress, ServiceError> {
    let (status, plan) = status_and_plan(conn, action, target).await?;
    Ok(match plan {
        Some(plan) => plan.progress_as_viewed(&status.progress),
        None => (*status.progress).clone(),
    })
}

/// The first line of `rollout resume`: the rollout's head as its start printed it (id,
/// target, what it sets) and where it was started.
fn resume_header(plan: &RolloutPlan) -> String {
    let head = plan.lines().into_iter().next().unwrap_or_default();
    match plan.started_on_host() {
        Some(host) => format!("resume {head}; started on {host}"),
        None => format!("resume {head}"),
    }
}

/// The status of `target`'s update, as `rollout status` prints it, in this order: the rollout
/// under way (this machine's journal, or one Heat holds on our hooks), an update caldera does
/// not drive (labelled as observed), the last rollout of this machine's journal (finished:
/// its own id and end); with the plan of the rollout it read (none for an update caldera
/// does not drive).
async fn status_and_plan(
    conn: &CloudConnection,
    action: &ActionContext,
    target: &NodeGroupTarget,
) -> Result<(RolloutStatus, Option<RolloutPlan>), ServiceError> {
    let heat = &conn.heat;
    if let Some(plan) = control::find_rollout(heat, action, target).await? {
        let status = observe_status(heat, &action.journal, &plan).await?;
        return Ok((status, Some(plan)));
    }
    if let Some(update) = crate::service::watch::find_any(conn, target).await? {
        let watches = crate::service::watch::Watches::default();
        let mut status = crate::service::watch::observe_any(conn, &watches, &update).await?;
        status.id = format!("observed ({})", update.label());
        return Ok((status, None));
    }
    match find_latest(&action.journal, &target.label())? {
        Some(plan) => {
            let status = observe_status(heat, &action.journal, &plan).await?;
            Ok((status, Some(plan)))
        }
        None => Err(ServiceError::new(
            ErrorKind::NotFound,
            format!(
                "no rollout of {} in this machine's journal, and Heat shows no update under way",
                target.label()
            ),
        )),
    }
}

async fn active_plan(ctx: &Ctx, target: &NodeGroupTarget) -> Result<RolloutPlan, ServiceError> {
    control::find_rollout(&ctx.conn.heat, &ctx.action, target)
        .await?
        .ok_or_else(|| {
            ServiceError::new(
                ErrorKind::NotFound,
                format!("no rollout of {} under way", target.label()),
            )
        })
}

async fn request(ctx: &Ctx, target: &str, control: Control, wait_secs: f64) -> CmdResult {
    let t = ctx.resolve_target(target).await?;
    let plan = active_plan(ctx, &t).await?;
    let options = ctx.engine_options(&t, DEFAULT_POLL_SECS);
    let driven = control::driver(&ctx.action, &plan);
    match control::ask(&ctx.conn.heat, &ctx.action, &plan, &control, options).await {
        Ok(Some(after)) => {
            eprintln!(
                "asked {} to {} rollout {}",
                who(&driven),
                control.label(),
                plan.id
            );
            acknowledged(ctx, &plan, &control, after, wait_secs).await
        }
        Ok(None) => {
            eprintln!(
                "recorded: {} rollout {}; no driver on this machine now, the next one here \
                 honours it (a driver on another machine cannot read this machine's journal)",
                control.label(),
                plan.id
            );
            Ok(())
        }
        // Nothing was queued: there is no engine to acknowledge it.
        Err(e) if e.message.contains(control::NOBODY_DRIVES) => {
            eprintln!(
                "{e}
no engine acknowledged the request: nothing was queued"
            );
            std::process::exit(UNACKNOWLEDGED_EXIT);
        }
        Err(e) => Err(e.into()),
    }
}

/// Who holds a rollout's driver lock, for messages.
fn who(driven: &LockState) -> String {
    match driven {
        LockState::Held(Some(h)) => format!("pid {} on {}", h.pid, h.host),
        _ => "the process driving it".into(),
    }
}

/// Waits up to `wait_secs` for the engine driving `plan` to acknowledge `control`, and
/// says which: honoured (rc 0), the rollout ended first (an error), or only queued (exit
/// [`UNACKNOWLEDGED_EXIT`]).
async fn acknowledged(
    ctx: &Ctx,
    plan: &RolloutPlan,
    control: &Control,
    after: u64,
    wait_secs: f64,
) -> CmdResult {
    let wait = Duration::from_secs_f64(wait_secs.clamp(0.0, 3600.0));
    match control::acknowledgement(&ctx.action.journal, plan, control, after, wait).await? {
        control::Ack::Honoured(e) => {
            eprintln!(
                "rollout {}: {} honoured at {} by {}",
                plan.id,
                e.action,
                e.time.format("%H:%M:%S%.3f"),
                e.who()
            );
            // Taken, to apply later (a resume waiting for Heat to end a failed update).
            if let (crate::journal::Outcome::Started, Some(when)) = (&e.outcome, &e.output) {
                eprintln!("rollout {}: {}", plan.id, terminal_safe(when));
            }
            Ok(())
        }
        control::Ack::Refused(e) => Err(format!(
            "rollout {} refused the request: {}",
            plan.id,
            entry_line(&e)
        )
        .into()),
        control::Ack::Ended(e) => Err(format!(
            "rollout {} ended before it honoured the request: {}",
            plan.id,
            entry_line(&e)
        )
        .into()),
        control::Ack::Queued => {
            eprintln!(
                "rollout {}: the request is queued in the journal, but no engine acknowledged \
                 it within {wait_secs}s: the process driving the rollout may be gone or busy. \
                 `caldera rollout status` shows where it stands; `caldera rollout resume` \
                 drives it from here.",
                plan.id
            );
            std::process::exit(UNACKNOWLEDGED_EXIT);
        }
    }
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
                eprintln!(
                    "  node {:>5} (batch {}): {p}",
                    terminal_safe(&n.name),
                    n.batch + 1
                );
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
            // What holds the rest, from Heat's facts: a failed update holds nothing.
            let next = if status.stack_status.ends_with("_FAILED") {
                "Heat's update is over, failed: no node waits on a hook. `caldera rollout \
                 resume` sends the update again (fix the cause first; --set changes a \
                 parameter), `caldera rollout abort` ends the rollout and says what is left."
            } else if status.remaining == 0 {
                "No node is left on a hook; `caldera rollout resume` waits for Heat's update \
                 again, `caldera rollout abort` cancels it."
            } else {
                "Heat keeps the remaining nodes on their hooks; `caldera rollout resume` \
                 continues, `caldera rollout abort` stops."
            };
            eprintln!("rollout paused: {}\n{next}", terminal_safe(reason));
            handle.kill().await;
            std::process::exit(PAUSED_EXIT);
        }
        if watch.changed().await.is_err() {
            let end = handle.wait().await;
            print_lines(&end.lines())?;
            return Ok(());
        }
    }
}

/// `--image` of `STACK/GROUP`: the stack parameter the group's servers boot from, found from
/// Heat's structure as the console's upgrade form finds it ([`any_group::image_parameter`]);
/// where the templates do not say, refused (and journaled, as the console does) naming the
/// command where the operator names it with `--set`.
async fn image_parameter(
    ctx: &Ctx,
    stack: &StackRef,
    group: &str,
    image: &str,
    options: &RolloutOptions,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let heat = &ctx.conn.heat;
    let templates = any_group::templates_along(heat, stack, group).await?;
    match any_group::image_parameter(heat, stack, group, &templates).await? {
        Ok(parameter) => Ok(parameter),
        Err(why) => {
            let label = format!("{}/{group}", stack.name);
            let command = crate::command_line::CommandLine::caldera(&["rollout", "start"])
                .arg(label.clone())
                .set("PARAMETER", &ParameterValue::text(image));
            let command = options.with_flags(command);
            let why = any_group::image_parameter_refusal(&label, &why, &command);
            let error = ctx.action.refuse("rollout.start", &label, why);
            Err(format!("refused: {}", error.message).into())
        }
    }
}

/// What a change of a group of any stack was told beyond its target.
struct AnyGroupOpts {
    yes: bool,
    confirm: Option<String>,
    allow: any_group::Allow,
    no_wait: bool,
}

/// A refused plan: said, and recorded (a blocked attempt is part of the audit trail).
fn refuse(ctx: &Ctx, action: &str, plan: &any_group::GroupUpdatePlan) -> CmdResult {
    let error = ctx.action.refuse(
        action,
        &format!("{}/{}", plan.stack.name, plan.group),
        plan.refusals.join("; "),
    );
    Err(format!("refused: {}", error.message).into())
}

/// `caldera scale STACK/GROUP --count N`: Heat's preview and the refusals, then the PATCH
/// of the parameter the group's count reads, followed until the stack settles.
async fn scale_any_group(
    ctx: &Ctx,
    stack: &StackRef,
    group: &str,
    count: Option<u32>,
    remove: &[String],
    opts: AnyGroupOpts,
) -> CmdResult {
    let heat = &ctx.conn.heat;
    let plan = any_group::plan_group_scale(heat, stack, group, count, remove, &opts.allow).await?;
    print_lines(&plan.lines())?;
    if !plan.refusals.is_empty() {
        return refuse(ctx, "scale", &plan);
    }
    if !opts.yes && !confirm_prompt("apply this scale?")? {
        return Err("not applied".into());
    }
    // One rule for every scale, as `apply::scale` does for the drivers' own: the group is
    // read again just before the PATCH (the operator may have read the plan for as long as
    // they liked, and anyone may have scaled it meanwhile).
    let plan = any_group::replan_confirmed_scale(
        &ctx.action,
        heat,
        stack,
        group,
        plan.scale.unwrap_or_default(),
        &plan.removing,
        &plan.set,
        &opts.allow,
    )
    .await?;
    any_group::apply_group_update(&ctx.action, heat, &plan, opts.confirm.as_deref()).await?;
    eprintln!("scale accepted");
    if opts.no_wait {
        return Ok(());
    }
    loop {
        let (status, reason) = crate::drivers::heat_native::stack_status(heat, stack).await?;
        if !status.is_in_progress() {
            let members = any_group::group_members(heat, stack, group)
                .await
                .unwrap_or_default();
            eprintln!(
                "{}/{}: {status} {}; {} members",
                terminal_safe(&stack.name),
                terminal_safe(group),
                terminal_safe(&reason),
                members.len()
            );
            if status.is_failed() {
                return Err(format!("scale failed: {reason}").into());
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// `caldera rollout start STACK/GROUP --set KEY=VALUE`: Heat's preview and the refusals,
/// then the rollout engine of caldera's own node groups on this group's members.
async fn rollout_any_group(
    ctx: &Ctx,
    stack: &StackRef,
    group: &str,
    sets: ParameterValues,
    options: RolloutOptions,
    opts: AnyGroupOpts,
    poll_secs: f64,
) -> CmdResult {
    if sets.is_empty() {
        return Err("STACK/GROUP: give --set KEY=VALUE (what the rollout changes)".into());
    }
    let heat = &ctx.conn.heat;
    let target = any_group::group_target(stack, group);
    ctx.action.check(
        "rollout.start",
        &target.label(),
        &target.cluster,
        Reach::Fleet,
        opts.confirm.as_deref(),
    )?;
    let preview = any_group::plan_group_rollout(heat, stack, group, &sets, &opts.allow).await?;
    if !preview.refusals.is_empty() {
        print_lines(&preview.lines())?;
        return refuse(ctx, "rollout.start", &preview);
    }
    // The plan carries Heat's preview and the blast radius in its lines, as the console's.
    let plan = preview.rollout_plan(options);
    print_lines(&plan.lines())?;
    let engine_options = ctx.engine_options(&target, poll_secs);
    print_lines(&engine_options.hooks.plan_lines())?;
    if !opts.yes && !confirm_prompt("start this rollout?")? {
        return Err("not started".into());
    }
    let handle = engine::start(
        heat.clone(),
        ctx.action.clone(),
        plan,
        engine_options,
        opts.confirm.as_deref(),
    )
    .await?;
    follow(handle).await
}

async fn magnum_upgrade(
    ctx: &Ctx,
    plan: crate::drivers::magnum::MagnumUpgradePlan,
    yes: bool,
    confirm: Option<String>,
) -> CmdResult {
    let magnum = ctx.drivers.magnum()?;
    print_lines(&plan.lines())?;
    if !yes && !confirm_prompt("start this upgrade?")? {
        return Err("not started".into());
    }
    apply::magnum_upgrade(&ctx.action, magnum, &plan, confirm.as_deref()).await?;
    eprintln!("upgrade accepted by Magnum");
    Ok(())
}

/// `caldera heat hooks|clear-hook|check|cancel|mark-unhealthy|unhook`.
async fn heat_control(ctx: &Ctx, command: HeatCommand) -> CmdResult {
    use manual::Request;
    let (stack, request, yes, confirm) = match command {
        HeatCommand::Hooks { stack, format } => return heat_hooks(ctx, &stack, format).await,
        HeatCommand::ClearHook {
            stack,
            resource_path,
            hook,
            yes,
            confirm,
        } => {
            let patterns = resource_path
                .iter()
                .map(|p| p.trim_matches('/').to_string())
                .collect();
            (stack, Request::ClearHook { patterns, hook }, yes, confirm)
        }
        HeatCommand::Check {
            stack,
            yes,
            confirm,
        } => (stack, Request::Check, yes, confirm),
        HeatCommand::Cancel {
            stack,
            no_rollback,
            allow_magnum_owned,
            yes,
            confirm,
        } => {
            let request = Request::Cancel {
                rollback: !no_rollback,
                allow_magnum: allow_magnum_owned,
            };
            (stack, request, yes, confirm)
        }
        HeatCommand::MarkUnhealthy {
            stack,
            resource_path,
            reason,
            allow_magnum_owned,
            yes,
            confirm,
        } => {
            let request = Request::MarkUnhealthy {
                path: resource_path.trim_matches('/').to_string(),
                reason,
                allow_magnum: allow_magnum_owned,
            };
            (stack, request, yes, confirm)
        }
        HeatCommand::Unhook {
            stack,
            group,
            yes,
            confirm,
        } => (stack, Request::Unhook { group }, yes, confirm),
        HeatCommand::SignalDeployment {
            deployment_id,
            status,
            reason,
            yes,
            confirm,
        } => {
            let d = ctx.conn.heat.get_deployment(&deployment_id).await?;
            let plan = manual::plan_signal_deployment(&d, &status, reason.as_deref());
            return send_control(ctx, &plan, yes, confirm).await;
        }
    };
    let heat = &ctx.conn.heat;
    let stack = heat.resolve(&stack).await?;
    let plan = manual::plan(heat, &stack, &request).await?;
    send_control(ctx, &plan, yes, confirm).await
}

/// Shows a planned control, asks (unless `yes`), then applies it: journaled first.
async fn send_control(
    ctx: &Ctx,
    plan: &manual::ControlPlan,
    yes: bool,
    confirm: Option<String>,
) -> CmdResult {
    let heat = &ctx.conn.heat;
    print_lines(&plan.lines())?;
    // A refusal is recorded and said by `apply`, before any question.
    if plan.refusals.is_empty() && !yes && !confirm_prompt("send this?")? {
        return Err("not sent".into());
    }
    manual::apply(&ctx.action, heat, plan, confirm.as_deref()).await?;
    eprintln!(
        "{} {}: accepted by Heat",
        plan.control.action(),
        terminal_safe(&plan.target)
    );
    Ok(())
}

/// `caldera heat hooks TARGET`: one line (or JSON object) per resource held on a hook, in
/// each stack a `STACK`, `CLUSTER` or `CLUSTER/NODEGROUP` covers, then the hooks each stack's
/// environment keeps for its next update.
async fn heat_hooks(ctx: &Ctx, target: &str, format: Format) -> CmdResult {
    let heat = &ctx.conn.heat;
    let service = crate::service::live::LiveService::new(ctx.conn.clone());
    let scopes = super::targets::event_scopes(&service, &ctx.conn, target).await?;
    let mut pending = Vec::new();
    let mut left = Vec::new();
    for scope in &scopes {
        let held = crate::ops::hooks::pending_hooks(heat, &scope.stack).await?;
        pending.extend(
            held.into_iter()
                .filter(|h| scope.covers_path(&h.path))
                .map(|h| (scope.stack.name.clone(), h)),
        );
        let kept = crate::drivers::leftover_hooks::leftover_hooks(heat, &scope.stack).await?;
        left.extend(kept.iter().map(|l| l.line(&scope.stack.name)));
    }
    if format == Format::Json {
        let held: Vec<_> = pending.iter().map(|(_, h)| h).collect();
        writeln!(io::stdout(), "{}", json_string_pretty(&held)?)?;
        return Ok(());
    }
    let now = chrono::Utc::now();
    let several = scopes.len() > 1;
    let mut lines = vec![format!(
        "{:<40} {:<12} {:<20} HELD",
        "RESOURCE", "HOOK", "SINCE"
    )];
    lines.extend(pending.iter().map(|(stack, h)| {
        let held = (now - h.since).num_seconds().max(0);
        // An inferred hold was paused at or after SINCE (its stack's update start).
        let note = match h.evidence {
            crate::ops::hooks::HookEvidence::Seen => "",
            crate::ops::hooks::HookEvidence::InferredPurged => {
                " (inferred: its pause event was purged)"
            }
        };
        // Several stacks: each path says which stack it is in.
        let path = if several {
            format!("{stack}:{}", h.path)
        } else {
            h.path.clone()
        };
        format!(
            "{:<40} {:<12} {:<20} {held}s{note}",
            path,
            h.hook,
            h.since.format("%Y-%m-%dT%H:%M:%SZ")
        )
    }));
    if pending.is_empty() {
        lines.push(format!("no resource of {target} is held on a hook"));
    }
    // Hooks the environment keeps with no update running hold the next update's members.
    lines.extend(left.iter().map(|l| format!("warning: {l}")));
    print_lines(&lines)
}
