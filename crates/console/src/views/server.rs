//! One node's Nova server (`server show` and its console log): a text view that scrolls.

use super::{Plan, Rows, Screen};
use crate::model::ServerTarget;
use crate::tui::draw::server;
use crate::tui::keys::{self, KeyAction, KeyContext};
use crate::tui::state::store::{FetchMeta, Store};
use crate::tui::state::view::{StackTarget, View};
use crate::tui::state::yank::Yank;
use crate::tui::state::App;
use crate::tui::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;

pub struct Server<'a> {
    pub target: &'a ServerTarget,
}

impl Screen for Server<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, _: &Store, _: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        Some(match (id, &self.target.server_id) {
            (true, Some(server)) => ("server id", server.clone()),
            (true, None) => ("member", self.target.key.member.clone()),
            (false, _) => ("node name", self.target.name.clone()),
        })
    }

    fn title(&self) -> &'static str {
        "Server"
    }

    fn crumb(&self) -> String {
        format!("server {}", self.target.name)
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::SERVER_VIEW
    }

    fn offers(&self, action: KeyAction) -> bool {
        super::text_offers(action)
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.servers.get(&self.target.key).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        // Two requests a look (the server, its console log): half the refresh pace.
        app.want_server(self.target.clone(), p.force, p.now, p.every * 2);
    }

    fn table<'s>(
        &self,
        _store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        None
    }

    fn text_lines(&self, app: &App, width: usize) -> Option<usize> {
        let slot = app.store().servers.get(&self.target.key);
        Some(server::line_count(app, slot, width))
    }

    /// The member's own stack, else its node group's.
    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        let id = self
            .target
            .member_stack
            .as_deref()
            .or(self.target.group_stack.as_deref())?;
        Some(app.stack_target(id))
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let slot = app.store().servers.get(&self.target.key);
        server::draw(app, view, self.target, slot, frame, area);
    }
}
