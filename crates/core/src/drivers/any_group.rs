//! Changing any scaling group of an operator's own stack (issue 11, item 5): plan and apply.
//!
//! A template nobody here wrote names its parameters as it likes; before caldera offers to
//! change `KEY=VALUE` for the group at a resource path, it checks, from what Heat says:
//! - the stack has that parameter at all;
//! - the group's own definition in the stack's template reads it (`get_param: KEY`,
//!   anywhere under the group resource), otherwise the change cannot reach its members;
//! - the stack is not one Magnum owns (its conductor would fight a Heat update behind its
//!   back) unless the operator says otherwise;
//! - the stack has settled (Heat 27 lets a new update supersede one under way);
//! - Heat's own preview of the update (`PATCH .../preview`) lists the group as updated or
//!   replaced: the plan shows what Heat says, not what caldera guesses.
//!
//! Heat 27 answers `400` to `preview?show_nested=true` for a stack holding ResourceGroups
//! (the engine fails with "'NoneType' object is not iterable", measured on Magnum's layout),
//! so the preview is the top level's: which groups and resources change, not which members.
//! It is also coarse: a group whose members are nested templates shows as updated on any
//! parameter change (measured: `kube_masters` "updated" by `minion_image`), which is why the
//! reach check above, not the preview, decides whether a change reaches the members.
//!
//! Applying a plan: a scale (`caldera scale STACK/GROUP --count N`) is one PATCH of the
//! parameter the group's count reads ([`plan_group_scale`], [`apply_group_update`]); a
//! rollout (`caldera rollout start STACK/GROUP --set KEY=VALUE`) is the same engine as
//! caldera's own node groups (`crate::rollout`), with the hooks on this group's members
//! ([`super::rollout_plan::RolloutPlan::for_group`]).
//!
//! A group inside a nested stack (`roles/Compute`) is planned through its owners: the reach
//! check and the count follow the parameters each owner passes down to its nested template,
//! Heat's preview shows the top-level owner (`roles`) changing, and the hooks environment
//! nests the members' breakpoints under each owner.

use super::apply::ActionContext;
use super::guard::Reach;
use super::rollout_plan::{RolloutOptions, RolloutPlan};
use super::{Limits, NodeGroupTarget};
use crate::api::heat::{HeatClient, PreviewChanges, ResourceQuery, StackUpdate};
use crate::command_line::CommandLine;
use crate::journal::{ApiCall, Entry, Outcome};
use crate::model::{DriverKind, StackRef};
use crate::parameter_value::{fit_to_template, ParameterValue, ParameterValues};
use crate::report::{ErrorKind, ServiceError, ServiceResult};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// The resource types whose members are a node group's nodes, and the property that holds
/// their count.
const COUNT_PROPERTIES: [(&str, &str); 2] = [
    ("OS::Heat::ResourceGroup", "count"),
    ("OS::Heat::AutoScalingGroup", "desired_capacity"),
];

/// The action target for the group at `group` of the operator's stack `stack`: labelled
/// `STACK/GROUP`, the form the commands take, the journal records and the driver lock is
/// held by.
pub fn group_target(stack: &StackRef, group: &str) -> NodeGroupTarget {
    NodeGroupTarget {
        cluster: stack.name.clone(),
        nodegroup: group.to_string(),
        driver: DriverKind::HeatNative,
        stack: Some(stack.clone()),
        cluster_id: None,
        limits: Limits::default(),
    }
}

/// Parameters only Magnum's Heat driver gives a stack (`kubecluster.yaml`): a stack with any
/// of them belongs to a Magnum cluster.
const MAGNUM_PARAMETERS: [&str; 3] = ["is_cluster_stack", "magnum_url", "cluster_uuid"];

/// Expression nesting looked through for `get_param` (bounds hostile templates).
const MAX_DEPTH: usize = 32;

/// A planned parameter change for one group of a stack.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupUpdatePlan {
    pub stack: StackRef,
    /// The group's resource path in the stack (`kube_minions`).
    pub group: String,
    /// What the update sets, fitted to the parameters' declared types.
    pub set: ParameterValues,
    /// Heat's preview of the whole stack update.
    pub preview: PreviewChanges,
    /// Why the change is refused; empty when it may proceed.
    pub refusals: Vec<String>,
    /// The group's members now (names in its nested stack), for the plan's lines.
    pub members: Vec<String>,
    /// A scale: the member count before and after.
    pub scale: Option<(u32, u32)>,
    /// A scale: the members it removes (by name), through the group's removal policies.
    pub removing: Vec<String>,
    /// A scale down of a ResourceGroup with no members named: the ones Heat drops, its
    /// highest-numbered (`ResourceGroup` trims the end of its member list).
    pub dropped: Vec<String>,
    /// The blast radius outside the target: every other resource whose definition reads a
    /// changed parameter, which Heat updates in the same update, unheld.
    pub also: Vec<AlsoChanged>,
    /// Resources that read the target's attributes (`get_attr: [kube_minions, …]`), by
    /// path and type: Heat updates them after the group when what they read changed (the
    /// members' addresses after a scale, say). Not held, not refused: the template wires
    /// them to the group on purpose; the plan names them.
    pub attribute_readers: Vec<(String, String)>,
}

/// Wait conditions: Heat updates their `count` in place (`update_allowed`, heat/engine/
/// resources/openstack/heat/wait_condition.py: `handle_update` starts waiting again until
/// the handle holds `count` success signals; the signals already received still count). A
/// template that gives one its group's count (`count: {get_param: number_of_slaves}`) waits
/// for the group's members to signal: a scale updating it is the template's own intent, and
/// no node changes with it.
const WAITS_IN_PLACE: [&str; 2] = [
    "OS::Heat::WaitCondition",
    "AWS::CloudFormation::WaitCondition",
];

/// A resource outside the target that reads a parameter the change sets: Heat updates it in
/// the same update, with no hook holding it (a group: all its members at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlsoChanged {
    /// Its resource path in the stack (`kube_masters`, `roles/Controller`).
    pub path: String,
    /// Its type as the template writes it.
    pub resource_type: String,
    /// Which of the changed parameters it reads (by the name they go by at its level).
    pub reads: Vec<String>,
    /// Its members now, for a group.
    pub members: Option<usize>,
    /// The operator said Heat may update it (`--let-heat-update PATH`).
    pub allowed: bool,
    /// The operator said caldera holds it too (`--also PATH`): its members (`names`) on
    /// hooks, released one at a time before the target's (after them: `after`,
    /// `--also-after PATH`).
    pub held: bool,
    pub after: bool,
    /// A group's members now, by name (in index order).
    pub names: Vec<String>,
}

impl AlsoChanged {
    /// A wait condition (`WAITS_IN_PLACE`): updated in place, waiting for signals.
    pub fn only_waits(&self) -> bool {
        WAITS_IN_PLACE.contains(&self.resource_type.as_str())
    }

    fn line(&self) -> String {
        if self.only_waits() {
            return format!(
                "  also: {} ({}) reads {}: Heat updates it in place and waits for that many \
                 signals (no node changes with it)",
                self.path,
                self.resource_type,
                self.reads.join(", ")
            );
        }
        if self.held {
            return format!(
                "  blast radius: {} ({}, {} member(s): {}) reads {} too: held by caldera \
                 ({}), one at a time, {} the target",
                self.path,
                self.resource_type,
                self.names.len(),
                self.names.join(", "),
                self.reads.join(", "),
                if self.after { "--also-after" } else { "--also" },
                if self.after { "after" } else { "before" }
            );
        }
        let what = match self.members {
            Some(n) => format!("{}, {n} member(s), all at once", self.resource_type),
            None => self.resource_type.clone(),
        };
        let how = match self.allowed {
            true => "let Heat update it (--let-heat-update)",
            false => "refused unless --let-heat-update names it",
        };
        format!(
            "  blast radius: {} ({what}) reads {} too: Heat updates it in the same update, \
             unheld; {how}",
            self.path,
            self.reads.join(", ")
        )
    }
}

/// What an operator said a change of a group may do beyond its target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allow {
    /// Go ahead on a stack Magnum owns.
    pub magnum: bool,
    /// Resources outside the target Heat may update unheld (their paths).
    pub heat_updates: Vec<String>,
    /// Groups outside the target a rollout holds too (`--also`, their paths): hooked and
    /// released by caldera one at a time, before the target's members.
    pub held: Vec<String>,
    /// The same, released after the target's members (`--also-after`).
    pub held_after: Vec<String>,
}

impl Allow {
    /// Where `path` comes in the order the operator named held groups: `--also` ones first,
    /// then `--also-after` ones, each in the order given; a group not held last.
    fn held_rank(&self, path: &str) -> usize {
        self.held
            .iter()
            .chain(&self.held_after)
            .position(|a| a.trim_matches('/') == path)
            .unwrap_or(usize::MAX)
    }

    /// Whether the operator said to hold `path` too, and if so whether after the target.
    fn hold_of(&self, path: &str) -> Option<bool> {
        let named = |list: &[String]| list.iter().any(|a| a.trim_matches('/') == path);
        match (named(&self.held), named(&self.held_after)) {
            (true, _) => Some(false),
            (false, true) => Some(true),
            (false, false) => None,
        }
    }
}

impl GroupUpdatePlan {
    /// The rollout of this planned update: its members held on hooks and released in
    /// batches, the update setting what this plan sets, its lines kept as the preview.
    pub fn rollout_plan(&self, options: RolloutOptions) -> RolloutPlan {
        let mut plan = RolloutPlan::for_group(
            group_target(&self.stack, &self.group),
            self.stack.clone(),
            &self.group,
            &self.members,
            options,
            self.set.clone(),
        );
        plan.preview = self.lines();
        for a in self.also.iter().filter(|a| a.held) {
            plan.hold_also(&a.path, &a.names, a.after);
        }
        plan
    }

    pub fn lines(&self) -> Vec<String> {
        let set: Vec<String> = self
            .set
            .iter()
            .map(|(k, v)| format!("{k}={}", v.display_text()))
            .collect();
        let mut out = vec![format!(
            "update {}/{}: {}",
            self.stack.name,
            self.group,
            set.join(" ")
        )];
        if let Some((from, to)) = self.scale {
            out.push(format!("  members: {from} -> {to}"));
            if !self.removing.is_empty() {
                out.push(format!(
                    "  removed: {} (Heat never reuses a removed member's name)",
                    self.removing.join(", ")
                ));
            }
            let kept = self.members.len().saturating_sub(self.removing.len()) as u32;
            if to > kept {
                out.push(format!("  added: {} member(s), named by Heat", to - kept));
            }
            if !self.dropped.is_empty() {
                out.push(format!(
                    "  removed: {} (a ResourceGroup drops its highest-numbered members)",
                    self.dropped.join(", ")
                ));
            } else if to < kept {
                out.push(format!(
                    "  removed: {} member(s), picked by Heat",
                    kept - to
                ));
            }
            out.push(format!("  call: {}", self.scale_call()));
        }
        let p = &self.preview;
        for (what, list) in [
            ("updated", &p.updated),
            ("replaced", &p.replaced),
            ("added", &p.added),
            ("deleted", &p.deleted),
            ("unchanged", &p.unchanged),
        ] {
            if !list.is_empty() {
                out.push(format!("  Heat's preview, {what}: {}", list.join(", ")));
            }
        }
        let top = top_resource(&self.group).to_string();
        let group_changes = p.updated.contains(&top) || p.replaced.contains(&top);
        // Only where the change reaches the group is the rest of Heat's list worth a word.
        if let Some(line) = self.passed_on_line(&top).filter(|_| group_changes) {
            out.push(line);
        }
        if group_changes {
            out.push(format!(
                "  members of {} ({}): {} (Heat 27 previews a group's nested stack only at \
                 the top level, not member by member)",
                self.group,
                self.members.len(),
                if self.members.is_empty() {
                    "-".to_string()
                } else {
                    self.members.join(", ")
                }
            ));
        }
        out.extend(self.also.iter().map(AlsoChanged::line));
        if !self.attribute_readers.is_empty() {
            let readers: Vec<String> = self
                .attribute_readers
                .iter()
                .map(|(path, kind)| format!("{path} ({kind})"))
                .collect();
            out.push(format!(
                "  after {}: {} read its attributes; Heat updates them once it is done if what \
                 they read changed",
                self.group,
                readers.join(", ")
            ));
        }
        out.extend(self.refusals.iter().map(|r| format!("  refused: {r}")));
        out
    }

