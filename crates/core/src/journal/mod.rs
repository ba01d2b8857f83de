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

/// This machine's name (`/proc`, else `$HOSTNAME`, else `?`), read once: where an entry was
/// written, a driver's lock held and a rollout's marker set, so the three name one host.
pub fn hostname() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| {
                h.trim()
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(64)
                    .collect()
            })
            .filter(|h: &String| !h.is_empty())
            .unwrap_or_else(|| "?".into())
    })
    .clone()
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
    /// The machine it was written on ([`hostname`]); empty in entries from before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
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
    /// Where a span the entry ends began: a take-over's (`rollout.reattach`) is the last
    /// driver's last heartbeat, from which nobody released anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
}

impl Entry {
    pub fn new(actor: &Actor, action: &str, target: &str, outcome: Outcome) -> Entry {
        Entry {
            time: Utc::now(),
            cloud: actor.cloud.clone(),
            user: actor.user.clone(),
            host: hostname(),
            action: action.to_string(),
            target: target.to_string(),
            rollout: None,
            plan: Vec::new(),
            spec: None,
            calls: Vec::new(),
            outcome,
            output: None,
            since: None,
        }
    }
    /// Who wrote it, where, on which cloud: `alice@bastion on prod` (the host as a rollout's
    /// marker names it), `alice on prod` for an entry without its host.
    pub fn who(&self) -> String {
        match self.host.as_str() {
            "" => format!("{} on {}", self.user, self.cloud),
            host => format!("{}@{host} on {}", self.user, self.cloud),
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

    pub fn since(mut self, since: DateTime<Utc>) -> Entry {
        self.since = Some(since);
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// A complete line that is not an entry. `line` counts from 1 at the start of the file.
    #[error(
        "journal {path} line {line} (byte {offset}) is not an entry: {detail} \
         (`caldera journal --repair` sets it aside)"
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        offset: u64,
        detail: String,
    },
    #[error(
        "journal {path} is {len} bytes, shorter than the {offset} already read: it was \
         replaced or cut"
    )]
    Shrunk {
        path: PathBuf,
        len: u64,
        offset: u64,
    },
    #[error("journal {path}: cannot encode an entry: {detail}")]
    Encode { path: PathBuf, detail: String },
}

/// A complete line that is not an entry, as a lenient reader reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// From 1 at the start of the file.
    pub line: usize,
    /// Byte offset of the line's start.
    pub offset: u64,
    pub detail: String,
}

impl std::fmt::Display for BadLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} (byte {}) is not an entry, skipped: {}",
            self.line, self.offset, self.detail
        )
    }
}

/// What a lenient read found from an offset.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub entries: Vec<Entry>,
    /// The offset after the last complete line (where the next read starts).
    pub next: u64,
    pub bad: Vec<BadLine>,
    /// Offset of an unterminated last line left unread (a writer that died mid-line: the
    /// next append moves it aside).
    pub torn_at: Option<u64>,
}

/// A torn tail moved out of the journal into its `.torn` sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Where the torn bytes started (the journal now ends there).
    pub offset: u64,
    pub len: u64,
    pub sidecar: PathBuf,
}

/// An append-only JSON-lines file.
///
/// Integrity rules, because the rollout engine acts on what it reads here:
/// - a line is written whole, in one `write`, and fsynced before `append` returns, so an
///   action that waits for `append` never reaches the cloud without its record;
/// - writers exclude each other with an exclusive `flock` on the file (processes) and a
///   mutex (this process's tasks); readers take a shared `flock`, so an unterminated last
///   line seen by a reader is never a write in progress but a writer that died mid-line;
/// - such a torn tail (unterminated, or a last line that is not JSON at all) is moved into
///   `<journal>.torn` with its offset before the next append, never glued to a new entry;
/// - a bad complete line is an error for the strict readers ([`Journal::read_from`]: the
///   engine must not act on a journal it cannot fully read) and is reported with its line
///   number and skipped by the lenient one ([`Journal::scan_from`]: audit views).
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

