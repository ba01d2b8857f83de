//! Which update of the stack a driver follows, by Heat's facts: a PATCH that keeps the
//! stack's tags (`openstack stack update --existing`, Magnum's resize, another tool) leaves
//! this rollout's marker on the stack while Heat runs an update the operator of this
//! rollout never asked for. Its members are held on the same hooks (the environment is
//! merged, hooks included); released by this driver, they would be rebuilt with the other
//! update's values, and the rollout would end "completed" with an image nobody planned.
//!
//! Heat sets a stack's `updated_time` when it begins an action (an update, a rollback),
//! and never when it ends one: the `updated_time` this driver saw with its own update in
//! Heat names that update. A later `updated_time`, while the marker is still this
//! rollout's, is another update. The driver then pauses, releases nothing, and says what
//! the other update sets (Heat's parameters before and after, for the keys this rollout
//! sets); a resume drives the update Heat runs now, under its values. What the driver
//! follows is journaled (`rollout.heat_update`), so a driver started after a restart still
//! tells an update sent while nobody drove.

use super::{RolloutPlan, Runner};
use crate::journal::Outcome;
use crate::parameter_value::{ParameterValue, ParameterValues};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The journal's action recording which of Heat's updates the driver follows (its spec
/// is a [`HeatUpdate`]).
pub(super) const FOLLOWS: &str = "rollout.heat_update";

/// Longest value text a message quotes from Heat (a parameter may hold a whole file).
const QUOTED_MAX: usize = 60;

/// One update of the stack as Heat shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct HeatUpdate {
    /// The stack's `updated_time`: when Heat began the update.
    pub(super) began: Option<DateTime<Utc>>,
    /// Heat's text of the parameters the rollout sets (a hidden one as Heat hides it).
    pub(super) values: BTreeMap<String, String>,
}

impl HeatUpdate {
    /// The update Heat shows now: the stack's `updated_time` and its parameters of the
    /// keys `plan` sets.
    pub(super) fn shown(
        plan: &RolloutPlan,
        began: Option<DateTime<Utc>>,
        parameters: &BTreeMap<String, String>,
    ) -> HeatUpdate {
        let values = plan
            .parameters()
            .into_keys()
            .filter_map(|k| parameters.get(&k).map(|v| (k, v.clone())))
            .collect();
        HeatUpdate { began, values }
    }

    /// Whether `now` is another update than this one: Heat began an action since.
    pub(super) fn replaced_by(&self, now: &HeatUpdate) -> bool {
        now.began.is_some() && now.began != self.began
    }

    /// `minion_image: fcos-41 → fcos-42`, per key whose value Heat shows changed, or what
    /// says none did.
    fn changes(&self, now: &HeatUpdate) -> String {
        let changed: Vec<String> = now
            .values
            .iter()
            .filter(|(k, v)| self.values.get(*k) != Some(*v))
            .map(|(k, v)| {
                let before = self.values.get(k).map_or("(none)".into(), |b| quoted(b));
                format!("{k}: {before} → {}", quoted(v))
            })
            .collect();
        if changed.is_empty() {
            "the values this rollout sets are unchanged (its template or other values may \
             not be)"
                .into()
        } else {
            changed.join(", ")
        }
    }

    /// The rollout's values with `now`'s where Heat shows them changed: what Heat's update
    /// sets, as text (as a take-over from Heat names them).
    fn adopted_by(&self, plan: &RolloutPlan, now: &HeatUpdate) -> ParameterValues {
        let mut values = plan.extra_parameters.clone();
        for (k, v) in &now.values {
            if self.values.get(k) != Some(v) {
                values.insert(k.clone(), ParameterValue::text(v.clone()));
            }
        }
        values
    }
}

/// Heat's text as a message may quote it: no control characters, at most
/// [`QUOTED_MAX`] characters.
fn quoted(text: &str) -> String {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= QUOTED_MAX {
        return clean;
    }
    let cut: String = clean.chars().take(QUOTED_MAX).collect();
    format!("{cut}…")
}

impl Runner {
    /// The update Heat shows now, as last read.
    fn heat_update_now(&self) -> HeatUpdate {
        HeatUpdate::shown(
            &self.plan,
            self.obs.stack_updated_at,
            &self.obs.stack_parameters,
        )
    }

