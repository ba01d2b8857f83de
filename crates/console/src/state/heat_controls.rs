//! Manual Heat controls in the console: check and cancel a stack (stack list, stack tree),
//! clear a hook and mark a resource unhealthy (the resource selected in the tree). Each is
//! planned by the worker from Heat (the exact calls), shown in the confirm dialog, and
//! sent only once confirmed; the worker journals it before the call goes out.

use super::action_dialogs::{Dialog, FormPurpose, OnYes};
use super::form::{Confirm, Field, Form};
use super::settle::Subject;
use super::view::{StackTarget, ViewKind};
use super::{App, Level, Mode};
use crate::drivers::guard::Reach;
use crate::drivers::manual::{ControlPlan, Request as ControlRequest};
use crate::message::{OperatorRequest, Request};
use crate::service::ServiceResult;

/// The tree shows `nodes > 17 > server`; Heat's paths and the commands read `nodes/17/server`.
fn slash_path(tree_path: &str) -> String {
    tree_path
        .split(" > ")
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("/")
}

impl App {
    /// The stack the stack controls act on: the selected row of the stack list, the stack
    /// whose tree is shown.
    fn control_stack(&self) -> Option<StackTarget> {
        let v = self.view();
        match &v.kind {
            ViewKind::Stacks => v
                .table
                .selected(self.store.stacks.data.as_deref().unwrap_or(&[]))
                .map(|s| StackTarget::from_ref(&s.stack)),
            ViewKind::Tree { stack, .. } => Some(stack.clone()),
            _ => None,
        }
    }

    /// The tree's stack and the selected resource's path in it (`nodes/17`).
    fn control_resource(&self) -> Option<(StackTarget, String)> {
        let v = self.view();
        let ViewKind::Tree { stack, .. } = &v.kind else {
            return None;
        };
        let rows = self
            .store
            .trees
            .get(&stack.id)
            .and_then(|s| s.data.as_ref())
            .map(|t| t.rows.as_slice())
            .unwrap_or(&[]);
        let row = v.table.selected(rows)?;
        Some((stack.clone(), slash_path(&row.path)))
    }

    pub(super) fn heat_check(&mut self) {
        self.plan_stack_control("check", ControlRequest::Check);
    }

    pub(super) fn heat_cancel(&mut self) {
        // On a stack Magnum owns the plan is refused first; the operator may then go ahead on
        // purpose, typing the stack's name (`control_planned`), as `--allow-magnum-owned` does.
        let request = ControlRequest::Cancel {
            rollback: true,
            allow_magnum: false,
        };
        self.plan_stack_control("cancel", request);
    }

    fn plan_stack_control(&mut self, what: &str, request: ControlRequest) {
        let Some(stack) = self.control_stack() else {
            self.set_status(Level::Warn, format!("{what}: select a stack first"));
            return;
        };
        if self.may_act(what) {
            self.plan_control(stack, request, format!("planning the {what}…"));
        }
    }

    /// `H`: release the hook the selected resource is held on, or, when rows are marked,
    /// the hooks of every marked one (one plan, one confirmation).
    pub(super) fn heat_clear_hook(&mut self) {
        let Some((stack, path)) = self.control_resource() else {
            self.set_status(
                Level::Warn,
                "clear hook: select a resource in the stack tree",
            );
            return;
        };
        if !self.may_act("clear hook") {
            return;
        }
        let mut marked: Vec<String> = self
            .view()
            .table
            .marks()
            .iter()
            .map(|m| slash_path(m))
            .collect();
        marked.sort();
        let patterns = match marked.is_empty() {
            true => vec![path],
            false => marked,
        };
        let what = patterns.join(", ");
        // Whatever hook holds them (pre-update, pre-create, ...): the plan names it.
        let request = ControlRequest::ClearHook {
            patterns,
            hook: "*".into(),
        };
        self.plan_control(stack, request, format!("looking for the hooks on {what}…"));
    }

    pub(super) fn heat_mark_unhealthy(&mut self) {
        let Some((stack, path)) = self.control_resource() else {
            self.set_status(
                Level::Warn,
                "mark unhealthy: select a resource in the stack tree",
            );
            return;
        };
        if !self.may_act("mark unhealthy") {
            return;
        }
        let form = Form::new(
            format!("Mark {path} unhealthy"),
            vec![Field::text(
                "reason",
                "",
                "Heat shows it as the status reason",
            )],
        );
        self.open_dialog(Dialog::Form {
            form,
            purpose: FormPurpose::MarkUnhealthy { stack, path },
        });
    }

