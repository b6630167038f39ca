//! The store's directory and its in-memory state: where objects live,
//! which hashes are pinned by writes not yet durable, which databases may
//! hold references (`users`), and the counters `show stats` reports.
//!
//! One mutex guards all of it. A write takes it twice, briefly: to
//! publish its object and pin it (I37), and — through the pin's drop —
//! to unpin it once its commit is durable or failed. A sweep holds it
//! from start to end (I39), so no pin can be taken while it decides;
//! writes wait for the sweep rather than the other way round.
//!
//! ```text
//!   put: stream → tmp/<r>.part → sync ─┐
//!                                      ├─ lock: register user, pin, rename or drop tmp
//!   commit (the reference) ◀───────────┘
//!   pin dropped once the commit is durable or failed
//! ```

use super::content::{AttachmentCompression, CompressionLevel, ContentHash};
use super::object::ObjectHeader;
use super::read::read_header;
use crate::{NsfError, NsfResult};
use parking_lot::{Mutex, MutexGuard};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use storage::backend::{read_file, write_all_at, write_file_atomic};
use storage::{Backend, OpenMode};

/// The store's directory under the data directory.
pub(crate) const STORE_DIR: &str = "attachstore";
const USERS: &str = "users";
const CLEAN: &str = "clean";

/// What the store holds and what it did since the engine opened, for
/// `show stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Objects in the store, their stored bytes and their original
    /// bytes (what compression saved is the difference).
    pub objects: u64,
    pub stored_bytes: u64,
    pub original_bytes: u64,
    /// Original bytes of every reference, as the last sweep counted them
    /// (what deduplication saved is this less `original_bytes`); 0 before
    /// the first sweep.
    pub logical_bytes: u64,
    /// Attachments stored through the store since the engine opened, and
    /// how many of them found their content already there.
    pub stored: u64,
    pub dedup_hits: u64,
    /// Objects removed by sweeps since the engine opened.
    pub reclaimed: u64,
}

pub(crate) struct State {
    pins: HashMap<ContentHash, usize>,
    users: BTreeSet<String>,
    /// Temporary files being written (a sweep leaves them alone).
    writing: HashSet<PathBuf>,
}

/// The engine's attachment store.
pub(crate) struct AttachStore {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) dir: PathBuf,
    pub(crate) compression: AttachmentCompression,
    /// The zstd level compressed objects are written at.
    pub(super) level: CompressionLevel,
    /// In archive style, where sweeps move objects instead of deleting
    /// them (`<archive_dir>/attachstore`, `copy.rs`).
    pub(super) archive: Option<PathBuf>,
    pub(super) state: Mutex<State>,
    /// Set by a failed write or sync: puts are refused until restart (I11).
    failed: Mutex<Option<String>>,
    /// A reference went or content was abandoned this session: the
    /// shutdown sweeps.
    released: AtomicBool,
    pub(super) stats: Counters,
}

#[derive(Default)]
pub(super) struct Counters {
    pub objects: AtomicU64,
    pub stored_bytes: AtomicU64,
    pub original_bytes: AtomicU64,
    pub logical_bytes: AtomicU64,
    pub stored: AtomicU64,
    pub dedup_hits: AtomicU64,
    pub reclaimed: AtomicU64,
}

