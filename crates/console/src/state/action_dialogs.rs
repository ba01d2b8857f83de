//! Operator actions in the console: scale (a count, or the marked nodes removed), upgrade,
//! node actions on the marked nodes. Each goes form → plan (from the operator) →
//! confirmation showing the plan (the cluster name typed on a production cloud) → request.
//! The guard rails are checked here before anything is asked, and again by the operator.

use super::form::{Confirm, ConfirmOutcome, Field, Form, FormOutcome};
use super::view::{StackTarget, ViewKind};
use super::{App, Level, Mode};
use crate::drivers::manual::{ControlPlan, Request as ControlRequest};
use crate::drivers::{ScalePlan, ScaleRequest, UpgradePlan};
use crate::keys::{self, KeyAction, KeyContext};
use crate::message::{ActionReply, OperatorRequest, Request, NO_ACTIONS};
use crate::model::{Cluster, DriverKind, Node, NodeGroup};
use crate::rollout::observed::ObservedUpdate;
use crate::rollout::{AbortMode, Control, RolloutOptions};
use crossterm::event::{KeyCode, KeyEvent};

/// What a form or a plan is for.
#[derive(Debug, Clone, PartialEq)]
pub enum FormPurpose {
    Scale {
        cluster: Cluster,
        nodegroup: NodeGroup,
    },
    RemoveMarked {
        cluster: Cluster,
        nodegroup: NodeGroup,
    },
    Upgrade {
        cluster: Cluster,
        nodegroup: NodeGroup,
    },
    NodeAction {
        cluster: Cluster,
        nodegroup: NodeGroup,
        nodes: Vec<Node>,
    },
    /// A manual Heat control being planned.
    Control { stack: StackTarget },
    /// The reason for marking the resource at `path` of `stack` unhealthy.
    MarkUnhealthy { stack: StackTarget, path: String },
}

/// What a confirmed dialog does.
#[derive(Debug, Clone, PartialEq)]
pub enum OnYes {
    ApplyScale {
        plan: Box<ScalePlan>,
        nodegroup_id: String,
    },
    StartUpgrade {
        plan: Box<UpgradePlan>,
        cluster: Cluster,
        nodegroup: NodeGroup,
    },
    NodeAction {
        cluster: Cluster,
        nodegroup: NodeGroup,
        command: String,
        nodes: Vec<Node>,
        batch_size: usize,
    },
    Rollout {
        key: String,
        control: Control,
    },
    /// Quit though rollouts are driven by this console.
    Quit,
    /// Heat's `cancel_update` of an observed Heat update.
    CancelUpdate {
        key: String,
        update: Box<ObservedUpdate>,
    },
    /// A manual Heat control (check, cancel, clear hook, mark unhealthy).
    ApplyControl {
        plan: Box<ControlPlan>,
    },
    /// Plan a manual Heat control again, with a refusal overridden on purpose.
    PlanControl {
        stack: StackTarget,
        request: ControlRequest,
    },
}

/// The ways to abort, as the abort dialog offers them.
pub const ABORT_MODES: &[(AbortMode, &str)] = &[
    (
        AbortMode::LeavePaused,
        "stop releasing: nodes not yet released stay on their hooks",
    ),
    (
        AbortMode::CancelUpdate,
        "cancel_update: Heat rolls the node group back to the previous image",
    ),
    (
        AbortMode::CancelWithoutRollback,
        "cancel without rollback: Heat stops the update where it is",
    ),
];

pub enum Dialog {
    Form {
        form: Form,
        purpose: FormPurpose,
    },
    /// A plan was asked for; the form comes back (with the error) if planning fails.
    Waiting {
        title: String,
        gen: u64,
        form: Option<Form>,
        purpose: FormPurpose,
    },
    Confirm(Confirm<OnYes>),
    AbortChoice {
        key: String,
        selected: usize,
    },
    /// Read-only text: a journal entry, node-action results.
    Text {
        title: String,
        lines: Vec<String>,
        scroll: u16,
    },
}

/// Rows the screen's chrome takes (header, breadcrumbs, status line, footer): a dialog is
/// drawn in what is left.
pub const CHROME_ROWS: u16 = 4;

