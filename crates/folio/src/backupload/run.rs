//! The phases of `folio load backup` and its `result.json` (see the
//! module header in `mod.rs`).

use super::disk::{evict, sequential, DiskRate};
use super::fill::{doc, fill};
use crate::load::{drive_while, embedded_clients};
use hdrhistogram::Histogram;
use nsf::{Engine, EngineConfig, RestoreOptions, RestoreReport, Timestamp};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::backend::FsBackend;
use translog::{LogConfig, LogStyle};

#[derive(clap::Args, Debug)]
pub struct BackupArgs {
    /// MiB of databases to back up (spread over --databases files).
    #[arg(long, default_value_t = 1024)]
    pub backup_mib: u64,
    /// Databases the backed-up data is spread over.
    #[arg(long, default_value_t = 4)]
    pub databases: usize,
    /// MiB of log written after the backup and rolled forward by restore.
    #[arg(long, default_value_t = 256)]
    pub log_mib: u64,
    /// MiB of the database fixup checks and rewrites.
    #[arg(long, default_value_t = 512)]
    pub fixup_mib: u64,
    /// Bytes of each filler document's body.
    #[arg(long, default_value_t = 16_384)]
    pub doc_size: usize,
    /// Concurrent committing clients (the commit workload of `load
    /// commit`: each updates its own 1 KiB document).
    #[arg(long, default_value_t = 32)]
    pub clients: usize,
    /// Seconds of the commit measurement without backup.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Directory for the temporary data (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Where result.json and report.html are written.
    #[arg(long, default_value = "folio-load-backup")]
    pub out: PathBuf,
}

const MIB: f64 = (1u64 << 20) as f64;
const COMMIT_DOC: usize = 1024;

