//! Attachment content round trips at every size that meets a boundary of
//! the writer: empty, one byte, a page's worth of content (8,152 bytes),
//! a chunk's worth (128 pages), and just past each. Written through an
//! irregular reader, on the real file system (where bulk writes skip the
//! page cache) and in memory, with and without the write-back gate; read
//! back before and after the engine is reopened.

use nsf::{Engine, EngineConfig, Item, ItemValue};
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{FsBackend, MemBackend};
use storage::Backend;
use translog::LogConfig;

const PAGE_DATA: usize = 8152;
const CHUNK_DATA: usize = 128 * PAGE_DATA;

fn sizes() -> Vec<usize> {
    vec![
        0,
        1,
        PAGE_DATA - 1,
        PAGE_DATA,
        PAGE_DATA + 1,
        CHUNK_DATA - 1,
        CHUNK_DATA,
        CHUNK_DATA + 1,
        2 * CHUNK_DATA + 3 * PAGE_DATA + 17,
    ]
}

fn content(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8 ^ seed as u8)
        .collect()
}

/// Hands out its bytes in reads of varying, odd sizes.
struct Irregular<'a> {
    data: &'a [u8],
    turn: usize,
}

impl Read for Irregular<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.turn += 1;
        let want = [1, 4093, 100_003, 8152, 77][self.turn % 5];
        let n = want.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn config(dir: &Path, writeback: usize) -> EngineConfig {
    let mut cfg = EngineConfig::new(dir);
    cfg.buffer_pool_size = 4 << 20;
    cfg.background = false;
    cfg.attachment_writeback = writeback;
    let mut lc = LogConfig::new(dir.join("translog"));
    lc.extent_size = 1 << 20;
    lc.max_size = 16 << 20;
    cfg.log = Some(lc);
    cfg
}

fn read_back(engine: &Engine, unid: nsf::Unid, name: &str) -> Vec<u8> {
    let db = engine.open_database("a.fdb").unwrap();
    let mut out = Vec::new();
    db.open_attachment(unid, name)
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn round_trips(backend: Arc<dyn Backend>, dir: &Path, writeback: usize) {
    let (engine, _) = Engine::open(backend.clone(), config(dir, writeback)).unwrap();
    let db = engine.create_database("a.fdb", "").unwrap();
    let unid = db
        .create(vec![Item {
            name: "Subject".into(),
            value: ItemValue::Text("files".into()),
        }])
        .unwrap()
        .unid;
    let files: Vec<(String, Vec<u8>)> = sizes()
        .into_iter()
        .enumerate()
        .map(|(i, len)| (format!("f{len}.bin"), content(len, i)))
        .collect();
    for (name, data) in &files {
        let mut src = Irregular { data, turn: 0 };
        let stored = db.put_attachment(unid, name, "x/y", &mut src).unwrap();
        assert_eq!(stored.size, data.len() as u64, "{name}");
        assert_eq!(&read_back(&engine, unid, name), data, "{name}");
    }
    drop(db);
    engine.close().unwrap();
    let (engine, _) = Engine::open(backend, config(dir, writeback)).unwrap();
    for (name, data) in &files {
        assert_eq!(&read_back(&engine, unid, name), data, "{name} after reopen");
    }
    engine.open_database("a.fdb").unwrap().check().unwrap();
    engine.close().unwrap();
}

#[test]
fn boundary_sizes_round_trip_on_the_file_system() {
    for writeback in [0, 2] {
        let dir = tempfile::tempdir().unwrap();
        round_trips(Arc::new(FsBackend), dir.path(), writeback);
    }
}

#[test]
fn boundary_sizes_round_trip_in_memory() {
    for writeback in [0, 2] {
        round_trips(Arc::new(MemBackend::new()), Path::new("/data"), writeback);
    }
}
