//! IPs of every member of a node group: caldera's streamed race (typed listing + per-member
//! outputs) against one-at-a-time output calls, the monolithic `stack show` and the real
//! `openstack stack output show`, on the simulator and on a real Heat.

use super::osc::{Osc, OscTarget};
use super::{median, opt_secs, ratio, secs, verdict, BenchResult, Md};
use crate::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use crate::api::heat::{EventQuery, HeatClient, SortDir};
use crate::fetch::BudgetConfig;
use crate::model::StackRef;
use crate::ops::ips::{group_members, stream_group_ips, IpEvent, IpOptions, WarmOutputs};
use crate::sim::{self, SimOptions};
use crate::templates::{self, Machines};
use clap::Args;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Members of the node group (scenario bench-N).
    #[arg(long, default_value_t = 1000)]
    pub members: u32,
    /// Latency injected into every API request, in ms.
    #[arg(long, default_value_t = 20)]
    pub latency_ms: u64,
    /// What resolving one member's output costs the server, in ms (Heat-like: 50).
    #[arg(long, default_value_t = 50)]
    pub output_cost_ms: u64,
    /// Runs of each caldera variant (the median is shown).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Runs of each slow baseline (each takes about members x (latency + output cost)).
    #[arg(long, default_value_t = 1)]
    pub baseline_runs: usize,
}

#[derive(Debug, Args)]
pub struct HeatArgs {
    /// The no-auth Heat (scripts/heat-standalone.sh).
    #[arg(long, default_value = "http://127.0.0.1:8004/v1/admin")]
    pub heat_url: String,
    /// Members of each benchmark stack.
    #[arg(long, default_value_t = 200)]
    pub members: u32,
    /// Stack name prefix: PREFIX-caldera, PREFIX-show and PREFIX-output (one per cold path,
    /// since Heat caches resolved outputs after the first call). Existing complete stacks are
    /// reused (then "cold" only holds if nothing resolved their outputs since creation).
    #[arg(long, default_value = "caldera-bench-200")]
    pub prefix: String,
    /// Explicit stack names instead of the prefix: CALDERA,SHOW,OUTPUT.
    #[arg(long, value_delimiter = ',')]
    pub stacks: Vec<String>,
    /// Warm runs of each path.
    #[arg(long, default_value_t = 3)]
    pub warm_runs: usize,
    /// Keep the stacks afterwards (default: delete them).
    #[arg(long)]
    pub keep: bool,
    /// Give up waiting for the creates after this many seconds.
    #[arg(long, default_value_t = 1800)]
    pub create_timeout: u64,
    /// The stacks' shape: caldera's node-group template (aggregate output `ips`), or Magnum's
    /// cluster layout (`kubecluster.yaml` stand-in: 3 masters and MEMBERS minions in one
    /// stack; caldera reads the `kube_minions` group, the CLI `kube_minions_private`).
    #[arg(long, value_enum, default_value_t = Layout::Caldera)]
    pub layout: Layout,
}

/// The shape of the benchmark stacks on the real Heat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    Caldera,
    Magnum,
}

impl Layout {
    /// The stack's aggregate output of every member's address (the CLI's path).
    fn aggregate(self) -> &'static str {
        match self {
            Layout::Caldera => "ips",
            Layout::Magnum => "kube_minions_private",
        }
    }
    /// Each member's address output.
    fn member_output(self) -> &'static str {
        match self {
            Layout::Caldera => "ip",
            Layout::Magnum => "kube_minion_ip",
        }
    }
    /// The group caldera reads (as Magnum's default-worker maps to it).
    fn group(self) -> Option<&'static str> {
        match self {
            Layout::Caldera => None,
            Layout::Magnum => Some("kube_minions"),
        }
    }
}

