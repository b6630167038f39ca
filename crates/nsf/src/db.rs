//! One database file: its documents, indexes and commit protocol.
//!
//! A database is three B+trees reached from the header (page 0):
//!
//! ```text
//!   note table   note id (u32 BE)  -> note record (inline, or in an overflow chain)
//!   UNID index   UNID (16 bytes)   -> note id
//!   seq index    change seq (u64 BE) -> note id   ("modified since" is a range scan)
//! ```
//!
//! Concurrency: writes to a database are queued, and whoever holds the
//! writer lock (`writer` mutex) runs the queue: up to `MAX_GROUP` writes
//! built privately as one transaction (`Txn`, a savepoint before each so
//! a failing write is undone alone), appended to the server-wide log as
//! one batch, then installed in the pool under the short exclusive `state`
//! lock; readers hold `state` shared for one operation and see all of a
//! transaction or none of it (I13). The holder does not wait for the
//! log's fsync: it registers one callback with the log, which the log's
//! writer thread runs after the fsync to hand each write its result (I2),
//! and goes on with the next group while this one is made durable.
//!
//! ```text
//!  create/update/delete ─▶ queue ─▶ run_queue (lock holder): one Txn, one batch ─▶ log
//!        ▲ result                                                   │ fdatasync
//!        └──────────── when_durable callback (log writer thread) ◀──┘
//! ```
//!
//! In unlogged mode the commit writes the staged pages to the file and
//! fdatasyncs it before returning (I12).
//!
//! The access-control list is a note like any other (see `acl.rs`); the
//! database caches it parsed and drops the cache when a transaction that
//! wrote it is installed (I15). Writers that find the writer lock taken are
//! counted, with the time until their write starts, in the engine-wide
//! `LockCounters`; the uncontended path reads no clock.
//!
//! An instance's life in the open-database cache (closing, extensions of
//! the layers above, the catalog) is in `lifecycle.rs` (I19, I20).

mod lifecycle;

pub use lifecycle::CloseHook;
pub(crate) use lifecycle::Life;

use crate::acl::{acl_note_items, acl_of_note, acl_unid, is_acl_note};
use crate::attach::{self, AttachmentReader, BlobWriter};
use crate::header::{DbHeader, FLAG_UNLOGGED_OPEN};
use crate::index::{BulkWriter, IndexRead, IndexTxn};
use crate::note::access_item_name;
use crate::txn::{Txn, TxnPages};
use crate::{
    decode_note, encode_note, validate_items, Acl, AclError, AttachmentRef, Item, ItemUpdate,
    ItemValue, Note, NoteId, NoteRef, NsfError, NsfResult, OriginatorId, Seq, Timestamp, Unid,
    ATTACHMENT_PREFIX, MAX_ACL_JSON_BYTES,
};
use parking_lot::{Mutex, RwLock};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use storage::backend::write_all_at;
use storage::pool::{BufferPool, FileId, Prepared, Stamp};
use storage::{
    btree, overflow, FileHandle, Lsn, PageBuf, PageId, PageStore, PageStoreMut, StorageResult,
};
use translog::{Batch, LogError, PageChange, TransLog};

/// Largest encoded note stored inside the note table entry; larger notes
/// go to an overflow chain.
const INLINE_MAX: usize = 1800;
const TAG_INLINE: u8 = 0;
const TAG_OVERFLOW: u8 = 1;
/// Notes read per lock hold when scanning (keeps writers flowing).
const SCAN_CHUNK: usize = 256;

/// How commits reach the disk.
pub(crate) enum Durability {
    Logged {
        log: Arc<TransLog>,
        inflight: Arc<Inflight>,
    },
    Unlogged,
}

/// Batches appended to the log whose pages are not yet installed in the
/// pool; a checkpoint's redo LSN must not pass them (I8).
#[derive(Default)]
pub(crate) struct Inflight {
    entries: Mutex<BTreeMap<u64, Lsn>>,
    next: AtomicU64,
}

impl Inflight {
    /// Registers a batch about to be appended; `floor` is the log's end
    /// before the append, a lower bound of the batch's start.
    pub fn register(&self, floor: Lsn) -> u64 {
        let t = self.next.fetch_add(1, Ordering::Relaxed);
        self.entries.lock().insert(t, floor);
        t
    }
    pub fn deregister(&self, ticket: u64) {
        self.entries.lock().remove(&ticket);
    }
    pub fn min(&self) -> Option<Lsn> {
        self.entries.lock().values().min().copied()
    }
}

/// Writer-lock counters shared by an engine and all its databases.
#[derive(Default)]
pub(crate) struct LockCounters {
    writes: AtomicU64,
    waits: AtomicU64,
    wait_micros: AtomicU64,
}

