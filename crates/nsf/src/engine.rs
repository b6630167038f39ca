//! The engine: everything one data directory needs at run time.
//!
//! It owns the shared buffer pool, the server-wide transaction log (or the
//! lack of one, in unlogged mode), the cache of open databases and the
//! background thread that flushes dirty pages and takes checkpoints.
//! Opening the engine *is* restart recovery: the log replays whatever the
//! last run left before any database is opened.
//!
//! ```text
//!   Engine ─┬─ BufferPool (shared)          ◄── flusher/checkpointer thread
//!           ├─ TransLog   (one per data dir) ── group commit, recovery
//!           └─ open databases: path → Arc<Database>
//! ```
//!
//! The checkpointer flushes pages whose log records are durable (I1), then
//! computes the redo LSN as the minimum of the log end, the batches in
//! flight and the oldest dirty page, read in that order (I8), and hands it
//! to the log, which may then recycle extents below it.
//!
//! The engine also holds the writer-lock counters every database adds to
//! (plain atomics, so statistics cost nothing to keep), read back as
//! [`LockStats`] by `show stats`.
//!
//! A server shares the engine with every job it runs, and one of them may
//! still hold it at shutdown (stuck on a slow disk, a long scan). So the
//! engine can be closed while shared: [`Engine::shutdown`] stops the
//! background thread, refuses every later write and open with
//! [`NsfError::EngineClosed`], then flushes, checkpoints and shuts the
//! log as [`Engine::close`] does. A holder's later writes fail before
//! touching a file; its reads of what is cached or on disk go on.

use crate::db::{Database, Durability, Inflight, LockCounters};
use crate::dbpath::DbPath;
use crate::header::{DbHeader, MAX_TITLE};
use crate::{DbInstanceId, NsfError, NsfResult, ReplicaId, Seq, Timestamp};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use storage::backend::{read_exact_at, write_all_at, OpenMode};
use storage::freelist::FreeList;
use storage::pool::{BufferPool, PoolStats};
use storage::{
    btree, Backend, FileIdentity, Lsn, PageBuf, PageId, PageStore, PageStoreMut, PageWrite,
    StorageResult, PAGE_SIZE,
};
use translog::{LogConfig, LogInfo, RecoveryReport, TransLog};

/// Engine settings (the `folio.toml` keys map onto these).
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    pub buffer_pool_size: usize,
    /// `None` runs unlogged: every commit forces its pages (I12).
    pub log: Option<LogConfig>,
    /// How often the background thread flushes and checkpoints even when
    /// the log does not ask for it.
    pub flush_interval: Duration,
    /// Run the background flusher/checkpointer thread (tests that need a
    /// deterministic sequence of syncs turn it off and call `checkpoint`).
    pub background: bool,
    /// Attachment chunks being written back to disk at once, engine-wide
    /// (0: no limit, and each attachment is synced once at its end). A
    /// small limit keeps the disk queue short, so a commit's log fsync
    /// never waits behind tens of megabytes of attachment data.
    pub attachment_writeback: usize,
}

impl EngineConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            data_dir: data_dir.into(),
            buffer_pool_size: 512 << 20,
            log: None,
            flush_interval: Duration::from_secs(2),
            background: true,
            // Measured (docs/benchmarks.md "docs"): 2 keeps commits' p99
            // under 10 ms embedded while attachments still outrun dd.
            attachment_writeback: 2,
        }
    }
}

/// Writer-lock statistics of all databases since the engine opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LockStats {
    /// Writes that found another writer holding their database's writer
    /// lock and had to wait.
    pub waits: u64,
    /// Total time those writes waited until they took the lock or another
    /// holder started running them, in microseconds (the wait for the
    /// log's fsync, which every write has, is not included).
    pub wait_micros: u64,
    /// Writes submitted (documents, attachments, ACL and index changes).
    pub writes: u64,
}

