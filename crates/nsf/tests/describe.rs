//! `describe_db` and `describe_db_page`: what `folio dump db|page` shows of
//! a database file, read without an engine, and damage reported as a typed
//! error naming the page, never a panic.

mod common;

use nsf::{describe_db, describe_db_page, Acl, Engine, Item, ItemValue, NsfError};
use proptest::prelude::*;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use storage::backend::MemBackend;
use storage::describe::PageContent;
use storage::{PageId, PageKind, StorageError};

const FILE: &str = "/data/a.fdb";

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

/// A closed database: three documents (one with a 4,000-byte
/// attachment, kept in blob pages as everything under 4 KiB is, one big enough for an overflow chain), one deleted, and an
/// ACL.
fn sample() -> MemBackend {
    static SAMPLE: OnceLock<MemBackend> = OnceLock::new();
    SAMPLE
        .get_or_init(|| {
            let m = MemBackend::new();
            let (engine, _) = Engine::open(Arc::new(m.clone()), common::config(true)).unwrap();
            let db = engine.create_database("a.fdb", "Sample").unwrap();
            let a = db.create(vec![text("Subject", "one")]).unwrap().unid;
            db.create(vec![text("Body", &"x".repeat(5000))]).unwrap();
            let c = db.create(vec![text("Subject", "three")]).unwrap().unid;
            let content = vec![7u8; 4_000];
            db.put_attachment(a, "f.bin", "x/y", &mut &content[..])
                .unwrap();
            db.delete(c, None, true).unwrap();
            db.set_acl(
                &Acl::parse_json(
                    r#"{"default":"reader","entries":[{"name":"admin","level":"manager"}]}"#,
                )
                .unwrap(),
            )
            .unwrap();
            drop(db);
            engine.close().unwrap();
            m
        })
        .snapshot()
}

#[test]
fn a_database_is_described_without_an_engine() {
    let m = sample();
    let d = describe_db(&m, Path::new(FILE)).unwrap();
    assert_eq!(d.header.title, "Sample");
    let n = &d.notes;
    assert_eq!(
        (n.documents, n.stubs, n.design_notes, n.attachments),
        (3, 1, 1, 1)
    );
    assert_eq!((n.attachment_bytes, n.overflow_notes), (4_000, 1));
    let names: Vec<_> = d.trees.iter().map(|t| t.0).collect();
    assert_eq!(names, ["note table", "UNID index", "change-sequence index"]);
    assert_eq!(d.trees[0].2.entries, 4);
    assert_eq!(d.census.pages, u64::from(d.header.page_count));
    assert_eq!(d.census.by_kind.get("Blob"), Some(&1));
    assert_eq!(d.census.by_kind.get("Header"), Some(&1));
    assert!(d.census.bad.is_empty());
    assert_eq!(d.free_pages, d.header.free.count);
}

#[test]
fn pages_are_described_with_what_the_database_layer_knows() {
    let m = sample();
    let h = describe_db_page(&m, Path::new(FILE), PageId(0)).unwrap();
    assert_eq!(h.header.map(|h| h.title), Some("Sample".to_string()));
    let d = describe_db(&m, Path::new(FILE)).unwrap();
    let root = describe_db_page(&m, Path::new(FILE), d.header.note_root).unwrap();
    assert!(matches!(root.page.content, PageContent::Node(_)));
    let blobs: Vec<_> = (0..d.header.page_count)
        .filter_map(|i| {
            describe_db_page(&m, Path::new(FILE), PageId(i))
                .unwrap()
                .blob
        })
        .collect();
    assert_eq!(blobs.iter().map(|b| b.2).sum::<u32>(), 4_000);
    assert_eq!(blobs.iter().map(|b| b.1).collect::<Vec<_>>(), [0]);
    let past = describe_db_page(&m, Path::new(FILE), PageId(d.header.page_count + 5));
    assert!(matches!(
        past,
        Err(NsfError::Storage(StorageError::Invalid(_)))
    ));
}

#[test]
fn a_damaged_header_or_tree_is_a_typed_error_naming_the_page() {
    let m = sample();
    let mut bytes = m.file_bytes(Path::new(FILE)).unwrap();
    bytes[100] ^= 0xFF;
    m.set_file_bytes(Path::new(FILE), bytes);
    let e = describe_db(&m, Path::new(FILE)).unwrap_err();
    assert!(matches!(e, NsfError::NotADatabase { .. }), "{e}");
    assert!(e.to_string().contains("checksum"), "{e}");

    let m = sample();
    let root = describe_db(&m, Path::new(FILE)).unwrap().header.unid_root;
    let mut bytes = m.file_bytes(Path::new(FILE)).unwrap();
    bytes[root.offset() as usize + 4000] ^= 0xFF;
    m.set_file_bytes(Path::new(FILE), bytes);
    match describe_db(&m, Path::new(FILE)) {
        Err(NsfError::Storage(StorageError::Corrupt { page, .. })) => assert_eq!(page, root),
        other => panic!("{other:?}"),
    }
    let p = describe_db_page(&m, Path::new(FILE), root).unwrap();
    assert_eq!(p.page.problem.as_deref(), Some("checksum mismatch"));
    assert_eq!(p.page.kind, Some(PageKind::BTreeLeaf));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random bytes anywhere in the file, sealed again or not (so that the
    /// decoders behind the checksums see garbage too): every dump answers
    /// or fails typed.
    #[test]
    fn damaged_files_are_described_or_refused_typed(
        at in 0.0f64..1.0,
        garbage in proptest::collection::vec(any::<u8>(), 1..400),
        reseal in any::<bool>(),
    ) {
        let m = sample();
        let mut bytes = m.file_bytes(Path::new(FILE)).unwrap();
        let off = ((bytes.len() - 1) as f64 * at) as usize;
        let n = garbage.len().min(bytes.len() - off);
        bytes[off..off + n].copy_from_slice(&garbage[..n]);
        let page = off / 8192;
        if reseal {
            let p = &mut bytes[page * 8192..(page + 1) * 8192];
            storage::page::seal_in_place(p, PageId(page as u32), storage::Lsn(1));
        }
        m.set_file_bytes(Path::new(FILE), bytes);
        let typed = |e: &NsfError| matches!(
            e,
            NsfError::NotADatabase { .. } | NsfError::Storage(StorageError::Corrupt { .. })
        );
        if let Err(e) = describe_db(&m, Path::new(FILE)) {
            prop_assert!(typed(&e), "{e}");
        }
        if let Err(e) = describe_db_page(&m, Path::new(FILE), PageId(page as u32)) {
            prop_assert!(typed(&e), "{e}");
        }
    }
}
