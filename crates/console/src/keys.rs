//! The key table: every action with its default keys, its context and its help text.
//! The handler, the `?` help and the footer hints all read this one table, and the
//! `[keys]` section of the config file overrides it. Dialogs (forms, confirmations, the
//! abort choice, text overlays) read their keys from the same table, in contexts of their
//! own: a dialog answers its keys only (the global ones do not apply while it is open), and
//! a printable character typed into a text field goes to the field, whatever it is bound to.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashMap;
use std::fmt;

/// Where a binding applies. Specific contexts are looked up before `Table`, then `Global`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyContext {
    Global,
    Table,
    /// The dashboard's panes (the node groups, the event tail).
    Dashboard,
    /// The rows of the stack tree.
    Tree,
    Events,
    Nodes,
    /// Actions on a node group (node groups, dashboard, nodes).
    NodeGroups,
    /// Actions on the marked nodes (nodes view).
    Members,
    Rollout,
    Journal,
    /// Manual Heat controls on a stack (stack list, stack tree).
    HeatStack,
    /// Manual Heat controls on the resource selected in the stack tree.
    HeatResource,
    /// Every dialog: submit, cancel, scroll or move in a list.
    Dialog,
    /// A form's fields.
    Form,
    /// Yes / no: a confirmation without a name to type, a yes/no field of a form.
    Answer,
}

/// The contexts of each kind of view, most specific first (`Global` is always last).
pub const TABLE_VIEW: &[KeyContext] = &[KeyContext::Table];
pub const NODEGROUPS_VIEW: &[KeyContext] = &[KeyContext::NodeGroups, KeyContext::Table];
/// The footer offers hints in this order and drops the last ones that do not fit: at 80
/// columns the heat map's toggle (which frees rows for the tail there) comes before the
/// tail's own keys.
pub const DASHBOARD_VIEW: &[KeyContext] = &[
    KeyContext::Dashboard,
    KeyContext::NodeGroups,
    KeyContext::Nodes,
    KeyContext::Events,
    KeyContext::Table,
];
pub const NODES_VIEW: &[KeyContext] = &[
    KeyContext::Members,
    KeyContext::NodeGroups,
    KeyContext::Nodes,
    KeyContext::Table,
];
pub const EVENTS_VIEW: &[KeyContext] = &[KeyContext::Events, KeyContext::Table];
pub const ROLLOUT_VIEW: &[KeyContext] = &[KeyContext::Rollout, KeyContext::Table];
pub const JOURNAL_VIEW: &[KeyContext] = &[KeyContext::Journal, KeyContext::Table];
pub const STACKS_VIEW: &[KeyContext] = &[KeyContext::HeatStack, KeyContext::Table];
pub const TREE_VIEW: &[KeyContext] = &[
    KeyContext::Tree,
    KeyContext::HeatResource,
    KeyContext::HeatStack,
    KeyContext::Table,
];
/// The node detail scrolls with the table keys (up/down, pages, top/bottom); the table's
/// other keys (open, mark, sort) have nothing to act on there and are not offered.
pub const SERVER_VIEW: &[KeyContext] = &[KeyContext::Table];
/// The contexts of each kind of dialog, most specific first. `Global` does not apply in a
/// dialog: its keys answer the dialog.
pub const FORM_DIALOG: &[KeyContext] = &[KeyContext::Form, KeyContext::Answer, KeyContext::Dialog];
pub const CONFIRM_DIALOG: &[KeyContext] = &[KeyContext::Answer, KeyContext::Dialog];
/// "Planning…", the abort choice and the text overlays.
pub const PLAIN_DIALOG: &[KeyContext] = &[KeyContext::Dialog];
/// Every dialog's contexts, for the conflict check.
pub const ALL_DIALOGS: &[&[KeyContext]] = &[FORM_DIALOG, CONFIRM_DIALOG, PLAIN_DIALOG];
/// Actions that share a key on purpose: in the journal, enter opens the entry's detail; in
/// a form, the arrows move between fields where other dialogs scroll.
const SHARED_KEYS: &[(KeyAction, KeyAction)] = &[
    (KeyAction::JournalDetail, KeyAction::Open),
    (KeyAction::FieldNext, KeyAction::DialogDown),
    (KeyAction::FieldPrev, KeyAction::DialogUp),
];
/// Every view's contexts, for the conflict check.
pub const ALL_VIEWS: &[&[KeyContext]] = &[
    TABLE_VIEW,
    NODEGROUPS_VIEW,
    DASHBOARD_VIEW,
    NODES_VIEW,
    EVENTS_VIEW,
    ROLLOUT_VIEW,
    JOURNAL_VIEW,
    STACKS_VIEW,
    TREE_VIEW,
];

