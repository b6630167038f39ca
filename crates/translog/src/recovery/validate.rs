//! Phase 2, validate: turn the scanned records into a redo plan.
//!
//! Because every batch is appended contiguously (I3), the valid log is a
//! sequence of whole batches (Begin, page records, Commit) and checkpoint
//! records, with Skip records anywhere; at most the last batch may lack
//! its Commit, because the scan ends at the first damaged record. Anything
//! else — a page record outside its batch, two batches interleaved — cannot
//! be produced by the writer, so it is reported as corruption at its LSN
//! rather than guessed around. The checkpoint the control file names must
//! be among the scanned records and agree with it (I8).

use crate::control::ControlData;
use crate::recovery::scan::{Entry, EntryKind, ScanOutput};
use crate::LogError;
use storage::Lsn;

/// A committed batch, to be redone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CommittedTxn {
    pub(crate) txn: u64,
    pub(crate) db_iid: u64,
    pub(crate) db_path: String,
    pub(crate) begin: Lsn,
}

/// A batch whose Commit never became durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IncompleteTxn {
    pub(crate) txn: u64,
    pub(crate) begin: Lsn,
}

/// The redo plan: committed batches in LSN order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) committed: Vec<CommittedTxn>,
    pub(crate) incomplete: Option<IncompleteTxn>,
    /// The first transaction id not used by anything in the log.
    pub(crate) next_txn: u64,
}

/// Where the scan is relative to batches.
enum Cursor {
    Between,
    InBatch(CommittedTxn),
}

pub(crate) fn validate(scan: &ScanOutput, control: &ControlData) -> Result<Plan, LogError> {
    check_checkpoint(scan, control)?;
    let mut committed = Vec::new();
    let mut cursor = Cursor::Between;
    for e in &scan.entries {
        cursor = step(cursor, e, &mut committed)?;
    }
    let incomplete = match cursor {
        Cursor::InBatch(t) => Some(IncompleteTxn {
            txn: t.txn,
            begin: t.begin,
        }),
        Cursor::Between => None,
    };
    Ok(Plan {
        committed,
        incomplete,
        next_txn: next_txn(scan),
    })
}

/// Advances the batch state machine by one record.
fn step(cursor: Cursor, e: &Entry, committed: &mut Vec<CommittedTxn>) -> Result<Cursor, LogError> {
    match (cursor, &e.kind) {
        (c, EntryKind::Skip) => Ok(c),
        (Cursor::Between, EntryKind::Checkpoint { .. }) => Ok(Cursor::Between),
        (Cursor::Between, EntryKind::Begin { db_iid, path }) => Ok(Cursor::InBatch(CommittedTxn {
            txn: e.txn,
            db_iid: *db_iid,
            db_path: path.clone(),
            begin: e.lsn,
        })),
        (Cursor::InBatch(t), EntryKind::Page) if t.txn == e.txn => Ok(Cursor::InBatch(t)),
        (Cursor::InBatch(t), EntryKind::Commit) if t.txn == e.txn => {
            committed.push(t);
            Ok(Cursor::Between)
        }
        (Cursor::InBatch(t), _) => Err(LogError::corrupt(
            e.lsn,
            format!(
                "record of txn {} interrupts the batch of txn {} begun at {} (I3)",
                e.txn, t.txn, t.begin
            ),
        )),
        (Cursor::Between, _) => Err(LogError::corrupt(
            e.lsn,
            format!("record of txn {} outside any batch (I3)", e.txn),
        )),
    }
}

/// The checkpoint the control file points at must have been scanned and
/// carry the same redo LSN.
fn check_checkpoint(scan: &ScanOutput, control: &ControlData) -> Result<(), LogError> {
    let at = control.checkpoint_lsn;
    if at == Lsn::ZERO {
        return Ok(());
    }
    let found = scan
        .entries
        .binary_search_by_key(&at, |e| e.lsn)
        .ok()
        .map(|i| &scan.entries[i].kind);
    match found {
        Some(EntryKind::Checkpoint { redo_lsn, .. }) if *redo_lsn == control.redo_lsn => Ok(()),
        Some(EntryKind::Checkpoint { redo_lsn, .. }) => Err(LogError::corrupt(
            at,
            format!(
                "checkpoint records redo {redo_lsn} but the control file says {}",
                control.redo_lsn
            ),
        )),
        Some(_) => Err(LogError::corrupt(
            at,
            "the control file's checkpoint LSN is not a checkpoint record",
        )),
        None => Err(LogError::corrupt(
            at,
            format!(
                "checkpoint record named by the control file is missing; the valid log \
                 from {} ends at {} ({:?})",
                scan.start, scan.end, scan.stop
            ),
        )),
    }
}

