//! Reach beyond the cloud the console is on. The fleet view's state: the clusters of every
//! cloud in clouds.yaml, streamed in as each cloud answers (`service::fleet_scan`); a new scan
//! replaces a cloud's rows when that cloud answers, so the table never empties while the
//! slow clouds are still being asked. And `:cloud NAME [REGION]`: the console moves to
//! another cloud, every view's data dropped and fetched anew from there.

use super::action_dialogs::Dialog;
use super::store::Store;
use super::view::{View, ViewKind};
use super::{App, Level, Mode};
use crate::drivers::guard::Guard;
use crate::message::Request;
use crate::message::RolloutDriver;
use crate::service::fleet_scan::FleetRow;
use crate::service::CloudInfo;
use std::time::Duration;

/// A fleet scan asks every cloud for a token and its clusters: not every few seconds.
const FLEET_EVERY: Duration = Duration::from_secs(60);

pub use super::store::FleetLog;

/// Everything a row holds, for the detail overlay.
pub fn row_lines(r: &FleetRow) -> Vec<String> {
    let mut out = vec![
        format!("cloud    {}", r.cloud),
        format!("region   {}", r.region),
    ];
    if !r.cluster.is_empty() {
        out.push(format!("cluster  {}", r.cluster));
        out.push(format!("driver   {}", r.driver));
        out.push(format!("health   {}", r.health));
        out.push(format!("masters/workers  {}", r.counts()));
        out.push(format!("in state {}", r.in_state));
    }
    out.push(format!("status   {}", r.status));
    out
}

impl App {
    /// Enter on a fleet row: that cluster's dashboard, at once when the row is this cloud's;
    /// else the console moves to the row's cloud (as `:cloud` does) and opens the cluster when
    /// that cloud's cluster list arrives. A row with no cluster (a cloud that gave none, and
    /// says why) is shown whole.
    pub(crate) fn fleet_open(&mut self) {
        let v = self.view();
        let Some(row) = v.table.selected(&self.store.fleet.rows).cloned() else {
            self.set_status(Level::Warn, "no fleet row selected");
            return;
        };
        if row.cluster.is_empty() {
            return self.fleet_detail();
        }
        self.pending_cluster = Some(row.cluster.clone());
        if row.cloud == self.info.cloud {
            self.nav = vec![View::new(ViewKind::Clusters)];
            self.open_pending_cluster();
            if self.pending_cluster.is_some() {
                self.set_status(Level::Info, format!("opening {} when listed…", row.cluster));
            }
            return;
        }
        let region = (!row.region.is_empty()).then(|| row.region.clone());
        self.switch_cloud(row.cloud.clone(), region);
    }

    /// Opens the cluster Enter on a fleet row asked for, once the cluster list holds it.
    pub(super) fn open_pending_cluster(&mut self) {
        let Some(name) = self.pending_cluster.clone() else {
            return;
        };
        let Some(cluster) = self
            .store
            .clusters
            .data
            .as_deref()
            .and_then(|all| all.iter().find(|c| c.name == name || c.id == name))
            .cloned()
        else {
            return;
        };
        self.pending_cluster = None;
        self.push(ViewKind::Dashboard { cluster });
    }

    /// `i` on a fleet row: the row whole, in an overlay.
    pub(crate) fn fleet_detail(&mut self) {
        let v = self.view();
        let Some(row) = v.table.selected(&self.store.fleet.rows) else {
            self.set_status(Level::Warn, "no fleet row selected");
            return;
        };
        let title = match row.cluster.as_str() {
            "" => format!("cloud {}", row.cloud),
            cluster => format!("{} on {}", cluster, row.cloud),
        };
        let lines = row_lines(row);
        self.mode = Mode::Dialog(Box::new(Dialog::Text {
            title,
            lines,
            scroll: 0,
        }));
    }

    pub(crate) fn want_fleet(&mut self, force: bool) {
        let now = self.now;
        let meta = &self.store.fleet.meta;
        if !(meta.due(now, FLEET_EVERY) || (force && !meta.in_flight)) {
            return;
        }
        let gen = self.gen();
        self.store.fleet.meta.every = Some(FLEET_EVERY);
        self.store.fleet.meta.begin(gen, now);
        self.store.fleet.answered = 0;
        self.outbox.push(Request::Fleet { gen });
    }

    /// `:cloud NAME [REGION]`: asks the runtime to connect, unless a rollout this console
    /// drives is releasing nodes (moving away would stop its engine mid-batch).
    pub(crate) fn switch_cloud(&mut self, name: String, region: Option<String>) {
        if let Some(target) = self.rollout_running_here() {
            self.set_status(
                Level::Warn,
                format!(
                    "a rollout runs here on {target}: pause it (p) or let it end before :cloud"
                ),
            );
            return;
        }
        let to = match &region {
            Some(r) => format!("{name} ({r})"),
            None => name.clone(),
        };
        self.set_status(Level::Info, format!("connecting to {to}…"));
        self.outbox.push(Request::SwitchCloud { name, region });
    }

    /// `:cloud` with no name: the clouds clouds.yaml names, this one marked.
    pub(super) fn show_clouds(
        &mut self,
        result: Result<(std::path::PathBuf, Vec<String>), String>,
    ) {
        let (path, names) = match result {
            Ok(found) => found,
            Err(e) => return self.set_status(Level::Error, format!("no clouds to list: {e}")),
        };
        let mut lines = vec![format!("{}:", path.display()), String::new()];
        lines.extend(names.iter().map(|n| match *n == self.info.cloud {
            true => format!("● {n}  (this console's)"),
            false => format!("  {n}"),
        }));
        if names.is_empty() {
            lines.push("  (no cloud defined)".into());
        }
        lines.push(String::new());
        lines.push(":cloud NAME [REGION] moves the console there".into());
        self.open_dialog(Dialog::Text {
            title: format!("Clouds ({})", names.len()),
            lines,
            scroll: 0,
        });
    }

    /// The node group of a rollout driven here that is starting, running or aborting.
    fn rollout_running_here(&self) -> Option<String> {
        self.store.rollouts.values().find_map(|slot| {
            let status = slot.status.as_ref()?;
            let live = !status.state.is_final()
                && !matches!(status.state, crate::rollout::RolloutState::Paused { .. });
            (slot.driver == Some(RolloutDriver::Here) && live)
                .then(|| format!("{}/{}", slot.cluster.name, slot.nodegroup.name))
        })
    }

    /// Connected to another cloud: every view's data is dropped (it was the old cloud's),
    /// the console goes back to its cluster list there and fetches everything anew. The
    /// fleet, which is every cloud's, is kept. Read-only stays on once it was (never relaxed
    /// by a switch).
    pub(crate) fn switched(&mut self, info: CloudInfo, guard: Option<Guard>, notices: Vec<String>) {
        let fleet = std::mem::take(&mut self.store.fleet);
        self.store = Store::default();
        self.store.fleet = fleet;
        self.nav = vec![View::new(ViewKind::Clusters)];
        self.mode = Mode::Normal;
        self.frozen = false;
        self.frozen_queue.clear();
        self.info = info;
        self.read_only =
            self.read_only || self.info.read_only || guard.as_ref().is_some_and(|g| g.read_only);
        self.guard = guard;
        let region = self
            .info
            .region
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let mut text = format!("now on cloud {}{region}", self.info.cloud);
        for n in notices {
            text.push_str(" | ");
            text.push_str(&n);
        }
        self.set_status(Level::Info, text);
        self.plan_refresh(true);
    }
}
