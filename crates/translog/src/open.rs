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

use crate::control::ControlData;
use crate::control::ControlFile;
use crate::extent::list_extents;
use crate::geometry::Geometry;
use crate::reader::LogIdentity;
use crate::recovery::{
    redo, scan, scan_start, sync_scanned, undo, validate, PhaseTimes, Plan, RecoveryReport,
    RedoInput, TouchedDatabase,
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
) -> Result<(Arc<TransLog>, RecoveryReport), LogError> {
    cfg.validate()?;
    let geo = Geometry::new(cfg.extent_size);
    let (mut control, new_log) = load_or_create(backend.as_ref(), &cfg)?;
    check_extent_size(control.data(), &cfg)?;
    let mut times = PhaseTimes::default();
    let mut clock = Instant::now();

    let id = LogIdentity::of(geo, control.data());
    let start = scan_start(geo, control.data());
    let scanned = scan(backend.as_ref(), &cfg.dir, id, start)?;
    sync_scanned(backend.as_ref(), &cfg.dir, geo, start, scanned.end)?;
    times.scan = lap(&mut clock);

    let plan = validate(&scanned, control.data())?;
    times.validate = lap(&mut clock);

    let input = RedoInput {
        backend: backend.as_ref(),
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

    let epoch = bump_epoch(&mut control)?;
    let point = StartPoint {
        end: undone.append_from,
        redo_lsn: start,
        checkpoint_lsn: control.data().checkpoint_lsn,
        next_txn: plan.next_txn,
        epoch,
    };
    let log = TransLog::start(backend, cfg, control, point)?;
    log.checkpoint_with(undone.append_from, Reserve::Restart)
        .map_err(|e| restart_checkpoint_error(e, undone.append_from))?;
    times.truncate = lap(&mut clock);

    let report = RecoveryReport {
        new_log,
        times,
        scan_start: start,
        end_lsn: undone.append_from,
        epoch,
        records_scanned: scanned.entries.len() as u64,
        bytes_scanned: scanned.bytes,
        scan_stop: scanned.stop,
        torn_tail: scanned.stop.is_torn().then_some(scanned.end),
        committed_txns_redone: plan.committed.len() as u64,
        incomplete_txns_discarded: undone.discarded,
        pages_redone: redone.pages_redone,
        pages_written: redone.pages_written,
        databases_touched: touched(&plan),
        failed_databases: redone.failed,
    };
    tracing::info!(?report, "transaction log recovered");
    Ok((log, report))
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
