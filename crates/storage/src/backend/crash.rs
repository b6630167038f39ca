//! An in-memory file system that knows what a power cut would lose.
//!
//! Crash safety is a claim about orderings: data written before an fsync
//! survives, data written after it may or may not, and a new directory
//! entry survives only once its directory was fsynced. A real disk only
//! shows a bug in those orderings on the rare run where the power fails in
//! the wrong microsecond; this backend shows it on every run, at a chosen
//! sync point, under a chosen loss model.
//!
//! Per file ("inode") it keeps three things:
//!
//! ```text
//!   durable ──(unsynced change 1)──(change 2)── … ──▶ current
//!   as of the last sync_data       in order           what reads see
//! ```
//!
//! and per file system the namespace twice: `live` (what the process sees)
//! and `durable` (as of the directory syncs), with the pending directory
//! operations (create, rename, remove) in between, in order. Crash images
//! replay some subset of the pending items over the durable state:
//!
//! - [`CrashMode::DropUnsynced`] replays nothing: the strictest model.
//! - [`CrashMode::KeepUnsynced`] replays everything, like `kill -9` of the
//!   process: the kernel's page cache survives.
//! - [`CrashMode::Torn`] decides each item with a seeded RNG: a write is
//!   lost, kept, or torn at 512-byte sector granularity (sectors aligned to
//!   file offsets, as on the device); a directory operation is kept or lost,
//!   but never kept after an earlier operation on one of its paths was lost.
//!
//! Why it is built this way:
//! - `sync_fs` makes every inode's bytes durable at once, open or closed
//!   (Linux `syncfs`), and is one sync point.
//! - As on Linux, `sync_data` makes a file's bytes durable but not its
//!   name: a created or renamed file may vanish until `sync_dir` of its
//!   parent directory (for a rename across directories, of either one — a
//!   rename is one journal transaction). Directories themselves
//!   (`create_dir_all`) are durable at once; the engine creates them only
//!   at setup.
//! - Directory operations name the inode they act on, so replaying any
//!   subset of them in order yields a consistent namespace, and handles
//!   refer to inodes, so writes through a handle to a renamed or removed
//!   file behave as on a real file system.
//! - An armed crash is taken inside the sync call it is armed for, under
//!   the same lock as every other operation, so the image is exactly the
//!   state just before that sync. From then on every mutating call fails
//!   with `EIO` (reads keep working), so the workload stops as it would on
//!   a dead disk and the harness can compare the image with what the
//!   workload had acknowledged.
//! - Everything sits behind one mutex: this is a test model, and a single
//!   lock makes every operation atomic with respect to the crash.

use super::mem::not_found;
use super::{Backend, FileHandle, MemBackend, OpenMode};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The unit a disk writes atomically: a torn write keeps or loses whole
/// sectors.
const SECTOR: usize = 512;

/// The largest file the model holds. A write or `set_len` beyond it fails
/// with `EFBIG` instead of exhausting memory on a wild offset.
const MAX_FILE_LEN: u64 = 1 << 32;

/// What a crash keeps of the state not yet made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced write and unsynced directory operation is lost.
    DropUnsynced,
    /// Everything done survives, as after `kill -9` of the process.
    KeepUnsynced,
    /// Each unsynced write is independently lost, kept or torn (a random
    /// subset of its sectors applied); each pending directory operation is
    /// kept or lost, in order per path. Deterministic for a given seed.
    Torn { seed: u64 },
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

/// `offset` as an index, if `len` bytes there keep the file within
/// [`MAX_FILE_LEN`].
fn checked_offset(offset: u64, len: usize) -> io::Result<usize> {
    offset
        .checked_add(len as u64)
        .filter(|&end| end <= MAX_FILE_LEN)
        .and_then(|_| usize::try_from(offset).ok())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EFBIG))
}

/// Writes `bytes` at `offset`, zero-filling any gap past the end. Offsets
/// are validated by [`checked_offset`] before a change is recorded.
fn write_into(data: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let end = offset + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset..end].copy_from_slice(bytes);
}

/// Splits a write at `offset` into pieces that each lie in one sector.
fn sector_pieces(offset: usize, bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let head_len = (SECTOR - offset % SECTOR).min(bytes.len());
    let (head, tail) = bytes.split_at(head_len);
    let tail_start = offset + head_len;
    std::iter::once((offset, head)).chain(
        tail.chunks(SECTOR)
            .enumerate()
            .map(move |(i, piece)| (tail_start + i * SECTOR, piece)),
    )
}