/// `line` cut into rows of at most `width` characters, at spaces where it can be: a word
/// longer than a row (a URL, an API body) is cut where the row ends. Rows after the first
/// keep the line's indent, so a wrapped plan line still reads as one item.
pub fn word_wrap(line: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let indent = if indent.chars().count() * 2 < width {
        indent
    } else {
        String::new()
    };
    let mut rows: Vec<String> = Vec::new();
    let mut row = String::new();
    for word in line.split(' ').skip_while(|w| w.is_empty()) {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let start = if rows.is_empty() && row.is_empty() {
                line.chars().take_while(|c| *c == ' ').count()
            } else if row.is_empty() {
                indent.chars().count()
            } else {
                row.chars().count() + 1
            };
            if start + word.len() <= width {
                if row.is_empty() {
                    row = if rows.is_empty() {
                        line.chars().take_while(|c| *c == ' ').collect()
                    } else {
                        indent.clone()
                    };
                } else {
                    row.push(' ');
                }
                row.extend(word.iter());
                break;
            }
            if !row.trim().is_empty() {
                rows.push(std::mem::take(&mut row));
                continue;
            }
            // A word longer than a whole row: cut it where the row ends.
            let room = width.saturating_sub(start).max(1);
            let mut head: String = if rows.is_empty() {
                line.chars().take_while(|c| *c == ' ').collect()
            } else {
                indent.clone()
            };
            head.extend(word.iter().take(room));
            rows.push(head);
            row.clear();
            word = word.split_off(room.min(word.len()));
            if word.is_empty() {
                break;
            }
        }
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows
}

/// How wide a text dialog is in a body `body_cols` wide.
pub fn text_box_width(body_cols: u16) -> u16 {
    body_cols.saturating_sub(4).min(120)
}

/// A text dialog's lines as it draws them: made terminal-safe and wrapped at words to the
/// inside of its box, so the keys scroll by the rows on screen.
pub fn text_rows(lines: &[String], body_cols: u16) -> Vec<String> {
    let inside = usize::from(text_box_width(body_cols).saturating_sub(2).max(1));
    lines
        .iter()
        .flat_map(|l| word_wrap(&crate::model::terminal_safe(l), inside))
        .collect()
}

/// How far a text dialog of `lines` rows scrolls at most in a body `body_rows` high: the
/// text with its hint line and its box, less what fits. 0 when it all fits.
pub fn text_scroll_max(lines: usize, body_rows: u16) -> u16 {
    let shown = u16::try_from(lines + 1).unwrap_or(u16::MAX);
    let inside = shown.saturating_add(2).min(body_rows).saturating_sub(2);
    shown.saturating_sub(inside)
}

impl App {
    /// Whether actions may be asked for at all; says why not in the status line.
    pub(super) fn may_act(&mut self, what: &str) -> bool {
        let guard_ro = self.guard.is_some_and(|g| g.read_only);
        if self.read_only || guard_ro {
            self.set_status(
                Level::Error,
                format!("{what} refused: the console is read-only (--read-only or the cloud's read_only setting)"),
            );
            return false;
        }
        if self.guard.is_none() {
            self.set_status(Level::Error, format!("{what}: {NO_ACTIONS}"));
            return false;
        }
        true
    }

    /// The cluster name to type back for a fleet-wide action, on a production cloud.
    pub(super) fn production_name(&self, cluster: &Cluster) -> Option<String> {
        self.guard
            .filter(|g| g.production)
            .map(|_| cluster.name.clone())
    }

    pub fn open_dialog(&mut self, d: Dialog) {
        self.mode = Mode::Dialog(Box::new(d));
    }

    pub(super) fn open_scale(&mut self) {
        let Some((cluster, nodegroup)) = self.selected_nodegroup() else {
            self.set_status(Level::Warn, "no node group selected");
            return;
        };
        if !self.may_act("scale") {
            return;
        }
        let min = nodegroup.min_node_count.unwrap_or(0) as u64;
        let max = nodegroup.max_node_count.map(u64::from);
        let now = nodegroup.node_count as u64;
        let hint = match max {
            Some(m) => format!("min {min}, max {m}, now {now}"),
            None => format!("min {min}, now {now}"),
        };
        let form = Form::new(
            format!("Scale {}/{}", cluster.name, nodegroup.name),
            vec![Field::number("nodes", now, min, max, hint)],
        );
        self.open_dialog(Dialog::Form {
            form,
            purpose: FormPurpose::Scale { cluster, nodegroup },
        });
    }

