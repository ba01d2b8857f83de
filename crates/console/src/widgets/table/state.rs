//! The table's state: filter, sort, the cached view (indices into the data), the
//! selection (by id), the scroll offset and the marks.

use super::sort::compare;
use super::{Column, Filter, RowCtx, SortState, TableRow};
use std::collections::HashSet;

/// What the cached view was computed from; a change means recompute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Signature {
    data_version: u64,
    filter_version: u64,
    sort: SortState,
    faults_only: bool,
    len: usize,
}

#[derive(Debug, Clone, Default)]
pub struct TableState {
    filter: Filter,
    filter_version: u64,
    pub sort: SortState,
    view: Vec<usize>,
    signature: Option<Signature>,
    selected_id: Option<String>,
    selected_pos: usize,
    /// First visible row (a hint; drawing clamps it so the selection is visible).
    pub offset: usize,
    /// Rows per page, as the view estimates it from the terminal's height.
    pub page: usize,
    /// Rows the table's body last showed, as drawn (a pane that shares the screen, as the
    /// nodes pane does with its heat map, shows fewer than the estimate): a page moves by
    /// this once the table was drawn, so no row is skipped.
    pub drawn_rows: std::cell::Cell<usize>,
    marks: HashSet<String>,
    /// Times the view was recomputed (for tests and the debug log).
    pub recomputes: u64,
}

impl TableState {
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    pub fn set_filter(&mut self, raw: &str) {
        if raw != self.filter.raw() {
            self.filter = Filter::parse(raw);
            self.filter_version += 1;
        }
    }

    pub fn clear_filter(&mut self) -> bool {
        let had = !self.filter.raw().is_empty();
        self.set_filter("");
        had
    }

    /// Recompute the filtered, sorted view if the data version, filter, sort or
    /// faults-only flag changed; then find the selected id again.
    pub fn sync<T: TableRow>(
        &mut self,
        items: &[T],
        columns: &[Column<T>],
        ctx: &RowCtx,
        data_version: u64,
        faults_only: bool,
    ) {
        let sig = Signature {
            data_version,
            filter_version: self.filter_version,
            sort: self.sort,
            faults_only,
            len: items.len(),
        };
        if self.signature == Some(sig) {
            return;
        }
        self.signature = Some(sig);
        self.recomputes += 1;
        let filtering = self.filter.is_active();
        let mut text = String::new();
        self.view.clear();
        self.view.extend((0..items.len()).filter(|&i| {
            let item = &items[i];
            if faults_only && !item.is_fault() {
                return false;
            }
            if !filtering {
                return true;
            }
            text.clear();
            for c in columns {
                text.push_str(&(c.text)(item, ctx));
                text.push(' ');
            }
            self.filter.matches(&text)
        }));
        if let Some(col) = self.sort.column.filter(|c| *c < columns.len()) {
            let key = columns[col].sort;
            let mut keyed: Vec<(super::SortKey, usize)> = self
                .view
                .iter()
                .map(|&i| (key(&items[i], ctx), i))
                .collect();
            let desc = self.sort.descending;
            // Ties keep the data's order, reversed with the direction: descending is the
            // exact reverse of ascending (events of one second stay in Heat's order).
            keyed.sort_by(|a, b| {
                let data_order = if desc { b.1.cmp(&a.1) } else { a.1.cmp(&b.1) };
                compare(&a.0, &b.0, desc).then(data_order)
            });
            self.view = keyed.into_iter().map(|(_, i)| i).collect();
        } else if self.sort.descending {
            self.view.reverse();
        }
        self.reselect(items);
    }

    /// Put the selection back on its id, or on the nearest row if that id is gone.
    fn reselect<T: TableRow>(&mut self, items: &[T]) {
        if self.view.is_empty() {
            self.selected_pos = 0;
            return;
        }
        if let Some(id) = &self.selected_id {
            if let Some(pos) = self
                .view
                .iter()
                .position(|&i| items[i].row_id() == id.as_str())
            {
                self.selected_pos = pos;
                return;
            }
        }
        self.selected_pos = self.selected_pos.min(self.view.len() - 1);
        self.selected_id = Some(items[self.view[self.selected_pos]].row_id().into_owned());
    }

    pub fn len(&self) -> usize {
        self.view.len()
    }

    pub fn is_empty(&self) -> bool {
        self.view.is_empty()
    }

    /// Indices into the data, in display order.
    pub fn view(&self) -> &[usize] {
        &self.view
    }