struct Shared {
    backend: Arc<dyn Backend>,
    cfg: EngineConfig,
    pool: Arc<BufferPool>,
    log: Option<Arc<TransLog>>,
    inflight: Arc<Inflight>,
    dbs: Mutex<OpenDbs>,
    /// Databases restart recovery could not bring back, with the reason.
    unrecovered: HashMap<String, String>,
    stop: Mutex<bool>,
    wake: Condvar,
    /// Serialises checkpoints (background thread and explicit calls).
    checkpointing: Mutex<()>,
    locks: Arc<LockCounters>,
    writeback: Arc<crate::writeback::Writeback>,
    /// Set once by `shutdown`; every database checks it before a write.
    closed: Arc<AtomicBool>,
}

/// The open-database cache, keyed twice so that one file can never have
/// two `Database` instances (I18): by canonical path, and by the file's
/// identity on disk (a link made by hand is a second path to one file).
#[derive(Default)]
struct OpenDbs {
    by_path: HashMap<DbPath, Arc<Database>>,
    by_file: HashMap<FileIdentity, DbPath>,
}

/// An open data directory.
pub struct Engine {
    shared: Arc<Shared>,
    /// The flusher thread, until stopped. Held for the whole of
    /// `shutdown`, so a second call waits for the first to finish.
    background: Mutex<Option<JoinHandle<()>>>,
}

impl Engine {
    /// Opens (creating if needed) the data directory, runs restart
    /// recovery when logged, and starts the background thread.
    pub fn open(
        backend: Arc<dyn Backend>,
        cfg: EngineConfig,
    ) -> NsfResult<(Engine, Option<RecoveryReport>)> {
        backend
            .create_dir_all(&cfg.data_dir)
            .map_err(|e| NsfError::Io {
                path: cfg.data_dir.display().to_string(),
                source: e,
            })?;
        let (log, report) = match &cfg.log {
            Some(lc) => {
                let (log, report) = TransLog::open(backend.clone(), &cfg.data_dir, lc.clone())?;
                (Some(log), Some(report))
            }
            None => (None, None),
        };
        let unrecovered = report
            .as_ref()
            .map(|r| {
                r.failed_databases
                    .iter()
                    .map(|f| (f.path.clone(), f.reason.clone()))
                    .collect()
            })
            .unwrap_or_default();
        // Started here, so they run at the priority of the thread opening
        // the engine, not of whichever thread stores the first attachment.
        let writeback =
            crate::writeback::Writeback::new(cfg.attachment_writeback).map_err(|e| {
                NsfError::Io {
                    path: "attachment writer threads".into(),
                    source: e,
                }
            })?;
        let shared = Arc::new(Shared {
            pool: BufferPool::new(cfg.buffer_pool_size),
            backend,
            log,
            inflight: Arc::default(),
            dbs: Mutex::default(),
            unrecovered,
            stop: Mutex::new(false),
            wake: Condvar::new(),
            checkpointing: Mutex::new(()),
            locks: Arc::default(),
            writeback: Arc::new(writeback),
            closed: Arc::default(),
            cfg,
        });
        let background = shared.cfg.background.then(|| {
            let s = shared.clone();
            std::thread::Builder::new()
                .name("folio-flusher".into())
                .spawn(move || background_loop(&s))
                .expect("spawn flusher thread")
        });
        let background = Mutex::new(background);
        Ok((Engine { shared, background }, report))
    }

    /// The storage backend every file goes through (for temporary files
    /// of the layers above).
    pub fn backend(&self) -> Arc<dyn Backend> {
        self.shared.backend.clone()
    }

    pub fn data_dir(&self) -> &Path {
        &self.shared.cfg.data_dir
    }

    pub fn is_logged(&self) -> bool {
        self.shared.log.is_some()
    }

    /// The canonical path `path` must be (I18), and not inside the log
    /// directory, whose files are the log's alone.
    fn db_path(&self, path: &str) -> NsfResult<DbPath> {
        let p = DbPath::parse(path)?;
        if let Some(log) = &self.shared.cfg.log {
            let log_dir = self.shared.cfg.data_dir.join(&log.dir);
            if self.full_path(path).starts_with(&log_dir) {
                return Err(NsfError::BadPath {
                    path: path.to_string(),
                    reason: "the transaction log's directory holds no databases".into(),
                });
            }
        }
        Ok(p)
    }