    pub(super) fn open_upgrade(&mut self) {
        let Some((cluster, nodegroup)) = self.selected_nodegroup() else {
            self.set_status(Level::Warn, "no node group selected");
            return;
        };
        if !self.may_act("upgrade") {
            return;
        }
        let d = RolloutOptions::default();
        let target = match cluster.driver {
            DriverKind::HeatNative => Field::text(
                "image",
                "",
                &format!(
                    "now {}",
                    nodegroup.image.clone().unwrap_or_else(|| "?".into())
                ),
            ),
            _ => Field::text(
                "cluster template",
                "",
                &format!(
                    "now {}",
                    cluster.template_id.clone().unwrap_or_else(|| "?".into())
                ),
            ),
        };
        let form = Form::new(
            format!("Upgrade {}/{}", cluster.name, nodegroup.name),
            vec![
                target,
                Field::number(
                    "batch size",
                    d.batch_size as u64,
                    1,
                    Some(10_000),
                    "nodes released together".into(),
                ),
                Field::number(
                    "canary",
                    d.canary as u64,
                    0,
                    Some(100),
                    "first nodes, one at a time".into(),
                ),
                Field::number(
                    "gate wait (s)",
                    d.gate_wait_ms / 1000,
                    0,
                    Some(86_400),
                    "watch after each batch".into(),
                ),
                Field::number(
                    "node timeout (s)",
                    d.node_timeout_ms / 1000,
                    1,
                    Some(86_400),
                    "longest one node may take".into(),
                ),
                Field::flag(
                    "pause on failure",
                    d.pause_on_failure,
                    "space toggles; no = stop as failed",
                ),
            ],
        );
        self.open_dialog(Dialog::Form {
            form,
            purpose: FormPurpose::Upgrade { cluster, nodegroup },
        });
    }

    /// The nodes view's marked nodes, in table order.
    fn marked_nodes(&self) -> Option<(Cluster, NodeGroup, Vec<Node>)> {
        let v = self.view();
        let ViewKind::Nodes { cluster, nodegroup } = &v.kind else {
            return None;
        };
        let rows = self
            .store
            .nodes
            .get(&nodegroup.id)
            .map(|s| s.rows.as_slice())
            .unwrap_or(&[]);
        let nodes: Vec<Node> = rows
            .iter()
            .filter(|r| v.table.is_marked(&r.node.key.member))
            .map(|r| r.node.clone())
            .collect();
        Some((cluster.clone(), nodegroup.clone(), nodes))
    }

    pub(super) fn remove_marked(&mut self) {
        let Some((cluster, nodegroup, nodes)) = self.marked_nodes() else {
            self.set_status(Level::Warn, "removing nodes works in the nodes view");
            return;
        };
        if nodes.is_empty() {
            self.set_status(Level::Warn, "no nodes marked: mark them with space first");
            return;
        }
        if !self.may_act("remove nodes") {
            return;
        }
        let current = self
            .store
            .nodes
            .get(&nodegroup.id)
            .map(|s| s.rows.len() as u32)
            .filter(|n| *n > 0)
            .unwrap_or(nodegroup.node_count);
        let request = ScaleRequest {
            count: Some(current.saturating_sub(nodes.len() as u32)),
            remove: nodes.iter().map(|n| n.key.member.clone()).collect(),
        };
        let gen = self.gen();
        self.outbox
            .push(Request::Operator(OperatorRequest::PlanScale {
                cluster: cluster.clone(),
                nodegroup: nodegroup.clone(),
                request,
                gen,
            }));
        self.open_dialog(Dialog::Waiting {
            title: format!("planning the removal of {} node(s)…", nodes.len()),
            gen,
            form: None,
            purpose: FormPurpose::RemoveMarked { cluster, nodegroup },
        });
    }

    pub(super) fn open_node_action(&mut self) {
        let Some((cluster, nodegroup, nodes)) = self.marked_nodes() else {
            self.set_status(
                Level::Warn,
                "node actions work in the nodes view (mark nodes)",
            );
            return;
        };
        if nodes.is_empty() {
            self.set_status(Level::Warn, "no nodes marked: mark them with space first");
            return;
        }
        if !self.may_act("node action") {
            return;
        }
        let n = nodes.len() as u64;
        let form = Form::new(
            format!(
                "Run on {n} marked node(s) of {}/{}",
                cluster.name, nodegroup.name
            ),
            vec![
                Field::text("command", "", "runs with the node in its environment"),
                Field::number(
                    "batch size",
                    n.min(5),
                    1,
                    Some(n),
                    format!("1..{n}; stops after a batch with a failure"),
                ),
            ],
        );
        self.open_dialog(Dialog::Form {
            form,
            purpose: FormPurpose::NodeAction {
                cluster,
                nodegroup,
                nodes,
            },
        });
    }

