//! Databases and documents: Folio's equivalent of the NSF layer.
//!
//! An [`Engine`] owns a data directory: the shared buffer pool, the
//! server-wide transaction log and the open [`Database`]s. A database holds
//! notes (documents) with typed items, indexed by note id, UNID and change
//! sequence, plus attachment content streamed to and from its own pages.
//! This crate builds on `storage` (pages, pool, B+tree) and `translog`
//! (commit and recovery) and knows nothing of networks or views.

mod acl;
mod attach;
mod backup;
mod catalog;
mod changes;
mod clock;
mod compact;
mod db;
mod dbcore;
mod dbpath;
mod describe;
mod engine;
mod error;
mod fixup;
mod foreign;
mod header;
mod ids;
mod index;
mod json;
mod lineage;
mod note;
mod records;
mod retired;
mod state;
mod store;
mod txn;
mod version;
pub mod waits;
mod writeback;

pub use acl::{
    Access, AccessLevel, Acl, AclEntry, AclError, ReadRestriction, UnknownLevel, MAX_ACL_ENTRIES,
    MAX_ACL_JSON_BYTES, MAX_ACL_NAME_BYTES, MAX_ACL_ROLES, MAX_ROLE_BYTES,
};
pub use attach::{
    read_full, validate_name as validate_attachment_name, AttachmentReader, BLOB_DATA,
};
pub use backup::{BackedUpDb, BackupManifest, BackupReport, RestoreOptions, RestoreReport};
pub use catalog::{Audience, Listed};
pub use clock::{Clock, ManualClock, SystemClock};
pub use compact::CompactReport;
pub use db::{AttachmentUsage, StoreRefCheck};
pub use db::{CheckReport, CloseHook, Database, DbInfo, ForeignTxn, StagedNote};
pub use dbpath::{DbPath, MAX_DB_PATH};
pub use describe::{describe_db, describe_db_page, DbDump, DbPageDump, NotesSummary};
pub use engine::{
    BackupRun, CacheStats, CopyReport, Engine, EngineConfig, FixupState, LockStats, RunKind,
    BACKUP_HISTORY_FILE, BACKUP_HISTORY_RUNS, CACHE_CEILING, ENGINE_FILES_RESERVE,
    SIZED_OPEN_DATABASES,
};
pub use error::{NsfError, NsfResult};
pub use fixup::{BadPage, FixupReport, LostAttachment, LostNote};
pub use foreign::{ForeignAttachment, ForeignContent, ForeignNote, ForeignOutcome};
pub use header::{DbHeader, MAX_TITLE};
pub use ids::*;
pub use index::{BulkWriter, CleanMark, IndexRead, IndexTxn};
pub use json::*;
pub use lineage::{MAX_HISTORY_BYTES, MAX_HISTORY_KEY, MAX_REVISIONS};
pub use note::*;
pub use records::NoteMeta;
pub use state::{DbState, Reason, ReasonKind};
pub use store::refs::RefEntry;
pub use store::{
    AttachmentCompression, CarriedContent, CompressionLevel, ContentHash, ObjectReader, StoreStats,
    StoredContent, StoredForm, SweepReport, STORE_MIN,
};
pub use version::Version;
