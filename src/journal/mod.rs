//! The audit journal: every operator action, appended as one JSON line and fsynced before the
//! action's API calls are considered made, so a crash never loses the record of what was asked.
//!
//! Default location: `$XDG_STATE_HOME/caldera/journal.jsonl` (`~/.local/state/caldera/...`).
//! The rollout engine also reads it back to reattach after a restart. Nothing secret is ever
//! written: entries hold names, ids, parameters we set (image, count) and API paths — never
//! tokens, passwords or request headers.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One API call an action makes (or made). `body` is compact JSON text of what we send, minus
/// template files (those are caldera's own, embedded templates and add nothing to an audit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiCall {
    pub method: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
}

impl ApiCall {
    pub fn new(method: &str, path: impl Into<String>, body: impl Into<String>) -> ApiCall {
        ApiCall {
            method: method.to_string(),
            path: path.into(),
            body: body.into(),
        }
    }
}

impl std::fmt::Display for ApiCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.body.is_empty() {
            write!(f, "{} {}", self.method, self.path)
        } else {
            write!(f, "{} {} {}", self.method, self.path, self.body)
        }
    }
}

/// Who acts where: the clouds.yaml cloud and the local operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Actor {
    pub cloud: String,
    pub user: String,
}

impl Actor {
    /// The cloud's name and the local login (`$USER`), which is who typed the command.
    pub fn local(cloud: &str) -> Actor {
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .ok()
            .filter(|u| !u.is_empty())
            .or_else(login_of_this_process)
            .unwrap_or_else(|| "unknown".into());
        Actor {
            cloud: cloud.to_string(),
            user,
        }
    }
}

/// The login name of this process's user from `/etc/passwd`, for shells, containers and
/// service managers that set no `$USER` (the audit trail should still say who acted).
fn login_of_this_process() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    login_for_uid(&passwd, uid)
}

fn login_for_uid(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_string())
    })
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// Recorded before the calls are made: the intent.
    Started,
    Ok,
    Failed {
        error: String,
    },
    Refused {
        error: String,
    },
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub time: DateTime<Utc>,
    pub cloud: String,
    pub user: String,
    /// e.g. `scale`, `rollout.start`, `rollout.release`, `rollout.pause`, `hook.post_node`.
    pub action: String,
    /// `cluster/nodegroup`, optionally `/member`.
    pub target: String,
    /// Ties the lines of one rollout together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<String>,
    /// The plan as shown to the operator, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<String>,
    /// The plan as data, JSON text owned by the module that acts (the rollout engine reads
    /// its own back to reattach); kept as text so no untyped JSON leaves this layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ApiCall>,
    pub outcome: Outcome,
    /// Captured output of an operator hook (truncated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl Entry {
    pub fn new(actor: &Actor, action: &str, target: &str, outcome: Outcome) -> Entry {
        Entry {
            time: Utc::now(),
            cloud: actor.cloud.clone(),
            user: actor.user.clone(),
            action: action.to_string(),
            target: target.to_string(),
            rollout: None,
            plan: Vec::new(),
            spec: None,
            calls: Vec::new(),
            outcome,
            output: None,
        }
    }
    pub fn rollout(mut self, id: &str) -> Entry {
        self.rollout = Some(id.to_string());
        self
    }
    pub fn plan(mut self, lines: Vec<String>) -> Entry {
        self.plan = lines;
        self
    }
    pub fn spec<T: Serialize>(mut self, spec: &T) -> Entry {
        self.spec = serde_json::to_string(spec).ok();
        self
    }
    pub fn calls(mut self, calls: Vec<ApiCall>) -> Entry {
        self.calls = calls;
        self
    }
    pub fn output(mut self, output: impl Into<String>) -> Entry {
        self.output = Some(output.into());
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("journal {path} line {line}: {detail}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        detail: String,
    },
}

/// An append-only JSON-lines file. Clones share one lock so lines from concurrent tasks never
/// interleave; separate processes rely on `O_APPEND` writes of whole lines.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

/// `$XDG_STATE_HOME/caldera/journal.jsonl`, falling back to `~/.local/state`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(dirs::state_dir)
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("caldera").join("journal.jsonl")
}

impl Journal {
    pub fn open(path: impl Into<PathBuf>) -> Journal {
        Journal {
            path: path.into(),
            lock: Arc::new(Mutex::new(())),
        }
    }

