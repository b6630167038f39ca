//! Fixup: check a database file page by page, keep everything that can
//! be read, rebuild the indexes from the note table, and swap the result
//! in as a new instance (design.md §2.8, I29).
//!
//! The phases, one file each, like restart recovery's:
//!
//! ```text
//!   scan      every page: checksum, kind                      scan.rs
//!   salvage   header, note table walk (tolerant), lost key     salvage.rs
//!             ranges, orphan leaves, UNID / seq / free list
//!   verify    attachment content: page checks and crc32c       attachments.rs
//!   rebuild   copy of the file beside it, new trees, new       rebuild.rs
//!             free list, new header with a new instance id
//!   swap      fdatasync, rename over the old file, fsync dir   rebuild.rs
//!   report    what was checked, rebuilt and lost               report.rs
//! ```
//!
//! Pages are read straight from the file through `FileStore`, never
//! through the buffer pool: fixup runs on a file no instance has open.

mod attachments;
mod filestore;
mod rebuild;
mod report;
mod run;
mod salvage;
mod scan;

pub use report::{BadPage, FixupReport, LostAttachment, LostNote};
pub(crate) use run::{fixup_file, FixupTarget};