impl LockCounters {
    pub fn snapshot(&self) -> crate::LockStats {
        crate::LockStats {
            waits: self.waits.load(Ordering::Relaxed),
            wait_micros: self.wait_micros.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }

    /// Records one write that waited from `since` until `until`.
    fn waited(&self, since: Instant, until: Instant) {
        let micros = until.saturating_duration_since(since).as_micros();
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.wait_micros
            .fetch_add(u64::try_from(micros).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

/// The shared innards of a database, used by transactions and attachments.
pub(crate) struct DbCore {
    pub path: String,
    pub pool: Arc<BufferPool>,
    pub file: FileId,
    pub handle: Arc<dyn FileHandle>,
    durability: Durability,
    /// Next page id past the high-water mark (I7).
    high_water: Mutex<u32>,
    /// Why the database refuses writes, beyond pool-detected I/O failures
    /// (e.g. restart recovery could not apply its log records).
    refused: Option<String>,
    /// The engine-wide gate on attachment write-back.
    pub writeback: Arc<crate::writeback::Writeback>,
    /// Set when the engine is shut down: writes are refused from then on.
    engine_closed: Arc<AtomicBool>,
}

impl DbCore {
    pub fn read_page(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.pool.read(self.file, id)
    }

    pub fn high_water(&self) -> u32 {
        *self.high_water.lock()
    }

    /// Reserves `n` consecutive never-used pages at the end of the file.
    pub fn reserve_pages(&self, n: u32) -> PageId {
        let mut hw = self.high_water.lock();
        let first = *hw;
        *hw += n;
        PageId(first)
    }

    fn check_writable(&self) -> NsfResult<()> {
        if self.engine_closed.load(Ordering::Acquire) {
            return Err(NsfError::EngineClosed);
        }
        match self.failure() {
            Some(reason) => Err(NsfError::DatabaseFailed {
                path: self.path.clone(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// Why the database refuses writes, if it failed (I11) or recovery
    /// could not bring it back.
    fn failure(&self) -> Option<String> {
        self.refused
            .clone()
            .or_else(|| self.pool.failure(self.file))
    }

    /// Unlogged writes (I12): seals each page, writes it in place and
    /// fdatasyncs the file; any failure fails the database (I11).
    fn force_pages(&self, pages: &[(PageId, Arc<PageBuf>)]) -> NsfResult<()> {
        for (id, page) in pages {
            let mut sealed = (**page).clone();
            sealed.seal(*id, Lsn::ZERO);
            write_all_at(self.handle.as_ref(), sealed.bytes(), id.offset())
                .map_err(|e| self.fail("write", e))?;
        }
        self.handle
            .sync_data()
            .map_err(|e| self.fail("fdatasync", e))
    }

    pub fn fail(&self, what: &str, e: std::io::Error) -> NsfError {
        let reason = format!("{what}: {e}");
        // I11: sticky; never retried.
        self.pool.mark_failed(self.file, reason.clone());
        NsfError::DatabaseFailed {
            path: self.path.clone(),
            reason,
        }
    }
}

/// A read-only view of committed pages (used while holding `state`).
struct Committed<'a>(&'a DbCore);

impl PageStore for Committed<'_> {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.0.read_page(id)
    }
    fn name(&self) -> &str {
        &self.0.path
    }
}

/// What a write returns: enough to find and re-update the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoteMeta {
    pub note_id: NoteId,
    pub unid: Unid,
    pub seq_num: u32,
    pub change_seq: Seq,
}

/// A write, queued until the writer lock's holder runs it.
enum WriteOp {
    Create(Vec<Item>),
    Update {
        unid: Unid,
        updates: Vec<ItemUpdate>,
        based_on: Option<u32>,
        force: bool,
    },
    Delete {
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
    },
    Attach {
        unid: Unid,
        blob: AttachmentRef,
    },
    Release(Vec<(u32, u32)>),
    /// Creates or replaces the ACL note with this JSON.
    SetAcl(String),
    /// An index transaction from the layer above (views).
    Index(IndexFn),
}

/// The body of an index transaction; it leaves its result in a place the
/// caller captured.
type IndexFn = Box<dyn FnOnce(&mut IndexTxn<'_, '_>) -> NsfResult<()> + Send>;

/// What is done with a write's result once it is known: called exactly
/// once, on the thread that ran the write (failures, unlogged mode) or on
/// the log's writer thread once the commit is durable. It must not block.
pub type WriteDone = Box<dyn FnOnce(NsfResult<Option<NoteMeta>>) + Send>;

/// A write waiting in the database's queue.
struct Queued {
    op: WriteOp,
    done: WriteDone,
    /// When it was queued, and the database's count of runs that found
    /// the writer lock taken (for the lock-wait statistics).
    queued_at: Instant,
    contended_at: u64,
    ticket: u64,
    /// A blocking submitter's slot, to wake it to run the queue itself.
    waiter: Option<Arc<Slot>>,
}

/// Writes combined into one transaction at most (bounds the log batch and
/// the work one writer-lock holder does for others).
const MAX_GROUP: usize = 64;

/// Groups a `run_queued` call runs before it hands the rest back to its
/// caller to schedule (a runtime task must not run a busy queue forever).
const RUNNER_GROUPS: usize = 4;

/// Where a blocking caller's result is left.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
    ready: parking_lot::Condvar,
}

#[derive(Default)]
struct SlotState {
    result: Option<NsfResult<Option<NoteMeta>>>,
    /// A writer-lock holder left with this write still queued: run the
    /// queue.
    kicked: bool,
}

impl Slot {
    fn fill(&self, r: NsfResult<Option<NoteMeta>>) {
        self.state.lock().result = Some(r);
        self.ready.notify_one();
    }

    fn kick(&self) {
        self.state.lock().kicked = true;
        self.ready.notify_one();
    }

    /// Sleeps until filled; `run` runs the queue when kicked, and whenever
    /// a long wait passes (a safety net: the hand-off never strands a
    /// write).
    fn wait(&self, run: impl Fn()) -> NsfResult<Option<NoteMeta>> {
        let mut st = self.state.lock();
        loop {
            if let Some(done) = st.result.take() {
                return done;
            }
            let timed_out = !st.kicked
                && self
                    .ready
                    .wait_for(&mut st, std::time::Duration::from_millis(100))
                    .timed_out();
            if (timed_out || std::mem::take(&mut st.kicked)) && st.result.is_none() {
                parking_lot::MutexGuard::unlocked(&mut st, &run);
            }
        }
    }
}

/// A failure shared by every write of a combined transaction, for each.
fn replicate(e: &NsfError) -> NsfError {
    match e {
        NsfError::LogFull => NsfError::LogFull,
        NsfError::LogFailed(r) => NsfError::LogFailed(r.clone()),
        NsfError::DatabaseFailed { path, reason } => NsfError::DatabaseFailed {
            path: path.clone(),
            reason: reason.clone(),
        },
        other => NsfError::Invalid(format!(
            "the transaction this write was combined into failed: {other}"
        )),
    }
}

/// One write's outcome inside a combined transaction.
type WriteResult = NsfResult<Option<NoteMeta>>;

/// Document writes always produce metadata; only `Release` does not.
fn expect_meta(m: Option<NoteMeta>) -> NsfResult<NoteMeta> {
    m.ok_or_else(|| {
        NsfError::Invalid("internal error: a document write returned no metadata".into())
    })
}

/// A database's description. Values stay typed; they are formatted once,
/// at the edge that shows them (serialised, ids are 16 hex digits and the
/// creation time RFC 3339).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DbInfo {
    pub path: String,
    pub title: String,
    pub replica_id: crate::ReplicaId,
    pub instance_id: crate::DbInstanceId,
    pub created: Timestamp,
    pub note_count: u64,
    pub file_size: u64,
    pub page_count: u32,
    pub free_pages: u64,
    pub sequence: u64,
    pub needs_fixup: bool,
}

/// Result of a consistency check.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CheckReport {
    pub notes: u64,
    pub stubs: u64,
    pub pages_in_trees: u64,
    pub free_pages: u64,
    pub attachment_pages: u64,
}

/// An open database.
pub struct Database {
    core: DbCore,
    writer: Mutex<()>,
    /// Writes waiting for the writer lock's holder to run them.
    queue: Mutex<std::collections::VecDeque<Queued>>,
    /// Numbers queued writes, so a holder can tell its own.
    tickets: AtomicU64,
    /// Runs of the queue that found the writer lock taken.
    contended: AtomicU64,
    state: RwLock<DbHeader>,
    /// Header flags seen at open (I12 "unlogged and not closed cleanly").
    opened_unclean: bool,
    /// The parsed ACL (I15: emptied when a write of the ACL note installs).
    acl: Mutex<AclCache>,
    /// Engine-wide writer-lock statistics.
    locks: Arc<LockCounters>,
    /// Its life in the open-database cache and the catalog (I19, I20).
    life: Life,
}

/// The ACL note as last read.
enum AclCache {
    /// Not read since the database opened or the ACL note last changed.
    Unread,
    /// What the ACL note held (`None`: no list was ever set).
    Read(Option<Arc<Acl>>),
}

impl Database {
    pub(crate) fn new(
        path: String,
        pool: Arc<BufferPool>,
        handle: Arc<dyn FileHandle>,
        header: DbHeader,
        durability: Durability,
        refused: Option<String>,
        (locks, writeback, life, engine_closed): (
            Arc<LockCounters>,
            Arc<crate::writeback::Writeback>,
            Life,
            Arc<AtomicBool>,
        ),
    ) -> Database {
        let file = pool.register(handle.clone(), &path);
        Database {
            opened_unclean: header.flags & FLAG_UNLOGGED_OPEN != 0,
            core: DbCore {
                path,
                pool,
                file,
                handle,
                durability,
                high_water: Mutex::new(header.page_count),
                refused,
                writeback,
                engine_closed,
            },
            writer: Mutex::new(()),
            queue: Mutex::new(std::collections::VecDeque::new()),
            tickets: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            state: RwLock::new(header),
            acl: Mutex::new(AclCache::Unread),
            locks,
            life,
        }
    }

    pub fn path(&self) -> &str {
        &self.core.path
    }

    // ---------------------------------------------------------------- reads

    pub fn info(&self) -> NsfResult<DbInfo> {
        let h = self.state.read();
        let notes = btree::len(&Committed(&self.core), h.note_root)?;
        let file_size = self.core.handle.len().map_err(|e| NsfError::Io {
            path: self.core.path.clone(),
            source: e,
        })?;
        Ok(DbInfo {
            path: self.core.path.clone(),
            title: h.title.clone(),
            replica_id: h.replica_id,
            instance_id: h.instance_id,
            created: h.created,
            note_count: notes,
            file_size,
            page_count: h.page_count,
            free_pages: h.free.count,
            sequence: h.last_seq.0,
            needs_fixup: self.opened_unclean,
        })
    }

    /// Reads a document by UNID. Deletion stubs are `Deleted` errors.
    pub fn get(&self, unid: Unid) -> NsfResult<Note> {
        let note = self.get_any(unid)?;
        if note.deleted {
            return Err(NsfError::Deleted {
                db: self.core.path.clone(),
                unid,
            });
        }
        Ok(note)
    }

    /// Reads a document or its deletion stub by UNID.
    pub fn get_any(&self, unid: Unid) -> NsfResult<Note> {
        let h = self.state.read();
        let store = Committed(&self.core);
        match lookup_unid(&store, &h, unid)? {
            Some(id) => load_note(&store, &h, id)?.ok_or_else(|| self.missing(unid)),
            None => Err(self.missing(unid)),
        }
    }

    /// Reads a document by note id (stubs included).
    pub fn get_by_id(&self, id: NoteId) -> NsfResult<Option<Note>> {
        let h = self.state.read();
        load_note(&Committed(&self.core), &h, id)
    }

    fn missing(&self, unid: Unid) -> NsfError {
        NsfError::NoSuchDocument {
            db: self.core.path.clone(),
            unid,
        }
    }

    /// Calls `f` for every document (not stubs) in note-id order. Reads in
    /// chunks so writers are not held off for a long scan.
    pub fn for_each_note(&self, mut f: impl FnMut(Note) -> NsfResult<()>) -> NsfResult<()> {
        let mut from: Bound<Vec<u8>> = Bound::Unbounded;
        loop {
            let chunk = {
                let h = self.state.read();
                let store = Committed(&self.core);
                let lo = match &from {
                    Bound::Unbounded => Bound::Unbounded,
                    Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
                    Bound::Included(k) => Bound::Included(k.as_slice()),
                };
                let mut out = Vec::with_capacity(SCAN_CHUNK);
                let mut range = btree::range(&store, h.note_root, lo, Bound::Unbounded);
                while out.len() < SCAN_CHUNK {
                    // Decode straight from the page: no copy of the value.
                    let next =
                        range.next_with(|k, v| (k.to_vec(), decode_note_value(&store, v)))?;
                    match next {
                        Some((k, note)) => out.push((k, note?)),
                        None => break,
                    }
                }
                out
            };
            let Some((last, _)) = chunk.last() else {
                return Ok(());
            };
            from = Bound::Excluded(last.clone());
            let done = chunk.len() < SCAN_CHUNK;
            for (_, note) in chunk {
                if !note.deleted {
                    f(note)?;
                }
            }
            if done {
                return Ok(());
            }
        }
    }

    /// Calls `f` for every document (not stubs) in note-id order, as a
    /// [`NoteRef`] whose items are decoded only when asked for. Each chunk
    /// of encoded notes is copied out under the shared lock and handed out
    /// after it is released, so `f` never holds writers off.
    pub fn for_each_note_ref<E: From<NsfError>>(
        &self,
        mut f: impl FnMut(&NoteRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut arena: Vec<u8> = Vec::new();
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(SCAN_CHUNK);
        let mut after: Option<[u8; 4]> = None;
        loop {
            arena.clear();
            spans.clear();
            {
                let h = self.state.read();
                let store = Committed(&self.core);
                let lo = match &after {
                    Some(k) => Bound::Excluded(&k[..]),
                    None => Bound::Unbounded,
                };
                let mut range = btree::range(&store, h.note_root, lo, Bound::Unbounded);
                while spans.len() < SCAN_CHUNK {
                    let start = arena.len();
                    let next = range.next_with(|k, v| {
                        let key: Option<[u8; 4]> = k.try_into().ok();
                        let copied = note_bytes(&store, v).map(|b| arena.extend_from_slice(&b));
                        (key, copied)
                    });
                    let next = next.map_err(NsfError::from)?;
                    let Some((key, copied)) = next else { break };
                    copied?;
                    after = Some(key.ok_or_else(|| {
                        NsfError::Storage(storage::StorageError::corrupt(
                            &self.core.path,
                            h.note_root,
                            "note table key is not a note id",
                        ))
                    })?);
                    spans.push((start, arena.len()));
                }
            }
            for &(a, b) in &spans {
                let note = NoteRef::new(&arena[a..b]).map_err(NsfError::from)?;
                if !note.deleted {
                    f(&note)?;
                }
            }
            if spans.len() < SCAN_CHUNK {
                return Ok(());
            }
        }
    }

    /// Documents and stubs changed after `since`, in change order, at most
    /// `limit` of them (a cursor: pass the last `change_seq` to continue).
    pub fn modified_since(&self, since: Seq, limit: usize) -> NsfResult<Vec<Note>> {
        let h = self.state.read();
        let store = Committed(&self.core);
        let lo = (since.0 + 1).to_be_bytes();
        let mut out = Vec::new();
        for kv in btree::range(
            &store,
            h.seq_root,
            Bound::Included(&lo[..]),
            Bound::Unbounded,
        )
        .take(limit)
        {
            let (_, v) = kv?;
            let id = note_id_from(&v, &self.core.path)?;
            if let Some(n) = load_note(&store, &h, id)? {
                out.push(n);
            }
        }
        Ok(out)
    }

    /// The database's access-control list; `None` if none was ever set.
    /// Parsed once and cached until the ACL note next changes (I15), so it
    /// is cheap to ask on every request. A stored list that cannot be used
    /// is an error every time (never cached), so callers fail closed.
    pub fn acl(&self) -> NsfResult<Option<Acl>> {
        if let AclCache::Read(acl) = &*self.acl.lock() {
            return Ok(acl.as_deref().cloned());
        }
        // I15: fill the cache under the shared state lock, so no install
        // of a newer ACL note can come between the read and the fill.
        let h = self.state.read();
        let mut cache = self.acl.lock();
        if let AclCache::Read(acl) = &*cache {
            return Ok(acl.as_deref().cloned());
        }
        let store = Committed(&self.core);
        let acl = match lookup_unid(&store, &h, acl_unid(h.replica_id))? {
            None => None,
            Some(id) => match load_note(&store, &h, id)? {
                None => None,
                Some(note) => acl_of_note(&note)
                    .map_err(|reason| NsfError::BadStoredAcl {
                        db: self.core.path.clone(),
                        reason,
                    })?
                    .map(Arc::new),
            },
        };
        *cache = AclCache::Read(acl.clone());
        Ok(acl.as_deref().cloned())
    }

    /// Replaces the access-control list (creating the ACL note the first
    /// time); returns once it is durable (I2), like a document write.
    pub fn set_acl(&self, acl: &Acl) -> NsfResult<NoteMeta> {
        acl.validate()?;
        let json = acl.to_json();
        if json.len() > MAX_ACL_JSON_BYTES {
            return Err(AclError::TooLarge {
                size: json.len(),
                limit: MAX_ACL_JSON_BYTES,
            }
            .into());
        }
        // I20: the catalog hears of the change durably before it can be
        // durable, and of its outcome after.
        let _change = self.begin_acl_change()?;
        self.submit(WriteOp::SetAcl(json)).and_then(expect_meta)
    }

    /// The UNID of this database's ACL note, the same in every replica:
    /// the replica id (big-endian) followed by the bytes `FOLIOACL`.
    pub fn acl_unid(&self) -> Unid {
        acl_unid(self.state.read().replica_id)
    }

    /// Opens an attachment of a document for streaming.
    pub fn open_attachment(&self, unid: Unid, name: &str) -> NsfResult<AttachmentReader> {
        let note = self.get(unid)?;
        let a = find_attachment(&note, name).ok_or_else(|| NsfError::NoSuchAttachment {
            db: self.core.path.clone(),
            unid,
            name: name.to_string(),
        })?;
        Ok(AttachmentReader::new(
            self.pinned(),
            self.core.handle.clone(),
            self.core.path.clone(),
            a.clone(),
        ))
    }

    // --------------------------------------------------------------- writes

    /// Creates a document; returns once it is durable (I2).
    pub fn create(&self, items: Vec<Item>) -> NsfResult<NoteMeta> {
        validate_items(&items)?;
        self.submit(WriteOp::Create(items)).and_then(expect_meta)
    }

    /// Updates a document's items (JSON `null` removes an item). With
    /// `based_on`, an update whose sequence number is stale is a
    /// `SaveConflict` unless `force`.
    pub fn update(
        &self,
        unid: Unid,
        updates: Vec<ItemUpdate>,
        based_on: Option<u32>,
        force: bool,
    ) -> NsfResult<NoteMeta> {
        self.submit(WriteOp::Update {
            unid,
            updates,
            based_on,
            force,
        })
        .and_then(expect_meta)
    }

    /// Deletes a document, leaving a deletion stub (UNID, originator id,
    /// time) so replication can carry the deletion.
    pub fn delete(&self, unid: Unid, based_on: Option<u32>, force: bool) -> NsfResult<NoteMeta> {
        self.submit(WriteOp::Delete {
            unid,
            based_on,
            force,
        })
        .and_then(expect_meta)
    }

    /// [`Self::create`] without waiting: queues the write, and `done` gets
    /// the outcome once the document is durable (or the write failed).
    /// `done` runs on whichever thread runs the queue, or on the log's
    /// writer thread, and must not block.
    ///
    /// Nothing runs here: if this returns true the queue was empty, and
    /// the caller must see that [`Self::run_queued`] is called — soon, but
    /// preferably after other callers ready at the same moment have queued
    /// theirs, so they share one transaction. (If it returns false a run
    /// is already due.) In unlogged mode running the queue includes its
    /// fdatasync.
    #[must_use = "if true, the caller must arrange a call to run_queued"]
    pub fn create_then(
        &self,
        items: Vec<Item>,
        done: impl FnOnce(NsfResult<NoteMeta>) + Send + 'static,
    ) -> bool {
        if let Err(e) = validate_items(&items) {
            done(Err(e.into()));
            return false;
        }
        self.enqueue(
            WriteOp::Create(items),
            Box::new(move |r| done(r.and_then(expect_meta))),
            None,
        )
        .1
    }

    /// [`Self::update`] without waiting (see [`Self::create_then`]).
    #[must_use = "if true, the caller must arrange a call to run_queued"]
    pub fn update_then(
        &self,
        unid: Unid,
        updates: Vec<ItemUpdate>,
        (based_on, force): (Option<u32>, bool),
        done: impl FnOnce(NsfResult<NoteMeta>) + Send + 'static,
    ) -> bool {
        self.enqueue(
            WriteOp::Update {
                unid,
                updates,
                based_on,
                force,
            },
            Box::new(move |r| done(r.and_then(expect_meta))),
            None,
        )
        .1
    }

    /// [`Self::delete`] without waiting (see [`Self::create_then`]).
    #[must_use = "if true, the caller must arrange a call to run_queued"]
    pub fn delete_then(
        &self,
        unid: Unid,
        (based_on, force): (Option<u32>, bool),
        done: impl FnOnce(NsfResult<NoteMeta>) + Send + 'static,
    ) -> bool {
        self.enqueue(
            WriteOp::Delete {
                unid,
                based_on,
                force,
            },
            Box::new(move |r| done(r.and_then(expect_meta))),
            None,
        )
        .1
    }

    /// Runs the queued writes (see [`Self::create_then`]), unless another
    /// caller holds the writer lock, which then runs them.
    /// Returns true if writes are still queued after a bounded turn: the
    /// caller must arrange another call (after letting others run).
    #[must_use = "if true, the caller must arrange another call to run_queued"]
    pub fn run_queued(&self) -> bool {
        self.drain(None, Some(RUNNER_GROUPS))
    }

    /// Streams `content` into the database and attaches it to the document
    /// under `name` (replacing an attachment of that name). The content is
    /// written once, directly to new pages, and synced before the commit
    /// that references it (I7).
    pub fn put_attachment(
        &self,
        unid: Unid,
        name: &str,
        mime: &str,
        content: &mut dyn Read,
    ) -> NsfResult<AttachmentRef> {
        attach::validate_name(name)?;
        self.core.check_writable()?;
        self.get(unid)?;
        let mut w = BlobWriter::new(&self.core, name, mime);
        let blob = match w.write_all_from(content).and_then(|()| w.finish()) {
            Ok(b) => b,
            Err(e) => {
                self.release_blob(w.reserved());
                return Err(e);
            }
        };
        if let Err(e) = self.submit(WriteOp::Attach {
            unid,
            blob: blob.clone(),
        }) {
            self.release_blob(blob.extents.clone());
            return Err(e);
        }
        Ok(blob)
    }

    /// Returns the pages of an attachment that was never committed to the
    /// free list (best effort: if this fails the pages are leaked until
    /// compact, never corrupted).
    fn release_blob(&self, extents: Vec<(u32, u32)>) {
        if extents.is_empty() {
            return;
        }
        if let Err(e) = self.submit(WriteOp::Release(extents)) {
            tracing::warn!(db = %self.core.path, error = %e, "could not return unused attachment pages");
        }
    }

    /// Loads a live document for rewriting, with what `store_note` needs
    /// to replace its stored version. The ACL note is refused: it changes
    /// only through `set_acl`.
    fn load_for_write(&self, txn: &Txn<'_>, unid: Unid) -> NsfResult<(Note, Stored)> {
        let id = lookup_unid(txn, &txn.header, unid)?.ok_or_else(|| self.missing(unid))?;
        let (note, stored) = self.load_stored(txn, unid, id)?;
        if note.deleted {
            return Err(NsfError::Deleted {
                db: self.core.path.clone(),
                unid,
            });
        }
        if unid == acl_unid(txn.header.replica_id) {
            return Err(NsfError::AclNote {
                db: self.core.path.clone(),
                unid,
            });
        }
        Ok((note, stored))
    }

    /// Loads note `id` (live or a stub) as this transaction sees it.
    fn load_stored(&self, txn: &Txn<'_>, unid: Unid, id: NoteId) -> NsfResult<(Note, Stored)> {
        let value = btree::get(txn, txn.header.note_root, &id.0.to_be_bytes())?
            .ok_or_else(|| self.missing(unid))?;
        let note = decode_note_value(txn, &value)?;
        let stored = Stored {
            overflow: overflow_of(&value),
            change_seq: note.change_seq,
        };
        Ok((note, stored))
    }

    /// Writes the ACL note: creates it under its fixed UNID, or rewrites it
    /// (a deletion stub of it, which only replication can leave, comes
    /// back to life).
    fn apply_set_acl(&self, txn: &mut Txn<'_>, json: String) -> NsfResult<NoteMeta> {
        let unid = acl_unid(txn.header.replica_id);
        let items = acl_note_items(json);
        let Some(id) = lookup_unid(txn, &txn.header, unid)? else {
            return self.create_with_unid(txn, unid, items);
        };
        let (mut note, stored) = self.load_stored(txn, unid, id)?;
        if !note.deleted && !is_acl_note(&note) {
            return Err(NsfError::BadStoredAcl {
                db: self.core.path.clone(),
                reason: format!("note {unid} has the ACL note's UNID but is not an ACL note"),
            });
        }
        note.deleted = false;
        note.items = items;
        bump(&mut note);
        store_note(txn, &mut note, Some(stored))
    }

    /// The body of each kind of write, run inside its own transaction.
    fn apply(&self, txn: &mut Txn<'_>, op: WriteOp) -> NsfResult<Option<NoteMeta>> {
        match op {
            WriteOp::Create(items) => self.apply_create(txn, items).map(Some),
            WriteOp::Update {
                unid,
                updates,
                based_on,
                force,
            } => {
                let (mut note, stored) = self.load_for_write(txn, unid)?;
                check_conflict(&note, based_on, force)?;
                let before: Vec<AttachmentRef> = note.attachments().cloned().collect();
                for u in updates {
                    match u {
                        ItemUpdate::Set(item) => note.set_item(item),
                        ItemUpdate::Remove(name) => {
                            note.remove_item(&name);
                        }
                    }
                }
                validate_items(&note.items)?;
                free_dropped_attachments(txn, &before, &note)?;
                bump(&mut note);
                store_note(txn, &mut note, Some(stored)).map(Some)
            }
            WriteOp::Delete {
                unid,
                based_on,
                force,
            } => {
                let (mut note, stored) = self.load_for_write(txn, unid)?;
                check_conflict(&note, based_on, force)?;
                for a in note.attachments().cloned().collect::<Vec<_>>() {
                    attach::free_blob(txn, &a)?;
                }
                // The stub keeps the access items: whoever could not see
                // the document does not see its deletion either.
                note.items.retain(|i| access_item_name(&i.name).is_some());
                note.deleted = true;
                bump(&mut note);
                store_note(txn, &mut note, Some(stored)).map(Some)
            }
            WriteOp::Attach { unid, blob } => {
                let (mut note, stored) = self.load_for_write(txn, unid)?;
                let item_name = format!("{ATTACHMENT_PREFIX}{}", blob.name);
                if let Some(Item {
                    value: ItemValue::Attachment(old),
                    ..
                }) = note.remove_item(&item_name)
                {
                    attach::free_blob(txn, &old)?;
                }
                note.set_item(Item {
                    name: item_name,
                    value: ItemValue::Attachment(blob),
                });
                bump(&mut note);
                store_note(txn, &mut note, Some(stored)).map(Some)
            }
            WriteOp::Release(extents) => {
                for (first, count) in &extents {
                    for p in *first..first + count {
                        txn.free(PageId(p))?;
                    }
                }
                Ok(None)
            }
            WriteOp::SetAcl(json) => self.apply_set_acl(txn, json).map(Some),
            WriteOp::Index(f) => {
                f(&mut IndexTxn { db: self, txn })?;
                Ok(None)
            }
        }
    }

    pub(crate) fn apply_create(&self, txn: &mut Txn<'_>, items: Vec<Item>) -> NsfResult<NoteMeta> {
        let unid = fresh_unid(txn)?;
        self.create_with_unid(txn, unid, items)
    }

    /// Creates a note under `unid`, which no note has yet.
    fn create_with_unid(
        &self,
        txn: &mut Txn<'_>,
        unid: Unid,
        items: Vec<Item>,
    ) -> NsfResult<NoteMeta> {
        let now = Timestamp::now();
        let note_id = NoteId(txn.header.next_note_id);
        txn.header.next_note_id += 1;
        let mut note = Note {
            note_id,
            oid: OriginatorId {
                unid,
                seq_num: 1,
                seq_time: now,
            },
            created: now,
            modified: now,
            added: now,
            change_seq: Seq(0),
            deleted: false,
            items,
        };
        let meta = store_note(txn, &mut note, None)?;
        let mut root = txn.header.unid_root;
        btree::insert(txn, &mut root, &unid.0, &note_id.0.to_be_bytes())?;
        txn.header.unid_root = root;
        Ok(meta)
    }

    /// Queues a write and returns once it is durable (I2) or has failed.
    ///
    /// Writes to one database are combined: whoever finds the writer lock
    /// free runs every queued write — up to [`MAX_GROUP`] of them in one
    /// transaction, each behind a savepoint so a failing write is undone
    /// alone (I4) — appends that one batch to the log, registers one
    /// callback for its durability, and lets go of the lock without
    /// waiting. The log's writer thread hands every write its result
    /// right after the fdatasync that covers the batch. A caller that
    /// finds the lock taken just leaves its write queued: the holder, or
    /// the caller it hands the lock to, runs it. So a commit costs no thread hand-off of its own, one
    /// log batch and page image per group rather than per write, and one
    /// wake-up when durable.
    ///
    /// A write counts as a lock wait if a run of the queue found the
    /// writer lock taken while it was queued (its own submitter's, or a
    /// deferred `run_queued`); the wait lasts from when it was queued
    /// until its group started. Writes that a deferred run picks up
    /// without contention waited by design, for company, and do not count.
    ///
    /// A blocking submitter runs the queue until its own write has been
    /// run, then hands the lock on: it wakes the next blocking submitter
    /// still queued, which runs the queue in turn, so no caller is kept
    /// working for others while its own answer waits.
    fn submit(&self, op: WriteOp) -> NsfResult<Option<NoteMeta>> {
        let slot = Arc::new(Slot::default());
        let filled = slot.clone();
        let (ticket, _) = self.enqueue(op, Box::new(move |r| filled.fill(r)), Some(slot.clone()));
        self.drain(Some(ticket), None);
        slot.wait(|| {
            self.drain(Some(ticket), None);
        })
    }

    /// Queues a write; returns its ticket and whether the queue was empty.
    fn enqueue(&self, op: WriteOp, done: WriteDone, waiter: Option<Arc<Slot>>) -> (u64, bool) {
        self.locks.writes.fetch_add(1, Ordering::Relaxed);
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        let mut q = self.queue.lock();
        let first = q.is_empty();
        q.push_back(Queued {
            op,
            done,
            queued_at: Instant::now(),
            contended_at: self.contended.load(Ordering::Relaxed),
            ticket,
            waiter,
        });
        (ticket, first)
    }

    /// Runs queued writes while this caller can take the writer lock and
    /// writes are queued. `own` is the caller's own write: once it has
    /// run, the caller hands the rest to the next blocking submitter still
    /// queued, if there is one. `budget` bounds the groups run (a
    /// `run_queued` turn); returns true if it ran out with writes queued.
    ///
    /// Hand-off: a write queued while the lock is held is run by the
    /// holder, which looks at the queue again after letting go (or has
    /// woken a queued submitter, which then tries the lock itself); its
    /// submitter's own `try_lock` came after the push, so one of them
    /// always sees it.
    fn drain(&self, own: Option<u64>, budget: Option<usize>) -> bool {
        loop {
            let Some(guard) = self.writer.try_lock() else {
                self.contended.fetch_add(1, Ordering::Relaxed);
                return false;
            };
            let mut own_done = false;
            let mut groups = 0;
            loop {
                let group = self.take_group();
                if group.is_empty() {
                    break;
                }
                own_done |= own.is_some_and(|t| group.iter().any(|w| w.ticket == t));
                self.run_group(group, own);
                groups += 1;
                if own_done && self.wake_next_waiter() {
                    return false; // the guard drops; the woken caller runs on
                }
                if budget.is_some_and(|b| groups >= b) {
                    drop(guard);
                    return !self.queue.lock().is_empty();
                }
            }
            drop(guard);
            if self.queue.lock().is_empty() {
                return false;
            }
        }
    }

    /// Wakes the first blocking submitter whose write is still queued, to
    /// run the queue; false if there is none.
    fn wake_next_waiter(&self) -> bool {
        let next = self.queue.lock().iter().find_map(|w| w.waiter.clone());
        match next {
            Some(slot) => {
                slot.kick();
                true
            }
            None => false,
        }
    }

    /// The next writes to run as one transaction: up to [`MAX_GROUP`]
    /// document writes, or one index transaction (those can be large and
    /// run alone).
    fn take_group(&self) -> Vec<Queued> {
        let mut q = self.queue.lock();
        let alone = q.front().is_some_and(|w| matches!(w.op, WriteOp::Index(_)));
        let n = if alone {
            1
        } else {
            q.iter()
                .take(MAX_GROUP)
                .take_while(|w| !matches!(w.op, WriteOp::Index(_)))
                .count()
        };
        q.drain(..n).collect()
    }

    /// Runs `group` as one transaction and hands each write its result:
    /// at once if the transaction failed or needs no log, else when the
    /// log has made it durable.
    fn run_group(&self, group: Vec<Queued>, own: Option<u64>) {
        let started = Instant::now();
        let contended = self.contended.load(Ordering::Relaxed);
        let mut ops = Vec::with_capacity(group.len());
        let mut dones = Vec::with_capacity(group.len());
        for w in group {
            if Some(w.ticket) != own && w.contended_at != contended {
                self.locks.waited(w.queued_at, started);
            }
            ops.push(w.op);
            dones.push(w.done);
        }
        let (results, durable_at) = match self.execute(ops) {
            Ok(r) => r,
            Err(e) => {
                let copies: Vec<NsfError> = (1..dones.len()).map(|_| replicate(&e)).collect();
                for (done, err) in dones.into_iter().zip(std::iter::once(e).chain(copies)) {
                    done(Err(err));
                }
                return;
            }
        };
        let finish = move |durable: Result<(), LogError>| {
            let reason = durable.err().map(|e| match e {
                LogError::Failed { reason } => reason,
                other => other.to_string(),
            });
            for (done, r) in dones.into_iter().zip(results) {
                let r = match (&reason, r) {
                    (Some(reason), Ok(_)) => Err(NsfError::LogFailed(reason.clone())),
                    (_, r) => r,
                };
                done(r);
            }
        };
        match (&self.core.durability, durable_at) {
            // I2: acknowledged only once the commit record is durable.
            (Durability::Logged { log, .. }, Some(end)) => {
                log.when_durable(end, Box::new(finish));
            }
            _ => finish(Ok(())),
        }
    }

    /// Runs `ops` in one transaction (each write behind a savepoint when
    /// there are several) and appends it (logged) or forces it
    /// (unlogged). Returns each write's result and the end of the log
    /// batch, which must be durable before any of them is acknowledged.
    /// A write that fails has changed nothing (I4); if the transaction
    /// itself fails, none of them has.
    fn execute(&self, ops: Vec<WriteOp>) -> NsfResult<(Vec<WriteResult>, Option<Lsn>)> {
        self.core.check_writable()?;
        let committed = self.state.read().clone();
        let mut txn = Txn::new(&self.core, committed.clone());
        let combined = ops.len() > 1;
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            let savepoint = combined.then(|| txn.savepoint());
            let r = self.apply(&mut txn, op);
            if r.is_err() {
                match savepoint {
                    Some(sp) => txn.rollback(sp),
                    None => return Ok((vec![r], None)),
                }
            }
            results.push(r);
        }
        let pages = txn.into_pages(&committed);
        if pages.is_empty() {
            return Ok((results, None));
        }
        match &self.core.durability {
            Durability::Logged { log, inflight } => {
                let end = self.commit_logged(log, inflight, pages)?;
                Ok((results, end))
            }
            Durability::Unlogged => {
                let TxnPages {
                    header,
                    mut logged,
                    unlogged,
                    acl_written,
                } = pages;
                logged.extend(unlogged);
                logged.sort_by_key(|(id, _)| *id);
                self.commit_unlogged(header, logged, acl_written)?;
                Ok((results, None))
            }
        }
    }

    fn commit_logged(
        &self,
        log: &TransLog,
        inflight: &Inflight,
        pages: TxnPages,
    ) -> NsfResult<Option<Lsn>> {
        let c = &self.core;
        let TxnPages {
            header,
            logged: pages,
            unlogged,
            acl_written,
        } = pages;
        if pages.is_empty() {
            // Only unlogged pages: nothing to append (I14).
            let mut state = self.state.write();
            let lsn = log.end_lsn();
            for (id, page) in unlogged {
                c.pool.install_unlogged(c.file, id, page, lsn);
            }
            *state = header;
            if acl_written {
                *self.acl.lock() = AclCache::Unread; // I15
            }
            return Ok(None);
        }
        let mut attempts = 0;
        let appended = loop {
            // Wait for log space before pinning anything: a checkpoint
            // must never wait on pins held by a commit that waits on it.
            log.wait_for_room(pages.len() + 2)?;
            let (batch, pinned) = self.prepare_batch(&header, &pages);
            // I8: register before appending so a checkpoint cannot pass this batch.
            let ticket = inflight.register(log.end_lsn());
            match log.try_append(&batch) {
                Ok(a) => break (a, pinned, ticket),
                Err(e) => {
                    inflight.deregister(ticket);
                    for id in pinned {
                        c.pool.unpin(c.file, id);
                    }
                    attempts += 1;
                    if !matches!(e, LogError::Full { .. }) || attempts >= 5 {
                        return Err(e.into());
                    }
                }
            }
        };
        let (appended, pinned, ticket) = appended;
        {
            // I13: readers see all of the transaction or none of it.
            let mut state = self.state.write();
            for ((id, page), lsn) in pages.into_iter().zip(&appended.page_lsns) {
                let delta = pinned.contains(&id);
                let stamp = Stamp {
                    page_lsn: *lsn,
                    batch_start: appended.start_lsn,
                    batch_end: appended.end_lsn,
                };
                c.pool.install(c.file, id, page, stamp, delta);
            }
            for (id, page) in unlogged {
                c.pool.install_unlogged(c.file, id, page, appended.end_lsn);
            }
            *state = header;
            if acl_written {
                // I15: in the same critical section as the install.
                *self.acl.lock() = AclCache::Unread;
            }
        }
        inflight.deregister(ticket);
        Ok(Some(appended.end_lsn))
    }

    /// Builds the log batch for `pages`, choosing a full image or a delta
    /// for each (I6); returns the pages pinned for deltas.
    fn prepare_batch(
        &self,
        header: &DbHeader,
        pages: &[(PageId, Arc<PageBuf>)],
    ) -> (Batch, Vec<PageId>) {
        let c = &self.core;
        let mut changes = Vec::with_capacity(pages.len());
        let mut pinned = Vec::new();
        for (id, page) in pages {
            match c.pool.prepare(c.file, *id) {
                Prepared::FullImage => changes.push((*id, PageChange::Image((**page).clone()))),
                Prepared::Delta(base) => {
                    pinned.push(*id);
                    changes.push((
                        *id,
                        PageChange::Delta(storage::page::page_delta(&base, page)),
                    ));
                }
            }
        }
        let batch = Batch {
            db_iid: header.instance_id.0,
            db_path: c.path.clone(),
            pages: changes,
            time_micros: Timestamp::now().0,
        };
        (batch, pinned)
    }

    /// I12: pages go to the file and are synced before the commit returns.
    fn commit_unlogged(
        &self,
        mut header: DbHeader,
        mut pages: Vec<(PageId, Arc<PageBuf>)>,
        acl_written: bool,
    ) -> NsfResult<()> {
        let c = &self.core;
        if self.state.read().flags & FLAG_UNLOGGED_OPEN == 0 {
            let mut marked = self.state.read().clone();
            marked.flags |= FLAG_UNLOGGED_OPEN;
            self.write_header_direct(&marked)?;
            self.state.write().flags = marked.flags;
        }
        header.flags |= FLAG_UNLOGGED_OPEN;
        if let Some(p) = pages.iter_mut().find(|(id, _)| id.0 == 0) {
            p.1 = Arc::new(header.encode());
        }
        c.force_pages(&pages)?;
        let mut state = self.state.write();
        for (id, page) in pages {
            c.pool.install_clean(c.file, id, page);
        }
        *state = header;
        if acl_written {
            // I15: in the same critical section as the install.
            *self.acl.lock() = AclCache::Unread;
        }
        Ok(())
    }

    /// Writes and syncs page 0 directly (unlogged-mode flag changes).
    pub(crate) fn write_header_direct(&self, header: &DbHeader) -> NsfResult<()> {
        let c = &self.core;
        let page = Arc::new(header.encode());
        c.force_pages(&[(PageId(0), page.clone())])?;
        c.pool.install_clean(c.file, PageId(0), page);
        Ok(())
    }

    /// Clears the unlogged-open flag at a clean close (I12), unless this
    /// instance found it set: a crash left the file needing fixup, and
    /// closing it cleanly now does not undo that. At engine shutdown the
    /// engine is already closed, so no write can follow once the writer
    /// lock is ours (which is why this asks for a failure, not whether
    /// writes are allowed).
    pub(crate) fn close_unlogged(&self) -> NsfResult<()> {
        let r = self.clear_unlogged_flag();
        // Writes queued meanwhile found the lock taken (see `drain`).
        self.drain(None, None);
        r
    }

    fn clear_unlogged_flag(&self) -> NsfResult<()> {
        let _w = self.writer.lock();
        let mut h = self.state.read().clone();
        if h.flags & FLAG_UNLOGGED_OPEN != 0
            && !self.opened_unclean
            && self.core.failure().is_none()
        {
            h.flags &= !FLAG_UNLOGGED_OPEN;
            self.write_header_direct(&h)?;
            *self.state.write() = h;
        }
        Ok(())
    }

    // ---------------------------------------------------------- index hooks

    /// Runs `f` as a transaction in the writer queue, like a document
    /// write, and returns its result once the transaction is durable (I2).
    /// If `f` fails, nothing it did is kept (I4).
    pub fn index_write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut IndexTxn<'_, '_>) -> NsfResult<R> + Send + 'static,
    ) -> NsfResult<R> {
        let out: Arc<Mutex<Option<R>>> = Arc::new(Mutex::new(None));
        let place = out.clone();
        self.submit(WriteOp::Index(Box::new(move |tx| {
            let r = f(tx)?;
            *place.lock() = Some(r);
            Ok(())
        })))?;
        let r = out.lock().take();
        r.ok_or_else(|| NsfError::Invalid("internal error: an index write left no result".into()))
    }

