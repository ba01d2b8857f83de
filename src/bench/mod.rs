//! `caldera bench ...`: side-by-side benchmarks that print markdown tables with ratios.
//!
//! Each part compares caldera's own path with what operators run today (python-openstackclient,
//! the monolithic `stack show`, one-at-a-time calls) against the same server:
//! - `ips-sim`: the IPs of a 1000-member node group on the simulator with injected latency;
//! - `ips-heat`: the same on a real (standalone, no-auth) Heat, cold and warm;
//! - `events`: following the events of a 1000-node create (rate, lag, duplicates, misses);
//! - `render`: the console's frame time, memory and time to first frame at 1k and 10k nodes.
//!
//! Figures are printed, never asserted: the machine is shared and timings are noisy, so each
//! measurement is repeated and the median shown, with the load average alongside.

pub mod address_race;
pub mod follow_race;
/// Drives the console over the in-memory fake cloud (`caldera-testkit`): only with the `bench`
/// feature (off by default: `--features bench`), so a build without it ships no fakes.
#[cfg(feature = "bench")]
pub mod frame_cost;
pub mod osc;

use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

pub type BenchResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub part: BenchPart,

    /// The `openstack` CLI to compare with (see scripts/osc-venv.sh).
    #[arg(long, global = true, default_value = "target/osc-venv/bin/openstack")]
    pub osc: PathBuf,

    /// Leave out the python-openstackclient rows.
    #[arg(long, global = true)]
    pub no_osc: bool,
}

#[derive(Debug, Subcommand)]
pub enum BenchPart {
    /// IPs of every member of a node group on the simulator (bench-N scenario).
    IpsSim(address_race::SimArgs),
    /// IPs of a node group on a real standalone Heat, cold and warm.
    IpsHeat(address_race::HeatArgs),
    /// Following the events of a node group create on the simulator.
    Events(follow_race::EventArgs),
    /// Console frame time, memory and time to first frame.
    #[cfg(feature = "bench")]
    Render(frame_cost::RenderArgs),
}

pub async fn run(args: BenchArgs) -> BenchResult {
    println!("<!-- {} -->", load_line());
    let osc = (!args.no_osc).then(|| osc::Osc::locate(&args.osc));
    let osc = match osc {
        Some(Ok(o)) => Some(o),
        Some(Err(e)) => {
            eprintln!("note: {e}; the openstack CLI rows are left out");
            None
        }
        None => None,
    };
    match args.part {
        BenchPart::IpsSim(a) => address_race::run_sim(a, osc).await,
        BenchPart::IpsHeat(a) => address_race::run_heat(a, osc).await,
        BenchPart::Events(a) => follow_race::run(a, osc).await,
        #[cfg(feature = "bench")]
        BenchPart::Render(a) => frame_cost::run(a).await,
    }
}

/// `date`, load averages and cores, for the record next to the figures.
pub fn load_line() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    format!(
        "{} load average {} on {cores} cores",
        chrono::Utc::now().format("%Y-%m-%d %H:%M:%SZ"),
        load.join(" ")
    )
}

/// Median of the samples (the mean of the two middle ones for an even count).
pub fn median(samples: &[Duration]) -> Option<Duration> {
    let mut v = samples.to_vec();
    v.sort();
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2),
    }
}

/// Median of f64 samples.
pub fn median_f64(samples: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// `p` in 0..=1 of the samples (nearest rank).
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// Seconds with a precision that suits the magnitude.
pub fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 0.01 {
        format!("{:.2} ms", s * 1000.0)
    } else if s < 10.0 {
        format!("{s:.3} s")
    } else {
        format!("{s:.1} s")
    }
}

pub fn opt_secs(d: Option<Duration>) -> String {
    d.map(secs).unwrap_or_else(|| "-".into())
}

/// `other / base` as "12.3x" (how many times longer `other` took).
pub fn ratio(other: Option<Duration>, base: Option<Duration>) -> String {
    match (other, base) {
        (Some(o), Some(b)) if !b.is_zero() => {
            format!("{:.1}x", o.as_secs_f64() / b.as_secs_f64())
        }
        _ => "-".into(),
    }
}

/// A markdown table, printed as soon as it is complete.
pub struct Md {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Md {
    pub fn new(header: &[&str]) -> Md {
        Md {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn print(&self) {
        print!("{}", self.render());
    }

    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::from("|");
            for (i, w) in widths.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                s.push_str(&format!(" {c:<w$} |"));
            }
            s.push('\n');
            s
        };
        let mut out = line(&self.header);
        out.push('|');
        for w in &widths {
            out.push_str(&format!("{}|", "-".repeat(w + 2)));
        }
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

/// VmRSS and VmHWM of this process in MiB, from /proc/self/status.
pub fn memory_mib() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|k| k.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Met / missed against a target, for the summary lines.
pub fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles() {
        let ms = Duration::from_millis;
        assert_eq!(median(&[ms(3), ms(1), ms(2)]), Some(ms(2)));
        assert_eq!(
            median(&[ms(4), ms(1), ms(2), ms(3)]),
            Some(Duration::from_micros(2500))
        );
        assert_eq!(median(&[]), None);
        assert_eq!(median_f64(&[1.0, f64::NAN, 3.0, 2.0]), Some(2.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.95), Some(4.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn ratios_and_tables() {
        let s = Duration::from_secs;
        assert_eq!(ratio(Some(s(10)), Some(s(2))), "5.0x");
        assert_eq!(ratio(Some(s(10)), Some(Duration::ZERO)), "-");
        assert_eq!(ratio(None, Some(s(1))), "-");
        let mut t = Md::new(&["path", "all"]);
        t.row(vec!["caldera".into(), "1.0 s".into()]);
        let text = t.render();
        assert!(text.starts_with("| path    | all   |\n|---------|-------|\n"));
        assert!(text.contains("| caldera | 1.0 s |"));
    }
}