    /// The resources Heat's preview lists as updated that neither are the target nor read a
    /// changed parameter. Heat previews every nested stack as updated whatever changed
    /// (`StackResource._needs_update` returns True: it hands the nested stack the update and
    /// lets each member decide), so a sibling group shows up here on every update; its
    /// members change only where a definition reads a changed parameter, which is the blast
    /// radius below, found from the templates.
    fn passed_on_line(&self, top: &str) -> Option<String> {
        let passed: Vec<&str> = self
            .preview
            .updated
            .iter()
            .map(String::as_str)
            .filter(|r| {
                *r != top
                    && !self.also.iter().any(|a| top_resource(&a.path) == *r)
                    // What reads the group's attributes may change after it: said apart.
                    && !self
                        .attribute_readers
                        .iter()
                        .any(|(path, _)| top_resource(path) == *r)
            })
            .collect();
        if passed.is_empty() {
            return None;
        }
        // A long list (a stack of many nested stacks) is named in part: the count says the rest.
        const NAMED: usize = 8;
        let list = match passed.len() > NAMED {
            true => format!(
                "{} and {} more",
                passed[..NAMED].join(", "),
                passed.len() - NAMED
            ),
            false => passed.join(", "),
        };
        let (it, its) = match passed.len() {
            1 => ("its definition reads none of", "no member of it changes"),
            _ => (
                "none of their definitions reads",
                "none of their members changes",
            ),
        };
        Some(format!(
            "  {list}: in Heat's preview because Heat hands every nested stack the update and \
             lets its members decide; {it} {params}, so {its}",
            params = self.set.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    }

    /// `line` with the `--let-heat-update PATH` flags that would lift every refusal of this
    /// plan, when its only refusals are its blast radius (each resource outside the group
    /// that reads a changed parameter, is no wait condition, and was not allowed, is refused
    /// once); `None` when the flags would not be enough. The console cannot take them (a form has
    /// no such field, on purpose: letting Heat update other resources unheld is a choice to
    /// make with the command and its preview in front of you); it names the command.
    pub fn override_flags(&self, line: CommandLine) -> Option<CommandLine> {
        let paths: Vec<&str> = self
            .also
            .iter()
            .filter(|a| !a.allowed && !a.only_waits())
            .map(|a| a.path.as_str())
            .collect();
        if paths.is_empty() || paths.len() != self.refusals.len() {
            return None;
        }
        Some(
            paths
                .into_iter()
                .fold(line, |line, p| line.flag("let-heat-update", p)),
        )
    }

    /// `line` with the `--also PATH` flags that would hold every group of the blast radius
    /// instead (a rollout's other way out), when every refusal is a group's that `--also`
    /// can hold (a ResourceGroup); `None` otherwise.
    pub fn hold_flags(&self, line: CommandLine) -> Option<CommandLine> {
        let refused: Vec<&AlsoChanged> = self
            .also
            .iter()
            .filter(|a| !a.allowed && !a.held && !a.only_waits())
            .collect();
        let holdable = refused.iter().all(|a| a.members.is_some())
            && refused.len() == self.refusals.len()
            && !refused.is_empty();
        holdable.then(|| {
            refused
                .into_iter()
                .fold(line, |line, a| line.flag("also", a.path.clone()))
        })
    }

    /// A scale plan (from [`plan_group_scale`]) in the form the console's scale form shows
    /// and applies ([`super::ScalePlan`]); `None` for a plan that is no scale.
    pub fn scale_plan(&self) -> Option<super::ScalePlan> {
        let (from, to) = self.scale?;
        Some(super::ScalePlan {
            target: group_target(&self.stack, &self.group),
            from,
            to,
            members_after: Vec::new(),
            added: Vec::new(),
            // The members the operator named (applied as the plan is made again); those
            // Heat drops on its own are in the lines.
            removed: self.removing.clone(),
            removal_list: Vec::new(),
            calls: vec![self.scale_call()],
            stack_group: Some(super::StackGroupScale {
                lines: self.lines(),
                set: self.set.clone(),
            }),
        })
    }

    /// The parameters the PATCH sets.
    pub fn parameters(&self) -> BTreeMap<String, Value> {
        self.set
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json()))
            .collect()
    }

    /// A scale's PATCH as the journal and the plan show it.
    pub fn scale_call(&self) -> ApiCall {
        let update = self.scale_update();
        ApiCall::new(
            "PATCH",
            super::heat_native::stack_path(&self.stack),
            super::heat_native::update_body_text(&update),
        )
    }

    /// A scale's PATCH: the count parameter and nothing else. The stack's environment is
    /// left as it is: hooks left there would hold this update, and the plan refuses then
    /// (see [`crate::drivers::leftover_hooks`]), rather than clearing anyone's hooks.
    pub fn scale_update(&self) -> StackUpdate {
        StackUpdate {
            parameters: self.parameters(),
            existing: true,
            ..Default::default()
        }
    }
}

/// What a group's update is for: the words of its refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UpdateKind {
    /// A rollout: the group's members held on hooks and released one batch at a time.
    Rollout,
    /// A scale: the group's count (and removal list) changed, nothing held.
    Scale,
}

/// Why a change is refused when `path` (of type `resource_type`), outside the group, reads
/// the changed parameters `reads` too, in the terms of the action: a rollout holds only its
/// group's members, so `path` would change unheld; a scale changes `path` with the count.
fn also_reading_refusal(
    kind: UpdateKind,
    group: &str,
    path: &str,
    resource_type: &str,
    reads: &[String],
    members: Option<usize>,
) -> String {
    let at_once = members
        .map(|n| format!(" (all {n} of its members at once)"))
        .unwrap_or_default();
    let what = match kind {
        UpdateKind::Rollout => {
            format!("Heat would update it in the same update with no hook holding it{at_once}")
        }
        UpdateKind::Scale => format!(
            "scaling {group} changes it too: Heat would update it in the same update as the \
             scale{at_once}"
        ),
    };
    // A group a rollout changes can be held too, member by member (`--also`).
    let hold = match (kind, members) {
        (UpdateKind::Rollout, Some(_)) => format!(
            "say --also {path} to hold it too (caldera releases its members one at a time, \
             before those of {group}), or "
        ),
        _ => "say ".to_string(),
    };
    format!(
        "{path} ({resource_type}) reads {} too: {what}; {hold}--let-heat-update {path} to let it",
        reads.join(", ")
    )
}

/// Plans setting `set` on the stack of the group at `group` (a top-level resource name).
pub async fn plan_group_update(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    set: &ParameterValues,
    allow: &Allow,
) -> ServiceResult<GroupUpdatePlan> {
    let templates = templates_along(heat, stack, group).await?;
    plan_with_templates(
        heat,
        stack,
        group,
        set,
        allow,
        &templates,
        UpdateKind::Rollout,
    )
    .await
}

/// Why a rollout of `label` to a new image is refused when its templates do not say which
/// stack parameter the servers boot from (`why`, from [`image_parameter`]), with `command`:
/// the same rollout with the parameter named by the operator. Said the same by the console
/// and the command line.
pub fn image_parameter_refusal(label: &str, why: &str, command: &CommandLine) -> String {
    format!(
        "which parameter is the image of {label} cannot be told from its templates ({why}). \
         Where a parameter of the stack does set it, name it: `{command}`; an image written into a \
         template, or left to a nested template's default, changes only with the template"
    )
}

/// `values` as the parameters of `stack`'s template take them (a `string` parameter keeps
/// the operator's text, [`ParameterValue::fitted_to`]): for what sets parameters outside a
/// group's plan, such as a resume's overrides.
pub async fn fit_to_stack(
    heat: &HeatClient,
    stack: &StackRef,
    values: ParameterValues,
) -> ServiceResult<ParameterValues> {
    if values.is_empty() {
        return Ok(values);
    }
    Ok(fit_to_template(&heat.get_template(stack).await?, values))
}

/// Heat's reason where its preview refused the update itself: a value its parameter's
/// constraints reject (`allowed_pattern`, `range`, an image Glance does not know), a
/// template it cannot build. That is a refusal of the plan, journaled and shown like ours;
/// anything else (Heat unreachable, overloaded) is an error of the read, tried again later.
fn refused_by_heat(e: &crate::api::ApiError) -> Option<&str> {
    match e {
        crate::api::ApiError::Http {
            status: 400 | 409 | 422,
            message,
            ..
        } => Some(message),
        _ => None,
    }
}

/// [`plan_group_update`] with the templates along the group's path already read.
async fn plan_with_templates(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    set: &ParameterValues,
    allow: &Allow,
    templates: &[Value],
    kind: UpdateKind,
) -> ServiceResult<GroupUpdatePlan> {
    // What the operator typed, as the parameters the stack's template declares take it.
    let set = &match templates.first() {
        Some(template) => fit_to_template(template, set.clone()),
        None => set.clone(),
    };
    let detail = heat.get_stack(stack, false).await?;
    let mut refusals = reach_refusals(templates, &detail.parameters, group, set);
    // Heat 27 accepts an update while another runs and lets it supersede the first (a
    // rollout's hooked update among them): never start one on a stack that has not settled.
    if detail.summary.status.is_in_progress() {
        refusals.push(format!(
            "stack {} is {}: wait for it to settle (or reattach to its rollout)",
            stack.name, detail.summary.status
        ));
    }
    // Hooks an earlier action left in the stack's environment would stop this update on
    // every member they name, and it would never end: take them out first, on purpose.
    if !detail.summary.status.is_in_progress() {
        let left = super::leftover_hooks::in_environment(heat, stack).await?;
        refusals.extend(left.iter().map(|l| {
            format!(
                "{}; this update would stop on them and not end until each member is \
                 released by hand",
                l.line(&stack.name)
            )
        }));
    }
    if !allow.magnum {
        if let Some(p) = MAGNUM_PARAMETERS
            .iter()
            .find(|p| detail.parameters.contains_key(**p))
        {
            refusals.push(format!(
                "stack {} belongs to a Magnum cluster (it has Magnum's parameter {p}): \
                 Magnum's conductor would undo or fight a Heat update behind its back; \
                 change it through Magnum, or say so to go ahead",
                stack.name
            ));
        }
    }
    let update = StackUpdate {
        parameters: set.iter().map(|(k, v)| (k.clone(), v.to_json())).collect(),
        existing: true,
        ..Default::default()
    };
    let (preview, members) = futures::join!(
        heat.preview_update(stack, &update),
        group_members(heat, stack, group)
    );
    let preview = match preview {
        Ok(p) => p,
        Err(e) => match refused_by_heat(&e) {
            Some(why) => {
                refusals.push(format!("Heat refuses this update in its preview: {why}"));
                PreviewChanges::default()
            }
            None => return Err(e.into()),
        },
    };
    let members = members.unwrap_or_default();
    // Heat previews the top level: a group inside a nested stack changes with the resource
    // that owns that nested stack (`roles` for `roles/Compute`).
    let top = top_resource(group);
    if refusals.is_empty()
        && !preview.updated.iter().any(|r| r == top)
        && !preview.replaced.iter().any(|r| r == top)
    {
        refusals.push(format!(
            "Heat's preview does not update {top}: the members of {group} would not change"
        ));
    }
    let mut also = Vec::new();
    for (path, resource_type, reads) in also_reading(templates, group, set) {
        let names = match COUNT_PROPERTIES.iter().any(|(t, _)| *t == resource_type) {
            true => group_members(heat, stack, &path).await.ok(),
            false => None,
        };
        let members = names.as_ref().map(Vec::len);
        let allowed = allow
            .heat_updates
            .iter()
            .any(|a| a.trim_matches('/') == path);
        let hold = allow.hold_of(&path).filter(|_| kind == UpdateKind::Rollout);
        let held = hold.is_some();
        if let Some(after) = hold {
            if let Some(refusal) = held_group_refusal(templates, &path, names.as_deref()) {
                refusals.push(refusal);
            }
            if let Some(refusal) = held_order_refusal(templates, group, &path, after) {
                refusals.push(refusal);
            }
        }
        let only_waits = WAITS_IN_PLACE.contains(&resource_type.as_str());
        if !allowed && !held && !only_waits {
            refusals.push(also_reading_refusal(
                kind,
                group,
                &path,
                &resource_type,
                &reads,
                members,
            ));
        }
        also.push(AlsoChanged {
            path,
            resource_type,
            reads,
            members,
            allowed,
            held,
            after: hold == Some(true),
            names: names.unwrap_or_default(),
        });
    }
    let named = |path: &str| names_a_resource(templates, group, path);
    refusals.extend(held_name_refusals("also", &allow.held, group, &also, named));
    refusals.extend(held_name_refusals(
        "also-after",
        &allow.held_after,
        group,
        &also,
        named,
    ));
    // Held groups are released in the order the operator named them (`--also` ones before
    // the target, in their order; then `--also-after` ones), not in the template's.
    also.sort_by_key(|a| allow.held_rank(&a.path));
    for a in &allow.heat_updates {
        if !also.iter().any(|x| x.path == a.trim_matches('/')) {
            refusals.push(format!(
                "--let-heat-update {a}: no resource outside {group} by that path reads a \
                 changed parameter"
            ));
        }
    }
    Ok(GroupUpdatePlan {
        stack: stack.clone(),
        group: group.to_string(),
        set: set.clone(),
        preview,
        refusals,
        members,
        scale: None,
        removing: Vec::new(),
        dropped: Vec::new(),
        also,
        attribute_readers: attribute_readers(templates, group),
    })
}

/// Whether `path` names a resource of the stack's templates along the target `group`'s
/// path (`templates`, see [`templates_along`]): the resource at the first step where `path`
/// leaves the target's path. A path deeper than that resource is not followed (its nested
/// template is not read here).
fn names_a_resource(templates: &[Value], group: &str, path: &str) -> bool {
    let (target, held) = (steps(group), steps(path));
    let level = parting_level(&target, &held);
    match (held.get(level), resources_at(templates, level)) {
        (Some(step), Some(resources)) => resources.contains_key(*step),
        // The path is the target's or one of its owners: not a held group, said elsewhere.
        (None, _) => true,
        // A template not read: nothing to say it is missing.
        (Some(_), None) => true,
    }
}

/// Why `--FLAG PATH` (`--also`, `--also-after`; PATH one of `held`) cannot be: PATH is the
/// target itself, names no resource of the stack (`exists` says whether it does), or no
/// group the change updates (naming the groups it would update, which the flag may name).
fn held_name_refusals(
    flag: &str,
    held: &[String],
    group: &str,
    also: &[AlsoChanged],
    exists: impl Fn(&str) -> bool,
) -> Vec<String> {
    let groups: Vec<&str> = also
        .iter()
        .filter(|a| a.members.is_some())
        .map(|a| a.path.as_str())
        .collect();
    held.iter()
        .filter_map(|h| {
            let path = h.trim_matches('/');
            if path == group {
                return Some(format!(
                    "--{flag} {h}: that is the rollout's target; --{flag} names another group \
                     the change updates"
                ));
            }
            if also.iter().any(|a| a.path == path && a.members.is_some()) {
                return None;
            }
            if !exists(path) {
                return Some(format!(
                    "--{flag} {h}: the stack has no resource by that path; --{flag} names \
                     another group the change updates"
                ));
            }
            let would = match groups.is_empty() {
                true => "none outside the target".to_string(),
                false => groups.join(", "),
            };
            Some(format!(
                "--{flag} {h}: not a group this change updates (it reads none of the changed \
                 parameters); the groups outside {group} it would update: {would}"
            ))
        })
        .collect()
}

