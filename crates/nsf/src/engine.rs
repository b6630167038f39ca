//! The engine: everything one data directory needs at run time.
//!
//! It owns the shared buffer pool, the server-wide transaction log (or the
//! lack of one, in unlogged mode), the cache of open databases, the
//! catalog of every database (`catalog.rs`) and the background thread that
//! flushes dirty pages, takes checkpoints and closes idle databases.
//! Opening the engine *is* restart recovery: the log replays whatever the
//! last run left before any database is opened; then the catalog is
//! reconciled with the data directory (I20).
//!
//! ```text
//!   Engine ─┬─ BufferPool (shared)          ◄── flusher/checkpointer/closer thread
//!           ├─ TransLog   (one per data dir) ── group commit, recovery
//!           ├─ Catalog    path → title, audience (listing opens nothing)
//!           └─ open databases: DbPath → Slot ── Opening │ Open │ Closing
//! ```
//!
//! The checkpointer flushes pages whose log records are durable (I1), then
//! computes the redo LSN as the minimum of the log end, the batches in
//! flight and the oldest dirty page, read in that order (I8), and hands it
//! to the log, which may then recycle extents below it.
//!
//! **The open-database cache** keeps at most `max_open_databases`
//! instances, so descriptors and pool frames are bounded by settings, not
//! by how many databases the directory holds. Each path has one slot, a
//! small lifecycle: `Opening` while a thread reads the file (others wait,
//! with no lock held during the I/O), `Open` with the instance and when it
//! was last used, `Closing` while the closer writes it out (others wait,
//! then open it afresh). An instance is closed only when it is idle — the
//! cache holds its only `Arc`: no request, attachment stream, open view
//! collection, bulk build or client handle has it — and only once the
//! layers above have run their close hooks and every page of it is
//! written and synced; its frames then leave the pool and its descriptor
//! closes before the slot is freed (I19). The background thread closes
//! idle instances, least recently used first, a batch at a time (down to
//! 15/16 of the limit); logged, a batch costs one wait for the log and
//! the writes of its pages, unlogged a sync per file. A burst of opens can
//! still outrun the closer: an open that finds the cache at twice the
//! limit closes one batch of instances that need no I/O itself, and at
//! four times the limit any batch (I19, I54). The checkpointer and the
//! closer run below the request threads' CPU priority
//! (`storage::priority`). With no background thread every open over the limit
//! closes down to it.
//!
//! The engine also holds the writer-lock counters every database adds to
//! (plain atomics, so statistics cost nothing to keep), read back as
//! [`LockStats`] by `show stats`, and the cache's counters ([`CacheStats`]).
//!
//! A server shares the engine with every job it runs, and one of them may
//! still hold it at shutdown (stuck on a slow disk, a long scan). So the
//! engine can be closed while shared: [`Engine::shutdown`] stops the
//! background thread, refuses every later write and open with
//! [`NsfError::EngineClosed`], then runs the open databases' close hooks,
//! flushes, checkpoints and shuts the log as [`Engine::close`] does. A
//! holder's later writes fail before touching a file; its reads of what is
//! cached or on disk go on.

mod backup;
mod backup_history;
mod compact;
mod copy;
mod delete;
mod fixup_state;
mod store;

pub use backup_history::{BackupRun, RunKind, BACKUP_HISTORY_FILE, BACKUP_HISTORY_RUNS};
pub use copy::CopyReport;
pub use fixup_state::FixupState;

use crate::catalog::{self, Audience, Catalog, Listed};
use crate::clock::{Clock, SystemClock};
use crate::db::{Database, Life, LockCounters};
use crate::dbcore::{Durability, EngineLinks, Inflight, LogSession};
use crate::dbpath::DbPath;
use crate::fixup::FixupReport;
use crate::header::{DbHeader, MAX_TITLE};
use crate::retired::RetiredList;
use crate::state::Reason;
use crate::store::AttachStore;
use crate::{DbInstanceId, NsfError, NsfResult, ReplicaId, Seq, Timestamp};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use storage::backend::{read_exact_at, write_all_at, OpenMode};
use storage::freelist::FreeList;
use storage::pool::{BufferPool, FileId, PoolStats, SyncMode};
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
    /// Databases kept open at once (I19). Idle ones beyond it are closed,
    /// least recently used first; databases in use are never closed, so
    /// the cache holds more only while more are in use.
    pub max_open_databases: usize,
    /// Where identity times (sequence times, created, modified, added)
    /// come from (I22): the system clock unless a test sets its own.
    pub clock: Arc<dyn Clock>,
    /// Fix up, at open, every database restart recovery could not bring
    /// back or that was retired because it failed (I29); off, they stay
    /// refused until `folio fixup`.
    pub auto_fixup: bool,
    /// Whether the attachment store tries zstd on each attachment
    /// (`attachment_compression`, design.md §2.9).
    pub attachment_compression: crate::AttachmentCompression,
    /// The zstd level it compresses at (`attachment_compression_level`,
    /// 1 to 19, default 3; design.md §2.9).
    pub attachment_compression_level: crate::CompressionLevel,
}

/// I19's ceiling as a multiple of `max_open_databases`: the cache never
/// holds more idle instances than this many times its limit.
pub const CACHE_CEILING: usize = 4;

/// Descriptors kept beside the open-database cache when its limit is sized
/// from a descriptor budget: log extents, the catalog, attachment objects
/// being read or written, sort runs and the data directory.
pub const ENGINE_FILES_RESERVE: u64 = 512;

/// The bounds of a limit sized from descriptors: below the floor the
/// cache would churn on any real working set; above the ceiling an
/// instance's own memory (about 55 KB besides its pool pages,
/// docs/benchmarks.md "dbs") would reach half a gigabyte.
pub const SIZED_OPEN_DATABASES: std::ops::RangeInclusive<usize> = 64..=10_000;

impl EngineConfig {
    /// The largest `max_open_databases` whose I19 ceiling, one descriptor
    /// per open instance (its data file), fits in `descriptors` beside
    /// `ENGINE_FILES_RESERVE`, within `SIZED_OPEN_DATABASES`. The server
    /// sizes the cache this way when no limit is set: the process's
    /// descriptors are what bounds it, and a limit far below them only
    /// makes the cache churn.
    pub fn open_databases_within(descriptors: u64) -> usize {
        let fit = descriptors.saturating_sub(ENGINE_FILES_RESERVE) / CACHE_CEILING as u64;
        let fit = usize::try_from(fit).unwrap_or(usize::MAX);
        fit.clamp(*SIZED_OPEN_DATABASES.start(), *SIZED_OPEN_DATABASES.end())
    }

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
            // One or two descriptors each: well inside the usual 20,000
            // hard limit with room for connections and the log.
            max_open_databases: 1000,
            clock: Arc::new(SystemClock),
            auto_fixup: true,
            attachment_compression: crate::AttachmentCompression::Auto,
            // Measured (docs/benchmarks.md "replication"): level 3 stores
            // a compressible attachment several times faster than 9 and
            // above; harder levels are for servers feeding slow links.
            attachment_compression_level: crate::CompressionLevel::DEFAULT,
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

/// The open-database cache's figures since the engine opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Database instances now (open, or being closed): each holds a
    /// descriptor (two once it has streamed attachments) and its pages in
    /// the pool.
    pub open: u64,
    /// `max_open_databases`.
    pub limit: u64,
    /// Opens that had to open the file (the database was not open).
    pub opened: u64,
    /// Instances closed because the cache was over its limit.
    pub closed: u64,
}

