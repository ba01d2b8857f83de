//! Copy to the clipboard of the operator's terminal with OSC 52: `ESC ] 52 ; c ; <base64> BEL`
//! asks the terminal (xterm, kitty, WezTerm, iTerm2, foot, Windows Terminal…) to put the
//! decoded text on the system clipboard. It works over ssh, since the terminal on the
//! operator's desk does the copying; tmux passes it on with `set -g set-clipboard on`.
//!
//! The text comes from the cloud (names, reasons), so it is cleaned first: no control
//! characters (a newline pasted into a shell runs the line), no bidi overrides (pasted, they
//! make a command read otherwise than it runs) and a bounded length (a terminal drops, or
//! chokes on, a huge sequence).

/// The most text one copy carries, in bytes (the sequence is a third longer).
pub const MAX_BYTES: usize = 16 * 1024;

/// What one copy puts on the clipboard: the cleaned text and whether it was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clip {
    pub text: String,
    pub cut: bool,
}

impl Clip {
    /// `raw` without control characters or bidi overrides (tabs and line breaks become
    /// spaces), trimmed,
    /// and cut at a character boundary to [`MAX_BYTES`].
    pub fn new(raw: &str) -> Clip {
        let clean: String = raw
            .chars()
            .map(|c| if c.is_whitespace() { ' ' } else { c })
            .filter(|c| !c.is_control() && !caldera_cloud::model::text::is_unsafe_char(*c))
            .collect();
        let clean = clean.trim();
        let mut end = clean.len().min(MAX_BYTES);
        while !clean.is_char_boundary(end) {
            end -= 1;
        }
        Clip {
            text: clean[..end].to_string(),
            cut: end < clean.len(),
        }
    }

    /// The escape sequence that puts the text on the clipboard (`c`: the clipboard
    /// selection; BEL ends it, which more terminals accept than ST).
    pub fn osc52(&self) -> String {
        format!("\x1b]52;c;{}\x07", base64(self.text.as_bytes()))
    }
}

/// Standard base64 (RFC 4648, with padding), as OSC 52 wants it.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648() {
        // The test vectors of RFC 4648, section 10.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain:?}");
        }
        assert_eq!(base64("prod-east".as_bytes()), "cHJvZC1lYXN0");
        assert_eq!(base64(&[0xff, 0xfe]), "//4=");
    }

    #[test]
    fn the_sequence_carries_clean_text() {
        let clip = Clip::new("10.0.0.5");
        assert_eq!(clip.osc52(), "\x1b]52;c;MTAuMC4wLjU=\x07");
        // A reason from the cloud with an escape, a bell and a line break: what is pasted
        // into a shell is one line without control characters.
        let clip = Clip::new(" bad\x1b[2J name\x07\nrm -rf /\r ");
        assert_eq!(clip.text, "bad[2J name rm -rf /");
        assert!(!clip.cut);
        assert!(!clip.osc52()[1..clip.osc52().len() - 1]
            .chars()
            .any(|c| c.is_control()));
    }

    /// A right-to-left override or an isolate makes pasted text read otherwise than it
    /// runs: none reaches the clipboard (C1 neither).
    #[test]
    fn bidi_overrides_never_reach_the_clipboard() {
        let clip = Clip::new("rm \u{202e}fl- \u{2066}x\u{2069}\u{202a}\u{9b}y");
        assert_eq!(clip.text, "rm fl- xy");
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let clip = Clip::new(&"é".repeat(MAX_BYTES));
        assert!(clip.cut);
        assert!(clip.text.len() <= MAX_BYTES && clip.text.len() > MAX_BYTES - 2);
        assert!(clip.text.chars().all(|c| c == 'é'));
        assert!(!Clip::new(&"x".repeat(MAX_BYTES)).cut);
    }
}
