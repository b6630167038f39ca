//! Opening the log: find or create it, run the recovery phases, and start
//! appending in a new epoch.
//!
//! ```text
//!  control ─> scan ─> validate ─> redo ─> undo ─> truncate
//!            (I10)     (I3, I8)    (I5)           epoch+1 durable (I10),
//!                                                 writer started,
//!                                                 checkpoint at the end (I8)
//! ```
//! The last step (truncate) makes the append position the end of the last
//! valid record (or the Begin of a discarded batch), bumps the epoch and
//! makes it durable before anything is appended, then writes a checkpoint
//! whose redo LSN is that position: every redone page is already synced,
//! so the next restart has nothing to replay.

use crate::control::{ControlData, ControlFile};
use crate::extent::list_extents;
use crate::geometry::Geometry;
use crate::reader::LogIdentity;
use crate::recovery::{
    redo, scan, scan_start, sync_scanned, undo, validate, PhaseTimes, Plan, RecoveryReport,
    RedoInput, RedoOutcome, Retired, ScanOutput, TouchedDatabase, UndoOutcome,
};
use crate::shared::StartPoint;
use crate::space::Reserve;
use crate::{LogConfig, LogError, TransLog};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use storage::{Backend, Lsn};

pub(crate) fn open(
    backend: Arc<dyn Backend>,
    data_dir: &Path,
    cfg: LogConfig,
    retired: &Retired,
) -> Result<(Arc<TransLog>, RecoveryReport), LogError> {
    cfg.validate()?;
    let (control, new_log) = load_or_create(backend.as_ref(), &cfg)?;
    check_extent_size(control.data(), &cfg)?;
    let mut rec = recover(backend.as_ref(), data_dir, &cfg, control.data(), retired)?;
    let mut clock = Instant::now();
    let (log, epoch) = truncate(backend, cfg, control, &rec)?;
    rec.times.truncate = lap(&mut clock);
    let report = report(new_log, epoch, rec);
    tracing::info!(?report, "transaction log recovered");
    Ok((log, report))
}

/// The outcome of phases 1 to 4.
struct Recovered {
    retired_skipped: u64,
    start: Lsn,
    scanned: ScanOutput,
    plan: Plan,
    redone: RedoOutcome,
    undone: UndoOutcome,
    times: PhaseTimes,
}

/// Phases 1 to 4: scan, validate, redo, undo.
fn recover(
    backend: &dyn Backend,
    data_dir: &Path,
    cfg: &LogConfig,
    control: &ControlData,
    retired: &Retired,
) -> Result<Recovered, LogError> {
    let geo = Geometry::new(cfg.extent_size);
    let mut times = PhaseTimes::default();
    let mut clock = Instant::now();
    let id = LogIdentity::of(geo, control);
    let start = scan_start(geo, control);
    let scanned = scan(backend, &cfg.dir, id, start)?;
    sync_scanned(backend, &cfg.dir, geo, start, scanned.end)?;
    times.scan = lap(&mut clock);
    let mut plan = validate(&scanned, control)?;
    // I29: a retired instance's batches are never applied.
    let before = plan.committed.len();
    plan.committed
        .retain(|t| !retired.contains(&(t.db_path.clone(), t.db_iid)));
    let retired_skipped = (before - plan.committed.len()) as u64;
    times.validate = lap(&mut clock);
    let input = RedoInput {
        backend,
        log_dir: &cfg.dir,
        data_dir,
        id,
        start,
        end: scanned.end,
    };
    let redone = redo(&input, &plan)?;
    times.redo = lap(&mut clock);
    let undone = undo(&plan, scanned.end);
    times.undo = lap(&mut clock);
    Ok(Recovered {
        retired_skipped,
        start,
        scanned,
        plan,
        redone,
        undone,
        times,
    })
}

/// Phase 5: a new epoch, durable before anything is appended (I10); the
/// writer starts at the append position; a checkpoint there makes the next
/// restart replay nothing (every redone page is synced).
fn truncate(
    backend: Arc<dyn Backend>,
    cfg: LogConfig,
    mut control: ControlFile,
    rec: &Recovered,
) -> Result<(Arc<TransLog>, u32), LogError> {
    let epoch = bump_epoch(&mut control)?;
    let end = rec.undone.append_from;
    let point = StartPoint {
        end,
        redo_lsn: rec.start,
        checkpoint_lsn: control.data().checkpoint_lsn,
        next_txn: rec.plan.next_txn,
        epoch,
        archived_lsn: control.data().archived_lsn,
    };
    let log = TransLog::start(backend, cfg, control, point)?;
    log.checkpoint_with(end, Reserve::Restart)
        .map_err(|e| restart_checkpoint_error(e, end))?;
    Ok((log, epoch))
}