    fn full_path(&self, rel: &str) -> PathBuf {
        self.shared.cfg.data_dir.join(rel)
    }

    /// Creates a new, empty database. The file is written completely under a
    /// temporary name, synced, renamed into place and the directory synced
    /// (I9), so a crash leaves either no database or a whole one.
    pub fn create_database(&self, path: &str, title: &str) -> NsfResult<Arc<Database>> {
        self.check_open()?;
        let path = &self.db_path(path)?;
        let path = path.as_str();
        if title.len() > MAX_TITLE {
            return Err(NsfError::Invalid(format!(
                "title is {} bytes; the limit is {MAX_TITLE}",
                title.len()
            )));
        }
        let full = self.full_path(path);
        let be = &self.shared.backend;
        if be.exists(&full) {
            return Err(NsfError::DatabaseExists(path.to_string()));
        }
        let io = |e| NsfError::Io {
            path: path.to_string(),
            source: e,
        };
        let dir = full.parent().unwrap_or(Path::new("."));
        be.create_dir_all(dir).map_err(io)?;
        let image = new_database_image(title)?;
        let tmp = full.with_extension("fdb-new");
        let f = be.open(&tmp, OpenMode::CreateOrOpen).map_err(io)?;
        f.set_len(0).map_err(io)?;
        write_all_at(f.as_ref(), &image, 0).map_err(io)?;
        f.sync_data().map_err(io)?;
        drop(f);
        be.rename(&tmp, &full).map_err(io)?;
        be.sync_dir(dir).map_err(io)?;
        self.open_database(path)
    }

    /// Opens a database (cached: every caller shares one `Database`).
    pub fn open_database(&self, path: &str) -> NsfResult<Arc<Database>> {
        self.check_open()?;
        let key = self.db_path(path)?;
        let path = key.as_str();
        let mut dbs = self.shared.dbs.lock();
        if let Some(db) = dbs.by_path.get(&key) {
            return Ok(db.clone());
        }
        let full = self.full_path(path);
        let handle = self
            .shared
            .backend
            .open(&full, OpenMode::Existing)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => NsfError::NoSuchDatabase(path.to_string()),
                _ => NsfError::Io {
                    path: path.to_string(),
                    source: e,
                },
            })?;
        let identity = handle.identity();
        if let Some(other) = identity.and_then(|id| dbs.by_file.get(&id)) {
            return Err(NsfError::SameFile {
                path: path.to_string(),
                open_as: other.to_string(),
            });
        }
        let header = read_header(handle.as_ref(), path)?;
        let durability = match &self.shared.log {
            Some(log) => Durability::Logged {
                log: log.clone(),
                inflight: self.shared.inflight.clone(),
            },
            None => Durability::Unlogged,
        };
        let refused = self
            .shared
            .unrecovered
            .get(path)
            .map(|r| format!("restart recovery could not apply its log records: {r}"));
        if header.flags & crate::header::FLAG_UNLOGGED_OPEN != 0 {
            tracing::warn!(
                db = path,
                "database was written in unlogged mode and not closed cleanly; run fixup"
            );
        }
        let db = Arc::new(Database::new(
            path.to_string(),
            self.shared.pool.clone(),
            handle,
            header,
            durability,
            refused,
            // Engine-wide: writer-lock counters and the write-back gate.
            (
                self.shared.locks.clone(),
                self.shared.writeback.clone(),
                self.shared.closed.clone(),
            ),
        ));
        if let Some(id) = identity {
            dbs.by_file.insert(id, key.clone());
        }
        dbs.by_path.insert(key, db.clone());
        Ok(db)
    }

    /// Every database under the data directory (relative paths, sorted).
    pub fn list_databases(&self) -> NsfResult<Vec<String>> {
        let mut out = Vec::new();
        let root = &self.shared.cfg.data_dir;
        let skip = self.shared.cfg.log.as_ref().map(|l| l.dir.clone());
        walk(
            self.shared.backend.as_ref(),
            root,
            root,
            skip.as_deref(),
            &mut out,
        )?;
        out.sort();
        Ok(out)
    }

    /// Flushes every durable dirty page and writes a checkpoint (logged
    /// mode). Returns the checkpoint's redo LSN.
    pub fn checkpoint(&self) -> NsfResult<Option<Lsn>> {
        self.check_open()?;
        checkpoint_now(&self.shared)
    }

    pub fn log_info(&self) -> Option<LogInfo> {
        self.shared.log.as_ref().map(|l| l.info())
    }

    pub fn pool_stats(&self) -> PoolStats {
        self.shared.pool.stats()
    }

    /// Writer-lock waits across all databases since the engine opened.
    pub fn lock_stats(&self) -> LockStats {
        self.shared.locks.snapshot()
    }

    /// How many databases are in the open-database cache.
    pub fn open_databases(&self) -> usize {
        self.shared.dbs.lock().by_path.len()
    }

    /// Clean shutdown of an engine nobody else holds: see
    /// [`Engine::shutdown`].
    pub fn close(self) -> NsfResult<()> {
        self.shutdown()
    }

    /// Clean shutdown, even while others still hold the engine: refuse
    /// every later write and open ([`NsfError::EngineClosed`]), stop the
    /// background thread, flush, checkpoint, close the log (or, unlogged,
    /// clear the databases' open flags). Writes already past their check
    /// finish; a logged one is in the log and covered by the checkpoint's
    /// redo LSN (I8). A second call waits for the first and does nothing.
    pub fn shutdown(&self) -> NsfResult<()> {
        let mut background = self.background.lock();
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        stop_background(&self.shared, background.take());
        match &self.shared.log {
            Some(log) => {
                checkpoint_now(&self.shared)?;
                log.shutdown()?;
            }
            None => {
                let dbs: Vec<_> = self.shared.dbs.lock().by_path.values().cloned().collect();
                for db in dbs {
                    db.close_unlogged()?;
                }
            }
        }
        Ok(())
    }

    /// Whether [`Engine::shutdown`] has been called.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    fn check_open(&self) -> NsfResult<()> {
        if self.is_closed() {
            return Err(NsfError::EngineClosed);
        }
        Ok(())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        stop_background(&self.shared, self.background.get_mut().take());
    }
}