/// Magnum's cluster layout, server-free (the real-Heat suite's stand-in, see
/// tests/fixtures/shapes/README.md).
fn magnum_stack(
    name: &str,
    members: u32,
) -> Result<crate::api::heat::StackCreate, serde_yaml_ng::Error> {
    const CLUSTER: &str = include_str!("../../tests/fixtures/shapes/magnum/kubecluster.yaml");
    let files = [
        (
            "lib/network.yaml",
            include_str!("../../tests/fixtures/shapes/magnum/network.yaml"),
        ),
        (
            "kubemaster.yaml",
            include_str!("../../tests/fixtures/shapes/magnum/kubemaster.yaml"),
        ),
        (
            "kubeminion.yaml",
            include_str!("../../tests/fixtures/shapes/magnum/kubeminion.yaml"),
        ),
    ];
    let mut parameters = BTreeMap::new();
    parameters.insert("number_of_masters".to_string(), serde_json::json!(3));
    parameters.insert("number_of_minions".to_string(), serde_json::json!(members));
    Ok(crate::api::heat::StackCreate {
        name: name.to_string(),
        template: serde_yaml_ng::from_str(CLUSTER)?,
        files: files
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect(),
        parameters,
        disable_rollback: Some(true),
        ..Default::default()
    })
}

/// One timed retrieval of all addresses.
#[derive(Debug, Clone, Default)]
struct Sample {
    first: Option<Duration>,
    all: Duration,
    found: usize,
    requests: Option<u64>,
    note: String,
}

/// Many runs of one path.
#[derive(Debug, Default)]
struct Row {
    name: String,
    samples: Vec<Sample>,
}

impl Row {
    fn new(name: impl Into<String>) -> Row {
        Row {
            name: name.into(),
            samples: Vec::new(),
        }
    }
    fn first(&self) -> Option<Duration> {
        let v: Vec<Duration> = self.samples.iter().filter_map(|s| s.first).collect();
        median(&v)
    }
    fn all(&self) -> Option<Duration> {
        let v: Vec<Duration> = self.samples.iter().map(|s| s.all).collect();
        median(&v)
    }
    fn found(&self) -> String {
        let mut v: Vec<usize> = self.samples.iter().map(|s| s.found).collect();
        v.sort();
        v.dedup();
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join("/")
    }
    fn requests(&self) -> String {
        let mut v: Vec<u64> = self.samples.iter().filter_map(|s| s.requests).collect();
        v.sort();
        match v.len() {
            0 => "-".into(),
            n => v[n / 2].to_string(),
        }
    }
    fn spread(&self) -> String {
        let v: Vec<Duration> = self.samples.iter().map(|s| s.all).collect();
        match (v.iter().min(), v.iter().max()) {
            (Some(a), Some(b)) if v.len() > 1 => format!("{}-{}", secs(*a), secs(*b)),
            _ => "-".into(),
        }
    }
}

fn table(rows: &[Row], base: &Row, members: u32) -> Md {
    let mut t = Md::new(&[
        "path",
        "runs",
        "requests",
        "first IP",
        "all IPs (median)",
        "min-max",
        "found",
        "first vs caldera",
        "all vs caldera",
    ]);
    for r in rows {
        t.row(vec![
            r.name.clone(),
            r.samples.len().to_string(),
            r.requests(),
            opt_secs(r.first()),
            opt_secs(r.all()),
            r.spread(),
            format!("{}/{members}", r.found()),
            ratio(r.first(), base.first()),
            ratio(r.all(), base.all()),
        ]);
    }
    t
}

