//! The project's Heat stacks: Enter opens a stack's tree.

use super::{Plan, Rows, Screen, Table};
use crate::draw::panes;
use crate::keys::{self, KeyContext};
use crate::state::store::{FetchMeta, Store};
use crate::state::view::{StackTarget, View};
use crate::state::yank::{pick, Yank};
use crate::state::App;
use crate::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;

pub struct Stacks;

impl Screen for Stacks {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let st = &v.table.selected(s.stacks.data.as_deref()?)?.stack;
        Some(pick(id, ("stack id", &st.id), ("stack name", &st.name)))
    }

    fn title(&self) -> &'static str {
        "Stacks"
    }

    fn crumb(&self) -> String {
        "stacks".into()
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::STACKS_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        Some(&store.stacks.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_stacks(p.force, p.now, p.every);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let items = store.stacks.data.as_deref().unwrap_or(&[]);
        Table::boxed(
            items,
            &crate::resource_columns::STACK_COLUMNS,
            store.stacks.meta.version,
        )
    }

    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        let v = app.view();
        let items = app.store().stacks.data.as_deref().unwrap_or(&[]);
        v.table
            .selected(items)
            .map(|s| StackTarget::from_ref(&s.stack))
    }

    fn open(&self, app: &mut App) {
        app.nav_tree();
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        panes::stacks(app, view, &app.store().stacks, frame, area);
    }
}
