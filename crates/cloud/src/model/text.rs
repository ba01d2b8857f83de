//! Text from outside (the cloud, config files, hook output) made safe for a terminal.
//!
//! Anyone who can name a Heat resource, write a failure reason or a Magnum status can put
//! bytes in front of the operator. A terminal obeys some of them: `ESC [2J` wipes the
//! screen, `ESC ]0;… BEL` sets the window title, C1 `U+009B` is a one-byte CSI on many
//! terminals, a bare CR rewrites the start of a line, and the bidi overrides (U+202E…)
//! make a name read backwards (the "trojan source" trick). ratatui does not filter them
//! when it draws a `Span`, and `println!` certainly does not.
//!
//! [`terminal_safe`] is the one function every display path uses: each such character is
//! shown as a visible escape (`\e`, `\x07`, `\u{202e}`, and `\n`, `\r`, `\t`), so the
//! operator sees what the cloud sent instead of being steered by it. Everything else,
//! including a backslash, is unchanged, so ordinary names look exactly as they are.
//! Machine output (JSON) does not use it: the value must stay exact. serde_json escapes
//! C0 controls itself but writes DEL, C1 (a one-byte CSI) and the bidi overrides raw, and
//! `caldera stacks --format json` is read on a terminal as often as by `jq`: every
//! `--format json` output goes through [`json_string`] / [`json_string_pretty`], which
//! escape those as `\uXXXX` too (the same data for any JSON reader, inert on a terminal).

use std::borrow::Cow;
use std::io;
use unicode_width::UnicodeWidthStr;