/// Why the group at `held` cannot be released on the chosen side of the target `group`
/// (`after`: `--also-after`): Heat walks an update in its dependency order, and does not
/// start a resource until every resource it depends on (`depends_on`, `get_resource`,
/// `get_attr`, transitively) is done. Where the target depends on `held`, Heat reaches the
/// target's members only once `held` is updated, so `held` cannot wait for the target; where
/// `held` depends on the target, the other way round. Either way the update would wait for
/// ever, every member of both groups held.
fn held_order_refusal(templates: &[Value], group: &str, held: &str, after: bool) -> Option<String> {
    let (a, b) = (steps(group), steps(held));
    let level = parting_level(&a, &b);
    let (target_at, held_at) = (a.get(level)?, b.get(level)?);
    let resources = resources_at(templates, level)?;
    let (first, then) = match after {
        // The target first: it must not wait for `held`.
        true => (target_at, held_at),
        false => (held_at, target_at),
    };
    if !depends_on(resources, first, then) {
        return None;
    }
    let flag = if after { "also-after" } else { "also" };
    Some(format!(
        "--{flag} {held}: Heat updates {then} before {first} ({first} depends on it in the \
         template), so the members of {held} cannot be released {} those of {group}: the \
         update would \
         wait for ever; say --{} {held}",
        if after { "after" } else { "before" },
        if after { "also" } else { "also-after" }
    ))
}

/// Whether resource `from` depends, directly or through others, on resource `to` among
/// `resources` (one template's).
fn depends_on(resources: &serde_json::Map<String, Value>, from: &str, to: &str) -> bool {
    let mut seen: Vec<String> = Vec::new();
    let mut todo = vec![from.to_string()];
    while let Some(r) = todo.pop() {
        if seen.contains(&r) || seen.len() > resources.len() {
            continue;
        }
        let mut direct = Vec::new();
        if let Some(definition) = resources.get(&r) {
            references(definition, &mut direct, 0);
        }
        if direct.iter().any(|d| d == to) {
            return true;
        }
        seen.push(r);
        todo.extend(direct);
    }
    false
}

/// The resources a definition names: `depends_on`, `get_resource`, `get_attr` (Heat's
/// dependencies of a resource on others of its template).
fn references(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, inner) in map {
                let named: Vec<&str> = match (k.as_str(), inner) {
                    ("depends_on", Value::String(s)) | ("get_resource", Value::String(s)) => {
                        vec![s.as_str()]
                    }
                    ("depends_on", Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                    ("get_attr", Value::Array(a)) => {
                        a.first().and_then(Value::as_str).into_iter().collect()
                    }
                    ("get_attr", Value::String(s)) => s.split('.').next().into_iter().collect(),
                    _ => Vec::new(),
                };
                out.extend(named.into_iter().map(str::to_string));
                references(inner, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for item in items {
                references(item, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// Why the group at `path` cannot be held by a rollout besides its target: caldera holds and
/// releases a ResourceGroup's members only ([`rollout_kind_refusal`]), and needs them listed.
fn held_group_refusal(templates: &[Value], path: &str, names: Option<&[String]>) -> Option<String> {
    if let Some(kind) = rollout_kind_refusal(templates, path) {
        return Some(format!("--also {path}: {kind}"));
    }
    match names {
        Some(_) => None,
        None => Some(format!(
            "--also {path}: its members could not be listed, so none could be held"
        )),
    }
}

/// The resources along the group's path that read the attributes of the resource on the
/// path at their level (`get_attr: [kube_minions, kube_minion_ip]` beside `kube_minions`;
/// beside `roles` one level up for `roles/Compute`): (path, type), sorted.
pub fn attribute_readers(templates: &[Value], group: &str) -> Vec<(String, String)> {
    let steps = steps(group);
    let mut out = Vec::new();
    for (level, on_path) in steps.iter().enumerate() {
        let Some(resources) = resources_at(templates, level) else {
            break;
        };
        for (name, definition) in resources {
            if name != on_path && reads_attributes_of(definition, on_path, 0) {
                let path = path_at(&steps, level, name);
                let kind = definition
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                out.push((path, kind.to_string()));
            }
        }
    }
    out.sort();
    out
}

/// The resources of the template at `level` along a group's path.
fn resources_at(templates: &[Value], level: usize) -> Option<&serde_json::Map<String, Value>> {
    templates
        .get(level)
        .and_then(|t| t.get("resources"))
        .and_then(Value::as_object)
}

/// The path of resource `name` beside the path's step at `level` (`roles/Controller`).
fn path_at(steps: &[&str], level: usize, name: &str) -> String {
    steps[..level]
        .iter()
        .copied()
        .chain(std::iter::once(name))
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether `v` holds `{get_attr: [resource, …]}` (or Heat's dotted `resource.attr` form).
fn reads_attributes_of(v: &Value, resource: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match v {
        Value::Object(map) => map.iter().any(|(k, inner)| {
            let here = k == "get_attr"
                && match inner {
                    Value::Array(a) => a.first().and_then(Value::as_str) == Some(resource),
                    Value::String(s) => s.split('.').next() == Some(resource),
                    _ => false,
                };
            here || reads_attributes_of(inner, resource, depth + 1)
        }),
        Value::Array(items) => items
            .iter()
            .any(|item| reads_attributes_of(item, resource, depth + 1)),
        _ => false,
    }
}

/// The blast radius of setting `set` for the group at `group`, from the templates along its
/// path ([`templates_along`]): at each level, every resource but the one on the path whose
/// definition reads a changed parameter (by the name it goes by at that level: the stack's
/// own at the top, the property its owner passes it as below). Heat's preview cannot tell
/// this (it marks every group of nested templates updated on any change); the templates'
/// `get_param` can. Answers (path, type, parameters read).
pub fn also_reading(
    templates: &[Value],
    group: &str,
    set: &ParameterValues,
) -> Vec<(String, String, Vec<String>)> {
    let steps = steps(group);
    let mut names: Vec<String> = set.keys().cloned().collect();
    let mut out = Vec::new();
    for (level, on_path) in steps.iter().enumerate() {
        let Some(resources) = resources_at(templates, level) else {
            break;
        };
        for (name, definition) in resources {
            if name == on_path {
                continue;
            }
            let mut read = Vec::new();
            params_read(definition, &mut read, 0);
            let reads: Vec<String> = read.into_iter().filter(|r| names.contains(r)).collect();
            if reads.is_empty() {
                continue;
            }
            let path = path_at(&steps, level, name);
            let resource_type = definition
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            out.push((path, resource_type, reads));
        }
        // The names the changed parameters go by one level down: the properties the owner
        // on the path passes them in.
        let next: Vec<String> = properties_of(&templates[level], on_path)
            .into_iter()
            .flatten()
            .filter(|(_, v)| {
                let mut r = Vec::new();
                params_read(v, &mut r, 0);
                r.iter().any(|p| names.contains(p))
            })
            .map(|(k, _)| k.clone())
            .collect();
        if next.is_empty() {
            break;
        }
        names = next;
    }
    out
}

/// The group kinds whose members a rollout can hold and release one at a time, each updated
/// once: a ResourceGroup updates each member stack once, when its hook is cleared (measured
/// on Heat 27). An AutoScalingGroup is refused: its own `rolling_updates` policy
/// (`max_batch_size`, `min_in_service`, `pause_time`) orders the members, Heat signals and
/// updates each several times (8 per member measured, up to 3 in one second), and a member's
/// change can land after its first `UPDATE_COMPLETE`, so "released, then complete" would not
/// mean "changed once, in caldera's order".
const ROLLOUT_GROUP_TYPES: [&str; 1] = ["OS::Heat::ResourceGroup"];

/// Plans a rollout of `set` on the members of the group at `group`: a group update
/// ([`plan_group_update`]) whose group is of a kind a rollout can hold member by member.
pub async fn plan_group_rollout(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    set: &ParameterValues,
    allow: &Allow,
) -> ServiceResult<GroupUpdatePlan> {
    let templates = templates_along(heat, stack, group).await?;
    plan_group_rollout_in(heat, stack, group, set, allow, &templates).await
}

/// [`plan_group_rollout`] with the templates along the group's path already read
/// ([`templates_along`]).
pub async fn plan_group_rollout_in(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    set: &ParameterValues,
    allow: &Allow,
    templates: &[Value],
) -> ServiceResult<GroupUpdatePlan> {
    let mut plan = plan_with_templates(
        heat,
        stack,
        group,
        set,
        allow,
        templates,
        UpdateKind::Rollout,
    )
    .await?;
    if let Some(refusal) = rollout_kind_refusal(templates, group) {
        plan.refusals.push(refusal);
    }
    let current = heat.get_stack(stack, false).await?.parameters;
    if let Some(refusal) = rollout_count_refusal(templates, stack, group, set, &current) {
        plan.refusals.push(refusal);
    }
    Ok(plan)
}

/// Why a rollout that sets the parameter the group's count reads is refused: a rollout holds
/// and releases the members there are; Heat adds members no hook holds, or deletes members
/// the rollout would wait on for ever. A scale is its own action, planned and followed as
/// one (`caldera scale`), before or after the rollout. A value equal to the count Heat has
/// now (`current`: the stack's parameters as Heat shows them) changes nothing about the
/// count, and is let through.
fn rollout_count_refusal(
    templates: &[Value],
    stack: &StackRef,
    group: &str,
    set: &ParameterValues,
    current: &BTreeMap<String, String>,
) -> Option<String> {
    let count = count_parameter_along(templates, group).ok()?;
    let value = set.get(&count)?;
    // Heat shows every parameter as text: `3` reads back as the number the count takes.
    let unchanged = current
        .get(&count)
        .is_some_and(|now| ParameterValue::parse(now).to_json() == value.to_json());
    (!unchanged).then(|| {
        format!(
            "{count} is the member count of {group}: a rollout changes the members there are, \
             it does not add or remove any (Heat would delete members the rollout waits on, \
             or add members no hook holds); scale first with `{}`, then roll out",
            CommandLine::caldera(&["scale"])
                .arg(format!("{}/{group}", stack.name))
                .flag("count", set[&count].display_text())
        )
    })
}

/// Why the group at `group` cannot be rolled out member by member, from its type in the
/// template that defines it.
pub fn rollout_kind_refusal(templates: &[Value], group: &str) -> Option<String> {
    let steps = steps(group);
    let last = steps.last()?;
    let kind = templates
        .get(steps.len() - 1)?
        .get("resources")?
        .get(*last)?
        .get("type")?
        .as_str()?;
    if ROLLOUT_GROUP_TYPES.contains(&kind) {
        return None;
    }
    Some(match kind {
        "OS::Heat::AutoScalingGroup" => format!(
            "{group} is an OS::Heat::AutoScalingGroup: Heat updates its members in its own \
             order (its rolling_updates policy: max_batch_size, min_in_service, pause_time), \
             several times each, and a member's change can land after its first \
             UPDATE_COMPLETE, so caldera cannot hold each member and know it changed once; \
             set its rolling_updates policy and update the stack instead"
        ),
        other => format!(
            "{group} is an {other}: a rollout holds and releases the members of an \
             OS::Heat::ResourceGroup only"
        ),
    })
}

/// The members of the group `group` of `stack`: the resources of its nested stack, in
/// index order (`2` before `10`).
pub async fn group_members(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
) -> ServiceResult<Vec<String>> {
    let nested = super::heat_native::group_stack_of(heat, stack, group).await?;
    let mut names: Vec<String> = heat
        .list_resources(&nested, &ResourceQuery::default())
        .await?
        .into_iter()
        .map(|r| r.resource.name)
        .collect();
    names.sort_by(|a, b| super::member_order(a, b));
    Ok(names)
}

/// Plans scaling the group `group` to `count` members, removing `remove` (member names)
/// first: the parameter its count property reads (`count: {get_param: number_of_minions}`)
/// is set to `count`, and the one its `removal_policies` read to the members to remove, with
/// Heat's preview and the same refusals as any change. A count or removal written into the
/// template is refused: only a template update could change it.
pub async fn plan_group_scale(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    count: Option<u32>,
    remove: &[String],
    allow: &Allow,
) -> ServiceResult<GroupUpdatePlan> {
    let templates = templates_along(heat, stack, group).await?;
    let refused = |e: String| {
        ServiceError::new(
            ErrorKind::Refused,
            format!("scale {}/{group}: {e}", stack.name),
        )
    };
    let param = count_parameter_along(&templates, group).map_err(refused)?;
    let members = group_members(heat, stack, group).await?;
    let count = count.unwrap_or_else(|| members.len().saturating_sub(remove.len()) as u32);
    let mut set = ParameterValues::new();
    set.insert(param, ParameterValue::json(count.into()));
    let mut early = Vec::new();
    if !remove.is_empty() {
        let unknown: Vec<&String> = remove.iter().filter(|m| !members.contains(m)).collect();
        if !unknown.is_empty() {
            early.push(format!(
                "{group} has no member {} (members: {})",
                unknown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                members.join(", ")
            ));
        }
        match removal_parameter_along(&templates, group) {
            Ok(rp) => {
                set.insert(rp.name().to_string(), rp.value(remove));
            }
            Err(e) => early.push(e),
        }
    }
    let mut plan = plan_with_templates(
        heat,
        stack,
        group,
        &set,
        allow,
        &templates,
        UpdateKind::Scale,
    )
    .await?;
    plan.refusals.splice(0..0, early);
    plan.scale = Some((plan.members.len() as u32, count));
    plan.removing = remove.to_vec();
    if remove.is_empty() && group_type(&templates, group) == Some("OS::Heat::ResourceGroup") {
        plan.dropped = highest_numbered(&plan.members, count as usize);
    }
    if plan.members.len() as u32 == count && remove.is_empty() {
        plan.refusals
            .push(format!("{group} already has {count} members"));
    }
    Ok(plan)
}

/// The type the template gives the group at `path` (its own level's template).
fn group_type<'a>(templates: &'a [Value], path: &str) -> Option<&'a str> {
    let steps = steps(path);
    let own = templates.get(steps.len().checked_sub(1)?)?;
    own.get("resources")?
        .get(*steps.last()?)?
        .get("type")?
        .as_str()
}

/// The members past the first `keep`, by index (`10` after `9`): those a ResourceGroup
/// shrunk to `keep` no longer has.
fn highest_numbered(members: &[String], keep: usize) -> Vec<String> {
    let mut by_index: Vec<&String> = members.iter().collect();
    by_index.sort_by_key(|m| (m.parse::<u64>().unwrap_or(u64::MAX), m.to_string()));
    by_index.into_iter().skip(keep).cloned().collect()
}

/// The first resource of a path: the top-level resource a change of the group goes through.
fn top_resource(path: &str) -> &str {
    path.split('/').find(|s| !s.is_empty()).unwrap_or(path)
}

/// The steps of a resource path.
fn steps(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

/// The level at which two resource paths part (their common steps): both name resources of
/// the template at that level (`roles/Compute` and `roles/Controller` part at 1).
fn parting_level(a: &[&str], b: &[&str]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The templates from `stack` down to the one that defines the group at `path`: the stack's
/// own, then the nested stack of each step but the last (`roles/Compute`: the stack's
/// template, then `roles`'s).
pub async fn templates_along(
    heat: &HeatClient,
    stack: &StackRef,
    path: &str,
) -> ServiceResult<Vec<Value>> {
    let steps = steps(path);
    let mut templates = vec![heat.get_template(stack).await?];
    let mut current = stack.clone();
    for step in steps.iter().take(steps.len().saturating_sub(1)) {
        current = super::heat_native::group_stack_of(heat, &current, step).await?;
        templates.push(heat.get_template(&current).await?);
    }
    Ok(templates)
}

/// The property map of resource `name` in `template`.
fn properties_of<'a>(
    template: &'a Value,
    name: &str,
) -> Option<&'a serde_json::Map<String, Value>> {
    template
        .get("resources")?
        .get(name)?
        .get("properties")?
        .as_object()
}

/// `{get_param: NAME}` (or `[NAME]`) as the whole expression.
fn plain_param(v: &Value) -> Option<String> {
    let obj = v.as_object().filter(|o| o.len() == 1)?;
    match obj.get("get_param")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) if a.len() == 1 => a[0].as_str().map(str::to_string),
        _ => None,
    }
}

/// The stack parameter a group's member count reads, through the nested stacks on its path
/// (`templates` from [`templates_along`]): the group's count reads `ComputeCount` of its own
/// template, which the owner passes as `ComputeCount: {get_param: compute_count}`, and so on
/// up to the stack's own parameter.
pub fn count_parameter_along(templates: &[Value], path: &str) -> Result<String, String> {
    let steps = steps(path);
    let (Some(last), Some(own)) = (steps.last(), templates.get(steps.len().saturating_sub(1)))
    else {
        return Err(format!("no group at path {path}"));
    };
    parameter_up(templates, &steps, count_parameter(own, last)?, "count")
}

/// The group at `steps` (spelled `path`) as the template that defines it writes it: its
/// definition and its type; why not, when no template along the path has it.
fn group_resource<'a>(
    templates: &'a [Value],
    steps: &[&str],
    path: &str,
) -> Result<(&'a Value, &'a str), String> {
    let (Some(last), Some(own)) = (steps.last(), templates.get(steps.len().saturating_sub(1)))
    else {
        return Err(format!("no group at path {path}"));
    };
    let resource = own
        .get("resources")
        .and_then(|r| r.get(*last))
        .ok_or_else(|| format!("the stack's template has no resource {last}"))?;
    let kind = resource.get("type").and_then(Value::as_str).unwrap_or("?");
    Ok((resource, kind))
}

/// The image property of a Nova server type (`OS::Nova::Server`'s `image`, its CFN twin's
/// `ImageId`).
pub(crate) fn image_property(resource_type: &str) -> Option<&'static str> {
    match resource_type {
        crate::ops::node_tree::NOVA_SERVER => Some("image"),
        "AWS::EC2::Instance" => Some("ImageId"),
        _ => None,
    }
}

/// The flavor property of a Nova server type (`OS::Nova::Server`'s `flavor`, its CFN twin's
/// `InstanceType`): the server's size, which Heat hands Nova as it resolved it.
pub(crate) fn flavor_property(resource_type: &str) -> Option<&'static str> {
    match resource_type {
        crate::ops::node_tree::NOVA_SERVER => Some("flavor"),
        "AWS::EC2::Instance" => Some("InstanceType"),
        _ => None,
    }
}

