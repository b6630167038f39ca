//! Newtypes for the identifiers the storage layer hands out.
//!
//! A `PageId` is the index of a fixed-size page in one file; an `Lsn` is a
//! byte position in the server-wide transaction log. The log lives one layer
//! up, but every page header records the LSN of the change that produced it,
//! so the type is defined here, at the bottom, and re-used above.

use std::fmt;

/// Index of a page within one database file (page 0 is the file header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PageId(pub u32);

impl PageId {
    /// The "no page" marker used in on-disk pointers (page 0 is never a
    /// tree, overflow or free-list page, so it can double as null).
    pub const NONE: PageId = PageId(0);

    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    /// Byte offset of this page in its file.
    pub fn offset(self) -> u64 {
        u64::from(self.0) * crate::PAGE_SIZE as u64
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "page {}", self.0)
    }
}

/// Log sequence number: the byte offset of a record in the log stream.
/// Strictly increasing for the life of a log; 0 means "before any record".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    pub const ZERO: Lsn = Lsn(0);
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lsn {}", self.0)
    }
}
