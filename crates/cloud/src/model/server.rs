//! One Nova server as `openstack server show` shows it: the node detail of the console.
//!
//! Every node of a Heat node group, of a Magnum cluster on Heat and of a Cluster API cluster
//! is in the end a Nova server. When a node is stuck or failed, the answer is usually on the
//! server: its `fault` (Nova's reason for ERROR, e.g. `No valid host was found`, with the
//! traceback in `details` for admins), its `task_state` (`scheduling`, `spawning`,
//! `block_device_mapping` while it builds), its `power_state`, the compute host it landed on
//! (`OS-EXT-SRV-ATTR:host`, admin only) and the last lines its console printed
//! (`os-getConsoleOutput`: cloud-init, kubelet, a kernel panic).

use super::NodeKey;
use chrono::{DateTime, Utc};

/// Which server to show: a node and what is known of its server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTarget {
    /// The node the detail was opened from (the console keys the fetch by it).
    pub key: NodeKey,
    /// The node's display name (the server name when Nova named it, else the member name).
    pub name: String,
    /// The server id, when the node listing knew it (Cluster API nodes).
    pub server_id: Option<String>,
    /// The member's nested stack (a Heat member whose server sits inside it).
    pub member_stack: Option<String>,
    /// The node group's stack (a Heat member that is itself the server resource).
    pub group_stack: Option<String>,
}

impl ServerTarget {
    /// The server of `node`, a member of the node group whose stack is `group_stack`.
    pub fn of_node(node: &super::Node, group_stack: Option<String>) -> ServerTarget {
        ServerTarget {
            key: node.key.clone(),
            name: node.name.clone(),
            server_id: node.server_id.clone(),
            member_stack: node.stack_id.clone(),
            group_stack,
        }
    }
}

/// Nova's record of why a server went to ERROR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFault {
    pub code: Option<u16>,
    pub message: String,
    /// The traceback, shown to admins only (Nova's policy); may span many lines.
    pub details: Option<String>,
    pub created: Option<DateTime<Utc>>,
}

/// One address of a server on one network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerAddr {
    pub network: String,
    pub addr: String,
    /// `fixed`, `floating`, or empty when Nova did not say.
    pub kind: String,
}

/// The tail of the server's console log, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsoleTail {
    /// The last lines, oldest first, with control characters already taken out.
    Lines(Vec<String>),
    /// Nova refused (policy 403, not ready 409, no console 501...) or was not asked.
    Unavailable(String),
}

/// A server's detail, typed for the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDetail {
    pub id: String,
    pub name: String,
    pub status: String,
    pub task_state: Option<String>,
    pub vm_state: Option<String>,
    /// Nova's power state in words (`running`, `shutdown`, `crashed`...).
    pub power_state: Option<String>,
    /// The compute host (admin-only field; absent for other roles).
    pub host: Option<String>,
    pub zone: Option<String>,
    /// The flavor's name (embedded from microversion 2.47) or its id.
    pub flavor: Option<String>,
    pub image: Option<String>,
    /// The image's name, when `image` is an id Nova's image proxy could name.
    pub image_name: Option<String>,
    pub fault: Option<ServerFault>,
    pub addresses: Vec<ServerAddr>,
    pub created: Option<DateTime<Utc>>,
    pub updated: Option<DateTime<Utc>>,
    pub console: ConsoleTail,
    /// The server's software deployments (Heat's `GET /software_deployments?server_id=`):
    /// where a node's configuration stands, and why it is stuck when its agent never
    /// signalled or its script failed.
    pub deployments: ServerDeployments,
}

/// A server's software deployments as the node detail lists them, or why they are not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerDeployments {
    /// Heat was not asked (a cloud without Heat's software-config API, or not yet).
    NotRead(String),
    Read(Vec<ServerDeployment>),
}