impl KeyContext {
    pub fn title(self) -> &'static str {
        match self {
            KeyContext::Global => "Global",
            KeyContext::Table => "Tables",
            KeyContext::Dashboard => "Dashboard",
            KeyContext::Tree => "Stack tree",
            KeyContext::Events => "Event tail",
            KeyContext::Nodes => "Nodes",
            KeyContext::NodeGroups => "Node group actions",
            KeyContext::Members => "Marked nodes",
            KeyContext::Rollout => "Rollout",
            KeyContext::Journal => "Journal",
            KeyContext::HeatStack => "Heat controls (stack list, tree)",
            KeyContext::HeatResource => "Heat controls (tree resource)",
            KeyContext::Dialog => "Dialogs",
            KeyContext::Form => "Dialogs: form fields (letters typed in a text field stay text)",
            KeyContext::Answer => "Dialogs: yes / no",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyAction {
    Quit,
    Suspend,
    Help,
    Palette,
    Filter,
    Back,
    Refresh,
    Freeze,
    FaultsOnly,
    Dashboard,
    Events,
    Tree,
    Outputs,
    StackDetail,
    /// Give the dashboard's event tail the keys, or give them back to the node groups.
    FocusTail,
    /// The selected tree resource's own `resource show`, whatever it is.
    Describe,
    /// In the tree: the row of the next why-stuck line (a failure, a hold, work in progress).
    NextCause,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Open,
    Mark,
    ClearMarks,
    SortNext,
    SortReverse,
    TimeMode,
    Follow,
    PausePoll,
    Wrap,
    Save,
    HeatMap,
    Scale,
    Upgrade,
    RolloutView,
    RemoveMarked,
    RunOnMarked,
    RolloutPause,
    RolloutResume,
    RolloutSkip,
    RolloutAbort,
    JournalDetail,
    JournalExport,
    HeatCheck,
    HeatCancel,
    HeatClearHook,
    HeatMarkUnhealthy,
    Yank,
    YankName,
    DialogSubmit,
    DialogCancel,
    DialogUp,
    DialogDown,
    DialogPageUp,
    DialogPageDown,
    FieldNext,
    FieldPrev,
    FieldToggle,
    FieldClear,
    AnswerYes,
    AnswerNo,
}

impl KeyAction {
    /// Whether the action changes the cloud (its hint is hidden where actions cannot run).
    pub fn changes_cloud(self) -> bool {
        matches!(
            self,
            KeyAction::Scale
                | KeyAction::Upgrade
                | KeyAction::RemoveMarked
                | KeyAction::RunOnMarked
                | KeyAction::RolloutPause
                | KeyAction::RolloutResume
                | KeyAction::RolloutSkip
                | KeyAction::RolloutAbort
                | KeyAction::HeatCheck
                | KeyAction::HeatCancel
                | KeyAction::HeatClearHook
                | KeyAction::HeatMarkUnhealthy
        )
    }
}

/// One key: a code and modifiers, e.g. `ctrl-c`, `G`, `enter`, `shift-tab`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyBinding {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl KeyBinding {
    pub fn parse(raw: &str) -> Result<KeyBinding, String> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err("empty key".into());
        }
        let mut mods = KeyModifiers::NONE;
        let mut rest = raw;
        loop {
            let lower = rest.to_ascii_lowercase();
            if rest.chars().count() > 1
                && (lower.starts_with("ctrl-") || lower.starts_with("ctrl+"))
            {
                mods |= KeyModifiers::CONTROL;
                rest = &rest[5..];
            } else if rest.chars().count() > 1
                && (lower.starts_with("alt-") || lower.starts_with("alt+"))
            {
                mods |= KeyModifiers::ALT;
                rest = &rest[4..];
            } else if rest.chars().count() > 1
                && (lower.starts_with("shift-") || lower.starts_with("shift+"))
            {
                mods |= KeyModifiers::SHIFT;
                rest = &rest[6..];
            } else {
                break;
            }
        }
        let lower = rest.to_ascii_lowercase();
        let code = match lower.as_str() {
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "space" => KeyCode::Char(' '),
            "tab" if mods.contains(KeyModifiers::SHIFT) => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "pgup" | "pageup" => KeyCode::PageUp,
            "pgdn" | "pagedown" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "insert" | "ins" => KeyCode::Insert,
            f if f.len() >= 2
                && f.starts_with('f')
                && f[1..].chars().all(|c| c.is_ascii_digit()) =>
            {
                let n: u8 = f[1..]
                    .parse()
                    .map_err(|_| format!("bad function key {raw:?}"))?;
                KeyCode::F(n)
            }
            _ => {
                let mut chars = rest.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => {
                        if mods.contains(KeyModifiers::SHIFT) && c.is_ascii_alphabetic() {
                            mods.remove(KeyModifiers::SHIFT);
                            KeyCode::Char(c.to_ascii_uppercase())
                        } else if mods.contains(KeyModifiers::CONTROL) {
                            KeyCode::Char(c.to_ascii_lowercase())
                        } else {
                            KeyCode::Char(c)
                        }
                    }
                    _ => return Err(format!("unknown key {raw:?}")),
                }
            }
        };
        Ok(KeyBinding { code, mods })
    }

    /// The binding an incoming key event matches (shift folded into the character).
    pub fn from_event(ev: &KeyEvent) -> KeyBinding {
        let mut mods =
            ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match ev.code {
            KeyCode::Char(c) => {
                mods.remove(KeyModifiers::SHIFT);
                if mods.contains(KeyModifiers::CONTROL) {
                    KeyCode::Char(c.to_ascii_lowercase())
                } else {
                    KeyCode::Char(c)
                }
            }
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        KeyBinding { code, mods }
    }
}

