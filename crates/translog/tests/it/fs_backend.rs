//! The same log on the real file system (FsBackend, in a temporary
//! directory): extents are real preallocated files and survive reopen.

use crate::common::*;
use std::sync::Arc;
use storage::backend::FsBackend;
use storage::Backend;
use translog::{LogConfig, TransLog};

#[test]
fn log_on_the_real_file_system_survives_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let backend: Arc<dyn Backend> = Arc::new(FsBackend);
    backend.create_dir_all(&data).unwrap();
    let cfg = LogConfig {
        extent_size: EXT,
        max_size: 8 * EXT,
        ..LogConfig::new(tmp.path().join("translog"))
    };
    let db = data.join("apps/crm.fdb");
    backend.create_dir_all(db.parent().unwrap()).unwrap();
    let pages: Vec<_> = (0..4u32).map(sealed_page).collect();
    std::fs::write(&db, pages.concat()).unwrap();

    let (log, report) = TransLog::open(backend.clone(), &data, cfg.clone()).unwrap();
    assert!(report.new_log);
    let mut last = None;
    for i in 0..20u8 {
        let a = log
            .append(&batch("apps/crm.fdb", vec![(1 + u32::from(i) % 3, img(i))]))
            .unwrap();
        log.wait_durable(a.end_lsn).unwrap();
        last = Some(a);
    }
    assert!(log.info().extents_on_disk >= 3);
    drop(log);

    let (_log, report) = TransLog::open(backend, &data, cfg.clone()).unwrap();
    assert_eq!(report.committed_txns_redone, 20);
    let bytes = std::fs::read(&db).unwrap();
    let page = storage::PageBuf::from_bytes(&bytes[8192..16384]).unwrap();
    page.verify("crm", storage::PageId(1)).unwrap();
    assert_eq!(page.body()[0], 18, "the last image for page 1 (i = 18)");
    let last = last.unwrap();
    let page2 = storage::PageBuf::from_bytes(&bytes[2 * 8192..3 * 8192]).unwrap();
    assert_eq!(
        page2.lsn(),
        last.page_lsns[0],
        "the last batch (i = 19) wrote page 2"
    );
    let ext1 = cfg.dir.join("ext-0000000000000001.log");
    assert_eq!(std::fs::metadata(ext1).unwrap().len(), EXT);
}

fn sealed_page(id: u32) -> Vec<u8> {
    let mut p = image(0);
    p.seal(storage::PageId(id), storage::Lsn(0));
    p.bytes().to_vec()
}
