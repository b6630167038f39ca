//! Restore: put a backed-up database back and roll it forward (I36).
//!
//! ```text
//!  BACKUP/files/<path> ──copy, check crc32c──▶ <target>.fdb-restore
//!  roll forward from start: the backed-up instance's commits only,
//!      to the end of the log or the last commit at or before --until
//!  reseal every page with LSN 0, new instance id in the header, fdatasync
//!  in place: retire the old instance(s) (marked "restore interrupted")
//!  rename over the target, sync the directory, clear the mark (I9, I29)
//! ```
//!
//! The restored file always gets a new instance id: records the old
//! instance wrote after the restore point (in place, or at its own path
//! for `--to`) must never touch it, and a later restart's redo skips the
//! retired pair. Pages are resealed with LSN 0 as fixup does, so the file
//! is new to whatever log it meets next. A refused or failed restore
//! removes its `.fdb-restore` file and leaves the target as it was. A
//! crash at any step leaves the old file (or none) and a stale
//! `.fdb-restore`, or the old file marked "restore was interrupted", or
//! the restored file: running the restore again finishes it (it
//! overwrites the stale file).
//!
//! `--until T` is refused when T lies before the backup's start time
//! ([`check_until`]), and when a commit of the database later than T lies
//! before the backup's end LSN (the copy may hold it, [`check_reached`]).
//! A T inside the backup run is accepted otherwise: the copy then holds
//! no commit later than T, and the roll-forward stops before the first.

use super::manifest::{BackedUpDb, BackupManifest, FILES_DIR};
use crate::header::DbHeader;
use crate::retired::RetiredList;
use crate::{DbInstanceId, NsfError, NsfResult, Timestamp};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::{read_exact_at, write_all_at};
use storage::{Backend, FileHandle, Lsn, OpenMode, PageBuf, PageId, PAGE_SIZE};
use translog::{roll_forward, ArchivedLog, RollForward, RollStop};

/// What to restore.
#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    /// The database of the backup to restore (default: every one).
    pub db: Option<String>,
    /// Roll forward only to the last commit at or before this time
    /// (default: the end of the log).
    pub until: Option<Timestamp>,
    /// Restore under this path instead of the original (one database).
    pub to: Option<String>,
    /// Where archived extents are (default: `translog.archive_dir`).
    pub archive_dir: Option<PathBuf>,
}

/// What a restore of one database did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreReport {
    /// Where the database now is.
    pub path: String,
    /// The backed-up instance whose log records were applied.
    pub from_instance: DbInstanceId,
    /// The restored file's new instance id.
    pub new_instance: DbInstanceId,
    pub start_lsn: Lsn,
    /// The log position the database now reflects.
    pub reached_lsn: Lsn,
    /// The last commit applied (time, µs since the Unix epoch).
    pub last_commit: Option<Timestamp>,
    pub txns_applied: u64,
    pub pages_rolled_forward: u64,
    /// Why rolling forward stopped, in words.
    pub stopped: String,
    /// Attachment store objects the restored database references that
    /// neither the live store, the backup nor the archive holds (their
    /// attachments fail to read; fixup drops them). Empty normally.
    pub objects_missing: Vec<String>,
}

/// What a restore needs from the engine.
pub(crate) struct RestoreCtx<'a> {
    pub backend: &'a Arc<dyn Backend>,
    pub data_dir: &'a Path,
    pub log_dir: &'a Path,
    pub archive_dir: &'a Path,
    pub retired: &'a RetiredList,
    pub backup: &'a Path,
    pub manifest: &'a BackupManifest,
    pub until: Option<Timestamp>,
}

