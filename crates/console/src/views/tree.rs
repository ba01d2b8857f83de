//! A stack's resource tree with the why-stuck analysis: Enter opens a nested stack, a
//! server resource's Nova server, or any other resource's detail (`views::resource`). `D`
//! (k9s's describe) opens the detail of any resource, the ones Enter drills through
//! included: a ResourceGroup's or a member's `resource show` says why Heat failed it, which
//! the nested stack's own status does not always repeat.

use super::{Plan, Rows, Screen, Table};
use crate::model::{NodeKey, ServerTarget, StackResource};
use crate::tui::draw::tree;
use crate::tui::keys::{self, KeyAction, KeyContext};
use crate::tui::state::store::{FetchMeta, Store, TreeRow};
use crate::tui::state::view::{StackTarget, View, ViewKind};
use crate::tui::state::yank::Yank;
use crate::tui::state::{App, Level};
use crate::tui::widgets::table::{TableRow, TableState};
use ratatui::layout::Rect;
use ratatui::Frame;

/// Heat's resource type of a Nova server.
const SERVER_TYPE: &str = "OS::Nova::Server";

pub struct Tree<'a> {
    pub stack: &'a StackTarget,
    /// A resource to select once the tree is there (opened from an event).
    pub focus: &'a Option<String>,
}

fn rows<'s>(store: &'s Store, stack_id: &str) -> &'s [TreeRow] {
    store
        .trees
        .get(stack_id)
        .and_then(|s| s.data.as_ref())
        .map(|t| t.rows.as_slice())
        .unwrap_or(&[])
}

impl Tree<'_> {
    /// A server resource that Nova created (it has a physical id): its detail's target.
    fn server_of(&self, r: &StackResource) -> Option<ServerTarget> {
        if r.resource_type != SERVER_TYPE {
            return None;
        }
        Some(ServerTarget {
            key: NodeKey {
                nodegroup: r
                    .owner
                    .as_ref()
                    .map_or(self.stack.id.clone(), |o| o.id.clone()),
                member: r.name.clone(),
            },
            name: r.name.clone(),
            server_id: Some(r.physical_id.clone().filter(|p| !p.is_empty())?),
            member_stack: r.owner.as_ref().map(|o| o.id.clone()),
            group_stack: None,
        })
    }

    /// The detail of resource `r`, asked of the stack that owns it (a member's nested
    /// stack for a row of a nested stack shown inline).
    fn resource_view(&self, r: &StackResource) -> ViewKind {
        ViewKind::Resource {
            stack: r
                .owner
                .as_ref()
                .map_or_else(|| self.stack.clone(), StackTarget::from_ref),
            resource: r.name.clone(),
        }
    }

    fn selected<'s>(&self, app: &'s App) -> Option<&'s StackResource> {
        app.view()
            .table
            .selected(rows(app.store(), &self.stack.id))
            .map(|r| &r.resource)
    }
}

impl Screen for Tree<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let rows = &s.trees.get(&self.stack.id)?.data.as_ref()?.rows;
        let r = &v.table.selected(rows)?.resource;
        // A resource Heat has not created yet has no physical id: the status line says it
        // is empty rather than copying something else.
        Some(match id {
            true => ("physical id", r.physical_id.clone().unwrap_or_default()),
            false => ("resource name", r.name.clone()),
        })
    }

    fn title(&self) -> &'static str {
        "Stack tree"
    }

    fn crumb(&self) -> String {
        self.stack.label().to_string()
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::TREE_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.trees.get(&self.stack.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_tree(self.stack.clone(), p.force, p.now, p.every, p.paused);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let version = store
            .trees
            .get(&self.stack.id)
            .map(|s| s.meta.version)
            .unwrap_or(0);
        Table::boxed(
            rows(store, &self.stack.id),
            &crate::tui::resource_columns::TREE_COLUMNS,
            version,
        )
    }

    fn after_sync(&self, view: &mut View, table: &dyn Rows, store: &Store) {
        let Some(f) = self.focus else {
            return;
        };
        if let Some(r) = rows(store, &self.stack.id)
            .iter()
            .find(|r| &r.resource.name == f)
        {
            table.select_id(&mut view.table, &r.row_id());
            view.kind = ViewKind::Tree {
                stack: self.stack.clone(),
                focus: None,
            };
        }
    }

    fn context_stack(&self, _app: &App) -> Option<StackTarget> {
        Some(self.stack.clone())
    }

    /// `D`: the selected resource's own detail, whatever Enter would open.
    fn own_key(&self, app: &mut App, action: KeyAction) -> bool {
        if action != KeyAction::Describe {
            return false;
        }
        match self.selected(app).map(|r| self.resource_view(r)) {
            Some(kind) => app.push(kind),
            None => app.set_status(Level::Info, "no resource selected"),
        }
        true
    }

    fn open(&self, app: &mut App) {
        let selected = self.selected(app);
        let server = selected.and_then(|r| self.server_of(r));
        match (selected.and_then(|r| r.nested.clone()), server) {
            (Some(nested), _) => app.push(ViewKind::Tree {
                stack: StackTarget::from_ref(&nested),
                focus: None,
            }),
            (None, Some(target)) => app.push(ViewKind::Server { target }),
            (None, None) => match selected {
                // Any other resource: its own detail, asked of the stack that owns it.
                Some(r) => app.push(self.resource_view(r)),
                None => app.set_status(Level::Info, "no resource selected"),
            },
        }
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        tree::draw(app, view, self.stack, app.store(), frame, area);
    }
}
