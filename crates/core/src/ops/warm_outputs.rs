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

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// The memory, in a file (`$XDG_STATE_HOME/caldera/heat-outputs.json` by default). Cheap to
/// clone; writes from one process are serialised, and a write replaces the file whole.
#[derive(Debug, Clone)]
pub struct WarmOutputs {
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

impl WarmOutputs {
    pub fn at(path: impl Into<PathBuf>) -> WarmOutputs {
        WarmOutputs {
            path: path.into(),
            lock: Arc::new(Mutex::new(())),
        }
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
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        read(&self.path).get(&key.flat()).map(|e| e.warmth)
    }

    /// Records `warmth` for `key`. A failure to write is logged: it costs speed only.
    pub fn set(&self, key: &OutputKey, warmth: Warmth) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = read(&self.path);
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
        if let Err(e) = write(&self.path, &all) {
            tracing::info!(
                "remembering Heat's output cache in {}: {e}",
                self.path.display()
            );
        }
    }
}

fn read(path: &Path) -> BTreeMap<String, Entry> {
    let Ok(meta) = std::fs::metadata(path) else {
        return BTreeMap::new();
    };
    if meta.len() > MAX_FILE_BYTES {
        tracing::info!("{} is too large; ignored", path.display());
        return BTreeMap::new();
    }
    match std::fs::read(path).map(|b| serde_json::from_slice(&b)) {
        Ok(Ok(map)) => map,
        Ok(Err(e)) => {
            tracing::info!("{} does not parse ({e}); ignored", path.display());
            BTreeMap::new()
        }
        Err(e) => {
            tracing::info!("{}: {e}", path.display());
            BTreeMap::new()
        }
    }
}

/// Writes the whole map to a temporary file beside `path`, then renames it over `path`: a
/// reader sees the old file or the new one, never half of one.
fn write(path: &Path, all: &BTreeMap<String, Entry>) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let body = serde_json::to_vec(all).map_err(std::io::Error::other)?;
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&body)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
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
        assert_eq!(read(m.path()).len(), MAX_ENTRIES);
        assert_eq!(
            m.get(&key(&format!("t{}", MAX_ENTRIES + 4))),
            Some(Warmth::Warm)
        );
    }
}
