//! A rollout plan: which members, in which batches, with which gates, and the API calls.
//! Shown to the operator before anything happens and written to the journal as the
//! rollout's spec, which a restarted process reads back to reattach.

use crate::api::heat::PriorEntry;
use crate::command_line::CommandLine;
use crate::drivers::layout::{stack_path, GROUP_RESOURCE};
use crate::drivers::{member_order, NodeGroupTarget};
use crate::journal::ApiCall;
use crate::model::{member_key, split_member_key, StackRef};
use crate::parameter_value::ParameterValues;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// How a rollout proceeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutOptions {
    /// Members released together after the canaries.
    pub batch_size: usize,
    /// The first members, released one at a time before any bigger batch.
    pub canary: usize,
    /// Time to wait after a batch before the next one, watching for failures (ms).
    pub gate_wait_ms: u64,
    /// Pause when a member fails (otherwise the rollout ends as failed).
    pub pause_on_failure: bool,
    /// Longest a member may take from release to done before the rollout pauses (ms).
    pub node_timeout_ms: u64,
}

impl Default for RolloutOptions {
    fn default() -> Self {
        RolloutOptions {
            batch_size: 1,
            canary: 0,
            gate_wait_ms: 0,
            pause_on_failure: true,
            node_timeout_ms: 30 * 60 * 1000,
        }
    }
}

/// The tag beside the marker that carries the rollout's options:
/// `caldera-options=b2:c1:g20000:t1800000:p` (batch size, canaries, gate and node timeout in
/// ms, `p`ause or `s`top on a failure; no comma, which would split it in Heat's tag list). Heat holds nothing else of them, so without it a
/// caldera on another machine taking the rollout over from Heat alone would release one
/// member after another with no gate (measured by a tester: a 20 s gate became 0 s).
pub const OPTIONS_PREFIX: &str = "caldera-options=";

impl RolloutOptions {
    /// Bounds of the options a tag may give (the CLI's own): a tag is read from Heat, and
    /// anyone may have written it.
    const MAX_BATCH: u64 = 100_000;
    const MAX_GATE_MS: u64 = 86_400_000;
    const MAX_TIMEOUT_MS: u64 = 7 * 86_400_000;

    /// This rollout's options as its [`OPTIONS_PREFIX`] tag says them.
    pub fn tag(&self) -> String {
        format!(
            "{OPTIONS_PREFIX}b{}:c{}:g{}:t{}:{}",
            self.batch_size,
            self.canary,
            self.gate_wait_ms,
            self.node_timeout_ms,
            if self.pause_on_failure { "p" } else { "s" }
        )
    }

    /// The options an [`OPTIONS_PREFIX`] tag among `tags` gives, each within the CLI's
    /// bounds; `None` without a tag that reads whole.
    pub fn from_tags(tags: &[String]) -> Option<RolloutOptions> {
        let text = tags.iter().find_map(|t| t.strip_prefix(OPTIONS_PREFIX))?;
        let mut o = RolloutOptions::default();
        let mut seen = 0;
        for part in text.split(':') {
            let mut chars = part.chars();
            let key = chars.next()?;
            let value = chars.as_str();
            let n = || value.parse::<u64>().ok();
            match key {
                'b' => o.batch_size = n()?.clamp(1, Self::MAX_BATCH) as usize,
                'c' => o.canary = n()?.min(Self::MAX_BATCH) as usize,
                'g' => o.gate_wait_ms = n()?.min(Self::MAX_GATE_MS),
                't' => o.node_timeout_ms = n()?.clamp(1_000, Self::MAX_TIMEOUT_MS),
                'p' | 's' if value.is_empty() => o.pause_on_failure = key == 'p',
                _ => return None,
            }
            seen += 1;
        }
        (seen == 5).then_some(o)
    }

    pub fn node_timeout(&self) -> Duration {
        Duration::from_millis(self.node_timeout_ms)
    }
    pub fn gate_wait(&self) -> Duration {
        Duration::from_millis(self.gate_wait_ms)
    }

    /// `line` with the `rollout start` flags that give these options, where they differ from
    /// the command's defaults: a command shown to carry a rollout on keeps its batches,
    /// canaries, gate and timeout.
    pub fn with_flags(&self, line: CommandLine) -> CommandLine {
        let default = RolloutOptions::default();
        let mut line = line;
        if self.batch_size != default.batch_size {
            line = line.flag("batch", self.batch_size.to_string());
        }
        if self.canary != default.canary {
            line = line.flag("canary", self.canary.to_string());
        }
        if self.gate_wait_ms != default.gate_wait_ms {
            line = line.flag("gate-secs", secs_text(self.gate_wait_ms));
        }
        if self.node_timeout_ms != default.node_timeout_ms {
            // The command takes whole seconds (at least one).
            line = line.flag(
                "node-timeout-secs",
                self.node_timeout_ms.div_ceil(1000).max(1).to_string(),
            );
        }
        if !self.pause_on_failure {
            line = line.switch("stop-on-failure");
        }
        line
    }
}

/// Milliseconds as the seconds a command line takes (`1.5`, `30`).
fn secs_text(ms: u64) -> String {
    if ms % 1000 == 0 {
        (ms / 1000).to_string()
    } else {
        format!("{}", ms as f64 / 1000.0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutPlan {
    /// Unique per rollout; ties the journal lines together.
    pub id: String,
    pub target: NodeGroupTarget,
    /// The node-group stack.
    pub stack: StackRef,
    pub image: String,
    /// The group's image before the rollout, when known.
    pub from_image: Option<String>,
    /// Other parameters set by the same PATCH, as JSON text (`"-1"`, `"\"x\""`).
    pub extra_parameters: ParameterValues,
    pub options: RolloutOptions,
    /// Member names per batch, in release order.
    pub batches: Vec<Vec<String>>,
    pub created_at: DateTime<Utc>,
    /// The group stack's newest event before the rollout's PATCH (id and Heat's time):
    /// events up to it belong to earlier actions. Heat's clock, not ours, decides.
    #[serde(default)]
    pub since_event: Option<String>,
    #[serde(default)]
    pub since_time: Option<DateTime<Utc>>,
    /// A group of an operator's own template (issue 11): the group's resource name in
    /// `stack` (`kube_minions`), whose members are held on hooks and released; the update
    /// sets only `extra_parameters` (`image` is then a label of them, not a parameter).
    /// `None`: caldera's own node-group stack, its `nodes` group and `image` parameter.
    #[serde(default)]
    pub group: Option<String>,
    /// The stack's tags as the rollout's PATCH sets them: the stack's own, with this
    /// rollout's marker ([`marker_tag`]) in place of any earlier one. `None` before the
    /// start has read the stack (and in plans from before markers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_tags: Option<Vec<String>>,
    /// Where the rollout was started, when the plan was read back from Heat's marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_on: Option<String>,
    /// What the stack's environment declared at the members' hook path before the
    /// rollout's PATCH (read by the start): the start adds its hook beside it, and the end
    /// puts it back ([`RolloutPlan::unhook_update`]). `None` in a plan not started yet, and
    /// in plans from before it was kept (their end removes the hook key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks_before: Option<PriorEntry>,
    /// A group of an operator's stack: Heat's preview of the update and its blast radius
    /// as planned ([`crate::drivers::any_group::GroupUpdatePlan::lines`]), shown with the
    /// plan so the operator confirms what Heat said, not just the batches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preview: Vec<String>,
    /// Groups outside the target that the update changes too and caldera holds as well
    /// (`--also GROUP`): hooked by the same PATCH, their members released one at a time,
    /// each its own batch, before the target's ([`RolloutPlan::hold_also`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<HeldGroup>,
    /// The held group (`also`) a reader found this plan by, when not the target: a Magnum
    /// node group whose members the rollout holds beside its target (`CLUSTER/default-master`
    /// is `kube_masters`), so what that reader knows of its members (servers, addresses) is
    /// put on the rows `kube_masters/N`, not on the target's `N`. How the plan was found, not
    /// what it does: never journaled.
    #[serde(skip)]
    pub viewed_group: Option<String>,
}

/// A rollout member's row in the nodes pane of one group: `viewed` is a group held beside the
/// target, or None for the target itself. A rollout names a held group's members
/// `PATH/NAME` (`kube_masters/0`) and the target's `NAME`, while each group's pane names its
/// own members `NAME`: so the row is the member's name when its path is the viewed group,
/// and None when the member is another group's (master 0 is not minion 0's row).
pub fn row_in_viewed<'a>(member: &'a str, viewed: Option<&str>) -> Option<&'a str> {
    let (path, name) = split_member_key(member);
    (path == viewed).then_some(name)
}

/// A group outside a rollout's target held by the rollout too (`--also`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldGroup {
    /// Its resource path in the stack (`kube_masters`).
    pub path: String,
    /// What the environment declared at its members' hook path before the start (see
    /// [`RolloutPlan::hooks_before`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks_before: Option<PriorEntry>,
    /// Its nested stack's newest event before the rollout's PATCH (see
    /// [`RolloutPlan::since_event`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_event: Option<String>,
    /// Released after the target's members (`--also-after`), not before (`--also`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after: bool,
}