struct Shared {
    backend: Arc<dyn Backend>,
    cfg: EngineConfig,
    pool: Arc<BufferPool>,
    log: Option<Arc<TransLog>>,
    /// This life of the log (I14), with the log.
    log_session: Option<LogSession>,
    inflight: Arc<Inflight>,
    dbs: Mutex<OpenDbs>,
    /// Signalled whenever a slot leaves `Opening` or `Closing`.
    dbs_changed: Condvar,
    /// One pass closing idle databases at a time.
    closing: Mutex<()>,
    /// Opens skip their own close pass while fewer instances than this
    /// are open: the last pass found too few idle (`keep_within_limit`).
    inline_close_from: AtomicUsize,
    catalog: Arc<Catalog>,
    /// Retired instances and the databases that need fixup (I29).
    retired: RetiredList,
    /// Files detached from checkpoints because they failed (I29).
    detached: Mutex<Vec<FileId>>,
    /// Automatic fixups made at this open.
    fixups: Vec<FixupReport>,
    /// Fixups since the open, for `show stats`.
    fixup_log: Mutex<fixup_state::FixupLog>,
    /// One writer of the backup history at a time.
    history_writing: Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
    /// Serialises checkpoints (background thread and explicit calls).
    checkpointing: Mutex<()>,
    locks: Arc<LockCounters>,
    writeback: Arc<crate::writeback::Writeback>,
    /// Set once by `shutdown`; every database checks it before a write.
    closed: Arc<AtomicBool>,
    /// The server-wide attachment store (design.md §2.9).
    store: Arc<AttachStore>,
}

/// The open-database cache, keyed twice so that one file can never have
/// two `Database` instances (I18): by canonical path, and by the file's
/// identity on disk (a link made by hand is a second path to one file).
#[derive(Default)]
struct OpenDbs {
    slots: HashMap<DbPath, Slot>,
    by_file: HashMap<FileIdentity, DbPath>,
    /// Slots `Open` or `Closing`: instances that exist.
    instances: usize,
    /// Orders uses, for closing the least recently used first.
    clock: u64,
    opened: u64,
    closed: u64,
}

impl OpenDbs {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Marks `key` `Closing` and hands its instance over if it is open
    /// and idle (the cache holds the only `Arc`): from now on nobody can
    /// take it up, through the cache or a weak reference (I19, I54).
    fn take_if_idle(&mut self, key: &DbPath) -> Option<Victim> {
        match self.slots.get(key) {
            Some(Slot::Open { db, .. }) if Arc::strong_count(db) == 1 => {}
            _ => return None,
        }
        match self.slots.insert(key.clone(), Slot::Closing) {
            Some(Slot::Open { db, file, .. }) => {
                db.set_closing(true);
                Some(Victim {
                    key: key.clone(),
                    db,
                    file,
                })
            }
            _ => None,
        }
    }
}

/// One path's place in the cache (module docs, I18, I19).
enum Slot {
    /// A thread is opening (or creating) the file; an open of the path
    /// waits for it.
    Opening,
    /// `used` is the clock at its last open; `file` its identity on disk.
    Open {
        db: Arc<Database>,
        used: u64,
        file: Option<FileIdentity>,
    },
    /// The closer is writing it out; an open of the path waits, then opens
    /// it afresh.
    Closing,
}

/// A path claimed in the cache (`Slot::Opening`): while it is held no
/// other thread opens, creates or closes the path. Dropped unfilled (an
/// error, a panic), it frees the slot again.
struct Claim<'e> {
    shared: &'e Shared,
    key: DbPath,
    filled: bool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.shared.dbs.lock().slots.remove(&self.key);
            self.shared.dbs_changed.notify_all();
        }
    }
}

/// What looking a path up in the cache found: the open instance (and
/// whether the cache is over its limit), or a claim on the path.
enum Lookup<'e> {
    Open(Arc<Database>, bool),
    Claimed(Claim<'e>),
}

