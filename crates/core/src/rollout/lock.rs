//! One driver per stack on this machine, and control requests ordered against releases.
//!
//! A rollout is one update of one Heat stack, and Heat runs one update of a stack at a time:
//! so the files are the stack's ([`key`]), not the node group's name, which has several
//! (`cluster/nodegroup`, `STACK/GROUP`, the group's own stack `STACK-GROUP/nodes`): under two
//! names, one rollout would have had two locks, and two drivers on one machine.
//! Each stack has two small files beside the journal, in `rollouts/`:
//!
//! - `<stack>.lock`: the **driver lock**. The process that drives a rollout holds an
//!   exclusive `flock` on it from before the in-progress check until its engine ends (a
//!   killed process loses it with its file descriptors, so a crash never leaves it held). The
//!   file's text says who holds it (rollout, pid, host, started, last seen); the engine
//!   rewrites `last_seen` as it polls (the heartbeat). A second start or resume finds the lock
//!   taken and is refused with that text. The text stays after the driver is gone: a lock
//!   that can be taken with text in it tells when the last driver was last seen.
//! - `<group>.control`: the **control lock**, held a moment at a time: by a requester while it
//!   appends `rollout.request.*` to the journal, and by the engine while it reads the requests
//!   and writes a release's intent. So a request is either seen before the release or
//!   recorded after it: the journal never shows a release after a recorded pause.
//!
//! Other machines do not share these files; for them the engine's start checks what Heat
//! shows (the node group's stack in progress).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Who drives (or last drove) a node group's rollout, from the lock file's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub rollout: String,
    pub pid: u32,
    pub host: String,
    pub started_at: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
}

impl Holder {
    fn here(rollout: &str) -> Holder {
        let now = Utc::now();
        Holder {
            rollout: rollout.to_string(),
            pid: std::process::id(),
            host: crate::journal::hostname(),
            started_at: now,
            last_seen: now,
        }
    }

    pub fn label(&self) -> String {
        format!(
            "rollout {} driven by pid {} on {} since {}, last seen {}",
            self.rollout,
            self.pid,
            self.host,
            self.started_at.format("%H:%M:%S"),
            self.last_seen.format("%H:%M:%S")
        )
    }
}

/// Where a node group's lock files live: `rollouts/` beside the journal.
pub fn lock_dir(journal: &Path) -> PathBuf {
    journal
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
        .join("rollouts")
}

/// The name of `plan`'s lock files: the stack its update runs on, by Heat's id (the same
/// whatever name the group was given); a plan without an id (none is made without one)
/// falls back to its group's label.
pub fn key(plan: &super::RolloutPlan) -> String {
    if plan.stack.id.is_empty() {
        plan.target.label()
    } else {
        format!("stack-{}", plan.stack.id)
    }
}

/// A file name for a lock's key (`cluster/ng`): safe characters kept, others
/// escaped, so two labels never share a file.
fn file_stem(target: &str) -> String {
    let mut out = String::new();
    for c in target.chars() {
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '.' => out.push(c),
            '/' => out.push_str("__"),
            other => out.push_str(&format!("_{:x}_", other as u32)),
        }
    }
    out
}

fn open(dir: &Path, target: &str, ext: &str) -> std::io::Result<File> {
    std::fs::create_dir_all(dir)?;
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(dir.join(format!("{}.{ext}", file_stem(target))))
}

/// What a start or resume found when the driver lock was taken.
#[derive(Debug)]
pub enum LockError {
    Held(Option<Holder>),
    Io(std::io::Error),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Held(Some(h)) => write!(f, "{} (this machine)", h.label()),
            LockError::Held(None) => write!(f, "another process on this machine drives it"),
            LockError::Io(e) => write!(f, "the rollout lock: {e}"),
        }
    }
}

/// The held driver lock of one node group; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct DriverLock {
    file: File,
    holder: Holder,
    /// The text the last driver left (it is gone: its lock could be taken).
    previous: Option<Holder>,
}

