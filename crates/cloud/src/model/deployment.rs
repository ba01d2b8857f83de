//! Heat software deployments and configs, typed for the operations and the console.
//!
//! How Heat uses them: an `OS::Heat::SoftwareDeployment` (or `StructuredDeployment`, or one
//! per server of a `*DeploymentGroup`) makes a deployment row `{server_id, config_id, action,
//! status}` whenever its resource goes `IN_PROGRESS` for an action the config runs on (its
//! `actions` property: `CREATE`, `UPDATE` by default). The server's agent fetches its
//! deployments (`GET /software_deployments/metadata/{server_id}`), runs each config, and
//! signals back `deploy_status_code`, `deploy_stdout` and `deploy_stderr` over the config's
//! `deploy_signal_transport`. Until then the deployment stays `IN_PROGRESS`, and so does its
//! resource, until the stack times out. A non-zero code makes it `FAILED`.
//!
//! Everything here came from the cloud: a script's output can be megabytes, carry terminal
//! escapes or bytes that were never UTF-8. Each text is bounded and cleaned at the edge
//! ([`output_tail`], [`one_line`]), so nothing above this layer has to remember.

use super::server::clean_line;
use super::status::Status;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// Bytes of a deployment's stdout or stderr kept: the tail, where a script says why it ended.
pub const OUTPUT_TAIL_BYTES: usize = 4 * 1024;
/// Lines of stdout or stderr kept (of the tail above).
pub const OUTPUT_TAIL_LINES: usize = 40;
/// Characters kept of a one-line text from the cloud (a status reason, a name, an input).
pub const LINE_CHARS: usize = 400;
/// Bytes kept of a config's body (the script itself).
pub const CONFIG_BODY_BYTES: usize = 8 * 1024;

/// One deployment of a config to a server, as `GET /software_deployments/{id}` gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoftwareDeployment {
    pub id: String,
    pub server_id: String,
    pub config_id: String,
    /// Heat reports `action` (`CREATE`, `UPDATE`, `DELETE`, `SUSPEND`, `RESUME`) and `status`
    /// (`IN_PROGRESS`, `COMPLETE`, `FAILED`) apart; joined here as a resource's status is.
    pub status: Status,
    pub status_reason: Option<String>,
    pub created_at: Option<DateTime<Utc>>,
    /// When the row last changed: the agent's signal, or Heat starting a new action.
    pub updated_at: Option<DateTime<Utc>>,
    /// `deploy_status_code` as the agent reported it (absent until it signals).
    pub status_code: Option<i64>,
    /// The last lines of `deploy_stdout` / `deploy_stderr`, cleaned, oldest first.
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

impl SoftwareDeployment {
    /// Since when it has been in its current state (the last change, else its creation).
    pub fn since(&self) -> Option<DateTime<Utc>> {
        self.updated_at.or(self.created_at)
    }

    /// The last non-empty line of stderr, where a failing script usually says why.
    pub fn last_stderr_line(&self) -> Option<&str> {
        self.stderr
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| !l.is_empty())
    }
}

/// A config as `GET /software_configs/{id}` gives it. A deployment points at the config
/// Heat derived for it (the template's config plus `deploy_*` inputs), whose name is the
/// deployment resource's name in Heat's resources (`kube_minions-config` style names are
/// the template author's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoftwareConfig {
    pub id: String,
    pub name: Option<String>,
    /// The hook that runs it on the server: `script`, `ansible`, `puppet`, `Heat::Ungrouped`.
    pub group: String,
    /// Input names with their value when the config carries one (derived configs do).
    pub inputs: Vec<ConfigInput>,
    /// Output names the agent may report besides the `deploy_*` ones.
    pub outputs: Vec<String>,
    /// The start of the config body, cleaned line by line.
    pub config: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigInput {
    pub name: String,
    pub value: Option<String>,
}

impl SoftwareConfig {
    /// How the agent signals back: Heat adds the input `deploy_signal_transport`
    /// (`CFN_SIGNAL`, `TEMP_URL_SIGNAL`, `HEAT_SIGNAL`, `ZAQAR_SIGNAL`, `NO_SIGNAL`) to each
    /// config it derives for a deployment resource.
    pub fn signal_transport(&self) -> Option<&str> {
        self.input("deploy_signal_transport")
    }

