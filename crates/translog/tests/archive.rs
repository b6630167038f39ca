//! Archive style end to end: a log that is not archived fills and refuses
//! appends at once; archiving lets it go on; a crash or an I/O error in the
//! middle of an archive run never moves the archive mark past a verified
//! copy (I31); and the records read back across the archive and the live
//! log are exactly those appended.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::{
    CrashBackend, CrashMode, FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend,
};
use storage::{Backend, Lsn, PageBuf, PageId, PageKind};
use translog::{
    Appended, ArchivedLog, Batch, LogConfig, LogError, LogStyle, PageChange, RecordBody, TransLog,
};

const EXT: u64 = 65536;
const LOG: &str = "/log";
const ARC: &str = "/arc";

fn cfg(style: LogStyle, extents: u64) -> LogConfig {
    LogConfig {
        extent_size: EXT,
        max_size: extents * EXT,
        style,
        // An archive-bound full log must refuse at once, not after this.
        full_wait: translog::MAX_FULL_WAIT,
        archive_dir: Some(PathBuf::from(ARC)),
        ..LogConfig::new(LOG)
    }
}

fn open(backend: Arc<dyn Backend>, cfg: LogConfig) -> Arc<TransLog> {
    TransLog::open(backend, Path::new("/data"), cfg).unwrap().0
}

/// A page whose header keeps zero runs, so the log writes it as a
/// PageSparse record: the archive reader hands it back whole (I46).
fn image(fill: u8) -> PageBuf {
    let mut page = PageBuf::new(PageKind::BTreeLeaf);
    page.body_mut().fill(fill);
    page
}

/// A one-page batch whose image is filled with `fill`.
fn batch(fill: u8) -> Batch {
    let page = image(fill);
    Batch {
        db_iid: 7,
        db_path: "a.fdb".into(),
        pages: vec![(PageId(1), PageChange::Image(page))],
        time_micros: i64::from(fill),
    }
}

/// Appends `fill`'s batch durably, then checkpoints at the end (nothing
/// is held in a database here), so only the archive mark holds log back.
fn commit(log: &TransLog, fill: u8) -> Result<Appended, LogError> {
    let a = log.append(&batch(fill))?;
    log.wait_durable(a.end_lsn)?;
    log.checkpoint(log.end_lsn())?;
    Ok(a)
}

fn extent_files(b: &dyn Backend, dir: &str) -> Vec<PathBuf> {
    b.read_dir(Path::new(dir)).unwrap_or_default()
}

fn archived(b: &dyn Backend) -> Vec<PathBuf> {
    extent_files(b, ARC)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".log"))
        .collect()
}

#[test]
fn an_unarchived_log_fills_and_refuses_at_once_then_archiving_frees_it() {
    let mem = MemBackend::new();
    let log = open(Arc::new(mem.clone()), cfg(LogStyle::Archive, 3));
    let mut written = Vec::new();
    let err = loop {
        match commit(&log, written.len() as u8) {
            Ok(a) => written.push(a),
            Err(e) => break e,
        }
        assert!(written.len() < 100, "the log never filled");
    };
    assert!(
        matches!(err, LogError::ArchiveNeeded { waiting_extents, .. } if waiting_extents >= 1),
        "{err}"
    );
    assert!(err.to_string().contains("folio archive"), "{err}");
    let info = log.info();
    assert!(info.archive_needed && info.extents_awaiting_archive >= 1);
    assert!(info.log_full_events >= 1);
    assert_eq!(info.archived_lsn, Lsn::ZERO);

    // Reads go on: the whole log reads back while appends are refused.
    let reader = ArchivedLog::open(Arc::new(mem.clone()), Path::new(LOG), Some(Path::new(LOG)));
    let commits = reader
        .unwrap()
        .records_from(written[0].start_lsn)
        .filter(|r| matches!(r, Ok(r) if matches!(r.body, RecordBody::Commit { .. })))
        .count();
    assert_eq!(commits, written.len());

    let report = log.archive(None).unwrap();
    assert!(report.extents_copied >= 1);
    assert_eq!(report.bytes_copied, report.extents_copied * EXT);
    assert_eq!(report.archive_dir, Path::new(ARC));
    assert_eq!(archived(&mem).len() as u64, report.extents_copied);
    let info = log.info();
    assert!(!info.archive_needed && info.last_archive.is_some());
    assert_eq!(info.extents_awaiting_archive, 0);
    assert_eq!(info.archived_lsn, report.archived_lsn);
    commit(&log, 200).expect("archiving made room");
}

