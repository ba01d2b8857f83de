//! The `ips` table's columns. By default the rows are held to the end and printed in member
//! order, so every column is as wide as the widest text it holds (within bounds). With
//! `--stream` rows are printed as their addresses arrive, so the widths are fixed before the
//! first row: the group column is as wide as the widest group known then (every target's
//! label, and each group of a stack named alone, listed before its first address), the member
//! and name columns as declared. Either way a text longer than its column is cut keeping what
//! tells rows apart (a group path's end: `…qhop75xocp9q/kube_minions`), the cut marked `…`.

use crate::model::terminal_safe;
use crate::model::text::{chars_fitting, cut_marked};
use ratatui::text::Span;
use std::io::{self, Write};

/// The widest the group column grows: a longer name is cut (the table stays readable on an
/// 80-column terminal beside the member, name and address columns).
const GROUP_MAX: usize = 40;
/// The widest the name column grows where the rows are printed together.
const NAME_MAX: usize = 64;
/// The name column's width when rows are streamed (fixed before the first row).
const NAME_STREAMED: usize = 32;
/// The widest the member column grows (an index, or a Cluster API machine's `-`).
const MEMBER_MAX: usize = 12;
const GROUP_TITLE: &str = "group";
const MEMBER_TITLE: &str = "member";
const NAME_TITLE: &str = "name";

/// The table's column widths, fixed when the header is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpsTable {
    group: usize,
    member: usize,
    name: usize,
}

/// One row's cells, as the cloud gave them (made terminal-safe when printed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpsRow {
    pub group: String,
    pub member: String,
    pub name: String,
    pub addresses: String,
}

impl IpsTable {
    /// For rows printed as they arrive: the group column as wide as the widest of `groups`
    /// (as printed: controls made visible), at least its title and at most `GROUP_MAX`; the
    /// member and name columns at their widest.
    pub fn fitting<'a>(groups: impl IntoIterator<Item = &'a str>) -> IpsTable {
        IpsTable {
            group: widest(groups, GROUP_TITLE, GROUP_MAX),
            member: MEMBER_TITLE.len(),
            name: NAME_STREAMED,
        }
    }

    /// For rows printed together: each column as wide as the widest text it holds, at least
    /// its title, at most its bound.
    pub fn fitting_rows(rows: &[IpsRow]) -> IpsTable {
        IpsTable {
            group: widest(
                rows.iter().map(|r| r.group.as_str()),
                GROUP_TITLE,
                GROUP_MAX,
            ),
            member: widest(
                rows.iter().map(|r| r.member.as_str()),
                MEMBER_TITLE,
                MEMBER_MAX,
            ),
            name: widest(rows.iter().map(|r| r.name.as_str()), NAME_TITLE, NAME_MAX),
        }
    }

    pub fn header(&self) -> String {
        self.row(GROUP_TITLE, MEMBER_TITLE, NAME_TITLE, "addresses")
    }

    /// One row; every cell's control characters made visible, each cut to its column.
    pub fn row(&self, group: &str, member: &str, name: &str, addresses: &str) -> String {
        let cell = |text: &str, w: usize| cut_marked(terminal_safe(text).into_owned(), w);
        let (group, member, name) = (
            cell(group, self.group),
            cell(member, self.member),
            end_kept(&terminal_safe(name), self.name),
        );
        format!(
            "{group}{} {}{member}  {name}{} {}",
            pad(&group, self.group),
            pad(&member, self.member),
            pad(&name, self.name),
            terminal_safe(addresses)
        )
    }
}

/// Where the table's rows go: printed as they come (`--stream`), or held to the end.
pub enum IpsOut {
    /// The table's widths once its header is out.
    Streamed(Option<IpsTable>),
    Held(Vec<IpsRow>),
}

impl IpsOut {
    pub fn new(streamed: bool) -> IpsOut {
        match streamed {
            true => IpsOut::Streamed(None),
            false => IpsOut::Held(Vec::new()),
        }
    }

    /// Streamed, prints the header with the group column fitting `groups`, unless it is out.
    /// Held, nothing: the header waits for the rows.
    pub fn header_once<'a>(
        &mut self,
        out: &mut impl Write,
        groups: impl IntoIterator<Item = &'a str>,
    ) -> io::Result<()> {
        if let IpsOut::Streamed(table @ None) = self {
            let t = IpsTable::fitting(groups);
            writeln!(out, "{}", t.header())?;
            out.flush()?;
            *table = Some(t);
        }
        Ok(())
    }

    /// One row: printed now (with the header first if it is not out), or held.
    pub fn write(&mut self, out: &mut impl Write, row: IpsRow) -> io::Result<()> {
        match self {
            IpsOut::Streamed(table) => {
                let t = match table {
                    Some(t) => *t,
                    None => {
                        let t = IpsTable::fitting([row.group.as_str()]);
                        writeln!(out, "{}", t.header())?;
                        *table = Some(t);
                        t
                    }
                };
                writeln!(
                    out,
                    "{}",
                    t.row(&row.group, &row.member, &row.name, &row.addresses)
                )?;
                out.flush()
            }
            IpsOut::Held(rows) => {
                rows.push(row);
                Ok(())
            }
        }
    }

    /// The end: held rows are printed under a header fitting them all; a streamed table
    /// with no row yet gets its header (fitting `groups`), so the output is never empty.
    pub fn finish<'a>(
        self,
        out: &mut impl Write,
        groups: impl IntoIterator<Item = &'a str>,
    ) -> io::Result<()> {
        match self {
            IpsOut::Streamed(table @ None) => IpsOut::Streamed(table).header_once(out, groups),
            IpsOut::Streamed(Some(_)) => Ok(()),
            IpsOut::Held(rows) => {
                let t = IpsTable::fitting_rows(&rows);
                writeln!(out, "{}", t.header())?;
                for r in &rows {
                    writeln!(out, "{}", t.row(&r.group, &r.member, &r.name, &r.addresses))?;
                }
                out.flush()
            }
        }
    }
}