    /// Asks the worker for the plan; the waiting dialog becomes the confirmation.
    pub(super) fn plan_control(
        &mut self,
        stack: StackTarget,
        request: ControlRequest,
        title: String,
    ) {
        let gen = self.gen();
        self.outbox
            .push(Request::Operator(OperatorRequest::PlanControl {
                stack: stack.name.clone().unwrap_or_else(|| stack.id.clone()),
                request,
                gen,
            }));
        self.open_dialog(Dialog::Waiting {
            title,
            gen,
            form: None,
            purpose: FormPurpose::Control { stack },
        });
    }

    /// A plan arrived: the confirmation shows it. A refused plan is not offered: it goes
    /// to the worker only to be journaled as refused, and the footer says why.
    pub(super) fn control_planned(&mut self, plan: ControlPlan) {
        if let Some(request) = plan.override_with.clone() {
            return self.offer_override(plan, request);
        }
        if !plan.refusals.is_empty() {
            self.set_status(
                Level::Error,
                format!("{} refused: {}", plan.target, plan.refusals.join("; ")),
            );
            self.outbox
                .push(Request::Operator(OperatorRequest::ApplyControl {
                    plan: Box::new(plan),
                    confirm: None,
                }));
            return;
        }
        // A cancel reaches the whole stack: on a production cloud its name is typed back.
        let name = (plan.control.reach() == Reach::Fleet)
            .then(|| self.guard.filter(|g| g.production))
            .flatten()
            .map(|_| plan.stack.name.clone());
        self.open_dialog(Dialog::Confirm(Confirm::new(
            format!("{} {}?", plan.control.action(), plan.target),
            plan.lines(),
            name,
            OnYes::ApplyControl {
                plan: Box::new(plan),
            },
        )));
    }

    /// A plan refused for a reason the operator may override on purpose (a cancel on a stack
    /// Magnum owns): the refusal is shown, and typing the stack's name plans it again with the
    /// override (that plan is confirmed and journaled as any other). Declining sends nothing.
    fn offer_override(&mut self, plan: ControlPlan, request: ControlRequest) {
        let mut lines = vec![format!("refused: {}", plan.refusals.join("; "))];
        lines.push(
            "Magnum's conductor may then fight the result. Typing the stack's name plans it \
             again; that plan is shown before anything is sent."
                .into(),
        );
        let stack = StackTarget::from_ref(&plan.stack);
        self.open_dialog(Dialog::Confirm(
            Confirm::new(
                format!("{} {} anyway?", plan.control.action(), plan.target),
                lines,
                Some(plan.stack.name.clone()),
                OnYes::PlanControl { stack, request },
            )
            .name_prompt("To go ahead on a stack Magnum owns"),
        ));
    }

    pub(super) fn control_applied(
        &mut self,
        action: &str,
        target: &str,
        stack_id: &str,
        result: ServiceResult<()>,
    ) {
        match result {
            Ok(()) => {
                self.set_status(
                    Level::Info,
                    format!("{action} {target}: accepted by Heat (journaled; :journal)"),
                );
                self.settle(Subject::Stack {
                    id: stack_id.to_string(),
                });
            }
            Err(e) => {
                let text = format!("{action} {target}: {e}");
                self.set_status(Level::Error, text.clone());
                // The status line cuts a long error (a URL, Heat's whole answer): the error
                // is shown whole, unless the operator is busy with something else.
                if matches!(self.mode, Mode::Normal) {
                    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                    lines.push(String::new());
                    lines.push("the journal has the call and its outcome (:journal)".into());
                    // Refused before anything was sent, or sent and failed: the title says
                    // which, as the journal does.
                    let outcome = match e.kind {
                        crate::service::ErrorKind::Refused => "refused",
                        _ => "failed",
                    };
                    self.open_dialog(Dialog::Text {
                        title: format!("{action} {outcome}"),
                        lines,
                        scroll: 0,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::slash_path;

    #[test]
    fn tree_paths_become_heat_paths() {
        assert_eq!(slash_path("nodes > 17 > server"), "nodes/17/server");
        assert_eq!(slash_path("db"), "db");
    }
}