    /// A key while a dialog is open: its meaning comes from the key table's dialog
    /// contexts (see [`crate::keys`]).
    pub(super) fn on_dialog_key(&mut self, key: KeyEvent) {
        let Mode::Dialog(dialog) = std::mem::replace(&mut self.mode, Mode::Normal) else {
            return;
        };
        let action = self.keys.lookup_dialog(&key, keys::PLAIN_DIALOG);
        match *dialog {
            Dialog::Form { mut form, purpose } => match form.on_key(key, &self.keys) {
                FormOutcome::Editing => self.open_dialog(Dialog::Form { form, purpose }),
                FormOutcome::Cancelled => {
                    self.set_status(Level::Info, "cancelled: nothing changed")
                }
                FormOutcome::Submitted => self.submit_form(form, purpose),
            },
            Dialog::Waiting { .. } if action == Some(KeyAction::DialogCancel) => {
                // The plan that arrives later is dropped (its generation is gone).
                self.set_status(Level::Info, "cancelled: nothing changed");
            }
            d @ Dialog::Waiting { .. } => self.open_dialog(d),
            Dialog::Confirm(mut c) => match c.on_key(key, &self.keys) {
                ConfirmOutcome::Open => self.open_dialog(Dialog::Confirm(c)),
                ConfirmOutcome::No => self.set_status(Level::Info, "cancelled: nothing changed"),
                ConfirmOutcome::Yes(typed) => self.confirmed(c.then, typed),
            },
            Dialog::AbortChoice { key: k, selected } => {
                self.on_abort_choice_key(k, selected, action, &key)
            }
            Dialog::Text {
                title,
                lines,
                scroll,
            } => {
                let rows = text_rows(&lines, self.size.0).len();
                let max = text_scroll_max(rows, self.size.1.saturating_sub(CHROME_ROWS));
                let scroll = match action {
                    // A scroll key scrolls while there is text that way; else it is any other
                    // key (the results of a `!` run fit: `j` closes them and moves the cursor).
                    Some(KeyAction::DialogDown) if scroll < max => scroll.saturating_add(1),
                    Some(KeyAction::DialogUp) if scroll > 0 => scroll.saturating_sub(1),
                    Some(KeyAction::DialogPageDown) if scroll < max => {
                        scroll.saturating_add(10).min(max)
                    }
                    Some(KeyAction::DialogPageUp) if scroll > 0 => scroll.saturating_sub(10),
                    // Submit, cancel and the quit and back keys only close it.
                    Some(KeyAction::DialogSubmit | KeyAction::DialogCancel) => return,
                    _ if matches!(
                        self.keys.lookup(&key, &[KeyContext::Global]),
                        Some(KeyAction::Quit | KeyAction::Back)
                    ) =>
                    {
                        return
                    }
                    // Any other key closes it and then does what it does: a text that pops up
                    // while the operator types (`:journal`, as the results dialog suggests)
                    // must not eat the `:` and turn the rest into hotkeys.
                    _ => {
                        self.on_key(key);
                        return;
                    }
                };
                self.open_dialog(Dialog::Text {
                    title,
                    lines,
                    scroll,
                });
            }
        }
    }

    /// The abort choice: move, choose (by number too), or cancel.
    fn on_abort_choice_key(
        &mut self,
        k: String,
        selected: usize,
        action: Option<KeyAction>,
        key: &KeyEvent,
    ) {
        let n = ABORT_MODES.len();
        let chosen = match (action, key.code) {
            (Some(KeyAction::DialogCancel), _) => {
                self.set_status(Level::Info, "abort cancelled: nothing changed");
                return;
            }
            (Some(KeyAction::DialogUp), _) => {
                let selected = (selected + n - 1) % n;
                return self.open_dialog(Dialog::AbortChoice { key: k, selected });
            }
            (Some(KeyAction::DialogDown), _) => {
                let selected = (selected + 1) % n;
                return self.open_dialog(Dialog::AbortChoice { key: k, selected });
            }
            (Some(KeyAction::DialogSubmit), _) => Some(selected),
            // The choices' numbers, as the dialog shows them.
            (None, KeyCode::Char(c @ '1'..='9')) => Some(c as usize - '1' as usize),
            _ => None,
        };
        match chosen.and_then(|i| ABORT_MODES.get(i)) {
            Some((mode, text)) => self.confirm_abort(k, *mode, text),
            None => self.open_dialog(Dialog::AbortChoice { key: k, selected }),
        }
    }

