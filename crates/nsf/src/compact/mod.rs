//! Compact: give free pages back to the file system (design.md §2.10,
//! I40, I41).
//!
//! In place (`Database::compact`), the instance and its id stay: small
//! logged steps move the pages at the end of the file into free pages
//! lower down, a seal rebuilds the free list without the tail (and with
//! the pages that interrupted commits leaked), a checkpoint passes every
//! log record that touched the tail, and the file is cut. By copy
//! (`Engine::compact` with `copy`), fixup's rebuild writes a new file and
//! swaps it in under a new instance id (§2.8, I29), then the new file is
//! compacted in place.
//!
//! ```text
//!   refs.rs     every page the committed state references (and who)
//!   catalog.rs  the view-index roots in design catalog entries (§2.6)
//!   below.rs    a transaction that allocates only below the limit
//!   step.rs     one move step; the seal
//!   report.rs   what a compact did
//! ```

mod below;
mod catalog;
mod refs;
mod report;
mod step;

pub(crate) use below::NO_ROOM;
pub(crate) use refs::referenced;
pub use report::CompactReport;
pub(crate) use step::{move_step, seal};