impl fmt::Display for KeyBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("del"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// One row of the key table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    pub action: KeyAction,
    /// The name used in the config file's `[keys]` section.
    pub name: &'static str,
    pub context: KeyContext,
    pub keys: Vec<KeyBinding>,
    pub help: &'static str,
    /// Short label for the footer, when the action deserves a hint there.
    pub hint: Option<&'static str>,
}

/// The defaults: (action, config name, context, keys, help, footer hint).
type Default5 = (
    KeyAction,
    &'static str,
    KeyContext,
    &'static [&'static str],
    &'static str,
    Option<&'static str>,
);

const DEFAULTS: &[Default5] = &[
    (
        KeyAction::Quit,
        "quit",
        KeyContext::Global,
        &["q", "ctrl-c"],
        "Quit caldera",
        Some("quit"),
    ),
    (
        KeyAction::Suspend,
        "suspend",
        KeyContext::Global,
        &["ctrl-z"],
        "Suspend to the shell (resume with fg)",
        None,
    ),
    (
        KeyAction::Help,
        "help",
        KeyContext::Global,
        &["?"],
        "Show this help",
        Some("help"),
    ),
    (
        KeyAction::Palette,
        "palette",
        KeyContext::Global,
        &[":"],
        "Command palette (every command is listed under Commands below)",
        Some("cmd"),
    ),
    (
        KeyAction::Filter,
        "filter",
        KeyContext::Global,
        &["/"],
        "Filter the table anew: text, re:REGEX, !inverse (Enter alone clears, Esc keeps)",
        Some("filter"),
    ),
    (
        KeyAction::Back,
        "back",
        KeyContext::Global,
        &["esc", "-"],
        "Back to the previous view (or clear the filter)",
        Some("back"),
    ),
    (
        KeyAction::Refresh,
        "refresh",
        KeyContext::Global,
        &["r", "ctrl-r"],
        "Refresh the current view now",
        None,
    ),
    (
        KeyAction::Freeze,
        "freeze",
        KeyContext::Global,
        &["z"],
        "Freeze the screen (data is kept and applied on thaw)",
        None,
    ),
    (
        KeyAction::FaultsOnly,
        "faults_only",
        KeyContext::Global,
        &["F"],
        "Show faults only (failed, unhealthy, no IP)",
        Some("faults"),
    ),
    (
        KeyAction::Dashboard,
        "dashboard",
        KeyContext::Global,
        &["d"],
        "Cluster dashboard: node groups, heat map, events",
        Some("dash"),
    ),
    (
        KeyAction::Events,
        "events",
        KeyContext::Global,
        &["e"],
        "Event tail of the selected stack",
        Some("events"),
    ),
    (
        KeyAction::Tree,
        "tree",
        KeyContext::Global,
        &["t"],
        "Stack tree and why-stuck of the selected stack",
        Some("tree"),
    ),
    (
        KeyAction::Outputs,
        "outputs",
        KeyContext::Global,
        &["O"],
        "Outputs of the selected stack (enter on one evaluates it)",
        None,
    ),
    (
        KeyAction::StackDetail,
        "stack_detail",
        KeyContext::Global,
        &["i"],
        "Stack detail: status, parameters, outputs, tags, template",
        None,
    ),
    (
        KeyAction::FocusTail,
        "focus_tail",
        KeyContext::Dashboard,
        &["tab"],
        "Give the keys to the event tail, or back to the node groups (enter: event whole)",
        Some("pick event"),
    ),
    (
        KeyAction::Describe,
        "describe",
        KeyContext::Tree,
        &["D"],
        "Describe the selected resource (resource show), nested stack owners included",
        Some("describe"),
    ),
    (
        KeyAction::NextCause,
        "next_cause",
        KeyContext::Tree,
        &["n"],
        "Jump to the resource of the next why-stuck line (failed, held, in progress)",
        Some("next cause"),
    ),
    (
        KeyAction::Up,
        "up",
        KeyContext::Table,
        &["up", "k"],
        "Move up",
        None,
    ),
    (
        KeyAction::Down,
        "down",
        KeyContext::Table,
        &["down", "j"],
        "Move down",
        None,
    ),
    (
        KeyAction::PageUp,
        "page_up",
        KeyContext::Table,
        &["pgup", "ctrl-b"],
        "Page up",
        None,
    ),
    (
        KeyAction::PageDown,
        "page_down",
        KeyContext::Table,
        &["pgdn", "ctrl-f"],
        "Page down",
        None,
    ),
    (
        KeyAction::Top,
        "top",
        KeyContext::Table,
        &["home", "g"],
        "First row",
        None,
    ),
    (
        KeyAction::Bottom,
        "bottom",
        KeyContext::Table,
        &["end", "G"],
        "Last row",
        None,
    ),
    (
        KeyAction::Open,
        "open",
        KeyContext::Table,
        &["enter"],
        "Open / drill down",
        Some("open"),
    ),
    (
        KeyAction::Mark,
        "mark",
        KeyContext::Table,
        &["space"],
        "Mark or unmark the row, then move down",
        Some("mark"),
    ),
    (
        KeyAction::ClearMarks,
        "clear_marks",
        KeyContext::Table,
        &["M"],
        "Clear all marks",
        None,
    ),
    (
        KeyAction::SortNext,
        "sort_next",
        KeyContext::Table,
        &["s"],
        "Sort by the next column",
        Some("sort"),
    ),
    (
        KeyAction::SortReverse,
        "sort_reverse",
        KeyContext::Table,
        &["S"],
        "Reverse the sort direction",
        None,
    ),
    (
        KeyAction::Yank,
        "yank",
        KeyContext::Table,
        &["y"],
        "Copy the row's id to the clipboard (node: server id; resource: physical id)",
        None,
    ),
    (
        KeyAction::YankName,
        "yank_name",
        KeyContext::Table,
        &["Y"],
        "Copy the row's name (node: its address, for ssh; event: its resource's name)",
        None,
    ),
    (
        KeyAction::HeatMap,
        "heat_map",
        KeyContext::Nodes,
        &["m"],
        "Show or hide the fleet heat map",
        Some("map"),
    ),
    (
        KeyAction::Follow,
        "follow",
        KeyContext::Events,
        &["f"],
        "Follow the tail (jump to newest)",
        Some("follow"),
    ),
    (
        KeyAction::PausePoll,
        "pause",
        KeyContext::Events,
        &["p"],
        "Pause or resume polling for events",
        Some("pause"),
    ),
    (
        KeyAction::TimeMode,
        "time_mode",
        KeyContext::Events,
        &["T"],
        "Relative or absolute times",
        Some("time"),
    ),
    (
        KeyAction::Wrap,
        "wrap",
        KeyContext::Events,
        &["w"],
        "Wrap long lines",
        Some("wrap"),
    ),
    (
        KeyAction::Save,
        "save",
        KeyContext::Events,
        &["W"],
        "Save the (filtered) events to a file",
        Some("save"),
    ),
    (
        KeyAction::Scale,
        "scale",
        KeyContext::NodeGroups,
        &["c"],
        "Scale the node group: new node count, plan, confirm",
        Some("scale"),
    ),
    (
        KeyAction::Upgrade,
        "upgrade",
        KeyContext::NodeGroups,
        &["u"],
        "Upgrade the node group: target, batches, plan, confirm",
        Some("upgrade"),
    ),
    (
        KeyAction::RolloutView,
        "rollout",
        KeyContext::NodeGroups,
        &["o"],
        "Rollout view of the node group (ours or one under way)",
        Some("rollout"),
    ),
    (
        KeyAction::RemoveMarked,
        "remove_marked",
        KeyContext::Members,
        &["X"],
        "Remove the marked nodes (scale down by them)",
        Some("remove"),
    ),
    (
        KeyAction::RunOnMarked,
        "run_marked",
        KeyContext::Members,
        &["!"],
        "Run a command on the marked nodes",
        Some("run"),
    ),
    (
        KeyAction::RolloutPause,
        "rollout_pause",
        KeyContext::Rollout,
        &["p"],
        "Pause the rollout (the batch in flight finishes)",
        Some("pause"),
    ),
    (
        KeyAction::RolloutResume,
        "rollout_resume",
        KeyContext::Rollout,
        &["R"],
        "Resume the rollout (takes over one not driven here)",
        Some("resume"),
    ),
    (
        KeyAction::RolloutSkip,
        "rollout_skip",
        KeyContext::Rollout,
        &["x"],
        "Skip the selected node (it is never released)",
        Some("skip"),
    ),
    (
        KeyAction::RolloutAbort,
        "rollout_abort",
        KeyContext::Rollout,
        &["A"],
        "Abort the rollout (asks how, then confirms)",
        Some("abort"),
    ),
    (
        KeyAction::JournalDetail,
        "journal_detail",
        KeyContext::Journal,
        &["enter"],
        "Show the entry's plan, API calls and output",
        Some("detail"),
    ),
    (
        KeyAction::JournalExport,
        "journal_export",
        KeyContext::Journal,
        &["W"],
        "Export the (filtered) journal as JSON lines",
        Some("export"),
    ),
    (
        KeyAction::HeatCheck,
        "heat_check",
        KeyContext::HeatStack,
        &["K"],
        "Heat stack check (CHECK_COMPLETE or CHECK_FAILED): plan, confirm",
        Some("check"),
    ),
    (
        KeyAction::HeatCancel,
        "heat_cancel",
        KeyContext::HeatStack,
        &["C"],
        "Cancel the stack's update under way (Heat rolls back): plan, confirm",
        Some("cancel"),
    ),
    (
        KeyAction::HeatClearHook,
        "heat_clear_hook",
        KeyContext::HeatResource,
        &["H"],
        "Clear the hook the selected resource is held on: plan, confirm",
        Some("clear hook"),
    ),
    (
        KeyAction::HeatMarkUnhealthy,
        "heat_mark_unhealthy",
        KeyContext::HeatResource,
        &["U"],
        "Mark the selected resource unhealthy (replaced by the next update): reason, plan",
        Some("unhealthy"),
    ),
    (
        KeyAction::DialogSubmit,
        "dialog_submit",
        KeyContext::Dialog,
        &["enter"],
        "Plan the form (nothing changes yet), confirm, choose, close a text",
        None,
    ),
    (
        KeyAction::DialogCancel,
        "dialog_cancel",
        KeyContext::Dialog,
        &["esc"],
        "Cancel the dialog (nothing changes)",
        None,
    ),
    (
        KeyAction::DialogUp,
        "dialog_up",
        KeyContext::Dialog,
        &["up", "k"],
        "Scroll the plan or text up; previous choice",
        None,
    ),
    (
        KeyAction::DialogDown,
        "dialog_down",
        KeyContext::Dialog,
        &["down", "j"],
        "Scroll the plan or text down; next choice",
        None,
    ),
    (
        KeyAction::DialogPageUp,
        "dialog_page_up",
        KeyContext::Dialog,
        &["pgup"],
        "Scroll the plan or text a page up",
        None,
    ),
    (
        KeyAction::DialogPageDown,
        "dialog_page_down",
        KeyContext::Dialog,
        &["pgdn"],
        "Scroll the plan or text a page down",
        None,
    ),
    (
        KeyAction::FieldNext,
        "field_next",
        KeyContext::Form,
        &["tab", "down"],
        "Next field",
        None,
    ),
    (
        KeyAction::FieldPrev,
        "field_prev",
        KeyContext::Form,
        &["shift-tab", "up"],
        "Previous field",
        None,
    ),
    (
        KeyAction::FieldToggle,
        "field_toggle",
        KeyContext::Form,
        &["space"],
        "Toggle a yes/no field",
        None,
    ),
    (
        KeyAction::FieldClear,
        "field_clear",
        KeyContext::Form,
        &["ctrl-u"],
        "Clear the field",
        None,
    ),
    (
        KeyAction::AnswerYes,
        "answer_yes",
        KeyContext::Answer,
        &["y", "Y"],
        "Yes: do it (no name to type), or set a yes/no field",
        None,
    ),
    (
        KeyAction::AnswerNo,
        "answer_no",
        KeyContext::Answer,
        &["n", "N"],
        "No: cancel (nothing changes), or clear a yes/no field",
        None,
    ),
];