    fn submit_form(&mut self, form: Form, purpose: FormPurpose) {
        let gen = self.gen();
        let title;
        match &purpose {
            FormPurpose::Scale { cluster, nodegroup } => {
                let count = form.fields[0].number_value() as u32;
                title = format!("planning the scale to {count} node(s)…");
                self.outbox
                    .push(Request::Operator(OperatorRequest::PlanScale {
                        cluster: cluster.clone(),
                        nodegroup: nodegroup.clone(),
                        request: ScaleRequest {
                            count: Some(count),
                            remove: Vec::new(),
                        },
                        gen,
                    }));
            }
            FormPurpose::Upgrade { cluster, nodegroup } => {
                let f = &form.fields;
                let options = RolloutOptions {
                    batch_size: f[1].number_value() as usize,
                    canary: f[2].number_value() as usize,
                    gate_wait_ms: f[3].number_value() * 1000,
                    node_timeout_ms: f[4].number_value() * 1000,
                    pause_on_failure: f[5].is_on(),
                };
                let to = f[0].value.trim().to_string();
                title = format!("planning the upgrade to {to}…");
                self.outbox
                    .push(Request::Operator(OperatorRequest::PlanUpgrade {
                        cluster: cluster.clone(),
                        nodegroup: nodegroup.clone(),
                        to,
                        options,
                        gen,
                    }));
            }
            FormPurpose::NodeAction {
                cluster,
                nodegroup,
                nodes,
            } => {
                // Nothing to plan: the confirmation lists the nodes.
                let command = form.fields[0].value.trim().to_string();
                let batch_size = form.fields[1].number_value() as usize;
                let mut lines = vec![
                    format!(
                        "run `{command}` on {} node(s) of {}/{}, {batch_size} at a time,",
                        nodes.len(),
                        cluster.name,
                        nodegroup.name
                    ),
                    "stopping after a batch with a failure; output goes to the journal (:journal)"
                        .into(),
                ];
                for (i, batch) in nodes.chunks(batch_size.max(1)).enumerate() {
                    let names: Vec<&str> = batch.iter().map(|n| n.name.as_str()).collect();
                    lines.push(format!("  batch {:>3}: {}", i + 1, names.join(", ")));
                }
                self.open_dialog(Dialog::Confirm(Confirm::new(
                    "Run on the marked nodes?",
                    lines,
                    None,
                    OnYes::NodeAction {
                        cluster: cluster.clone(),
                        nodegroup: nodegroup.clone(),
                        command,
                        nodes: nodes.clone(),
                        batch_size,
                    },
                )));
                return;
            }
            FormPurpose::MarkUnhealthy { stack, path } => {
                let reason = form.fields[0].value.trim().to_string();
                let request = ControlRequest::MarkUnhealthy {
                    path: path.clone(),
                    reason,
                    allow_magnum: false,
                };
                self.plan_control(stack.clone(), request, format!("planning {path}…"));
                return;
            }
            FormPurpose::RemoveMarked { .. } | FormPurpose::Control { .. } => return,
        }
        self.open_dialog(Dialog::Waiting {
            title,
            gen,
            form: Some(form),
            purpose,
        });
    }

    fn confirmed(&mut self, then: OnYes, typed: Option<String>) {
        match then {
            OnYes::ApplyScale { plan, nodegroup_id } => {
                self.set_status(Level::Info, format!("scaling {}…", plan.target.label()));
                self.outbox
                    .push(Request::Operator(OperatorRequest::ApplyScale {
                        plan,
                        confirm: typed,
                        nodegroup_id,
                    }));
            }
            OnYes::StartUpgrade {
                plan,
                cluster,
                nodegroup,
            } => {
                let key = nodegroup.id.clone();
                let key_sent = key.clone();
                let rollout = match plan.as_ref() {
                    UpgradePlan::Rollout(p) => Some((**p).clone()),
                    UpgradePlan::Magnum(_) => None,
                };
                self.outbox
                    .push(Request::Operator(OperatorRequest::StartUpgrade {
                        plan,
                        confirm: typed,
                        key: key_sent,
                    }));
                self.set_status(Level::Info, "starting the upgrade…");
                if rollout.is_none() {
                    // Magnum's: the view opens on it once Magnum accepted (`UpgradeStarted`).
                    let slot = self.store.rollouts.entry(key.clone()).or_insert_with(|| {
                        super::store::RolloutSlot::new(cluster.clone(), nodegroup.clone())
                    });
                    slot.expect_update = true;
                }
                if let Some(rollout) = rollout {
                    // Ours from now on (set before the view opens, so it does not go looking):
                    // the engine's statuses replace any other.
                    let slot = self.store.rollouts.entry(key).or_insert_with(|| {
                        super::store::RolloutSlot::new(cluster.clone(), nodegroup.clone())
                    });
                    slot.plan = Some(rollout);
                    slot.status = None;
                    slot.driver = Some(crate::message::RolloutDriver::Here);
                    slot.meta.error = None;
                    slot.meta.in_flight = false;
                    self.open_rollout_view(cluster, nodegroup);
                }
            }
            OnYes::NodeAction {
                cluster,
                nodegroup,
                command,
                nodes,
                batch_size,
            } => {
                self.set_status(
                    Level::Info,
                    format!("running `{command}` on {} node(s)…", nodes.len()),
                );
                // The marks were for this run: left in place, the next `!` or `X` would
                // silently act on them again.
                self.view_mut().table.clear_marks();
                self.outbox
                    .push(Request::Operator(OperatorRequest::NodeAction {
                        cluster,
                        nodegroup,
                        command,
                        nodes,
                        batch_size,
                    }));
            }
            OnYes::Rollout { key, control } => self.send_control(key, control),
            OnYes::Quit => self.should_quit = true,
            OnYes::CancelUpdate { key, update } => {
                self.outbox
                    .push(Request::Operator(OperatorRequest::CancelUpdate {
                        key,
                        update,
                        rollback: true,
                        confirm: typed,
                    }));
                self.set_status(Level::Info, "asking Heat to cancel the update…");
            }
            OnYes::ApplyControl { plan } => {
                self.set_status(
                    Level::Info,
                    format!("{} {}: sending…", plan.control.action(), plan.target),
                );
                self.outbox
                    .push(Request::Operator(OperatorRequest::ApplyControl {
                        plan,
                        confirm: typed,
                    }));
            }
            OnYes::PlanControl { stack, request } => {
                let title = format!("planning it again for {}…", stack.label());
                self.plan_control(stack, request, title);
            }
        }
    }

