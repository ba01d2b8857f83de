//! `/` filters: substring (case-insensitive), `re:REGEX` (case-insensitive), `!` inverts.

use regex::{Regex, RegexBuilder};

#[derive(Debug, Clone)]
enum Matcher {
    Substring(String),
    Regex(Regex),
}

/// A parsed filter. An empty filter matches everything; an invalid regex matches
/// everything and carries the error for display.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    raw: String,
    matcher: Option<Matcher>,
    inverse: bool,
    error: Option<String>,
}

impl Filter {
    pub fn parse(raw: &str) -> Filter {
        let mut f = Filter {
            raw: raw.to_string(),
            ..Filter::default()
        };
        let mut text = raw.trim();
        if let Some(rest) = text.strip_prefix('!') {
            f.inverse = true;
            text = rest.trim_start();
        }
        if text.is_empty() {
            f.inverse = false;
            return f;
        }
        if let Some(pattern) = text.strip_prefix("re:") {
            match RegexBuilder::new(pattern)
                .case_insensitive(true)
                .size_limit(1 << 20)
                .build()
            {
                Ok(re) => f.matcher = Some(Matcher::Regex(re)),
                Err(e) => {
                    let msg = e.to_string();
                    let last = msg
                        .lines()
                        .last()
                        .unwrap_or("invalid regex")
                        .trim()
                        .to_string();
                    f.error = Some(last);
                    f.inverse = false;
                }
            }
        } else {
            f.matcher = Some(Matcher::Substring(text.to_lowercase()));
        }
        f
    }

    pub fn raw(&self) -> &str {
        &self.raw
    }

    pub fn is_active(&self) -> bool {
        self.matcher.is_some()
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    pub fn is_regex(&self) -> bool {
        matches!(self.matcher, Some(Matcher::Regex(_)))
    }

    pub fn is_inverse(&self) -> bool {
        self.inverse
    }

    /// Whether a row's text passes the filter.
    pub fn matches(&self, text: &str) -> bool {
        let hit = match &self.matcher {
            None => return true,
            Some(Matcher::Substring(needle)) => {
                if text.is_ascii() && needle.is_ascii() {
                    contains_ignore_ascii_case(text, needle)
                } else {
                    text.to_lowercase().contains(needle.as_str())
                }
            }
            Some(Matcher::Regex(re)) => re.is_match(text),
        };
        hit != self.inverse
    }
}

fn contains_ignore_ascii_case(hay: &str, needle_lower: &str) -> bool {
    let h = hay.as_bytes();
    let n = needle_lower.as_bytes();
    if n.is_empty() {
        return true;
    }
    if n.len() > h.len() {
        return false;
    }
    h.windows(n.len())
        .any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substring_is_case_insensitive() {
        let f = Filter::parse("Failed");
        assert!(f.is_active());
        assert!(f.matches("UPDATE_FAILED"));
        assert!(!f.matches("UPDATE_COMPLETE"));
    }

    #[test]
    fn inverse_substring() {
        let f = Filter::parse("!complete");
        assert!(f.is_inverse());
        assert!(f.matches("UPDATE_FAILED"));
        assert!(!f.matches("UPDATE_COMPLETE"));
    }

    #[test]
    fn regex_and_inverse_regex() {
        let f = Filter::parse("re:^node-(1|2)$");
        assert!(f.is_regex());
        assert!(f.matches("NODE-1"));
        assert!(!f.matches("node-3"));
        let f = Filter::parse("!re:_(failed|in_progress)");
        assert!(f.matches("CREATE_COMPLETE"));
        assert!(!f.matches("UPDATE_IN_PROGRESS"));
    }

    #[test]
    fn bad_regex_matches_all_with_error() {
        let f = Filter::parse("re:([");
        assert!(f.error().is_some());
        assert!(!f.is_active());
        assert!(f.matches("anything"));
    }

    #[test]
    fn empty_and_lone_bang_match_all() {
        assert!(!Filter::parse("").is_active());
        assert!(Filter::parse("!").matches("x"));
        assert!(Filter::parse("é").matches("CAFÉ"));
    }
}