/// One change to a file's bytes not yet made durable by `sync_data`.
enum Change {
    Write { offset: usize, bytes: Vec<u8> },
    SetLen(usize),
}

impl Change {
    fn apply(&self, data: &mut Vec<u8>) {
        match self {
            Change::Write { offset, bytes } => write_into(data, *offset, bytes),
            Change::SetLen(len) => data.resize(*len, 0),
        }
    }

    /// Applies a random subset of the change's sectors; a length change
    /// cannot tear, so it is applied or not.
    fn apply_torn(&self, data: &mut Vec<u8>, rng: &mut StdRng) {
        match self {
            Change::Write { offset, bytes } => {
                for (at, piece) in sector_pieces(*offset, bytes) {
                    if rng.gen_bool(0.5) {
                        write_into(data, at, piece);
                    }
                }
            }
            Change::SetLen(_) => {
                if rng.gen_bool(0.5) {
                    self.apply(data);
                }
            }
        }
    }
}

/// A file's contents, independent of the names it has.
#[derive(Default)]
struct Inode {
    /// What reads see: the page cache.
    current: Vec<u8>,
    /// As of the last `sync_data`.
    durable: Vec<u8>,
    /// Changes since, oldest first: `current` is `durable` with all of
    /// them applied.
    unsynced: Vec<Change>,
    /// Open handles: an unlinked inode lives while one is open.
    handles: usize,
}

impl Inode {
    fn record(&mut self, change: Change) {
        change.apply(&mut self.current);
        self.unsynced.push(change);
    }

    fn make_durable(&mut self) {
        for change in self.unsynced.drain(..) {
            change.apply(&mut self.durable);
        }
    }