    /// Checks, after a look at Heat, that the update Heat runs is the one this driver
    /// follows (the first look after this rollout's own PATCH takes it as followed). When
    /// another began, the rollout pauses: nothing more is released until the operator says
    /// whether to drive that update (resume) or end the rollout (abort). False then.
    pub(super) async fn same_heat_update(&mut self) -> bool {
        if self.plan.stack_tags.is_none() || self.obs.stack_read_at.is_none() {
            return true; // a plan from before markers, or Heat not read yet
        }
        let now = self.heat_update_now();
        let Some(followed) = self.following.clone() else {
            self.follow(now, None).await;
            return true;
        };
        if !followed.replaced_by(&now) || self.obs.stack_status.action != "UPDATE" {
            return true;
        }
        // Journaled once (its pause carries it); a driver started after a restart pauses on
        // it again from the journal's word.
        let journaled = self.replaced.as_ref() == Some(&now);
        if journaled && self.paused.is_some() {
            return false;
        }
        let reason = format!(
            "Heat began another update of stack {} at {} that kept this rollout's marker \
             (this rollout's began at {}): {}. Nothing more is released: `caldera rollout \
             resume` drives the update Heat runs now, with its values; `caldera rollout \
             abort` ends the rollout",
            self.plan.stack.name,
            when(now.began),
            when(followed.began),
            followed.changes(&now),
        );
        if !journaled {
            // The update it pauses on goes with the pause: a resume in a later process
            // knows the operator was told of it (see `adopt_heat_update`).
            let e = self
                .record(
                    "rollout.pause",
                    &self.target(),
                    Outcome::Failed {
                        error: reason.clone(),
                    },
                )
                .spec(&now);
            self.note(e).await;
        }
        self.paused = Some(match self.paused.take() {
            Some(before) => format!("{reason}; and {before}"),
            None => reason,
        });
        self.replaced = Some(now);
        false
    }

    /// A resume: when the rollout paused on another update Heat began (the operator was
    /// told: its pause is journaled with it), the rollout drives the update Heat runs now,
    /// its values (as Heat shows them) in place of those that changed, from now on. Another update found only now (a driver killed before it saw it, a
    /// resume asked before anyone knew) is not taken on the strength of a resume that did
    /// not know of it: false then, and the rollout stays paused saying why.
    pub(super) async fn adopt_heat_update(&mut self) -> bool {
        // The update the operator was told of (journaled with the pause they resume).
        let told = self.replaced.clone();
        if !self.same_heat_update().await && self.replaced != told {
            return false; // another one than they were told of: said now, first
        }
        let Some(now) = self.replaced.take() else {
            return true;
        };
        if let Some(followed) = self.following.clone() {
            let values = followed.adopted_by(&self.plan, &now);
            let label = followed.changes(&now);
            self.plan.set_values(values);
            self.status.image = self.plan.image.clone();
            self.follow(
                now,
                Some(format!("taken on at the operator's resume: {label}")),
            )
            .await;
        }
        true
    }

    /// Journals `update` as the one this driver follows (`why`: how it came to).
    pub(super) async fn follow(&mut self, update: HeatUpdate, why: Option<String>) {
        let said = why.unwrap_or_else(|| format!("Heat's update began at {}", when(update.began)));
        let e = self
            .record(FOLLOWS, &self.target(), Outcome::Ok)
            .spec(&update)
            .output(said);
        // Followed in memory even when the journal fails (the write pauses the rollout).
        self.note(e).await;
        self.following = Some(update);
    }

    /// After this driver's own PATCH (a retry): the next look at Heat is its update.
    pub(super) fn follow_next_update(&mut self) {
        self.following = None;
        self.replaced = None;
    }
}

/// Heat's time as messages say it.
fn when(t: Option<DateTime<Utc>>) -> String {
    t.map_or("an unknown time".into(), |t| {
        t.format("%Y-%m-%d %H:%M:%S").to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(began: i64, image: &str) -> HeatUpdate {
        HeatUpdate {
            began: DateTime::from_timestamp(began, 0),
            values: BTreeMap::from([("minion_image".to_string(), image.to_string())]),
        }
    }

    #[test]
    fn an_update_heat_began_later_replaces_the_followed_one() {
        let ours = update(100, "fcos-41");
        assert!(!ours.replaced_by(&update(100, "fcos-41")));
        assert!(ours.replaced_by(&update(200, "fcos-41")));
        // Heat showing no time tells nothing.
        let unknown = HeatUpdate {
            began: None,
            values: BTreeMap::new(),
        };
        assert!(!ours.replaced_by(&unknown));
    }

    #[test]
    fn the_changes_name_each_value_heat_shows_changed_clean_and_bounded() {
        let ours = update(100, "fcos-41");
        assert_eq!(
            ours.changes(&update(200, "fcos-42")),
            "minion_image: fcos-41 → fcos-42"
        );
        assert!(ours
            .changes(&update(200, "fcos-41"))
            .starts_with("the values this rollout sets are unchanged"));
        let hostile = format!("x\u{1b}[2J{}", "y".repeat(100));
        let said = ours.changes(&update(200, &hostile));
        assert!(!said.contains('\u{1b}'), "{said}");
        assert!(said.chars().count() < 100, "{said}");
    }
}
