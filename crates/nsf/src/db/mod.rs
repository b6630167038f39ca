//! One database file: its documents, indexes and commit protocol.
//!
//! A database is three B+trees reached from the header (page 0); how a
//! note is a record of them is `records.rs`, below this module:
//!
//! ```text
//!   note table   note id (u32 BE)  -> note record (inline, or in an overflow chain)
//!   UNID index   UNID (16 bytes)   -> note id
//!   seq index    change seq (u64 BE) -> note id   ("modified since" is a range scan)
//!   replication  revisions per UNID, replication histories (`lineage.rs`)
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
//! The rooms of this module, one concern each:
//!
//! | file | what it owns |
//! |---|---|
//! | `read.rs` | reads: documents, scans, modified-since, the ACL, attachments |
//! | `write.rs` | the public write operations (blocking and `_then` forms) |
//! | `detach.rs` | removing an attachment: an update that drops its item |
//! | `apply.rs` | what each kind of write does inside the transaction |
//! | `queue.rs` | the write queue and write combining (who runs, who waits) |
//! | `commit.rs` | one group's transaction: logged and unlogged commit |
//! | `hooks.rs` | the doors the views layer writes and reads index pages through |
//! | `foreign.rs` | storing versions made elsewhere, singly or in batches (replication, the router; I25, I27) |
//! | `batch.rs` | one foreign batch's transaction: puts, conflict documents, content bookkeeping |
//! | `watch.rs` | waiting for the change sequence to pass a value (I23) |
//! | `check.rs` | the consistency check |
//! | `compact.rs` | in-place compact: move steps, seal, checkpoint, cut (I40, I41) |
//! | `lifecycle.rs` | the instance's life in the open-database cache (I19, I20) |
//!
//! The access-control list is a note like any other (see `acl.rs`); the
//! database caches it parsed and drops the cache when a transaction that
//! wrote it is installed (I15). Writers that find the writer lock taken are
//! counted, with the time until their write starts, in the engine-wide
//! `LockCounters`; the uncontended path reads no clock.

mod apply;
mod backup;
mod batch;
mod check;
mod commit;
mod compact;
mod detach;
mod foreign;
mod hooks;
mod lifecycle;
mod purge;
mod queue;
mod read;
mod store;
mod watch;
mod write;

pub(crate) use backup::BackupSource;
pub use batch::ForeignTxn;
pub use check::CheckReport;
pub use foreign::StagedNote;
pub use lifecycle::CloseHook;
pub(crate) use lifecycle::Life;
pub(crate) use queue::LockCounters;
pub use read::DbInfo;
pub use store::{AttachmentUsage, StoreRefCheck};

use crate::dbcore::{DbCore, EngineLinks};
use crate::header::{DbHeader, FLAG_UNLOGGED_OPEN};
use crate::state::{DbState, Reason};
use parking_lot::{Mutex, RwLock};
use queue::Queued;
use read::AclCache;
use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use storage::pool::BufferPool;
use storage::FileHandle;

/// An open database.
pub struct Database {
    core: DbCore,
    writer: Mutex<()>,
    /// Writes waiting for the writer lock's holder to run them.
    queue: Mutex<VecDeque<Queued>>,
    /// Numbers queued writes, so a holder can tell its own.
    tickets: AtomicU64,
    /// Runs of the queue that found the writer lock taken.
    contended: AtomicU64,
    state: RwLock<DbHeader>,
    /// The parsed ACL (I15: emptied when a write of the ACL note installs).
    acl: Mutex<AclCache>,
    /// Engine-wide writer-lock statistics.
    locks: Arc<LockCounters>,
    /// Its life in the open-database cache and the catalog (I19, I20).
    life: Life,
}

impl Database {
    pub(crate) fn new(
        path: String,
        pool: Arc<BufferPool>,
        handle: Arc<dyn FileHandle>,
        header: DbHeader,
        refused: Option<Reason>,
        links: EngineLinks,
        (locks, life): (Arc<LockCounters>, Life),
    ) -> Database {
        // I12: found written unlogged and not closed cleanly.
        let unclean_open = header.flags & FLAG_UNLOGGED_OPEN != 0;
        Database {
            core: DbCore::new(
                path,
                pool,
                handle,
                (header.page_count, header.last_seq),
                DbState::opened(unclean_open, refused),
                links,
            ),
            writer: Mutex::new(()),
            queue: Mutex::new(VecDeque::new()),
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
}
