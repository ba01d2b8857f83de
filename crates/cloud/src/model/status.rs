use serde::{Deserialize, Serialize};
use std::fmt;

/// The state half of an OpenStack status such as `UPDATE_IN_PROGRESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum StatusState {
    InProgress,
    Failed,
    Complete,
    /// Anything we do not recognise (e.g. `INIT_COMPLETE` parses, `SNAPSHOT` alone does not).
    Unknown,
}

/// A Heat or Magnum status: `ACTION_STATE`, kept with its raw text for display.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Status {
    pub action: String,
    pub state: StatusState,
    pub raw: String,
}

/// `42s`, `12m`, `3h`, `41d`: an age or a time in state, as the console and the CLI show it.
pub fn short_duration(secs: i64) -> String {
    let s = secs.max(0);
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m", s / 60)
    } else if s < 86_400 {
        format!("{}h", s / 3600)
    } else {
        format!("{}d", s / 86_400)
    }
}

impl Status {
    pub fn parse(raw: &str) -> Status {
        let raw = raw.trim();
        for (suffix, state) in [
            ("_IN_PROGRESS", StatusState::InProgress),
            ("_FAILED", StatusState::Failed),
            ("_COMPLETE", StatusState::Complete),
        ] {
            if let Some(action) = raw.strip_suffix(suffix) {
                return Status {
                    action: action.to_string(),
                    state,
                    raw: raw.to_string(),
                };
            }
        }
        Status {
            action: String::new(),
            state: StatusState::Unknown,
            raw: raw.to_string(),
        }
    }

    /// Heat reports a stack and a resource as `ACTION` + `STATUS` in separate fields.
    pub fn from_parts(action: &str, status: &str) -> Status {
        Status::parse(&format!("{action}_{status}"))
    }

    pub fn is_failed(&self) -> bool {
        self.state == StatusState::Failed
    }
    pub fn is_in_progress(&self) -> bool {
        self.state == StatusState::InProgress
    }
    pub fn is_complete(&self) -> bool {
        self.state == StatusState::Complete
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_states() {
        let s = Status::parse("UPDATE_IN_PROGRESS");
        assert_eq!(s.action, "UPDATE");
        assert_eq!(s.state, StatusState::InProgress);
        assert_eq!(Status::parse("CREATE_FAILED").state, StatusState::Failed);
        assert_eq!(Status::parse("CHECK_COMPLETE").action, "CHECK");
        assert_eq!(Status::parse("weird").state, StatusState::Unknown);
        assert_eq!(
            Status::from_parts("CREATE", "COMPLETE").raw,
            "CREATE_COMPLETE"
        );
    }
}
