//! An in-memory file system: fast, deterministic, and the base the fault and
//! crash backends build on. Every write is immediately "durable" here; the
//! crash backend is the one that models what a power cut loses.

use super::{Backend, FileHandle, OpenMode};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) type Bytes = Arc<RwLock<Vec<u8>>>;

#[derive(Default)]
pub(crate) struct MemFs {
    pub(crate) files: BTreeMap<PathBuf, Bytes>,
    pub(crate) dirs: BTreeSet<PathBuf>,
}

/// In-memory backend. Cloning shares the same file system.
#[derive(Clone, Default)]
pub struct MemBackend {
    pub(crate) fs: Arc<Mutex<MemFs>>,
}

struct MemFile(Bytes);

impl FileHandle for MemFile {
    fn identity(&self) -> Option<super::FileIdentity> {
        // The shared contents are the file: their address is its identity.
        Some(super::FileIdentity(0, Arc::as_ptr(&self.0) as u64))
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let data = self.0.read();
        let off = offset as usize;
        if off >= data.len() {
            return Ok(0);
        }
        let n = buf.len().min(data.len() - off);
        buf[..n].copy_from_slice(&data[off..off + n]);
        Ok(n)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let mut data = self.0.write();
        let end = offset as usize + buf.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[offset as usize..end].copy_from_slice(buf);
        Ok(buf.len())
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
    fn sync_fs(&self) -> io::Result<()> {
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.read().len() as u64)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.write().resize(len as usize, 0);
        Ok(())
    }
}

pub(crate) fn not_found(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", p.display()),
    )
}

impl MemBackend {
    pub fn new() -> Self {
        Self::default()
    }

    /// A deep copy of every file's current bytes.
    pub fn snapshot(&self) -> MemBackend {
        let fs = self.fs.lock();
        let files = fs
            .files
            .iter()
            .map(|(k, v)| (k.clone(), Arc::new(RwLock::new(v.read().clone()))))
            .collect();
        MemBackend {
            fs: Arc::new(Mutex::new(MemFs {
                files,
                dirs: fs.dirs.clone(),
            })),
        }
    }

    /// A backend holding exactly `files` and `dirs`: how the crash backend
    /// hands over the state a power cut left behind.
    pub(crate) fn from_parts(files: BTreeMap<PathBuf, Vec<u8>>, dirs: BTreeSet<PathBuf>) -> Self {
        let files = files
            .into_iter()
            .map(|(path, bytes)| (path, Arc::new(RwLock::new(bytes))))
            .collect();
        MemBackend {
            fs: Arc::new(Mutex::new(MemFs { files, dirs })),
        }
    }

    /// The current bytes of a file, if it exists.
    pub fn file_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        self.fs.lock().files.get(path).map(|b| b.read().clone())
    }

    /// Replaces a file's bytes (used to plant corruption in tests).
    pub fn set_file_bytes(&self, path: &Path, bytes: Vec<u8>) {
        self.fs
            .lock()
            .files
            .insert(path.to_path_buf(), Arc::new(RwLock::new(bytes)));
    }
}

impl Backend for MemBackend {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn FileHandle>> {
        let mut fs = self.fs.lock();
        let parent = path.parent().unwrap_or(Path::new(""));
        if !parent.as_os_str().is_empty() && !fs.dirs.contains(parent) {
            return Err(not_found(parent));
        }
        match (fs.files.get(path), mode) {
            (Some(_), OpenMode::CreateNew) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: already exists", path.display()),
            )),
            (Some(b), _) => Ok(Arc::new(MemFile(b.clone()))),
            (None, OpenMode::Existing) => Err(not_found(path)),
            (None, _) => {
                let b: Bytes = Arc::default();
                fs.files.insert(path.to_path_buf(), b.clone());
                Ok(Arc::new(MemFile(b)))
            }
        }
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.fs
            .lock()
            .files
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        let b = fs.files.remove(from).ok_or_else(|| not_found(from))?;
        fs.files.insert(to.to_path_buf(), b);
        Ok(())
    }
    fn exists(&self, path: &Path) -> bool {
        let fs = self.fs.lock();
        fs.files.contains_key(path) || fs.dirs.contains(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        for a in path.ancestors() {
            if !a.as_os_str().is_empty() {
                fs.dirs.insert(a.to_path_buf());
            }
        }
        Ok(())
    }
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let fs = self.fs.lock();
        if !fs.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let mut v: Vec<PathBuf> = fs
            .files
            .keys()
            .chain(fs.dirs.iter())
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        Ok(v)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.fs.lock().dirs.contains(path)
    }
    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
}
