//! Helpers shared by the scenarios: a small log configuration, fake
//! database files of sealed pages, a model of what each page must contain
//! after redo, the documented LSN → (extent, offset) arithmetic, and the
//! fault-injecting backend.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use storage::backend::{read_exact_at, write_all_at, FaultBackend, MemBackend};
use storage::page::{apply_delta, DeltaRange};
use storage::{Backend, Lsn, OpenMode, PageBuf, PageId, PageKind};
use translog::{Appended, Batch, LogConfig, PageChange, RecoveryReport, TransLog};

pub const DATA: &str = "/data";
pub const LOG: &str = "/log";
pub const EXT: u64 = 64 * 1024;
/// Log stream bytes per extent (extent size minus its 4096-byte header).
pub const P: u64 = EXT - 4096;

pub fn cfg(extents: u64) -> LogConfig {
    LogConfig {
        extent_size: EXT,
        max_size: extents * EXT,
        full_wait: Duration::from_millis(100),
        ..LogConfig::new(LOG)
    }
}

pub fn mem() -> MemBackend {
    let m = MemBackend::new();
    m.create_dir_all(Path::new(DATA)).unwrap();
    m
}

pub fn open_with(backend: Arc<dyn Backend>, cfg: LogConfig) -> (Arc<TransLog>, RecoveryReport) {
    TransLog::open(backend, Path::new(DATA), cfg).expect("open")
}

pub fn open(mem: &MemBackend, cfg: LogConfig) -> (Arc<TransLog>, RecoveryReport) {
    open_with(Arc::new(mem.clone()), cfg)
}

/// The extent file and offset of an LSN, per the documented layout.
pub fn locate(dir: &Path, lsn: Lsn) -> (PathBuf, usize) {
    let seq = lsn.0 / P;
    (
        dir.join(format!("ext-{seq:016x}.log")),
        (4096 + lsn.0 % P) as usize,
    )
}

pub fn extent_files(backend: &dyn Backend, dir: &Path) -> Vec<PathBuf> {
    let all = backend.read_dir(dir).unwrap();
    all.into_iter()
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("ext-"))
        .collect()
}

/// An unsealed page of `kind` whose body is `fill`.
pub fn image(fill: u8) -> PageBuf {
    let mut p = PageBuf::new(PageKind::BTreeLeaf);
    p.body_mut().fill(fill);
    p
}

/// An image change of [`image`]: its header's zero run makes it a
/// PageSparse record (I46).
pub fn img(fill: u8) -> PageChange {
    PageChange::Image(image(fill))
}

/// An image change of a page with no zero byte at all, header included,
/// so it is written as a plain PageImage record.
pub fn full_img(fill: u8) -> PageChange {
    let mut p = PageBuf::zeroed();
    p.bytes_mut().fill(fill);
    p.set_kind(PageKind::BTreeLeaf);
    PageChange::Image(p)
}

pub fn delta(offset: u16, bytes: &[u8]) -> PageChange {
    PageChange::Delta(vec![DeltaRange {
        offset,
        bytes: bytes.to_vec(),
    }])
}

pub fn batch(path: &str, pages: Vec<(u32, PageChange)>) -> Batch {
    Batch {
        db_iid: 7,
        db_path: path.into(),
        pages: pages.into_iter().map(|(id, c)| (PageId(id), c)).collect(),
        time_micros: 1,
    }
}

/// What every page of the fake databases must contain: changes applied
/// exactly as redo applies them.
#[derive(Clone, Default)]
pub struct Model {
    pages: BTreeMap<(String, u32), PageBuf>,
}

impl Model {
    /// Creates a database file of `pages` sealed pages (LSN 0) and records
    /// them.
    pub fn create_db(&mut self, backend: &dyn Backend, path: &str, pages: u32) {
        let full = Path::new(DATA).join(path);
        backend.create_dir_all(full.parent().unwrap()).unwrap();
        let f = backend.open(&full, OpenMode::CreateNew).unwrap();
        for id in 0..pages {
            let mut p = image(id as u8);
            p.seal(PageId(id), Lsn(0));
            write_all_at(f.as_ref(), p.bytes(), PageId(id).offset()).unwrap();
            self.pages.insert((path.into(), id), p);
        }
        f.sync_data().unwrap();
    }

    pub fn apply(&mut self, b: &Batch, a: &Appended) {
        for ((id, change), lsn) in b.pages.iter().zip(&a.page_lsns) {
            let key = (b.db_path.clone(), id.0);
            let mut page = match change {
                PageChange::Image(img) => img.clone(),
                PageChange::Delta(ranges) => {
                    let mut p = self.pages[&key].clone();
                    apply_delta(&mut p, ranges).unwrap();
                    p
                }
            };
            page.seal(*id, *lsn);
            self.pages.insert(key, page);
        }
    }

    /// Writes the model's pages of `path` to its file (an engine flush).
    pub fn flush(&self, backend: &dyn Backend, path: &str) {
        let f = backend
            .open(&Path::new(DATA).join(path), OpenMode::Existing)
            .unwrap();
        for ((p, id), page) in &self.pages {
            if p == path {
                write_all_at(f.as_ref(), page.bytes(), PageId(*id).offset()).unwrap();
            }
        }
        f.sync_data().unwrap();
    }

    /// Every page of every database equals the model and verifies.
    pub fn check(&self, backend: &dyn Backend) {
        self.check_where(backend, |_, _| true);
    }

    /// Every page of database `db` equals the model and verifies.
    pub fn check_db(&self, backend: &dyn Backend, db: &str) {
        self.check_where(backend, |p, _| p == db);
    }

    /// One page equals the model and verifies.
    pub fn check_page(&self, backend: &dyn Backend, db: &str, page: u32) {
        self.check_where(backend, |p, id| p == db && id == page);
    }

    fn check_where(&self, backend: &dyn Backend, wanted: impl Fn(&str, u32) -> bool) {
        for ((path, id), want) in self.pages.iter().filter(|((p, id), _)| wanted(p, *id)) {
            let got = read_page(backend, path, *id);
            got.verify(path, PageId(*id)).unwrap();
            assert!(got == *want, "{path} page {id}: got {got:?}, want {want:?}");
        }
    }
}

pub fn read_page(backend: &dyn Backend, path: &str, id: u32) -> PageBuf {
    let f = backend
        .open(&Path::new(DATA).join(path), OpenMode::Existing)
        .unwrap();
    let mut p = PageBuf::zeroed();
    read_exact_at(f.as_ref(), p.bytes_mut(), PageId(id).offset()).unwrap();
    p
}

/// Appends and waits until durable, recording the batch in the model.
pub fn commit(log: &TransLog, model: &mut Model, b: Batch) -> Appended {
    let a = log.append(&b).unwrap();
    log.wait_durable(a.end_lsn).unwrap();
    model.apply(&b, &a);
    a
}

/// A `FaultBackend` over `mem`, for the scenarios that fail, tear or slow
/// down the log's writes and syncs.
pub fn faulty(mem: &MemBackend) -> Arc<FaultBackend> {
    Arc::new(FaultBackend::new(Arc::new(mem.clone())))
}