    pub fn selected_pos(&self) -> Option<usize> {
        (!self.view.is_empty()).then_some(self.selected_pos)
    }

    pub fn selected_id(&self) -> Option<&str> {
        self.selected_id.as_deref()
    }

    /// The selected item, given the same data the table was synced with.
    pub fn selected<'a, T>(&self, items: &'a [T]) -> Option<&'a T> {
        self.view.get(self.selected_pos).and_then(|&i| items.get(i))
    }

    /// Select a row by id now (if present) and remember it for the next sync.
    pub fn select_id<T: TableRow>(&mut self, id: &str, items: &[T]) {
        self.selected_id = Some(id.to_string());
        if let Some(pos) = self
            .view
            .iter()
            .position(|&i| items.get(i).is_some_and(|it| it.row_id() == id))
        {
            self.selected_pos = pos;
            self.scroll_to_selection();
        }
    }

    pub fn select_pos<T: TableRow>(&mut self, pos: usize, items: &[T]) {
        if self.view.is_empty() {
            return;
        }
        self.selected_pos = pos.min(self.view.len() - 1);
        if let Some(item) = items.get(self.view[self.selected_pos]) {
            self.selected_id = Some(item.row_id().into_owned());
        }
        self.scroll_to_selection();
    }

    pub fn move_by<T: TableRow>(&mut self, delta: isize, items: &[T]) {
        let pos = self.selected_pos as isize + delta;
        self.select_pos(pos.max(0) as usize, items);
    }

    pub fn page_down<T: TableRow>(&mut self, items: &[T]) {
        self.move_by(self.rows_per_page() as isize, items);
    }

    pub fn page_up<T: TableRow>(&mut self, items: &[T]) {
        self.move_by(-(self.rows_per_page() as isize), items);
    }

    /// The rows a page key moves by: as many as were drawn, else the estimate.
    fn rows_per_page(&self) -> usize {
        match self.drawn_rows.get() {
            0 => self.page.max(1),
            drawn => drawn,
        }
    }

    pub fn top<T: TableRow>(&mut self, items: &[T]) {
        self.select_pos(0, items);
    }

    pub fn bottom<T: TableRow>(&mut self, items: &[T]) {
        self.select_pos(self.view.len().saturating_sub(1), items);
    }

    fn scroll_to_selection(&mut self) {
        let page = self.page.max(1);
        if self.selected_pos < self.offset {
            self.offset = self.selected_pos;
        } else if self.selected_pos >= self.offset + page {
            self.offset = self.selected_pos + 1 - page;
        }
    }

    /// The first visible row for a viewport of `height` rows (pure; used when drawing).
    pub fn visible_offset(&self, height: usize) -> usize {
        let height = height.max(1);
        let sel = self.selected_pos.min(self.view.len().saturating_sub(1));
        let mut off = self.offset.min(self.view.len().saturating_sub(height));
        if sel < off {
            off = sel;
        } else if sel >= off + height {
            off = sel + 1 - height;
        }
        off
    }

    pub fn toggle_mark(&mut self) {
        if let Some(id) = self.selected_id.clone().filter(|_| !self.view.is_empty()) {
            if !self.marks.remove(&id) {
                self.marks.insert(id);
            }
        }
    }

    pub fn clear_marks(&mut self) {
        self.marks.clear();
    }

    pub fn marks(&self) -> &HashSet<String> {
        &self.marks
    }

    pub fn is_marked(&self, id: &str) -> bool {
        self.marks.contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{plain, SortKey};
    use super::*;
    use crate::theme::Theme;
    use ratatui::layout::Constraint;
    use std::borrow::Cow;

    #[derive(Clone)]
    struct R {
        id: String,
        n: i64,
        bad: bool,
    }
    impl TableRow for R {
        fn row_id(&self) -> Cow<'_, str> {
            Cow::Borrowed(&self.id)
        }
        fn is_fault(&self) -> bool {
            self.bad
        }
    }
    fn cols() -> Vec<Column<R>> {
        vec![
            Column {
                title: "ID",
                hide_below: 0,
                width: Constraint::Length(5),
                text: |r, _| r.id.clone(),
                sort: |r, _| SortKey::str(&r.id),
                style: plain,
            },
            Column {
                title: "N",
                hide_below: 0,
                width: Constraint::Length(5),
                text: |r, _| r.n.to_string(),
                sort: |r, _| SortKey::Int(r.n),
                style: plain,
            },
        ]
    }
    fn rows(ids: &[(&str, i64)]) -> Vec<R> {
        ids.iter()
            .map(|(id, n)| R {
                id: id.to_string(),
                n: *n,
                bad: *n < 0,
            })
            .collect()
    }
    /// The rows' context for a test: now, `theme`, relative times, no models.
    fn ctx(theme: &Theme) -> RowCtx<'_> {
        RowCtx {
            now: chrono::Utc::now(),
            theme,
            abs_time: false,
            models: None,
        }
    }

    fn ids(t: &TableState, items: &[R]) -> Vec<String> {
        t.view().iter().map(|&i| items[i].id.clone()).collect()
    }

    #[test]
    fn sorts_by_column_and_direction() {
        let theme = Theme::default_theme();
        let ctx = ctx(&theme);
        let items = rows(&[("b", 2), ("a", 3), ("c", 1)]);
        let mut t = TableState::default();
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["b", "a", "c"]);
        t.sort.cycle(2);
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["a", "b", "c"]);
        t.sort.cycle(2);
        t.sort.reverse();
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["a", "b", "c"]);
        t.sort.reverse();
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["c", "b", "a"]);
    }

    /// Rows that tie on the sort key keep the data's order ascending and the reverse of it
    /// descending: Heat's events of one second are in Heat's order in the data (a
    /// resource's IN_PROGRESS before its COMPLETE, the ids being random UUIDs), so newest
    /// first must show the COMPLETE above its IN_PROGRESS, and a saved file too.
    #[test]
    fn ties_reverse_with_the_direction() {
        let theme = Theme::default_theme();
        let ctx = ctx(&theme);
        let items = rows(&[("started", 7), ("done", 7), ("next", 8)]);
        let mut t = TableState::default();
        t.sort.column = Some(1);
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["started", "done", "next"]);
        t.sort.reverse();
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["next", "done", "started"]);
    }

    #[test]
    fn filter_and_faults_only() {
        let theme = Theme::default_theme();
        let ctx = ctx(&theme);
        let items = rows(&[("web-1", 1), ("web-2", -1), ("db-1", 2)]);
        let mut t = TableState::default();
        t.set_filter("web");
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["web-1", "web-2"]);
        t.set_filter("!web");
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["db-1"]);
        t.set_filter("re:^(db|web)-1 ");
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(ids(&t, &items), ["web-1", "db-1"]);
        t.set_filter("");
        t.sync(&items, &cols(), &ctx, 1, true);
        assert_eq!(ids(&t, &items), ["web-2"]);
    }

    #[test]
    fn selection_follows_id_across_refresh_and_cache_is_reused() {
        let theme = Theme::default_theme();
        let ctx = ctx(&theme);
        let items = rows(&[("a", 1), ("b", 2), ("c", 3), ("d", 4)]);
        let mut t = TableState {
            page: 10,
            ..TableState::default()
        };
        t.sync(&items, &cols(), &ctx, 1, false);
        t.move_by(2, &items);
        assert_eq!(t.selected_id(), Some("c"));
        // Same version: no recompute.
        let before = t.recomputes;
        t.sync(&items, &cols(), &ctx, 1, false);
        assert_eq!(t.recomputes, before);
        // Refresh: new rows in a new order; "c" moves to the top.
        let items2 = rows(&[("c", 3), ("x", 9), ("a", 1), ("b", 2), ("d", 4)]);
        t.sync(&items2, &cols(), &ctx, 2, false);
        assert_eq!(t.selected_id(), Some("c"));
        assert_eq!(t.selected_pos(), Some(0));
        assert_eq!(t.selected(&items2).map(|r| r.id.as_str()), Some("c"));
        // "c" disappears: the row now at its position is selected.
        let items3 = rows(&[("x", 9), ("a", 1)]);
        t.sync(&items3, &cols(), &ctx, 3, false);
        assert_eq!(t.selected_id(), Some("x"));
    }

    #[test]
    fn visible_offset_keeps_selection_on_screen() {
        let theme = Theme::default_theme();
        let ctx = ctx(&theme);
        let items: Vec<R> = (0..100)
            .map(|i| R {
                id: i.to_string(),
                n: i,
                bad: false,
            })
            .collect();
        let mut t = TableState {
            page: 10,
            ..TableState::default()
        };
        t.sync(&items, &cols(), &ctx, 1, false);
        t.move_by(25, &items);
        assert_eq!(t.visible_offset(10), 16);
        t.bottom(&items);
        assert_eq!(t.visible_offset(10), 90);
        t.toggle_mark();
        assert!(t.is_marked("99"));
        t.toggle_mark();
        assert!(t.marks().is_empty());
    }
}