    pub fn open_default() -> Journal {
        Journal::open(default_path())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: io::Error) -> JournalError {
        JournalError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Appends one line and fsyncs it.
    pub fn append(&self, entry: &Entry) -> Result<(), JournalError> {
        let mut line = serde_json::to_string(entry).map_err(|e| JournalError::Corrupt {
            path: self.path.clone(),
            line: 0,
            detail: format!("cannot encode entry: {e}"),
        })?;
        line.push('\n');
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) = self.path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
            }
        }
        let mut opts = OpenOptions::new();
        opts.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Operators' actions are nobody else's business on a shared jump host.
            opts.mode(0o600);
        }
        let mut file = opts.open(&self.path).map_err(|e| self.io(e))?;
        file.write_all(line.as_bytes()).map_err(|e| self.io(e))?;
        file.sync_data().map_err(|e| self.io(e))?;
        Ok(())
    }

    /// Every entry, oldest first. A missing file is an empty journal. A torn last line (a crash
    /// mid-write) is skipped; a bad line elsewhere is an error.
    pub fn read_all(&self) -> Result<Vec<Entry>, JournalError> {
        Ok(self.read_from(0)?.0)
    }

    /// Entries starting at byte `offset`, and the offset after the last complete line.
    pub fn read_from(&self, offset: u64) -> Result<(Vec<Entry>, u64), JournalError> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
            Err(e) => return Err(self.io(e)),
        };
        file.seek(SeekFrom::Start(offset)).map_err(|e| self.io(e))?;
        let mut reader = BufReader::new(file);
        let mut out = Vec::new();
        let mut pos = offset;
        let mut buf = String::new();
        let mut lineno = 0;
        loop {
            buf.clear();
            let n = reader.read_line(&mut buf).map_err(|e| self.io(e))?;
            if n == 0 {
                break;
            }
            lineno += 1;
            if !buf.ends_with('\n') {
                // Incomplete: being written right now, or torn by a crash. Read it next time.
                break;
            }
            pos += n as u64;
            let text = buf.trim();
            if text.is_empty() {
                continue;
            }
            let entry: Entry = serde_json::from_str(text).map_err(|e| JournalError::Corrupt {
                path: self.path.clone(),
                line: lineno,
                detail: e.to_string(),
            })?;
            out.push(entry);
        }
        Ok((out, pos))
    }

    /// Entries of one rollout, oldest first.
    pub fn rollout_entries(&self, rollout: &str) -> Result<Vec<Entry>, JournalError> {
        Ok(self
            .read_all()?
            .into_iter()
            .filter(|e| e.rollout.as_deref() == Some(rollout))
            .collect())
    }

    /// Writes the journal as a JSON array (`json`) or CSV (`csv`: time, cloud, user, action,
    /// target, rollout, outcome, calls).
    pub fn export(&self, out: &mut dyn Write, csv: bool) -> Result<usize, JournalError> {
        let entries = self.read_all()?;
        let w = |r: io::Result<()>| r.map_err(|e| self.io(e));
        if csv {
            w(writeln!(
                out,
                "time,cloud,user,action,target,rollout,outcome,calls"
            ))?;
            for e in &entries {
                let outcome = match &e.outcome {
                    Outcome::Started => "started".to_string(),
                    Outcome::Ok => "ok".to_string(),
                    Outcome::Failed { error } => format!("failed: {error}"),
                    Outcome::Refused { error } => format!("refused: {error}"),
                };
                let calls: Vec<String> = e.calls.iter().map(|c| c.to_string()).collect();
                let fields = [
                    e.time.to_rfc3339(),
                    e.cloud.clone(),
                    e.user.clone(),
                    e.action.clone(),
                    e.target.clone(),
                    e.rollout.clone().unwrap_or_default(),
                    outcome,
                    calls.join("; "),
                ];
                let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                w(writeln!(out, "{}", line.join(",")))?;
            }
        } else {
            let text =
                serde_json::to_string_pretty(&entries).map_err(|e| JournalError::Corrupt {
                    path: self.path.clone(),
                    line: 0,
                    detail: e.to_string(),
                })?;
            w(writeln!(out, "{text}"))?;
        }
        Ok(entries.len())
    }
}

/// A terminal-safe CSV field (hook output and cloud errors are in the journal).
fn csv_field(s: &str) -> String {
    let s = crate::model::terminal_safe(s);
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_name_comes_from_passwd_by_uid() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      broken line\n\
                      ops:x:1000:1000:Ops:/home/ops:/bin/sh\n";
        assert_eq!(login_for_uid(passwd, 0).as_deref(), Some("root"));
        assert_eq!(login_for_uid(passwd, 1000).as_deref(), Some("ops"));
        assert_eq!(login_for_uid(passwd, 4242), None);
        // This process has a uid with an entry on any Unix machine the tests run on.
        assert!(login_of_this_process().is_some());
    }

    #[test]
    fn append_read_back_and_skip_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("sub/journal.jsonl"));
        assert!(j.read_all().unwrap().is_empty());
        let actor = Actor {
            cloud: "prod".into(),
            user: "alice".into(),
        };
        j.append(
            &Entry::new(&actor, "scale", "c1/workers", Outcome::Started).calls(vec![ApiCall::new(
                "PATCH",
                "/stacks/a/b",
                "{\"count\":3}",
            )]),
        )
        .unwrap();
        j.append(&Entry::new(&actor, "scale", "c1/workers", Outcome::Ok).rollout("r1"))
            .unwrap();
        // A crash mid-write leaves a torn line: it is not an entry (yet).
        std::fs::OpenOptions::new()
            .append(true)
            .open(j.path())
            .unwrap()
            .write_all(b"{\"time\":")
            .unwrap();
        let all = j.read_all().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].calls[0].method, "PATCH");
        assert_eq!(all[1].outcome, Outcome::Ok);
        assert_eq!(j.rollout_entries("r1").unwrap().len(), 1);
        let (_, off) = j.read_from(0).unwrap();
        let (more, off2) = j.read_from(off).unwrap();
        assert!(more.is_empty());
        assert_eq!(off, off2);
        let mut csv = Vec::new();
        assert_eq!(j.export(&mut csv, true).unwrap(), 2);
        let csv = String::from_utf8(csv).unwrap();
        assert!(csv.contains("PATCH /stacks/a/b"), "{csv}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(j.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "journal readable by others: {mode:o}");
        }
    }

    #[test]
    fn corrupt_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        std::fs::write(&p, "not json\n").unwrap();
        assert!(matches!(
            Journal::open(&p).read_all(),
            Err(JournalError::Corrupt { line: 1, .. })
        ));
    }
}