    /// Runs `f` over the committed state under the shared lock (one short
    /// read, I13).
    pub fn index_read<R>(&self, f: impl FnOnce(&IndexRead<'_>) -> R) -> R {
        let h = self.state.read();
        f(&IndexRead {
            core: &self.core,
            header: &h,
        })
    }

    /// A writer for a freshly built tree (see [`BulkWriter`]).
    pub fn bulk_writer(self: &Arc<Self>) -> NsfResult<BulkWriter> {
        self.core.check_writable()?;
        let db = self.clone();
        Ok(BulkWriter::new(
            self.core.path.clone(),
            self.core.handle.clone(),
            Box::new(move || db.core.reserve_pages(1)),
        ))
    }

    /// Returns pages that were reserved but never referenced by a commit
    /// (an abandoned bulk build) to the free list.
    pub fn release_pages(&self, pages: &[PageId]) -> NsfResult<()> {
        let extents: Vec<(u32, u32)> = pages.iter().map(|p| (p.0, 1)).collect();
        if extents.is_empty() {
            return Ok(());
        }
        self.submit(WriteOp::Release(extents)).map(|_| ())
    }

    /// Writes every page of this database that was installed before the
    /// call and syncs the file, so that what was in memory is also on disk
    /// (used before marking an unlogged index clean, I14). Pages installed
    /// by commits that run meanwhile may stay dirty: the caller must hold
    /// off changes to whatever it needs flushed.
    pub fn flush_pages(&self) -> NsfResult<()> {
        let Durability::Logged { log, .. } = &self.core.durability else {
            return Ok(()); // unlogged mode writes pages at commit (I12)
        };
        log.wait_durable(log.end_lsn())?;
        let r = self
            .core
            .pool
            .flush(log.durable_lsn(), Some(self.core.file));
        if let Some((_, _, reason)) = r.failures.into_iter().next() {
            return Err(NsfError::DatabaseFailed {
                path: self.core.path.clone(),
                reason,
            });
        }
        // Pages written straight to the file (bulk builds) as well.
        self.core
            .handle
            .sync_data()
            .map_err(|e| self.core.fail("fdatasync", e))
    }

    /// Whether the database was found written in unlogged mode and not
    /// closed cleanly (its indexes cannot be trusted, I12).
    pub fn opened_unclean(&self) -> bool {
        self.opened_unclean
    }

    /// Whether commits go through the transaction log.
    pub fn is_logged(&self) -> bool {
        matches!(self.core.durability, Durability::Logged { .. })
    }

    /// The database's last change sequence.
    pub fn last_seq(&self) -> Seq {
        self.state.read().last_seq
    }

    // ---------------------------------------------------------------- check

    /// Full consistency check: every tree's invariants, note decoding, and
    /// agreement between the note table, the UNID index and the seq index.
    pub fn check(&self) -> NsfResult<CheckReport> {
        let h = self.state.read();
        let store = Committed(&self.core);
        let mut report = CheckReport::default();
        for root in [h.note_root, h.unid_root, h.seq_root] {
            report.pages_in_trees += btree::check(&store, root)?.pages;
        }
        let corrupt = |reason: String| {
            NsfError::Storage(storage::StorageError::corrupt(
                &self.core.path,
                h.note_root,
                reason,
            ))
        };
        let mut seqs = std::collections::HashSet::new();
        for kv in btree::range(&store, h.note_root, Bound::Unbounded, Bound::Unbounded) {
            let (k, v) = kv?;
            let note = decode_note_value(&store, &v)?;
            if k != note.note_id.0.to_be_bytes() {
                return Err(corrupt(format!(
                    "note table key {k:?} holds note {}",
                    note.note_id
                )));
            }
            if lookup_unid(&store, &h, note.oid.unid)? != Some(note.note_id) {
                return Err(corrupt(format!(
                    "UNID index disagrees for note {}",
                    note.note_id
                )));
            }
            let s = btree::get(&store, h.seq_root, &note.change_seq.0.to_be_bytes())?;
            if s.as_deref() != Some(&note.note_id.0.to_be_bytes()[..]) {
                return Err(corrupt(format!(
                    "seq index disagrees for note {}",
                    note.note_id
                )));
            }
            seqs.insert(note.change_seq);
            for a in note.attachments() {
                report.attachment_pages += a.extents.iter().map(|e| u64::from(e.1)).sum::<u64>();
            }
            if note.deleted {
                report.stubs += 1;
            } else {
                report.notes += 1;
            }
        }
        let unids = btree::len(&store, h.unid_root)?;
        let seq_entries = btree::len(&store, h.seq_root)?;
        let total = report.notes + report.stubs;
        if unids != total || seq_entries != total || seqs.len() as u64 != total {
            return Err(corrupt(format!(
                "index sizes differ: notes {total}, UNIDs {unids}, seqs {seq_entries}"
            )));
        }
        report.free_pages = h.free.pages(&store)?.len() as u64;
        Ok(report)
    }
}

fn check_conflict(note: &Note, based_on: Option<u32>, force: bool) -> NsfResult<()> {
    match based_on {
        Some(b) if b != note.oid.seq_num && !force => Err(NsfError::SaveConflict {
            unid: note.oid.unid,
            based_on: b,
            current: note.oid.seq_num,
        }),
        _ => Ok(()),
    }
}

fn free_dropped_attachments(
    txn: &mut Txn<'_>,
    before: &[AttachmentRef],
    note: &Note,
) -> NsfResult<()> {
    for a in before {
        if !note.attachments().any(|b| b.blob_id == a.blob_id) {
            attach::free_blob(txn, a)?;
        }
    }
    Ok(())
}

fn find_attachment<'n>(note: &'n Note, name: &str) -> Option<&'n AttachmentRef> {
    note.attachments().find(|a| a.name == name)
}