#[test]
fn records_read_back_across_archive_and_live_log_equal_what_was_written() {
    let mem = MemBackend::new();
    let log = open(Arc::new(mem.clone()), cfg(LogStyle::Archive, 3));
    let mut written = Vec::new();
    for fill in 0..60u8 {
        let a = match commit(&log, fill) {
            Ok(a) => a,
            Err(LogError::ArchiveNeeded { .. }) => {
                log.archive(None).unwrap();
                commit(&log, fill).unwrap()
            }
            Err(e) => panic!("{e}"),
        };
        written.push((a.txn, image(fill).bytes().to_vec()));
    }
    let first = written[0].0;
    let live = extent_files(&mem, LOG);
    assert!(
        !live.iter().any(|p| p.ends_with("ext-0000000000000001.log")),
        "extent 1 was recycled once archived: {live:?}"
    );
    let back =
        ArchivedLog::open(Arc::new(mem.clone()), Path::new(ARC), Some(Path::new(LOG))).unwrap();
    let from = back.archived_extents()[0];
    let mut images = Vec::new();
    for r in back.records_from(from) {
        let r = r.unwrap();
        if let RecordBody::PageImage { image, .. } = &r.body {
            if r.txn >= first {
                images.push((r.txn, image.clone()));
            }
        }
    }
    assert_eq!(images, written, "every batch, in order, with its content");
    drop(log);

    // Without the live log, the archive alone reads up to its last extent.
    let alone = ArchivedLog::open(Arc::new(mem.clone()), Path::new(ARC), None).unwrap();
    let mut records = alone.records_from(from);
    let n = records
        .by_ref()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
        .len();
    assert_eq!(records.stop(), Some(translog::StopReason::NoExtent));
    assert!(n > 0);
}

