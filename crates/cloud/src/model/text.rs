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
//! Machine output (JSON) does not use it: serde_json escapes control characters itself
//! and the value stays exact.

use std::borrow::Cow;

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

#[cfg(test)]
mod tests {
    use super::*;

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
