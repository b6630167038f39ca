//! Restart recovery, in named phases run by `TransLog::open`:
//! scan → validate → redo → undo → truncate (the last one lives in
//! `open.rs` because it starts the running log). Each phase is a function
//! with plain inputs and outputs so it can be tested on its own.

mod redo;
mod report;
mod scan;
mod undo;
mod validate;

pub(crate) use redo::{
    apply_delta_record, apply_image, load_page, redo, seal, CachedPage, RedoInput, RedoOutcome,
};
pub use report::{FailedDatabase, PhaseTimes, RecoveryReport, Retired, TouchedDatabase};
pub(crate) use scan::{scan, scan_start, sync_scanned, ScanOutput};
pub(crate) use undo::{undo, UndoOutcome};
pub(crate) use validate::{validate, Plan};
