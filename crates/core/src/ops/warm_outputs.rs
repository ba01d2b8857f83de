//! What caldera remembers of Heat's output cache, so a warm Heat answers in one request.
//!
//! Heat resolves an aggregate output such as Magnum's `kube_minions_private`
//! (`{get_attr: [kube_minions, kube_minion_ip]}`) by loading every member's nested stack: 12 s
//! for 200 members on a one-process Heat 27. It then keeps the resolved value, and the same
//! request answers in 0.05 s until the group changes. Heat does not say whether it holds a
//! value, and asking when it does not costs its engine the whole resolution while caldera's
//! own cheaper requests wait behind it. So caldera asks only when it knows:
//!
//! - after a run found every address of a settled group some other way, caldera sends the
//!   aggregate request once and does not wait for the answer (Heat resolves and keeps it in
//!   the background) and remembers it did, keyed by the group resource and its `updated_time`;
//! - the next run that finds the same group unchanged asks for the aggregate first, with a
//!   head start before the other sources; an answer within the head start marks the entry warm;
//! - an aggregate that was slow twice in a row marks the entry cold: no further head start
//!   and no further warm-up for that version of the group (a head start costs at most 1 s).
//!
//! Any update of the group moves its `updated_time`, so a remembered value is never used for
//! a group that changed. The file is small and bounded; a damaged or oversized one is ignored
//! (the runs are only slower), never trusted.
//!
//! The memory is asked once per settled group per run, and on every nodes refresh in the
//! console: a handle keeps what it last read or wrote, with the file's stamp (modification
//! time, length and, on Unix, inode), and reads the file again only when the stamp moved
//! (another caldera replaced it). Every write replaces the file whole, so a replacement
//! always has a new inode and a new stamp.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

/// Entries kept (oldest dropped first).
const MAX_ENTRIES: usize = 512;
/// Largest file read.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// What is known of one aggregate output of one version of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Warmth {
    /// caldera asked Heat to resolve it and did not wait for the answer.
    Requested,
    /// Heat answered it within the head start: it holds the value.
    Warm,
    /// Slow once after a warm-up: the warm-up may not have reached Heat before it was given
    /// up, but the slow request itself has Heat resolve the value; asked once more.
    Missed,
    /// Asked after a warm-up, it was still slow: Heat does not keep it here.
    Cold,
}

/// One group version's aggregate output: the stack holding the group, the group resource,
/// its `updated_time` as Heat gave it, and the output.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct OutputKey {
    pub stack_id: String,
    pub group: String,
    pub stamp: String,
    pub output: String,
}

impl OutputKey {
    fn flat(&self) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.stack_id, self.group, self.stamp, self.output
        )
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Entry {
    warmth: Warmth,
    /// When it was last written (ms since the epoch): the oldest go first.
    at_ms: i64,
}

/// What tells one version of the file from another without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    /// A replacement is a new file: this tells it apart even within the clock's resolution.
    #[cfg(unix)]
    inode: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            #[cfg(unix)]
            inode: std::os::unix::fs::MetadataExt::ino(meta),
        }
    }

    /// The file at `path` now; `None` when there is none (or it cannot be looked at).
    fn at(path: &Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
    }
}

/// The file as this handle last read or wrote it.
#[derive(Debug, Default)]
struct Cache {
    /// The entries and the stamp of the file they came from (`None`: no file); `None` until
    /// the first look.
    seen: Option<(Option<Stamp>, BTreeMap<String, Entry>)>,
    /// Times the file was read (what the tests count).
    reads: u64,
}

impl Cache {
    /// The entries of the file at `path` as it is now, read only when its stamp moved.
    fn current(&mut self, path: &Path) -> &mut BTreeMap<String, Entry> {
        let now = Stamp::at(path);
        let (stamp, all) = match self.seen.take() {
            Some((seen, all)) if seen == now => (seen, all),
            _ if now.is_none() => (None, BTreeMap::new()),
            _ => {
                self.reads += 1;
                load(path)
            }
        };
        &mut self.seen.insert((stamp, all)).1
    }
}