fn bump(note: &mut Note) {
    let now = Timestamp::now();
    note.oid.seq_num += 1;
    note.oid.seq_time = now;
    note.modified = now;
}

/// A random UNID no note has, and never the ACL note's.
fn fresh_unid(txn: &Txn<'_>) -> NsfResult<Unid> {
    let reserved = acl_unid(txn.header.replica_id);
    loop {
        let u = Unid::random();
        if u != reserved && lookup_unid(txn, &txn.header, u)?.is_none() {
            return Ok(u);
        }
    }
}

pub(crate) fn lookup_unid(
    store: &impl PageStore,
    h: &DbHeader,
    unid: Unid,
) -> NsfResult<Option<NoteId>> {
    match btree::get(store, h.unid_root, &unid.0)? {
        Some(v) => Ok(Some(note_id_from(&v, store.name())?)),
        None => Ok(None),
    }
}

fn note_id_from(v: &[u8], path: &str) -> NsfResult<NoteId> {
    let b: [u8; 4] = v.try_into().map_err(|_| {
        NsfError::Storage(storage::StorageError::corrupt(
            path,
            PageId(0),
            format!("index value of {} bytes, expected a note id", v.len()),
        ))
    })?;
    Ok(NoteId(u32::from_be_bytes(b)))
}