impl HeldGroup {
    /// When caldera releases its members, against the target's: `before` or `after`.
    pub fn when(&self) -> &'static str {
        Self::SIDES[usize::from(self.after)]
    }

    /// The words of [`Self::when`], by `after` (false, true).
    const SIDES: [&'static str; 2] = ["before", "after"];

    /// Whether `word` (as [`Self::when`] says it) releases after the target; `None` for
    /// any other word.
    pub fn after_from(word: &str) -> Option<bool> {
        Self::SIDES.iter().position(|w| *w == word).map(|i| i == 1)
    }
}

/// `b` merged into `a`, key by key (two environment PATCHes in one: Heat merges the same way).
fn merge_json(a: &mut serde_json::Value, b: serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(slot) => merge_json(slot, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, b) => *slot = b,
    }
}

/// The tag a rollout's PATCH puts on the stack: `caldera-rollout=<id>@<host>`. Heat is the
/// one thing every machine's caldera sees, so the marker says whose rollout the update in
/// progress is: a start on another machine that raced ours and won has its marker there,
/// and a `rollout status` anywhere names the rollout by its own id.
pub const MARKER_PREFIX: &str = "caldera-rollout=";
/// Heat keeps tags of at most 80 characters.
const TAG_MAX: usize = 80;

/// This rollout's marker tag (the host cut so that the tag fits Heat's 80 characters;
/// a comma would split it in Heat's tag list, so none is kept).
pub fn marker_tag(id: &str, host: &str) -> String {
    let head = format!("{MARKER_PREFIX}{id}@");
    let room = TAG_MAX.saturating_sub(head.chars().count());
    let host: String = host.chars().filter(|c| *c != ',').take(room).collect();
    format!("{head}{host}")
}

/// The rollout id and host a stack's tags name, when one of them is a marker.
pub fn marker_in(tags: &[String]) -> Option<(String, String)> {
    tags.iter().find_map(|t| {
        let rest = t.strip_prefix(MARKER_PREFIX)?;
        let (id, host) = rest.split_once('@').unwrap_or((rest, ""));
        Some((id.to_string(), host.to_string()))
    })
}

/// The tag beside the marker for each group a rollout holds besides its target (`--also`):
/// `caldera-also=before:kube_masters` (`after:` for `--also-after`). The stack's environment
/// shows hooks but not whose they are (an operator's own `pre-update` hook on a group looks
/// the same), so the group a rollout holds is said here, by the PATCH that sets its hooks: a
/// caldera on another machine taking the rollout over from Heat alone
/// ([`held_in`]) then releases those members too, instead of leaving them held forever.
pub const HELD_PREFIX: &str = "caldera-also=";

/// The held-group tags of `also`, or why one cannot be a tag (Heat keeps 80 characters, and
/// a comma would split it): then the rollout cannot be taken over from Heat, so it does not
/// start.
pub fn held_tags(also: &[HeldGroup]) -> Result<Vec<String>, String> {
    also.iter()
        .map(|h| {
            let tag = format!("{HELD_PREFIX}{}:{}", h.when(), h.path);
            let (len, path_len) = (tag.chars().count(), h.path.chars().count());
            if len > TAG_MAX || tag.contains(',') {
                return Err(format!(
                    "the held group's path {:?} does not fit the Heat tag that names it to a \
                     caldera taking the rollout over (at most {} characters, no comma)",
                    h.path,
                    TAG_MAX.saturating_sub(len - path_len),
                ));
            }
            Ok(tag)
        })
        .collect()
}

/// The tags a rollout's start puts beside its marker: its held groups' ([`held_tags`]), its
/// options' ([`OPTIONS_PREFIX`]) and what its hook paths held before ([`before_tags`]), or
/// why one cannot be a tag.
pub fn rollout_tags(plan: &RolloutPlan) -> Result<Vec<String>, String> {
    let mut tags = held_tags(&plan.also)?;
    tags.push(plan.options.tag());
    tags.extend(before_tags(plan));
    tags.extend(sets_tags(plan));
    Ok(tags)
}

/// The tag beside the marker for each parameter a group's rollout sets:
/// `caldera-sets=minion_image`. Heat shows the stack's parameters as the rollout's PATCH
/// left them, but not which of them the rollout changed: a caldera on another machine
/// taking the rollout over from Heat alone reads the keys here and their values from Heat,
/// and names the rollout by what it sets (was: "an update started elsewhere", and the
/// command offered to carry it on set nothing).
pub const SETS_PREFIX: &str = "caldera-sets=";

/// The most parameters a take-over reads from [`SETS_PREFIX`] tags (they come from Heat:
/// anyone may have written them).
const SETS_MAX: usize = 32;

/// The [`SETS_PREFIX`] tags of a group's rollout, one per key that fits a tag (a key too
/// long for Heat's 80 characters has none: its take-over names the others). Caldera's own
/// node groups set their `image` parameter, which a take-over reads without a tag.
pub fn sets_tags(plan: &RolloutPlan) -> Vec<String> {
    if plan.group.is_none() {
        return Vec::new();
    }
    plan.extra_parameters
        .keys()
        .map(|k| format!("{SETS_PREFIX}{k}"))
        .filter(|t| t.chars().count() <= TAG_MAX && !t.contains(','))
        .collect()
}

/// What a group's rollout sets, as its [`SETS_PREFIX`] tags name the keys and Heat's stack
/// parameters give their values (as Heat shows them: text). A key the stack has no
/// parameter of, whose value Heat hides (`******`, a `hidden` parameter), or whose value is
/// longer than 255 characters, is left out:
/// a value read back is only ever what the update already set, never a guess.
pub fn sets_in(tags: &[String], parameters: &BTreeMap<String, String>) -> ParameterValues {
    tags.iter()
        .filter_map(|t| t.strip_prefix(SETS_PREFIX))
        .take(SETS_MAX)
        .filter_map(|k| {
            let value = parameters
                .get(k)
                .filter(|v| v.as_str() != HIDDEN_VALUE && v.chars().count() <= SET_VALUE_MAX)?;
            Some((
                k.to_string(),
                crate::parameter_value::ParameterValue::text(value.clone()),
            ))
        })
        .collect()
}

/// How Heat shows a `hidden` parameter's value.
const HIDDEN_VALUE: &str = "******";