    fn torn_image(&self, rng: &mut StdRng) -> Vec<u8> {
        let mut data = self.durable.clone();
        for change in &self.unsynced {
            match rng.gen_range(0..3) {
                0 => {}
                1 => change.apply(&mut data),
                _ => change.apply_torn(&mut data, rng),
            }
        }
        data
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct FileId(u64);

type Namespace = BTreeMap<PathBuf, FileId>;

fn parent_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

/// Removes `path` from `ns` if it still names inode `id`.
fn unlink(ns: &mut Namespace, path: &Path, id: FileId) {
    if ns.get(path) == Some(&id) {
        ns.remove(path);
    }
}

/// A directory operation not yet made durable by `sync_dir`.
enum DirOp {
    Create {
        path: PathBuf,
        id: FileId,
    },
    Remove {
        path: PathBuf,
        id: FileId,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
        id: FileId,
    },
}

impl DirOp {
    fn id(&self) -> FileId {
        match self {
            DirOp::Create { id, .. } | DirOp::Remove { id, .. } | DirOp::Rename { id, .. } => *id,
        }
    }

    fn paths(&self) -> Vec<&Path> {
        match self {
            DirOp::Create { path, .. } | DirOp::Remove { path, .. } => vec![path.as_path()],
            DirOp::Rename { from, to, .. } => vec![from.as_path(), to.as_path()],
        }
    }

    fn touches_dir(&self, dir: &Path) -> bool {
        self.paths().into_iter().any(|p| parent_of(p) == dir)
    }

    fn apply(&self, ns: &mut Namespace) {
        match self {
            DirOp::Create { path, id } => {
                ns.insert(path.clone(), *id);
            }
            DirOp::Remove { path, id } => unlink(ns, path, *id),
            DirOp::Rename { from, to, id } => {
                unlink(ns, from, *id);
                ns.insert(to.clone(), *id);
            }
        }
    }
}

/// The backend's lifecycle: a crash is armed at most once and is final.
#[derive(Default)]
enum Power {
    #[default]
    On,
    Armed {
        at: u64,
        mode: CrashMode,
    },
    Cut(MemBackend),
}

#[derive(Default)]
struct CrashFs {
    /// Directories, durable as soon as created.
    dirs: BTreeSet<PathBuf>,
    live: Namespace,
    durable: Namespace,
    /// Oldest first.
    pending: Vec<DirOp>,
    inodes: BTreeMap<FileId, Inode>,
    next_id: u64,
    sync_count: u64,
    power: Power,
}

impl CrashFs {
    fn ensure_running(&self) -> io::Result<()> {
        match self.power {
            Power::Cut(_) => Err(eio()),
            _ => Ok(()),
        }
    }

    /// Counts a sync point, cutting the power first if it is the armed one.
    fn sync_point(&mut self) -> io::Result<()> {
        self.sync_count += 1;
        if let Power::Armed { at, mode } = self.power {
            if at == self.sync_count {
                self.power = Power::Cut(self.image(mode));
            }
        }
        self.ensure_running()
    }

    fn inode(&self, id: FileId) -> io::Result<&Inode> {
        self.inodes
            .get(&id)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    fn inode_mut(&mut self, id: FileId) -> io::Result<&mut Inode> {
        self.inodes
            .get_mut(&id)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    fn require_parent(&self, path: &Path) -> io::Result<()> {
        let parent = parent_of(path);
        if parent.as_os_str().is_empty() || self.dirs.contains(parent) {
            Ok(())
        } else {
            Err(not_found(parent))
        }
    }

    fn create(&mut self, path: &Path) -> FileId {
        let id = FileId(self.next_id);
        self.next_id += 1;
        self.inodes.insert(id, Inode::default());
        self.live.insert(path.to_path_buf(), id);
        self.pending.push(DirOp::Create {
            path: path.to_path_buf(),
            id,
        });
        id
    }

    /// Makes the pending operations in `dir` durable, keeping the order of
    /// the others.
    fn sync_dir(&mut self, dir: &Path) {
        let (now, later): (Vec<DirOp>, Vec<DirOp>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|op| op.touches_dir(dir));
        for op in &now {
            op.apply(&mut self.durable);
        }
        self.pending = later;
    }

    /// Frees inodes no name, pending operation or open handle refers to.
    fn collect_garbage(&mut self) {
        let referenced: BTreeSet<FileId> = self
            .live
            .values()
            .chain(self.durable.values())
            .copied()
            .chain(self.pending.iter().map(DirOp::id))
            .collect();
        self.inodes
            .retain(|id, inode| inode.handles > 0 || referenced.contains(id));
    }

    /// The file system a power cut now would leave, under `mode`.
    fn image(&self, mode: CrashMode) -> MemBackend {
        let files = match mode {
            CrashMode::DropUnsynced => self.files_of(&self.durable, |inode| inode.durable.clone()),
            CrashMode::KeepUnsynced => self.files_of(&self.live, |inode| inode.current.clone()),
            CrashMode::Torn { seed } => {
                let mut rng = StdRng::seed_from_u64(seed);
                let ns = self.torn_namespace(&mut rng);
                self.files_of(&ns, |inode| inode.torn_image(&mut rng))
            }
        };
        MemBackend::from_parts(files, self.dirs.clone())
    }

    fn files_of(
        &self,
        ns: &Namespace,
        mut bytes: impl FnMut(&Inode) -> Vec<u8>,
    ) -> BTreeMap<PathBuf, Vec<u8>> {
        ns.iter()
            .filter_map(|(path, id)| Some((path.clone(), bytes(self.inodes.get(id)?))))
            .collect()
    }

    /// The durable namespace with a random, per-path ordered subset of the
    /// pending operations replayed.
    fn torn_namespace(&self, rng: &mut StdRng) -> Namespace {
        let mut ns = self.durable.clone();
        let mut lost: BTreeSet<&Path> = BTreeSet::new();
        for op in &self.pending {
            let paths = op.paths();
            if paths.iter().all(|p| !lost.contains(p)) && rng.gen_bool(0.5) {
                op.apply(&mut ns);
            } else {
                lost.extend(paths);
            }
        }
        ns
    }
}

/// Simulates the durability rules of a Linux file system in memory; see
/// the module documentation.
#[derive(Default)]
pub struct CrashBackend {
    fs: Arc<Mutex<CrashFs>>,
}

impl CrashBackend {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many `sync_data` and `sync_dir` calls ("sync points") were made
    /// so far, failed ones included; sync point `n` is the `n`th call.
    pub fn sync_count(&self) -> u64 {
        self.fs.lock().sync_count
    }

    /// Arms a crash at sync point `at`: when that sync is about to take
    /// effect, the image a power cut would leave (under `mode`) is taken,
    /// and that sync and every later mutating call (writes, `set_len`,
    /// syncs, directory operations, opens that may create) fail with `EIO`.
    /// Reads keep working. Replaces an earlier arming; a sync point already
    /// passed never fires; after a crash it does nothing.
    pub fn arm_crash(&self, at: u64, mode: CrashMode) {
        let mut fs = self.fs.lock();
        if !matches!(fs.power, Power::Cut(_)) {
            fs.power = Power::Armed { at, mode };
        }
    }

    pub fn has_crashed(&self) -> bool {
        matches!(self.fs.lock().power, Power::Cut(_))
    }

    /// The image taken by the armed crash, if it happened: a fresh,
    /// independent copy on every call, so recovery can be run more than
    /// once on the same image.
    pub fn crashed_image(&self) -> Option<MemBackend> {
        match &self.fs.lock().power {
            Power::Cut(image) => Some(image.snapshot()),
            _ => None,
        }
    }

    /// The image a power cut at this instant would leave. The backend
    /// itself carries on unaffected.
    pub fn crash_now(&self, mode: CrashMode) -> MemBackend {
        self.fs.lock().image(mode)
    }
}

/// A handle: names an inode, so it follows renames and outlives removal.
struct CrashFile {
    fs: Arc<Mutex<CrashFs>>,
    id: FileId,
}

impl FileHandle for CrashFile {
    fn identity(&self) -> Option<super::FileIdentity> {
        Some(super::FileIdentity(0, self.id.0))
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let fs = self.fs.lock();
        let data = &fs.inode(self.id)?.current;
        let start = match usize::try_from(offset) {
            Ok(start) if start < data.len() => start,
            _ => return Ok(0),
        };
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let mut fs = self.fs.lock();
        fs.ensure_running()?;
        let offset = checked_offset(offset, buf.len())?;
        if !buf.is_empty() {
            let bytes = buf.to_vec();
            fs.inode_mut(self.id)?
                .record(Change::Write { offset, bytes });
        }
        Ok(buf.len())
    }
    fn sync_data(&self) -> io::Result<()> {
        let mut fs = self.fs.lock();
        fs.sync_point()?;
        fs.inode_mut(self.id)?.make_durable();
        Ok(())
    }
    fn sync_fs(&self) -> io::Result<()> {
        // One sync point, like `sync_data`: an armed crash inside it keeps
        // none of the writes it would have made durable.
        let mut fs = self.fs.lock();
        fs.sync_point()?;
        for inode in fs.inodes.values_mut() {
            inode.make_durable();
        }
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.fs.lock().inode(self.id)?.current.len() as u64)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut fs = self.fs.lock();
        fs.ensure_running()?;
        let len = checked_offset(len, 0)?;
        fs.inode_mut(self.id)?.record(Change::SetLen(len));
        Ok(())
    }
}

impl Drop for CrashFile {
    fn drop(&mut self) {
        let mut fs = self.fs.lock();
        if let Some(inode) = fs.inodes.get_mut(&self.id) {
            inode.handles = inode.handles.saturating_sub(1);
        }
        fs.collect_garbage();
    }
}

impl Backend for CrashBackend {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn FileHandle>> {
        let mut fs = self.fs.lock();
        if mode != OpenMode::Existing {
            fs.ensure_running()?;
        }
        fs.require_parent(path)?;
        let id = match (fs.live.get(path).copied(), mode) {
            (Some(_), OpenMode::CreateNew) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{}: already exists", path.display()),
                ))
            }
            (Some(id), _) => id,
            (None, OpenMode::Existing) => return Err(not_found(path)),
            (None, _) => fs.create(path),
        };
        fs.inode_mut(id)?.handles += 1;
        Ok(Arc::new(CrashFile {
            fs: self.fs.clone(),
            id,
        }))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        fs.ensure_running()?;
        let id = fs.live.remove(path).ok_or_else(|| not_found(path))?;
        let path = path.to_path_buf();
        fs.pending.push(DirOp::Remove { path, id });
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        fs.ensure_running()?;
        fs.require_parent(to)?;
        let id = fs.live.remove(from).ok_or_else(|| not_found(from))?;
        fs.live.insert(to.to_path_buf(), id);
        let (from, to) = (from.to_path_buf(), to.to_path_buf());
        fs.pending.push(DirOp::Rename { from, to, id });
        Ok(())
    }
    fn exists(&self, path: &Path) -> bool {
        let fs = self.fs.lock();
        fs.live.contains_key(path) || fs.dirs.contains(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        fs.ensure_running()?;
        for dir in path.ancestors().filter(|a| !a.as_os_str().is_empty()) {
            fs.dirs.insert(dir.to_path_buf());
        }
        Ok(())
    }
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let fs = self.fs.lock();
        if !fs.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let mut entries: Vec<PathBuf> = fs
            .live
            .keys()
            .chain(fs.dirs.iter())
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect();
        entries.sort();
        entries.dedup();
        Ok(entries)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.fs.lock().dirs.contains(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        fs.sync_point()?;
        if !dir.as_os_str().is_empty() && !fs.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        fs.sync_dir(dir);
        fs.collect_garbage();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{read_file, write_all_at};

    const MODES: [CrashMode; 4] = [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::Torn { seed: 1 },
        CrashMode::Torn { seed: 2 },
    ];

    fn p(s: &str) -> &Path {
        Path::new(s)
    }

    fn setup() -> CrashBackend {
        let b = CrashBackend::new();
        b.create_dir_all(p("d")).unwrap();
        b
    }

    fn create(b: &CrashBackend, path: &str) -> Arc<dyn FileHandle> {
        b.open(p(path), OpenMode::CreateNew).unwrap()
    }

    /// Creates `path` holding `data`, file and directory entry both synced.
    fn create_synced(b: &CrashBackend, path: &str, data: &[u8]) -> Arc<dyn FileHandle> {
        let f = create(b, path);
        write_all_at(f.as_ref(), data, 0).unwrap();
        f.sync_data().unwrap();
        b.sync_dir(parent_of(p(path))).unwrap();
        f
    }

    fn bytes(image: &MemBackend, path: &str) -> Option<Vec<u8>> {
        image.file_bytes(p(path))
    }

    fn is_eio<T>(r: io::Result<T>) -> bool {
        r.err().and_then(|e| e.raw_os_error()) == Some(libc::EIO)
    }

    #[test]
    fn reads_see_unsynced_writes() {
        let b = setup();
        let f = create(&b, "d/a");
        f.write_at(b"hello", 0).unwrap();
        assert_eq!(read_file(&b, p("d/a")).unwrap(), b"hello");
        assert_eq!(f.len().unwrap(), 5);
    }

    #[test]
    fn drop_unsynced_loses_exactly_the_unsynced_writes() {
        let b = setup();
        let f = create_synced(&b, "d/a", &[1; 1024]);
        f.write_at(&[2; 512], 0).unwrap();
        f.sync_data().unwrap();
        f.write_at(&[3; 512], 512).unwrap();
        f.write_at(&[4; 100], 1024).unwrap();
        let expected = [[2u8; 512], [1; 512]].concat();
        assert_eq!(
            bytes(&b.crash_now(CrashMode::DropUnsynced), "d/a"),
            Some(expected)
        );
    }

    /// `sync_fs` through any handle makes every file's writes durable,
    /// those of a file already closed too, and is a sync point.
    #[test]
    fn sync_fs_makes_every_file_durable_closed_ones_too() {
        let b = setup();
        let anchor = create_synced(&b, "d/anchor", b"a");
        let f = create_synced(&b, "d/f", &[1; 512]);
        f.write_at(&[2; 512], 0).unwrap();
        drop(f);
        let g = create_synced(&b, "d/g", &[1; 512]);
        g.write_at(&[3; 512], 0).unwrap();
        let before = b.sync_count();
        anchor.sync_fs().unwrap();
        assert_eq!(b.sync_count(), before + 1);
        g.write_at(&[4; 512], 0).unwrap();
        let image = b.crash_now(CrashMode::DropUnsynced);
        assert_eq!(bytes(&image, "d/f"), Some(vec![2; 512]));
        assert_eq!(
            bytes(&image, "d/g"),
            Some(vec![3; 512]),
            "the write after the sync is lost"
        );
    }

    #[test]
    fn keep_unsynced_keeps_writes_and_directory_operations() {
        let b = setup();
        let f = create_synced(&b, "d/a", b"old");
        f.write_at(b"new!", 0).unwrap();
        create(&b, "d/b").write_at(b"b", 0).unwrap();
        b.rename(p("d/b"), p("d/c")).unwrap();
        create_synced(&b, "d/gone", b"x");
        b.remove_file(p("d/gone")).unwrap();
        let image = b.crash_now(CrashMode::KeepUnsynced);
        assert_eq!(image.read_dir(p("d")).unwrap(), vec![p("d/a"), p("d/c")]);
        assert_eq!(bytes(&image, "d/a").unwrap(), b"new!");
        assert_eq!(bytes(&image, "d/c").unwrap(), b"b");
    }

    #[test]
    fn set_len_is_unsynced_until_sync_data() {
        let b = setup();
        let f = create_synced(&b, "d/a", &[7; 1000]);
        f.set_len(10).unwrap();
        assert_eq!(f.len().unwrap(), 10);
        assert_eq!(
            bytes(&b.crash_now(CrashMode::DropUnsynced), "d/a")
                .unwrap()
                .len(),
            1000
        );
        assert_eq!(
            bytes(&b.crash_now(CrashMode::KeepUnsynced), "d/a")
                .unwrap()
                .len(),
            10
        );
        f.sync_data().unwrap();
        assert_eq!(
            bytes(&b.crash_now(CrashMode::DropUnsynced), "d/a").unwrap(),
            [7; 10]
        );
    }

    #[test]
    fn unsynced_creation_disappears_until_sync_dir_of_its_parent() {
        let b = setup();
        b.create_dir_all(p("e")).unwrap();
        let f = create(&b, "d/new");
        f.write_at(b"data", 0).unwrap();
        f.sync_data().unwrap();
        b.sync_dir(p("e")).unwrap();
        let image = b.crash_now(CrashMode::DropUnsynced);
        assert_eq!(bytes(&image, "d/new"), None);
        assert!(image.is_dir(p("d")) && image.is_dir(p("e")));
        b.sync_dir(p("d")).unwrap();
        let image = b.crash_now(CrashMode::DropUnsynced);
        assert_eq!(bytes(&image, "d/new").unwrap(), b"data");
    }

    #[test]
    fn rename_stays_pending_until_sync_dir() {
        let b = setup();
        create_synced(&b, "d/ctl", b"old");
        let tmp = create(&b, "d/ctl.tmp");
        tmp.write_at(b"new", 0).unwrap();
        tmp.sync_data().unwrap();
        b.rename(p("d/ctl.tmp"), p("d/ctl")).unwrap();
        let image = b.crash_now(CrashMode::DropUnsynced);
        assert_eq!(image.read_dir(p("d")).unwrap(), vec![p("d/ctl")]);
        assert_eq!(bytes(&image, "d/ctl").unwrap(), b"old");
        b.sync_dir(p("d")).unwrap();
        let image = b.crash_now(CrashMode::DropUnsynced);
        assert_eq!(image.read_dir(p("d")).unwrap(), vec![p("d/ctl")]);
        assert_eq!(bytes(&image, "d/ctl").unwrap(), b"new");
    }

    #[test]
    fn rename_across_directories_is_durable_after_syncing_either() {
        let b = setup();
        b.create_dir_all(p("e")).unwrap();
        create_synced(&b, "d/x", b"x");
        b.rename(p("d/x"), p("e/x")).unwrap();
        b.sync_dir(p("e")).unwrap();
        let image = b.crash_now(CrashMode::DropUnsynced);
        assert_eq!(bytes(&image, "d/x"), None);
        assert_eq!(bytes(&image, "e/x").unwrap(), b"x");
    }

    #[test]
    fn removal_stays_pending_until_sync_dir_and_open_handles_survive_it() {
        let b = setup();
        let f = create_synced(&b, "d/a", b"abc");
        b.remove_file(p("d/a")).unwrap();
        assert!(!b.exists(p("d/a")));
        f.write_at(b"z", 0).unwrap();
        let mut buf = [0; 3];
        assert_eq!(f.read_at(&mut buf, 0).unwrap(), 3);
        assert_eq!(&buf, b"zbc");
        assert_eq!(
            bytes(&b.crash_now(CrashMode::DropUnsynced), "d/a").unwrap(),
            b"abc"
        );
        b.sync_dir(p("d")).unwrap();
        assert_eq!(bytes(&b.crash_now(CrashMode::KeepUnsynced), "d/a"), None);
    }

    #[test]
    fn removed_files_are_freed_once_the_removal_is_durable_and_closed() {
        let b = setup();
        let f = create_synced(&b, "d/a", &[0; 4096]);
        b.remove_file(p("d/a")).unwrap();
        b.sync_dir(p("d")).unwrap();
        assert_eq!(b.fs.lock().inodes.len(), 1, "an open handle keeps it");
        drop(f);
        assert!(b.fs.lock().inodes.is_empty());
    }

    /// A synced file of 64 sectors of 0xAA, then one unsynced write of 0xBB
    /// over all of it.
    fn torn_write_image(seed: u64) -> Vec<u8> {
        let b = setup();
        let f = create_synced(&b, "d/a", &[0xAA; 64 * SECTOR]);
        f.write_at(&[0xBB; 64 * SECTOR], 0).unwrap();
        bytes(&b.crash_now(CrashMode::Torn { seed }), "d/a").unwrap()
    }

    #[test]
    fn torn_writes_keep_or_lose_whole_sectors_deterministically() {
        let mut mixed = 0;
        for seed in 0..32 {
            let image = torn_write_image(seed);
            assert_eq!(
                image,
                torn_write_image(seed),
                "seed {seed} not deterministic"
            );
            assert_eq!(image.len(), 64 * SECTOR);
            let new_sectors = image
                .chunks(SECTOR)
                .filter(|s| {
                    assert!(s.iter().all(|&x| x == s[0]), "torn inside a sector");
                    s[0] == 0xBB
                })
                .count();
            if new_sectors > 0 && new_sectors < 64 {
                mixed += 1;
            }
        }
        assert!(mixed > 0, "no seed tore the write");
    }

    #[test]
    fn torn_sectors_follow_file_offsets_not_write_offsets() {
        let pieces: Vec<(usize, usize)> = sector_pieces(500, &[0; 1100])
            .map(|(at, piece)| (at, piece.len()))
            .collect();
        assert_eq!(pieces, vec![(500, 12), (512, 512), (1024, 512), (1536, 64)]);
    }

    #[test]
    fn torn_directory_operations_stay_in_order_per_path() {
        let mut outcomes = BTreeSet::new();
        for seed in 0..64 {
            let b = setup();
            create_synced(&b, "d/x", b"old");
            b.rename(p("d/x"), p("d/y")).unwrap();
            let f = create(&b, "d/x");
            f.write_at(b"new", 0).unwrap();
            f.sync_data().unwrap();
            let image = b.crash_now(CrashMode::Torn { seed });
            let outcome = (bytes(&image, "d/x"), bytes(&image, "d/y"));
            // Keeping the re-creation of d/x after losing the rename that
            // freed the name would lose "old" altogether.
            assert_ne!(outcome, (Some(b"new".to_vec()), None), "seed {seed}");
            outcomes.insert(outcome);
        }
        let expected = BTreeSet::from([
            (Some(b"old".to_vec()), None),
            (None, Some(b"old".to_vec())),
            (Some(b"new".to_vec()), Some(b"old".to_vec())),
        ]);
        assert_eq!(outcomes, expected);
    }

    #[test]
    fn synced_data_survives_every_mode() {
        let b = setup();
        create_synced(&b, "d/a", &[1; 3000]);
        let f = create_synced(&b, "d/b", &[2; 3000]);
        f.write_at(&[3; 2000], 3000).unwrap();
        create(&b, "d/c").write_at(b"c", 0).unwrap();
        for mode in MODES
            .into_iter()
            .chain((3..20).map(|seed| CrashMode::Torn { seed }))
        {
            let image = b.crash_now(mode);
            assert_eq!(bytes(&image, "d/a").unwrap(), [1; 3000], "{mode:?}");
            assert_eq!(bytes(&image, "d/b").unwrap()[..3000], [2; 3000], "{mode:?}");
        }
    }

    #[test]
    fn sync_count_counts_file_and_directory_syncs() {
        let b = setup();
        let f = create(&b, "d/a");
        f.sync_data().unwrap();
        b.sync_dir(p("d")).unwrap();
        assert!(b.sync_dir(p("missing")).is_err());
        assert_eq!(b.sync_count(), 3);
    }

    /// Sync points: 1 and 2 in `create_synced`, then 3, 4.
    fn armed_workload(mode: CrashMode) -> (CrashBackend, Arc<dyn FileHandle>) {
        let b = setup();
        let f = create_synced(&b, "d/a", b"A");
        b.arm_crash(4, mode);
        f.write_at(b"B", 1).unwrap();
        f.sync_data().unwrap();
        f.write_at(b"C", 2).unwrap();
        assert!(!b.has_crashed());
        assert!(is_eio(f.sync_data()));
        assert!(b.has_crashed());
        (b, f)
    }

    #[test]
    fn armed_crash_freezes_the_state_before_that_sync() {
        let (b, _) = armed_workload(CrashMode::DropUnsynced);
        assert_eq!(bytes(&b.crashed_image().unwrap(), "d/a").unwrap(), b"AB");
        let (b, _) = armed_workload(CrashMode::KeepUnsynced);
        assert_eq!(bytes(&b.crashed_image().unwrap(), "d/a").unwrap(), b"ABC");
    }

    #[test]
    fn after_the_crash_mutations_fail_and_reads_work() {
        let (b, f) = armed_workload(CrashMode::DropUnsynced);
        assert!(is_eio(f.write_at(b"D", 3)));
        assert!(is_eio(f.set_len(0)));
        assert!(is_eio(f.sync_data()));
        assert!(is_eio(b.sync_dir(p("d"))));
        assert!(is_eio(b.rename(p("d/a"), p("d/b"))));
        assert!(is_eio(b.remove_file(p("d/a"))));
        assert!(is_eio(b.create_dir_all(p("e"))));
        assert!(is_eio(b.open(p("d/a"), OpenMode::CreateOrOpen)));
        assert!(is_eio(b.open(p("d/n"), OpenMode::CreateNew)));
        assert_eq!(read_file(&b, p("d/a")).unwrap(), b"ABC");
        assert_eq!(b.sync_count(), 6);
        assert_eq!(bytes(&b.crashed_image().unwrap(), "d/a").unwrap(), b"AB");
    }

    #[test]
    fn crashed_images_are_independent_copies() {
        let (b, _) = armed_workload(CrashMode::DropUnsynced);
        let first = b.crashed_image().unwrap();
        first.set_file_bytes(p("d/a"), b"changed".to_vec());
        assert_eq!(bytes(&b.crashed_image().unwrap(), "d/a").unwrap(), b"AB");
    }

    #[test]
    fn arming_a_passed_sync_point_never_fires() {
        let b = setup();
        let f = create_synced(&b, "d/a", b"A");
        b.arm_crash(1, CrashMode::DropUnsynced);
        f.sync_data().unwrap();
        assert!(!b.has_crashed());
        assert!(b.crashed_image().is_none());
    }

    #[test]
    fn crash_now_leaves_the_backend_running() {
        let b = setup();
        let f = create(&b, "d/a");
        b.crash_now(CrashMode::DropUnsynced);
        f.write_at(b"x", 0).unwrap();
        f.sync_data().unwrap();
        assert!(!b.has_crashed());
    }

    #[test]
    fn wild_offsets_are_errors() {
        let b = setup();
        let f = create(&b, "d/a");
        let efbig = |r: io::Result<_>| r.err().and_then(|e| e.raw_os_error()) == Some(libc::EFBIG);
        assert!(efbig(f.write_at(b"x", u64::MAX).map(drop)));
        assert!(efbig(f.write_at(b"x", MAX_FILE_LEN).map(drop)));
        assert!(efbig(f.set_len(MAX_FILE_LEN + 1)));
        assert_eq!(f.read_at(&mut [0; 4], u64::MAX).unwrap(), 0);
        assert_eq!(f.len().unwrap(), 0);
    }

    #[test]
    fn missing_parent_directories_are_not_found() {
        let b = setup();
        let kind = |r: io::Result<_>| r.err().map(|e: io::Error| e.kind());
        assert_eq!(
            kind(b.open(p("x/a"), OpenMode::CreateOrOpen).map(drop)),
            Some(io::ErrorKind::NotFound)
        );
        create(&b, "d/a");
        assert_eq!(
            kind(b.rename(p("d/a"), p("x/a"))),
            Some(io::ErrorKind::NotFound)
        );
        assert!(b.exists(p("d/a")));
    }
}