/// The stack parameter the servers of the group at `path` boot their image from, followed
/// through Heat's structure: the `image` of each server in a member (the group's definition
/// itself when it is a server, else the servers of the member's template `member`) must be
/// `{get_param: P}` of one and the same P, which the group's definition hands down from a
/// parameter of the group's template, and so on up to the stack's own parameter (as
/// [`count_parameter_along`] does for the count). Why not, when a level does not pass it
/// as a plain parameter: then only the operator can say which parameter to set.
pub fn image_parameter_along(
    templates: &[Value],
    member: Option<Result<String, String>>,
    path: &str,
) -> Result<String, String> {
    let steps = steps(path);
    let (resource, kind) = group_resource(templates, &steps, path)?;
    let key = match kind {
        "OS::Heat::ResourceGroup" => "resource_def",
        "OS::Heat::AutoScalingGroup" => "resource",
        _ => return Err(format!("{path} is a {kind}, not a group of members")),
    };
    let definition = resource.get("properties").and_then(|p| p.get(key));
    let def_type = definition
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    let def_properties = definition.and_then(|d| d.get("properties"));
    // The parameter of the group's own template the definition reads the image from.
    let at_group = match image_property(def_type) {
        Some(property) => read_image(def_properties, property, path)?,
        None => {
            let inner = member.ok_or_else(|| format!("{path}: no member to read"))??;
            passed_as(def_properties, &inner, path)?
        }
    };
    parameter_up(templates, &steps, at_group, "image")
}

fn no_server(path: &str) -> String {
    format!("the members of {path} hold no server within {MEMBER_DEPTH} levels of nested stacks")
}

/// `{get_param: P}` of a server's image property, as P.
fn read_image(properties: Option<&Value>, property: &str, path: &str) -> Result<String, String> {
    let value = properties
        .and_then(|p| p.get(property))
        .ok_or_else(|| format!("the servers of {path} have no {property}"))?;
    plain_param(value).ok_or_else(|| {
        format!(
            "the servers of {path} take their {property} as {}, not from a parameter",
            one_line(value)
        )
    })
}

/// The parameter of the template above that `owner`'s `properties` hand down as `inner`
/// (`boot_image: {get_param: frontend_image}` hands down `boot_image` as `frontend_image`).
fn passed_as(properties: Option<&Value>, inner: &str, owner: &str) -> Result<String, String> {
    let passed = properties.and_then(|p| p.get(inner)).ok_or_else(|| {
        format!(
            "the servers of {owner} read their image from {inner}, which the definition of \
             {owner} does not pass: the nested template's default decides it"
        )
    })?;
    plain_param(passed).ok_or_else(|| {
        format!(
            "{owner} passes {inner} down as {}, not as a parameter of the stack",
            one_line(passed)
        )
    })
}

/// The one parameter of `template` that every server at its top level takes its image from;
/// `None` when no server is at its top level. `present`: the resources Heat made of the
/// template in the stack read (a resource whose `condition` is false is not made: Magnum's
/// member holds `kube-minion` or `kube-minion-bfv`, never both); `None` reads them all.
fn servers_image_parameter(
    template: &Value,
    present: Option<&HashSet<String>>,
    path: &str,
) -> Result<Option<String>, String> {
    let mut found: Vec<String> = Vec::new();
    for server in servers_in(template, present, path)? {
        let expression = server_image_expression(template, server, path)?;
        let param = plain_param(expression).ok_or_else(|| {
            format!(
                "the servers of {path} take their image as {}, not from a parameter",
                one_line(expression)
            )
        })?;
        if !found.contains(&param) {
            found.push(param);
        }
    }
    one_parameter(found, path)
}

/// The server resources at the top level of `template` that Heat made (see
/// [`servers_image_parameter`] for `present`).
fn servers_in<'a>(
    template: &'a Value,
    present: Option<&HashSet<String>>,
    path: &str,
) -> Result<Vec<&'a Value>, String> {
    let resources = template
        .get("resources")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("the member template of {path} has no resources"))?;
    Ok(resources
        .iter()
        .filter(|(name, _)| present.is_none_or(|p| p.contains(*name)))
        .map(|(_, r)| r)
        .filter(|r| {
            r.get("type")
                .and_then(Value::as_str)
                .and_then(image_property)
                .is_some()
        })
        .collect())
}

/// Where a server's image is set, by Heat's semantics: its own image property; else, booted
/// from a volume, the image that volume is made from: a block device mapping's own `image`,
/// or the `image` of the `OS::Cinder::Volume` it maps (`volume_id: {get_resource: V}`) in the
/// same template (Magnum's `kube-minion-bfv` boots from `kube_node_volume`, made from
/// `server_image`: a new image replaces the volume and the server).
fn server_image_expression<'a>(
    template: &'a Value,
    server: &'a Value,
    path: &str,
) -> Result<&'a Value, String> {
    let kind = server.get("type").and_then(Value::as_str).unwrap_or("");
    let property = image_property(kind).unwrap_or("image");
    let properties = server.get("properties");
    if let Some(v) = properties
        .and_then(|p| p.get(property))
        .filter(|v| !v.is_null())
    {
        return Ok(v);
    }
    let mappings = ["block_device_mapping_v2", "block_device_mapping"]
        .iter()
        .filter_map(|k| properties?.get(*k)?.as_array())
        .flatten();
    for mapping in mappings {
        if let Some(image) = mapping.get("image").filter(|v| !v.is_null()) {
            return Ok(image);
        }
        let volume = mapping
            .get("volume_id")
            .and_then(|v| v.get("get_resource"))
            .and_then(Value::as_str)
            .and_then(|name| template.get("resources")?.get(name));
        let image = volume
            .filter(|v| v.get("type").and_then(Value::as_str) == Some("OS::Cinder::Volume"))
            .and_then(|v| v.get("properties")?.get("image"))
            .filter(|v| !v.is_null());
        if let Some(image) = image {
            return Ok(image);
        }
    }
    Err(format!(
        "the servers of {path} have no {property}, nor a boot volume made from an image"
    ))
}

/// The single parameter found, `None` for none, why not for several.
fn one_parameter(found: Vec<String>, path: &str) -> Result<Option<String>, String> {
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        many => Err(format!(
            "the servers of {path} read their images from several parameters ({})",
            many.join(", ")
        )),
    }
}

/// How deep inside a member its servers are looked for (a member's own nested stacks).
const MEMBER_DEPTH: usize = 3;

/// What the servers of one member boot, found by following Heat's structure down from the
/// member's own template: the one fact behind both the rollout's parameter and a node
/// group's IMAGE column, so the two never disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberImage {
    /// The parameter of the member's template its servers' image comes from (handed down
    /// through its nested stacks), for a rollout to set from above; why not, when a level
    /// does not pass it as a plain parameter.
    pub parameter: Result<String, String>,
    /// Each server's image as Heat resolved it: the parameter's value in the nested stack
    /// that holds it, or the template's literal; `None` where computed otherwise.
    pub images: Vec<Option<String>>,
    /// Each server's flavor, read the same way.
    pub flavors: Vec<Option<String>>,
}

impl MemberImage {
    /// The member's image, as a node group's IMAGE column says it (see [`one_or_mixed`]).
    pub fn image(&self) -> Option<String> {
        one_or_mixed(&self.images)
    }

    /// The member's flavor, as the FLAVOR column says it (see [`one_or_mixed`]).
    pub fn flavor(&self) -> Option<String> {
        one_or_mixed(&self.flavors)
    }
}

/// What a member's servers have for one property (image, flavor), in one word for the
/// IMAGE and FLAVOR columns alike: the value when every server has the same; `mixed (a, b)`
/// when they differ (an app server and its sidecar), `?` standing for a value Heat computes
/// another way; `None` when no server's value is known.
pub fn one_or_mixed(values: &[Option<String>]) -> Option<String> {
    let mut known: Vec<&str> = Vec::new();
    for v in values.iter().flatten() {
        if !known.contains(&v.as_str()) {
            known.push(v);
        }
    }
    let unknown = values.iter().any(Option::is_none);
    match (known.as_slice(), unknown) {
        ([], _) => None,
        ([one], false) => Some(one.to_string()),
        (_, _) => {
            if unknown {
                known.push("?");
            }
            Some(format!("mixed ({})", known.join(", ")))
        }
    }
}

/// The servers of the member stack `stack` (its `template`): at its top level, else
/// through the nested stacks Heat made of its resources (`lb_member.yaml` holding
/// `vm.yaml`: `image_ref` there is passed as `node_image` here), down to `MEMBER_DEPTH` levels.
/// A nested stack holding no server (a network) is not a way; two ways to two parameters
/// is no parameter. `None` when no server is found.
pub fn member_image<'a>(
    heat: &'a HeatClient,
    stack: &'a StackRef,
    template: &'a Value,
    path: &'a str,
) -> futures::future::BoxFuture<'a, ServiceResult<Option<MemberImage>>> {
    member_image_at(heat, stack, template, path, 0)
}