/// Refuses a `--until` before the backup started, before anything is
/// copied: the copy may hold any commit up to the backup's end, and
/// commits from before its start are not in the log range it rolls
/// forward over, so a time before the start cannot be told apart from
/// the state the copy holds. From the start on, a commit stamped later
/// than the time lies at or past the start LSN (the start checkpoint was
/// taken before the start time was noted, and a commit is stamped before
/// it is appended), so the roll-forward sees it: [`check_reached`]
/// refuses the restore if it lies before the end, and stops there if not.
pub(crate) fn check_until(ctx: &RestoreCtx<'_>, path: &str) -> NsfResult<()> {
    let Some(until) = ctx.until else {
        return Ok(());
    };
    let started = Timestamp(ctx.manifest.started_micros);
    if until >= started {
        return Ok(());
    }
    Err(NsfError::RestoreUnreachable {
        path: path.to_string(),
        wanted: wanted(ctx.until),
        reason: format!(
            "the backup started at {} (and finished at {}); it may already hold changes made \
             after --until, so it cannot restore to a time before its start: choose a time at \
             or after {}, or an older backup",
            started.to_rfc3339(),
            Timestamp(ctx.manifest.finished_micros).to_rfc3339(),
            started.to_rfc3339()
        ),
    })
}

/// Restores `entry` to `target` (a checked path, claimed by the caller).
/// A refusal or failure leaves no `<target>-restore` file behind (a
/// crash may; the next run overwrites it).
pub(crate) fn restore_one(
    ctx: &RestoreCtx<'_>,
    entry: &BackedUpDb,
    target: &str,
) -> NsfResult<RestoreReport> {
    let full = ctx.data_dir.join(target);
    let temp = PathBuf::from(format!("{}-restore", full.display()));
    let restored = restore_via(ctx, entry, target, &full, &temp);
    let be = ctx.backend.as_ref();
    if restored.is_err() && be.exists(&temp) {
        if let Err(e) = be.remove_file(&temp) {
            tracing::warn!(file = %temp.display(), error = %e, "could not remove the unfinished restore's file");
        }
    }
    restored
}

/// [`restore_one`]'s steps, through `temp`.
fn restore_via(
    ctx: &RestoreCtx<'_>,
    entry: &BackedUpDb,
    target: &str,
    full: &Path,
    temp: &Path,
) -> NsfResult<RestoreReport> {
    let be = ctx.backend.as_ref();
    let io = |p: &Path| {
        let p = p.display().to_string();
        move |e| NsfError::Io { path: p, source: e }
    };
    let instance = entry
        .instance()
        .ok_or_else(|| bad(ctx, "instance id is not hexadecimal"))?;
    let alog = ArchivedLog::open(ctx.backend.clone(), ctx.archive_dir, Some(ctx.log_dir))?;
    if alog.log_id() != ctx.manifest.log_id() {
        return Err(NsfError::RestoreUnreachable {
            path: target.to_string(),
            wanted: wanted(ctx.until),
            reason: format!(
                "the backup was taken with log {}, but this data directory's log is {:016X}",
                ctx.manifest.log_id,
                alog.log_id()
            ),
        });
    }
    if let Some(dir) = temp.parent() {
        be.create_dir_all(dir).map_err(io(dir))?;
    }
    let file = copy_in(ctx, entry, temp)?;
    let header = read_header(file.as_ref(), target)?;
    if header.instance_id != instance {
        return Err(NsfError::InstanceMismatch {
            path: target.to_string(),
            reason: format!(
                "the backup's copy of {} is instance {}, its manifest says {}",
                entry.path, header.instance_id, instance
            ),
        });
    }
    let start = Lsn(ctx.manifest.start_lsn);
    let end = Lsn(ctx.manifest.end_lsn);
    let req = RollForward {
        db_path: &entry.path,
        db_iid: instance.0,
        from: start,
        until_micros: ctx.until.map(|t| t.0),
    };
    let rolled = roll_forward(&alog, file.as_ref(), target, &req).map_err(|e| match e {
        translog::LogError::Invalid(reason) => bad(ctx, &reason),
        other => other.into(),
    })?;
    check_reached(ctx, target, end, &rolled.stop)?;
    let new_instance = new_instance_id(instance, header.instance_id);
    // The header as rolled forward, not as backed up.
    let header = read_header(file.as_ref(), target)?;
    reseal(file.as_ref(), target, header, new_instance).map_err(io(temp))?;
    let stopped = describe_stop(&rolled.stop);
    drop(file);
    swap_in(ctx, target, full, temp, instance)?;
    Ok(RestoreReport {
        path: target.to_string(),
        from_instance: instance,
        new_instance,
        start_lsn: start,
        reached_lsn: rolled.reached,
        last_commit: rolled.last_commit.map(|(_, t)| Timestamp(t)),
        txns_applied: rolled.txns_applied,
        pages_rolled_forward: rolled.pages_written,
        stopped,
        objects_missing: Vec::new(),
    })
}