/// caldera's path, as the console and `caldera ips` run it.
async fn caldera_once(
    conn: &CloudConnection,
    stack: &StackRef,
    group: Option<&str>,
    options: IpOptions,
) -> Sample {
    let before = conn.budget().total_requests;
    let started = Instant::now();
    let mut sample = Sample::default();
    // Every address is on screen at `Done`; after it the stream may still send the warm-up
    // of Heat's output cache (`ops::warm_outputs`), which the operator does not wait for.
    let mut done_at = None;
    let mut stream = stream_group_ips(
        conn.heat.clone(),
        conn.nova.clone(),
        stack.clone(),
        group.map(str::to_string),
        options,
    );
    while let Some(event) = stream.next().await {
        match event {
            Ok(IpEvent::Address(..)) => {
                sample.found += 1;
                sample.first.get_or_insert_with(|| started.elapsed());
            }
            Ok(IpEvent::Done(stats)) => {
                done_at = Some(started.elapsed());
                sample.note = format!(
                    "aggregate {} / listing {} / outputs {}",
                    stats.from_aggregate, stats.from_listing, stats.from_outputs
                );
            }
            Ok(_) => {}
            Err(e) => {
                sample.note = format!("error: {e}");
                break;
            }
        }
    }
    sample.all = done_at.unwrap_or_else(|| started.elapsed());
    sample.requests = Some(conn.budget().total_requests - before);
    sample
}

/// One `outputs/ip` call per member, one after the other (a shell loop over
/// `openstack stack output show`, without the process start-ups).
async fn one_at_a_time(
    heat: &HeatClient,
    stack: &StackRef,
    group: Option<&str>,
    key: &str,
) -> Sample {
    let started = Instant::now();
    let mut sample = Sample::default();
    let members = match group_members(heat, stack, group).await {
        Ok(m) => m,
        Err(e) => {
            sample.note = format!("error: {e}");
            return sample;
        }
    };
    let mut requests = 1;
    for m in members {
        let Some(s) = m.stack else { continue };
        requests += 1;
        if let Ok(out) = heat.show_output(&s, key).await {
            if !crate::ops::ips::addresses_in(&out.value).is_empty() {
                sample.found += 1;
                sample.first.get_or_insert_with(|| started.elapsed());
            }
        }
    }
    sample.all = started.elapsed();
    sample.requests = Some(requests);
    sample
}

/// `GET /stacks/{name}/{id}` with outputs resolved: every address at once, at the end.
async fn stack_show(heat: &HeatClient, stack: &StackRef, key: &str) -> Sample {
    let started = Instant::now();
    let mut sample = Sample {
        requests: Some(1),
        ..Default::default()
    };
    match heat.get_stack(stack, true).await {
        Ok(detail) => {
            sample.found = detail
                .outputs
                .unwrap_or_default()
                .iter()
                .find(|o| o.key == key)
                .map(|o| crate::ops::ips::addresses_in(&o.value).len())
                .unwrap_or(0);
        }
        Err(e) => sample.note = format!("error: {e}"),
    }
    sample.all = started.elapsed();
    sample.first = (sample.found > 0).then_some(sample.all);
    sample
}

/// Addresses in the JSON printed by `openstack stack output show -f json` or
/// `openstack stack show -f json` (the output's value, or the `outputs` list).
fn osc_addresses(stdout: &str, key: &str) -> usize {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(stdout) else {
        return 0;
    };
    if let Some(value) = v.get("output_value") {
        return crate::ops::ips::addresses_in(value).len();
    }
    v.get("outputs")
        .and_then(|o| o.as_array())
        .and_then(|list| list.iter().find(|o| o["output_key"] == key))
        .map(|o| crate::ops::ips::addresses_in(&o["output_value"]).len())
        .unwrap_or(0)
}

async fn osc_once(osc: &Osc, target: &OscTarget, args: &[&str], key: &str) -> Sample {
    match osc.run(target, args).await {
        Ok(run) => {
            let found = osc_addresses(&run.stdout, key);
            let note = if run.success {
                String::new()
            } else {
                format!(
                    "failed: {}",
                    run.stderr.lines().last().unwrap_or_default().trim()
                )
            };
            Sample {
                first: (found > 0).then_some(run.elapsed),
                all: run.elapsed,
                found,
                requests: None,
                note,
            }
        }
        Err(e) => Sample {
            note: format!("cannot run: {e}"),
            ..Default::default()
        },
    }
}

fn budget(max_in_flight: u32, max_per_second: Option<u32>) -> ConnectOptions {
    ConnectOptions {
        budget: BudgetConfig {
            max_in_flight,
            max_per_second,
        },
        ..ConnectOptions::default()
    }
}

