//! The real file system. Thin: positional I/O via `FileExt`, `fdatasync` via
//! `File::sync_data`, directory sync by opening the directory and fsyncing it.
//!
//! Bulk writes ([`FileHandle::write_bulk_at`]) go through a second
//! descriptor opened with `O_DIRECT`, opened the first time a file gets
//! one. It is opened through `/proc/self/fd/N`, which reaches the same
//! inode as the first descriptor even if the path was renamed or replaced
//! since. Where direct I/O is unavailable (no /proc, a file system such as
//! tmpfs that refuses `O_DIRECT`, a misaligned request) the write is an
//! ordinary one: direct I/O is a saving of CPU, never a change of meaning.
//! The kernel keeps the two descriptors coherent: a direct write drops
//! any cached copy of the range it writes.

use super::{Backend, FileHandle, OpenMode, DIRECT_ALIGN};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Production backend over `std::fs`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FsBackend;

struct FsFile {
    file: File,
    /// The `O_DIRECT` descriptor, once a bulk write asked for it (`None`:
    /// direct I/O is not available for this file).
    direct: OnceLock<Option<File>>,
    /// Set when a direct write was refused as invalid: later bulk writes
    /// go straight to the ordinary descriptor.
    direct_refused: AtomicBool,
}

impl FsFile {
    fn new(file: File) -> FsFile {
        FsFile {
            file,
            direct: OnceLock::new(),
            direct_refused: AtomicBool::new(false),
        }
    }

    fn direct(&self) -> Option<&File> {
        if self.direct_refused.load(Ordering::Relaxed) {
            return None;
        }
        self.direct
            .get_or_init(|| {
                let proc_path = format!("/proc/self/fd/{}", self.file.as_raw_fd());
                OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(proc_path)
                    .ok()
            })
            .as_ref()
    }

    /// Writes what it can of `buf` directly; returns the bytes written
    /// (0: nothing, the caller writes the rest the ordinary way).
    fn write_direct(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let aligned = |n: usize| n.is_multiple_of(DIRECT_ALIGN);
        if !aligned(buf.as_ptr() as usize)
            || !aligned(buf.len())
            || !offset.is_multiple_of(DIRECT_ALIGN as u64)
        {
            return Ok(0);
        }
        let Some(direct) = self.direct() else {
            return Ok(0);
        };
        let mut done = 0;
        while done < buf.len() {
            match direct.write_at(&buf[done..], offset + done as u64) {
                // A short direct write leaves the rest at an offset that
                // may not be aligned: the ordinary path finishes it.
                Ok(n) if n > 0 && aligned(n) => done += n,
                Ok(n) => return Ok(done + n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    self.direct_refused.store(true, Ordering::Relaxed);
                    return Ok(done);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

impl FileHandle for FsFile {
    fn identity(&self) -> Option<super::FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let m = self.file.metadata().ok()?;
        Some(super::FileIdentity(m.dev(), m.ino()))
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.file.write_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        crate::waits::FILE_SYNC.time(|| self.file.sync_data())
    }
    fn sync_fs(&self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        crate::waits::FS_SYNC.time(|| {
            // SAFETY: the descriptor is open for as long as `self` lives.
            if unsafe { libc::syncfs(self.file.as_raw_fd()) } == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        })
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
    fn write_bulk_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let done = self.write_direct(buf, offset)?;
        self.file.write_all_at(&buf[done..], offset + done as u64)
    }
}

impl Backend for FsBackend {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn FileHandle>> {
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        match mode {
            OpenMode::Existing => {}
            OpenMode::CreateOrOpen => {
                o.create(true);
            }
            OpenMode::CreateNew => {
                o.create_new(true);
            }
        }
        Ok(Arc::new(FsFile::new(o.open(path)?)))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut v = fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<io::Result<Vec<_>>>()?;
        v.sort();
        Ok(v)
    }
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        File::open(dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{read_exact_at, write_all_at, AlignedBuf};

    fn pattern(len: usize, seed: u8) -> AlignedBuf {
        let mut b = AlignedBuf::zeroed(len);
        for (i, x) in b.iter_mut().enumerate() {
            *x = (i as u8).wrapping_mul(31).wrapping_add(seed);
        }
        b
    }

    #[test]
    fn every_sync_is_counted_and_timed() {
        let (_dir, f) = fresh_file();
        let before = crate::waits::FILE_SYNC.stats().count;
        f.write_at(b"x", 0).unwrap();
        f.sync_data().unwrap();
        f.sync_data().unwrap();
        // Other tests of this process sync too: at least ours were counted.
        assert!(crate::waits::FILE_SYNC.stats().count >= before + 2);
    }

    fn fresh_file() -> (tempfile::TempDir, Arc<dyn FileHandle>) {
        let dir = tempfile::tempdir().unwrap();
        let f = FsBackend
            .open(&dir.path().join("f"), OpenMode::CreateNew)
            .unwrap();
        (dir, f)
    }

    fn read(f: &dyn FileHandle, len: usize, offset: u64) -> Vec<u8> {
        let mut v = vec![0u8; len];
        read_exact_at(f, &mut v, offset).unwrap();
        v
    }

    #[test]
    fn bulk_writes_read_back_aligned_or_not() {
        let (_dir, f) = fresh_file();
        // Aligned, past the end of the file (extends it).
        let a = pattern(64 << 10, 1);
        f.write_bulk_at(&a, 1 << 20).unwrap();
        assert_eq!(f.len().unwrap(), (1 << 20) + (64 << 10));
        assert_eq!(read(f.as_ref(), a.len(), 1 << 20), &a[..]);
        // Misaligned address, length and offset: still written.
        let b = pattern(10_001, 2);
        f.write_bulk_at(&b[1..], 12_345).unwrap();
        assert_eq!(read(f.as_ref(), 10_000, 12_345), &b[1..]);
        f.sync_data().unwrap();
    }

    #[test]
    fn bulk_writes_replace_what_ordinary_writes_cached() {
        let (_dir, f) = fresh_file();
        write_all_at(f.as_ref(), &[9u8; 16 << 10], 0).unwrap();
        assert_eq!(read(f.as_ref(), 16 << 10, 0), vec![9u8; 16 << 10]);
        let b = pattern(8 << 10, 3);
        f.write_bulk_at(&b, 4096).unwrap();
        let all = read(f.as_ref(), 16 << 10, 0);
        assert_eq!(&all[..4096], &[9u8; 4096][..]);
        assert_eq!(&all[4096..12288], &b[..]);
        assert_eq!(&all[12288..], &[9u8; 4096][..]);
    }

    #[test]
    fn bulk_writes_follow_the_open_file_across_a_rename() {
        let dir = tempfile::tempdir().unwrap();
        let (path, moved) = (dir.path().join("f"), dir.path().join("g"));
        let f = FsBackend.open(&path, OpenMode::CreateNew).unwrap();
        FsBackend.rename(&path, &moved).unwrap();
        let other = FsBackend.open(&path, OpenMode::CreateNew).unwrap();
        let b = pattern(8 << 10, 4);
        f.write_bulk_at(&b, 0).unwrap();
        assert_eq!(other.len().unwrap(), 0);
        let g = FsBackend.open(&moved, OpenMode::Existing).unwrap();
        assert_eq!(read(g.as_ref(), 8 << 10, 0), &b[..]);
    }
}