fn bad(ctx: &RestoreCtx<'_>, reason: &str) -> NsfError {
    NsfError::BadBackup {
        dir: ctx.backup.display().to_string(),
        reason: reason.to_string(),
    }
}

fn wanted(until: Option<Timestamp>) -> String {
    match until {
        Some(t) => format!("{} (--until)", t.to_rfc3339()),
        None => "the latest commit".to_string(),
    }
}

/// Copies the backup's file to `temp`, checking its size and crc32c
/// against the manifest.
fn copy_in(
    ctx: &RestoreCtx<'_>,
    entry: &BackedUpDb,
    temp: &Path,
) -> NsfResult<Arc<dyn FileHandle>> {
    let be = ctx.backend.as_ref();
    let src_path = ctx.backup.join(FILES_DIR).join(&entry.path);
    let src = be
        .open(&src_path, OpenMode::Existing)
        .map_err(|e| bad(ctx, &format!("cannot open the copy of {}: {e}", entry.path)))?;
    let io = |e| NsfError::Io {
        path: temp.display().to_string(),
        source: e,
    };
    let dst = be.open(temp, OpenMode::CreateOrOpen).map_err(io)?;
    dst.set_len(0).map_err(io)?;
    let len = src.len().map_err(io)?;
    if len != entry.size {
        return Err(bad(
            ctx,
            &format!(
                "the copy of {} has {len} bytes, the manifest says {}",
                entry.path, entry.size
            ),
        ));
    }
    let mut buf = vec![0u8; 64 * PAGE_SIZE];
    let (mut at, mut crc) = (0u64, 0u32);
    while at < len {
        let n = usize::try_from((len - at).min(buf.len() as u64)).unwrap_or(buf.len());
        read_exact_at(src.as_ref(), &mut buf[..n], at).map_err(io)?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        write_all_at(dst.as_ref(), &buf[..n], at).map_err(io)?;
        at += n as u64;
    }
    if crc != entry.crc32c {
        return Err(bad(
            ctx,
            &format!(
                "the copy of {} fails its checksum (crc32c {crc:08x}, the manifest says {:08x})",
                entry.path, entry.crc32c
            ),
        ));
    }
    Ok(dst)
}

fn read_header(f: &dyn FileHandle, path: &str) -> NsfResult<DbHeader> {
    let mut page = PageBuf::zeroed();
    read_exact_at(f, page.bytes_mut(), 0).map_err(|e| NsfError::NotADatabase {
        path: path.to_string(),
        reason: format!("cannot read its header: {e}"),
    })?;
    DbHeader::decode(&page, path)
}