/// Whether `c` must not reach a terminal as it is.
pub fn is_unsafe_char(c: char) -> bool {
    matches!(c,
        // C0 (incl. ESC, BEL, CR, LF, TAB), DEL, C1.
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Bidi embeddings and overrides (LRE RLE PDF LRO RLO) and isolates (LRI RLI FSI PDI).
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every control character and bidi override shown as a visible escape, on one
/// line (a newline becomes `\n`). Borrows when there is nothing to escape, which is
/// nearly always.
///
/// For multi-line text (a hook's output in a dialog) split into lines first and pass each
/// line through this function.
pub fn terminal_safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_unsafe_char(c) {
            out.push(c);
            continue;
        }
        match c {
            '\u{1b}' => out.push_str("\\e"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Multi-line text (an error that spans lines, a hook's output): each line through
/// [`terminal_safe`], the line breaks kept (a CR is still shown as `\r`).
pub fn terminal_safe_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_unsafe_char(c)) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.split('\n')
            .map(terminal_safe)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// A serde_json formatter that also writes DEL, C1 and bidi overrides as `\uXXXX` (serde_json
/// escapes C0 before a fragment reaches [`serde_json::ser::Formatter::write_string_fragment`]).
struct TerminalSafe<F>(F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for TerminalSafe<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_unsafe_char(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
    // The layout is the inner formatter's (compact or pretty).
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Writes `value` as JSON to `out` (pretty: indented), with nothing a terminal obeys in it:
/// the one JSON writer of every `--format json` output.
pub fn write_json<W: io::Write, T: serde::Serialize + ?Sized>(
    out: W,
    value: &T,
    pretty: bool,
) -> serde_json::Result<()> {
    if pretty {
        let f = TerminalSafe(serde_json::ser::PrettyFormatter::new());
        value.serialize(&mut serde_json::Serializer::with_formatter(out, f))
    } else {
        let f = TerminalSafe(serde_json::ser::CompactFormatter);
        value.serialize(&mut serde_json::Serializer::with_formatter(out, f))
    }
}

/// `value` as one line of JSON, terminal-safe (see [`write_json`]).
pub fn json_string<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    write_json(&mut out, value, false)?;
    // The serializer writes UTF-8 only; an error here cannot happen, but is not a panic.
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

/// `value` as indented JSON, terminal-safe (see [`write_json`]).
pub fn json_string_pretty<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    write_json(&mut out, value, true)?;
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

// Text cut to the columns a table gives it: the console's cells and the command line's
// tables cut the same way.

/// How a path is spelled in the views (`kube_minions > 406 > kube-minion`).
pub const PATH_SEP: &str = " > ";

/// `text` cut to `width` columns, the cut marked `…`. A resource path (spelled with
/// `PATH_SEP`, ` > `) keeps its end: the member and the resource are what tell its rows apart
/// (`…406 > kube-minion`, `…406 > kube-port`), the group they share is what goes. So does
/// an action's target (`prod-east/workers-a/17`: one word of `/`-separated names), whose
/// member is at its end. So does a Heat status (`UPDATE_IN_PROGRESS` → `…IN_PROGRESS`): its
/// state (in progress, complete, failed) is what an operator reads it for. Any other text
/// keeps its start.
pub fn cut_marked(text: String, width: usize) -> String {
    if text.as_str().width() <= width {
        return text;
    }
    if width == 0 {
        return String::new();
    }
    // A status too long keeps its state whole (`…COMPLETE`, not `…TE_COMPLETE`).
    if is_heat_status(&text) {
        let state = heat_state(&text);
        if state.len() < width {
            return format!("…{state}");
        }
    }
    let at_end = text.contains(PATH_SEP)
        || (text.contains('/') && !text.chars().any(char::is_whitespace))
        || is_heat_status(&text);
    // A nested path's indentation goes first, unmarked: it is layout, not a name.
    let text = if at_end && text.starts_with(' ') {
        let names = text.trim_start();
        if names.width() <= width {
            return names.to_string();
        }
        names.to_string()
    } else {
        text
    };
    let room = width - 1;
    let chars: Vec<char> = text.chars().collect();
    let kept = if at_end {
        chars_fitting(chars.iter().rev().copied(), room)
    } else {
        chars_fitting(chars.iter().copied(), room)
    };
    if at_end {
        let tail: String = chars[chars.len() - kept..].iter().collect();
        format!("…{tail}")
    } else {
        let head: String = chars[..kept].iter().collect();
        format!("{head}…")
    }
}

/// Whether `text` is one Heat (or Magnum) status, `ACTION_STATE`: an action in capitals
/// (`UPDATE`, `ROLLBACK`, `CHECK`) and one of Heat's three states.
pub fn is_heat_status(text: &str) -> bool {
    let status = super::status::Status::parse(text);
    status.state != super::status::StatusState::Unknown
        && status.raw == text
        && !status.action.is_empty()
        && status.action.chars().all(|c| c.is_ascii_uppercase())
}

/// The state half of a Heat status (`IN_PROGRESS` of `UPDATE_IN_PROGRESS`).
pub fn heat_state(status: &str) -> &'static str {
    match super::status::Status::parse(status).state {
        super::status::StatusState::InProgress => "IN_PROGRESS",
        super::status::StatusState::Complete => "COMPLETE",
        super::status::StatusState::Failed => "FAILED",
        super::status::StatusState::Unknown => "",
    }
}

/// How many of `chars`, in the order given, fit in `room` columns (a wide character counts
/// two; one that would cross the edge stops the count).
pub fn chars_fitting(chars: impl Iterator<Item = char>, room: usize) -> usize {
    let mut buf = [0u8; 4];
    let mut used = 0usize;
    chars
        .take_while(|c| {
            used += c.encode_utf8(&mut buf).width();
            used <= room
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status cut keeps its state: `UPDATE…` (before) could be in progress, failed or
    /// complete; `…IN_PROGRESS` cannot.
    #[test]
    fn a_heat_status_cut_keeps_its_state() {
        assert_eq!(cut_marked("UPDATE_IN_PROGRESS".into(), 12), "…IN_PROGRESS");
        assert_eq!(cut_marked("CREATE_FAILED".into(), 8), "…FAILED");
        assert_eq!(cut_marked("ROLLBACK_COMPLETE".into(), 12), "…COMPLETE");
        // Narrower than its state: the state's end, marked.
        assert_eq!(cut_marked("UPDATE_IN_PROGRESS".into(), 6), "…GRESS");
        // Not a status: text keeps its start.
        assert_eq!(cut_marked("Update in progress".into(), 8), "Update …");
        assert_eq!(cut_marked("my_COMPLETE".into(), 6), "my_CO…");
    }

    /// C1 (a one-byte CSI), DEL and every bidi override are `\uXXXX` in JSON, as C0 is; the
    /// value read back is exact, and the layout is serde_json's own.
    #[test]
    fn json_escapes_what_a_terminal_obeys_and_reads_back_exact() {
        let raw = "evil\x1b[2J\u{9b}31m\u{85}\u{202e}gnp\u{2066}x\u{2069}\x7f é→🦀";
        let v = serde_json::json!({"name": raw, "n": [1, 2]});
        let one = json_string(&v).unwrap();
        assert_eq!(
            one,
            "{\"n\":[1,2],\"name\":\"evil\\u001b[2J\\u009b31m\\u0085\\u202egnp\\u2066x\\u2069\\u007f é→🦀\"}"
        );
        let pretty = json_string_pretty(&v).unwrap();
        assert_eq!(
            pretty.lines().count(),
            serde_json::to_string_pretty(&v).unwrap().lines().count()
        );
        for text in [&one, &pretty] {
            assert!(
                !text.chars().any(|c| c != '\n' && is_unsafe_char(c)),
                "{text}"
            );
            let back: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(back["name"], raw);
        }
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in ["prod-east", "ノード-1 ✓", "C:\\path\\e", "", "a b"] {
            assert!(
                matches!(terminal_safe(s), Cow::Borrowed(b) if b == s),
                "{s}"
            );
        }
    }

    #[test]
    fn escapes_are_visible_and_carry_no_control_characters() {
        let cases = [
            ("a\x1b[2Jb", "a\\e[2Jb"),
            ("\x1b]0;pwned\x07", "\\e]0;pwned\\x07"),
            ("one\ntwo\r\tx", "one\\ntwo\\r\\tx"),
            ("\x00\x7f", "\\x00\\x7f"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("\u{85}", "\\u{85}"),
            ("evil\u{202e}gnp.exe", "evil\\u{202e}gnp.exe"),
            ("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}"),
        ];
        for (raw, shown) in cases {
            let safe = terminal_safe(raw);
            assert_eq!(safe, shown, "{raw:?}");
            assert!(!safe.chars().any(is_unsafe_char), "{safe:?}");
        }
    }

    #[test]
    fn multi_line_text_keeps_its_line_breaks_only() {
        assert!(matches!(terminal_safe_lines("a\nb"), Cow::Borrowed("a\nb")));
        assert_eq!(terminal_safe_lines("a\x1b[2J\nb\r\n"), "a\\e[2J\nb\\r\n");
    }

    #[test]
    fn every_unsafe_character_is_escaped() {
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            let s = c.to_string();
            let safe = terminal_safe(&s);
            assert!(!safe.chars().any(is_unsafe_char), "{c:?} -> {safe:?}");
            assert_eq!(safe == s, !is_unsafe_char(c), "{c:?}");
        }
    }
}