fn stop_background(s: &Shared, thread: Option<JoinHandle<()>>) {
    *s.stop.lock() = true;
    s.wake.notify_all();
    if let Some(t) = thread {
        let _ = t.join();
    }
}

fn background_loop(s: &Shared) {
    let mut last = Instant::now();
    loop {
        {
            let mut stop = s.stop.lock();
            if *stop {
                return;
            }
            s.wake.wait_for(&mut stop, Duration::from_millis(100));
            if *stop {
                return;
            }
        }
        let wanted = s.log.as_ref().is_some_and(|l| l.checkpoint_wanted());
        let (_, pressure) = s.pool.dirty_pressure();
        if wanted || pressure || last.elapsed() >= s.cfg.flush_interval {
            if let Err(e) = checkpoint_now(s) {
                tracing::error!(error = %e, "background checkpoint failed");
            }
            last = Instant::now();
        }
    }
}

/// Flush, then checkpoint with redo LSN = min(log end, in-flight batches,
/// oldest dirty page), read in that order (I8).
fn checkpoint_now(s: &Shared) -> NsfResult<Option<Lsn>> {
    let _one = s.checkpointing.lock();
    let upto = s.log.as_ref().map_or(Lsn(u64::MAX), |l| l.durable_lsn());
    let report = s.pool.flush(upto, None);
    for (_, name, err) in &report.failures {
        tracing::error!(db = %name, error = %err, "database write failed; the database refuses writes until reopened");
    }
    let Some(log) = &s.log else { return Ok(None) };
    let end = log.end_lsn();
    let inflight = s.inflight.min();
    let dirty = s.pool.min_rec_lsn();
    let redo = [Some(end), inflight, dirty]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(end);
    tracing::debug!(end = end.0, inflight = ?inflight, dirty = ?dirty, pages_written = report.pages_written, left_dirty = report.left_dirty, not_durable = report.not_durable, durable = upto.0, "checkpoint");
    log.checkpoint(redo)?;
    Ok(Some(redo))
}