/// The longest value a take-over names a rollout by (a parameter may hold a whole file):
/// a longer one is left out of its name, as a hidden one is.
const SET_VALUE_MAX: usize = 255;

/// The tag beside the marker for each hook path a rollout sets, saying what the stack's
/// environment declared there before its start: `caldera-before=:a1` for its target's
/// members (an empty path), `caldera-before=kube_masters:pd` for a group it holds beside
/// them. The end puts that back (an operator's own `pre-delete` on the masters stays); a
/// caldera on another machine taking the rollout over from Heat alone cannot tell the
/// operator's hooks from the rollout's in the environment, so without it its end would take
/// them out too. The text after the path's `:` is [`PriorEntry::code`].
pub const BEFORE_PREFIX: &str = "caldera-before=";

/// The [`BEFORE_PREFIX`] tags of `plan`'s hook paths whose prior state is known and fits a
/// tag (a path too long for Heat's 80 characters, or a hook Heat would not have taken, has
/// none: a take-over then restores no hook there, as before the tag).
pub fn before_tags(plan: &RolloutPlan) -> Vec<String> {
    plan.hook_paths()
        .filter_map(|(path, prior)| {
            let tag = format!("{BEFORE_PREFIX}{path}:{}", prior?.code()?);
            (tag.chars().count() <= TAG_MAX && !tag.contains(',')).then_some(tag)
        })
        .collect()
}

/// What each hook path held before the rollout, as its [`BEFORE_PREFIX`] tags say: the
/// path (empty for the target's members) and its prior entry. A tag that does not read
/// whole is left out.
pub fn befores_in(tags: &[String]) -> Vec<(String, PriorEntry)> {
    tags.iter()
        .filter_map(|t| {
            let (path, code) = t.strip_prefix(BEFORE_PREFIX)?.rsplit_once(':')?;
            Some((path.to_string(), PriorEntry::from_code(code)?))
        })
        .collect()
}

/// The groups a rollout holds besides its target, as its tags say ([`HELD_PREFIX`]): each
/// group's path and whether it is released after the target.
pub fn held_in(tags: &[String]) -> Vec<(String, bool)> {
    tags.iter()
        .filter_map(|t| {
            let (when, path) = t.strip_prefix(HELD_PREFIX)?.split_once(':')?;
            let after = HeldGroup::after_from(when)?;
            (!path.is_empty()).then(|| (path.to_string(), after))
        })
        .collect()
}

/// Whether a tag is one a rollout puts on the stack (its marker, its held groups, its
/// options, what its hook paths held before, the keys it sets).
fn is_rollout_tag(tag: &str) -> bool {
    [
        MARKER_PREFIX,
        HELD_PREFIX,
        OPTIONS_PREFIX,
        BEFORE_PREFIX,
        SETS_PREFIX,
    ]
    .iter()
    .any(|p| tag.starts_with(p))
}

/// `tags` with `marker` and `held` ([`held_tags`]) in place of any earlier rollout's.
pub fn with_marker(tags: &[String], marker: &str, held: &[String]) -> Vec<String> {
    let mut out: Vec<String> = tags
        .iter()
        .filter(|t| !is_rollout_tag(t))
        .cloned()
        .collect();
    out.push(marker.to_string());
    out.extend(held.iter().cloned());
    out
}

/// The tags the end's PATCH gives the stack back: `tags` (the stack's, as read at the end)
/// without rollout `id`'s marker and held-group tags. A PATCH's `tags` replace the stack's
/// (Heat 27 keeps them when a PATCH has none), so the marker goes out with the same PATCH
/// that takes the hooks out. `None` (the PATCH keeps the stack's tags as they are) when the
/// marker is not ours. Heat 27 cannot PATCH a stack back to no tags (measured: `tags: ""`
/// stores one empty tag), so where the rollout's tags are the stack's only ones the marker
/// alone stays (`None` when it is all there is): it names the last rollout and is harmless,
/// read only while Heat runs an update with our hooks, and the next start replaces it.
pub fn tags_without_marker(tags: &[String], id: &str) -> Option<Vec<String>> {
    let (marked, _) = marker_in(tags)?;
    if marked != id {
        return None;
    }
    let others: Vec<String> = tags
        .iter()
        .filter(|t| !is_rollout_tag(t))
        .cloned()
        .collect();
    if !others.is_empty() {
        return Some(others);
    }
    let marker: Vec<String> = tags
        .iter()
        .filter(|t| t.starts_with(MARKER_PREFIX))
        .cloned()
        .collect();
    (marker.len() < tags.len()).then_some(marker)
}

/// Splits members (in order) into canary batches of one, then batches of `batch_size`.
pub fn make_batches(members: &[String], options: &RolloutOptions) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let canary = options.canary.min(members.len());
    for m in &members[..canary] {
        out.push(vec![m.clone()]);
    }
    for chunk in members[canary..].chunks(options.batch_size.max(1)) {
        out.push(chunk.to_vec());
    }
    out
}

/// The Heat hook every rollout sets on the members and clears one by one.
pub const ROLLOUT_HOOK: &str = "pre-update";

/// `{"resource_registry": {"resources": {"nodes": {"*": {"hooks": ["pre-update"]}}}}}`:
/// every member stops before its update until we clear its hook (form measured on Heat 27).
pub fn hooks_environment() -> serde_json::Value {
    hooks_environment_for(GROUP_RESOURCE)
}

/// The same breakpoints on the members of the group at resource path `group` of the updated
/// stack (`kube_minions`, or `roles/Compute` inside a nested stack).
pub fn hooks_environment_for(group: &str) -> serde_json::Value {
    registry_for_members(group, serde_json::json!({"hooks": [ROLLOUT_HOOK]}))
}

/// The environment's keys of the hook entry of every member of the group at path `group`
/// (`roles/Compute` -> `["roles", "Compute", "*"]`).
pub fn member_hook_keys(group: &str) -> Vec<&str> {
    let mut keys: Vec<&str> = group.split('/').filter(|s| !s.is_empty()).collect();
    keys.push("*");
    keys
}

/// `{"resource_registry": {"resources": {A: {B: {"*": entry}}}}}` for the members of the group
/// at path `A/B`: Heat's environment names a nested stack's resources by nesting maps under
/// the resource that owns the nested stack.
pub fn registry_for_members(group: &str, entry: serde_json::Value) -> serde_json::Value {
    crate::api::heat::hooks_env::registry_patch(&member_hook_keys(group), entry)
}

