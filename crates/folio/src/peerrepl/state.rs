//! The replication schedule's state on disk, `<data>/replication.json`:
//! each `[[replication]]` entry's runs, errors, last run and what it did,
//! and an on-change entry's seen change sequences (`schedule.rs`), so a
//! restarted server neither runs every entry at once nor forgets the
//! history `show stats` reports.
//!
//! ```text
//!   {"format":"folio-replication-state","version":1,
//!    "entries":{"hub":{"peer":"hub:1352","runs":12,"errors":0,
//!      "last_run_micros":1764000000000000,"documents":3,"bytes":2048,
//!      "failures":[],"warnings":[],"seen":{"sales.fdb":118}}}}
//! ```
//!
//! Written whole after each run, through the storage backend like the
//! data directory's other small files: temporary file, sync, rename,
//! directory sync (`write_file_atomic`, I9), so a reader finds the old
//! state or the new, never a mix. A run whose state a crash kept from
//! being written is simply run again at start (every pull resumes from
//! its history, I26). The file is advisory: one that cannot be read or
//! does not decode is reported by `load` and the server starts with a
//! fresh schedule (every entry due at once), never refusing to start.

use crate::error::{FolioError, FolioResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use storage::backend::Backend;

/// The file's name in the data directory.
pub const STATE_FILE: &str = "replication.json";
const FORMAT: &str = "folio-replication-state";
const VERSION: u32 = 1;

/// Every entry's saved state, by entry name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SavedState {
    pub entries: BTreeMap<String, SavedEntry>,
}

/// One entry's saved state (the module docs show the form).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedEntry {
    /// The peer it replicated with; another peer drops the rest.
    pub peer: String,
    pub runs: u64,
    pub errors: u64,
    /// When the last run ended, µs since the epoch.
    pub last_run_micros: Option<i64>,
    /// Of the last run.
    pub documents: u64,
    pub bytes: u64,
    pub failures: Vec<String>,
    pub warnings: Vec<String>,
    /// Database path → its change sequence when the last run started.
    pub seen: BTreeMap<String, u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: String,
    version: u32,
    entries: BTreeMap<String, SavedEntry>,
}

/// The file's bytes for `state`.
pub fn encode(state: &SavedState) -> Vec<u8> {
    let file = File {
        format: FORMAT.into(),
        version: VERSION,
        entries: state.entries.clone(),
    };
    // A map of strings and numbers always serializes.
    serde_json::to_vec(&file).unwrap_or_default()
}

/// The state in `bytes`, or why it is not one.
pub fn decode(bytes: &[u8]) -> FolioResult<SavedState> {
    let bad = |why: String| FolioError::StateFile(format!("{STATE_FILE}: {why}"));
    let file: File = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    if file.format != FORMAT {
        return Err(bad(format!("format {:?}, not {FORMAT:?}", file.format)));
    }
    if file.version != VERSION {
        return Err(bad(format!("version {}, not {VERSION}", file.version)));
    }
    Ok(SavedState {
        entries: file.entries,
    })
}

/// The file's path in `data_dir`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(STATE_FILE)
}

/// The saved state of `data_dir`: `Ok(None)` when there is none yet, an
/// error naming the file when it cannot be read or decoded (the caller
/// warns and starts afresh).
pub fn load(backend: &dyn Backend, data_dir: &Path) -> FolioResult<Option<SavedState>> {
    let path = path(data_dir);
    if !backend.exists(&path) {
        return Ok(None);
    }
    let bytes = storage::backend::read_file(backend, &path)
        .map_err(|e| FolioError::StateFile(format!("{STATE_FILE}: cannot be read: {e}")))?;
    decode(&bytes).map(Some)
}

/// Writes `state` to `data_dir` atomically and durably (module docs, I9).
pub fn save(backend: &dyn Backend, data_dir: &Path, state: &SavedState) -> FolioResult<()> {
    storage::backend::write_file_atomic(backend, &path(data_dir), &encode(state))
        .map_err(|e| FolioError::Internal(format!("writing {STATE_FILE}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::backend::MemBackend;

    fn sample() -> SavedState {
        let entry = SavedEntry {
            peer: "hub:1352".into(),
            runs: 12,
            errors: 1,
            last_run_micros: Some(1_764_000_000_000_000),
            documents: 3,
            bytes: 2048,
            failures: vec!["x.fdb: refused".into()],
            warnings: vec![],
            seen: BTreeMap::from([("sales.fdb".into(), 118)]),
        };
        SavedState {
            entries: BTreeMap::from([("hub".into(), entry)]),
        }
    }

    #[test]
    fn saved_state_reads_back_as_written() {
        let backend = MemBackend::new();
        let dir = Path::new("/data");
        backend.create_dir_all(dir).unwrap();
        assert_eq!(load(&backend, dir).unwrap(), None, "none yet");
        save(&backend, dir, &sample()).unwrap();
        assert_eq!(load(&backend, dir).unwrap(), Some(sample()));
        let mut next = sample();
        next.entries.clear();
        save(&backend, dir, &next).unwrap();
        assert_eq!(load(&backend, dir).unwrap(), Some(next), "replaced whole");
    }

    #[test]
    fn the_format_is_fixed() {
        let text = r#"{"format":"folio-replication-state","version":1,"entries":{"hub":{"peer":"hub:1352","runs":12,"errors":1,"last_run_micros":1764000000000000,"documents":3,"bytes":2048,"failures":["x.fdb: refused"],"warnings":[],"seen":{"sales.fdb":118}}}}"#;
        assert_eq!(String::from_utf8(encode(&sample())).unwrap(), text);
        assert_eq!(decode(text.as_bytes()).unwrap(), sample());
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let good = String::from_utf8(encode(&sample())).unwrap();
        for (bytes, says) in [
            (good[..good.len() / 2].to_string(), "EOF"),
            ("\u{0}\u{0}\u{0}".to_string(), "replication.json"),
            (good.replace("state\"", "stat\""), "format"),
            (good.replace("\"version\":1", "\"version\":2"), "version 2"),
            (good.replace("\"runs\"", "\"ruins\""), "ruins"),
            (good.replace("12", "-12"), "invalid value"),
        ] {
            let e = decode(bytes.as_bytes()).unwrap_err().to_string();
            assert!(e.contains("replication.json") && e.contains(says), "{e}");
        }
        let backend = MemBackend::new();
        let dir = Path::new("/data");
        backend.create_dir_all(dir).unwrap();
        storage::backend::write_file_atomic(&backend, &path(dir), b"{").unwrap();
        assert!(load(&backend, dir).is_err());
    }
}