pub(crate) fn load_note(
    store: &impl PageStore,
    h: &DbHeader,
    id: NoteId,
) -> NsfResult<Option<Note>> {
    match btree::get(store, h.note_root, &id.0.to_be_bytes())? {
        Some(v) => Ok(Some(decode_note_value(store, &v)?)),
        None => Ok(None),
    }
}

/// Decodes a note-table value: the note inline, or a pointer to an
/// overflow chain (first page, length, crc32c of the encoded note).
fn decode_note_value(store: &impl PageStore, v: &[u8]) -> NsfResult<Note> {
    Ok(decode_note(&note_bytes(store, v)?)?)
}

/// The encoded note a note-table value holds: borrowed when inline, read
/// from its overflow chain (and checked against its crc32c) otherwise.
fn note_bytes<'v>(store: &impl PageStore, v: &'v [u8]) -> NsfResult<Cow<'v, [u8]>> {
    let corrupt = |r: &str| {
        NsfError::Storage(storage::StorageError::corrupt(
            store.name(),
            PageId(0),
            format!("note table value: {r}"),
        ))
    };
    match v.first() {
        Some(&TAG_INLINE) => Ok(Cow::Borrowed(&v[1..])),
        Some(&TAG_OVERFLOW) if v.len() == 17 => {
            let first = PageId(u32::from_le_bytes(v[1..5].try_into().unwrap()));
            let len = u64::from_le_bytes(v[5..13].try_into().unwrap());
            let crc = u32::from_le_bytes(v[13..17].try_into().unwrap());
            let bytes = overflow::read(store, first, len)?;
            if crc32c::crc32c(&bytes) != crc {
                return Err(corrupt("overflow content checksum mismatch"));
            }
            Ok(Cow::Owned(bytes))
        }
        _ => Err(corrupt("unknown value tag")),
    }
}