fn e(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn commit_figures(n: u64, h: &Histogram<u64>, secs: f64) -> Value {
    json!({
        "commits": n,
        "seconds": secs,
        "commits_per_sec": n as f64 / secs.max(1e-9),
        "p50_us": h.value_at_quantile(0.5),
        "p99_us": h.value_at_quantile(0.99),
        "max_us": h.max(),
    })
}

fn file_bytes(dir: &Path, paths: &[String]) -> Result<u64, String> {
    paths.iter().try_fold(0, |sum, p| {
        let f = dir.join(p);
        Ok(sum
            + std::fs::metadata(&f)
                .map_err(|x| format!("{}: {x}", f.display()))?
                .len())
    })
}

fn restore_timed(
    engine: &Engine,
    backup: &Path,
    opts: RestoreOptions,
) -> Result<(RestoreReport, f64), String> {
    let t = Instant::now();
    let mut r = engine.restore(backup, &opts).map_err(e)?;
    let secs = t.elapsed().as_secs_f64();
    r.pop()
        .map(|r| (r, secs))
        .ok_or_else(|| "restore restored nothing".to_string())
}

pub fn run(a: &BackupArgs) -> Result<(), String> {
    let base = a.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("folio-load-backup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|x| format!("{}: {x}", dir.display()))?;
    let result = measure(a, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let result = result?;
    super::report::write(&a.out, &result)?;
    println!("{}", serde_json::to_string_pretty(&result).map_err(e)?);
    Ok(())
}

fn open(dir: &Path) -> Result<Engine, String> {
    let mut cfg = EngineConfig::new(dir);
    cfg.buffer_pool_size = 256 << 20;
    let mut lc = LogConfig::new(dir.join("translog"));
    lc.style = LogStyle::Archive;
    lc.max_size = 1 << 30;
    lc.archive_dir = Some(dir.join("archive"));
    cfg.log = Some(lc);
    Ok(Engine::open(Arc::new(FsBackend), cfg).map_err(e)?.0)
}

fn measure(a: &BackupArgs, dir: &Path) -> Result<Value, String> {
    let engine = open(dir)?;
    let paths: Vec<String> = (0..a.databases.max(1))
        .map(|d| format!("bench/b{d}.fdb"))
        .collect();
    for p in &paths {
        engine.create_database(p, "backup benchmark").map_err(e)?;
    }
    let next = AtomicU64::new(0);
    eprintln!(
        "filling {} MiB over {} databases",
        a.backup_mib,
        paths.len()
    );
    fill(&engine, &paths, a.backup_mib << 20, a.doc_size, &next)?;
    let db_bytes = file_bytes(dir, &paths)?;

    eprintln!("disk: sequential write + fdatasync and read of {db_bytes} bytes");
    let disk = sequential(dir, db_bytes)?;

    eprintln!(
        "commit: {} clients for {} s without backup",
        a.clients, a.seconds
    );
    let clients = embedded_clients(&engine, &paths, a.clients, COMMIT_DOC, 1)?;
    let (base_n, base_h, base_secs, ()) = drive_while(clients, || {
        std::thread::sleep(Duration::from_secs_f64(a.seconds))
    })?;

    eprintln!("commit: {} clients during an online backup", a.clients);
    engine.checkpoint().map_err(e)?;
    for p in &paths {
        evict(&dir.join(p))?;
    }
    let backup = dir.join("backup");
    let clients = embedded_clients(&engine, &paths, a.clients, COMMIT_DOC, 2)?;
    let (during_n, during_h, during_secs, (report, backup_secs)) = drive_while(clients, || {
        let t = Instant::now();
        let r = engine.backup(&backup, &[]);
        (r, t.elapsed().as_secs_f64())
    })?;
    let report = report.map_err(e)?;
    let backed_up: u64 = report.manifest.databases.iter().map(|d| d.size).sum();
    let backup_mib_s = backed_up as f64 / MIB / backup_secs.max(1e-9);

    eprintln!("roll-forward: {} MiB of log into {}", a.log_mib, paths[0]);
    let one = [paths[0].clone()];
    let log_end = |engine: &Engine| engine.log_info().map_or(0, |i| i.end_lsn.0);
    let mark = log_end(&engine);
    while log_end(&engine).saturating_sub(mark) < a.log_mib << 20 {
        fill(&engine, &one, 32 << 20, a.doc_size, &next)?;
    }
    let db0 = engine.open_database(&paths[0]).map_err(e)?;
    let before = db0.create(doc(u64::MAX - 1, 64)).map_err(e)?.unid;
    std::thread::sleep(Duration::from_millis(5));
    let t = Timestamp::now();
    std::thread::sleep(Duration::from_millis(5));
    let after = db0.create(doc(u64::MAX, 64)).map_err(e)?.unid;
    drop(db0);
    engine.checkpoint().map_err(e)?;
    engine.archive(None).map_err(e)?;
    let log_at_restore = log_end(&engine);

    eprintln!("restore: to the backup's end, to the latest, to T");
    let opts = |until: Option<Timestamp>, to: &str| RestoreOptions {
        db: Some(paths[0].clone()),
        until,
        to: Some(to.into()),
        archive_dir: None,
    };
    let end_time = Timestamp(report.manifest.finished_micros);
    let (copy, copy_secs) = restore_timed(&engine, &backup, opts(Some(end_time), "bench/r0.fdb"))?;
    let (full, full_secs) = restore_timed(&engine, &backup, opts(None, "bench/r1.fdb"))?;
    let (at_t, _) = restore_timed(&engine, &backup, opts(Some(t), "bench/r2.fdb"))?;
    // The log the second restore reads past the first: from the backup's
    // end to the end of the log (every database's records; the
    // backed-up instance's are applied).
    let rolled = log_at_restore.saturating_sub(report.manifest.end_lsn);
    let roll_secs = (full_secs - copy_secs).max(1e-9);
    let r2 = engine.open_database("bench/r2.fdb").map_err(e)?;
    let has_before = r2.get(before).is_ok();
    let has_after = r2.get(after).is_ok();
    drop(r2);
    let lands = has_before && !has_after && at_t.last_commit.is_some_and(|c| c <= t);

    eprintln!("fixup: filling {} MiB", a.fixup_mib);
    let fx = ["bench/fixup.fdb".to_string()];
    engine
        .create_database(&fx[0], "fixup benchmark")
        .map_err(e)?;
    fill(&engine, &fx, a.fixup_mib << 20, a.doc_size, &next)?;
    engine.checkpoint().map_err(e)?;
    let fixup_bytes = file_bytes(dir, &fx)?;
    evict(&dir.join(&fx[0]))?;
    let t0 = Instant::now();
    let fixed = engine.fixup(&fx[0], false).map_err(e)?;
    let fixup_secs = t0.elapsed().as_secs_f64();
    engine.shutdown().map_err(e)?;

    let p99_ratio =
        during_h.value_at_quantile(0.99) as f64 / (base_h.value_at_quantile(0.99).max(1)) as f64;
    let roll_mib_s = rolled as f64 / MIB / roll_secs;
    let fixup_mib_s = fixup_bytes as f64 / MIB / fixup_secs.max(1e-9);
    Ok(json!({
        "workload": "backup",
        "settings": {
            "backup_mib": a.backup_mib,
            "databases": paths.len(),
            "log_mib": a.log_mib,
            "fixup_mib": a.fixup_mib,
            "doc_size": a.doc_size,
            "clients": a.clients,
            "seconds": a.seconds,
        },
        "machine": crate::load::machine(),
        "disk": disk_json(&disk),
        "backup": {
            "database_bytes": backed_up,
            "bytes_read": report.bytes_copied,
            "seconds": backup_secs,
            "mib_per_sec": backup_mib_s,
            "share_of_sequential_write": backup_mib_s / disk.write_mib_s.max(1e-9),
            "share_of_sequential_read": backup_mib_s / disk.read_mib_s.max(1e-9),
            "start_lsn": report.manifest.start_lsn,
            "end_lsn": report.manifest.end_lsn,
        },
        "commit_without_backup": commit_figures(base_n, &base_h, base_secs),
        "commit_during_backup": commit_figures(during_n, &during_h, during_secs),
        "p99_ratio": p99_ratio,
        "restore": {
            "database_bytes": report
                .manifest
                .databases
                .iter()
                .find(|d| d.path == paths[0])
                .map_or(0, |d| d.size),
            "copy_seconds": copy_secs,
            "full_seconds": full_secs,
            "log_bytes_rolled": rolled,
            "txns_applied": full.txns_applied.saturating_sub(copy.txns_applied),
            "roll_forward_mib_per_sec": roll_mib_s,
            "until_t_micros": t.0,
            "until_last_commit_micros": at_t.last_commit.map(|c| c.0),
            "until_has_commit_before_t": has_before,
            "until_has_commit_after_t": has_after,
            "until_lands_exactly": lands,
        },
        "fixup": {
            "bytes": fixup_bytes,
            "seconds": fixup_secs,
            "mib_per_sec": fixup_mib_s,
            "pages": fixed.pages,
            "pages_bad": fixed.pages_bad,
        },
        "targets": {
            "backup_share_of_sequential": {"target": 0.5, "got": backup_mib_s / disk.write_mib_s.max(1e-9)},
            "commit_p99_ratio": {"target": 2.0, "got": p99_ratio},
            "roll_forward_mib_per_sec": {"target": 64.0, "got": roll_mib_s},
            "restore_until_lands_exactly": {"target": true, "got": lands},
            "fixup_mib_per_sec": {"target": 200.0, "got": fixup_mib_s},
        },
    }))
}

fn disk_json(d: &DiskRate) -> Value {
    json!({
        "bytes": d.bytes,
        "sequential_write_fdatasync_mib_per_sec": d.write_mib_s,
        "sequential_read_mib_per_sec": d.read_mib_s,
    })
}