fn read_header(f: &dyn storage::FileHandle, path: &str) -> NsfResult<DbHeader> {
    let not_db = |reason: String| NsfError::NotADatabase {
        path: path.to_string(),
        reason,
    };
    let len = f.len().map_err(|e| NsfError::Io {
        path: path.to_string(),
        source: e,
    })?;
    if len < PAGE_SIZE as u64 {
        return Err(not_db(format!(
            "file is {len} bytes, shorter than one page"
        )));
    }
    let mut page = PageBuf::zeroed();
    read_exact_at(f, page.bytes_mut(), 0).map_err(|e| NsfError::Io {
        path: path.to_string(),
        source: e,
    })?;
    page.verify(path, PageId(0))
        .map_err(|e| not_db(e.to_string()))?;
    DbHeader::decode(&page, path)
}

fn walk(
    be: &dyn Backend,
    root: &Path,
    dir: &Path,
    skip: Option<&Path>,
    out: &mut Vec<String>,
) -> NsfResult<()> {
    let entries = be.read_dir(dir).map_err(|e| NsfError::Io {
        path: dir.display().to_string(),
        source: e,
    })?;
    for p in entries {
        if Some(p.as_path()) == skip {
            continue;
        }
        if be.is_dir(&p) {
            walk(be, root, &p, skip, out)?;
        } else if p.extension().is_some_and(|e| e == "fdb") {
            // A file whose name is not a canonical database path (made by
            // hand) cannot be opened, so it is not listed either (I18).
            let rel = p.strip_prefix(root).ok().and_then(|r| r.to_str());
            match rel.map(DbPath::parse) {
                Some(Ok(rel)) => out.push(rel.to_string()),
                _ => tracing::warn!(file = %p.display(), "not a canonical database path; skipped"),
            }
        }
    }
    Ok(())
}

/// Builds the bytes of a new database: header plus three empty trees.
fn new_database_image(title: &str) -> NsfResult<Vec<u8>> {
    let mut store = ImageStore {
        pages: vec![PageBuf::zeroed()],
    };
    let note_root = btree::create(&mut store)?;
    let unid_root = btree::create(&mut store)?;
    let seq_root = btree::create(&mut store)?;
    let header = DbHeader {
        replica_id: ReplicaId(rand::random()),
        instance_id: DbInstanceId(rand::random()),
        created: Timestamp::now(),
        page_count: store.pages.len() as u32,
        free: FreeList {
            head: PageId::NONE,
            count: 0,
        },
        note_root,
        unid_root,
        seq_root,
        design_root: PageId::NONE,
        next_note_id: 1,
        last_seq: Seq(0),
        flags: 0,
        title: title.to_string(),
    };
    store.pages[0] = header.encode();
    let mut out = Vec::with_capacity(store.pages.len() * PAGE_SIZE);
    for (i, mut p) in store.pages.into_iter().enumerate() {
        p.seal(PageId(i as u32), Lsn::ZERO);
        out.extend_from_slice(p.bytes());
    }
    Ok(out)
}

/// A page store for building a new file in memory.
struct ImageStore {
    pages: Vec<PageBuf>,
}

impl PageStore for ImageStore {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.pages
            .get(id.0 as usize)
            .map(|p| Arc::new(p.clone()))
            .ok_or_else(|| storage::StorageError::corrupt("new database", id, "no such page"))
    }
    fn name(&self) -> &str {
        "new database"
    }
}

impl PageWrite for ImageStore {
    fn write(&mut self, id: PageId, page: PageBuf) {
        self.pages[id.0 as usize] = page;
    }
}

impl PageStoreMut for ImageStore {
    fn allocate(&mut self) -> StorageResult<PageId> {
        self.pages.push(PageBuf::zeroed());
        Ok(PageId(self.pages.len() as u32 - 1))
    }
    fn free(&mut self, _id: PageId) -> StorageResult<()> {
        Err(storage::StorageError::Invalid(
            "a new database frees no pages".into(),
        ))
    }
}