fn log_sample(row: &str, s: &Sample) {
    eprintln!(
        "  {row}: first {} all {} found {} {}",
        opt_secs(s.first),
        secs(s.all),
        s.found,
        s.note
    );
}

// ------------------------------------------------------------------ simulator

pub async fn run_sim(args: SimArgs, osc: Option<Osc>) -> BenchResult {
    let scenario = format!("bench-{}", args.members);
    eprintln!("starting the simulator ({scenario})...");
    let t = Instant::now();
    let h = sim::start(SimOptions {
        scenario: scenario.clone(),
        output_cost_per_member: Duration::from_millis(args.output_cost_ms),
        ..SimOptions::default()
    })
    .await?;
    eprintln!("  built in {}", secs(t.elapsed()));
    h.faults()
        .set_latency(Duration::from_millis(args.latency_ms));
    let cloud = h.cloud_config();
    let setup = CloudConnection::from_cloud(&cloud, &budget(16, Some(50))).await?;
    let magnum = setup
        .magnum
        .clone()
        .ok_or("the simulator has no Magnum endpoint")?;
    let cluster = magnum.get_cluster(&scenario).await?;
    let group = magnum
        .list_nodegroups(&cluster.id, None)
        .await?
        .into_iter()
        .find(|g| g.name == "default-worker")
        .ok_or("no default-worker node group")?;
    let stack_id = group.stack_id.ok_or("node group without a stack")?;
    let stack = setup.heat.resolve(&stack_id).await?;
    // The simulator lays a Magnum cluster out as Magnum does (issue 11): default-worker's
    // stack is the cluster stack, its nodes the `kube_minions` group beside `kube_masters`.
    let layout = Layout::Magnum;
    let (key, member_key, group) = (layout.aggregate(), layout.member_output(), layout.group());

    // caldera variants; a fresh connection (cold connection pool) for every run.
    let heat_only = IpOptions {
        nova_servers: false,
        ..IpOptions::default()
    };
    let variants: Vec<(String, ConnectOptions, IpOptions)> = vec![
        (
            "caldera ips (defaults: Nova pages + typed listing + 16 outputs at once; budget 16 in flight, 50/s)".into(),
            budget(16, Some(50)),
            IpOptions::default(),
        ),
        (
            "caldera, Heat sources only (typed listing + 16 outputs at once)".into(),
            budget(16, Some(50)),
            heat_only.clone(),
        ),
        (
            "caldera, typed listing only".into(),
            budget(16, Some(50)),
            IpOptions {
                fan_out: false,
                ..heat_only.clone()
            },
        ),
        (
            "caldera, per-member outputs only (defaults)".into(),
            budget(16, Some(50)),
            IpOptions {
                typed_listing: false,
                ..heat_only.clone()
            },
        ),
        (
            "caldera, Heat sources only, --concurrency 64 --max-in-flight 64 --max-per-second 0".into(),
            budget(64, None),
            IpOptions {
                concurrency: 64,
                ..heat_only.clone()
            },
        ),
    ];
    let mut rows = Vec::new();
    for (i, (name, conn_opts, ip_opts)) in variants.into_iter().enumerate() {
        eprintln!("{name}");
        let mut row = Row::new(name);
        // The headline row gets every run; the breakdown rows at most three.
        let runs = if i == 0 { args.runs } else { args.runs.min(3) };
        for _ in 0..runs.max(1) {
            let conn = CloudConnection::from_cloud(&cloud, &conn_opts).await?;
            let s = caldera_once(&conn, &stack, group, ip_opts.clone()).await;
            log_sample(&row.name, &s);
            row.samples.push(s);
        }
        rows.push(row);
    }

    // The simulator keeps resolved aggregate outputs as Heat does: each baseline run starts
    // from a Heat that has resolved nothing.
    let forget = || h.with_world(|w| w.resolved_outputs.clear());
    // Warm: a run that found every address the long way has had Heat resolve the aggregate
    // output in the background (`ops::warm_outputs`); the runs after it, on the unchanged
    // group, ask for it first.
    let memory_path = std::env::temp_dir().join(format!(
        "caldera-bench-sim-{}-heat-outputs.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&memory_path);
    for (name, nova) in [
        ("caldera ips, Heat has resolved the aggregate (defaults, memory of Heat's output cache)", true),
        ("caldera, Heat sources only, Heat has resolved the aggregate", false),
    ] {
        forget();
        let _ = std::fs::remove_file(&memory_path);
        let opts = IpOptions {
            nova_servers: nova,
            heat_outputs: Some(WarmOutputs::at(&memory_path)),
            ..IpOptions::default()
        };
        eprintln!("{name}: one run the long way, then Heat resolves the aggregate");
        let conn = CloudConnection::from_cloud(&cloud, &budget(16, Some(50))).await?;
        let s = caldera_once(&conn, &stack, group, opts.clone()).await;
        log_sample("warm-up run", &s);
        // The simulated Heat takes its per-member cost to resolve it, as Heat does.
        tokio::time::sleep(
            Duration::from_millis(args.output_cost_ms).saturating_mul(args.members + 10),
        )
        .await;
        let mut row = Row::new(name);
        for _ in 0..args.runs.clamp(1, 3) {
            let conn = CloudConnection::from_cloud(&cloud, &budget(16, Some(50))).await?;
            let s = caldera_once(&conn, &stack, group, opts.clone()).await;
            log_sample(&row.name, &s);
            row.samples.push(s);
        }
        rows.push(row);
    }
    let _ = std::fs::remove_file(&memory_path);

    let heat = &setup.heat;
    let mut row = Row::new(format!(
        "one `outputs/{member_key}` call per member, one at a time"
    ));
    eprintln!("{}", row.name);
    for _ in 0..args.baseline_runs.max(1) {
        let s = one_at_a_time(heat, &stack, group, member_key).await;
        log_sample(&row.name, &s);
        row.samples.push(s);
    }
    rows.push(row);

    let mut row = Row::new("monolithic `stack show` (outputs resolved), raw HTTP");
    eprintln!("{}", row.name);
    for _ in 0..args.baseline_runs.max(1) {
        forget();
        let s = stack_show(heat, &stack, key).await;
        log_sample(&row.name, &s);
        row.samples.push(s);
    }
    rows.push(row);

    if let Some(osc) = &osc {
        let target = OscTarget::simulator(&h);
        let mut row = Row::new(format!("`openstack stack output show <stack> {key}`"));
        eprintln!("{}", row.name);
        for _ in 0..args.baseline_runs.max(1) {
            forget();
            let s = osc_once(
                osc,
                &target,
                &["stack", "output", "show", &stack.id, key, "-f", "json"],
                key,
            )
            .await;
            log_sample(&row.name, &s);
            row.samples.push(s);
        }
        rows.push(row);
        // What the CLI costs before any output is resolved: Python start-up, Keystone, catalog.
        let mut row = Row::new("(`openstack stack output list <stack>`: CLI overhead, no IPs)");
        for _ in 0..3 {
            let mut s = osc_once(
                osc,
                &target,
                &["stack", "output", "list", &stack.id, "-f", "json"],
                key,
            )
            .await;
            s.first = None;
            row.samples.push(s);
        }
        rows.push(row);
    }

    println!(
        "\n### IPs of {} members on the simulator, Magnum's layout (`kube_minions` of the cluster stack beside 3 masters; aggregate `{key}`), ({} ms latency per request, {} ms per resolved member output, {} ms per resolved resource attribute)\n",
        args.members,
        args.latency_ms,
        args.output_cost_ms,
        SimOptions::default().detail_cost_per_resource.as_millis()
    );
    table(&rows, &rows[0], args.members).print();
    for r in &rows {
        let notes: Vec<&str> = r
            .samples
            .iter()
            .map(|s| s.note.as_str())
            .filter(|n| !n.is_empty())
            .collect();
        if let Some(n) = notes.first() {
            println!("- {}: {n}", r.name);
        }
    }
    println!();
    for r in rows.iter().filter(|r| r.name.starts_with("caldera")) {
        let (first, all) = (r.first(), r.all());
        println!(
            "- {}: first IP {} (target < 0.5 s: {}), all {} (target < 2 s: {})",
            r.name,
            opt_secs(first),
            verdict(first.is_some_and(|d| d < Duration::from_millis(500))),
            opt_secs(all),
            verdict(all.is_some_and(|d| d < Duration::from_secs(2)))
        );
    }
    h.shutdown().await;
    Ok(())
}

// ------------------------------------------------------------------ real Heat

/// A benchmark stack and how it came to be.
struct BenchStack {
    stack: StackRef,
    created_here: bool,
    /// Creation time by Heat's own clock: stack creation_time to its CREATE_COMPLETE event.
    create_secs: Option<f64>,
    status: String,
}

async fn ensure_stacks(
    heat: &HeatClient,
    names: &[String],
    members: u32,
    layout: Layout,
    timeout: Duration,
) -> Result<Vec<BenchStack>, Box<dyn std::error::Error + Send + Sync>> {
    let mut out = Vec::new();
    for name in names {
        match heat.resolve(name).await {
            Ok(stack) => out.push(BenchStack {
                stack,
                created_here: false,
                create_secs: None,
                status: String::new(),
            }),
            Err(e) if e.is_not_found() => {
                let mut params = BTreeMap::new();
                params.insert("count".to_string(), serde_json::json!(members));
                let mut create = match layout {
                    Layout::Caldera => templates::nodegroup_stack(name, Machines::Test, params)?,
                    Layout::Magnum => magnum_stack(name, members)?,
                };
                create.timeout_mins = Some((timeout.as_secs() / 60).max(1) as u32);
                let stack = heat.create_stack(&create).await?;
                eprintln!("creating {name} ({members} members)");
                out.push(BenchStack {
                    stack,
                    created_here: true,
                    create_secs: None,
                    status: String::new(),
                });
            }
            Err(e) => return Err(e.into()),
        }
    }
    let started = Instant::now();
    loop {
        let mut pending = 0;
        for b in out.iter_mut() {
            let detail = heat.get_stack(&b.stack, false).await?;
            b.status = detail.summary.status.raw.clone();
            if detail.summary.status.is_in_progress() {
                pending += 1;
            }
        }
        if pending == 0 {
            break;
        }
        if started.elapsed() > timeout {
            return Err(format!("{pending} stack(s) still in progress after {timeout:?}").into());
        }
        eprintln!(
            "  waiting for {pending} create(s), {} so far",
            secs(started.elapsed())
        );
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
    for b in out.iter_mut() {
        b.create_secs = heat_create_secs(heat, &b.stack).await;
    }
    Ok(out)
}

/// Creation time as Heat recorded it (so reused stacks report it too).
async fn heat_create_secs(heat: &HeatClient, stack: &StackRef) -> Option<f64> {
    let detail = heat.get_stack(stack, false).await.ok()?;
    let created = detail.summary.created_at?;
    let query = EventQuery {
        limit: Some(20),
        sort_dir: Some(SortDir::Desc),
        filters: vec![("resource_status".into(), "COMPLETE".into())],
        ..Default::default()
    };
    let events = heat.list_events_page(stack, &query).await.ok()?;
    let done = events
        .iter()
        .filter(|e| e.resource_name == stack.name && e.status.raw == "CREATE_COMPLETE")
        .map(|e| e.time)
        .max()?;
    Some((done - created).num_milliseconds() as f64 / 1000.0)
}

pub async fn run_heat(args: HeatArgs, osc: Option<Osc>) -> BenchResult {
    let endpoints = NoAuthEndpoints::heat_only(args.heat_url.clone());
    let conn = CloudConnection::no_auth(&endpoints, &budget(16, Some(50))).await?;
    let heat = conn.heat.clone();
    let names: Vec<String> = if args.stacks.len() == 3 {
        args.stacks.clone()
    } else {
        ["caldera", "show", "output"]
            .iter()
            .map(|s| format!("{}-{s}", args.prefix))
            .collect()
    };
    let layout = args.layout;
    let (key, member_key, group) = (layout.aggregate(), layout.member_output(), layout.group());
    let t = Instant::now();
    let stacks = ensure_stacks(
        &heat,
        &names,
        args.members,
        args.layout,
        Duration::from_secs(args.create_timeout),
    )
    .await?;
    let waited = t.elapsed();
    println!(
        "\n### IPs of {} members on a real Heat 27 (standalone, no-auth, 127.0.0.1), {} layout\n",
        args.members,
        match layout {
            Layout::Caldera => "caldera's node-group",
            Layout::Magnum => "Magnum's cluster (3 masters + the minions in one stack; caldera reads `kube_minions`)",
        }
    );
    let mut t = Md::new(&[
        "stack",
        "status",
        "created by",
        "create time (Heat's clock)",
    ]);
    for b in &stacks {
        t.row(vec![
            b.stack.name.clone(),
            b.status.clone(),
            if b.created_here {
                "this run".into()
            } else {
                "reused".into()
            },
            b.create_secs
                .map(|s| format!("{s:.0} s"))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    t.print();
    println!(
        "\n(this run waited {} for the creates, run in parallel)\n",
        secs(waited)
    );
    if stacks.iter().any(|b| b.status != "CREATE_COMPLETE") {
        return Err("a benchmark stack did not reach CREATE_COMPLETE".into());
    }
    let (a, b, c) = (&stacks[0].stack, &stacks[1].stack, &stacks[2].stack);
    let target = OscTarget::no_auth(&args.heat_url);

    // caldera remembers what it knows of Heat's output cache (as `caldera ips` and the
    // console do, in the state directory); the benchmark starts with an empty memory.
    let memory_path = std::env::temp_dir().join(format!(
        "caldera-bench-{}-heat-outputs.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&memory_path);
    let defaults = IpOptions {
        heat_outputs: Some(WarmOutputs::at(&memory_path)),
        ..IpOptions::default()
    };

    // Cold: the first call that resolves outputs on each stack.
    let mut cold = Vec::new();
    let mut row = Row::new(format!("caldera (defaults), on {}", a.name));
    let fresh = CloudConnection::no_auth(&endpoints, &budget(16, Some(50))).await?;
    let s = caldera_once(&fresh, a, group, defaults.clone()).await;
    log_sample("cold caldera", &s);
    row.samples.push(s);
    cold.push(row);
    if let Some(osc) = &osc {
        let mut row = Row::new(format!("`openstack stack show {}`", b.name));
        let s = osc_once(osc, &target, &["stack", "show", &b.name, "-f", "json"], key).await;
        log_sample("cold osc stack show", &s);
        row.samples.push(s);
        cold.push(row);
        let mut row = Row::new(format!("`openstack stack output show {} {key}`", c.name));
        let s = osc_once(
            osc,
            &target,
            &["stack", "output", "show", &c.name, key, "-f", "json"],
            key,
        )
        .await;
        log_sample("cold osc output show", &s);
        row.samples.push(s);
        cold.push(row);
    } else {
        // Without the CLI, the monolithic call itself stands in for it.
        let mut row = Row::new(format!("monolithic `stack show`, raw HTTP, on {}", b.name));
        let s = stack_show(&heat, b, key).await;
        log_sample("cold stack show", &s);
        row.samples.push(s);
        cold.push(row);
    }

    // Warm: outputs cached by Heat now.
    let runs = args.warm_runs.max(1);
    let mut warm = Vec::new();
    let mut row = Row::new(format!("caldera (defaults), on {}", a.name));
    let mut forgetful = Row::new(format!(
        "caldera, no memory of Heat's output cache (before issue 11's warm path), on {}",
        a.name
    ));
    let mut typed = Row::new(format!("caldera, typed listing only, on {}", a.name));
    for _ in 0..runs {
        let fresh = CloudConnection::no_auth(&endpoints, &budget(16, Some(50))).await?;
        row.samples
            .push(caldera_once(&fresh, a, group, defaults.clone()).await);
        let fresh = CloudConnection::no_auth(&endpoints, &budget(16, Some(50))).await?;
        forgetful
            .samples
            .push(caldera_once(&fresh, a, group, IpOptions::default()).await);
        let fresh = CloudConnection::no_auth(&endpoints, &budget(16, Some(50))).await?;
        let opts = IpOptions {
            fan_out: false,
            ..IpOptions::default()
        };
        typed
            .samples
            .push(caldera_once(&fresh, a, group, opts).await);
    }
    warm.push(row);
    warm.push(forgetful);
    warm.push(typed);
    let mut row = Row::new(format!("monolithic `stack show`, raw HTTP, on {}", b.name));
    for _ in 0..runs {
        row.samples.push(stack_show(&heat, b, key).await);
    }
    warm.push(row);
    if let Some(osc) = &osc {
        let mut row = Row::new(format!("`openstack stack show {}`", b.name));
        for _ in 0..runs {
            row.samples
                .push(osc_once(osc, &target, &["stack", "show", &b.name, "-f", "json"], key).await);
        }
        warm.push(row);
        let mut row = Row::new(format!("`openstack stack output show {} {key}`", c.name));
        for _ in 0..runs {
            row.samples.push(
                osc_once(
                    osc,
                    &target,
                    &["stack", "output", "show", &c.name, key, "-f", "json"],
                    key,
                )
                .await,
            );
        }
        warm.push(row);
    }
    let mut row = Row::new(format!(
        "one `outputs/{member_key}` call per member, one at a time, on {}",
        c.name
    ));
    row.samples
        .push(one_at_a_time(&heat, c, group, member_key).await);
    warm.push(row);

    println!("Cold (first call resolving outputs after the create; one stack per path):\n");
    table(&cold, &cold[0], args.members).print();
    println!("\nWarm ({runs} runs each; Heat has cached the resolved outputs):\n");
    table(&warm, &warm[0], args.members).print();
    for r in cold.iter().chain(warm.iter()) {
        if let Some(n) = r.samples.iter().map(|s| &s.note).find(|n| !n.is_empty()) {
            println!("- {}: {n}", r.name);
        }
    }
    let base = cold[0].all();
    let slowest_mono = cold[1..].iter().filter_map(|r| r.all()).min();
    if let (Some(base), Some(mono)) = (base, slowest_mono) {
        let x = mono.as_secs_f64() / base.as_secs_f64();
        println!(
            "\n- cold: the fastest monolithic path took {x:.1}x caldera's time to all IPs (target >= 5x: {})",
            verdict(x >= 5.0)
        );
    }

    if !args.keep {
        for b in &stacks {
            match heat.delete_stack(&b.stack).await {
                Ok(()) => eprintln!("deleting {}", b.stack.name),
                Err(e) => eprintln!("could not delete {}: {e}", b.stack.name),
            }
        }
    }
    let _ = std::fs::remove_file(&memory_path);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_addresses_in_cli_json() {
        let out = r#"{"output_key": "ips", "output_value": ["10.0.0.10", "10.0.0.11"], "description": "x"}"#;
        assert_eq!(osc_addresses(out, "ips"), 2);
        let show = r#"{"outputs": [{"output_key": "names", "output_value": ["a"]},
                       {"output_key": "ips", "output_value": ["10.0.0.10"]}]}"#;
        assert_eq!(osc_addresses(show, "ips"), 1);
        assert_eq!(osc_addresses("not json", "ips"), 0);
    }
}