/// The widest of `texts` as printed (controls made visible), at least `title`, at most `max`.
fn widest<'a>(texts: impl IntoIterator<Item = &'a str>, title: &str, max: usize) -> usize {
    texts
        .into_iter()
        .map(|t| width(&terminal_safe(t)))
        .max()
        .unwrap_or(0)
        .clamp(title.len(), max)
}

/// A server's name cut to `w` columns keeping its end, the cut marked: servers of one group
/// share their start (`prod-east-workers-a-0m0dz479sdc2-node-`) and differ at the end.
fn end_kept(name: &str, w: usize) -> String {
    if width(name) <= w {
        return name.to_string();
    }
    let chars: Vec<char> = name.chars().collect();
    let kept = chars_fitting(chars.iter().rev().copied(), w.saturating_sub(1));
    let tail: String = chars[chars.len() - kept..].iter().collect();
    format!("…{tail}")
}

/// The blanks that bring `cell` to `w` columns.
fn pad(cell: &str, w: usize) -> String {
    " ".repeat(w.saturating_sub(width(cell)))
}

/// Terminal columns `text` takes (a wide character two).
fn width(text: &str) -> usize {
    Span::raw(text).width()
}

#[cfg(test)]
mod tests {
    use super::{IpsOut, IpsRow, IpsTable};

    fn row(group: &str, member: &str, name: &str, addresses: &str) -> IpsRow {
        IpsRow {
            group: group.into(),
            member: member.into(),
            name: name.into(),
            addresses: addresses.into(),
        }
    }

    fn printed(out: IpsOut, rows: Vec<IpsRow>) -> String {
        let mut out = out;
        let mut buf: Vec<u8> = Vec::new();
        for r in rows {
            out.write(&mut buf, r).expect("write");
        }
        out.finish(&mut buf, ["g"]).expect("finish");
        String::from_utf8(buf).expect("utf-8")
    }

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
        let (group, rest) = row.split_at(row.find(' ').expect("a blank"));
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
    fn held_rows_print_with_every_column_as_wide_as_what_it_holds() {
        let text = printed(
            IpsOut::new(false),
            vec![
                row("web/tier", "2", "web-2", "10.0.0.2"),
                row("web/tier", "10", "web-10", "10.0.0.10"),
            ],
        );
        // Before: the name column was 32 wide whatever it held, the member column 6.
        assert_eq!(
            text,
            "group    member  name   addresses\n\
             web/tier      2  web-2  10.0.0.2\n\
             web/tier     10  web-10 10.0.0.10\n"
        );
    }

    #[test]
    fn a_streamed_name_longer_than_its_column_is_cut_not_let_push_the_addresses() {
        let long = "a-very-long-server-name-that-runs-past-the-column-0123456789";
        let text = printed(IpsOut::new(true), vec![row("g", "1", long, "10.0.0.1")]);
        let lines: Vec<&str> = text.lines().collect();
        // In columns, not bytes (`…` is three bytes).
        let at = |l: &str| {
            let byte = l.find("10.0.0.1").or_else(|| l.find("addresses"));
            byte.map(|b| l[..b].chars().count())
        };
        assert_eq!(at(lines[0]), at(lines[1]), "{text}");
        // Cut keeping the end that tells one group's servers apart.
        assert!(
            lines[1].contains("…runs-past-the-column-0123456789 "),
            "{text}"
        );
        // Printed together, the column fits names up to 64 columns whole.
        let text = printed(IpsOut::new(false), vec![row("g", "1", long, "10.0.0.1")]);
        assert!(text.contains(long), "{text}");
    }

    #[test]
    fn with_no_row_the_header_is_still_printed_once() {
        assert_eq!(
            printed(IpsOut::new(false), vec![]),
            "group member  name addresses\n"
        );
        assert_eq!(
            printed(IpsOut::new(true), vec![]).lines().count(),
            1,
            "streamed"
        );
    }

    #[test]
    fn cells_never_carry_control_characters() {
        let t = IpsTable::fitting(["g\u{1b}[2J"]);
        let row = t.row("g\u{1b}[2J", "1\u{7}", "n\u{9b}", "10.0.0.1\u{1b}]52");
        assert!(!row.chars().any(char::is_control), "{row:?}");
    }
}
