//! Plain output for headless commands: aligned tables, JSON lines/arrays, CSV.
//!
//! Table and CSV cells go through [`terminal_safe`]: they are read on a terminal, and a
//! cell holds text from the cloud (names, reasons). JSON is built from the raw values and
//! stays exact (serde_json escapes control characters itself).

use crate::model::{terminal_safe, StackEvent};
use std::io::{self, Write};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
    Csv,
}

/// A simple table: header plus rows of cells, printed with aligned columns.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns whose cells are counts: JSON gives them as numbers (an empty cell as null).
    numeric: Vec<bool>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        Table {
            numeric: vec![false; header.len()],
            header,
            rows: Vec::new(),
        }
    }

    /// Marks the named columns as counts (see [`Table::json_value`]).
    pub fn numbers(mut self, columns: &[&str]) -> Self {
        for (i, h) in self.header.iter().enumerate() {
            if columns.contains(&h.as_str()) {
                self.numeric[i] = true;
            }
        }
        self
    }

    /// A cell as JSON: a count column's integer as a number (`"masters": 3`, which a script
    /// can compare), its empty cell as null; everything else as the string it is.
    pub fn json_value(&self, column: usize, cell: &str) -> serde_json::Value {
        if !self.numeric.get(column).copied().unwrap_or(false) {
            return serde_json::Value::String(cell.to_string());
        }
        if cell.is_empty() {
            return serde_json::Value::Null;
        }
        cell.parse::<i64>()
            .map(serde_json::Value::from)
            .unwrap_or_else(|_| serde_json::Value::String(cell.to_string()))
    }

    pub fn push<S: Into<String>>(&mut self, row: impl IntoIterator<Item = S>) {
        self.rows.push(row.into_iter().map(Into::into).collect());
    }

    pub fn write_aligned(&self, out: &mut impl Write) -> io::Result<()> {
        let cols = self.header.len();
        let safe = |row: &[String]| -> Vec<String> {
            row.iter().map(|c| terminal_safe(c).into_owned()).collect()
        };
        let header = safe(&self.header);
        let rows: Vec<Vec<String>> = self.rows.iter().map(|r| safe(r)).collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        write_row(out, &header, &widths)?;
        for row in &rows {
            write_row(out, row, &widths)?;
        }
        Ok(())
    }

    pub fn write_csv(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "{}", csv_line(&self.header))?;
        for row in &self.rows {
            writeln!(out, "{}", csv_line(row))?;
        }
        Ok(())
    }
}

fn write_row(out: &mut impl Write, cells: &[String], widths: &[usize]) -> io::Result<()> {
    let mut line = String::new();
    for (i, width) in widths.iter().enumerate() {
        let cell = cells.get(i).map(String::as_str).unwrap_or("");
        if i + 1 == widths.len() {
            line.push_str(cell);
        } else {
            line.push_str(cell);
            let pad = width.saturating_sub(cell.chars().count()) + 2;
            line.extend(std::iter::repeat_n(' ', pad));
        }
    }
    writeln!(out, "{}", line.trim_end())
}

/// Whether standard output is a pipe whose reading end has closed, or a terminal that hung
/// up. A follower asks between polls (`caldera events --follow | head -1`): it ends when its
/// reader does, not at its next write, which may be hours away on a quiet stack (as
/// `tail -f` does). A file or a live terminal is never "gone".
pub fn stdout_reader_gone() -> bool {
    let mut pfd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd on the stack, a zero timeout; poll only writes `revents`.
    let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
    ready > 0 && pfd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

/// Sleeps for `d`, looking every half second whether stdout's reader has gone; a gone reader
/// is a closed pipe, which `main` ends quietly with success.
pub async fn sleep_while_read(d: Duration) -> io::Result<()> {
    const LOOK: Duration = Duration::from_millis(500);
    let until = tokio::time::Instant::now() + d;
    loop {
        if stdout_reader_gone() {
            return Err(io::Error::from(io::ErrorKind::BrokenPipe));
        }
        let now = tokio::time::Instant::now();
        if now >= until {
            return Ok(());
        }
        tokio::time::sleep((until - now).min(LOOK)).await;
    }
}

/// Whether `e` (or what caused it) is a write to a closed pipe: `caldera events | head`
/// has printed what was wanted, so the command ends quietly with success.
pub fn is_closed_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        if let Some(json) = err.downcast_ref::<serde_json::Error>() {
            if json.io_error_kind() == Some(io::ErrorKind::BrokenPipe) {
                return true;
            }
        }
        cur = err.source();
    }
    false
}

/// One CSV line (RFC 4180 quoting) of terminal-safe cells: a newline inside a cell is
/// written `\n`, so each record is one line.
pub fn csv_line(cells: &[String]) -> String {
    cells
        .iter()
        .map(|c| {
            let c = terminal_safe(c);
            if c.contains([',', '"']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What every headless command returns; the error is printed on stderr by `main`.
pub type CmdResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Lines on stdout, each made terminal-safe (they quote the cloud: shown, never obeyed).
pub fn print_lines(lines: &[String]) -> CmdResult {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for l in lines {
        writeln!(out, "{}", crate::model::terminal_safe(l))?;
    }
    out.flush()?;
    Ok(())
}

/// One event as a line of `caldera events` (and `--follow`) in the chosen format.
pub fn event_line(e: &StackEvent, format: Format) -> String {
    let time = e.time.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let path = e.display_path();
    let reason = e.status_reason.clone().unwrap_or_default();
    match format {
        Format::Table => format!(
            "{time}  {:<22}  {}  {}",
            terminal_safe(&e.status.raw),
            terminal_safe(&path),
            terminal_safe(&reason)
        ),
        Format::Csv => csv_line(&[time, e.id.clone(), path, e.status.raw.clone(), reason]),
        Format::Json => caldera_cloud::model::json_string(&serde_json::json!({
            "time": time,
            "id": e.id,
            "path": e.path,
            "resource_name": e.resource_name,
            "status": e.status.raw,
            "reason": e.status_reason,
            "stack_id": e.stack.as_ref().map(|s| s.id.clone()),
        }))
        // A `Value` always serializes.
        .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns_and_quotes_csv() {
        let mut t = Table::new(["name", "ip"]);
        t.push(["node-1", "10.0.0.1"]);
        t.push(["n,2", "10.0.0.22"]);
        let mut buf = Vec::new();
        t.write_aligned(&mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(text, "name    ip\nnode-1  10.0.0.1\nn,2     10.0.0.22\n");
        let mut buf = Vec::new();
        t.write_csv(&mut buf).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "name,ip\nnode-1,10.0.0.1\n\"n,2\",10.0.0.22\n"
        );
    }

    #[test]
    fn cells_from_the_cloud_cannot_drive_the_terminal() {
        let mut t = Table::new(["name", "reason"]);
        t.push(["a\x1b[2J", "x\x1b]0;pwned\x07\nsecond, line"]);
        let mut buf = Vec::new();
        t.write_aligned(&mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(
            text,
            "name    reason\na\\e[2J  x\\e]0;pwned\\x07\\nsecond, line\n"
        );
        let mut buf = Vec::new();
        t.write_csv(&mut buf).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "name,reason\na\\e[2J,\"x\\e]0;pwned\\x07\\nsecond, line\"\n"
        );
    }
}
