//! The real file system. Thin: positional I/O via `FileExt`, `fdatasync` via
//! `File::sync_data`, directory sync by opening the directory and fsyncing it.

use super::{Backend, FileHandle, OpenMode};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Production backend over `std::fs`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FsBackend;

struct FsFile(File);

impl FileHandle for FsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.0.write_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
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
        Ok(Arc::new(FsFile(o.open(path)?)))
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
