//! `describe_log`: what `folio dump log` shows, read without opening the
//! log, and damage reported as a typed error or a stop reason, never a
//! panic.

use crate::common::*;
use proptest::prelude::*;
use std::path::Path;
use storage::backend::MemBackend;
use storage::{Lsn, PageBuf, PageId, PageKind};
use translog::{describe_log, LogError, PageChange, RecordDetail, StopReason};

/// A shut-down log with three committed batches of database instance 7:
/// a full image, a delta, then a fresh (mostly zero) page's image, which
/// goes as a PageSparse (I46), and a delta.
fn three_batches() -> MemBackend {
    let m = mem();
    let (log, _) = open(&m, cfg(4));
    log.append(&batch("a.fdb", vec![(1, full_img(1))])).unwrap();
    log.append(&batch("a.fdb", vec![(2, delta(100, b"hello"))]))
        .unwrap();
    let fresh = PageChange::Image(PageBuf::new(PageKind::BTreeLeaf));
    log.append(&batch("a.fdb", vec![(3, fresh), (1, delta(64, b"x"))]))
        .unwrap();
    log.wait_durable(log.end_lsn()).unwrap();
    drop(log);
    m
}

#[test]
fn records_are_listed_with_kind_instance_and_length_and_nothing_changes() {
    let m = three_batches();
    let before = m.snapshot();
    let d = describe_log(&m, Path::new(LOG), None, 100).unwrap();
    assert_eq!(d.control.extent_size, EXT);
    assert_eq!(d.extents.len(), 1);
    assert_eq!((d.extents[0].seq, d.extents[0].problem.clone()), (1, None));
    let kinds: Vec<_> = d.records.iter().map(|r| r.detail.kind_name()).collect();
    assert_eq!(
        kinds,
        [
            "Checkpoint",
            "Begin",
            "PageImage",
            "Commit",
            "Begin",
            "PageDelta",
            "Commit",
            "Begin",
            "PageSparse",
            "PageDelta",
            "Commit"
        ]
    );
    assert_eq!(d.records[0].lsn, Lsn(P));
    assert_eq!(d.records[0].db_instance, None);
    assert!(d.records[1..].iter().all(|r| r.db_instance == Some(7)));
    assert_eq!(
        d.records[1].detail,
        RecordDetail::Begin {
            path: "a.fdb".into()
        }
    );
    assert_eq!(
        d.records[5].detail,
        RecordDetail::PageDelta {
            page: PageId(2),
            ranges: 1,
            bytes: 5
        }
    );
    assert_eq!(d.records[2].len, 32 + 4 + 8192);
    // Only the page kind byte of the fresh page is not zero.
    assert_eq!(
        d.records[8].detail,
        RecordDetail::PageSparse {
            page: PageId(3),
            ranges: 1,
            bytes: 1
        }
    );
    assert_eq!(d.records[8].len, 32 + 6 + 4 + 1);
    for w in d.records.windows(2) {
        assert_eq!(w[0].lsn.0 + u64::from(w[0].len), w[1].lsn.0);
    }
    assert_eq!(d.stop, Some(StopReason::Zeroed));
    for p in extent_files(&m, Path::new(LOG)) {
        assert_eq!(m.file_bytes(&p), before.file_bytes(&p), "{p:?} changed");
    }
}

#[test]
fn from_and_limit_page_through_the_records() {
    let m = three_batches();
    let all = describe_log(&m, Path::new(LOG), None, 100).unwrap().records;
    let first = describe_log(&m, Path::new(LOG), None, 3).unwrap();
    assert_eq!((first.records.len(), first.stop), (3, None));
    assert_eq!(first.next, all[3].lsn);
    let rest = describe_log(&m, Path::new(LOG), Some(first.next), 100).unwrap();
    assert_eq!(rest.records.len(), all.len() - 3);
    assert_eq!(rest.records[0].detail.kind_name(), "Commit");
    // A page that starts mid-transaction does not know its instance.
    assert_eq!(rest.records[0].db_instance, None);
    assert_eq!(rest.records[1].db_instance, Some(7));
    let off = describe_log(&m, Path::new(LOG), Some(Lsn(all[1].lsn.0 + 1)), 10).unwrap();
    assert_eq!(
        (off.records.len(), off.stop),
        (0, Some(StopReason::StaleLsn))
    );
    let far = describe_log(&m, Path::new(LOG), Some(Lsn(u64::MAX)), 10).unwrap_err();
    assert!(matches!(far, LogError::Invalid(_)), "{far}");
}

#[test]
fn a_missing_or_damaged_control_file_is_a_typed_error() {
    let m = mem();
    let e = describe_log(&m, Path::new(LOG), None, 10).unwrap_err();
    assert!(matches!(e, LogError::Io { .. }), "{e}");
    let m = three_batches();
    let control = Path::new(LOG).join("control");
    m.set_file_bytes(&control, vec![0xAB; 1024]);
    let e = describe_log(&m, Path::new(LOG), None, 10).unwrap_err();
    assert!(matches!(e, LogError::BadControl { .. }), "{e}");
    assert!(e.to_string().contains("no valid slot"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random bytes anywhere in the extent or the control file: the dump
    /// answers or fails typed, and never panics.
    #[test]
    fn damaged_logs_are_described_or_refused_typed(
        at in 0.0f64..1.0,
        garbage in proptest::collection::vec(any::<u8>(), 1..600),
        control in any::<bool>(),
    ) {
        let m = three_batches();
        let path = if control {
            Path::new(LOG).join("control")
        } else {
            Path::new(LOG).join(format!("ext-{:016x}.log", 1))
        };
        let mut bytes = m.file_bytes(&path).unwrap();
        let used = if control { bytes.len() } else { 4096 + 3 * 8300 };
        let off = ((used as f64) * at) as usize;
        let n = garbage.len().min(bytes.len() - off);
        bytes[off..off + n].copy_from_slice(&garbage[..n]);
        m.set_file_bytes(&path, bytes);
        match describe_log(&m, Path::new(LOG), None, 1000) {
            Ok(d) => prop_assert!(d.records.len() <= 11),
            Err(e) => prop_assert!(
                matches!(e, LogError::Corrupt { .. } | LogError::BadControl { .. }),
                "{e}"
            ),
        }
    }
}