/// The key table in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMap {
    pub entries: Vec<KeyEntry>,
}

impl Default for KeyMap {
    fn default() -> Self {
        let entries = DEFAULTS
            .iter()
            .map(|(action, name, context, keys, help, hint)| KeyEntry {
                action: *action,
                name,
                context: *context,
                keys: keys
                    .iter()
                    .filter_map(|k| KeyBinding::parse(k).ok())
                    .collect(),
                help,
                hint: *hint,
            })
            .collect();
        KeyMap { entries }
    }
}

impl KeyMap {
    pub fn action_names() -> Vec<&'static str> {
        DEFAULTS.iter().map(|d| d.1).collect()
    }

    /// Replace an action's keys. Errors name the problem (unknown action or key).
    pub fn set(&mut self, action_name: &str, keys: &[String]) -> Result<(), String> {
        let parsed: Result<Vec<KeyBinding>, String> =
            keys.iter().map(|k| KeyBinding::parse(k)).collect();
        let parsed = parsed?;
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.name == action_name)
            .ok_or_else(|| {
                format!(
                    "unknown action {action_name:?} (known: {})",
                    KeyMap::action_names().join(", ")
                )
            })?;
        entry.keys = parsed;
        Ok(())
    }

    /// Another entry that already means one of entry `idx`'s keys in a view where both
    /// apply (Global applies everywhere), unless the two share it on purpose.
    fn clash(&self, idx: usize) -> Option<(KeyBinding, &KeyEntry)> {
        let e = &self.entries[idx];
        let views = ALL_VIEWS.iter().map(|v| (v, true));
        let dialogs = ALL_DIALOGS.iter().map(|v| (v, false));
        for (view, global) in views.chain(dialogs) {
            let active = |c: KeyContext| (global && c == KeyContext::Global) || view.contains(&c);
            if !active(e.context) {
                continue;
            }
            for (j, other) in self.entries.iter().enumerate() {
                let shared = SHARED_KEYS.contains(&(e.action, other.action))
                    || SHARED_KEYS.contains(&(other.action, e.action));
                if j == idx || shared || !active(other.context) {
                    continue;
                }
                if let Some(k) = e.keys.iter().find(|k| other.keys.contains(k)) {
                    return Some((*k, other));
                }
            }
        }
        None
    }

    /// Applies key overrides (action name → keys) together, so that swapping two keys
    /// works. An override that does not parse, or that binds a key another action already
    /// means in the same view (`quit = ["j"]`, where `j` moves down), is reported by action
    /// name, and that action keeps its default keys: a key means one thing in a view.
    pub fn apply(&mut self, overrides: &[(String, Vec<String>)]) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        let mut applied: Vec<usize> = Vec::new();
        for (name, keys) in overrides {
            match self.set(name, keys) {
                Ok(()) => applied.extend(self.entries.iter().position(|e| e.name == name)),
                Err(msg) => problems.push((name.clone(), msg)),
            }
        }
        let defaults = KeyMap::default();
        // Each round puts one action back to its defaults, which never clash among
        // themselves (see the tests), so this ends within `applied.len()` rounds.
        while let Some((i, msg)) = applied.iter().find_map(|&i| {
            self.clash(i).map(|(k, other)| {
                (
                    i,
                    format!(
                        "{k} is already bound to {} in {}",
                        other.name,
                        other.context.title()
                    ),
                )
            })
        }) {
            self.entries[i].keys = defaults.entries[i].keys.clone();
            applied.retain(|&j| j != i);
            let e = &self.entries[i];
            problems.push((
                e.name.to_string(),
                format!(
                    "{msg}; keeping the default keys of {} ({})",
                    e.name,
                    join_keys(&e.keys)
                ),
            ));
        }
        problems
    }

    /// The action for a key in the given contexts (most specific first); global last.
    pub fn lookup(&self, ev: &KeyEvent, contexts: &[KeyContext]) -> Option<KeyAction> {
        self.owner(&KeyBinding::from_event(ev), contexts)
            .map(|e| e.action)
    }

    /// The entry a key reaches in the given contexts: the first context (most specific
    /// first, global last) that binds it, and in it the first entry. Every other binding of
    /// that key in view is shadowed: pressing it never gets there.
    fn owner(&self, kb: &KeyBinding, contexts: &[KeyContext]) -> Option<&KeyEntry> {
        contexts
            .iter()
            .chain(std::iter::once(&KeyContext::Global))
            .find_map(|ctx| {
                self.entries
                    .iter()
                    .find(|e| e.context == *ctx && e.keys.contains(kb))
            })
    }

    /// The action for a key in an open dialog: its contexts only, most specific first
    /// (the global keys do not apply: `q` or `-` may be an answer there).
    pub fn lookup_dialog(&self, ev: &KeyEvent, contexts: &[KeyContext]) -> Option<KeyAction> {
        let kb = KeyBinding::from_event(ev);
        contexts.iter().find_map(|ctx| {
            self.entries
                .iter()
                .find(|e| e.context == *ctx && e.keys.contains(&kb))
                .map(|e| e.action)
        })
    }

    /// The first key of `action`, as the dialogs' hints name it (`?` if it has none).
    pub fn first_key(&self, action: KeyAction) -> String {
        self.keys_for(action)
            .first()
            .map_or_else(|| "?".to_string(), ToString::to_string)
    }

    pub fn keys_for(&self, action: KeyAction) -> &[KeyBinding] {
        self.entries
            .iter()
            .find(|e| e.action == action)
            .map(|e| e.keys.as_slice())
            .unwrap_or(&[])
    }

    /// `(context title, [(keys, help)])` for the help screen, in table order.
    pub fn help_sections(&self) -> Vec<(&'static str, Vec<(String, &'static str)>)> {
        let mut out: Vec<(&'static str, Vec<(String, &'static str)>)> = Vec::new();
        for ctx in [
            KeyContext::Global,
            KeyContext::Table,
            KeyContext::Dashboard,
            KeyContext::Tree,
            KeyContext::Nodes,
            KeyContext::Events,
            KeyContext::NodeGroups,
            KeyContext::Members,
            KeyContext::Rollout,
            KeyContext::Journal,
            KeyContext::HeatStack,
            KeyContext::HeatResource,
            KeyContext::Dialog,
            KeyContext::Form,
            KeyContext::Answer,
        ] {
            let rows: Vec<(String, &'static str)> = self
                .entries
                .iter()
                .filter(|e| e.context == ctx)
                .map(|e| (join_keys(&e.keys), e.help))
                .collect();
            if !rows.is_empty() {
                out.push((ctx.title(), rows));
            }
        }
        out
    }

    /// `(first key, label)` footer hints for the contexts in view.
    pub fn hints(&self, contexts: &[KeyContext]) -> Vec<(String, &'static str)> {
        self.hints_where(contexts, |_| true)
    }

    /// The footer hints of the actions `keep` accepts.
    pub fn hints_where(
        &self,
        contexts: &[KeyContext],
        keep: impl Fn(KeyAction) -> bool,
    ) -> Vec<(String, &'static str)> {
        let mut order: Vec<KeyContext> = contexts.to_vec();
        order.push(KeyContext::Global);
        let mut out: Vec<(String, &'static str)> = Vec::new();
        for ctx in order {
            for e in self.entries.iter().filter(|e| e.context == ctx) {
                let Some(label) = e.hint else { continue };
                if let Some(key) = self.reachable_key(e, contexts) {
                    if keep(e.action) && !out.iter().any(|(shown, _)| *shown == key) {
                        out.push((key, label));
                    }
                }
            }
        }
        out
    }

    /// The first of `entry`'s keys that reaches it in these contexts, as the footer names
    /// it. A key an earlier context binds, in any position of its list, is that context's
    /// (the handler looks the contexts up in the same order): it is hinted once, for what
    /// it does there (`enter detail` in the journal, not also `enter open`), and an entry
    /// whose first key is shadowed is hinted by its next one. One with every key shadowed
    /// gets no hint.
    fn reachable_key(&self, entry: &KeyEntry, contexts: &[KeyContext]) -> Option<String> {
        entry
            .keys
            .iter()
            .find(|k| {
                self.owner(k, contexts)
                    .is_some_and(|o| std::ptr::eq(o, entry))
            })
            .map(ToString::to_string)
    }
}

