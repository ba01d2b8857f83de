//! Text shared by the views' drawing: wrapping a line of cloud text to a width (the detail
//! views, the server view, the outputs and the Cluster API verdict all wrap with it).

use ratatui::text::Span;

/// `text` in lines of at most `width` columns, broken at spaces where it can be and inside
/// a word only when the word alone is wider than a line. Never drops a character.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let w = |s: &str| Span::raw(s).width();
    let mut out = Vec::new();
    // A traceback's indentation is kept on its first line.
    let body = text.trim_start_matches(' ');
    let mut line = " ".repeat((text.len() - body.len()).min(width / 2));
    // Whether `line` holds a word yet (else only the indentation).
    let mut has_word = false;
    for word in body.split(' ') {
        if has_word && w(&line) + 1 + w(word) <= width {
            line.push(' ');
            line.push_str(word);
            continue;
        }
        if has_word {
            out.push(std::mem::take(&mut line));
        }
        // A word longer than a line: cut it at the width.
        let mut rest = word;
        while w(rest) > width {
            let mut cut = 0;
            for (i, c) in rest.char_indices() {
                let end = i + c.len_utf8();
                if w(&rest[..end]) > width {
                    break;
                }
                cut = end;
            }
            if cut == 0 {
                // One character wider than the line (a wide glyph in 1 column).
                cut = rest.chars().next().map_or(rest.len(), char::len_utf8);
            }
            out.push(rest[..cut].to_string());
            rest = &rest[cut..];
        }
        line.push_str(rest);
        has_word = true;
    }
    out.push(line);
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_at_spaces_and_cuts_long_words_without_losing_text() {
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 5), [""]);
        assert_eq!(wrap("  File x", 20), ["  File x"]);
        let text = "No valid host was found. There are not enough hosts available.";
        let joined = wrap(text, 12).join(" ");
        assert_eq!(joined, text);
    }
}