fn report(new_log: bool, epoch: u32, rec: Recovered) -> RecoveryReport {
    RecoveryReport {
        new_log,
        times: rec.times,
        scan_start: rec.start,
        end_lsn: rec.undone.append_from,
        epoch,
        records_scanned: rec.scanned.entries.len() as u64,
        bytes_scanned: rec.scanned.bytes,
        scan_stop: rec.scanned.stop,
        torn_tail: rec.scanned.stop.is_torn().then_some(rec.scanned.end),
        committed_txns_redone: rec.plan.committed.len() as u64,
        retired_txns_skipped: rec.retired_skipped,
        incomplete_txns_discarded: rec.undone.discarded,
        pages_redone: rec.redone.pages_redone,
        pages_written: rec.redone.pages_written,
        databases_touched: touched(&rec.plan),
        failed_databases: rec.redone.failed,
    }
}

fn lap(clock: &mut Instant) -> std::time::Duration {
    let now = Instant::now();
    let d = now - *clock;
    *clock = now;
    d
}

/// The existing control file, or a new log's (refusing to create one over
/// extents left without their control file).
fn load_or_create(backend: &dyn Backend, cfg: &LogConfig) -> Result<(ControlFile, bool), LogError> {
    if backend.exists(&ControlFile::path(&cfg.dir)) {
        return Ok((ControlFile::load(backend, &cfg.dir)?, false));
    }
    backend
        .create_dir_all(&cfg.dir)
        .map_err(|e| LogError::io(&cfg.dir, e))?;
    let orphans = list_extents(backend, &cfg.dir)?;
    if !orphans.is_empty() {
        return Err(LogError::BadControl {
            path: ControlFile::path(&cfg.dir),
            reason: format!(
                "missing, but {} extent file(s) exist; refusing to start a new log over them",
                orphans.len()
            ),
        });
    }
    let data = ControlData {
        generation: 1,
        log_id: rand::random(),
        epoch: 0,
        extent_size: cfg.extent_size,
        checkpoint_lsn: Lsn::ZERO,
        redo_lsn: Lsn::ZERO,
        archived_lsn: Lsn::ZERO,
    };
    Ok((ControlFile::create(backend, &cfg.dir, data)?, true))
}

fn check_extent_size(control: &ControlData, cfg: &LogConfig) -> Result<(), LogError> {
    if control.extent_size != cfg.extent_size {
        return Err(LogError::Config(format!(
            "extent_size {} differs from the existing log's {}",
            cfg.extent_size, control.extent_size
        )));
    }
    Ok(())
}

/// I10: each open starts a new epoch, durable before anything is appended.
fn bump_epoch(control: &mut ControlFile) -> Result<u32, LogError> {
    let epoch = control
        .data()
        .epoch
        .checked_add(1)
        .ok_or_else(|| LogError::BadControl {
            path: "control".into(),
            reason: "epoch counter exhausted".into(),
        })?;
    control.update(|c| c.epoch = epoch)?;
    Ok(epoch)
}

/// The restart checkpoint can only lack room if `max_size` was lowered
/// below what the log already holds; say so instead of "full".
fn restart_checkpoint_error(e: LogError, end: Lsn) -> LogError {
    match e {
        LogError::Full { used, .. } => LogError::Config(format!(
            "the log holds {used} bytes up to {end}, more than max_size allows; \
             raise max_size for this restart"
        )),
        other => other,
    }
}