/// An instance being closed.
struct Victim {
    key: DbPath,
    db: Arc<Database>,
    file: Option<FileIdentity>,
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
    /// recovery when logged, starts the background thread and reconciles
    /// the catalog with the directory (I20).
    pub fn open(
        backend: Arc<dyn Backend>,
        cfg: EngineConfig,
    ) -> NsfResult<(Engine, Option<RecoveryReport>)> {
        if cfg.max_open_databases == 0 {
            return Err(NsfError::Setting {
                key: "max_open_databases".into(),
                reason: "must be at least 1".into(),
            });
        }
        backend
            .create_dir_all(&cfg.data_dir)
            .map_err(|e| NsfError::Io {
                path: cfg.data_dir.display().to_string(),
                source: e,
            })?;
        let retired = RetiredList::load(backend.clone(), &cfg.data_dir)?;
        // Archive style: swept objects are kept in the archive (§3.6).
        let store_archive = cfg
            .log
            .as_ref()
            .filter(|l| l.style == translog::LogStyle::Archive)
            .and_then(|l| l.archive_dir.as_ref())
            .map(|a| cfg.data_dir.join(a).join(crate::store::STORE_DIR));
        let (store, store_was_clean) = AttachStore::open(
            backend.clone(),
            &cfg.data_dir,
            (cfg.attachment_compression, cfg.attachment_compression_level),
            store_archive,
        )?;
        let (log, report) = match &cfg.log {
            Some(lc) => {
                // I29: a retired instance's records are never applied.
                let (log, report) = TransLog::open_retiring(
                    backend.clone(),
                    &cfg.data_dir,
                    lc.clone(),
                    &retired.pairs(),
                )?;
                (Some(log), Some(report))
            }
            None => (None, None),
        };
        if let Some(r) = &report {
            retire_unrecovered(&retired, r)?;
        }
        let log_session = report.as_ref().map(|r| LogSession {
            epoch: r.epoch,
            recovered_from: r.scan_start,
        });
        // I42: before the catalog walk could list what a delete left.
        delete::finish_interrupted_deletes(backend.as_ref(), &cfg.data_dir, &retired)?;
        let fixups = if cfg.auto_fixup {
            auto_fixup(backend.as_ref(), &cfg, &retired, &store)
        } else {
            for (path, why) in retired.all_needing_fixup() {
                tracing::error!(db = %path, reason = %why, "database needs fixup and translog.auto_fixup is off: it refuses writes until `folio fixup` repairs it");
            }
            Vec::new()
        };
        // Started here, so they run at the priority of the thread opening
        // the engine, not of whichever thread stores the first attachment.
        let writeback =
            crate::writeback::Writeback::new(cfg.attachment_writeback).map_err(|e| {
                NsfError::Io {
                    path: "attachment writer threads".into(),
                    source: e,
                }
            })?;
        let loaded = Catalog::load(backend.clone(), &cfg.data_dir)?;
        let pool = BufferPool::new(cfg.buffer_pool_size);
        // The checkpoint syncs the database files' file system through a
        // handle no database owns, so no descriptor outlives its close (I8).
        let anchor_path = cfg.data_dir.join(catalog::CATALOG_FILE);
        let anchor = backend
            .open(&anchor_path, OpenMode::Existing)
            .map_err(|e| NsfError::Io {
                path: anchor_path.display().to_string(),
                source: e,
            })?;
        pool.anchor_sync(anchor);
        let shared = Arc::new(Shared {
            pool,
            backend,
            log,
            log_session,
            inflight: Arc::default(),
            dbs: Mutex::default(),
            dbs_changed: Condvar::new(),
            closing: Mutex::new(()),
            inline_close_from: AtomicUsize::new(0),
            catalog: Arc::new(loaded.catalog),
            retired,
            detached: Mutex::default(),
            fixup_log: Mutex::new(fixup_state::FixupLog::of(&fixups, cfg.clock.now())),
            history_writing: Mutex::new(()),
            fixups,
            stop: Mutex::new(false),
            wake: Condvar::new(),
            checkpointing: Mutex::new(()),
            locks: Arc::default(),
            writeback: Arc::new(writeback),
            closed: Arc::default(),
            store: Arc::new(store),
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
        let engine = Engine { shared, background };
        engine.reconcile_catalog(loaded.damaged)?;
        if !store_was_clean {
            engine.sweep_after_crash();
        }
        Ok((engine, report))
    }

    /// Brings the catalog up to date with the data directory (I20): walks
    /// it, forgets the databases whose file is gone, rewrites the catalog
    /// file, then opens every database the catalog does not know or whose
    /// ACL change a crash interrupted (opening one records it), and closes
    /// them again. A file that cannot be opened is recorded as one whose
    /// list cannot be read (only administrators see it listed), so it is
    /// not tried again at every start; opening it reports the problem.
    fn reconcile_catalog(&self, damaged: bool) -> NsfResult<()> {
        let s = &self.shared;
        let skip: Vec<PathBuf> = s
            .cfg
            .log
            .iter()
            .flat_map(|l| std::iter::once(&l.dir).chain(&l.archive_dir))
            .map(|d| s.cfg.data_dir.join(d))
            .collect();
        let on_disk = catalog::walk(s.backend.as_ref(), &s.cfg.data_dir, &skip)?;
        let unknown = s.catalog.plan(&on_disk, damaged);
        s.catalog.rewrite()?;
        let started = Instant::now();
        for path in &unknown {
            match self.open_database(path.as_str()) {
                Ok(_) => {}
                // A second name of a file listed under another (I18).
                Err(e @ NsfError::SameFile { .. }) => {
                    tracing::info!(db = %path, error = %e, "not listed");
                    s.catalog.forget(path.as_str());
                }
                // Listed for administrators, as something that is there;
                // opening it says what is wrong.
                Err(e) => {
                    tracing::info!(db = %path, error = %e, "database file cannot be opened");
                    s.catalog.note(
                        path.as_str(),
                        catalog::Entry {
                            title: String::new(),
                            instance: DbInstanceId(0),
                            audience: Audience::Unreadable,
                        },
                    );
                }
            }
        }
        // Only read to be recorded: none of them stays open.
        close_idle(s, 0);
        if !unknown.is_empty() {
            tracing::info!(
                databases = on_disk.len(),
                read = unknown.len(),
                ms = started.elapsed().as_millis() as u64,
                "catalog reconciled with the data directory"
            );
        }
        Ok(())
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

    /// Refuses a path inside the log directory, whose files are the
    /// log's alone. Asked only where a file is about to be created or
    /// opened (a cache miss): an instance in the cache passed it.
    fn outside_log(&self, key: &DbPath) -> NsfResult<()> {
        let Some(log) = &self.shared.cfg.log else {
            return Ok(());
        };
        let log_dir = self.shared.cfg.data_dir.join(&log.dir);
        if self.full_path(key.as_str()).starts_with(&log_dir) {
            return Err(NsfError::BadPath {
                path: key.to_string(),
                reason: "the transaction log's directory holds no databases".into(),
            });
        }
        Ok(())
    }

    fn full_path(&self, rel: &str) -> PathBuf {
        self.shared.cfg.data_dir.join(rel)
    }

    /// Creates a new, empty database. The file is written completely under a
    /// temporary name, synced, renamed into place and the directory synced
    /// (I9), so a crash leaves either no database or a whole one; the path
    /// is claimed in the cache meanwhile, so two creates of one path cannot
    /// both write it.
    pub fn create_database(&self, path: &str, title: &str) -> NsfResult<Arc<Database>> {
        self.create_replica(path, ReplicaId(rand::random()), title)
    }

    /// [`Engine::create_database`] with a given replica id: a new, empty
    /// replica of a database that exists elsewhere, for replication to
    /// fill (its ACL note's UNID follows from the id, design.md §2.7).
    pub fn create_replica(
        &self,
        path: &str,
        replica_id: ReplicaId,
        title: &str,
    ) -> NsfResult<Arc<Database>> {
        self.check_open()?;
        let key = DbPath::parse(path)?;
        self.outside_log(&key)?;
        if title.len() > MAX_TITLE {
            return Err(NsfError::Invalid(format!(
                "title is {} bytes; the limit is {MAX_TITLE}",
                title.len()
            )));
        }
        let claim = match self.lookup(&key) {
            Lookup::Open(..) => return Err(NsfError::DatabaseExists(key.to_string())),
            Lookup::Claimed(claim) => claim,
        };
        let path = key.as_str();
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
        let image = new_database_image(title, replica_id, self.shared.cfg.clock.now())?;
        let tmp = full.with_extension("fdb-new");
        let f = be.open(&tmp, OpenMode::CreateOrOpen).map_err(io)?;
        f.set_len(0).map_err(io)?;
        write_all_at(f.as_ref(), &image, 0).map_err(io)?;
        f.sync_data().map_err(io)?;
        drop(f);
        be.rename(&tmp, &full).map_err(io)?;
        be.sync_dir(dir).map_err(io)?;
        self.open_claimed(claim)
    }

    /// Opens a database (cached: every caller shares one instance, I18).
    pub fn open_database(&self, path: &str) -> NsfResult<Arc<Database>> {
        self.check_open()?;
        let key = DbPath::parse(path)?;
        match self.lookup(&key) {
            Lookup::Open(db, over_limit) => {
                if over_limit {
                    self.keep_within_limit();
                }
                Ok(db)
            }
            Lookup::Claimed(claim) => {
                self.outside_log(&key)?;
                self.open_claimed(claim)
            }
        }
    }

    /// The open instance of `key`, or a claim on its slot; waits while
    /// another thread opens or closes it.
    fn lookup(&self, key: &DbPath) -> Lookup<'_> {
        let s = &*self.shared;
        let mut dbs = s.dbs.lock();
        loop {
            let now = dbs.tick();
            let over_limit = dbs.instances > s.cfg.max_open_databases;
            match dbs.slots.get_mut(key) {
                Some(Slot::Open { db, used, .. }) => {
                    *used = now;
                    return Lookup::Open(db.clone(), over_limit);
                }
                Some(Slot::Opening | Slot::Closing) => {
                    let started = Instant::now();
                    s.dbs_changed.wait(&mut dbs);
                    crate::waits::DB_SLOT.since(started);
                }
                None => {
                    dbs.slots.insert(key.clone(), Slot::Opening);
                    return Lookup::Claimed(Claim {
                        shared: s,
                        key: key.clone(),
                        filled: false,
                    });
                }
            }
        }
    }

    /// Opens the file of a claimed path and puts the instance in the
    /// cache. The file is opened and its header read with no lock held.
    fn open_claimed(&self, mut claim: Claim<'_>) -> NsfResult<Arc<Database>> {
        let s = &*self.shared;
        let key = claim.key.clone();
        let path = key.as_str();
        let handle = s
            .backend
            .open(&self.full_path(path), OpenMode::Existing)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => NsfError::NoSuchDatabase(path.to_string()),
                _ => NsfError::Io {
                    path: path.to_string(),
                    source: e,
                },
            })?;
        let identity = handle.identity();
        let header = read_header(handle.as_ref(), path)?;
        let durability = match &s.log {
            Some(log) => Durability::Logged {
                log: log.clone(),
                inflight: s.inflight.clone(),
                session: s.log_session.expect("a log has a session"),
            },
            None => Durability::Unlogged,
        };
        // I42: a delete whose unlink failed leaves the file to the next
        // start; its instance's records would not be replayed.
        if s.retired.is_deleted(path, header.instance_id) {
            return Err(NsfError::DatabaseDeleted(path.to_string()));
        }
        let refused = s.retired.needs_fixup(path).map(|r| Reason::needs_fixup(&r));
        if header.flags & crate::header::FLAG_UNLOGGED_OPEN != 0 {
            tracing::warn!(
                db = path,
                "database was written in unlogged mode and not closed cleanly; run fixup"
            );
        }
        let db = {
            let mut dbs = s.dbs.lock();
            if let Some(other) = identity.and_then(|id| dbs.by_file.get(&id)) {
                let e = NsfError::SameFile {
                    path: path.to_string(),
                    open_as: other.to_string(),
                };
                drop(dbs);
                return Err(e);
            }
            let db = Arc::new_cyclic(|me| {
                Database::new(
                    path.to_string(),
                    s.pool.clone(),
                    handle,
                    header,
                    refused,
                    EngineLinks {
                        durability,
                        writeback: s.writeback.clone(),
                        engine_closed: s.closed.clone(),
                        clock: s.cfg.clock.clone(),
                        store: s.store.clone(),
                    },
                    // Engine-wide writer-lock counters, and the
                    // instance's own links (I19, I20).
                    (s.locks.clone(), Life::new(me.clone(), s.catalog.clone())),
                )
            });
            if let Some(id) = identity {
                dbs.by_file.insert(id, key.clone());
            }
            let used = dbs.tick();
            dbs.slots.insert(
                key,
                Slot::Open {
                    db: db.clone(),
                    used,
                    file: identity,
                },
            );
            dbs.instances += 1;
            dbs.opened += 1;
            claim.filled = true;
            s.dbs_changed.notify_all();
            db
        };
        // I20: an instance's catalog entry is checked whenever it opens.
        db.refresh_catalog();
        self.keep_within_limit();
        Ok(db)
    }