/// Bytes read at a time when looking for the start of the last line from the end.
const TAIL_CHUNK: u64 = 64 * 1024;
/// The longest line a journal holds. Entries are small (hook output is kept to its head and
/// tail, plans list one line per node): a longer line was not written by caldera, and a
/// reader never holds more than this of it.
pub const MAX_LINE_BYTES: usize = 8 << 20;

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

    /// Where torn tails are kept: `<journal>.torn`.
    pub fn torn_path(&self) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(".torn");
        PathBuf::from(p)
    }

    fn io(&self, source: io::Error) -> JournalError {
        JournalError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Appends one line and fsyncs it; returns the offset just after it. A torn tail left
    /// by a writer that died is moved aside first (see [`Journal::repair`]).
    pub fn append(&self, entry: &Entry) -> Result<u64, JournalError> {
        let mut line = serde_json::to_string(entry).map_err(|e| JournalError::Encode {
            path: self.path.clone(),
            detail: e.to_string(),
        })?;
        line.push('\n');
        if line.len() > MAX_LINE_BYTES {
            return Err(JournalError::Encode {
                path: self.path.clone(),
                detail: format!(
                    "the entry is {} bytes, over the {} MiB limit of a journal line",
                    line.len(),
                    MAX_LINE_BYTES >> 20
                ),
            });
        }
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut created = false;
        if let Some(dir) = self.path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
            }
        }
        let mut opts = OpenOptions::new();
        opts.read(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Operators' actions are nobody else's business on a shared jump host.
            opts.mode(0o600);
        }
        let mut file = match opts.open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                created = true;
                opts.create(true).open(&self.path).map_err(|e| self.io(e))?
            }
            Err(e) => return Err(self.io(e)),
        };
        flock(&file, libc::LOCK_EX).map_err(|e| self.io(e))?;
        self.repair_locked(&mut file)?;
        let before = file.metadata().map_err(|e| self.io(e))?.len();
        // One write of the whole line: with O_APPEND and the lock, no other line can land
        // inside it. Whole and durable, or not there at all: a failed write or sync (a full
        // disk writes part of a line) is cut off again, so the caller's "not recorded" is
        // true and no torn tail is left behind.
        let written = file
            .write_all(line.as_bytes())
            .and_then(|()| file.sync_data());
        if let Err(e) = written {
            let _ = file.set_len(before).and_then(|()| file.sync_data());
            return Err(self.io(e));
        }
        if created {
            // A new file is durable only once its directory entry is.
            if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| self.io(e))?;
            }
        }
        let end = file.metadata().map_err(|e| self.io(e))?.len();
        Ok(end)
    }

    /// Moves a torn tail (an unterminated last line, or a last line that is not JSON at
    /// all) into `<journal>.torn` and cuts the journal before it. `None` when the journal
    /// is whole or missing. Appends do this themselves; this is for a journal that is
    /// only read.
    pub fn repair(&self) -> Result<Option<TornTail>, JournalError> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut file = match OpenOptions::new().read(true).write(true).open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(e)),
        };
        flock(&file, libc::LOCK_EX).map_err(|e| self.io(e))?;
        self.repair_locked(&mut file)
    }

    /// The tail repair, with the exclusive lock held.
    fn repair_locked(&self, file: &mut File) -> Result<Option<TornTail>, JournalError> {
        let len = file.metadata().map_err(|e| self.io(e))?.len();
        if len == 0 {
            return Ok(None);
        }
        let (start, terminated) = last_line_start(file, len).map_err(|e| self.io(e))?;
        // Under the exclusive lock no writer is mid-line: an unterminated last line is a
        // writer that died. A complete line that is not an entry is not torn: it stays for
        // the strict readers to report by number (it may have been a request), until
        // `quarantine_bad_lines` sets it aside.
        if terminated {
            return Ok(None);
        }
        let torn_len = len - start;
        let sidecar = self.torn_path();
        let mut opts = OpenOptions::new();
        opts.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        // Kept first, then cut: a crash in between leaves the bytes in both places. Copied
        // through a small buffer: a torn tail of any size costs no more memory than a line.
        let mut side = opts.open(&sidecar).map_err(|e| self.io(e))?;
        writeln!(
            side,
            "# {} torn tail of {}: {} bytes from offset {}",
            Utc::now().to_rfc3339(),
            self.path.display(),
            torn_len,
            start
        )
        .map_err(|e| self.io(e))?;
        file.seek(SeekFrom::Start(start)).map_err(|e| self.io(e))?;
        io::copy(&mut io::Read::take(&mut *file, torn_len), &mut side).map_err(|e| self.io(e))?;
        side.write_all(b"\n").map_err(|e| self.io(e))?;
        side.sync_data().map_err(|e| self.io(e))?;
        file.set_len(start).map_err(|e| self.io(e))?;
        file.sync_all().map_err(|e| self.io(e))?;
        tracing::warn!(
            "journal {}: moved a torn tail of {} bytes at offset {start} to {}",
            self.path.display(),
            torn_len,
            sidecar.display()
        );
        Ok(Some(TornTail {
            offset: start,
            len: torn_len,
            sidecar,
        }))
    }

    /// Every entry, oldest first. A missing file is an empty journal. A torn last line (a
    /// writer that died mid-line) is not an entry; a bad complete line is an error.
    pub fn read_all(&self) -> Result<Vec<Entry>, JournalError> {
        Ok(self.read_from(0)?.0)
    }

    /// Entries starting at byte `offset`, and the offset after the last complete line.
    /// Strict: a complete line that is not an entry is an error naming its line number.
    pub fn read_from(&self, offset: u64) -> Result<(Vec<Entry>, u64), JournalError> {
        let scan = self.scan(offset, true)?;
        Ok((scan.entries, scan.next))
    }

    /// Entries starting at byte `offset`; lines that are not entries are skipped and
    /// reported in [`Scan::bad`]. For views of the audit trail, never for deciding actions.
    pub fn scan_from(&self, offset: u64) -> Result<Scan, JournalError> {
        self.scan(offset, false)
    }

    /// The journal's length now, a torn tail included (an offset for readers is
    /// [`Journal::end_of_entries`]).
    pub fn len(&self) -> Result<u64, JournalError> {
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(self.io(e)),
        }
    }

    /// Where the next entry will start: the journal's length less a torn tail (an
    /// unterminated last line, which the next append or repair cuts off, writing there).
    /// An offset taken from here stays on a line boundary across that repair; the plain
    /// length would point inside the entry written where the torn bytes were, and a
    /// strict reader starting there would read half a line.
    pub fn end_of_entries(&self) -> Result<u64, JournalError> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(self.io(e)),
        };
        // No writer is mid-line while we hold this.
        flock(&file, libc::LOCK_SH).map_err(|e| self.io(e))?;
        let len = file.metadata().map_err(|e| self.io(e))?.len();
        if len == 0 {
            return Ok(0);
        }
        let (start, terminated) = last_line_start(&mut file, len).map_err(|e| self.io(e))?;
        Ok(if terminated { len } else { start })
    }

    pub fn is_empty(&self) -> Result<bool, JournalError> {
        Ok(self.len()? == 0)
    }

    fn scan(&self, offset: u64, strict: bool) -> Result<Scan, JournalError> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Scan {
                    next: 0,
                    ..Scan::default()
                })
            }
            Err(e) => return Err(self.io(e)),
        };
        // No writer is mid-line while we hold this.
        flock(&file, libc::LOCK_SH).map_err(|e| self.io(e))?;
        self.scan_locked(&file, offset, strict)
    }

    /// Sets aside every complete line that is not an entry: its bytes go to
    /// `<journal>.quarantine` (with its line number and offset), and in the journal it is
    /// overwritten with spaces, in place, so every offset a reader holds stays valid and
    /// strict readers read on. A torn tail is moved aside first. Returns the lines set
    /// aside. For `caldera journal --repair`, after an operator saw the error.
    pub fn quarantine_bad_lines(&self) -> Result<(Option<TornTail>, Vec<BadLine>), JournalError> {
        use std::os::unix::fs::FileExt;
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut file = match OpenOptions::new().read(true).write(true).open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((None, Vec::new())),
            Err(e) => return Err(self.io(e)),
        };
        flock(&file, libc::LOCK_EX).map_err(|e| self.io(e))?;
        let torn = self.repair_locked(&mut file)?;
        let scan = self.scan_locked(&file, 0, false)?;
        if scan.bad.is_empty() {
            return Ok((torn, scan.bad));
        }
        let mut kept = Vec::new();
        let mut blanks = Vec::new();
        for bad in &scan.bad {
            file.seek(SeekFrom::Start(bad.offset))
                .map_err(|e| self.io(e))?;
            let mut line = Vec::new();
            let (consumed, overlong) =
                read_line_bounded(&mut BufReader::new(&file), &mut line, MAX_LINE_BYTES)
                    .map_err(|e| self.io(e))?;
            if overlong {
                // Only its start is kept aside; the whole line is blanked.
                line.truncate(line.len().saturating_sub(1));
                line.extend_from_slice(b" [...]\n");
            }
            let body = consumed.saturating_sub(1);
            writeln!(
                kept,
                "# {} line {} (byte {}) of {}: {}",
                Utc::now().to_rfc3339(),
                bad.line,
                bad.offset,
                self.path.display(),
                bad.detail
            )
            .map_err(|e| self.io(e))?;
            kept.extend_from_slice(&line);
            blanks.push((bad.offset, body));
        }
        let mut opts = OpenOptions::new();
        opts.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut side = opts.open(self.quarantine_path()).map_err(|e| self.io(e))?;
        side.write_all(&kept).map_err(|e| self.io(e))?;
        side.sync_data().map_err(|e| self.io(e))?;
        for (at, body) in blanks {
            file.write_all_at(&vec![b' '; body], at)
                .map_err(|e| self.io(e))?;
        }
        file.sync_data().map_err(|e| self.io(e))?;
        Ok((torn, scan.bad))
    }

    /// Where lines set aside by [`Journal::quarantine_bad_lines`] are kept.
    pub fn quarantine_path(&self) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(".quarantine");
        PathBuf::from(p)
    }

    /// A read of `file`, whose lock the caller holds.
    fn scan_locked(&self, file: &File, offset: u64, strict: bool) -> Result<Scan, JournalError> {
        let mut file = file;
        let len = file.metadata().map_err(|e| self.io(e))?.len();
        // Readers never stop inside a torn tail and repairs blank lines in place, so a
        // journal shorter than where a reader stopped was replaced or cut by someone else:
        // what was read before may be gone, which is not "nothing new".
        if offset > len {
            return Err(JournalError::Shrunk {
                path: self.path.clone(),
                len,
                offset,
            });
        }
        file.seek(SeekFrom::Start(offset)).map_err(|e| self.io(e))?;
        let mut lines_before: Option<usize> = None;
        // Never past the length seen under the lock (a device or a growing file is no
        // reason to read forever).
        let mut reader = BufReader::new(io::Read::take(file, len - offset));
        let mut scan = Scan {
            next: offset,
            ..Scan::default()
        };
        let mut buf = Vec::new();
        let mut lineno = 0usize;
        loop {
            buf.clear();
            let (n, overlong) =
                read_line_bounded(&mut reader, &mut buf, MAX_LINE_BYTES).map_err(|e| self.io(e))?;
            if n == 0 {
                break;
            }
            if buf.last() != Some(&b'\n') {
                scan.torn_at = Some(scan.next);
                break;
            }
            lineno += 1;
            let at = scan.next;
            scan.next += n as u64;
            let text = buf.trim_ascii();
            if text.is_empty() {
                continue;
            }
            let parsed = if overlong {
                Err(format!(
                    "a line of {n} bytes, over the {} MiB limit of a journal line",
                    MAX_LINE_BYTES >> 20
                ))
            } else {
                serde_json::from_slice::<Entry>(text).map_err(|e| e.to_string())
            };
            match parsed {
                Ok(entry) => scan.entries.push(entry),
                Err(e) => {
                    let before = match lines_before {
                        Some(n) => n,
                        None => {
                            let n = self.count_lines(offset)?;
                            lines_before = Some(n);
                            n
                        }
                    };
                    let bad = BadLine {
                        line: before + lineno,
                        offset: at,
                        detail: e,
                    };
                    if strict {
                        return Err(JournalError::Corrupt {
                            path: self.path.clone(),
                            line: bad.line,
                            offset: bad.offset,
                            detail: bad.detail,
                        });
                    }
                    scan.bad.push(bad);
                }
            }
        }
        Ok(scan)
    }

    /// Lines wholly before byte `offset` (for line numbers in errors).
    fn count_lines(&self, offset: u64) -> Result<usize, JournalError> {
        use std::io::Read;
        let file = File::open(&self.path).map_err(|e| self.io(e))?;
        let mut reader = BufReader::new(file.take(offset));
        let mut chunk = [0u8; 8192];
        let mut n = 0;
        loop {
            let got = reader.read(&mut chunk).map_err(|e| self.io(e))?;
            if got == 0 {
                return Ok(n);
            }
            n += chunk[..got].iter().filter(|b| **b == b'\n').count();
        }
    }

    /// Entries of one rollout, oldest first.
    pub fn rollout_entries(&self, rollout: &str) -> Result<Vec<Entry>, JournalError> {
        Ok(self
            .read_all()?
            .into_iter()
            .filter(|e| e.rollout.as_deref() == Some(rollout))
            .collect())
    }

    /// Writes the journal as a JSON array (`json`) or CSV (`csv`: time, cloud, user, host,
    /// action, target, rollout, outcome, calls; `host` is empty in entries from before it was
    /// kept). An export of the audit trail skips lines that are
    /// not entries and returns them (the caller says so).
    pub fn export(&self, out: &mut dyn Write, csv: bool) -> Result<Scan, JournalError> {
        let mut scan = self.scan_from(0)?;
        let entries = std::mem::take(&mut scan.entries);
        let w = |r: io::Result<()>| r.map_err(|e| self.io(e));
        if csv {
            w(writeln!(
                out,
                "time,cloud,user,host,action,target,rollout,outcome,calls"
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
                    e.host.clone(),
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
                crate::model::json_string_pretty(&entries).map_err(|e| JournalError::Encode {
                    path: self.path.clone(),
                    detail: e.to_string(),
                })?;
            w(writeln!(out, "{text}"))?;
        }
        scan.entries = entries;
        Ok(scan)
    }
}

/// `flock(2)` on `file` (`LOCK_EX` or `LOCK_SH`), waiting for it; released when the file
/// is closed. (std's `File::lock` is newer than the crate's MSRV.)
fn flock(file: &File, op: i32) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this `File` owns for the whole call.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Where the last line of a file of `len` (> 0) bytes starts (after the last newline before
/// the final byte), and whether it ends with a newline. Reads backwards a chunk at a time,
/// so a huge last line costs no more memory than a short one.
fn last_line_start(file: &mut File, len: u64) -> io::Result<(u64, bool)> {
    use std::io::Read;
    let mut final_byte = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut final_byte)?;
    let mut pos = len - 1;
    let mut start = 0;
    while pos > 0 {
        let from = pos.saturating_sub(TAIL_CHUNK);
        let mut chunk = vec![0u8; (pos - from) as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut chunk)?;
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            start = from + i as u64 + 1;
            break;
        }
        pos = from;
    }
    Ok((start, final_byte[0] == b'\n'))
}