fn overflow_of(v: &[u8]) -> Option<PageId> {
    (v.first() == Some(&TAG_OVERFLOW) && v.len() == 17)
        .then(|| PageId(u32::from_le_bytes(v[1..5].try_into().unwrap())))
}

/// Where the version of a note that a write replaces is stored.
struct Stored {
    /// Its overflow chain, freed when the new version is written.
    overflow: Option<PageId>,
    /// Its change-sequence index entry, replaced by the new one.
    change_seq: Seq,
}

/// Writes `note` (new change seq assigned here) into the note table and the
/// seq index; `replaces` describes the stored version it supersedes.
fn store_note(txn: &mut Txn<'_>, note: &mut Note, replaces: Option<Stored>) -> NsfResult<NoteMeta> {
    let key = note.note_id.0.to_be_bytes();
    if let Some(old) = replaces {
        if let Some(first) = old.overflow {
            overflow::free(txn, first)?;
        }
        let mut seq_root = txn.header.seq_root;
        btree::remove(txn, &mut seq_root, &old.change_seq.0.to_be_bytes())?;
        txn.header.seq_root = seq_root;
    }
    if note.oid.unid == acl_unid(txn.header.replica_id) {
        txn.acl_written = true;
    }
    txn.header.last_seq.0 += 1;
    note.change_seq = txn.header.last_seq;
    let encoded = encode_note(note)?;
    let value = if encoded.len() <= INLINE_MAX {
        let mut v = Vec::with_capacity(encoded.len() + 1);
        v.push(TAG_INLINE);
        v.extend_from_slice(&encoded);
        v
    } else {
        let first = overflow::write(txn, &encoded)?;
        let mut v = vec![TAG_OVERFLOW];
        v.extend_from_slice(&first.0.to_le_bytes());
        v.extend_from_slice(&(encoded.len() as u64).to_le_bytes());
        v.extend_from_slice(&crc32c::crc32c(&encoded).to_le_bytes());
        v
    };
    let mut note_root = txn.header.note_root;
    btree::insert(txn, &mut note_root, &key, &value)?;
    txn.header.note_root = note_root;
    let mut seq_root = txn.header.seq_root;
    btree::insert(txn, &mut seq_root, &note.change_seq.0.to_be_bytes(), &key)?;
    txn.header.seq_root = seq_root;
    Ok(NoteMeta {
        note_id: note.note_id,
        unid: note.oid.unid,
        seq_num: note.oid.seq_num,
        change_seq: note.change_seq,
    })
}
