//! Taking an online backup: fuzzy page copies made consistent by the log
//! (I35).
//!
//! ```text
//!  checkpoint ─▶ start = its redo LSN
//!  pass 1: copy every page of every file, in order, no lock held
//!  wait until the log is durable to its end ─▶ E1
//!  pass 2: copy again the pages at or past each file's high-water mark
//!          at the start (attachment content streamed meanwhile, I7)
//!  end = the durable LSN ─▶ no copied page is newer (I1)
//!  fdatasync the copies; archive completed extents; copy the store
//!  objects; sync every new directory up to DEST's parent; read
//!  [start, end) back from archive + live log; write manifest.json last
//!  (I9, I49)
//! ```
//!
//! Nothing here takes a database's writer lock: pages are read through
//! the file handle while the flusher may be writing them, so a copied page
//! may be torn or older or newer than its neighbours. Restore redoes every
//! committed change from `start`, and the first record of every page that
//! may have been written after `start` is a full image (I6, I8), so the
//! copy comes out consistent at any commit at or after `end`.

use super::manifest::{
    BackedUpDb, BackupManifest, BackupReport, FILES_DIR, MANIFEST_FILE, MANIFEST_FORMAT,
};
use crate::db::{BackupSource, Database};
use crate::store::STORE_DIR;
use crate::{NsfError, NsfResult, Timestamp};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::{read_exact_at, write_all_at, write_file_atomic};
use storage::{Backend, FileHandle, Lsn, OpenMode, PAGE_SIZE};
use translog::{ArchivedLog, TransLog};

/// Bytes read and written per step of a copy.
const CHUNK: usize = 64 * PAGE_SIZE;

/// What a backup needs from the engine.
pub(crate) struct TakeCtx<'a> {
    pub backend: Arc<dyn Backend>,
    pub log: &'a TransLog,
    pub log_dir: PathBuf,
    pub archive_dir: PathBuf,
    /// The databases, open for the whole copy (so nothing swaps their
    /// files meanwhile: fixup needs them closed).
    pub dbs: Vec<Arc<Database>>,
    /// The redo LSN of a checkpoint taken after the databases opened.
    pub start: Lsn,
    /// Archives the completed extents (archive style, I31).
    pub archive: &'a dyn Fn() -> NsfResult<()>,
    /// Copies the attachment store objects the databases reference into
    /// the given directory (design.md §2.9, §3.6).
    pub objects: &'a dyn Fn(&Path) -> NsfResult<()>,
}

/// One database being copied.
struct Copy {
    entry: BackedUpDb,
    src: BackupSource,
    dest: Arc<dyn FileHandle>,
    dest_path: PathBuf,
}