/// A group rollout's name, its values as the operator wrote them (a string's text without
/// its quotes): `minion_image=fcos-40`.
pub fn values_label(values: &ParameterValues) -> String {
    values
        .iter()
        .map(|(k, v)| format!("{k}={}", v.display_text()))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn new_rollout_id() -> String {
    let now = Utc::now();
    let n: u32 = rand::random();
    format!("r{}-{:08x}", now.format("%Y%m%dT%H%M%S"), n)
}

impl RolloutPlan {
    pub fn new(
        target: NodeGroupTarget,
        stack: StackRef,
        image: &str,
        from_image: Option<String>,
        members: &[String],
        options: RolloutOptions,
        extra_parameters: ParameterValues,
    ) -> RolloutPlan {
        let mut ordered = members.to_vec();
        ordered.sort_by(|a, b| member_order(a, b));
        RolloutPlan {
            id: new_rollout_id(),
            batches: make_batches(&ordered, &options),
            target,
            stack,
            image: image.to_string(),
            from_image,
            extra_parameters,
            options,
            created_at: Utc::now(),
            since_event: None,
            since_time: None,
            group: None,
            stack_tags: None,
            started_on: None,
            hooks_before: None,
            preview: Vec::new(),
            also: Vec::new(),
            viewed_group: None,
        }
    }

    /// A rollout of the group `group` of an operator's stack, setting `set` (JSON text
    /// values): no image parameter, hooks on that group's members.
    pub fn for_group(
        target: NodeGroupTarget,
        stack: StackRef,
        group: &str,
        members: &[String],
        options: RolloutOptions,
        set: ParameterValues,
    ) -> RolloutPlan {
        let label = values_label(&set);
        let mut plan = RolloutPlan::new(target, stack, &label, None, members, options, set);
        plan.group = Some(group.to_string());
        plan
    }

    /// The values the rollout's update sets from now on (a resume's overrides over the
    /// start's): a group's rollout is named by them.
    pub fn set_values(&mut self, mut values: ParameterValues) {
        match self.group {
            Some(_) => self.image = values_label(&values),
            // caldera's own node-group stack: its image is the `image` parameter, which
            // the plan keeps apart (an `image` among the others would be sent, then
            // overwritten by the plan's own).
            None => {
                if let Some(image) = values.remove("image") {
                    self.image = image.display_text();
                }
            }
        }
        self.extra_parameters = values;
    }

    /// The resource name of the group whose members the rollout releases.
    pub fn group_resource(&self) -> &str {
        self.group.as_deref().unwrap_or(GROUP_RESOURCE)
    }

    /// The rollout's progress as the node group this plan was found by shows it: its own
    /// members alone, named as its rows are, counted alone (a held group's PROGRESS column
    /// says `new 2/3` of the masters, not `new 2/7` of the whole rollout); the rollout's
    /// state, batch and ETA as they are. A rollout holding no group beside its target is its
    /// target's whole, and so is a progress that names no members (counts alone).
    pub fn progress_as_viewed(
        &self,
        progress: &crate::progress::Progress,
    ) -> crate::progress::Progress {
        if self.also.is_empty() || progress.members.is_empty() {
            return progress.clone();
        }
        progress.projected(|member| self.row_of(member))
    }

    /// A member's row in the nodes pane of the group this plan was found by
    /// ([`Self::viewed_group`], or the target): see [`row_in_viewed`].
    pub fn row_of<'a>(&self, member: &'a str) -> Option<&'a str> {
        row_in_viewed(member, self.viewed_group.as_deref())
    }

    /// The machine the rollout was started on: Heat's marker as read back (another
    /// machine's rollout, [`Self::started_on`]), else the marker its start set in the stack's
    /// tags; none in plans from before markers.
    pub fn started_on_host(&self) -> Option<String> {
        self.started_on
            .clone()
            .or_else(|| {
                self.stack_tags
                    .as_deref()
                    .and_then(marker_in)
                    .map(|(_, host)| host)
            })
            .filter(|h| !h.is_empty())
    }

    /// A member's name in the journal (an entry's target): `STACK/GROUP/3` for the target's
    /// member `3`, `STACK/kube_masters/0` for a held group's `kube_masters/0` (its path in the
    /// stack, as Heat names it: not under the target's group, which does not hold it).
    pub fn member_label(&self, member: &str) -> String {
        match split_member_key(member) {
            (Some(_), _) => format!("{}/{member}", self.target.cluster),
            (None, _) => format!("{}/{member}", self.target.label()),
        }
    }

    /// The member key a journal target names ([`Self::member_label`]): what follows the
    /// target's label (`STACK/GROUP/3` -> `3`; journals before the held form also wrote
    /// `STACK/GROUP/kube_masters/0`), else what follows the stack's (`STACK/kube_masters/0`
    /// -> `kube_masters/0`), else the last name.
    pub fn member_of_label(&self, label: &str) -> String {
        let after = |prefix: &str| {
            label
                .strip_prefix(prefix)
                .and_then(|r| r.strip_prefix('/'))
                .filter(|r| !r.is_empty())
                .map(str::to_string)
        };
        after(&self.target.label())
            .or_else(|| after(&self.target.cluster))
            .unwrap_or_else(|| label.rsplit('/').next().unwrap_or("").to_string())
    }

    /// The `image` parameter members are compared with, for caldera's own node groups.
    pub fn image_parameter(&self) -> Option<&str> {
        match self.group {
            None => Some(&self.image),
            Some(_) => None,
        }
    }

    /// The command that carries the rollout on to the target (after an abort, or where
    /// it ended early): the same target, what the update sets and the same options.
    pub fn forward_command(&self) -> CommandLine {
        let line = CommandLine::caldera(&["rollout", "start"]).arg(self.target.label());
        let line = match &self.group {
            None => line.flag("image", self.image.clone()),
            Some(_) => self
                .extra_parameters
                .iter()
                .fold(line, |line, (k, v)| line.set(k, v)),
        };
        self.options.with_flags(self.also_flags(line))
    }

    /// `line` with `--also PATH` for each group the rollout holds besides its target: the
    /// same change reaches them again.
    fn also_flags(&self, line: CommandLine) -> CommandLine {
        self.also.iter().fold(line, |line, h| match h.after {
            true => line.flag("also-after", h.path.clone()),
            false => line.flag("also", h.path.clone()),
        })
    }

    /// The command that takes the members back (`from_image`, else a placeholder the
    /// operator fills in: the group's previous parameters are not kept).
    pub fn back_command(&self) -> CommandLine {
        let line = CommandLine::caldera(&["rollout", "start"]).arg(self.target.label());
        let line = match &self.group {
            None => line.flag(
                "image",
                self.from_image.as_deref().unwrap_or("<previous image>"),
            ),
            Some(_) => self
                .extra_parameters
                .keys()
                .fold(line, |line, k| line.set_placeholder(k, "<previous value>")),
        };
        self.options.with_flags(self.also_flags(line))
    }

    /// Every hook path the rollout sets, with what it held before the start: the target's
    /// members first, then each held group's (`--also`).
    pub fn hook_entries(&self) -> Vec<(Vec<&str>, Option<&PriorEntry>)> {
        self.hook_paths()
            .map(|(path, prior)| match path {
                "" => (self.hook_keys(), prior),
                held => (member_hook_keys(held), prior),
            })
            .collect()
    }

    /// Every hook path the rollout sets, named as its tags name it (empty for the target's
    /// members, a held group's path), with what it held before the start: the target's
    /// first, then each held group's (`--also`).
    pub fn hook_paths(&self) -> impl Iterator<Item = (&str, Option<&PriorEntry>)> {
        let held = self
            .also
            .iter()
            .map(|h| (h.path.as_str(), h.hooks_before.as_ref()));
        std::iter::once(("", self.hooks_before.as_ref())).chain(held)
    }

    /// Breakpoints on every member of the rollout's group and of the groups it holds too,
    /// beside any hook the environment already declared there (an operator's own stays).
    pub fn hooks_environment(&self) -> serde_json::Value {
        let mut env = serde_json::json!({});
        for (keys, prior) in self.hook_entries() {
            let one = match prior {
                Some(prior) => prior.adding(&keys, ROLLOUT_HOOK),
                None => crate::api::heat::hooks_env::registry_patch(
                    &keys,
                    serde_json::json!({"hooks": [ROLLOUT_HOOK]}),
                ),
            };
            merge_json(&mut env, one);
        }
        env
    }

    /// The environment's keys of the members' hook entry: the group's path, then `*`.
    pub fn hook_keys(&self) -> Vec<&str> {
        member_hook_keys(self.group_resource())
    }

    /// The PATCH that takes the rollout's hooks out of the stack's environment again, and
    /// nothing else: each entry of [`RolloutPlan::hook_entries`] as it was before the start
    /// (Heat merges a PATCH's environment into the stored one, so only those paths move).
    pub fn unhook_update(&self) -> crate::api::heat::StackUpdate {
        let mut env = serde_json::json!({});
        for (keys, prior) in self.hook_entries() {
            let prior = prior.cloned().unwrap_or(PriorEntry::Present(Vec::new()));
            merge_json(&mut env, prior.restoring(&keys));
        }
        crate::api::heat::StackUpdate {
            environment: Some(env),
            existing: true,
            ..Default::default()
        }
    }

    /// Holds the members of the group at `path` too (`--also`): hooked by the same PATCH and
    /// released by caldera one at a time, each its own batch (a health gate between two),
    /// before the target's batches (after them with `after`, `--also-after`). A control
    /// plane (`kube_masters`) never has two members updating at once, and is done before
    /// the workers.
    pub fn hold_also(&mut self, path: &str, members: &[String], after: bool) {
        let mut ordered = members.to_vec();
        ordered.sort_by(|a, b| member_order(a, b));
        let held: Vec<Vec<String>> = ordered.iter().map(|m| vec![member_key(path, m)]).collect();
        let at = match after {
            true => self.batches.len(),
            false => self
                .batches
                .iter()
                .position(|b| b.iter().all(|m| split_member_key(m).0.is_none()))
                .unwrap_or(self.batches.len()),
        };
        self.batches.splice(at..at, held);
        self.also.push(HeldGroup {
            path: path.to_string(),
            hooks_before: None,
            since_event: None,
            after,
        });
    }

    /// The plan's word on each group it holds, group by group: the held groups' members,
    /// how and when caldera releases them, then the target's.
    pub fn held_lines(&self) -> Vec<String> {
        if self.also.is_empty() {
            return Vec::new();
        }
        let target = self.group_resource();
        let in_group = |path: Option<&str>| -> Vec<&str> {
            self.members()
                .filter(|m| split_member_key(m).0 == path)
                .map(|m| split_member_key(m).1)
                .collect()
        };
        let mut out: Vec<String> = self
            .also
            .iter()
            .map(|h| {
                let names = in_group(Some(h.path.as_str()));
                format!(
                    "  group {} ({} member(s): {}): held by caldera, one at a time, {} {target}",
                    h.path,
                    names.len(),
                    names.join(", "),
                    h.when()
                )
            })
            .collect();
        let names = in_group(None);
        // The target against the held groups: after those released before it, before those
        // released after it.
        let relative: Vec<String> = [(false, "after"), (true, "before")]
            .into_iter()
            .filter_map(|(after, word)| {
                let paths: Vec<&str> = self
                    .also
                    .iter()
                    .filter(|h| h.after == after)
                    .map(|h| h.path.as_str())
                    .collect();
                (!paths.is_empty()).then(|| format!("{word} {}", paths.join(", ")))
            })
            .collect();
        out.push(format!(
            "  group {target} ({} member(s): {}): held by caldera, in the batches below, {}",
            names.len(),
            names.join(", "),
            relative.join(", ")
        ));
        out
    }

    /// The groups whose members the rollout hooks: its target, then each it holds too.
    pub fn hooked_groups(&self) -> Vec<&str> {
        std::iter::once(self.group_resource())
            .chain(self.also.iter().map(|h| h.path.as_str()))
            .collect()
    }

    /// The group path a member key is in (the target's for a bare name).
    pub fn group_of<'a>(&'a self, key: &'a str) -> &'a str {
        split_member_key(key).0.unwrap_or(self.group_resource())
    }

    pub fn members(&self) -> impl Iterator<Item = &String> {
        self.batches.iter().flatten()
    }

    /// The batch a member is in (0-based).
    pub fn batch_of(&self, member: &str) -> Option<usize> {
        self.batches
            .iter()
            .position(|b| b.iter().any(|m| m == member))
    }

    /// The parameters of the starting PATCH.
    pub fn parameters(&self) -> BTreeMap<String, serde_json::Value> {
        let mut p: BTreeMap<String, serde_json::Value> = self
            .extra_parameters
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json()))
            .collect();
        if let Some(image) = self.image_parameter() {
            p.insert("image".into(), serde_json::json!(image));
        }
        p
    }

    pub fn start_update(&self) -> crate::api::heat::StackUpdate {
        crate::api::heat::StackUpdate {
            parameters: self.parameters(),
            environment: Some(self.hooks_environment()),
            tags: self.stack_tags.clone(),
            existing: true,
            ..Default::default()
        }
    }

    /// The API calls, in order: one PATCH, then one signal per member (on the group's
    /// nested stack, named at run time).
    pub fn calls(&self) -> Vec<ApiCall> {
        let mut calls = vec![ApiCall::new(
            "PATCH",
            stack_path(&self.stack),
            crate::drivers::layout::update_body_text(&self.start_update()),
        )];
        for m in self.members() {
            calls.push(crate::drivers::layout::clear_hook_call(
                &format!("/stacks/<{} nested stack>", self.group_of(m)),
                split_member_key(m).1,
                ROLLOUT_HOOK,
            ));
        }
        calls
    }

    pub fn lines(&self) -> Vec<String> {
        let o = &self.options;
        let head = match (&self.group, &self.from_image) {
            (None, Some(from)) => format!(
                "rollout {} of {}: image {from} -> {}",
                self.id,
                self.target.label(),
                self.image
            ),
            // A plan read back from Heat (a take-over) knows the image it sets, not the one
            // before (was: `image ? -> …`).
            (None, None) => format!(
                "rollout {} of {}: image to {}",
                self.id,
                self.target.label(),
                self.image
            ),
            (Some(g), _) => format!(
                "rollout {} of {} (group {g} of stack {}): set {}",
                self.id,
                self.target.label(),
                self.stack.name,
                self.image
            ),
        };
        // What Heat said of the update comes before how caldera carries it out.
        let mut out = vec![head];
        out.extend(self.preview.iter().cloned());
        out.push(format!(
                "  {} nodes in {} batches (canary {}, then {} at a time); gate {:.1}s after each batch; node timeout {}s; {} on failure",
                self.members().count(),
                self.batches.len(),
                o.canary,
                o.batch_size.max(1),
                o.gate_wait_ms as f64 / 1000.0,
                o.node_timeout_ms / 1000,
                if o.pause_on_failure { "pause" } else { "stop" }
        ));
        out.extend(self.held_lines());
        for (i, b) in self.batches.iter().enumerate() {
            out.push(format!("  batch {:>3}: {}", i + 1, b.join(", ")));
        }
        out.push("  API calls:".into());
        let calls = self.calls();
        let shown = calls.len().min(4);
        let after_patch = out.len() + 1;
        out.extend(calls[..shown].iter().map(|c| format!("    {c}")));
        if self.stack_tags.is_none() {
            // The start reads the stack's tags just before its PATCH: the plan shown before
            // then says what the PATCH adds to them (the journal's plan has them all).
            // What a hook path held before is read by the start too: shown as found.
            let unread = self
                .hook_paths()
                .filter(|(_, prior)| prior.is_none())
                .map(|(path, _)| format!("{BEFORE_PREFIX}{path}:<as found>"));
            let ours: Vec<String> =
                std::iter::once(format!("{MARKER_PREFIX}{}@<this host>", self.id))
                    .chain(rollout_tags(self).unwrap_or_default())
                    .chain(unread)
                    .collect();
            out.insert(
                after_patch,
                format!("    (its tags: the stack's own, with {})", ours.join(", ")),
            );
        }
        if calls.len() > shown {
            out.push(format!(
                "    ... {} more signals, one per member",
                calls.len() - shown
            ));
        }
        // The end is an update too: Heat hands it to every member, which finds nothing to
        // change (no parameter moves), so an operator watching events is not surprised.
        out.push(
            "  at the end: one more PATCH puts the environment's hooks back as they were (and \
             the stack's tags without the rollout's, but for its marker where it is the only \
             tag: Heat cannot keep none); Heat passes it to every member at once, and none \
             changes"
                .into(),
        );
        out
    }
}

