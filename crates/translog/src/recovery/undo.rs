//! Phase 4, undo. The engine never writes uncommitted changes to database
//! files (pages reach disk only after their batch's Commit is durable), so
//! there is nothing to roll back on disk. What remains is the log itself:
//! an incomplete batch can only be the last thing in the valid log (I3),
//! and appending resumes at its Begin record, so the batch is overwritten
//! and its leftover records are cut off by the epoch rule (I10).

use crate::recovery::Plan;
use storage::Lsn;

/// What undo discarded and where appending resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UndoOutcome {
    pub(crate) discarded: u64,
    pub(crate) append_from: Lsn,
}

pub(crate) fn undo(plan: &Plan, scan_end: Lsn) -> UndoOutcome {
    match &plan.incomplete {
        Some(t) => UndoOutcome {
            discarded: 1,
            append_from: t.begin,
        },
        None => UndoOutcome {
            discarded: 0,
            append_from: scan_end,
        },
    }
}
