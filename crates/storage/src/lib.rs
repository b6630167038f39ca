//! Folio's storage layer: the bottom of the stack.
//!
//! Everything that touches a disk goes through [`Backend`], so tests can swap
//! in memory, injected faults or simulated crashes. On top of that sit the
//! fixed-size checksummed [`page`] format, the shared [`pool::BufferPool`],
//! and the page structures that every database file is built from: the
//! [`btree`], the [`freelist`] and [`overflow`] chains. This crate knows
//! nothing about logs, documents or servers; the layers above compose it.

pub mod backend;
pub mod btree;
pub mod bulk;
pub mod describe;
mod error;
pub mod extsort;
pub mod freelist;
mod ids;
pub mod overflow;
pub mod page;
pub mod pool;
pub mod priority;
pub mod relocate;
mod store;
#[cfg(test)]
mod testutil;
pub mod waits;

pub use backend::{Backend, FileHandle, FileIdentity, OpenMode};
pub use error::{StorageError, StorageResult};
pub use ids::{Lsn, PageId};
pub use page::{PageBuf, PageKind, PAGE_SIZE};
pub use store::{PageStore, PageStoreMut, PageWrite};