/// Reads one line (through its newline, if any) into `buf`, keeping at most `max` bytes of
/// it: a longer line is consumed to its end without being held. Returns the bytes consumed
/// and whether the line was longer than `max` (then `buf` holds only its start).
fn read_line_bounded(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<(usize, bool)> {
    let mut consumed = 0usize;
    let mut overlong = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((consumed, overlong));
        }
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        if take > room {
            overlong = true;
        }
        buf.extend_from_slice(&available[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            if overlong && buf.last() != Some(&b'\n') {
                // Keep the caller's "complete line" test true for an overlong one.
                buf.push(b'\n');
            }
            return Ok((consumed, overlong));
        }
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

    /// An entry says the machine it was written on, as a rollout's marker names it (was:
    /// `root@standalone`, the cloud's name where a host is read); an entry from before reads
    /// without it.
    #[test]
    fn an_entry_names_its_host_as_the_marker_does() {
        let actor = Actor {
            cloud: "standalone".into(),
            user: "root".into(),
        };
        let e = Entry::new(&actor, "rollout.start", "s/g", Outcome::Started);
        assert_eq!(e.host, hostname());
        assert_eq!(e.who(), format!("root@{} on standalone", hostname()));
        let line = serde_json::to_string(&e).expect("an entry serializes");
        let old = line.replace(&format!(",\"host\":\"{}\"", hostname()), "");
        assert_ne!(old, line);
        let back: Entry = serde_json::from_str(&old).expect("an entry without host reads");
        assert_eq!(back.who(), "root on standalone");
    }

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

    fn actor() -> Actor {
        Actor {
            cloud: "prod".into(),
            user: "alice".into(),
        }
    }

    fn entry(n: usize) -> Entry {
        Entry::new(
            &actor(),
            "rollout.release",
            &format!("c1/w/{n}"),
            Outcome::Ok,
        )
        .rollout("r1")
    }

    fn raw_append(path: &Path, bytes: &[u8]) {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    #[test]
    fn append_read_back_export_and_private_mode() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("sub/journal.jsonl"));
        assert!(j.read_all().unwrap().is_empty());
        assert_eq!(j.repair().unwrap(), None);
        let end1 = j
            .append(
                &Entry::new(&actor(), "scale", "c1/workers", Outcome::Started)
                    .calls(vec![ApiCall::new("PATCH", "/stacks/a/b", "{\"count\":3}")]),
            )
            .unwrap();
        let end2 = j
            .append(&Entry::new(&actor(), "scale", "c1/workers", Outcome::Ok).rollout("r1"))
            .unwrap();
        assert_eq!(end2, j.len().unwrap());
        let all = j.read_all().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].calls[0].method, "PATCH");
        assert_eq!(all[1].outcome, Outcome::Ok);
        assert_eq!(j.rollout_entries("r1").unwrap().len(), 1);
        let (second, off) = j.read_from(end1).unwrap();
        assert_eq!((second.len(), off), (1, end2));
        let mut csv = Vec::new();
        assert_eq!(j.export(&mut csv, true).unwrap().entries.len(), 2);
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
    fn torn_tail_is_moved_aside_never_glued() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("j.jsonl"));
        j.append(&entry(0)).unwrap();
        let cut = j.len().unwrap();
        // A writer died mid-line.
        raw_append(j.path(), b"{\"time\":\"2026-");
        // Readers do not take it for an entry, and say where it is.
        let scan = j.scan_from(0).unwrap();
        assert_eq!((scan.entries.len(), scan.torn_at), (1, Some(cut)));
        assert_eq!(j.read_from(0).unwrap().1, cut);
        // The next append moves it aside first: the new entry is whole.
        j.append(&entry(1)).unwrap();
        let all = j.read_all().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].target, "c1/w/1");
        let kept = std::fs::read_to_string(j.torn_path()).unwrap();
        assert!(kept.contains(&format!("from offset {cut}")), "{kept}");
        assert!(kept.contains("{\"time\":\"2026-\n"), "{kept}");
        // A crash that left zeros; a repair without an append does the same.
        raw_append(j.path(), b"\0\0\0\0");
        let torn = j.repair().unwrap().expect("repaired");
        assert_eq!(torn.len, 4);
        assert_eq!(j.read_all().unwrap().len(), 2);
        // A complete last line that is not an entry is not torn: it stays, and strict
        // readers name it, until it is quarantined (blanked in place, kept aside).
        raw_append(j.path(), b"not an entry\n");
        j.append(&entry(2)).unwrap();
        let end = j.read_all().unwrap_err();
        assert!(
            matches!(end, JournalError::Corrupt { line: 3, .. }),
            "{end}"
        );
        let len = j.len().unwrap();
        let (torn, bad) = j.quarantine_bad_lines().unwrap();
        assert_eq!((torn, bad.len(), bad[0].line), (None, 1, 3));
        assert_eq!(j.len().unwrap(), len, "offsets held by readers stay valid");
        assert_eq!(j.read_all().unwrap().len(), 3);
        let kept = std::fs::read_to_string(j.quarantine_path()).unwrap();
        assert!(
            kept.contains("line 3") && kept.contains("not an entry\n"),
            "{kept}"
        );
        assert_eq!(j.repair().unwrap(), None);
    }

    /// An entry with random text (multi-byte characters, quotes, newlines to escape) of
    /// random length, up to past the backward search's chunk.
    fn random_entry(rng: &mut impl rand::Rng, n: usize) -> Entry {
        const ALPHABET: &[char] = &['a', 'é', '"', '\\', '\n', '→', '🦀', ' ', '{', '\u{1}'];
        let len = match rng.gen_range(0..4) {
            0 => 0,
            1 => rng.gen_range(1..50),
            2 => rng.gen_range(50..2000),
            _ => rng.gen_range(60_000..80_000),
        };
        let text: String = (0..len)
            .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())])
            .collect();
        entry(n).output(text)
    }

    /// Every way a crash can cut the last line: on random journals, at each byte offset of
    /// the last line, the journal repairs (explicitly, or by itself on the next append),
    /// reads back whole, keeps the torn bytes in `.torn`, and the next entry stands on a
    /// line of its own (never glued).
    #[test]
    fn truncation_at_every_byte_of_the_last_line_repairs() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(12);
        // Thousands of fsynced appends: on a memory file system where there is one (the
        // logic is under test here, not the disk).
        let dir = if Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let mut cases = 0;
        for journal in 0..6 {
            let j = Journal::open(dir.path().join(format!("j{journal}.jsonl")));
            let count = rng.gen_range(1..4);
            for n in 0..count {
                // The first journal plain (a short last line, every offset of it).
                let e = if journal == 0 {
                    entry(n)
                } else {
                    random_entry(&mut rng, n)
                };
                j.append(&e).unwrap();
            }
            let whole = std::fs::read(j.path()).unwrap();
            let last_start = whole[..whole.len() - 1]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            // Every offset of last lines up to 600 bytes; of longer ones, the ends and a
            // random 1% (those are hundreds of kilobytes of appends each).
            let long = whole.len() - last_start > 600;
            for cut in last_start..=whole.len() {
                let edge = cut < last_start + 3 || cut + 3 > whole.len();
                if long && !edge && !rng.gen_bool(0.01) {
                    continue;
                }
                std::fs::write(j.path(), &whole[..cut]).unwrap();
                let _ = std::fs::remove_file(j.torn_path());
                let intact = cut == whole.len();
                let torn = cut > last_start && !intact;
                if rng.gen_bool(0.5) {
                    let repaired = j.repair().unwrap();
                    assert_eq!(repaired.is_some(), torn, "cut at {cut}");
                }
                j.append(&entry(999)).unwrap();
                let all = j
                    .read_all()
                    .unwrap_or_else(|e| panic!("journal {journal} cut at {cut}: {e}"));
                let expected = count + usize::from(intact);
                assert_eq!(all.len(), expected, "journal {journal} cut at {cut}");
                assert_eq!(all.last().unwrap().target, "c1/w/999");
                assert!(all[..all.len() - 1].iter().all(|e| e.target != "c1/w/999"));
                if torn {
                    let kept = std::fs::read(j.torn_path()).unwrap();
                    let bytes = &whole[last_start..cut];
                    assert!(
                        kept.windows(bytes.len()).any(|w| w == bytes),
                        "journal {journal} cut at {cut}: torn bytes not kept"
                    );
                } else {
                    assert!(!j.torn_path().exists());
                }
                cases += 1;
            }
        }
        println!("truncated last lines at {cases} offsets");
        assert!(cases > 500, "{cases}");
    }

    #[test]
    fn bad_middle_line_strict_error_names_its_line_lenient_skips_it() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("j.jsonl"));
        j.append(&entry(0)).unwrap();
        j.append(&entry(1)).unwrap();
        let off = j.len().unwrap();
        raw_append(j.path(), b"garbage \xff line\n");
        j.append(&entry(2)).unwrap();
        // Counted from the start of the file even when reading from an offset.
        for from in [0, off] {
            match j.read_from(from) {
                Err(JournalError::Corrupt { line, offset, .. }) => {
                    assert_eq!((line, offset), (3, off))
                }
                other => panic!("{other:?}"),
            }
        }
        let msg = j.read_all().unwrap_err().to_string();
        assert!(msg.contains("line 3") && msg.contains("j.jsonl"), "{msg}");
        let scan = j.scan_from(0).unwrap();
        assert_eq!(scan.entries.len(), 3);
        assert_eq!(scan.bad.len(), 1);
        assert_eq!(scan.bad[0].line, 3);
        // A bad line in the middle is not a torn tail: it stays where it is.
        assert_eq!(j.repair().unwrap(), None);
        let exported = j.export(&mut Vec::new(), false).unwrap();
        assert_eq!((exported.entries.len(), exported.bad.len()), (3, 1));
    }

    #[test]
    fn an_overlong_line_is_never_held_whole_and_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("j.jsonl"));
        j.append(&entry(0)).unwrap();
        let off = j.len().unwrap();
        let mut huge = vec![b'{'; MAX_LINE_BYTES + 4096];
        huge.push(b'\n');
        raw_append(j.path(), &huge);
        j.append(&entry(1)).unwrap();
        let msg = j.read_all().unwrap_err().to_string();
        assert!(
            msg.contains("line 2") && msg.contains("8 MiB limit"),
            "{msg}"
        );
        let scan = j.scan_from(0).unwrap();
        assert_eq!(scan.entries.len(), 2);
        assert_eq!((scan.bad.len(), scan.bad[0].offset), (1, off));
        // Set aside (its start, marked cut), blanked in place; strict readers read on.
        let (_, bad) = j.quarantine_bad_lines().unwrap();
        assert_eq!(bad.len(), 1);
        assert_eq!(j.read_all().unwrap().len(), 2);
        let kept = std::fs::metadata(j.quarantine_path()).unwrap().len() as usize;
        assert!(kept < MAX_LINE_BYTES + 1024, "{kept}");
        // A writer refuses an entry that readers would refuse, and the journal is unchanged.
        let before = j.len().unwrap();
        let big = entry(2).output("x".repeat(MAX_LINE_BYTES));
        let err = j.append(&big).unwrap_err().to_string();
        assert!(err.contains("8 MiB limit"), "{err}");
        assert_eq!(j.len().unwrap(), before);
        // A torn tail of any size is moved aside whole.
        raw_append(j.path(), &vec![b'x'; MAX_LINE_BYTES + 10]);
        let torn = j.repair().unwrap().unwrap();
        assert_eq!(torn.len, (MAX_LINE_BYTES + 10) as u64);
        assert_eq!(j.read_all().unwrap().len(), 2);
    }

    #[test]
    fn unwritable_journal_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be (root ignores modes, so no chmod here).
        let p = dir.path().join("j.jsonl");
        std::fs::create_dir(&p).unwrap();
        assert!(matches!(
            Journal::open(&p).append(&entry(0)),
            Err(JournalError::Io { .. })
        ));
        // A full disk: writes fail after the open succeeds.
        if Path::new("/dev/full").exists() {
            let full = dir.path().join("full.jsonl");
            std::os::unix::fs::symlink("/dev/full", &full).unwrap();
            let j = Journal::open(&full);
            let e = j.append(&entry(0)).unwrap_err().to_string();
            assert!(e.contains("full.jsonl"), "{e}");
            // And reading it does not run forever.
            assert!(j.read_all().unwrap().is_empty());
        }
    }

    /// Writers in separate threads with their own handles (so only the file lock stands
    /// between them) with lines far larger than a pipe buffer: every line is whole.
    #[test]
    fn concurrent_writers_never_interleave() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        let big = "x".repeat(200_000);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let p = p.clone();
                let big = big.clone();
                std::thread::spawn(move || {
                    let j = Journal::open(p);
                    for n in 0..10 {
                        j.append(&entry(t * 100 + n).output(big.clone())).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let all = Journal::open(&p).read_all().unwrap();
        assert_eq!(all.len(), 40);
        assert!(all
            .iter()
            .all(|e| e.output.as_deref() == Some(big.as_str())));
    }
}