/// A plan of caldera's own node group `c1/w` (stack `c1-w`, id `s1`) to `image`, for unit
/// tests of what reads plans.
#[cfg(test)]
pub(crate) fn sample_plan(image: &str, members: &[&str]) -> RolloutPlan {
    let members: Vec<String> = members.iter().map(|m| m.to_string()).collect();
    RolloutPlan::new(
        NodeGroupTarget {
            cluster: "c1".into(),
            nodegroup: "w".into(),
            driver: crate::model::DriverKind::HeatNative,
            stack: None,
            cluster_id: None,
            limits: Default::default(),
        },
        StackRef {
            name: "c1-w".into(),
            id: "s1".into(),
        },
        image,
        None,
        &members,
        RolloutOptions::default(),
        BTreeMap::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parameter_value::ParameterValue;

    #[test]
    fn the_marker_replaces_an_earlier_one_and_fits_heats_tags() {
        let tags = vec![
            "caldera-cluster=c1".to_string(),
            "caldera-rollout=r1@old".to_string(),
        ];
        let m = marker_tag("r20261125T101010-0a0b0c0d", "jump-1");
        assert_eq!(m, "caldera-rollout=r20261125T101010-0a0b0c0d@jump-1");
        let new = with_marker(&tags, &m, &[]);
        assert_eq!(new, vec!["caldera-cluster=c1".to_string(), m.clone()]);
        assert_eq!(
            marker_in(&new),
            Some(("r20261125T101010-0a0b0c0d".into(), "jump-1".into()))
        );
        assert_eq!(marker_in(&tags[..1]), None);
        let long = marker_tag("r20261125T101010-0a0b0c0d", &"h,".repeat(100));
        assert_eq!(long.chars().count(), TAG_MAX);
        assert!(!long.contains(','), "{long}");
    }

    /// The end gives the stack its own tags back, without this rollout's marker; a marker
    /// of another rollout, or one that is the only tag, is left as it is.
    #[test]
    fn the_end_takes_its_marker_out_of_the_stacks_tags() {
        let tags = vec!["caldera-cluster=c1".to_string(), marker_tag("r1", "h")];
        assert_eq!(
            tags_without_marker(&tags, "r1"),
            Some(vec!["caldera-cluster=c1".to_string()])
        );
        assert_eq!(tags_without_marker(&tags, "r2"), None);
        assert_eq!(tags_without_marker(&tags[1..], "r1"), None);
        assert_eq!(tags_without_marker(&tags[..1], "r1"), None);
    }

    /// The groups a rollout holds besides its target go to Heat as tags beside its marker,
    /// are read back in order with their side of the target, replace an earlier rollout's,
    /// and leave with the marker; a path no tag can carry is refused.
    #[test]
    fn held_groups_are_tagged_read_back_and_taken_out_with_the_marker() {
        let held = |path: &str, after: bool| HeldGroup {
            path: path.into(),
            hooks_before: None,
            since_event: None,
            after,
        };
        let also = [held("kube_masters", false), held("roles/etcd", true)];
        let tags = held_tags(&also).expect("short paths fit");
        assert_eq!(
            tags,
            [
                "caldera-also=before:kube_masters",
                "caldera-also=after:roles/etcd"
            ]
        );
        let earlier = vec![
            "team=a".to_string(),
            marker_tag("r0", "h"),
            "caldera-also=before:old_group".to_string(),
        ];
        let now = with_marker(&earlier, &marker_tag("r1", "h"), &tags);
        assert_eq!(
            held_in(&now),
            [
                ("kube_masters".to_string(), false),
                ("roles/etcd".to_string(), true)
            ]
        );
        assert_eq!(marker_in(&now).map(|(id, _)| id), Some("r1".to_string()));
        assert_eq!(
            tags_without_marker(&now, "r1"),
            Some(vec!["team=a".to_string()])
        );
        // No tag of the stack's own: Heat keeps at least one, so the marker alone stays.
        let only_ours = with_marker(&[], &marker_tag("r1", "h"), &tags);
        assert_eq!(
            tags_without_marker(&only_ours, "r1"),
            Some(vec![marker_tag("r1", "h")])
        );
        assert!(held_in(&["caldera-also=sideways:x".to_string()]).is_empty());
        let long = held_tags(&[held(&"g".repeat(61), true)]).expect("61 fit after `after:`");
        assert_eq!(long[0].chars().count(), TAG_MAX);
        for bad in [held(&"g".repeat(61), false), held("a,b", false)] {
            let e = held_tags(&[bad]).expect_err("refused");
            assert!(e.contains("does not fit") && e.contains("at most"), "{e}");
        }
    }

    /// What each hook path held before the start goes to Heat in a tag per path and comes
    /// back whole, for the target (an empty path) and a held group; a hostile one gives
    /// nothing, and one that cannot be said is not written (its path falls back to no hook).
    #[test]
    fn prior_hooks_round_trip_through_their_tags_and_a_hostile_one_gives_nothing() {
        let stack = StackRef {
            name: "c".into(),
            id: "c-id".into(),
        };
        let target = crate::drivers::any_group::group_target(&stack, "kube_minions");
        let mut plan = RolloutPlan::for_group(
            target,
            stack,
            "kube_minions",
            &["0".into()],
            RolloutOptions::default(),
            Default::default(),
        );
        plan.hold_also("kube_masters", &["0".into()], false);
        plan.hold_also(&"g".repeat(70), &["0".into()], false);
        plan.hooks_before = Some(PriorEntry::AbsentFrom(1));
        plan.also[0].hooks_before = Some(PriorEntry::Present(vec![
            "pre-delete".into(),
            "post-update".into(),
        ]));
        plan.also[1].hooks_before = Some(PriorEntry::Present(vec!["pre-update".into()]));
        let tags = before_tags(&plan);
        assert_eq!(
            tags,
            ["caldera-before=:a1", "caldera-before=kube_masters:pdU"],
            "the long path has no tag"
        );
        let mut all = vec!["mine".to_string()];
        all.extend(tags.iter().cloned());
        assert_eq!(
            befores_in(&all),
            [
                ("".to_string(), PriorEntry::AbsentFrom(1)),
                (
                    "kube_masters".to_string(),
                    PriorEntry::Present(vec!["pre-delete".into(), "post-update".into()])
                ),
            ]
        );
        // A hook Heat would not take has no letter: no tag for that path.
        plan.also[0].hooks_before = Some(PriorEntry::Present(vec!["pre-coffee".into()]));
        assert_eq!(before_tags(&plan), ["caldera-before=:a1"]);
        for bad in [
            "caldera-before=",
            "caldera-before=:",
            "caldera-before=:a",
            "caldera-before=:a17",
            "caldera-before=:a-1",
            "caldera-before=:px",
            "caldera-before=:puuuuuuu",
            "caldera-before=:q1",
        ] {
            assert!(befores_in(&[bad.to_string()]).is_empty(), "{bad}");
        }
        // The end takes them out with the marker's other tags.
        let end = tags_without_marker(&with_marker(&all, &marker_tag("r1", "h"), &tags), "r1");
        assert_eq!(end, Some(vec!["mine".to_string()]));
    }

    /// A group's rollout names the keys it sets in tags, and a take-over reads their values
    /// from Heat's parameters; a hidden value, a key the stack has no parameter of, a key
    /// too long for a tag, and more keys than the bound give nothing.
    #[test]
    fn the_keys_a_rollout_sets_round_trip_through_tags_with_heats_values() {
        let stack = StackRef {
            name: "twotier".into(),
            id: "t-id".into(),
        };
        let target = crate::drivers::any_group::group_target(&stack, "workers");
        let long = "k".repeat(80);
        let set: ParameterValues = [("image", "app-2.0"), ("secret", "s3"), (long.as_str(), "x")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), ParameterValue::text(v)))
            .collect();
        let plan = RolloutPlan::for_group(
            target,
            stack,
            "workers",
            &["0".into()],
            RolloutOptions::default(),
            set,
        );
        let tags = sets_tags(&plan);
        assert_eq!(tags, ["caldera-sets=image", "caldera-sets=secret"]);
        let heat: BTreeMap<String, String> = [("image", "app-2.0"), ("secret", "******")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut hostile = tags.clone();
        hostile.push("caldera-sets=nosuch".into());
        hostile.push("caldera-sets=file".into());
        let mut heat = heat;
        heat.insert("file".into(), "x".repeat(256));
        let read = sets_in(&hostile, &heat);
        assert_eq!(values_label(&read), "image=app-2.0");
        let flood: Vec<String> = (0..100).map(|i| format!("caldera-sets=p{i}")).collect();
        let many: BTreeMap<String, String> = (0..100)
            .map(|i| (format!("p{i}"), "v".to_string()))
            .collect();
        assert_eq!(sets_in(&flood, &many).len(), 32);
        // The end takes them out with the marker's other tags.
        let mine = ["mine".to_string()];
        let end = tags_without_marker(&with_marker(&mine, &marker_tag("r1", "h"), &tags), "r1");
        assert_eq!(end, Some(mine.to_vec()));
    }

    /// A held group's member is journaled under the stack, by its path there (Heat's name
    /// for it), not under the target's group; both forms, and the older one under the
    /// target, read back as the member's key.
    #[test]
    fn members_are_journaled_by_their_path_in_the_stack_and_read_back() {
        let stack = StackRef {
            name: "twotier".into(),
            id: "t-id".into(),
        };
        let target = crate::drivers::any_group::group_target(&stack, "workers");
        let mut plan = RolloutPlan::for_group(
            target,
            stack,
            "workers",
            &["0".into(), "1".into()],
            RolloutOptions::default(),
            Default::default(),
        );
        plan.hold_also("frontends", &["0".into()], false);
        assert_eq!(plan.member_label("1"), "twotier/workers/1");
        assert_eq!(plan.member_label("frontends/0"), "twotier/frontends/0");
        for (label, key) in [
            ("twotier/workers/1", "1"),
            ("twotier/frontends/0", "frontends/0"),
            ("twotier/workers/frontends/0", "frontends/0"),
            ("elsewhere/7", "7"),
        ] {
            assert_eq!(plan.member_of_label(label), key, "{label}");
        }
        let nested = crate::drivers::any_group::group_target(&plan.stack, "racks/1/nodes");
        plan.target = nested;
        assert_eq!(plan.member_of_label("twotier/racks/1/nodes/4"), "4");
        assert_eq!(
            plan.member_of_label("twotier/racks/0/nodes/4"),
            "racks/0/nodes/4"
        );
    }

    /// The options go to Heat in a tag and come back whole; a tag from Heat is hostile
    /// until bounded: out-of-range numbers are brought within the CLI's bounds, and a tag
    /// that does not read whole gives nothing.
    #[test]
    fn options_round_trip_through_their_tag_and_a_hostile_one_is_bounded() {
        let o = RolloutOptions {
            batch_size: 2,
            canary: 1,
            gate_wait_ms: 20_000,
            pause_on_failure: false,
            node_timeout_ms: 600_000,
        };
        let tag = o.tag();
        assert_eq!(tag, "caldera-options=b2:c1:g20000:t600000:s");
        assert!(tag.chars().count() <= TAG_MAX && !tag.contains(','));
        let tags = vec!["mine".to_string(), tag.clone()];
        assert_eq!(RolloutOptions::from_tags(&tags), Some(o.clone()));
        let biggest = RolloutOptions {
            batch_size: 100_000,
            canary: 100_000,
            gate_wait_ms: RolloutOptions::MAX_GATE_MS,
            pause_on_failure: true,
            node_timeout_ms: RolloutOptions::MAX_TIMEOUT_MS,
        };
        assert!(
            biggest.tag().chars().count() <= TAG_MAX,
            "{}",
            biggest.tag()
        );
        let wild = ["caldera-options=b0:c99999999999:g99999999999999:t0:p".to_string()];
        let bounded = RolloutOptions::from_tags(&wild).expect("reads whole");
        assert_eq!(
            (
                bounded.batch_size,
                bounded.canary,
                bounded.gate_wait_ms,
                bounded.node_timeout_ms
            ),
            (1, 100_000, 86_400_000, 1_000)
        );
        for bad in [
            "caldera-options=",
            "caldera-options=b2:c1:g1:t1000",
            "caldera-options=b2:c1:g1:t1000:p:x1",
            "caldera-options=b-1:c1:g1:t1000:p",
            "caldera-options=b2:c1:g1:t1000:pp",
            "caldera-options=bé:c1:g1:t1000:p",
        ] {
            assert_eq!(RolloutOptions::from_tags(&[bad.to_string()]), None, "{bad}");
        }
        // The end takes it out with the marker's other tags.
        let end = tags_without_marker(
            &with_marker(&["mine".into()], &marker_tag("r1", "h"), &[tag]),
            "r1",
        );
        assert_eq!(end, Some(vec!["mine".to_string()]));
    }

    #[test]
    fn canaries_then_batches() {
        let members: Vec<String> = (0..7).map(|i| i.to_string()).collect();
        let b = make_batches(
            &members,
            &RolloutOptions {
                batch_size: 2,
                canary: 1,
                ..Default::default()
            },
        );
        assert_eq!(
            b,
            vec![vec!["0"], vec!["1", "2"], vec!["3", "4"], vec!["5", "6"]]
        );
        let b = make_batches(
            &members[..2],
            &RolloutOptions {
                batch_size: 3,
                canary: 5,
                ..Default::default()
            },
        );
        assert_eq!(b, vec![vec!["0"], vec!["1"]]);
    }

    /// A command shown to carry a rollout on keeps its options; defaults are left out.
    #[test]
    fn the_forward_command_keeps_the_rollouts_options() {
        let options = RolloutOptions {
            batch_size: 5,
            canary: 2,
            gate_wait_ms: 1500,
            pause_on_failure: false,
            node_timeout_ms: 600_500,
        };
        let line = options.with_flags(CommandLine::caldera(&["rollout", "start"]).arg("c/w"));
        assert_eq!(
            line.to_string(),
            "caldera rollout start c/w --batch 5 --canary 2 --gate-secs 1.5 \
             --node-timeout-secs 601 --stop-on-failure"
        );
        let line = RolloutOptions::default().with_flags(CommandLine::caldera(&["x"]));
        assert_eq!(line.to_string(), "caldera x");
    }

    #[test]
    fn patch_carries_image_extra_parameters_and_hooks() {
        let target = NodeGroupTarget {
            cluster: "c".into(),
            nodegroup: "w".into(),
            driver: crate::model::DriverKind::HeatNative,
            stack: None,
            cluster_id: None,
            limits: Default::default(),
        };
        let stack = StackRef {
            name: "c-w".into(),
            id: "1".into(),
        };
        let mut extra = BTreeMap::new();
        extra.insert(
            "node_fail_index".to_string(),
            ParameterValue::json(3.into()),
        );
        let members: Vec<String> = ["10", "2", "1"].iter().map(|s| s.to_string()).collect();
        let plan = RolloutPlan::new(
            target,
            stack,
            "img-v2",
            Some("img-v1".into()),
            &members,
            RolloutOptions::default(),
            extra,
        );
        assert_eq!(plan.batches, vec![vec!["1"], vec!["2"], vec!["10"]]);
        let calls = plan.calls();
        assert_eq!(calls.len(), 4);
        assert_eq!(calls[0].method, "PATCH");
        let body: serde_json::Value = serde_json::from_str(&calls[0].body).unwrap();
        assert_eq!(body["parameters"]["image"], "img-v2");
        assert_eq!(body["parameters"]["node_fail_index"], 3);
        assert_eq!(
            body["environment"]["resource_registry"]["resources"]["nodes"]["*"]["hooks"][0],
            "pre-update"
        );
        assert!(plan.lines().iter().any(|l| l.contains("batch   3: 10")));
        assert!(
            plan.lines()[0].ends_with(": image img-v1 -> img-v2"),
            "{:?}",
            plan.lines()
        );
        // Read back from Heat, the image before is not known: said so, not `? ->`.
        let taken_over = RolloutPlan {
            from_image: None,
            ..plan.clone()
        };
        assert!(
            taken_over.lines()[0].ends_with(": image to img-v2"),
            "{:?}",
            taken_over.lines()
        );
    }

    #[test]
    fn a_group_of_an_operators_stack_sets_only_its_parameters() {
        let target = NodeGroupTarget {
            cluster: "mystack".into(),
            nodegroup: "kube_minions".into(),
            driver: crate::model::DriverKind::HeatNative,
            stack: None,
            cluster_id: None,
            limits: Default::default(),
        };
        let stack = StackRef {
            name: "mystack".into(),
            id: "1".into(),
        };
        let mut set = BTreeMap::new();
        set.insert("minion_image".to_string(), ParameterValue::text("fcos-40"));
        let members: Vec<String> = ["1", "0"].iter().map(|s| s.to_string()).collect();
        let plan = RolloutPlan::for_group(
            target,
            stack,
            "kube_minions",
            &members,
            RolloutOptions::default(),
            set,
        );
        assert_eq!(plan.batches, vec![vec!["0"], vec!["1"]]);
        let body: serde_json::Value = serde_json::from_str(&plan.calls()[0].body).unwrap();
        assert_eq!(
            body["parameters"],
            serde_json::json!({"minion_image": "fcos-40"})
        );
        assert_eq!(
            body["environment"]["resource_registry"]["resources"]["kube_minions"]["*"]["hooks"][0],
            "pre-update"
        );
        assert!(plan.calls()[1].path.contains("<kube_minions nested stack>"));
        assert_eq!(
            plan.forward_command().to_string(),
            "caldera rollout start mystack/kube_minions --set minion_image=fcos-40"
        );
        assert_eq!(
            plan.back_command().to_string(),
            "caldera rollout start mystack/kube_minions --set 'minion_image=<previous value>'"
        );
        assert!(plan.lines()[0].contains("group kube_minions of stack mystack"));
        // The journal's spec reads back (a restarted process reattaches with it).
        let back: RolloutPlan =
            serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert_eq!(back.group_resource(), "kube_minions");
        assert_eq!(back.image_parameter(), None);
    }

    /// `--also kube_masters`: the masters' members first, one batch each, keyed by their
    /// group; one PATCH hooks both groups beside what their entries held, and the end's
    /// PATCH puts both entries back; the plan names each group and the flag is carried on.
    #[test]
    fn a_held_group_goes_first_one_member_at_a_time_and_is_hooked_and_unhooked() {
        let stack = StackRef {
            name: "mystack".into(),
            id: "1".into(),
        };
        let target = crate::drivers::any_group::group_target(&stack, "kube_minions");
        let set = [("minion_image".to_string(), ParameterValue::text("fcos-40"))].into();
        let minions: Vec<String> = ["0", "1", "2"].iter().map(|s| s.to_string()).collect();
        let masters: Vec<String> = ["10", "2", "1"].iter().map(|s| s.to_string()).collect();
        let options = RolloutOptions {
            batch_size: 2,
            ..RolloutOptions::default()
        };
        let mut plan =
            RolloutPlan::for_group(target, stack, "kube_minions", &minions, options, set);
        plan.hold_also("kube_masters", &masters, false);
        assert_eq!(
            plan.batches,
            vec![
                vec!["kube_masters/1"],
                vec!["kube_masters/2"],
                vec!["kube_masters/10"],
                vec!["0", "1"],
                vec!["2"]
            ]
        );
        assert_eq!(plan.group_of("kube_masters/2"), "kube_masters");
        assert_eq!(plan.group_of("2"), "kube_minions");
        assert_eq!(
            split_member_key("roles/Compute/3"),
            (Some("roles/Compute"), "3")
        );
        // Before the start read them: the masters' entry held an operator's hook.
        plan.hooks_before = Some(PriorEntry::AbsentFrom(1));
        plan.also[0].hooks_before = Some(PriorEntry::Present(vec!["pre-delete".into()]));
        let env = plan.hooks_environment();
        let resources = &env["resource_registry"]["resources"];
        assert_eq!(
            resources["kube_minions"]["*"]["hooks"],
            serde_json::json!(["pre-update"])
        );
        assert_eq!(
            resources["kube_masters"]["*"]["hooks"],
            serde_json::json!(["pre-delete", "pre-update"])
        );
        let back = plan.unhook_update().environment.unwrap();
        let resources = &back["resource_registry"]["resources"];
        assert_eq!(
            resources["kube_minions"]["*"]["hooks"],
            serde_json::Value::Null
        );
        assert_eq!(
            resources["kube_masters"]["*"]["hooks"],
            serde_json::json!(["pre-delete"])
        );
        let calls = plan.calls();
        assert!(calls[1]
            .path
            .contains("<kube_masters nested stack>/resources/1/signal"));
        assert!(calls[4]
            .path
            .contains("<kube_minions nested stack>/resources/0/signal"));
        let lines = plan.lines().join("\n");
        assert!(
            lines.contains(
                "group kube_masters (3 member(s): 1, 2, 10): held by caldera, one at a time, \
                 before kube_minions"
            ) && lines.contains("group kube_minions (3 member(s): 0, 1, 2): held by caldera, in the batches below, after kube_masters"),
            "{lines}"
        );
        // The plan shown before the start read the stack says what its PATCH tags, right
        // under the PATCH (was: the PATCH line alone, the journal's plan with the tags).
        let shown = plan.lines();
        let patch = shown
            .iter()
            .position(|l| l.starts_with("    PATCH "))
            .expect("the PATCH line");
        assert_eq!(
            shown[patch + 1],
            format!(
                "    (its tags: the stack's own, with caldera-rollout={}@<this host>, \
                 caldera-also=before:kube_masters, {}, caldera-before=:a1, \
                 caldera-before=kube_masters:pd, caldera-sets=minion_image)",
                plan.id,
                plan.options.tag()
            )
        );
        assert!(
            plan.forward_command()
                .to_string()
                .contains("--also kube_masters"),
            "{}",
            plan.forward_command()
        );
        assert_eq!(plan.hooked_groups(), ["kube_minions", "kube_masters"]);
        // `--also-after`: that group's members after the target's.
        let mut later = plan.clone();
        later.hold_also("etcd", &["0".to_string()], true);
        assert_eq!(later.batches.last().unwrap(), &vec!["etcd/0".to_string()]);
        assert_eq!(later.batches[3], vec!["0", "1"]);
        let lines = later.lines().join("\n");
        assert!(
            lines.contains(
                "group etcd (1 member(s): 0): held by caldera, one at a time, after kube_minions"
            ) && lines.contains("in the batches below, after kube_masters, before etcd"),
            "{lines}"
        );
        assert!(later
            .forward_command()
            .to_string()
            .contains("--also kube_masters --also-after etcd"));
        // The journal's spec reads back; a spec from before `--also` reads as holding none.
        let back: RolloutPlan =
            serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert_eq!(back, plan);
        let mut old = serde_json::to_value(&plan).unwrap();
        old.as_object_mut().unwrap().remove("also");
        let old: RolloutPlan = serde_json::from_value(old).unwrap();
        assert!(old.also.is_empty());
    }
}