impl Counters {
    /// Content was staged: stored anew, or found there (`hit`).
    pub fn staged(&self, hit: bool) {
        self.stored.fetch_add(1, Ordering::Relaxed);
        if hit {
            self.dedup_hits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An object appeared or went.
    pub fn object(&self, stored: u64, original: u64, appeared: bool) {
        let f = |a: &AtomicU64, v: u64| {
            if appeared {
                a.fetch_add(v, Ordering::Relaxed);
            } else {
                a.fetch_sub(v, Ordering::Relaxed);
            }
        };
        f(&self.objects, 1);
        f(&self.stored_bytes, stored);
        f(&self.original_bytes, original);
    }
}

/// Holds an object against sweeps while a write that references it is
/// not yet durable (I37). Dropping it unpins.
pub(crate) struct Pin {
    store: Arc<AttachStore>,
    hash: ContentHash,
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut st = self.store.state.lock();
        if let Some(n) = st.pins.get_mut(&self.hash) {
            *n -= 1;
            if *n == 0 {
                st.pins.remove(&self.hash);
            }
        }
    }
}

/// The pins of a staged foreign note's content, shared by its clones
/// and dropped with the last of them (after the batch that stores it).
#[derive(Clone, Default)]
pub(crate) struct Pins(Arc<Vec<Pin>>);

impl Pins {
    pub fn new(pins: Vec<Pin>) -> Pins {
        Pins(Arc::new(pins))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Pins say nothing about the content: staged notes compare without them.
impl PartialEq for Pins {
    fn eq(&self, _: &Pins) -> bool {
        true
    }
}

impl std::fmt::Debug for Pins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pins({})", self.0.len())
    }
}

impl AttachStore {
    /// Opens (creating) the store under `data_dir`; also says whether the
    /// last stop was clean (the `clean` marker was there). The marker is
    /// removed durably before anything can be written, so a crash from
    /// now on is seen at the next open.
    pub fn open(
        backend: Arc<dyn Backend>,
        data_dir: &Path,
        (compression, level): (AttachmentCompression, CompressionLevel),
        archive: Option<PathBuf>,
    ) -> NsfResult<(AttachStore, bool)> {
        let dir = data_dir.join(STORE_DIR);
        for d in [dir.join("objects"), dir.join("tmp")] {
            backend.create_dir_all(&d).map_err(|e| io_err(&d, e))?;
        }
        let users_path = dir.join(USERS);
        let users = match read_file(backend.as_ref(), &users_path) {
            Ok(bytes) => {
                let users = parse_users(&bytes);
                // A torn last line is dropped now, so the next append
                // starts a line of its own.
                if bytes.last().is_some_and(|&b| b != b'\n') {
                    let text: String = users.iter().map(|u| format!("{u}\n")).collect();
                    write_file_atomic(backend.as_ref(), &users_path, text.as_bytes())
                        .map_err(|e| io_err(&users_path, e))?;
                }
                users
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => return Err(io_err(&users_path, e)),
        };
        let clean_path = dir.join(CLEAN);
        let was_clean = backend.exists(&clean_path);
        if was_clean {
            backend
                .remove_file(&clean_path)
                .and_then(|()| backend.sync_dir(&dir))
                .map_err(|e| io_err(&clean_path, e))?;
        }
        let store = AttachStore {
            backend,
            dir,
            compression,
            level,
            archive,
            state: Mutex::new(State {
                pins: HashMap::new(),
                users,
                writing: HashSet::new(),
            }),
            failed: Mutex::new(None),
            released: AtomicBool::new(false),
            stats: Counters::default(),
        };
        store.count_objects()?;
        Ok((store, was_clean))
    }

    pub fn object_path(&self, hash: &ContentHash) -> PathBuf {
        let hex = hash.to_hex();
        self.dir.join("objects").join(&hex[..2]).join(hex)
    }

    pub fn tmp_dir(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    pub fn has_object(&self, hash: &ContentHash) -> bool {
        self.backend.exists(&self.object_path(hash))
    }

    /// Refuses writes after a failed write or sync (I11).
    pub fn check_writable(&self) -> NsfResult<()> {
        match &*self.failed.lock() {
            Some(why) => Err(NsfError::Store {
                what: self.dir.display().to_string(),
                reason: format!("failed earlier ({why}); restart the server"),
            }),
            None => Ok(()),
        }
    }

    /// Marks the store failed (I11) and returns the error to report.
    pub fn fail(&self, path: &Path, what: &str, e: std::io::Error) -> NsfError {
        let why = format!("{what} {}: {e}", path.display());
        self.failed.lock().get_or_insert(why.clone());
        NsfError::Store {
            what: path.display().to_string(),
            reason: format!("{what}: {e}"),
        }
    }

    /// A reference may have gone, or content was abandoned: the next
    /// shutdown sweeps.
    pub fn note_released(&self) {
        self.released.store(true, Ordering::Relaxed);
    }

    pub fn released(&self) -> bool {
        self.released.load(Ordering::Relaxed)
    }

    /// I37: publishes the synced temporary file `tmp` as the object
    /// `hash` (or drops it when the object is there: a hit), having made
    /// `db` a durable user, and pins the object. On a hit, returns the
    /// existing object's header: its form may differ from the one just
    /// written (another compression setting, or a form carried by
    /// replication), and the item must name the object as it is.
    pub fn publish(
        self: &Arc<Self>,
        tmp: &Path,
        hash: ContentHash,
        db: &str,
    ) -> NsfResult<(Pin, Option<ObjectHeader>)> {
        let mut st = self.state.lock();
        self.register_user(&mut st, db)?;
        let path = self.object_path(&hash);
        let hit = self.backend.exists(&path);
        let mut existing = None;
        if hit {
            existing = Some(self.existing_header(&path, hash)?);
            // Best effort: a leftover temporary file goes at the next sweep.
            let _ = self.backend.remove_file(tmp);
        } else {
            let parent = path.parent().unwrap_or(&self.dir).to_path_buf();
            self.backend
                .create_dir_all(&parent)
                .map_err(|e| self.fail(&parent, "creating", e))?;
            self.backend
                .rename(tmp, &path)
                .map_err(|e| self.fail(&path, "renaming into", e))?;
            self.backend
                .sync_dir(&parent)
                .map_err(|e| self.fail(&parent, "syncing", e))?;
            // The object directory itself may be new.
            let objects = self.dir.join("objects");
            self.backend
                .sync_dir(&objects)
                .map_err(|e| self.fail(&objects, "syncing", e))?;
        }
        Ok((self.pin_locked(&mut st, hash), existing))
    }

    /// Pins the object `hash`, which must be here, having made `db` a
    /// durable user (I37), and returns its header.
    pub fn pin_existing(
        self: &Arc<Self>,
        hash: ContentHash,
        db: &str,
    ) -> NsfResult<(Pin, ObjectHeader)> {
        let mut st = self.state.lock();
        let path = self.object_path(&hash);
        if !self.backend.exists(&path) {
            return Err(NsfError::Store {
                what: format!("object {hash}"),
                reason: "is not in the attachment store (the content it names is gone)".into(),
            });
        }
        let header = self.existing_header(&path, hash)?;
        self.register_user(&mut st, db)?;
        Ok((self.pin_locked(&mut st, hash), header))
    }

    /// The header of the object at `path`, which must be `hash`'s.
    fn existing_header(&self, path: &Path, hash: ContentHash) -> NsfResult<ObjectHeader> {
        let bad = |reason: String| NsfError::Store {
            what: path.display().to_string(),
            reason,
        };
        let file = self
            .backend
            .open(path, OpenMode::Existing)
            .map_err(|e| bad(format!("opening: {e}")))?;
        let header = read_header(file.as_ref()).map_err(bad)?;
        if header.hash != hash {
            return Err(bad(format!("holds content {}", header.hash)));
        }
        Ok(header)
    }

    fn pin_locked(self: &Arc<Self>, st: &mut State, hash: ContentHash) -> Pin {
        *st.pins.entry(hash).or_default() += 1;
        Pin {
            store: self.clone(),
            hash,
        }
    }

    /// Appends `db` to `users` and syncs it, once per path (I37).
    pub(super) fn register_user(&self, st: &mut State, db: &str) -> NsfResult<()> {
        if st.users.contains(db) {
            return Ok(());
        }
        let path = self.dir.join(USERS);
        let f = self
            .backend
            .open(&path, OpenMode::CreateOrOpen)
            .map_err(|e| self.fail(&path, "opening", e))?;
        let end = f.len().map_err(|e| self.fail(&path, "reading", e))?;
        let line = format!("{db}\n");
        write_all_at(f.as_ref(), line.as_bytes(), end)
            .and_then(|()| f.sync_data())
            .map_err(|e| self.fail(&path, "appending to", e))?;
        if end == 0 {
            self.backend
                .sync_dir(&self.dir)
                .map_err(|e| self.fail(&self.dir, "syncing", e))?;
        }
        st.users.insert(db.to_string());
        Ok(())
    }

    /// A temporary file is being written: sweeps leave it alone until
    /// [`Self::tmp_done`].
    pub fn tmp_started(&self, tmp: &Path) {
        self.state.lock().writing.insert(tmp.to_path_buf());
    }

    pub fn tmp_done(&self, tmp: &Path) {
        self.state.lock().writing.remove(tmp);
    }

    pub(super) fn is_writing(st: &State, tmp: &Path) -> bool {
        st.writing.contains(tmp)
    }

    /// Takes the lock for a whole sweep (I39).
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// The databases that may hold references.
    pub(super) fn users(st: &State) -> Vec<String> {
        st.users.iter().cloned().collect()
    }

    pub(super) fn is_pinned(st: &State, hash: &ContentHash) -> bool {
        st.pins.contains_key(hash)
    }

    /// Rewrites `users` as `keep` (atomically, I9).
    pub(super) fn rewrite_users(&self, st: &mut State, keep: BTreeSet<String>) -> NsfResult<()> {
        if keep == st.users {
            return Ok(());
        }
        let path = self.dir.join(USERS);
        let text: String = keep.iter().map(|u| format!("{u}\n")).collect();
        write_file_atomic(self.backend.as_ref(), &path, text.as_bytes())
            .map_err(|e| self.fail(&path, "rewriting", e))?;
        st.users = keep;
        Ok(())
    }

    /// Writes the `clean` marker at a clean shutdown (after its sweep).
    pub fn mark_clean(&self) -> NsfResult<()> {
        let path = self.dir.join(CLEAN);
        write_file_atomic(self.backend.as_ref(), &path, b"")
            .map_err(|e| self.fail(&path, "writing", e))
    }

    pub fn stats(&self) -> StoreStats {
        let c = &self.stats;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StoreStats {
            objects: get(&c.objects),
            stored_bytes: get(&c.stored_bytes),
            original_bytes: get(&c.original_bytes),
            logical_bytes: get(&c.logical_bytes),
            stored: get(&c.stored),
            dedup_hits: get(&c.dedup_hits),
            reclaimed: get(&c.reclaimed),
        }
    }

    /// Counts the objects there are (their headers say their sizes).
    fn count_objects(&self) -> NsfResult<()> {
        for (_, path) in super::sweep::objects(self)? {
            if let Some(h) = self.header_of(&path) {
                self.stats.object(h.stored_size, h.size, true);
            }
        }
        Ok(())
    }

    /// An object's header, if it reads.
    pub(super) fn header_of(&self, path: &Path) -> Option<ObjectHeader> {
        let f = self.backend.open(path, OpenMode::Existing).ok()?;
        read_header(f.as_ref()).ok()
    }
}

/// `users` is one database path a line; a torn last line (a crash while
/// appending) is ignored — its database had not committed a reference.
fn parse_users(bytes: &[u8]) -> BTreeSet<String> {
    let text = String::from_utf8_lossy(bytes);
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => "",
    };
    complete
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

pub(super) fn io_err(path: &Path, e: std::io::Error) -> NsfError {
    NsfError::Io {
        path: path.display().to_string(),
        source: e,
    }
}