/// The memory, in a file (`$XDG_STATE_HOME/caldera/heat-outputs.json` by default). Cheap to
/// clone (the clones share what was read); writes from one process are serialised, and a
/// write replaces the file whole.
#[derive(Debug, Clone)]
pub struct WarmOutputs {
    path: PathBuf,
    cache: Arc<Mutex<Cache>>,
}

impl WarmOutputs {
    pub fn at(path: impl Into<PathBuf>) -> WarmOutputs {
        WarmOutputs {
            path: path.into(),
            cache: Arc::new(Mutex::new(Cache::default())),
        }
    }

    /// The cache, held for the whole of a get or a set (the file's I/O included).
    fn cache(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Next to the journal.
    pub fn default_location() -> WarmOutputs {
        let journal = crate::journal::default_path();
        let dir = journal.parent().map(Path::to_path_buf).unwrap_or_default();
        WarmOutputs::at(dir.join("heat-outputs.json"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is known of `key`, if anything.
    pub fn get(&self, key: &OutputKey) -> Option<Warmth> {
        let mut cache = self.cache();
        cache.current(&self.path).get(&key.flat()).map(|e| e.warmth)
    }

    /// Records `warmth` for `key`. A failure to write is logged: it costs speed only.
    pub fn set(&self, key: &OutputKey, warmth: Warmth) {
        let mut cache = self.cache();
        let mut all = std::mem::take(cache.current(&self.path));
        // Strictly after every entry, so the oldest is well defined within a millisecond.
        let newest = all.values().map(|e| e.at_ms).max().unwrap_or(i64::MIN);
        let at_ms = chrono::Utc::now()
            .timestamp_millis()
            .max(newest.saturating_add(1));
        all.insert(key.flat(), Entry { warmth, at_ms });
        while all.len() > MAX_ENTRIES {
            let oldest = all
                .iter()
                .min_by_key(|(_, e)| e.at_ms)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => all.remove(&k),
                None => break,
            };
        }
        cache.seen = match write(&self.path, &all) {
            // What is on disk now is what this handle holds.
            Ok(stamp) => Some((Some(stamp), all)),
            Err(e) => {
                tracing::info!(
                    "remembering Heat's output cache in {}: {e}",
                    self.path.display()
                );
                // The file is as it was, or half replaced: the next look reads it.
                None
            }
        };
    }

    /// Times this handle (and its clones) read the file.
    #[cfg(test)]
    fn reads(&self) -> u64 {
        self.cache().reads
    }
}

/// The file at `path` with the stamp of what was read (the open file's, so a replacement
/// during the read is read again next time rather than taken for the old file); a missing,
/// damaged or oversized file holds nothing.
fn load(path: &Path) -> (Option<Stamp>, BTreeMap<String, Entry>) {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::info!("{}: {e}", path.display());
            }
            return (None, BTreeMap::new());
        }
    };
    let stamp = match f.metadata() {
        Ok(meta) => Stamp::of(&meta),
        Err(e) => {
            tracing::info!("{}: {e}", path.display());
            return (None, BTreeMap::new());
        }
    };
    if stamp.len > MAX_FILE_BYTES {
        tracing::info!("{} is too large; ignored", path.display());
        return (Some(stamp), BTreeMap::new());
    }
    let mut body = Vec::new();
    let parsed = f
        .read_to_end(&mut body)
        .map(|_| serde_json::from_slice(&body));
    let all = match parsed {
        Ok(Ok(map)) => map,
        Ok(Err(e)) => {
            tracing::info!("{} does not parse ({e}); ignored", path.display());
            BTreeMap::new()
        }
        Err(e) => {
            tracing::info!("{}: {e}", path.display());
            BTreeMap::new()
        }
    };
    (Some(stamp), all)
}