    /// The quit question is open (a second ctrl-c answers it).
    pub(super) fn quit_asked(&self) -> bool {
        matches!(&self.mode, Mode::Dialog(d) if matches!(&**d, Dialog::Confirm(c) if c.then == OnYes::Quit))
    }

    /// `q` / `:q` / ctrl-c. A rollout driven by this console stops releasing nodes when it
    /// quits, so that asks first (a second ctrl-c quits).
    pub(super) fn request_quit(&mut self) {
        let running: Vec<String> = self
            .store
            .rollouts
            .values()
            .filter(|s| s.driver == Some(crate::message::RolloutDriver::Here))
            .filter_map(|s| {
                let st = s.status.as_ref()?;
                (!st.state.is_final()).then(|| {
                    format!(
                        "  {}/{}: {} ({} of {} nodes done)",
                        s.cluster.name,
                        s.nodegroup.name,
                        st.state.label(),
                        st.done,
                        st.nodes.len()
                    )
                })
            })
            .collect();
        if running.is_empty() {
            self.should_quit = true;
            return;
        }
        let mut lines = vec!["rollouts driven by this console:".to_string()];
        lines.extend(running);
        lines.push(String::new());
        if self.info.is_simulator {
            // The built-in simulator lives in this process: there is no Heat left to keep the
            // hooks, and nothing for another console to take over.
            lines.extend([
                "This console is running the built-in simulated cloud: quitting ends that cloud"
                    .to_string(),
                "with it, its stacks and this rollout included. Nothing is left to resume."
                    .to_string(),
            ]);
        } else {
            lines.extend([
                "Quitting stops releasing nodes. Heat keeps the nodes not yet released on their"
                    .to_string(),
                "pre-update hooks; the nodes updating now finish. Nothing is rolled back."
                    .to_string(),
                "To continue later: `o` then `R` in any console, or `caldera rollout resume`."
                    .to_string(),
            ]);
        }
        self.open_dialog(Dialog::Confirm(Confirm::new(
            "Quit with a rollout running?",
            lines,
            None,
            OnYes::Quit,
        )));
    }

    fn confirm_abort(&mut self, key: String, mode: AbortMode, text: &str) {
        let Some(slot) = self.store.rollouts.get(&key) else {
            return;
        };
        let name = self.production_name(&slot.cluster);
        let mut lines = vec![
            format!(
                "abort the rollout of {}/{}:",
                slot.cluster.name, slot.nodegroup.name
            ),
            format!("  {text}"),
        ];
        if let Some(s) = &slot.status {
            lines.push(format!(
                "  done {}, failed {}, skipped {}, remaining {}",
                s.done, s.failed, s.skipped, s.remaining
            ));
        }
        // The call, as every other plan shows it (stopping the releases sends none).
        match slot.plan.as_ref().map(|p| mode.call(&p.stack)) {
            Some(Some(call)) => lines.push(format!("  {call}")),
            Some(None) => lines.push("  no call to Heat: the rollout stops releasing".into()),
            None => {}
        }
        self.open_dialog(Dialog::Confirm(Confirm::new(
            "Abort the rollout?",
            lines,
            name,
            OnYes::Rollout {
                key,
                control: Control::Abort(mode),
            },
        )));
    }