fn member_image_at<'a>(
    heat: &'a HeatClient,
    stack: &'a StackRef,
    template: &'a Value,
    path: &'a str,
    depth: usize,
) -> futures::future::BoxFuture<'a, ServiceResult<Option<MemberImage>>> {
    Box::pin(async move {
        let resources = heat
            .list_resources(stack, &ResourceQuery::default())
            .await?;
        let present: HashSet<String> = resources.iter().map(|r| r.resource.name.clone()).collect();
        let parameter = match servers_image_parameter(template, Some(&present), path) {
            Ok(None) if depth < MEMBER_DEPTH => None,
            Ok(None) => return Ok(None),
            Ok(Some(p)) => Some(Ok(p)),
            Err(why) => Some(Err(why)),
        };
        if let Some(parameter) = parameter {
            // The servers are here: what they boot and their flavor, as Heat resolved
            // them for this stack (its parameters are read only when one is taken from it).
            let images = servers_images(template, &present, path);
            let flavors = servers_flavors(template, &present, path);
            let reads_parameter = images
                .iter()
                .chain(&flavors)
                .any(|e| plain_param(e).is_some());
            let parameters = match reads_parameter {
                true => heat.get_stack(stack, false).await?.parameters,
                false => BTreeMap::new(),
            };
            let resolve = |exprs: Vec<&Value>| -> Vec<Option<String>> {
                exprs.iter().map(|e| resolved(e, &parameters)).collect()
            };
            return Ok(Some(MemberImage {
                parameter,
                images: resolve(images),
                flavors: resolve(flavors),
            }));
        }
        let mut found: Vec<MemberImage> = Vec::new();
        for r in resources {
            let Some(nested) = r.resource.nested.clone() else {
                continue;
            };
            let inner_template = heat.get_template(&nested).await?;
            let Some(inner) =
                member_image_at(heat, &nested, &inner_template, path, depth + 1).await?
            else {
                continue;
            };
            let properties = template
                .get("resources")
                .and_then(|rs| rs.get(&r.resource.name))
                .and_then(|d| d.get("properties"));
            found.push(MemberImage {
                parameter: inner
                    .parameter
                    .and_then(|q| passed_as(properties, &q, &r.resource.name)),
                images: inner.images,
                flavors: inner.flavors,
            });
        }
        Ok(one_way(found, path))
    })
}

/// The ways down to servers found in one member stack, as one: every way's servers' images
/// and flavors; the parameter they all take (a way that cannot say which is the answer).
fn one_way(found: Vec<MemberImage>, path: &str) -> Option<MemberImage> {
    let images: Vec<Option<String>> = found.iter().flat_map(|f| f.images.clone()).collect();
    let flavors: Vec<Option<String>> = found.iter().flat_map(|f| f.flavors.clone()).collect();
    let mut parameters = Vec::new();
    for f in &found {
        match &f.parameter {
            Err(why) => {
                return Some(MemberImage {
                    parameter: Err(why.clone()),
                    images,
                    flavors,
                })
            }
            Ok(p) if !parameters.contains(p) => parameters.push(p.clone()),
            Ok(_) => {}
        }
    }
    let parameter = one_parameter(parameters, path).transpose()?;
    Some(MemberImage {
        parameter,
        images,
        flavors,
    })
}

/// One expression per server Heat made at the top level of `template` (see
/// [`servers_image_parameter`] for `present`), read by `read`; Null where it finds none.
fn servers_expressions<'a>(
    template: &'a Value,
    present: &HashSet<String>,
    path: &str,
    read: impl Fn(&'a Value) -> Option<&'a Value>,
) -> Vec<&'a Value> {
    servers_in(template, Some(present), path)
        .unwrap_or_default()
        .into_iter()
        .map(|server| read(server).unwrap_or(&Value::Null))
        .collect()
}

/// The image expressions of the servers Heat made at the top level of `template`; a server
/// whose image cannot be found has Null.
fn servers_images<'a>(
    template: &'a Value,
    present: &HashSet<String>,
    path: &str,
) -> Vec<&'a Value> {
    servers_expressions(template, present, path, |server| {
        server_image_expression(template, server, path).ok()
    })
}

/// The flavor expressions of the servers Heat made at the top level of `template`; a server
/// that names none has Null.
fn servers_flavors<'a>(
    template: &'a Value,
    present: &HashSet<String>,
    path: &str,
) -> Vec<&'a Value> {
    servers_expressions(template, present, path, |server| {
        let kind = server.get("type").and_then(Value::as_str).unwrap_or("");
        flavor_property(kind).and_then(|p| server.get("properties")?.get(p))
    })
}

/// A property's value as Heat resolved it in the stack whose `parameters` are given: the
/// literal text, or the value of the parameter it reads; `None` when computed otherwise
/// (`str_replace`, `get_attr`...) or empty.
fn resolved(v: &Value, parameters: &BTreeMap<String, String>) -> Option<String> {
    let text = match plain_param(v) {
        Some(p) => parameters.get(&p).cloned(),
        None => v.as_str().map(str::to_string),
    };
    text.filter(|t| !t.is_empty())
}

/// The stack parameter of the group at `path`'s servers' image ([`image_parameter_along`]),
/// from the templates along the path (`templates`, from [`templates_along`]) and one
/// member's; why not, when Heat's structure does not say.
pub async fn image_parameter(
    heat: &HeatClient,
    stack: &StackRef,
    path: &str,
    templates: &[Value],
) -> ServiceResult<Result<String, String>> {
    let members = group_members(heat, stack, path).await?;
    let member = match members.first() {
        Some(name) => {
            let group_stack = super::heat_native::group_stack_of(heat, stack, path).await?;
            match super::heat_native::group_stack_of(heat, &group_stack, name).await {
                Ok(member_stack) => {
                    let template = heat.get_template(&member_stack).await?;
                    let found = member_image(heat, &member_stack, &template, path).await?;
                    Some(found.map_or_else(|| Err(no_server(path)), |f| f.parameter))
                }
                // A member that is a server itself has no stack of its own.
                Err(_) => None,
            }
        }
        None => None,
    };
    Ok(image_parameter_along(templates, member, path))
}

/// One hand-down of parameters on the way from the stack to a group: the owner's properties
/// that set the parameters of the next template down.
struct Pass<'a> {
    /// What hands them down, for messages: a nested stack resource (`roles`), or a group
    /// whose members receive its `resource_def` (`racks`).
    owner: &'a str,
    properties: Option<&'a serde_json::Map<String, Value>>,
}

/// The hand-downs from the stack to the template that defines the group at `steps`, top
/// first. A nested stack resource hands its `properties` to its template. A scaling group
/// is different: Heat writes its nested stack's template itself, one resource per member
/// holding the group's `resource_def` (an AutoScalingGroup's `resource`) with every value
/// already resolved (`node_count: 4`). So through a group the member's template parameters
/// come from the group's definition in the template above, and the generated level between
/// is skipped (`racks/1/nodes`: `racks`'s `resource_def.properties` set the parameters of
/// the rack template that defines `nodes`).
fn passes<'a>(templates: &'a [Value], steps: &[&'a str]) -> Vec<Pass<'a>> {
    let mut out = Vec::new();
    let mut level = 0;
    while level + 1 < steps.len() {
        let owner = steps[level];
        let resource = templates
            .get(level)
            .and_then(|t| t.get("resources"))
            .and_then(|r| r.get(owner));
        let kind = resource.and_then(|r| r.get("type")).and_then(Value::as_str);
        let definition = match kind {
            Some("OS::Heat::ResourceGroup") => Some("resource_def"),
            Some("OS::Heat::AutoScalingGroup") => Some("resource"),
            _ => None,
        };
        match definition {
            // The member step is skipped: its template is the group's definition's.
            Some(key) if level + 2 < steps.len() => {
                let properties = resource
                    .and_then(|r| r.get("properties"))
                    .and_then(|p| p.get(key))
                    .and_then(|d| d.get("properties"))
                    .and_then(Value::as_object);
                out.push(Pass { owner, properties });
                level += 2;
            }
            _ => {
                let properties = templates.get(level).and_then(|t| properties_of(t, owner));
                out.push(Pass { owner, properties });
                level += 1;
            }
        }
    }
    out
}

/// The stack parameter that `param`, a parameter of the template defining the group at
/// `steps`, is passed down from by each owner on the way (`what` names it in the errors).
fn parameter_up(
    templates: &[Value],
    steps: &[&str],
    mut param: String,
    what: &str,
) -> Result<String, String> {
    for pass in passes(templates, steps).iter().rev() {
        let owner = pass.owner;
        let passed = pass.properties.and_then(|p| p.get(&param));
        param = match passed.map(|v| (plain_param(v), v)) {
            Some((Some(up), _)) => up,
            Some((None, v)) => {
                return Err(format!(
                    "{owner} passes {param} to its nested stack as {}, not as a parameter of \
                     the stack: only a template update can change the {what}",
                    one_line(v)
                ))
            }
            None => {
                return Err(format!(
                    "{owner} does not pass {param} to its nested stack: the nested template's \
                     default decides the {what}, only a template update can change it"
                ))
            }
        };
    }
    Ok(param)
}

/// A template value in a message: compact JSON on one line, long ones cut.
fn one_line(v: &Value) -> String {
    const MAX: usize = 80;
    let text = v.to_string();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// How Heat can be told which members of a group to remove: the parameter its
/// `removal_policies` read, as the stack's own parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemovalParameter {
    /// `removal_policies: [{resource_list: {get_param: P}}]` (Magnum's `minions_to_remove`):
    /// P is a list of member names.
    List(String),
    /// `removal_policies: {get_param: P}`: P is the whole policy list (JSON).
    Policies(String),
}

impl RemovalParameter {
    pub fn name(&self) -> &str {
        match self {
            RemovalParameter::List(p) | RemovalParameter::Policies(p) => p,
        }
    }

    /// The parameter's value that removes `members`.
    pub fn value(&self, members: &[String]) -> ParameterValue {
        match self {
            RemovalParameter::List(_) => ParameterValue::text(members.join(",")),
            RemovalParameter::Policies(_) => {
                ParameterValue::json(serde_json::json!([{ "resource_list": members }]))
            }
        }
    }
}

/// The parameter through which Heat can be told which members of the group at `path` to
/// remove (`templates` from [`templates_along`]); why not, when it cannot.
pub fn removal_parameter_along(
    templates: &[Value],
    path: &str,
) -> Result<RemovalParameter, String> {
    let steps = steps(path);
    let (resource, kind) = group_resource(templates, &steps, path)?;
    if kind != "OS::Heat::ResourceGroup" {
        return Err(format!(
            "{path} is a {kind}: Heat removes chosen members of an OS::Heat::ResourceGroup \
             only (its removal_policies)"
        ));
    }
    let policies = resource
        .get("properties")
        .and_then(|p| p.get("removal_policies"));
    let found = match policies {
        None => None,
        Some(v) => match plain_param(v) {
            Some(p) => Some(RemovalParameter::Policies(p)),
            None => v
                .as_array()
                .filter(|a| a.len() == 1)
                .and_then(|a| a[0].get("resource_list"))
                .and_then(plain_param)
                .map(RemovalParameter::List),
        },
    };
    let found = found.ok_or_else(|| {
        format!(
            "the removal_policies of {path} are not read from a parameter (the template says {}): \
             Heat can be told which members to remove only by a template update",
            policies.map_or_else(|| "none".to_string(), Value::to_string)
        )
    })?;
    let up = parameter_up(
        templates,
        &steps,
        found.name().to_string(),
        "removal policies",
    )?;
    Ok(match found {
        RemovalParameter::List(_) => RemovalParameter::List(up),
        RemovalParameter::Policies(_) => RemovalParameter::Policies(up),
    })
}

/// The parameter a group's member count reads, from the template that defines the group.
pub fn count_parameter(template: &Value, group: &str) -> Result<String, String> {
    let resource = template
        .get("resources")
        .and_then(|r| r.get(group))
        .ok_or_else(|| format!("the stack's template has no resource {group}"))?;
    let kind = resource.get("type").and_then(Value::as_str).unwrap_or("?");
    let (_, property) = COUNT_PROPERTIES
        .iter()
        .find(|(t, _)| *t == kind)
        .ok_or_else(|| format!("{group} is a {kind}, not a scaling group"))?;
    let value = resource
        .get("properties")
        .and_then(|p| p.get(*property))
        .ok_or_else(|| format!("{group} has no {property} property"))?;
    let param = value.get("get_param").and_then(|p| match p {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) if a.len() == 1 => a[0].as_str().map(str::to_string),
        _ => None,
    });
    param.ok_or_else(|| {
        format!(
            "the {property} of {group} is not a parameter of the stack (the template says {}): \
             only a template update can change it",
            one_line(value)
        )
    })
}

/// Applies a scale (or any one-PATCH change) of a group the operator has seen: refusals
/// and guard rails first (recorded as refused), then the plan and its call in the journal,
/// then the PATCH, then its outcome.
pub async fn apply_group_update(
    ctx: &ActionContext,
    heat: &HeatClient,
    plan: &GroupUpdatePlan,
    confirm: Option<&str>,
) -> ServiceResult<()> {
    let target = format!("{}/{}", plan.stack.name, plan.group);
    if !plan.refusals.is_empty() {
        return Err(ctx.refuse("scale", &target, plan.refusals.join("; ")));
    }
    ctx.check("scale", &target, &plan.stack.name, Reach::Fleet, confirm)?;
    let update = plan.scale_update();
    let call = plan.scale_call();
    ctx.record(
        &Entry::new(&ctx.actor, "scale", &target, Outcome::Started)
            .plan(plan.lines())
            .calls(vec![call]),
    )?;
    let result = heat.update_stack(&plan.stack, &update).await;
    let outcome = match &result {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed {
            error: e.to_string(),
        },
    };
    ctx.record(&Entry::new(&ctx.actor, "scale", &target, outcome))?;
    result.map_err(ServiceError::from)
}