    /// The value of the input `name`, when the config carries one.
    pub fn input(&self, name: &str) -> Option<&str> {
        self.inputs
            .iter()
            .find(|i| i.name == name)
            .and_then(|i| i.value.as_deref())
    }
}

/// The tail of a script's output fit for a terminal: at most [`OUTPUT_TAIL_BYTES`] of the
/// end, then at most [`OUTPUT_TAIL_LINES`] lines, each without escape sequences or other
/// control characters and cut at a line's length. A partial first line (cut by the byte
/// bound) is dropped unless it is the only one.
pub fn output_tail(raw: &str) -> Vec<String> {
    let mut start = raw.len().saturating_sub(OUTPUT_TAIL_BYTES);
    while !raw.is_char_boundary(start) {
        start += 1;
    }
    let cut = start > 0;
    let mut lines: Vec<String> = raw[start..].split('\n').map(clean_line).collect();
    if cut && lines.len() > 1 {
        lines.remove(0);
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let skip = lines.len().saturating_sub(OUTPUT_TAIL_LINES);
    lines.split_off(skip)
}

/// A one-line text from the cloud (a reason, a name): its first [`LINE_CHARS`] characters
/// with line breaks as spaces and every other control character or escape taken out.
pub fn one_line(raw: &str) -> String {
    let end = raw
        .char_indices()
        .nth(LINE_CHARS * 2)
        .map_or(raw.len(), |(i, _)| i);
    let joined = raw[..end].replace(['\n', '\r'], " ");
    let mut line = clean_line(&joined);
    if let Some((i, _)) = line.char_indices().nth(LINE_CHARS) {
        line.truncate(i);
    }
    line.trim().to_string()
}

/// The first [`CONFIG_BODY_BYTES`] of a config body, cleaned line by line.
pub fn config_head(raw: &str) -> Vec<String> {
    let mut end = raw.len().min(CONFIG_BODY_BYTES);
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    raw[..end].lines().map(clean_line).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::text::is_unsafe_char;

    #[test]
    fn megabytes_of_output_keep_a_bounded_tail() {
        let raw: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
        assert!(raw.len() > 1_000_000);
        let tail = output_tail(&raw);
        assert_eq!(tail.len(), OUTPUT_TAIL_LINES);
        assert_eq!(tail.last().map(String::as_str), Some("line 199999"));
        assert!(tail.iter().map(String::len).sum::<usize>() <= OUTPUT_TAIL_BYTES);
        // One endless line: cut to a line's length, not dropped.
        let long = "x".repeat(3_000_000);
        let tail = output_tail(&long);
        assert_eq!(tail.len(), 1);
        assert!(tail[0].len() <= OUTPUT_TAIL_BYTES && !tail[0].is_empty());
    }

    #[test]
    fn escape_sequences_and_controls_are_taken_out() {
        let raw = "ok\r\n\u{1b}[31mError:\u{1b}[0m disk full\u{7}\n\u{1b}]0;pwned\u{7}\u{9b}2J\u{202e}gnp\n";
        let tail = output_tail(raw);
        assert_eq!(tail, ["ok", "Error: disk full", "2Jgnp"]);
        let hostile: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        for l in output_tail(&hostile)
            .iter()
            .chain([one_line(&hostile)].iter())
        {
            assert!(!l.chars().any(is_unsafe_char), "{l:?}");
        }
        assert_eq!(one_line("a\nb\u{1b}[2Jc\r\n"), "a bc");
        assert!(one_line(&"é".repeat(10_000)).chars().count() <= LINE_CHARS);
        let head = config_head(&"#!/bin/sh\n".repeat(10_000));
        assert!(head.iter().map(|l| l.len() + 1).sum::<usize>() <= CONFIG_BODY_BYTES + 1);
    }

    #[test]
    fn the_last_stderr_line_skips_blank_ones() {
        let d = SoftwareDeployment {
            id: "d".into(),
            server_id: "s".into(),
            config_id: "c".into(),
            status: Status::from_parts("CREATE", "FAILED"),
            status_reason: None,
            created_at: None,
            updated_at: None,
            status_code: Some(2),
            stdout: vec![],
            stderr: output_tail("first\nmkfs: /dev/vdb: no such device\n  \n"),
        };
        assert_eq!(d.last_stderr_line(), Some("mkfs: /dev/vdb: no such device"));
    }
}