    /// Opens the rollout view on a Magnum upgrade Magnum just accepted: it shows the update
    /// as observed from Heat (whatever it showed before for this node group is stale).
    fn watch_magnum_upgrade(&mut self, key: &str) {
        let Some(slot) = self.store.rollouts.get_mut(key) else {
            return;
        };
        slot.expect_update = true;
        slot.observed = None;
        slot.status = None;
        slot.plan = None;
        slot.driver = None;
        slot.searched = false;
        slot.meta.error = None;
        slot.meta.attempted_at = None;
        let (cluster, nodegroup) = (slot.cluster.clone(), slot.nodegroup.clone());
        let in_view = matches!(&self.view().kind,
            ViewKind::Rollout { nodegroup: g, .. } if g.id == key);
        if !in_view {
            self.open_rollout_view(cluster, nodegroup);
        }
    }

    /// Confirms Heat's `cancel_update` of an observed Heat update (it rolls back).
    pub(super) fn confirm_cancel_update(&mut self, key: String, update: ObservedUpdate) {
        let Some(slot) = self.store.rollouts.get(&key) else {
            return;
        };
        let Some((stack, _)) = update.stacks() else {
            return;
        };
        let name = self.production_name(&slot.cluster);
        let mut lines = vec![
            format!(
                "cancel the Heat update of {} (not started by caldera):",
                update.target.label()
            ),
            format!(
                "  POST {}/actions {{\"cancel_update\":null}}",
                crate::drivers::heat_native::stack_path(stack)
            ),
            "  Heat rolls the updated members back to the stack's previous definition".into(),
        ];
        if let Some(s) = &slot.status {
            lines.push(format!(
                "  done {}, failed {}, remaining {}",
                s.done, s.failed, s.remaining
            ));
        }
        self.open_dialog(Dialog::Confirm(Confirm::new(
            "Cancel the Heat update?",
            lines,
            name,
            OnYes::CancelUpdate {
                key,
                update: Box::new(update),
            },
        )));
    }

    /// Opens the abort choice for the rollout in view.
    pub(super) fn open_abort(&mut self, key: String) {
        self.open_dialog(Dialog::AbortChoice { key, selected: 0 });
    }

    /// The plan answers and the results of actions.
    pub(super) fn apply_action_reply(&mut self, reply: ActionReply) {
        match reply {
            ActionReply::ScalePlan { gen, result } => {
                let Some((form, purpose)) = self.take_waiting(gen) else {
                    return;
                };
                match result {
                    Ok(plan) => {
                        let (cluster, nodegroup) = match &purpose {
                            FormPurpose::Scale { cluster, nodegroup }
                            | FormPurpose::RemoveMarked { cluster, nodegroup } => {
                                (cluster.clone(), nodegroup.clone())
                            }
                            _ => return,
                        };
                        let name = self.production_name(&cluster);
                        self.open_dialog(Dialog::Confirm(Confirm::new(
                            format!("Scale {}/{}?", cluster.name, nodegroup.name),
                            plan.lines(),
                            name,
                            OnYes::ApplyScale {
                                plan: Box::new(plan),
                                nodegroup_id: nodegroup.id,
                            },
                        )));
                    }
                    Err(e) => self.plan_failed(form, purpose, e.message),
                }
            }
            ActionReply::UpgradePlan { gen, result } => {
                let Some((form, purpose)) = self.take_waiting(gen) else {
                    return;
                };
                match (result, &purpose) {
                    (Ok(plan), FormPurpose::Upgrade { cluster, nodegroup }) => {
                        let name = self.production_name(cluster);
                        self.open_dialog(Dialog::Confirm(Confirm::new(
                            format!("Upgrade {}/{}?", cluster.name, nodegroup.name),
                            plan.lines(),
                            name,
                            OnYes::StartUpgrade {
                                plan: Box::new(plan),
                                cluster: cluster.clone(),
                                nodegroup: nodegroup.clone(),
                            },
                        )));
                    }
                    (Ok(_), _) => {}
                    (Err(e), _) => self.plan_failed(form, purpose, e.message),
                }
            }
            ActionReply::ScaleApplied {
                target,
                nodegroup_id,
                result,
            } => match result {
                Ok(()) => {
                    self.set_status(
                        Level::Info,
                        format!("scale of {target} applied: watch the nodes come and go"),
                    );
                    if let ViewKind::Nodes { nodegroup, .. } = &self.view().kind {
                        if nodegroup.id == nodegroup_id {
                            self.view_mut().table.clear_marks();
                        }
                    }
                    self.settle_group(&nodegroup_id);
                }
                Err(e) => self.set_status(Level::Error, format!("scale of {target} failed: {e}")),
            },
            ActionReply::UpgradeStarted {
                key,
                target,
                result,
            } => match result {
                Ok(true) => {
                    self.set_status(Level::Info, format!("rollout of {target} started"));
                    self.settle_group(&key);
                }
                Ok(false) => {
                    self.set_status(
                        Level::Info,
                        format!("Magnum accepted the upgrade of {target}: it runs the batches"),
                    );
                    self.settle_group(&key);
                    self.watch_magnum_upgrade(&key);
                }
                Err(e) => {
                    if let Some(slot) = self.store.rollouts.get_mut(&key) {
                        slot.meta.error = Some(e.message.clone());
                        slot.driver = None;
                        slot.plan = None;
                    }
                    self.set_status(Level::Error, format!("upgrade not started: {e}"))
                }
            },
            ActionReply::NodeActionDone {
                target,
                nodegroup_id,
                result,
                asked,
            } => match result {
                Ok(runs) => {
                    // A command on the nodes can restart or replace servers.
                    self.settle_group(&nodegroup_id);
                    let ok = runs.iter().filter(|(_, r)| r.ok()).count();
                    let failed = runs.len() - ok;
                    let not_run = asked.saturating_sub(runs.len());
                    let summary = format!(
                        "node action on {target}: {ok} ok, {failed} failed, {not_run} not run"
                    );
                    let mut lines = vec![summary.clone(), String::new()];
                    for (name, run) in &runs {
                        lines.push(format!(
                            "{:<8} {name}: {}",
                            if run.ok() { "ok" } else { "FAILED" },
                            run.summary()
                        ));
                    }
                    if not_run > 0 {
                        lines.push(format!(
                            "{not_run} node(s) not run: a batch before them failed"
                        ));
                    }
                    lines.push("full output in the journal (:journal)".into());
                    let level = if failed > 0 {
                        Level::Error
                    } else {
                        Level::Info
                    };
                    if matches!(self.mode, Mode::Normal) {
                        self.set_status(level, summary);
                        self.open_dialog(Dialog::Text {
                            title: "Node action results".into(),
                            lines,
                            scroll: 0,
                        });
                    } else {
                        // The operator is typing or answering something else: do not take the
                        // keyboard away; the summary stays in the status line.
                        self.set_status(level, format!("{summary} (details: :journal)"));
                    }
                }
                Err(e) => self.set_status(Level::Error, format!("node action on {target}: {e}")),
            },
            ActionReply::ControlPlan { gen, result } => {
                let Some((form, purpose)) = self.take_waiting(gen) else {
                    return;
                };
                match result {
                    Ok(plan) => self.control_planned(plan),
                    Err(e) => self.plan_failed(form, purpose, e.message),
                }
            }
            ActionReply::ControlApplied {
                action,
                target,
                stack_id,
                result,
            } => self.control_applied(action, &target, &stack_id, result),
        }
    }

