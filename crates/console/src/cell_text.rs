//! Cloud text made fit for one table cell or one saved line: the first line of a reason, an
//! event's resource path indented by its nesting. Shared by the columns, the event tail and the
//! saved event files, so it sits below all of them.

use crate::model::{terminal_safe, StackEvent};

/// The first line of an optional text, with control characters made visible.
pub fn first_line(s: Option<&str>) -> String {
    s.map(|s| terminal_safe(s.lines().next().unwrap_or("")).into_owned())
        .unwrap_or_default()
}

/// `  nodes > 17 > server` with two spaces per nesting level.
pub fn event_path(e: &StackEvent) -> String {
    format!("{}{}", "  ".repeat(e.path.len()), e.display_path())
}