/// A scale the operator confirmed after reading its plan, planned again against the stack as
/// it is now: refused (and journaled) when the group's members or the parameters it sets
/// moved meanwhile (someone scaled it: the same count would now add or remove other members
/// than the plan said), else the fresh plan, to apply.
#[allow(clippy::too_many_arguments)]
pub async fn replan_confirmed_scale(
    ctx: &ActionContext,
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    shown: (u32, u32),
    removing: &[String],
    set: &ParameterValues,
    allow: &Allow,
) -> ServiceResult<GroupUpdatePlan> {
    let (from, to) = shown;
    let now = plan_group_scale(heat, stack, group, Some(to), removing, allow).await?;
    let members = now.members.len() as u32;
    if members == from && &now.set == set {
        return Ok(now);
    }
    let error = format!(
        "{}/{group} changed while the plan was read: it has {members} members now (the plan \
         said {from} -> {to}); nothing was sent, plan again",
        stack.name
    );
    Err(ctx.refuse("scale", &format!("{}/{group}", stack.name), error))
}

/// Refusals from the templates alone (`templates` from [`templates_along`]): unknown
/// parameters, and parameters that do not reach the group's definition. Through a nested
/// stack a parameter reaches the nested template's parameters its owner's properties read it
/// into (`roles: {properties: {NodeImage: {get_param: node_image}}}`), and so on down.
pub fn reach_refusals(
    templates: &[Value],
    parameters: &BTreeMap<String, String>,
    group: &str,
    set: &ParameterValues,
) -> Vec<String> {
    let steps = steps(group);
    let definition = steps
        .last()
        .and_then(|last| templates.get(steps.len() - 1)?.get("resources")?.get(*last));
    let Some(definition) = definition else {
        return vec![format!("the stack's template has no resource {group}")];
    };
    let mut read = Vec::new();
    params_read(definition, &mut read, 0);
    let mut out = Vec::new();
    for key in set.keys() {
        if !parameters.contains_key(key) {
            out.push(format!("the stack has no parameter {key}"));
            continue;
        }
        // The names `key` goes by at each level on the way down.
        let mut names = vec![key.clone()];
        let mut lost = None;
        for pass in passes(templates, &steps) {
            let owner = pass.owner;
            let next: Vec<String> = pass
                .properties
                .into_iter()
                .flatten()
                .filter(|(_, v)| {
                    let mut r = Vec::new();
                    params_read(v, &mut r, 0);
                    r.iter().any(|p| names.contains(p))
                })
                .map(|(k, _)| k.clone())
                .collect();
            if next.is_empty() {
                lost = Some(owner);
                break;
            }
            names = next;
        }
        if let Some(owner) = lost {
            out.push(format!(
                "parameter {key} does not reach the members of {group}: {owner} does not pass it \
                 to its nested stack"
            ));
        } else if !read.iter().any(|r| names.contains(r)) {
            let via = if steps.len() > 1 {
                format!(" (as {})", names.join(", "))
            } else {
                String::new()
            };
            out.push(format!(
                "parameter {key}{via} does not reach the members of {group} (its definition \
                 reads: {})",
                if read.is_empty() {
                    "no parameter".to_string()
                } else {
                    read.join(", ")
                }
            ));
        }
    }
    out
}

