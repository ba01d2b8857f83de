//! The `ips` table's columns. Rows are printed as their addresses arrive, so the widths are
//! fixed before the first row: the group column is as wide as the widest group known then
//! (every target's label, and each group of a stack named alone, listed before its first
//! address), within bounds; a group longer than that is cut keeping its end, the group that
//! tells rows apart (`…qhop75xocp9q/kube_minions`), the cut marked `…`.

use crate::model::terminal_safe;
use crate::model::text::cut_marked;
use ratatui::text::Span;

/// The widest the group column grows: a longer name is cut (the table stays readable on an
/// 80-column terminal beside the member, name and address columns, 42 of them).
const GROUP_MAX: usize = 40;
const GROUP_TITLE: &str = "group";

/// The group column's width, fixed when the header is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpsTable {
    group: usize,
}

impl IpsTable {
    /// As wide as the widest of `groups` (as printed: controls made visible), at least the
    /// title and at most `GROUP_MAX`.
    pub fn fitting<'a>(groups: impl IntoIterator<Item = &'a str>) -> IpsTable {
        let widest = groups
            .into_iter()
            .map(|g| width(&terminal_safe(g)))
            .max()
            .unwrap_or(0);
        IpsTable {
            group: widest.clamp(GROUP_TITLE.len(), GROUP_MAX),
        }
    }

    pub fn header(&self) -> String {
        self.row(GROUP_TITLE, "member", "name", "addresses")
    }

    /// One row; every cell's control characters made visible, the group cut to its column.
    pub fn row(&self, group: &str, member: &str, name: &str, addresses: &str) -> String {
        let group = cut_marked(terminal_safe(group).into_owned(), self.group);
        let pad = " ".repeat(self.group.saturating_sub(width(&group)));
        format!(
            "{group}{pad} {:>6}  {:<32} {}",
            terminal_safe(member),
            terminal_safe(name),
            terminal_safe(addresses)
        )
    }
}

/// Terminal columns `text` takes (a wide character two).
fn width(text: &str) -> usize {
    Span::raw(text).width()
}

#[cfg(test)]
mod tests {
    use super::IpsTable;

    #[test]
    fn the_group_column_is_as_wide_as_its_widest_group_within_bounds() {
        let t = IpsTable::fitting(["dev-small/default-master", "racks/1/nodes"]);
        assert_eq!(
            t.header(),
            format!("{:<24} member  {:<32} addresses", "group", "name")
        );
        // Short names: no 24 columns wasted.
        let t = IpsTable::fitting(["hn/w"]);
        assert!(
            t.header().starts_with("group member  name"),
            "{}",
            t.header()
        );
        assert!(t
            .row("hn/w", "3", "-", "10.0.0.3")
            .starts_with("hn/w       3  -"));
    }

    #[test]
    fn a_group_too_long_keeps_its_distinguishing_end_marked() {
        let long = "prod-east-very-long-cluster-name-qhop75xocp9q/kube_minions";
        let t = IpsTable::fitting([long]);
        let row = t.row(long, "7", "-", "10.0.0.7");
        let (group, rest) = row.split_at(row.find(' ').unwrap());
        assert_eq!(group.chars().count(), 40, "{row}");
        assert!(group.starts_with('…') && group.ends_with("qhop75xocp9q/kube_minions"));
        assert_eq!(rest, "      7  -                                10.0.0.7");
        // A group first seen after the header is cut to the column, not let push it.
        let t = IpsTable::fitting(["a/b"]);
        assert!(t
            .row("racks/1/nodes", "1", "-", "x")
            .starts_with("…odes      1"));
    }

    #[test]
    fn cells_never_carry_control_characters() {
        let t = IpsTable::fitting(["g\u{1b}[2J"]);
        let row = t.row("g\u{1b}[2J", "1\u{7}", "n\u{9b}", "10.0.0.1\u{1b}]52");
        assert!(!row.chars().any(char::is_control), "{row:?}");
    }
}
