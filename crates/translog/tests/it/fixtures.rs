//! Log format fixtures (design.md §13): a log written by an earlier build,
//! checked in, read and redone by today's code. `log-v1-sparse` is the
//! first log holding a PageSparse record (kind 7, I46), an additive change
//! to the record format of §3.2: the logs of `format-v1` (no PageSparse)
//! still open (`crates/folio/tests/format_fixtures.rs`), and this one
//! shows the new kind decodes and redoes into the page it stands for.
//!
//! Its one committed batch, on database instance 7 at `a.fdb`, left
//! without a checkpoint after it (as a crash leaves it): page 1 a full
//! image with no zero byte (PageImage), page 2 a fresh leaf with 100 bytes
//! of 0x42 at the start of its body and 300 of 0x43 at its end
//! (PageSparse), page 3 a delta writing "sparse" at offset 100.

use crate::common::*;
use std::path::Path;
use storage::{Backend, PageId, PageKind, PAGE_SIZE};
use translog::{describe_log, RecordDetail, StopReason};

fn load(m: &storage::backend::MemBackend) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/log-v1-sparse");
    m.create_dir_all(Path::new(LOG)).unwrap();
    for name in ["control", "ext-0000000000000001.log"] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        m.set_file_bytes(&Path::new(LOG).join(name), bytes);
    }
}

#[test]
fn the_sparse_fixture_lists_a_page_sparse_record() {
    let m = mem();
    load(&m);
    let d = describe_log(&m, Path::new(LOG), None, 100).unwrap();
    let kinds: Vec<_> = d.records.iter().map(|r| r.detail.kind_name()).collect();
    assert_eq!(
        kinds,
        [
            "Checkpoint",
            "Begin",
            "PageImage",
            "PageSparse",
            "PageDelta",
            "Commit"
        ]
    );
    // The kind byte, the 100 bytes at the body's start, the 300 at its end.
    assert_eq!(
        d.records[3].detail,
        RecordDetail::PageSparse {
            page: PageId(2),
            ranges: 3,
            bytes: 401
        }
    );
    assert_eq!(d.records[3].len, 32 + 6 + 3 * 4 + 401);
    assert_eq!(d.stop, Some(StopReason::Zeroed));
}

#[test]
fn the_sparse_fixture_redoes_into_the_pages_it_stands_for() {
    let m = mem();
    load(&m);
    let mut model = Model::default();
    model.create_db(&m, "a.fdb", 4);
    let (_log, report) = open(&m, cfg(4));
    assert_eq!(report.committed_txns_redone, 1);
    assert_eq!(report.pages_redone, 3);
    assert_eq!(report.failed_databases, vec![]);
    let pages: Vec<_> = (1..4).map(|id| read_page(&m, "a.fdb", id)).collect();
    for (id, p) in (1..4).zip(&pages) {
        p.verify("a.fdb", PageId(id)).unwrap();
    }
    assert!(pages[0].body().iter().all(|b| *b == 0x11));
    let body = pages[1].body();
    assert_eq!(pages[1].kind(), Some(PageKind::BTreeLeaf));
    let tail = PAGE_SIZE - 24 - 300;
    assert!(body[..100].iter().all(|b| *b == 0x42));
    assert!(body[100..tail].iter().all(|b| *b == 0));
    assert!(body[tail..].iter().all(|b| *b == 0x43));
    assert_eq!(&pages[2].bytes()[100..106], b"sparse");
}