/// Parameter names read by `get_param` anywhere in `v`, in the order met, once each.
fn params_read(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, inner) in map {
                if k == "get_param" {
                    let name = match inner {
                        Value::String(s) => Some(s.as_str()),
                        Value::Array(a) => a.first().and_then(Value::as_str),
                        _ => None,
                    };
                    if let Some(n) = name {
                        if !out.iter().any(|x| x == n) {
                            out.push(n.to_string());
                        }
                    }
                }
                params_read(inner, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for item in items {
                params_read(item, out, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Parameter values as the command line reads `--set KEY=VALUE`.
    fn sets(pairs: &[(&str, &str)]) -> ParameterValues {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), ParameterValue::parse(v)))
            .collect()
    }

    /// What reads the group's attributes is found by `get_attr` on the group's own name, at
    /// its level, not by what it is called.
    #[test]
    fn readers_of_the_groups_attributes_are_named() {
        let top = json!({"resources": {
            "workers": {"type": "OS::Heat::ResourceGroup"},
            "pool": {"type": "OS::Heat::Value", "properties": {
                "value": {"list_join": [",", {"get_attr": ["workers", "ip"]}]}}},
            "api_lb": {"type": "OS::Heat::Value", "properties": {"value": {"get_attr": "workers.ip"}}},
            "workers_doc": {"type": "OS::Heat::Value", "properties": {"value": "workers"}},
            "other": {"type": "OS::Heat::Value", "properties": {"value": {"get_attr": ["masters", "ip"]}}},
        }});
        assert_eq!(
            attribute_readers(std::slice::from_ref(&top), "workers"),
            [
                ("api_lb".to_string(), "OS::Heat::Value".to_string()),
                ("pool".to_string(), "OS::Heat::Value".to_string())
            ]
        );
    }

    /// The image parameter is followed through Heat's structure whatever it is called: a
    /// member template's server reads `boot_image`, the group passes `frontend_image`; a
    /// server as the definition; through a nested stack; and refused where no plain
    /// parameter carries it.
    #[test]
    fn the_image_parameter_is_followed_up_from_the_servers_by_any_name() {
        let top = json!({"resources": {
            "app_tier": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "app_count"},
                "resource_def": {"type": "tier.yaml", "properties": {
                    "role": "app", "boot_image": {"get_param": "frontend_image"}}}}},
            "bare": {"type": "OS::Heat::ResourceGroup", "properties": {
                "resource_def": {"type": "OS::Nova::Server", "properties": {
                    "image": {"get_param": "bare_image"}, "flavor": "m1.small"}}}},
            "fixed": {"type": "OS::Heat::ResourceGroup", "properties": {
                "resource_def": {"type": "tier.yaml", "properties": {"boot_image": "cirros"}}}},
            "roles": {"type": "roles.yaml", "properties": {
                "ComputeImage": {"get_param": "overcloud_image"}}},
            "volumes": {"type": "OS::Cinder::Volume"},
        }});
        let tier = json!({"parameters": {"boot_image": {"type": "string"}}, "resources": {
            "vm": {"type": "OS::Nova::Server", "properties": {
                "image": {"get_param": "boot_image"}}},
            "port": {"type": "OS::Neutron::Port"}}});
        let top_only = std::slice::from_ref(&top);
        let flat = |member: &Value| {
            servers_image_parameter(member, None, "app_tier")
                .and_then(|p| p.ok_or_else(|| no_server("app_tier")))
        };
        assert_eq!(
            image_parameter_along(top_only, Some(flat(&tier)), "app_tier"),
            Ok("frontend_image".to_string())
        );
        assert_eq!(
            image_parameter_along(top_only, None, "bare"),
            Ok("bare_image".to_string())
        );
        let fixed = image_parameter_along(top_only, Some(flat(&tier)), "fixed").unwrap_err();
        assert!(fixed.contains("\"cirros\""), "{fixed}");
        let volumes = image_parameter_along(top_only, None, "volumes").unwrap_err();
        assert!(volumes.contains("not a group"), "{volumes}");
        // roles/Compute: the nested template's group reads ComputeImage, which `roles`
        // passes from the stack's overcloud_image.
        let roles = json!({"resources": {"Compute": {"type": "OS::Heat::ResourceGroup",
            "properties": {"resource_def": {"type": "OS::Nova::Server", "properties": {
                "image": {"get_param": "ComputeImage"}}}}}}});
        assert_eq!(
            image_parameter_along(&[top.clone(), roles], None, "roles/Compute"),
            Ok("overcloud_image".to_string())
        );
        // Two servers reading two parameters: which one is "the" image is not Heat's to say.
        let two = json!({"resources": {
            "a": {"type": "OS::Nova::Server", "properties": {"image": {"get_param": "x"}}},
            "b": {"type": "OS::Nova::Server", "properties": {"image": {"get_param": "y"}}}}});
        let several = image_parameter_along(top_only, Some(flat(&two)), "app_tier").unwrap_err();
        assert!(several.contains("several parameters (x, y)"), "{several}");
    }

    /// Heat previews every nested stack as updated: a sibling group that reads nothing
    /// changed is named as passed the update, not as changing; one in the blast radius is not
    /// explained away.
    #[test]
    fn a_sibling_group_heat_previews_as_updated_is_said_to_stay_as_it_is() {
        let mut plan = GroupUpdatePlan {
            stack: StackRef {
                name: "app".into(),
                id: "1".into(),
            },
            group: "app_tier".into(),
            set: sets(&[("app_count", "3")]),
            preview: PreviewChanges {
                updated: vec!["db_tier".into(), "app_tier".into()],
                ..Default::default()
            },
            refusals: Vec::new(),
            members: vec!["0".into(), "1".into()],
            scale: Some((2, 3)),
            removing: Vec::new(),
            dropped: Vec::new(),
            also: Vec::new(),
            attribute_readers: vec![("lb_members".into(), "OS::Heat::Value".into())],
        };
        let lines = plan.lines().join("\n");
        assert!(
            lines.contains(
                "db_tier: in Heat's preview because Heat hands every nested stack the update"
            ),
            "{lines}"
        );
        assert!(lines.contains("reads none of app_count"), "{lines}");
        assert!(
            lines.contains("after app_tier: lb_members (OS::Heat::Value) read its attributes"),
            "{lines}"
        );
        // A reader of the group's attributes Heat also lists is not said to keep its members.
        let mut reader = plan.clone();
        reader.preview.updated.push("lb_members".into());
        let lines = reader.lines().join("\n");
        assert!(lines.contains("  db_tier: in Heat's preview"), "{lines}");
        assert!(!lines.contains("lb_members: in Heat's preview"), "{lines}");
        plan.also.push(AlsoChanged {
            path: "db_tier".into(),
            resource_type: "OS::Heat::ResourceGroup".into(),
            reads: vec!["app_count".into()],
            members: Some(2),
            allowed: false,
            held: false,
            after: false,
            names: Vec::new(),
        });
        let lines = plan.lines().join("\n");
        assert!(!lines.contains("hands every nested stack"), "{lines}");
        // What would lift the refusal from the command line: the group, not a wait
        // condition, nor what the operator already let.
        plan.also.push(AlsoChanged {
            path: "db_wait".into(),
            resource_type: "OS::Heat::WaitCondition".into(),
            reads: vec!["app_count".into()],
            members: None,
            allowed: false,
            held: false,
            after: false,
            names: Vec::new(),
        });
        plan.refusals = vec!["db_tier reads app_count too".into()];
        assert_eq!(
            plan.override_flags(CommandLine::caldera(&["scale"]))
                .map(|l| l.to_string())
                .as_deref(),
            Some("caldera scale --let-heat-update db_tier")
        );
        // The other way out: hold the group too (a group: it has members).
        assert_eq!(
            plan.hold_flags(CommandLine::caldera(&["rollout", "start"]))
                .map(|l| l.to_string())
                .as_deref(),
            Some("caldera rollout start --also db_tier")
        );
        // A refusal no flag lifts (an AutoScalingGroup is not rolled out member by member):
        // the command would be refused too, so none is offered.
        plan.refusals
            .push("app_tier is an OS::Heat::AutoScalingGroup".into());
        assert!(plan
            .override_flags(CommandLine::caldera(&["scale"]))
            .is_none());
        plan.refusals.truncate(1);
        plan.also[0].allowed = true;
        assert!(plan
            .override_flags(CommandLine::caldera(&["scale"]))
            .is_none());
    }

    /// A ResourceGroup shrunk drops the end of its member list, by index, not by text.
    #[test]
    fn a_shrunk_resource_group_drops_its_highest_numbered_members() {
        let members: Vec<String> = ["0", "1", "2", "9", "10", "11"]
            .iter()
            .map(|m| m.to_string())
            .collect();
        assert_eq!(highest_numbered(&members, 4), ["10", "11"]);
        assert!(highest_numbered(&members, 6).is_empty());
        let top = json!({"resources": {"workers": {"type": "OS::Heat::ResourceGroup"}}});
        let nested = json!({"resources": {"nodes": {"type": "OS::Heat::AutoScalingGroup"}}});
        let along = [top.clone(), nested];
        assert_eq!(
            group_type(std::slice::from_ref(&top), "workers"),
            Some("OS::Heat::ResourceGroup")
        );
        assert_eq!(group_type(&along, "workers/0/nodes"), None);
    }

    /// Mesos' layout: a wait condition counts the slaves' signals. A scale updates its count
    /// in place; it is named in the plan, not refused; a server reading the count would be.
    #[test]
    fn a_wait_condition_counting_the_group_is_no_blast_radius() {
        let top = json!({"resources": {
            "slave_wait_condition": {"type": "OS::Heat::WaitCondition", "properties": {
                "count": {"get_param": "number_of_slaves"},
                "handle": {"get_resource": "slave_wait_handle"}, "timeout": 600}},
            "monitor": {"type": "OS::Nova::Server", "properties": {
                "name": {"get_param": "number_of_slaves"}}},
            "mesos_slaves": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "number_of_slaves"},
                "resource_def": {"type": "mesosslave.yaml"}}},
        }});
        let also: Vec<AlsoChanged> = also_reading(
            std::slice::from_ref(&top),
            "mesos_slaves",
            &sets(&[("number_of_slaves", "3")]),
        )
        .into_iter()
        .map(|(path, resource_type, reads)| AlsoChanged {
            path,
            resource_type,
            reads,
            members: None,
            allowed: false,
            held: false,
            after: false,
            names: Vec::new(),
        })
        .collect();
        let waits: Vec<(&str, bool)> = also
            .iter()
            .map(|a| (a.path.as_str(), a.only_waits()))
            .collect();
        assert_eq!(waits, [("monitor", false), ("slave_wait_condition", true)]);
        assert!(
            also[1].line().contains("no node changes"),
            "{}",
            also[1].line()
        );
        assert!(
            also[0].line().contains("refused unless"),
            "{}",
            also[0].line()
        );
    }

    #[test]
    fn the_blast_radius_names_every_other_resource_reading_a_changed_parameter() {
        // Magnum's layout can pass one image to masters and minions; a bastion server reads
        // it directly; the network reads nothing that changes.
        let top = json!({"resources": {
            "network": {"type": "lib/network.yaml", "properties": {"cidr": {"get_param": "cidr"}}},
            "bastion": {"type": "OS::Nova::Server", "properties": {"image": {"get_param": "server_image"}}},
            "kube_masters": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "number_of_masters"},
                "resource_def": {"type": "kubemaster.yaml", "properties": {
                    "server_image": {"get_param": "server_image"}}}}},
            "kube_minions": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "number_of_minions"},
                "resource_def": {"type": "kubeminion.yaml", "properties": {
                    "server_image": {"get_param": "server_image"}}}}},
        }});
        let also = also_reading(
            std::slice::from_ref(&top),
            "kube_minions",
            &sets(&[("server_image", "fcos-41")]),
        );
        let paths: Vec<(&str, &str)> = also
            .iter()
            .map(|(p, t, _)| (p.as_str(), t.as_str()))
            .collect();
        assert_eq!(
            paths,
            [
                ("bastion", "OS::Nova::Server"),
                ("kube_masters", "OS::Heat::ResourceGroup")
            ]
        );
        // A scale's count parameter is the minions' own.
        let also = also_reading(
            std::slice::from_ref(&top),
            "kube_minions",
            &sets(&[("number_of_minions", "4")]),
        );
        assert!(also.is_empty(), "{also:?}");
    }

    #[test]
    fn the_blast_radius_follows_a_parameter_into_a_nested_stack() {
        // roles/Compute: `roles` passes the image on as `RoleImage`, which its Controller
        // group reads as well.
        let top = json!({"resources": {
            "roles": {"type": "roles.yaml", "properties": {"RoleImage": {"get_param": "image"}}},
        }});
        let roles = json!({"resources": {
            "Compute": {"type": "OS::Heat::ResourceGroup", "properties": {
                "resource_def": {"type": "role.yaml", "properties": {"image": {"get_param": "RoleImage"}}}}},
            "Controller": {"type": "OS::Heat::ResourceGroup", "properties": {
                "resource_def": {"type": "role.yaml", "properties": {"image": {"get_param": "RoleImage"}}}}},
        }});
        let also = also_reading(&[top, roles], "roles/Compute", &sets(&[("image", "v2")]));
        assert_eq!(also.len(), 1, "{also:?}");
        assert_eq!(also[0].0, "roles/Controller");
        assert_eq!(also[0].2, ["RoleImage"]);
    }

    #[test]
    fn only_a_resource_group_is_rolled_out_member_by_member() {
        let top = json!({"resources": {
            "pool": {"type": "OS::Heat::AutoScalingGroup", "properties": {}},
            "nodes": {"type": "OS::Heat::ResourceGroup", "properties": {}},
            "vips": {"type": "OS::Heat::Value", "properties": {}},
        }});
        let t = std::slice::from_ref(&top);
        assert_eq!(rollout_kind_refusal(t, "nodes"), None);
        let asg = rollout_kind_refusal(t, "pool").unwrap_or_default();
        assert!(
            asg.contains("AutoScalingGroup") && asg.contains("rolling_updates"),
            "{asg}"
        );
        let value = rollout_kind_refusal(t, "vips").unwrap_or_default();
        assert!(value.contains("OS::Heat::Value"), "{value}");
    }

    #[test]
    fn removal_is_possible_where_the_policies_read_a_parameter() {
        let group = |policies: Value| {
            json!({"resources": {"kube_minions": {"type": "OS::Heat::ResourceGroup",
                "properties": {"count": {"get_param": "n"}, "removal_policies": policies}}}})
        };
        let t = group(json!([{"resource_list": {"get_param": "minions_to_remove"}}]));
        assert_eq!(
            removal_parameter_along(std::slice::from_ref(&t), "kube_minions"),
            Ok(RemovalParameter::List("minions_to_remove".into()))
        );
        let t = group(json!({"get_param": "policies"}));
        let rp = removal_parameter_along(std::slice::from_ref(&t), "kube_minions");
        assert_eq!(rp, Ok(RemovalParameter::Policies("policies".into())));
        assert_eq!(
            RemovalParameter::Policies("p".into()).value(&["3".into(), "7".into()]),
            ParameterValue::json(json!([{"resource_list": ["3", "7"]}]))
        );
        let t = group(json!([{"resource_list": ["1"]}]));
        let e = removal_parameter_along(std::slice::from_ref(&t), "kube_minions");
        assert!(e.is_err_and(|e| e.contains("not read from a parameter")));
        // Through a nested stack: the owner passes the list on from the stack's parameter.
        let top = json!({"resources": {"roles": {"type": "roles.yaml",
            "properties": {"ComputeRemovals": {"get_param": "compute_removals"}}}}});
        let roles = json!({"resources": {"Compute": {"type": "OS::Heat::ResourceGroup",
            "properties": {"removal_policies": [{"resource_list": {"get_param": "ComputeRemovals"}}]}}}});
        assert_eq!(
            removal_parameter_along(&[top, roles], "roles/Compute"),
            Ok(RemovalParameter::List("compute_removals".into()))
        );
    }

    #[test]
    fn a_parameter_must_reach_the_group() {
        let template = json!({"resources": {
            "kube_masters": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "number_of_masters"}}},
            "kube_minions": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "number_of_minions"},
                "resource_def": {"properties": {"server_image": {"get_param": ["minion_image"]}}}}},
        }});
        let params = map(&[
            ("number_of_masters", "3"),
            ("number_of_minions", "5"),
            ("minion_image", "a"),
        ]);
        let ok = reach_refusals(
            std::slice::from_ref(&template),
            &params,
            "kube_minions",
            &sets(&[("minion_image", "b")]),
        );
        assert!(ok.is_empty(), "{ok:?}");
        let r = reach_refusals(
            std::slice::from_ref(&template),
            &params,
            "kube_minions",
            &sets(&[("number_of_masters", "4"), ("flavor", "x")]),
        );
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].contains("no parameter flavor"), "{r:?}");
        assert!(
            r[1].contains("number_of_masters does not reach the members of kube_minions")
                && r[1].contains("number_of_minions, minion_image"),
            "{r:?}"
        );
        let r = reach_refusals(
            std::slice::from_ref(&template),
            &params,
            "nodes",
            &sets(&[("minion_image", "b")]),
        );
        assert!(r[0].contains("no resource nodes"));
    }

    #[test]
    fn a_count_is_scaled_through_the_parameter_it_reads() {
        let template = json!({"resources": {
            "Compute": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "ComputeCount"}}},
            "asg": {"type": "OS::Heat::AutoScalingGroup", "properties": {
                "desired_capacity": {"get_param": ["size"]}, "min_size": 1}},
            "fixed": {"type": "OS::Heat::ResourceGroup", "properties": {"count": 3}},
            "net": {"type": "OS::Heat::None"},
        }});
        assert_eq!(
            count_parameter(&template, "Compute").unwrap(),
            "ComputeCount"
        );
        assert_eq!(count_parameter(&template, "asg").unwrap(), "size");
        let e = count_parameter(&template, "fixed").unwrap_err();
        assert!(e.contains("not a parameter") && e.contains('3'), "{e}");
        assert!(count_parameter(&template, "net")
            .unwrap_err()
            .contains("not a scaling group"));
        assert!(count_parameter(&template, "gone")
            .unwrap_err()
            .contains("no resource gone"));
    }

    #[test]
    fn a_nested_group_is_reached_and_counted_through_its_owner() {
        let top = json!({"resources": {
            "roles": {"type": "roles.yaml", "properties": {
                "ComputeCount": {"get_param": "compute_count"},
                "NodeImage": {"str_replace": {"template": "img-X", "params": {"X": {"get_param": "image_tag"}}}},
                "Fixed": 3}},
            "bastion": {"type": "OS::Heat::Value"}
        }});
        let roles = json!({"resources": {
            "Compute": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "ComputeCount"},
                "resource_def": {"type": "node.yaml", "properties": {"image": {"get_param": "NodeImage"}}}}},
            "Storage": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "Fixed"}}}
        }});
        let templates = [top, roles];
        let params = map(&[("compute_count", "3"), ("image_tag", "a"), ("other", "x")]);
        assert_eq!(
            count_parameter_along(&templates, "roles/Compute").unwrap(),
            "compute_count"
        );
        let e = count_parameter_along(&templates, "roles/Storage").unwrap_err();
        assert!(
            e.contains("passes Fixed") && e.contains("only a template update"),
            "{e}"
        );
        // A rollout that sets the count too is refused, naming the scale that does it.
        let stack = StackRef {
            name: "oc".into(),
            id: "1".into(),
        };
        let why = rollout_count_refusal(
            &templates,
            &stack,
            "roles/Compute",
            &sets(&[("compute_count", "2"), ("image_tag", "b")]),
            &params,
        )
        .expect("refused");
        assert!(
            why.contains("compute_count is the member count of roles/Compute")
                && why.contains("caldera scale oc/roles/Compute --count 2"),
            "{why}"
        );
        assert_eq!(
            rollout_count_refusal(
                &templates,
                &stack,
                "roles/Compute",
                &sets(&[("image_tag", "b")]),
                &params,
            ),
            None
        );
        // A scale refused because another resource reads the count says so in a scale's
        // terms; a rollout's in its own.
        let reads = vec!["compute_count".to_string()];
        let scale = also_reading_refusal(
            UpdateKind::Scale,
            "roles/Compute",
            "monitor",
            "OS::Heat::ResourceGroup",
            &reads,
            Some(2),
        );
        assert!(
            scale.starts_with("monitor (OS::Heat::ResourceGroup) reads compute_count too")
                && scale.contains("scaling roles/Compute changes it too")
                && scale.contains("(all 2 of its members at once)")
                && scale.contains("--let-heat-update monitor")
                && !scale.contains("hook"),
            "{scale}"
        );
        let rollout = also_reading_refusal(
            UpdateKind::Rollout,
            "roles/Compute",
            "monitor",
            "OS::Heat::ResourceGroup",
            &reads,
            None,
        );
        assert!(rollout.contains("no hook holding it"), "{rollout}");
        // The count Heat has now (3) changes nothing about the count: let through.
        assert_eq!(
            rollout_count_refusal(
                &templates,
                &stack,
                "roles/Compute",
                &sets(&[("compute_count", "3"), ("image_tag", "b")]),
                &params,
            ),
            None
        );
        assert!(reach_refusals(
            &templates,
            &params,
            "roles/Compute",
            &sets(&[("image_tag", "b")])
        )
        .is_empty());
        let r = reach_refusals(
            &templates,
            &params,
            "roles/Compute",
            &sets(&[("other", "y")]),
        );
        assert!(r[0].contains("roles does not pass it"), "{r:?}");
        let r = reach_refusals(
            &templates,
            &params,
            "roles/Storage",
            &sets(&[("image_tag", "b")]),
        );
        assert!(
            r[0].contains("(as NodeImage)") && r[0].contains("reads: Fixed"),
            "{r:?}"
        );
        assert_eq!(top_resource("roles/Compute"), "roles");
        let env = crate::drivers::rollout_plan::hooks_environment_for("roles/Compute");
        assert_eq!(
            env["resource_registry"]["resources"]["roles"]["Compute"]["*"]["hooks"][0],
            "pre-update"
        );
    }

    #[test]
    fn a_group_in_group_members_is_reached_through_the_definition_at_every_level() {
        // Racks of nodes: Heat's generated template of `racks` holds each rack with its
        // values resolved; the parameters come from `racks`'s resource_def.
        let top = json!({"resources": {"racks": {"type": "OS::Heat::ResourceGroup", "properties": {
            "count": {"get_param": "rack_count"},
            "resource_def": {"type": "rack.yaml", "properties": {
                "node_count": {"get_param": "nodes_per_rack"},
                "node_image": {"get_param": "image"}}}}}}});
        let generated = json!({"resources": {"1": {"type": "rack.yaml", "properties": {
            "node_count": 4, "node_image": "fedora-40"}}}});
        let rack = json!({"resources": {"nodes": {"type": "OS::Heat::ResourceGroup", "properties": {
            "count": {"get_param": "node_count"},
            "resource_def": {"type": "node.yaml", "properties": {"image": {"get_param": "node_image"}}}}}}});
        let templates = vec![top, generated, rack];
        assert_eq!(
            count_parameter_along(&templates, "racks/1/nodes").as_deref(),
            Ok("nodes_per_rack")
        );
        let params: BTreeMap<String, String> = map(&[("image", "a"), ("nodes_per_rack", "4")]);
        assert!(reach_refusals(
            &templates,
            &params,
            "racks/1/nodes",
            &sets(&[("image", "b")])
        )
        .is_empty());
        // A value written into the definition: refused in one line, saying so.
        let mut fixed = templates.clone();
        fixed[0]["resources"]["racks"]["properties"]["resource_def"]["properties"]["node_count"] =
            json!(4);
        let e = count_parameter_along(&fixed, "racks/1/nodes").expect_err("fixed count");
        assert_eq!(
            e,
            "racks passes node_count to its nested stack as 4, not as a parameter of the \
             stack: only a template update can change the count"
        );
    }

    /// The ways down a member to its servers, as one: a literal image is shown though no
    /// parameter sets it; two nested stacks reading two parameters give no parameter.
    #[test]
    fn the_ways_to_a_members_servers_make_one_image() {
        let literal = json!({"resources": {
            "port": {"type": "OS::Neutron::Port", "properties": {"image": "not-a-server"}},
            "vm": {"type": "OS::Nova::Server", "properties": {"image": "fedora-40"}}}});
        let all: HashSet<String> = ["port", "vm"].map(String::from).into();
        let images = servers_images(&literal, &all, "g");
        assert_eq!(
            images
                .iter()
                .map(|e| resolved(e, &BTreeMap::new()))
                .collect::<Vec<_>>(),
            vec![Some("fedora-40".to_string())]
        );
        assert!(servers_image_parameter(&literal, None, "g").is_err());
        let way = |p: Result<&str, &str>, v: Option<&str>| MemberImage {
            parameter: p.map(str::to_string).map_err(str::to_string),
            images: vec![v.map(str::to_string)],
            flavors: Vec::new(),
        };
        let same = one_way(
            vec![way(Ok("a"), Some("img")), way(Ok("a"), Some("img"))],
            "g",
        )
        .expect("one way");
        assert_eq!(same.parameter.as_deref(), Ok("a"));
        assert_eq!(same.image().as_deref(), Some("img"));
        let two = one_way(vec![way(Ok("a"), Some("x")), way(Ok("b"), Some("y"))], "g");
        assert!(
            two.as_ref().is_some_and(|w| w.parameter.is_err()),
            "{two:?}"
        );
        // Two ways booting two images: both said, not the first found.
        assert_eq!(two.and_then(|w| w.image()).as_deref(), Some("mixed (x, y)"));
        assert_eq!(
            one_way(vec![way(Err("computed"), Some("z"))], "g"),
            Some(way(Err("computed"), Some("z")))
        );
        assert_eq!(one_way(Vec::new(), "g"), None);
    }

    /// One rule for the IMAGE and FLAVOR columns: the value all servers share, else every
    /// value (`?` for one Heat computes), never the first found nor nothing.
    #[test]
    fn servers_that_differ_are_said_mixed_with_every_value() {
        let v = |s: &[Option<&str>]| -> Vec<Option<String>> {
            s.iter().map(|x| x.map(str::to_string)).collect()
        };
        assert_eq!(
            one_or_mixed(&v(&[Some("a"), Some("a")])).as_deref(),
            Some("a")
        );
        assert_eq!(
            one_or_mixed(&v(&[Some("m1.small"), Some("m1.tiny"), Some("m1.small")])).as_deref(),
            Some("mixed (m1.small, m1.tiny)")
        );
        assert_eq!(
            one_or_mixed(&v(&[Some("a"), None])).as_deref(),
            Some("mixed (a, ?)")
        );
        assert_eq!(one_or_mixed(&v(&[None, None])), None);
        assert_eq!(one_or_mixed(&[]), None);
    }

    /// Magnum's member (kubeminion.yaml) holds two servers under opposite conditions: one
    /// with `image`, one booting from a volume made from the same parameter. Only the one
    /// Heat made counts; the volume's image is the boot-from-volume server's.
    #[test]
    fn a_members_image_is_read_from_the_servers_heat_made_and_their_boot_volumes() {
        let member = json!({"resources": {
            "kube-minion": {"type": "OS::Nova::Server", "condition": "image_based",
                "properties": {"image": {"get_param": "server_image"}}},
            "kube-minion-bfv": {"type": "OS::Nova::Server", "condition": "volume_based",
                "properties": {"block_device_mapping_v2": [
                    {"boot_index": 0, "volume_id": {"get_resource": "kube_node_volume"}}]}},
            "kube_node_volume": {"type": "OS::Cinder::Volume", "condition": "volume_based",
                "properties": {"image": {"get_param": "server_image"}, "size": 20}},
            "blank_disk": {"type": "OS::Cinder::Volume", "properties": {"size": 5}}}});
        let made =
            |names: &[&str]| -> HashSet<String> { names.iter().map(|n| n.to_string()).collect() };
        for present in [
            made(&["kube-minion", "blank_disk"]),
            made(&["kube-minion-bfv", "kube_node_volume", "blank_disk"]),
        ] {
            assert_eq!(
                servers_image_parameter(&member, Some(&present), "kube_minions"),
                Ok(Some("server_image".to_string())),
                "{present:?}"
            );
        }
        // A server booting from a blank volume says where its image is not.
        let blank = json!({"resources": {
            "vm": {"type": "OS::Nova::Server", "properties": {"block_device_mapping": [
                {"volume_id": {"get_resource": "disk"}}]}},
            "disk": {"type": "OS::Cinder::Volume", "properties": {"size": 5}}}});
        let why = servers_image_parameter(&blank, None, "g").expect_err("no image");
        assert!(
            why.contains("nor a boot volume made from an image"),
            "{why}"
        );
    }

    /// A member's flavor as Heat resolved it for the servers it made: a literal, or the
    /// value of the parameter it reads in the stack holding them; no single value when two
    /// servers differ or one computes it.
    #[test]
    fn a_members_flavor_is_the_one_its_servers_boot_as_heat_resolved_it() {
        let member = json!({"resources": {
            "vm": {"type": "OS::Nova::Server", "condition": "image_based",
                "properties": {"flavor": {"get_param": "node_flavor"}}},
            "vm-bfv": {"type": "OS::Nova::Server", "condition": "volume_based",
                "properties": {"flavor": "m1.xlarge"}},
            "cfn": {"type": "AWS::EC2::Instance", "properties": {"InstanceType": "m1.small"}},
            "port": {"type": "OS::Neutron::Port", "properties": {"flavor": "not-a-server"}}}});
        let parameters = BTreeMap::from([("node_flavor".to_string(), "m1.small".to_string())]);
        let flavor_of = |names: &[&str]| {
            let present: HashSet<String> = names.iter().map(|n| n.to_string()).collect();
            let flavors = servers_flavors(&member, &present, "g");
            let flavors: Vec<Option<String>> =
                flavors.iter().map(|f| resolved(f, &parameters)).collect();
            one_or_mixed(&flavors)
        };
        assert_eq!(
            flavor_of(&["vm", "cfn", "port"]).as_deref(),
            Some("m1.small")
        );
        assert_eq!(flavor_of(&["vm-bfv", "port"]).as_deref(), Some("m1.xlarge"));
        assert_eq!(
            flavor_of(&["vm", "vm-bfv"]).as_deref(),
            Some("mixed (m1.small, m1.xlarge)"),
            "two sizes: both said"
        );
        assert_eq!(flavor_of(&["port"]), None, "no server");
        let computed = json!({"str_replace": {"template": "m1.$s", "params": {"$s": "small"}}});
        assert_eq!(resolved(&computed, &parameters), None);
        assert_eq!(resolved(&json!({"get_param": "unset"}), &parameters), None);
    }

    /// A held path names a resource where it leaves the target's path; held groups come in
    /// the order the operator typed them (`--also` ones, then `--also-after` ones).
    #[test]
    fn held_paths_are_checked_against_the_template_and_kept_in_typed_order() {
        let top = json!({"resources": {"kube_masters": {}, "kube_minions": {}, "roles": {}}});
        let roles = json!({"resources": {"Compute": {}, "Controller": {}}});
        let templates = [top, roles];
        assert!(names_a_resource(&templates, "kube_minions", "kube_masters"));
        assert!(!names_a_resource(&templates, "kube_minions", "nosuch"));
        assert!(names_a_resource(
            &templates,
            "roles/Compute",
            "roles/Controller"
        ));
        assert!(!names_a_resource(
            &templates,
            "roles/Compute",
            "roles/Storage"
        ));
        let allow = Allow {
            held: vec!["zeta".into(), "/alpha/".into()],
            held_after: vec!["beta".into()],
            ..Default::default()
        };
        let mut paths = vec!["wait", "alpha", "beta", "zeta"];
        paths.sort_by_key(|p| allow.held_rank(p));
        assert_eq!(paths, ["zeta", "alpha", "beta", "wait"]);
    }

    /// `--also PATH`: only a group the change updates, never the target; the plan's line
    /// for a held group names its members and how caldera releases them; a rollout's
    /// refusal names both ways out.
    #[test]
    fn also_names_a_group_the_change_updates_and_the_plan_says_it_is_held() {
        let masters = AlsoChanged {
            path: "kube_masters".into(),
            resource_type: "OS::Heat::ResourceGroup".into(),
            reads: vec!["minion_image".into()],
            members: Some(3),
            allowed: false,
            held: true,
            after: false,
            names: vec!["0".into(), "1".into(), "2".into()],
        };
        let wait = AlsoChanged {
            path: "wait".into(),
            resource_type: "OS::Heat::WaitCondition".into(),
            reads: vec!["minion_image".into()],
            members: None,
            allowed: false,
            held: false,
            after: false,
            names: Vec::new(),
        };
        let also = [masters.clone(), wait];
        let held = |names: &[&str]| {
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            held_name_refusals("also", &names, "kube_minions", &also, |p| p != "nosuch")
        };
        assert!(held(&["kube_masters", "/kube_masters/"]).is_empty());
        let refused = held(&["network", "kube_minions", "wait", "nosuch"]);
        assert_eq!(refused.len(), 4, "{refused:?}");
        assert!(
            refused[3].starts_with("--also nosuch: the stack has no resource by that path"),
            "{refused:?}"
        );
        assert!(
            refused[0].starts_with("--also network: not a group this change updates")
                && refused[0]
                    .ends_with("the groups outside kube_minions it would update: kube_masters"),
            "{refused:?}"
        );
        assert!(
            refused[1].contains("that is the rollout's target"),
            "{refused:?}"
        );
        assert!(
            refused[2].starts_with("--also wait: not a group"),
            "{refused:?}"
        );
        assert_eq!(
            masters.line(),
            "  blast radius: kube_masters (OS::Heat::ResourceGroup, 3 member(s): 0, 1, 2) reads \
             minion_image too: held by caldera (--also), one at a time, before the target"
        );
        let why = also_reading_refusal(
            UpdateKind::Rollout,
            "kube_minions",
            "kube_masters",
            "OS::Heat::ResourceGroup",
            &["minion_image".into()],
            Some(3),
        );
        assert!(
            why.contains("say --also kube_masters to hold it too")
                && why.ends_with("or --let-heat-update kube_masters to let it"),
            "{why}"
        );
        let why = also_reading_refusal(
            UpdateKind::Scale,
            "kube_minions",
            "kube_masters",
            "OS::Heat::ResourceGroup",
            &["number_of_minions".into()],
            Some(3),
        );
        assert!(
            !why.contains("--also")
                && why.ends_with("say --let-heat-update kube_masters to let it"),
            "{why}"
        );
        let top = json!({"resources": {
            "kube_masters": {"type": "OS::Heat::AutoScalingGroup"},
            "kube_minions": {"type": "OS::Heat::ResourceGroup"}}});
        let names = vec!["a".to_string()];
        assert!(
            held_group_refusal(std::slice::from_ref(&top), "kube_masters", Some(&names))
                .is_some_and(|r| r.starts_with(
                    "--also kube_masters: kube_masters is an OS::Heat::AutoScalingGroup"
                ))
        );
        assert!(held_group_refusal(std::slice::from_ref(&top), "kube_minions", None).is_some());
        assert!(
            held_group_refusal(std::slice::from_ref(&top), "kube_minions", Some(&names)).is_none()
        );
    }

    /// Magnum's layout: the minions reach the masters through the API address switch, so
    /// Heat updates the masters first. Holding the masters after the minions, or the
    /// minions before the masters (a rollout of the masters), would wait for ever: refused.
    #[test]
    fn a_held_group_must_be_released_in_heats_dependency_order() {
        let top = json!({"resources": {
            "network": {"type": "lib/network.yaml"},
            "kube_masters": {"type": "OS::Heat::ResourceGroup", "depends_on": ["network"]},
            "api_switch": {"type": "OS::Heat::Value", "properties": {
                "value": {"get_attr": ["kube_masters", "resource.0.ip"]}}},
            "kube_minions": {"type": "OS::Heat::ResourceGroup", "depends_on": "network",
                "properties": {"resource_def": {"properties": {
                    "master_ip": {"get_attr": ["api_switch", "value"]}}}}},
        }});
        let t = std::slice::from_ref(&top);
        assert!(held_order_refusal(t, "kube_minions", "kube_masters", false).is_none());
        let after = held_order_refusal(t, "kube_minions", "kube_masters", true).unwrap_or_default();
        assert!(
            after.starts_with(
                "--also-after kube_masters: Heat updates kube_masters before kube_minions"
            ) && after.ends_with("say --also kube_masters"),
            "{after}"
        );
        assert!(held_order_refusal(t, "kube_masters", "kube_minions", true).is_none());
        let before =
            held_order_refusal(t, "kube_masters", "kube_minions", false).unwrap_or_default();
        assert!(
            before
                .starts_with("--also kube_minions: Heat updates kube_masters before kube_minions"),
            "{before}"
        );
        // No dependency either way: both sides are fine.
        let free = json!({"resources": {
            "a": {"type": "OS::Heat::ResourceGroup"}, "b": {"type": "OS::Heat::ResourceGroup"}}});
        let f = std::slice::from_ref(&free);
        assert!(
            held_order_refusal(f, "a", "b", true).is_none()
                && held_order_refusal(f, "a", "b", false).is_none()
        );
    }
}