/// Writes the whole map to a temporary file beside `path`, then renames it over `path`: a
/// reader sees the old file or the new one, never half of one. Returns the new file's stamp
/// (a rename keeps a file's modification time, length and inode).
fn write(path: &Path, all: &BTreeMap<String, Entry>) -> std::io::Result<Stamp> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let body = serde_json::to_vec(all).map_err(std::io::Error::other)?;
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&body)?;
    f.sync_all()?;
    let stamp = Stamp::of(&f.metadata()?);
    std::fs::rename(&tmp, path)?;
    Ok(stamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(stamp: &str) -> OutputKey {
        OutputKey {
            stack_id: "s1".into(),
            group: "kube_minions".into(),
            stamp: stamp.into(),
            output: "kube_minions_private".into(),
        }
    }

    #[test]
    fn remembers_per_group_version_and_survives_a_new_handle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/heat-outputs.json");
        let m = WarmOutputs::at(&path);
        assert_eq!(m.get(&key("t1")), None);
        m.set(&key("t1"), Warmth::Requested);
        m.set(&key("t1"), Warmth::Warm);
        let again = WarmOutputs::at(&path);
        assert_eq!(again.get(&key("t1")), Some(Warmth::Warm));
        // The group changed: nothing is known of its new version.
        assert_eq!(again.get(&key("t2")), None);
    }

    #[test]
    fn a_damaged_or_huge_file_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("heat-outputs.json");
        std::fs::write(&path, b"{\"torn\": {\"warmth\": \"wa").unwrap();
        let m = WarmOutputs::at(&path);
        assert_eq!(m.get(&key("t1")), None);
        m.set(&key("t1"), Warmth::Cold);
        assert_eq!(m.get(&key("t1")), Some(Warmth::Cold));
        std::fs::write(&path, vec![b' '; MAX_FILE_BYTES as usize + 1]).unwrap();
        assert_eq!(m.get(&key("t1")), None);
    }

    #[test]
    fn keeps_at_most_the_newest_entries() {
        let dir = tempfile::tempdir().unwrap();
        let m = WarmOutputs::at(dir.path().join("h.json"));
        for i in 0..MAX_ENTRIES + 5 {
            m.set(&key(&format!("t{i}")), Warmth::Warm);
        }
        assert_eq!(load(m.path()).1.len(), MAX_ENTRIES);
        assert_eq!(
            m.get(&key(&format!("t{}", MAX_ENTRIES + 4))),
            Some(Warmth::Warm)
        );
    }

    #[test]
    fn repeated_gets_read_the_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("heat-outputs.json");
        let writer = WarmOutputs::at(&path);
        writer.set(&key("t1"), Warmth::Warm);
        writer.set(&key("t2"), Warmth::Requested);
        // The writer holds what it wrote: it never had to read the file.
        assert_eq!(writer.get(&key("t1")), Some(Warmth::Warm));
        assert_eq!(writer.reads(), 0);
        let reader = WarmOutputs::at(&path);
        for _ in 0..5 {
            assert_eq!(reader.get(&key("t1")), Some(Warmth::Warm));
            assert_eq!(reader.clone().get(&key("t2")), Some(Warmth::Requested));
        }
        assert_eq!(reader.reads(), 1);
        // A set on the file as read does not read it again either.
        reader.set(&key("t3"), Warmth::Cold);
        assert_eq!(reader.get(&key("t3")), Some(Warmth::Cold));
        assert_eq!(reader.reads(), 1);
    }

    #[test]
    fn a_file_replaced_by_another_process_is_seen_by_the_next_get() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("heat-outputs.json");
        let here = WarmOutputs::at(&path);
        here.set(&key("t1"), Warmth::Warm);
        assert_eq!(here.get(&key("t1")), Some(Warmth::Warm));
        // Another caldera (its own handle, its own cache) marks it cold: a file of the same
        // length, written within the same clock tick perhaps.
        let there = WarmOutputs::at(&path);
        there.set(&key("t1"), Warmth::Cold);
        assert_eq!(here.get(&key("t1")), Some(Warmth::Cold));
        assert_eq!(here.reads(), 1);
        // Replaced by hand with a damaged file: ignored, then a good one is seen again.
        std::fs::write(dir.path().join("next"), b"{\"torn").unwrap();
        std::fs::rename(dir.path().join("next"), &path).unwrap();
        assert_eq!(here.get(&key("t1")), None);
        there.set(&key("t2"), Warmth::Missed);
        assert_eq!(here.get(&key("t2")), Some(Warmth::Missed));
        assert_eq!(here.reads(), 3);
        // The file removed: nothing is known.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(here.get(&key("t2")), None);
    }
}
