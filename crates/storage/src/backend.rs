//! The storage backend: the only way Folio touches files.
//!
//! Every file operation of the engine — database pages, log extents, the log
//! control file, attachment content — goes through [`Backend`] and
//! [`FileHandle`]. Production uses [`FsBackend`]; tests use [`MemBackend`],
//! [`FaultBackend`] (errors on chosen operations) and [`CrashBackend`]
//! (which remembers what was synced and can produce the state a power cut
//! would leave behind). Keeping the surface small (positional reads and
//! writes, `sync_data`, and a few directory operations) keeps the fault and
//! crash models honest: there is no side door.

mod aligned;
mod crash;
mod fault;
mod fs;
mod mem;

pub use aligned::{AlignedBuf, DIRECT_ALIGN};

pub use crash::{CrashBackend, CrashMode};
pub use fault::{FaultBackend, FaultKind, FaultOp, FaultRule};
pub use fs::FsBackend;
pub use mem::MemBackend;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// The file must exist.
    Existing,
    /// Create it if missing.
    CreateOrOpen,
    /// Create it; fail with `AlreadyExists` if it exists.
    CreateNew,
}

/// A file system, real or simulated.
pub trait Backend: Send + Sync + 'static {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn FileHandle>>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Atomically replaces `to` with `from` (durable after `sync_dir`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Entries (files and directories) directly in `dir`, as full paths,
    /// sorted by name.
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    fn is_dir(&self, path: &Path) -> bool;
    /// Makes creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// A file's identity on its backend (device and inode for `FsBackend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity(pub u64, pub u64);

/// An open file. Positional I/O only, so handles can be shared across
/// threads without a seek cursor.
#[allow(
    clippy::len_without_is_empty,
    reason = "len is a fallible file-size query, not a container length"
)]
pub trait FileHandle: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; returns 0 at end of file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes some prefix of `buf` at `offset` and returns its length (a
    /// short write is legal; see [`write_all_at`]).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;
    /// Makes all written data durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
    /// Makes durable everything written so far to every file of the file
    /// system that holds this one, including files closed since (Linux
    /// `syncfs`). A checkpoint writes the pages of thousands of databases
    /// and then syncs once, instead of once per file: on a disk where each
    /// sync is a cache flush, the per-file syncs cost seconds where one
    /// costs milliseconds (design.md I8). An error means some write since
    /// the last sync of the file system may be lost, without saying which.
    fn sync_fs(&self) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Which file this is, whatever path reached it (device and inode on
    /// a real file system), so two spellings or links of one file can be
    /// recognised; `None` where the backend cannot tell.
    fn identity(&self) -> Option<FileIdentity> {
        None
    }

    /// Writes all of `buf` at `offset` (the contract of [`write_all_at`])
    /// for bulk content that is written once, synced soon after and not
    /// read back soon: attachment pages. A backend may send it past the OS
    /// page cache (direct I/O), because copying hundreds of megabytes a
    /// second into the cache costs more CPU than the disk needs to write
    /// them; it does so only when `buf`'s address, its length and `offset`
    /// are multiples of [`DIRECT_ALIGN`] (see [`AlignedBuf`]), and falls
    /// back to ordinary writes otherwise. Either way the bytes are durable
    /// only after `sync_data`. The default is ordinary writes, which keeps
    /// the fault and crash backends' models exact.
    fn write_bulk_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        write_all_with(|b, o| self.write_at(b, o), buf, offset)
    }
}

/// Writes all of `buf`, retrying short writes. A write that makes no
/// progress is an error, never a silent loop.
pub fn write_all_at(f: &dyn FileHandle, buf: &[u8], offset: u64) -> io::Result<()> {
    write_all_with(|b, o| f.write_at(b, o), buf, offset)
}

/// [`write_all_at`] over any positional write.
fn write_all_with(
    mut write_at: impl FnMut(&[u8], u64) -> io::Result<usize>,
    mut buf: &[u8],
    mut offset: u64,
) -> io::Result<()> {
    while !buf.is_empty() {
        let n = write_at(buf, offset)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "write made no progress",
            ));
        }
        buf = &buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// Fills `buf` from `offset`; reading past the end of file is `UnexpectedEof`.
pub fn read_exact_at(f: &dyn FileHandle, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        let n = f.read_at(buf, offset)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past end of file",
            ));
        }
        buf = &mut buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// Creates or replaces `path` with `data` atomically and durably:
/// write a temporary file, sync it, rename over the target, sync the
/// directory (design.md I9).
pub fn write_file_atomic(backend: &dyn Backend, path: &Path, data: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let f = backend.open(&tmp, OpenMode::CreateOrOpen)?;
    f.set_len(0)?;
    write_all_at(f.as_ref(), data, 0)?;
    f.sync_data()?;
    drop(f);
    backend.rename(&tmp, path)?;
    backend.sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Reads a whole (small) file.
pub fn read_file(backend: &dyn Backend, path: &Path) -> io::Result<Vec<u8>> {
    let f = backend.open(path, OpenMode::Existing)?;
    let mut v = vec![0u8; f.len()? as usize];
    read_exact_at(f.as_ref(), &mut v, 0)?;
    Ok(v)
}