    /// After an open that found the cache over its limit: wake the closer,
    /// or close idle databases here when there is no closer (down to the
    /// limit) or it has fallen behind (at twice the limit: one batch, so
    /// no request waits for more than one batch of closes).
    fn keep_within_limit(&self) {
        let s = &*self.shared;
        let limit = s.cfg.max_open_databases;
        let open = s.dbs.lock().instances;
        if open <= limit {
            return;
        }
        // Held only by a shutdown in progress, which closes everything.
        let Some(background) = self.background.try_lock() else {
            return;
        };
        let closer = background.is_some();
        drop(background);
        if !closer {
            close_idle(s, limit);
        } else if open < limit.saturating_mul(2)
            || open < s.inline_close_from.load(Ordering::Relaxed)
        {
            s.wake.notify_all();
        } else {
            // Twice the limit: the open closes a batch itself. A pass walks
            // every slot; when it finds too few idle (they are in use, as
            // with thousands of users each holding a mail file), the next
            // opens would walk them again for nothing, so they leave it to
            // the closer until `batch` more instances are open.
            //
            // Only instances that close with no I/O (I54); if those are
            // too few and the cache has reached its ceiling (I19: four
            // times the limit), the closer has fallen far behind, and the
            // open closes a batch itself, writes included: back-pressure,
            // counted apart. Measured at 4,000 mail users against a limit
            // of 1,000, a ceiling at twice the limit made opens wait for
            // the closer 2,500 times in 20 s (up to 3.2 s each).
            let target = open - batch(limit);
            let started = Instant::now();
            let mut closed = close_quiet(s, target);
            crate::waits::DB_CLOSE_INLINE.since(started);
            if open.saturating_sub(closed) > target && open >= ceiling(limit) {
                let started = Instant::now();
                closed += close_idle(s, target);
                crate::waits::DB_CLOSE_BACKPRESSURE.since(started);
            }
            let short = open.saturating_sub(closed) > target;
            let from = if short { open + batch(limit) } else { 0 };
            s.inline_close_from.store(from, Ordering::Relaxed);
        }
    }

    /// Every database's path, from the catalog (no database is opened,
    /// I20), sorted.
    pub fn list_databases(&self) -> NsfResult<Vec<String>> {
        Ok(self
            .shared
            .catalog
            .list(None, &|_| true)
            .into_iter()
            .map(|l| l.path)
            .collect())
    }