/// A restore that stopped before the backup's end cannot be consistent
/// (pages of the copy may hold later changes), and one that could not
/// reach the latest commit says why.
fn check_reached(ctx: &RestoreCtx<'_>, path: &str, end: Lsn, stop: &RollStop) -> NsfResult<()> {
    let unreachable = |reason: String| NsfError::RestoreUnreachable {
        path: path.to_string(),
        wanted: wanted(ctx.until),
        reason,
    };
    match stop {
        RollStop::EndOfLog { at } if *at < end => Err(unreachable(format!(
            "the log ends at {at}, before the backup's end at {end}; the extents after it are missing"
        ))),
        RollStop::Until { lsn, time_micros } if *lsn < end => Err(unreachable(format!(
            "the backup copied changes up to {end} (it finished at {}); a commit at {lsn} at {} is \
             later than --until but may already be in the copy: choose a time after the backup finished",
            Timestamp(ctx.manifest.finished_micros).to_rfc3339(),
            Timestamp(*time_micros).to_rfc3339()
        ))),
        RollStop::Replaced { db_iid, lsn, time_micros } => Err(NsfError::InstanceMismatch {
            path: path.to_string(),
            reason: format!(
                "at {lsn} ({}) the log continues {} with another instance, {}, so the backed-up \
                 instance's history ends there; restore with --until before that time, or from a \
                 newer backup",
                Timestamp(*time_micros).to_rfc3339(),
                ctx.manifest
                    .databases
                    .iter()
                    .find(|d| d.path == path)
                    .map_or(path, |d| d.path.as_str()),
                DbInstanceId(*db_iid)
            ),
        }),
        _ => Ok(()),
    }
}

fn describe_stop(stop: &RollStop) -> String {
    match stop {
        RollStop::EndOfLog { at } => format!("end of the log at {at}"),
        RollStop::Until { lsn, time_micros } => format!(
            "next commit at {lsn} is at {}, after --until",
            Timestamp(*time_micros).to_rfc3339()
        ),
        RollStop::Replaced { lsn, .. } => format!("another instance took over at {lsn}"),
        _ => "stopped".to_string(),
    }
}

fn new_instance_id(a: DbInstanceId, b: DbInstanceId) -> DbInstanceId {
    loop {
        let id = DbInstanceId(rand::random());
        if id != a && id != b && id.0 != 0 {
            return id;
        }
    }
}

/// Gives the file its new instance id and reseals every written page with
/// LSN 0 (a new instance has no log records yet, as after fixup), then
/// fdatasyncs it. All-zero pages ("never written") stay as they are.
fn reseal(
    f: &dyn FileHandle,
    path: &str,
    mut header: DbHeader,
    id: DbInstanceId,
) -> std::io::Result<()> {
    header.instance_id = id;
    let pages = f.len()? / PAGE_SIZE as u64;
    for n in 1..pages {
        let pid = PageId(u32::try_from(n).unwrap_or(u32::MAX));
        let mut page = PageBuf::zeroed();
        read_exact_at(f, page.bytes_mut(), pid.offset())?;
        if page.bytes().iter().all(|b| *b == 0) || page.verify(path, pid).is_err() {
            continue;
        }
        page.seal(pid, Lsn::ZERO);
        write_all_at(f, page.bytes(), pid.offset())?;
    }
    let mut h = header.encode();
    h.seal(PageId(0), Lsn::ZERO);
    write_all_at(f, h.bytes(), 0)?;
    f.sync_data()
}

/// Puts the restored file in place (I9). In place, the instances whose
/// records must never touch it are retired first, marked as an
/// interrupted restore until the rename is durable (I29).
fn swap_in(
    ctx: &RestoreCtx<'_>,
    target: &str,
    full: &Path,
    temp: &Path,
    backed_up: DbInstanceId,
) -> NsfResult<()> {
    let be = ctx.backend.as_ref();
    let io = |p: &Path| {
        let p = p.display().to_string();
        move |e| NsfError::Io { path: p, source: e }
    };
    let mut old = vec![backed_up];
    if be.exists(full) {
        if let Ok(f) = be.open(full, OpenMode::Existing) {
            if let Ok(h) = read_header(f.as_ref(), target) {
                if h.instance_id != backed_up {
                    old.push(h.instance_id);
                }
            }
        }
    }
    const WHY: &str = "a restore was interrupted; run `folio restore` again";
    for id in &old {
        ctx.retired.retire(target, *id, WHY)?;
    }
    be.rename(temp, full).map_err(io(full))?;
    let dir = full.parent().unwrap_or(ctx.data_dir);
    be.sync_dir(dir).map_err(io(dir))?;
    for id in &old {
        ctx.retired.fixed(target, Some(*id))?;
    }
    Ok(())
}
