//! Sort keys and the sort state (which column, which direction).

use std::cmp::Ordering;

/// A column's value for sorting. Missing values sort last in either direction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SortKey {
    Int(i64),
    Str(String),
    Missing,
}

impl SortKey {
    pub fn str(s: &str) -> SortKey {
        SortKey::Str(s.to_lowercase())
    }
    pub fn opt_int(v: Option<i64>) -> SortKey {
        v.map(SortKey::Int).unwrap_or(SortKey::Missing)
    }
    pub fn opt_str(v: Option<&str>) -> SortKey {
        v.map(SortKey::str).unwrap_or(SortKey::Missing)
    }
}

/// Compare two keys in a direction, keeping missing values last.
pub fn compare(a: &SortKey, b: &SortKey, descending: bool) -> Ordering {
    match (a, b) {
        (SortKey::Missing, SortKey::Missing) => Ordering::Equal,
        (SortKey::Missing, _) => Ordering::Greater,
        (_, SortKey::Missing) => Ordering::Less,
        _ if descending => b.cmp(a),
        _ => a.cmp(b),
    }
}

/// `None` keeps the data's own order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SortState {
    pub column: Option<usize>,
    pub descending: bool,
}

impl SortState {
    /// Next column: none -> 0 -> 1 -> ... -> last -> none.
    pub fn cycle(&mut self, columns: usize) {
        self.column = match self.column {
            None if columns > 0 => Some(0),
            Some(c) if c + 1 < columns => Some(c + 1),
            _ => None,
        };
    }
    pub fn reverse(&mut self) {
        self.descending = !self.descending;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_sorts_last_both_ways() {
        let mut v = vec![SortKey::Int(2), SortKey::Missing, SortKey::Int(1)];
        v.sort_by(|a, b| compare(a, b, false));
        assert_eq!(v, vec![SortKey::Int(1), SortKey::Int(2), SortKey::Missing]);
        v.sort_by(|a, b| compare(a, b, true));
        assert_eq!(v, vec![SortKey::Int(2), SortKey::Int(1), SortKey::Missing]);
    }

    #[test]
    fn cycle_wraps_to_unsorted() {
        let mut s = SortState::default();
        s.cycle(2);
        assert_eq!(s.column, Some(0));
        s.cycle(2);
        assert_eq!(s.column, Some(1));
        s.cycle(2);
        assert_eq!(s.column, None);
    }
}