pub(crate) fn take_backup(ctx: &TakeCtx<'_>, dest: &Path) -> NsfResult<BackupReport> {
    let be = ctx.backend.as_ref();
    let io = |p: &Path| {
        let p = p.display().to_string();
        move |e| NsfError::Io { path: p, source: e }
    };
    if be.exists(&dest.join(MANIFEST_FILE)) {
        return Err(NsfError::Invalid(format!(
            "{} already holds a backup; choose an empty directory",
            dest.display()
        )));
    }
    let started = Timestamp::now();
    let mut copies = Vec::with_capacity(ctx.dbs.len());
    for db in &ctx.dbs {
        let src = db.backup_source()?;
        let dest_path = dest.join(FILES_DIR).join(db.path());
        if let Some(dir) = dest_path.parent() {
            be.create_dir_all(dir).map_err(io(dir))?;
        }
        let file = be
            .open(&dest_path, OpenMode::CreateOrOpen)
            .map_err(io(&dest_path))?;
        file.set_len(0).map_err(io(&dest_path))?;
        copies.push(Copy {
            entry: BackedUpDb::new(db.path(), src.replica_id, src.instance_id),
            src,
            dest: file,
            dest_path,
        });
    }
    let mut bytes = 0;
    for c in &copies {
        bytes += copy_from(c, 0).map_err(io(&c.dest_path))?;
    }
    // Every batch appended so far is durable: attachment content it
    // references was synced before its commit (I7), so pass 2 finds it.
    ctx.log.wait_durable(ctx.log.end_lsn())?;
    for c in &copies {
        let from = u64::from(c.src.high_water) * PAGE_SIZE as u64;
        bytes += copy_from(c, from).map_err(io(&c.dest_path))?;
    }
    // I1: no page read above is newer than what the log had made durable.
    let end = ctx.log.durable_lsn();
    let mut databases = Vec::with_capacity(copies.len());
    for c in copies {
        c.dest.sync_data().map_err(io(&c.dest_path))?;
        let (size, crc) = checksum(c.dest.as_ref()).map_err(io(&c.dest_path))?;
        if let Some(dir) = c.dest_path.parent() {
            sync_dirs_up(be, dir, dest).map_err(io(dir))?;
        }
        databases.push(BackedUpDb {
            size,
            crc32c: crc,
            ..c.entry
        });
    }
    (ctx.archive)()?;
    // The objects the copies reference, as of now (at or past end): any
    // the copies referenced earlier and that a sweep took since are in
    // the archive (archive style, §3.6).
    let objects = dest.join(STORE_DIR);
    (ctx.objects)(&objects)?;
    if be.exists(&objects) {
        sync_dirs_up(be, &objects, dest).map_err(io(&objects))?;
    }
    let log_id = check_range(ctx, end)?;
    let manifest = BackupManifest {
        format: MANIFEST_FORMAT,
        log_id: format!("{log_id:016X}"),
        start_lsn: ctx.start.0,
        end_lsn: end.0,
        started_micros: started.0,
        finished_micros: Timestamp::now().0,
        databases,
    };
    let json =
        serde_json::to_vec_pretty(&manifest).map_err(|e| NsfError::Invalid(e.to_string()))?;
    // I9, I49: the manifest, written last and atomically once everything
    // it names is durable, completes the backup.
    let mpath = dest.join(MANIFEST_FILE);
    write_file_atomic(be, &mpath, &json).map_err(io(&mpath))?;
    Ok(BackupReport {
        dest: dest.to_path_buf(),
        manifest,
        bytes_copied: bytes,
    })
}

/// Syncs `dir` and every directory above it up to `dest`'s parent, so
/// the entries of directories the backup created are durable too (I49: a
/// new directory's entry is durable only once its parent is synced).
fn sync_dirs_up(be: &dyn Backend, dir: &Path, dest: &Path) -> std::io::Result<()> {
    for d in dir.ancestors() {
        be.sync_dir(d)?;
        if d == dest {
            match dest.parent() {
                Some(p) if !p.as_os_str().is_empty() => be.sync_dir(p)?,
                _ => be.sync_dir(Path::new("."))?,
            }
            break;
        }
    }
    Ok(())
}

/// Copies the source file from byte `from` to its current end (which may
/// grow meanwhile). Returns the bytes copied.
fn copy_from(c: &Copy, from: u64) -> std::io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut at = from;
    loop {
        let len = c.src.handle.len()?;
        if at >= len {
            return Ok(at.saturating_sub(from));
        }
        let n = usize::try_from((len - at).min(CHUNK as u64)).unwrap_or(CHUNK);
        read_exact_at(c.src.handle.as_ref(), &mut buf[..n], at)?;
        write_all_at(c.dest.as_ref(), &buf[..n], at)?;
        at += n as u64;
    }
}

/// The size and crc32c of a written copy.
fn checksum(f: &dyn FileHandle) -> std::io::Result<(u64, u32)> {
    let len = f.len()?;
    let mut buf = vec![0u8; CHUNK];
    let (mut at, mut crc) = (0u64, 0u32);
    while at < len {
        let n = usize::try_from((len - at).min(CHUNK as u64)).unwrap_or(CHUNK);
        read_exact_at(f, &mut buf[..n], at)?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        at += n as u64;
    }
    Ok((len, crc))
}

/// Reads the range [start, end) back from the archive and the live log, so
/// a backup is never reported whose log range is not there (I35). Returns
/// the log id.
fn check_range(ctx: &TakeCtx<'_>, end: Lsn) -> NsfResult<u64> {
    let log = ArchivedLog::open(ctx.backend.clone(), &ctx.archive_dir, Some(&ctx.log_dir))?;
    let mut records = log.records_from(ctx.start);
    while records.position() < end {
        match records.next() {
            Some(r) => {
                r?;
            }
            None => {
                return Err(NsfError::Invalid(format!(
                    "the log from {} to {end} cannot be read back (it ends at {}); the backup is not usable",
                    ctx.start,
                    records.position()
                )))
            }
        }
    }
    Ok(log.log_id())
}