impl DriverLock {
    /// Takes the lock for `rollout` on `target`, or says who holds it.
    pub fn acquire(dir: &Path, target: &str, rollout: &str) -> Result<DriverLock, LockError> {
        let mut file = open(dir, target, "lock").map_err(LockError::Io)?;
        match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(LockError::Held(read_holder(&mut file)));
            }
            Err(e) => return Err(LockError::Io(e)),
        }
        let previous = read_holder(&mut file);
        let mut lock = DriverLock {
            file,
            holder: Holder::here(rollout),
            previous,
        };
        lock.write().map_err(LockError::Io)?;
        Ok(lock)
    }

    /// The heartbeat: `last_seen` is now.
    pub fn beat(&mut self) {
        self.holder.last_seen = Utc::now();
        if let Err(e) = self.write() {
            tracing::warn!("rollout lock heartbeat: {e}");
        }
    }

    /// The lock now drives `rollout` (a start's plan got its id after the lock was taken).
    pub fn set_rollout(&mut self, rollout: &str) {
        self.holder.rollout = rollout.to_string();
        self.beat();
    }

    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    /// The driver before this one, as its lock's text says (who, and when it was last
    /// seen: from then on nobody released anything), when one ever held it.
    pub fn previous(&self) -> Option<&Holder> {
        self.previous.as_ref()
    }

    fn write(&mut self) -> std::io::Result<()> {
        let text = serde_json::to_string(&self.holder).unwrap_or_default();
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(text.as_bytes())?;
        self.file.flush()
    }
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(4096).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Who drives `target`'s rollout now, as far as this machine knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockState {
    /// A live process holds the lock (maybe this one).
    Held(Option<Holder>),
    /// Nobody holds it; the last driver, when one ever did.
    Free(Option<Holder>),
}

/// Looks at `target`'s driver lock without keeping it.
pub fn probe(dir: &Path, target: &str) -> LockState {
    let path = dir.join(format!("{}.lock", file_stem(target)));
    let Ok(mut file) = File::open(&path) else {
        return LockState::Free(None);
    };
    let holder = read_holder(&mut file);
    match flock(&file, libc::LOCK_SH | libc::LOCK_NB) {
        Ok(()) => {
            let _ = flock(&file, libc::LOCK_UN);
            LockState::Free(holder)
        }
        Err(_) => LockState::Held(holder),
    }
}

/// Held while a requester writes a control request, or the engine checks requests and
/// records a release: the two never interleave.
pub struct ControlLock {
    file: File,
}

impl ControlLock {
    /// Blocks until the control lock of `target` is ours (held only for a journal write).
    pub fn acquire(dir: &Path, target: &str) -> std::io::Result<ControlLock> {
        let file = open(dir, target, "control")?;
        flock(&file, libc::LOCK_EX)?;
        Ok(ControlLock { file })
    }
}

impl Drop for ControlLock {
    fn drop(&mut self) {
        let _ = flock(&self.file, libc::LOCK_UN);
    }
}

/// `flock(2)` on `file` with `op` (`LOCK_EX`, `LOCK_SH`, `LOCK_UN`, with `LOCK_NB` not to
/// wait); a lock goes when the file is closed. (std's `File::lock` is newer than the
/// crate's MSRV.)
fn flock(file: &File, op: i32) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this `File` owns for the whole call.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_the_loser_is_told_who() {
        let dir = tempfile::tempdir().unwrap();
        let a = DriverLock::acquire(dir.path(), "c/workers", "r1").expect("first");
        match DriverLock::acquire(dir.path(), "c/workers", "r2") {
            Err(LockError::Held(Some(h))) => {
                assert_eq!(h.rollout, "r1");
                assert_eq!(h.pid, std::process::id());
            }
            other => panic!("second acquire: {other:?}"),
        }
        // Another node group is another lock.
        let _b = DriverLock::acquire(dir.path(), "c/masters", "r3").expect("other group");
        assert!(matches!(
            probe(dir.path(), "c/workers"),
            LockState::Held(Some(_))
        ));
        drop(a);
        match probe(dir.path(), "c/workers") {
            LockState::Free(Some(h)) => assert_eq!(h.rollout, "r1"),
            other => panic!("after release: {other:?}"),
        }
        let _c = DriverLock::acquire(dir.path(), "c/workers", "r2").expect("free again");
        assert_eq!(probe(dir.path(), "x/y"), LockState::Free(None));
    }

    #[test]
    fn labels_map_to_distinct_safe_file_names() {
        assert_eq!(file_stem("c/w"), "c__w");
        assert_ne!(file_stem("a/b_c"), file_stem("a/b/c"));
        assert!(!file_stem("../../etc").contains('/'));
    }
}