fn touched(plan: &Plan) -> Vec<TouchedDatabase> {
    let latest: BTreeMap<&str, u64> = plan
        .committed
        .iter()
        .map(|t| (t.db_path.as_str(), t.db_iid))
        .collect();
    latest
        .into_iter()
        .map(|(path, db_iid)| TouchedDatabase {
            path: path.to_string(),
            db_iid,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Geometry;
    use crate::record::{encode, Body};
    use crate::{Batch, PageChange, StopReason};
    use storage::backend::{read_exact_at, write_all_at, MemBackend};
    use storage::{OpenMode, PageBuf, PageId, PageKind};

    const EXT: u64 = 65536;

    fn cfg() -> LogConfig {
        LogConfig {
            extent_size: EXT,
            max_size: 8 * EXT,
            ..LogConfig::new("/log")
        }
    }

    fn page(fill: u8) -> PageBuf {
        let mut p = PageBuf::new(PageKind::BTreeLeaf);
        p.body_mut().fill(fill);
        p
    }

    fn setup() -> MemBackend {
        let m = MemBackend::new();
        m.create_dir_all(Path::new("/data")).unwrap();
        let f = m
            .open(Path::new("/data/a.fdb"), OpenMode::CreateNew)
            .unwrap();
        for id in 0..3 {
            let mut p = page(0);
            p.seal(PageId(id), Lsn(0));
            write_all_at(f.as_ref(), p.bytes(), PageId(id).offset()).unwrap();
        }
        m
    }

    fn open_mem(m: &MemBackend) -> (Arc<TransLog>, RecoveryReport) {
        TransLog::open(Arc::new(m.clone()), Path::new("/data"), cfg()).unwrap()
    }

    fn body_fill(m: &MemBackend, id: u32) -> u8 {
        let f = m
            .open(Path::new("/data/a.fdb"), OpenMode::Existing)
            .unwrap();
        let mut p = PageBuf::zeroed();
        read_exact_at(f.as_ref(), p.bytes_mut(), PageId(id).offset()).unwrap();
        p.body()[0]
    }

    /// Writes a whole committed batch (Begin, image of page 1, Commit) at
    /// `at` with a correct LSN and checksum and the given epoch.
    fn plant_batch(m: &MemBackend, at: Lsn, epoch: u32) {
        let geo = Geometry::new(EXT);
        let img = page(0xee);
        let mut bytes = Vec::new();
        let mut lsn = at;
        for body in [
            Body::Begin {
                db_iid: 1,
                path: "a.fdb",
            },
            Body::PageImage {
                page: PageId(1),
                image: img.bytes(),
            },
            Body::Commit { time_micros: 0 },
        ] {
            encode(&mut bytes, lsn, epoch, 999, &body);
            lsn = Lsn(at.0 + bytes.len() as u64);
        }
        let path = crate::geometry::extent_path(Path::new("/log"), geo.seq_of(at));
        let mut file = m.file_bytes(&path).unwrap();
        let off = geo.file_offset(at) as usize;
        file[off..off + bytes.len()].copy_from_slice(&bytes);
        m.set_file_bytes(&path, file);
    }

    /// I10: after a restart, a valid-looking batch of the previous epoch
    /// lying right after the new end must not be replayed; the same batch
    /// stamped with the current epoch would be.
    #[test]
    fn records_of_an_earlier_epoch_after_the_end_are_ignored() {
        let m = setup();
        let (log, _) = open_mem(&m);
        let a = log
            .append(&Batch {
                db_iid: 1,
                db_path: "a.fdb".into(),
                pages: vec![(PageId(1), PageChange::Image(page(0x11)))],
                time_micros: 0,
            })
            .unwrap();
        log.wait_durable(a.end_lsn).unwrap();
        drop(log);
        let (log, report) = open_mem(&m);
        assert_eq!(report.epoch, 2);
        let end = log.end_lsn();
        drop(log);

        let stale = m.snapshot();
        plant_batch(&stale, end, 1);
        let (_log, report) = open_mem(&stale);
        assert_eq!(report.scan_stop, StopReason::OldEpoch);
        assert_eq!(report.committed_txns_redone, 0);
        assert_eq!(report.end_lsn, end);
        assert_eq!(body_fill(&stale, 1), 0x11);

        let current = m.snapshot();
        plant_batch(&current, end, 2);
        let (_log, report) = open_mem(&current);
        assert_eq!(
            report.committed_txns_redone, 1,
            "the planted batch is otherwise valid"
        );
        assert_eq!(body_fill(&current, 1), 0xee);
    }

    #[test]
    fn a_record_newer_than_the_control_file_is_corruption() {
        let m = setup();
        let (log, _) = open_mem(&m);
        let end = log.end_lsn();
        drop(log);
        plant_batch(&m, end, 9);
        let e = TransLog::open(Arc::new(m.clone()), Path::new("/data"), cfg())
            .err()
            .unwrap();
        assert!(
            matches!(&e, LogError::Corrupt { lsn, reason } if *lsn == end && reason.contains("newer")),
            "{e}"
        );
    }
}
