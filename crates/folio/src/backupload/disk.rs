//! The disk's own sequential bandwidth, measured in the run it is
//! compared with (a shared disk's speed drifts between runs): a file of
//! the backup's size written in 1 MiB steps and fdatasynced, evicted from
//! the page cache, and read back.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::Instant;

const STEP: usize = 1 << 20;

/// Sequential write (+ fdatasync) and read rates, MiB/s.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct DiskRate {
    pub bytes: u64,
    pub write_mib_s: f64,
    pub read_mib_s: f64,
}

/// Writes and reads back `bytes` (rounded up to whole MiB) in `dir`.
pub fn sequential(dir: &Path, bytes: u64) -> Result<DiskRate, String> {
    let path = dir.join("disk-probe");
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let steps = bytes.div_ceil(STEP as u64).max(1);
    let buf: Vec<u8> = (0..STEP).map(|i| (i * 131 % 251) as u8).collect();
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .map_err(err)?;
    let t = Instant::now();
    for _ in 0..steps {
        f.write_all(&buf).map_err(err)?;
    }
    f.sync_data().map_err(err)?;
    let write = t.elapsed().as_secs_f64();
    drop(f);
    evict(&path)?;
    let mut f = File::open(&path).map_err(err)?;
    let mut back = vec![0u8; STEP];
    let t = Instant::now();
    for _ in 0..steps {
        f.read_exact(&mut back).map_err(err)?;
    }
    let read = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    let mib = (steps * STEP as u64) as f64 / f64::from(1u32 << 20);
    Ok(DiskRate {
        bytes: steps * STEP as u64,
        write_mib_s: mib / write.max(1e-9),
        read_mib_s: mib / read.max(1e-9),
    })
}

/// Drops a synced file's pages from the page cache, so the next read of
/// it comes from the disk (as a backup of databases larger than memory
/// would).
pub fn evict(path: &Path) -> Result<(), String> {
    let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.sync_data()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: a valid open descriptor; advice only, no memory touched.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(format!("{}: posix_fadvise: error {r}", path.display()));
    }
    Ok(())
}