    /// The databases under `folder` (a path prefix) whose audience `admit`
    /// accepts, with their titles, by path, from the catalog: no database
    /// is opened, whatever their number (I20).
    pub fn list_databases_where(
        &self,
        folder: Option<&str>,
        admit: impl Fn(&Audience) -> bool,
    ) -> Vec<Listed> {
        self.shared.catalog.list(folder, &admit)
    }

    /// Fixes up one database (design.md §2.8): checks every page, keeps
    /// what can be read, rebuilds the indexes from the note table and
    /// swaps the result in with a new instance id (I29); `dry_run` writes
    /// nothing. The database must not be open (the path is claimed in the
    /// cache meanwhile, so nothing opens it, I18). Durable when it
    /// returns: the new file is synced and renamed into place, the
    /// directory synced.
    pub fn fixup(&self, path: &str, dry_run: bool) -> NsfResult<FixupReport> {
        self.check_open()?;
        let key = DbPath::parse(path)?;
        self.outside_log(&key)?;
        close_if_idle(&self.shared, &key)?;
        let claim = match self.lookup(&key) {
            Lookup::Open(..) => {
                return Err(NsfError::Invalid(format!(
                    "{key} is open; fixup needs the database closed (stop the server and run `folio fixup` on its data directory)"
                )))
            }
            Lookup::Claimed(claim) => claim,
        };
        let s = &*self.shared;
        let report = fixup_path(
            s.backend.as_ref(),
            (&s.cfg, &s.retired, &s.store),
            key.as_str(),
            dry_run,
        );
        drop(claim);
        if let Ok(r) = &report {
            s.fixup_log.lock().fixed(r, s.cfg.clock.now());
        }
        report
    }

    /// The automatic fixups made when the engine opened (`auto_fixup`).
    pub fn fixups(&self) -> &[FixupReport] {
        &self.shared.fixups
    }

    /// Databases that refuse writes until fixup, with the reason (I29).
    pub fn needing_fixup(&self) -> Vec<(String, String)> {
        self.shared.retired.all_needing_fixup()
    }

    /// Flushes every durable dirty page and writes a checkpoint (logged
    /// mode). Returns the checkpoint's redo LSN.
    pub fn checkpoint(&self) -> NsfResult<Option<Lsn>> {
        self.check_open()?;
        checkpoint_now(&self.shared)
    }

    /// Archive style: copies completed log extents to `to` (default
    /// `translog.archive_dir`), verifies them, and lets the log reuse them
    /// (I31). Durable when it returns: each copy and the archive mark are
    /// synced. Bad requests (another style, no directory, unlogged mode)
    /// are [`NsfError::Invalid`] and change nothing.
    /// A run that got past those checks is added to the backup history
    /// once it is durable (I64), failed or not.
    pub fn archive(&self, to: Option<&Path>) -> NsfResult<translog::ArchiveReport> {
        let clock = backup_history::RunClock::start(self.shared.cfg.clock.now());
        let r = self.archive_unrecorded(to);
        if matches!(r, Err(NsfError::Invalid(_) | NsfError::EngineClosed)) {
            return r;
        }
        let dir = to
            .map(Path::to_path_buf)
            .or_else(|| {
                self.shared
                    .cfg
                    .log
                    .as_ref()
                    .and_then(|l| l.archive_dir.clone())
            })
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        self.record_run(clock.finish(RunKind::Archive, dir, &r, |a, run| {
            run.dir = a.archive_dir.display().to_string();
            run.bytes = a.bytes_copied;
            run.extents = a.extents_copied;
        }));
        r
    }