fn next_txn(scan: &ScanOutput) -> u64 {
    scan.entries
        .iter()
        .map(|e| match e.kind {
            EntryKind::Checkpoint { next_txn, .. } => next_txn,
            _ => e.txn.saturating_add(1),
        })
        .max()
        .unwrap_or(0)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StopReason;

    fn entry(lsn: u64, txn: u64, kind: EntryKind) -> Entry {
        Entry {
            lsn: Lsn(lsn),
            txn,
            kind,
        }
    }

    fn begin(lsn: u64, txn: u64) -> Entry {
        entry(
            lsn,
            txn,
            EntryKind::Begin {
                db_iid: 1,
                path: "a.fdb".into(),
            },
        )
    }

    fn scan_of(entries: Vec<Entry>) -> ScanOutput {
        ScanOutput {
            start: Lsn(10),
            entries,
            end: Lsn(1000),
            stop: StopReason::Zeroed,
            bytes: 0,
        }
    }

    fn control(checkpoint: u64, redo: u64) -> ControlData {
        ControlData {
            generation: 1,
            log_id: 1,
            epoch: 1,
            extent_size: 65536,
            checkpoint_lsn: Lsn(checkpoint),
            redo_lsn: Lsn(redo),
            archived_lsn: Lsn(0),
        }
    }

    #[test]
    fn committed_batches_form_the_plan_and_the_open_tail_is_incomplete() {
        let scan = scan_of(vec![
            entry(
                10,
                0,
                EntryKind::Checkpoint {
                    redo_lsn: Lsn(10),
                    next_txn: 5,
                },
            ),
            begin(20, 5),
            entry(30, 5, EntryKind::Page),
            entry(40, 0, EntryKind::Skip),
            entry(50, 5, EntryKind::Commit),
            begin(60, 6),
            entry(70, 6, EntryKind::Page),
        ]);
        let plan = validate(&scan, &control(10, 10)).unwrap();
        assert_eq!(
            plan.committed
                .iter()
                .map(|t| (t.txn, t.begin))
                .collect::<Vec<_>>(),
            vec![(5, Lsn(20))]
        );
        assert_eq!(
            plan.incomplete,
            Some(IncompleteTxn {
                txn: 6,
                begin: Lsn(60)
            })
        );
        assert_eq!(plan.next_txn, 7);
    }

    #[test]
    fn interleaved_or_orphan_records_are_corruption_at_their_lsn() {
        let interleaved = scan_of(vec![begin(20, 5), begin(30, 6)]);
        let e = validate(&interleaved, &control(0, 0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lsn 30") && e.contains("interrupts"), "{e}");
        let orphan = scan_of(vec![entry(20, 5, EntryKind::Commit)]);
        let e = validate(&orphan, &control(0, 0)).unwrap_err().to_string();
        assert!(e.contains("lsn 20") && e.contains("outside"), "{e}");
    }

    #[test]
    fn the_control_files_checkpoint_must_be_present_and_agree() {
        let scan = scan_of(vec![entry(
            10,
            0,
            EntryKind::Checkpoint {
                redo_lsn: Lsn(10),
                next_txn: 1,
            },
        )]);
        validate(&scan, &control(10, 10)).unwrap();
        let e = validate(&scan, &control(10, 5)).unwrap_err().to_string();
        assert!(
            e.contains("lsn 10") && e.contains("control file says"),
            "{e}"
        );
        let e = validate(&scan_of(vec![]), &control(10, 10))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lsn 10") && e.contains("missing"), "{e}");
    }
}