/// One software deployment of a server, judged (in core) against its siblings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDeployment {
    /// Its config's name, or the deployment resource's path where known, else the config id.
    pub name: String,
    pub id: String,
    /// The action it ran for (`CREATE`, `UPDATE`, ...).
    pub action: String,
    /// The verdict in words: `complete (signalled in 35s)`, `waiting for a signal for 4h15m
    /// (siblings signalled in 30s-40s); transport HEAT_SIGNAL`, `failed, code 2: …`.
    pub verdict: String,
    pub state: DeploymentState,
    /// The last lines of the script's stderr, cleaned and bounded, oldest first.
    pub stderr: Vec<String>,
}

/// How a deployment is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeploymentState {
    Complete,
    Waiting,
    /// Waiting well past its siblings: the likely cause of a stuck node.
    Overdue,
    Failed,
    Unknown,
}

/// Lines of console log asked of Nova (`os-getConsoleOutput` `length`).
pub const CONSOLE_LINES: usize = 50;
/// Bytes of console log kept (Nova may ignore `length` and send the whole log).
pub const CONSOLE_BYTES: usize = 32 * 1024;
/// Characters kept per console line.
pub const CONSOLE_LINE_CHARS: usize = 400;

/// Nova's `OS-EXT-STS:power_state` number in words (`nova/compute/power_state.py`).
pub fn power_state_name(n: i64) -> String {
    match n {
        0 => "nostate".into(),
        1 => "running".into(),
        3 => "paused".into(),
        4 => "shutdown".into(),
        6 => "crashed".into(),
        7 => "suspended".into(),
        n => format!("unknown ({n})"),
    }
}

/// A console log made fit for a terminal: the last `max_lines` lines of at most
/// `CONSOLE_BYTES`, each without its CR, without ANSI escape sequences (boot logs colour
/// their `[  OK  ]`), tabs as spaces and every other control character or bidi override
/// dropped, cut at `CONSOLE_LINE_CHARS`. A guest writes whatever it likes to its serial
/// console; none of it may steer the operator's terminal.
pub fn console_lines(raw: &str, max_lines: usize) -> Vec<String> {
    let mut start = raw.len().saturating_sub(CONSOLE_BYTES);
    while !raw.is_char_boundary(start) {
        start += 1;
    }
    let tail = &raw[start..];
    let mut lines: Vec<String> = tail.split('\n').map(clean_line).collect();
    // The log ends with a newline: no empty last line.
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let skip = lines.len().saturating_sub(max_lines);
    lines.split_off(skip)
}

pub(crate) fn clean_line(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut count = 0;
    while let Some(c) = chars.next() {
        if count >= CONSOLE_LINE_CHARS {
            break;
        }
        match c {
            // ESC [ ... final byte (CSI), ESC ] ... BEL or ESC \ (OSC), or ESC + one char.
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\t' => {
                out.push_str("    ");
                count += 4;
            }
            c if super::text::is_unsafe_char(c) => {}
            c => {
                out.push(c);
                count += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::text::is_unsafe_char;

    #[test]
    fn console_lines_keep_the_tail_without_control_characters() {
        let raw = "one\r\n\u{1b}[0;32m[  OK  ]\u{1b}[0m Started kubelet\r\n\u{1b}]0;title\u{7}x\ty\u{202e}z\u{9b}\n\n";
        assert_eq!(
            console_lines(raw, 50),
            ["one", "[  OK  ] Started kubelet", "x    yz"]
        );
        assert_eq!(
            console_lines(raw, 2),
            ["[  OK  ] Started kubelet", "x    yz"]
        );
        let many: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let out = console_lines(&many, 50);
        assert_eq!(out.len(), 50);
        assert_eq!(out[49], "line 199");
    }

    #[test]
    fn console_lines_are_bounded() {
        let long = "é".repeat(100_000);
        let out = console_lines(&long, 50);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].chars().count(), CONSOLE_LINE_CHARS);
        let hostile: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        for l in console_lines(&hostile, 1000) {
            assert!(!l.chars().any(is_unsafe_char), "{l:?}");
        }
    }

    #[test]
    fn power_states_in_words() {
        assert_eq!(power_state_name(1), "running");
        assert_eq!(power_state_name(4), "shutdown");
        assert_eq!(power_state_name(9), "unknown (9)");
    }
}