#[test]
fn a_missing_archived_extent_is_named() {
    let mem = MemBackend::new();
    let log = open(Arc::new(mem.clone()), cfg(LogStyle::Archive, 3));
    for fill in 0..40u8 {
        if let Err(LogError::ArchiveNeeded { .. }) = commit(&log, fill) {
            log.archive(None).unwrap();
            commit(&log, fill).unwrap();
        }
    }
    let back =
        ArchivedLog::open(Arc::new(mem.clone()), Path::new(ARC), Some(Path::new(LOG))).unwrap();
    let lsns = back.archived_extents();
    assert!(lsns.len() >= 3, "{lsns:?}");
    let gone = archived(&mem)[1].clone();
    mem.remove_file(&gone).unwrap();
    let back =
        ArchivedLog::open(Arc::new(mem.clone()), Path::new(ARC), Some(Path::new(LOG))).unwrap();
    let err = back
        .records_from(lsns[0])
        .find_map(Result::err)
        .expect("the hole is an error");
    assert!(
        matches!(&err, LogError::MissingExtent { first_lsn, .. } if *first_lsn == lsns[1]),
        "{err}"
    );
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn archiving_is_refused_in_other_styles_and_without_a_directory() {
    let log = open(Arc::new(MemBackend::new()), cfg(LogStyle::Circular, 3));
    let e = log.archive(None).unwrap_err();
    assert!(
        matches!(&e, LogError::Invalid(m) if m.contains("archive")),
        "{e}"
    );
    let log = open(
        Arc::new(MemBackend::new()),
        LogConfig {
            archive_dir: None,
            ..cfg(LogStyle::Archive, 3)
        },
    );
    let e = log.archive(None).unwrap_err();
    assert!(
        matches!(&e, LogError::Invalid(m) if m.contains("--to")),
        "{e}"
    );
}

/// A log that used to be circular recycled its first extents; switched to
/// archive style, its mark starts at the oldest extent it still has.
#[test]
fn switching_to_archive_style_starts_the_mark_at_the_oldest_extent() {
    let mem = MemBackend::new();
    let log = open(Arc::new(mem.clone()), cfg(LogStyle::Circular, 3));
    for fill in 0..30u8 {
        commit(&log, fill).unwrap();
    }
    drop(log);
    let log = open(Arc::new(mem.clone()), cfg(LogStyle::Archive, 3));
    let mark = log.info().archived_lsn;
    assert!(mark > Lsn::ZERO);
    let report = log.archive(None).unwrap();
    assert!(report.extents_copied >= 1);
    let back =
        ArchivedLog::open(Arc::new(mem.clone()), Path::new(ARC), Some(Path::new(LOG))).unwrap();
    assert_eq!(back.archived_extents()[0], mark);
}

/// EIO while writing the copy: the run fails naming the file, the mark
/// stays, the log goes on appending, and a rerun completes.
#[test]
fn an_io_error_in_the_archive_leaves_the_mark_and_the_log_running() {
    let mem = MemBackend::new();
    let fault = Arc::new(FaultBackend::new(Arc::new(mem.clone())));
    let log = open(fault.clone(), cfg(LogStyle::Archive, 8));
    for fill in 0..20u8 {
        commit(&log, fill).unwrap();
    }
    fault.add_rule(FaultRule {
        nth: 2,
        path_contains: Some("arc-".into()),
        ..FaultRule::new(FaultOp::Write, FaultKind::Eio)
    });
    let e = log.archive(None).unwrap_err();
    assert!(
        matches!(&e, LogError::Io { path, .. } if path.starts_with(ARC)),
        "{e}"
    );
    assert_eq!(
        log.info().archived_lsn,
        Lsn(2 * (EXT - 4096)),
        "extent 1 (one write) was archived, extent 2's write failed"
    );
    assert!(log.info().failed.is_none());
    commit(&log, 99).expect("the log is not poisoned");
    fault.clear_rules();
    let report = log.archive(None).unwrap();
    assert_eq!(log.info().extents_awaiting_archive, 0);
    assert!(report.extents_copied >= 1);
}

/// Fills a few extents on `b` and returns the log, checkpointed.
fn workload(b: &Arc<CrashBackend>) -> Arc<TransLog> {
    let backend: Arc<dyn Backend> = b.clone();
    let log = open(backend, cfg(LogStyle::Archive, 16));
    for fill in 0..25u8 {
        commit(&log, fill).unwrap();
    }
    log
}

/// Every archived copy named below the mark equals its extent.
fn check_mark(image: &MemBackend, mark: Lsn) {
    let back = ArchivedLog::open(
        Arc::new(image.clone()),
        Path::new(ARC),
        Some(Path::new(LOG)),
    )
    .unwrap();
    let payload = EXT - 4096;
    for seq in 1..mark.0 / payload {
        let copy = PathBuf::from(format!(
            "{ARC}/arc-{:016x}-{:016x}.log",
            back.log_id(),
            seq * payload
        ));
        let ext = PathBuf::from(format!("{LOG}/ext-{seq:016x}.log"));
        assert_eq!(
            image.file_bytes(&copy),
            image.file_bytes(&ext),
            "extent {seq} is below the mark {mark}, so its copy must be complete"
        );
    }
}

/// A crash at every sync point of an archive run, under two loss models:
/// the durable mark never passes a verified copy, and a rerun after
/// restart completes the archive.
#[test]
fn a_crash_anywhere_in_an_archive_run_never_passes_a_verified_copy() {
    let probe = Arc::new(CrashBackend::new());
    let log = workload(&probe);
    let before = probe.sync_count();
    log.archive(None).unwrap();
    let syncs = probe.sync_count() - before;
    assert!(syncs >= 6, "three syncs per extent at least, got {syncs}");
    drop(log);
    for mode in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced] {
        for k in 1..=syncs {
            let b = Arc::new(CrashBackend::new());
            let log = workload(&b);
            b.arm_crash(b.sync_count() + k, mode);
            assert!(log.archive(None).is_err(), "sync {k} crashed the run");
            drop(log);
            let image = b.crashed_image().expect("crashed");
            let log = open(Arc::new(image.clone()), cfg(LogStyle::Archive, 16));
            let mark = log.info().archived_lsn;
            check_mark(&image, mark);
            log.archive(None).unwrap();
            assert_eq!(log.info().extents_awaiting_archive, 0);
            let end = log.info().archived_lsn;
            drop(log);
            check_mark(&image, end);
            let partial = extent_files(&image, ARC)
                .into_iter()
                .filter(|p| p.to_string_lossy().ends_with(".partial"))
                .count();
            assert_eq!(partial, 0, "the rerun replaced every partial copy");
        }
    }
}

#[test]
fn archive_reports_nothing_to_do_when_nothing_is_complete() {
    let log = open(Arc::new(MemBackend::new()), cfg(LogStyle::Archive, 3));
    let r = log.archive(Some(Path::new("/elsewhere"))).unwrap();
    assert_eq!((r.extents_copied, r.bytes_copied), (0, 0));
    assert_eq!(r.archive_dir, Path::new("/elsewhere"));
}