    /// The waiting dialog of generation `gen`, closed; `None` when it is not open.
    fn take_waiting(&mut self, gen: u64) -> Option<(Option<Form>, FormPurpose)> {
        match &self.mode {
            Mode::Dialog(d) if matches!(**d, Dialog::Waiting { gen: g, .. } if g == gen) => {}
            _ => return None,
        }
        let Mode::Dialog(d) = std::mem::replace(&mut self.mode, Mode::Normal) else {
            return None;
        };
        match *d {
            Dialog::Waiting { form, purpose, .. } => Some((form, purpose)),
            _ => None,
        }
    }

    /// Planning failed: back to the form (values kept) with the error, or the status line.
    fn plan_failed(&mut self, form: Option<Form>, purpose: FormPurpose, error: String) {
        match form {
            Some(mut form) => {
                form.error = Some(error);
                self.open_dialog(Dialog::Form { form, purpose });
            }
            None => self.set_status(Level::Error, format!("cannot plan: {error}")),
        }
    }
}

#[cfg(test)]
mod wrap_tests {
    use super::word_wrap;

    fn rows(line: &str, width: usize) -> Vec<String> {
        let out = word_wrap(line, width);
        assert!(
            out.iter().all(|r| r.chars().count() <= width),
            "{out:?} wider than {width}"
        );
        out
    }

    #[test]
    fn plans_wrap_at_words_keep_their_indent_and_cut_only_words_longer_than_a_row() {
        assert_eq!(
            rows("scale prod/workers from 3 to 5 nodes", 16),
            ["scale", "prod/workers", "from 3 to 5", "nodes"]
        );
        assert_eq!(
            rows("  PATCH /stacks/s/1 with the parameters", 20),
            ["  PATCH /stacks/s/1", "  with the", "  parameters"]
        );
        assert_eq!(
            rows("  body {\"parameters\":{\"node_count\":5}}", 16),
            [
                "  body",
                "  {\"parameters\":",
                "  {\"node_count\":",
                "  5}}"
            ]
        );
        assert_eq!(rows("", 10), [""]);
        assert_eq!(rows("short", 10), ["short"]);
    }
}