pub fn join_keys(keys: &[KeyBinding]) -> String {
    keys.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Apply `[keys]` overrides; returns the problems (the good ones still apply).
pub fn apply_overrides(map: &mut KeyMap, overrides: &HashMap<String, Vec<String>>) -> Vec<String> {
    let mut list: Vec<(String, Vec<String>)> = overrides
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    list.sort();
    map.apply(&list)
        .into_iter()
        .map(|(name, msg)| format!("{name}: {msg}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn parses_and_prints_keys() {
        for raw in [
            "q",
            "ctrl-c",
            "G",
            "enter",
            "esc",
            "space",
            "pgdn",
            "f5",
            "shift-tab",
            "?",
            "-",
        ] {
            let k = KeyBinding::parse(raw).unwrap();
            let again = KeyBinding::parse(&k.to_string().replace('↑', "up")).unwrap();
            assert_eq!(k, again, "{raw}");
        }
        assert_eq!(
            KeyBinding::parse("shift-g").unwrap(),
            KeyBinding::parse("G").unwrap()
        );
        assert!(KeyBinding::parse("hyper-x").is_err());
    }

    #[test]
    fn lookup_respects_context_and_shift() {
        let m = KeyMap::default();
        assert_eq!(
            m.lookup(
                &key(KeyCode::Char('G'), KeyModifiers::SHIFT),
                &[KeyContext::Table]
            ),
            Some(KeyAction::Bottom)
        );
        assert_eq!(
            m.lookup(&key(KeyCode::Char('c'), KeyModifiers::CONTROL), &[]),
            Some(KeyAction::Quit)
        );
        assert_eq!(
            m.lookup(
                &key(KeyCode::Char('f'), KeyModifiers::NONE),
                &[KeyContext::Events, KeyContext::Table]
            ),
            Some(KeyAction::Follow)
        );
        assert_eq!(
            m.lookup(
                &key(KeyCode::Char('f'), KeyModifiers::NONE),
                &[KeyContext::Table]
            ),
            None
        );
        assert_eq!(
            m.lookup(&key(KeyCode::Char('j'), KeyModifiers::NONE), &[]),
            None
        );
    }

    /// Within one view, a key means one thing: no two bindings of the contexts a view
    /// uses (plus Global) share a key, except where a specific context deliberately
    /// takes over a table key (enter opens the journal entry's detail).
    #[test]
    fn no_key_conflicts_within_a_view() {
        let m = KeyMap::default();
        let allowed = SHARED_KEYS;
        let views = ALL_VIEWS.iter().map(|v| (v, &[KeyContext::Global][..]));
        let dialogs = ALL_DIALOGS.iter().map(|v| (v, &[][..]));
        for (contexts, global) in views.chain(dialogs) {
            let mut seen: HashMap<KeyBinding, KeyAction> = HashMap::new();
            for ctx in contexts.iter().chain(global) {
                for e in m.entries.iter().filter(|e| e.context == *ctx) {
                    for k in &e.keys {
                        if let Some(prev) = seen.insert(*k, e.action) {
                            assert!(
                                allowed.contains(&(prev, e.action)),
                                "{k} is both {prev:?} and {:?} in {contexts:?}",
                                e.action
                            );
                        }
                    }
                }
            }
        }
        // The new actions answer in their views.
        let ev = |c: char| key(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(m.lookup(&ev('c'), NODEGROUPS_VIEW), Some(KeyAction::Scale));
        assert_eq!(m.lookup(&ev('c'), DASHBOARD_VIEW), Some(KeyAction::Scale));
        assert_eq!(
            m.lookup(&ev('X'), NODES_VIEW),
            Some(KeyAction::RemoveMarked)
        );
        assert_eq!(m.lookup(&ev('X'), NODEGROUPS_VIEW), None);
        assert_eq!(
            m.lookup(&ev('p'), ROLLOUT_VIEW),
            Some(KeyAction::RolloutPause)
        );
        assert_eq!(m.lookup(&ev('p'), EVENTS_VIEW), Some(KeyAction::PausePoll));
        assert_eq!(
            m.lookup(&key(KeyCode::Enter, KeyModifiers::NONE), JOURNAL_VIEW),
            Some(KeyAction::JournalDetail)
        );
    }

    #[test]
    fn help_is_generated_from_the_table_and_follows_overrides() {
        let mut m = KeyMap::default();
        let help = m.help_sections();
        let all: Vec<&(String, &str)> = help.iter().flat_map(|(_, rows)| rows).collect();
        assert_eq!(all.len(), m.entries.len());
        assert!(all
            .iter()
            .any(|(k, h)| k == "q ctrl-c" && h.starts_with("Quit")));
        let mut o = HashMap::new();
        o.insert("quit".to_string(), vec!["ctrl-q".to_string()]);
        o.insert("frobnicate".to_string(), vec!["x".to_string()]);
        let errs = apply_overrides(&mut m, &o);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].contains("frobnicate"));
        let help = m.help_sections();
        assert!(help[0]
            .1
            .iter()
            .any(|(k, h)| k == "ctrl-q" && h.starts_with("Quit")));
        assert_eq!(
            m.lookup(&key(KeyCode::Char('q'), KeyModifiers::NONE), &[]),
            None
        );
        assert_eq!(
            m.lookup(&key(KeyCode::Char('q'), KeyModifiers::CONTROL), &[]),
            Some(KeyAction::Quit)
        );
        assert!(m
            .hints(&[KeyContext::Table])
            .iter()
            .any(|(k, l)| k == "ctrl-q" && *l == "quit"));
    }

    /// A key shared by two contexts in view is hinted once, for the context that gets it,
    /// whatever its position in either list: the later action is hinted by a key of its own
    /// that still reaches it, or not at all.
    #[test]
    fn footer_hints_name_only_keys_that_reach_their_action() {
        let hint = |m: &KeyMap, label: &str| {
            m.hints(JOURNAL_VIEW)
                .into_iter()
                .filter(|(_, l)| *l == label)
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        };
        // The journal's enter shadows the table's; the table's second key still opens.
        let mut m = KeyMap::default();
        let problems = m.apply(&[("open".into(), vec!["enter".into(), "ctrl-o".into()])]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(hint(&m, "detail"), ["enter"]);
        assert_eq!(hint(&m, "open"), ["ctrl-o"]);
        // Both of the table's keys are the journal's (one in second place): no open hint.
        let problems = m.apply(&[
            (
                "journal_detail".into(),
                vec!["enter".into(), "ctrl-o".into()],
            ),
            ("open".into(), vec!["ctrl-o".into(), "enter".into()]),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(hint(&m, "detail"), ["enter"]);
        assert!(hint(&m, "open").is_empty(), "{:?}", m.hints(JOURNAL_VIEW));
        // In every view, each hinted key does what its hint says.
        let m = KeyMap::default();
        for view in ALL_VIEWS {
            for (k, label) in m.hints(view) {
                let kb = KeyBinding::parse(&k).unwrap();
                let owner = m.owner(&kb, view).unwrap();
                assert_eq!(owner.hint, Some(label), "{k} in {view:?}");
            }
        }
    }

    /// Dialog keys are checked against the other keys of the dialogs they answer in (not
    /// the global ones, which do not apply there).
    #[test]
    fn dialog_overrides_are_checked_within_the_dialogs() {
        let mut m = KeyMap::default();
        let problems = m.apply(&[
            ("answer_yes".into(), vec!["tab".into()]),
            ("dialog_cancel".into(), vec!["q".into()]),
        ]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].1.contains("field_next"), "{problems:?}");
        let ev = |c: char| key(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(
            m.lookup_dialog(&ev('q'), PLAIN_DIALOG),
            Some(KeyAction::DialogCancel)
        );
        assert_eq!(
            m.lookup_dialog(&ev('y'), CONFIRM_DIALOG),
            Some(KeyAction::AnswerYes)
        );
        assert_eq!(m.lookup_dialog(&ev('y'), PLAIN_DIALOG), None);
        assert_eq!(m.lookup(&ev('q'), &[]), Some(KeyAction::Quit));
    }
}