    /// [`Engine::archive`] without the history: a backup archives as its
    /// last step and records the whole run once.
    fn archive_unrecorded(&self, to: Option<&Path>) -> NsfResult<translog::ArchiveReport> {
        self.check_open()?;
        let log = self.shared.log.as_ref().ok_or_else(|| {
            NsfError::Invalid(
                "the transaction log is disabled (translog.enabled = false); nothing to archive"
                    .into(),
            )
        })?;
        log.archive(to).map_err(|e| match e {
            translog::LogError::Invalid(m) => NsfError::Invalid(m),
            other => other.into(),
        })
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

    /// How many database instances exist (open, or being closed).
    pub fn open_databases(&self) -> usize {
        self.shared.dbs.lock().instances
    }

    /// The open-database cache's figures.
    pub fn cache_stats(&self) -> CacheStats {
        let dbs = self.shared.dbs.lock();
        CacheStats {
            open: dbs.instances as u64,
            limit: self.shared.cfg.max_open_databases as u64,
            opened: dbs.opened,
            closed: dbs.closed,
        }
    }

    /// Clean shutdown of an engine nobody else holds: see
    /// [`Engine::shutdown`].
    pub fn close(self) -> NsfResult<()> {
        self.shutdown()
    }

    /// Clean shutdown, even while others still hold the engine: stop the
    /// background thread, run the databases' close hooks, then refuse
    /// every later write and open ([`NsfError::EngineClosed`]), flush,
    /// checkpoint, close the log (or, unlogged, clear the databases' open
    /// flags), and sync the catalog. Writes already past their check
    /// finish; a logged one is in the log and covered by the checkpoint's
    /// redo LSN (I8). A second call waits for the first and does nothing.
    pub fn shutdown(&self) -> NsfResult<()> {
        let mut background = self.background.lock();
        if self.is_closed() {
            return Ok(());
        }
        stop_background(&self.shared, background.take());
        let store_clean = self.sweep_at_shutdown();
        let open: Vec<Arc<Database>> = self
            .shared
            .dbs
            .lock()
            .slots
            .values()
            .filter_map(|slot| match slot {
                Slot::Open { db, .. } => Some(db.clone()),
                _ => None,
            })
            .collect();
        // The hooks still write (marking unlogged indexes clean, I14):
        // writes are refused only once they ran. The checkpointer has
        // stopped, so when their commits fill the log a checkpoint is
        // taken here, as it would have been (with thousands of databases
        // open, their hooks alone outgrow the log).
        for db in &open {
            if self
                .shared
                .log
                .as_ref()
                .is_some_and(|l| l.checkpoint_wanted())
            {
                if let Err(e) = checkpoint_now(&self.shared) {
                    tracing::warn!(error = %e, "checkpoint during shutdown failed");
                }
            }
            db.run_close_hooks();
        }
        self.shared.closed.store(true, Ordering::Release);
        for db in &open {
            db.engine_shut_down();
        }
        match &self.shared.log {
            Some(log) => {
                // Every commit durable first (the hooks' clean marks do
                // not wait for the log, I14), so the last checkpoint writes
                // every page and the next start replays nothing.
                log.wait_durable(log.end_lsn())?;
                checkpoint_now(&self.shared)?;
                log.shutdown()?;
            }
            None => {
                for db in &open {
                    db.close_unlogged()?;
                }
            }
        }
        if store_clean {
            self.shared.store.mark_clean()?;
        }
        self.shared.catalog.sync()
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

/// The background work: the checkpointer on this thread, the closer on
/// one of its own. They are apart because a close may wait for the log
/// (a close hook commits, I14) and only a checkpoint frees room in a full
/// log: on one thread, a close waiting for room would wait for itself,
/// and every open waiting for the closer with it.
fn background_loop(s: &Shared) {
    // Below the request threads; the closer started here inherits it.
    storage::priority::lower_this_thread();
    std::thread::scope(|scope| {
        let closer = std::thread::Builder::new()
            .name("folio-closer".into())
            .spawn_scoped(scope, || closer_loop(s));
        if let Err(e) = closer {
            tracing::error!(error = %e, "cannot start the closer thread; idle databases close only at the cache's ceiling");
        }
        checkpoint_loop(s);
    });
}

/// Sleeps up to 100 ms (not at all if `at_once`); false once stopped.
fn pause(s: &Shared, at_once: bool) -> bool {
    let mut stop = s.stop.lock();
    if !*stop && !at_once {
        s.wake.wait_for(&mut stop, Duration::from_millis(100));
    }
    !*stop
}

fn checkpoint_loop(s: &Shared) {
    let mut last = Instant::now();
    while pause(s, false) {
        let wanted = s.log.as_ref().is_some_and(|l| l.checkpoint_wanted());
        let (_, pressure) = s.pool.dirty_pressure();
        if wanted || pressure || last.elapsed() >= s.cfg.flush_interval {
            if let Err(e) = checkpoint_now(s) {
                tracing::error!(error = %e, "background checkpoint failed");
            }
            if let Err(e) = s.catalog.sync() {
                tracing::error!(error = %e, "database catalog sync failed");
            }
            last = Instant::now();
        }
    }
}

/// A closer that is behind goes on at once.
fn closer_loop(s: &Shared) {
    let mut behind = false;
    while pause(s, behind) {
        behind = closer_pass(s);
    }
}

/// I19's ceiling: past it, an open closes idle instances itself even when
/// that means writing them (back-pressure on a closer that fell behind).
fn ceiling(limit: usize) -> usize {
    limit.saturating_mul(CACHE_CEILING)
}

/// The size of the closer's batches: 1/16 of the limit, so that passes
/// (one flush each) are few, and the cache works down to 15/16 of it.
fn batch(limit: usize) -> usize {
    (limit / 16).max(1)
}

/// One pass of the closer, when the cache is over its limit: at most four
/// batches, so that a pass (an fdatasync per database not yet written by a
/// checkpoint) never holds up a checkpoint for long. Returns whether the
/// cache is still over its limit after a pass that closed something.
fn closer_pass(s: &Shared) -> bool {
    let limit = s.cfg.max_open_databases;
    let open = s.dbs.lock().instances;
    if open <= limit {
        return false;
    }
    let target = (limit - batch(limit) + 1).max(open.saturating_sub(4 * batch(limit)));
    let started = Instant::now();
    // Instances with nothing to write go first and cost no I/O; the rest
    // (hooks to run, pages to write) only when those are not enough.
    let quiet = close_quiet(s, target);
    let closed = quiet + close_idle(s, target);
    crate::waits::DB_CLOSE_PASS.since(started);
    if closed > 0 {
        // Instances went idle: opens may find more at twice the limit.
        s.inline_close_from.store(0, Ordering::Relaxed);
    }
    closed > 0 && s.dbs.lock().instances > limit
}

/// Closes idle instances that have nothing to write and no close hook,
/// least recently used first, until at most `target` are left: no disk
/// I/O and no wait for the log, so an open may do it (I54). Returns how
/// many closed.
fn close_quiet(s: &Shared, target: usize) -> usize {
    let Some(_one) = s.closing.try_lock() else {
        // The closer is at work; it brings the cache down.
        return 0;
    };
    let victims = take_quiet(s, target);
    release_victims(s, victims)
}

/// Closes idle database instances, least recently used first, until at
/// most `target` are left or none is idle (I19). Returns how many closed.
///
/// The pages of the instances it picks are written first, while they are
/// still open and anyone may take them up again; then they close, so a
/// path is `Closing` (and an open of it waits, I18) only while the close
/// hooks run and what they wrote is written, not while the bulk of its
/// pages is (I54).
fn close_idle(s: &Shared, target: usize) -> usize {
    let _one = s.closing.lock();
    let picked = idle_beyond(s, target, false);
    if picked.is_empty() {
        return 0;
    }
    let files: Vec<(FileId, u32)> = picked.iter().map(|(_, db)| db.pool_extent()).collect();
    let keys: Vec<DbPath> = picked.into_iter().map(|(key, _)| key).collect();
    write_files(s, &files);
    if s.log.is_some() {
        close_batch(s, &keys)
    } else {
        close_each(s, &keys)
    }
}

/// Closes the instances of `keys` that are open and idle: hooks, writes,
/// release (I19). The caller holds `closing`. Returns how many closed.
///
/// Logged, `close_idle` hands it a whole batch: the close hooks commit
/// without waiting (the views layer's clean marks, I14), so the batch
/// shares one wait for the log and one flush. Closed one by one, each
/// close waited for a log fsync of its own (shared by at most
/// [`CLOSERS`]): measured at 5,000 mail users against a limit of 1,000
/// (docs/benchmarks.md), those 74,884 waits for the log (209 s in all)
/// became 1,726 (8 s), and the router delivered 93% of the mail offered
/// instead of 73%.
fn close_batch(s: &Shared, keys: &[DbPath]) -> usize {
    let victims = take_idle(s, keys);
    for victim in &victims {
        victim.db.run_close_hooks();
    }
    write_out(s, &victims);
    release_victims(s, victims)
}

/// Unlogged: each close syncs what its hooks wrote and its header (I12,
/// I14), so the victims close side by side, each on its own, and their
/// syncs overlap.
fn close_each(s: &Shared, keys: &[DbPath]) -> usize {
    let next = AtomicUsize::new(0);
    let closed = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..CLOSERS.min(keys.len()) {
            scope.spawn(|| loop {
                let Some(key) = keys.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return;
                };
                if close_one(s, key) {
                    closed.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    closed.into_inner()
}

/// Instances the background closer closes side by side.
const CLOSERS: usize = 8;

/// Closes the instance of `key` if it is open and idle (a batch of one).
/// The caller holds `closing`. Returns whether it closed.
fn close_one(s: &Shared, key: &DbPath) -> bool {
    close_batch(s, std::slice::from_ref(key)) == 1
}

/// Drops the victims nobody took up meanwhile and whose frames are all
/// written, and puts the others back as open (I19). Returns how many
/// closed.
fn release_victims(s: &Shared, victims: Vec<Victim>) -> usize {
    if victims.is_empty() {
        return 0;
    }
    let (mut gone, mut kept) = (Vec::new(), Vec::new());
    for v in victims {
        // I19: nobody took it up meanwhile (hooks cannot hand it out), and
        // every frame of it is written; otherwise it stays open.
        if Arc::strong_count(&v.db) == 1 && v.db.release_pool().is_ok() {
            let Victim { key, db, file } = v;
            // The last reference: the instance and its descriptor go now,
            // before the slot is freed for a new instance of the file.
            drop(Arc::into_inner(db));
            gone.push((key, file));
        } else {
            kept.push(v);
        }
    }
    if !kept.is_empty() {
        tracing::warn!(
            databases = kept.len(),
            "idle databases stay open: pages of them could not be written"
        );
    }
    let mut dbs = s.dbs.lock();
    for (key, file) in &gone {
        dbs.slots.remove(key);
        if let Some(f) = file {
            dbs.by_file.remove(f);
        }
        dbs.instances -= 1;
        dbs.closed += 1;
    }
    for Victim { key, db, file } in kept {
        db.set_closing(false);
        let used = dbs.tick();
        dbs.slots.insert(key, Slot::Open { db, used, file });
    }
    s.dbs_changed.notify_all();
    gone.len()
}

/// Closes the instance of `key` if it is open and idle (as `close_idle`
/// closes one, I19), so that fixup or restore can claim the path, and
/// makes what closes wrote without a sync durable (I8): they read and
/// replace the file outside the pool, and a swap that retires the old
/// instance's log records (I29) must find every change of it in the file.
fn close_if_idle(s: &Shared, key: &DbPath) -> NsfResult<()> {
    let _one = s.closing.lock();
    close_one(s, key);
    sync_written(s)
}

/// Makes every page written without a sync durable (one sync of the
/// file system, I8); a failure poisons the log (it alone still holds
/// those changes) and is returned.
fn sync_written(s: &Shared) -> NsfResult<()> {
    match s.pool.sync_written() {
        Ok(_) => Ok(()),
        Err(e) => {
            let reason = format!("sync of the database files failed: {e}");
            if let Some(log) = &s.log {
                log.fail(reason.clone());
            }
            Err(NsfError::LogFailed(reason))
        }
    }
}

/// The least recently used idle instances beyond `target` (idle: the
/// cache holds the only `Arc`); with `quiet`, only those that close
/// without I/O (`Database::closes_quietly`). Each comes with a clone of
/// its `Arc`, so it is not idle until the caller lets go of it.
fn idle_beyond(s: &Shared, target: usize, quiet: bool) -> Vec<(DbPath, Arc<Database>)> {
    let dbs = s.dbs.lock();
    let excess = dbs.instances.saturating_sub(target);
    if excess == 0 {
        return Vec::new();
    }
    let mut idle: Vec<(u64, &DbPath, &Arc<Database>)> = dbs
        .slots
        .iter()
        .filter_map(|(key, slot)| match slot {
            Slot::Open { db, used, .. } if Arc::strong_count(db) == 1 => Some((*used, key, db)),
            _ => None,
        })
        .collect();
    idle.sort_unstable_by_key(|(used, _, _)| *used);
    idle.into_iter()
        // Looked at oldest first, and only until enough are found: each
        // look probes the pool for the file's pages.
        .filter(|(_, _, db)| {
            if quiet {
                db.closes_quietly()
            } else {
                // One a flush pass is writing right now is left for the
                // next round rather than waited for (I54).
                !s.pool.is_being_flushed(db.pool_file())
            }
        })
        .take(excess)
        .map(|(_, key, db)| (key.clone(), db.clone()))
        .collect()
}

/// Marks `Closing` the least recently used idle instances beyond `target`
/// that close without I/O, and hands them over (nobody can get one while
/// its slot is `Closing`).
fn take_quiet(s: &Shared, target: usize) -> Vec<Victim> {
    let keys: Vec<DbPath> = idle_beyond(s, target, true)
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    take_idle(s, &keys)
}

/// Marks `Closing` each of `keys` that is open and idle, and hands those
/// instances over (`OpenDbs::take_if_idle`, under one lock).
fn take_idle(s: &Shared, keys: &[DbPath]) -> Vec<Victim> {
    let mut dbs = s.dbs.lock();
    keys.iter()
        .filter_map(|key| dbs.take_if_idle(key))
        .collect()
}

/// Writes every page of the instances about to close (I19). Logged, the
/// log is made durable to its end first, so that every dirty page of
/// theirs may be written (I1); unlogged, their open flags are cleared
/// (I12).
fn write_out(s: &Shared, victims: &[Victim]) {
    let Some(upto) = durable_end(s) else { return };
    let files: Vec<_> = victims.iter().map(|v| v.db.pool_extent()).collect();
    flush_files_upto(s, upto, &files);
    if s.log.is_none() {
        for v in victims {
            if let Err(e) = v.db.close_unlogged() {
                tracing::error!(db = %v.key, error = %e, "cannot clear the unlogged-open flag");
            }
        }
    }
}

/// Writes the durable pages of `files` (the log is made durable to its
/// end first, so that every page of theirs may be written, I1).
fn write_files(s: &Shared, files: &[(FileId, u32)]) {
    if let Some(upto) = durable_end(s) {
        flush_files_upto(s, upto, files);
    }
}

/// Makes the log durable to its end and returns how far pages may be
/// written (I1): everything, unlogged; none if the log failed.
fn durable_end(s: &Shared) -> Option<Lsn> {
    match &s.log {
        Some(log) => match log.wait_durable(log.end_lsn()) {
            Ok(()) => Some(log.durable_lsn()),
            Err(e) => {
                tracing::error!(error = %e, "cannot close databases: the log is not durable");
                None
            }
        },
        None => Some(Lsn(u64::MAX)),
    }
}

/// Logged, the pages are written and their sync is left to the next
/// checkpoint's one sync of the file system, while the pool's ledger holds
/// the redo LSN behind them (I8, I19); unlogged, each file is synced.
fn flush_files_upto(s: &Shared, upto: Lsn, files: &[(FileId, u32)]) {
    log_failures(&s.pool.flush_sized(upto, files, sync_mode(s)));
}

/// Names every database a flush pass failed to write (I11: each now
/// refuses writes until reopened).
fn log_failures(report: &storage::pool::FlushReport) {
    for (_, name, err) in &report.failures {
        tracing::error!(db = %name, error = %err, "database write failed; the database refuses writes until reopened");
    }
}

/// Flush, then checkpoint with redo LSN = min(log end, in-flight batches,
/// oldest dirty page), read in that order (I8).
fn checkpoint_now(s: &Shared) -> NsfResult<Option<Lsn>> {
    let _one = s.checkpointing.lock();
    let started = Instant::now();
    let r = checkpoint_locked(s);
    crate::waits::CHECKPOINT.since(started);
    r
}

/// How the engine's own flushes (checkpoint, closer) make pages durable:
/// logged, by one sync of the file system per checkpoint; unlogged (no
/// log to redo them), each file at once.
fn sync_mode(s: &Shared) -> SyncMode {
    if s.log.is_some() {
        SyncMode::Deferred
    } else {
        SyncMode::EachFile
    }
}

fn checkpoint_locked(s: &Shared) -> NsfResult<Option<Lsn>> {
    let upto = s.log.as_ref().map_or(Lsn(u64::MAX), |l| l.durable_lsn());
    let report = s.pool.flush_all(upto, sync_mode(s));
    log_failures(&report);
    let Some(log) = &s.log else { return Ok(None) };
    // I8: what this pass and the closer wrote is durable before the redo
    // LSN is read. A failed sync cannot name the database it lost: the
    // log keeps every change since (the ledger holds the redo LSN) and is
    // poisoned, so writes stop and a restart redoes them.
    sync_written(s)?;
    let detached = detach_failed(s, log);
    let end = log.end_lsn();
    let inflight = s.inflight.min();
    // I29: a failed, retired file's pages will never be written; they do
    // not hold the redo LSN (and so the log's space) back.
    let dirty = s.pool.min_rec_lsn_except(&detached);
    let redo = [Some(end), inflight, dirty]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(end);
    tracing::debug!(end = end.0, inflight = ?inflight, dirty = ?dirty, pages_written = report.pages_written, left_dirty = report.left_dirty, not_durable = report.not_durable, durable = upto.0, "checkpoint");
    log.checkpoint(redo)?;
    Ok(Some(redo))
}

/// The files that failed (I11) and are detached from checkpoints (I29).
/// A failed file keeps the redo LSN back only while the log is less than
/// half full, so a passing fault followed by a restart is still redone
/// from the log; past that it is retired durably, then detached, and
/// waits for fixup. One that cannot be retired (the list cannot be
/// written) keeps holding the log back, which is safe.
fn detach_failed(s: &Shared, log: &TransLog) -> Vec<FileId> {
    let mut detached = s.detached.lock();
    let info = log.info();
    if info.bytes_in_use.saturating_mul(2) < info.capacity {
        return detached.clone();
    }
    let failed = s.pool.failed_files();
    for (file, name, reason) in failed {
        if detached.contains(&file) {
            continue;
        }
        let instance =
            DbPath::parse(&name)
                .ok()
                .and_then(|key| match s.dbs.lock().slots.get(&key) {
                    Some(Slot::Open { db, .. }) if db.pool_file() == file => Some(db.instance_id()),
                    _ => None,
                });
        let Some(instance) = instance else { continue };
        match s.retired.retire(&name, instance, &reason) {
            Ok(()) => {
                tracing::error!(db = %name, reason = %reason, "database failed: detached from the log until fixup (it refuses writes; reads go on)");
                detached.push(file);
            }
            Err(e) => {
                tracing::error!(db = %name, error = %e, "cannot retire a failed database; it keeps holding the log back");
            }
        }
    }
    detached.clone()
}

/// Databases restart recovery could not bring back are retired, so that
/// they stay refused until fixed, across restarts (I29).
fn retire_unrecovered(retired: &RetiredList, report: &RecoveryReport) -> NsfResult<()> {
    for f in &report.failed_databases {
        let instance = report
            .databases_touched
            .iter()
            .find(|t| t.path == f.path)
            .map_or(DbInstanceId(0), |t| DbInstanceId(t.db_iid));
        retired.retire(&f.path, instance, &Reason::recovery(&f.reason).text)?;
    }
    Ok(())
}

/// Automatic fixup (`translog.auto_fixup`): every database that needs it
/// is fixed up before anything opens it; the server log says that a new
/// backup is needed. A fixup that fails leaves the database refused.
fn auto_fixup(
    backend: &dyn Backend,
    cfg: &EngineConfig,
    retired: &RetiredList,
    store: &AttachStore,
) -> Vec<FixupReport> {
    let mut done = Vec::new();
    for (path, why) in retired.all_needing_fixup() {
        tracing::warn!(db = %path, reason = %why, "automatic fixup");
        match fixup_path(backend, (cfg, retired, store), &path, false) {
            Ok(report) => {
                tracing::warn!(db = %path, lost_notes = report.notes_lost.len(), lost_attachments = report.attachments_lost.len(), new_instance = ?report.new_instance, "database fixed up; take a new backup of it: old backups and log records no longer apply\n{report}");
                done.push(report);
            }
            Err(e) => {
                tracing::error!(db = %path, error = %e, "automatic fixup failed; the database refuses writes");
            }
        }
    }
    done
}

/// Fixes up one database file no instance has open: retires the old
/// instance before the new file replaces it, and clears the mark after
/// (I29).
fn fixup_path(
    backend: &dyn Backend,
    (cfg, retired, store): (&EngineConfig, &RetiredList, &AttachStore),
    path: &str,
    dry_run: bool,
) -> NsfResult<FixupReport> {
    let full = cfg.data_dir.join(path);
    let mut old_seen = None;
    let mut before_swap = |old: Option<DbInstanceId>| {
        old_seen = old;
        match old {
            Some(old) => retired.retire(path, old, "fixup was interrupted"),
            None => Ok(()),
        }
    };
    let report = crate::fixup::fixup_file(crate::fixup::FixupTarget {
        backend,
        full_path: &full,
        name: path,
        dry_run,
        now: cfg.clock.now(),
        before_swap: &mut before_swap,
        store,
    })?;
    if !dry_run {
        retired.fixed(path, old_seen)?;
        // What the fixup dropped may have held the last reference (I39).
        store.note_released();
    }
    Ok(report)
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

/// Builds the bytes of a new database: header plus three empty trees.
fn new_database_image(
    title: &str,
    replica_id: ReplicaId,
    created: Timestamp,
) -> NsfResult<Vec<u8>> {
    let mut store = ImageStore {
        pages: vec![PageBuf::zeroed()],
    };
    let note_root = btree::create(&mut store)?;
    let unid_root = btree::create(&mut store)?;
    let seq_root = btree::create(&mut store)?;
    let header = DbHeader {
        replica_id,
        instance_id: DbInstanceId(rand::random()),
        created,
        page_count: store.pages.len() as u32,
        free: FreeList {
            head: PageId::NONE,
            count: 0,
        },
        note_root,
        unid_root,
        seq_root,
        design_root: PageId::NONE,
        repl_root: PageId::NONE,
        store_root: PageId::NONE,
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
