//! Compact, in place and by copy (design.md §2.10, I40, I41): everything
//! kept, the free space returned, writers meanwhile lose nothing, and a
//! power cut at any sync point leaves a whole database.

use nsf::{Database, Engine, EngineConfig, Item, ItemValue, NsfError, Unid};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::{Backend, PageStoreMut, PAGE_SIZE};
use translog::LogConfig;

const DB: &str = "c.fdb";

/// A logged engine with a log large enough for every page of a compact.
fn config() -> EngineConfig {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 4 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 1 << 20;
    lc.max_size = 64 << 20;
    cfg.log = Some(lc);
    cfg
}

fn open(backend: Arc<dyn Backend>) -> Engine {
    Engine::open(backend, config()).unwrap().0
}

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

/// What a document should hold after compact.
struct Doc {
    unid: Unid,
    body: String,
    file: Option<Vec<u8>>,
}

fn body_of(i: usize) -> String {
    // Every 7th is large enough for an overflow chain.
    let len = if i.is_multiple_of(7) { 6_000 } else { 300 };
    format!("{i:06}-").repeat(len / 7)
}

/// Every 3rd document has a file: under 4 KiB, in blob pages of the
/// file (§2.5), except every 15th's, larger, in the attachment store
/// (§2.9), whose reference tree compact moves like any other.
fn file_of(i: usize) -> Option<Vec<u8>> {
    let len = if i.is_multiple_of(15) {
        20_000 + i
    } else {
        3_000 + i % 1_000
    };
    i.is_multiple_of(3)
        .then(|| (0..len).map(|b| (b * 31 + i) as u8).collect())
}

/// Creates `n` documents (some with overflow bodies, some with
/// attachments), deletes every other one, and returns the kept ones.
fn fill(db: &Database, n: usize) -> Vec<Doc> {
    let mut all = Vec::new();
    for i in 0..n {
        let body = body_of(i);
        let unid = db.create(vec![text("Body", &body)]).unwrap().unid;
        let file = file_of(i);
        if let Some(f) = &file {
            db.put_attachment(unid, "f.bin", "application/octet-stream", &mut &f[..])
                .unwrap();
        }
        all.push(Doc { unid, body, file });
    }
    let mut kept = Vec::new();
    for (i, d) in all.into_iter().enumerate() {
        if i % 2 == 1 {
            db.delete(d.unid, None, false).unwrap();
        } else {
            kept.push(d);
        }
    }
    kept
}

/// Every kept document as it was, and `notes` live notes in all.
fn assert_whole(db: &Database, kept: &[Doc], notes: u64) {
    for d in kept {
        let note = db.get(d.unid).unwrap();
        assert_eq!(
            note.item("Body"),
            Some(&text("Body", &d.body)),
            "{:?}",
            d.unid
        );
        if let Some(f) = &d.file {
            let mut got = Vec::new();
            db.open_attachment(d.unid, "f.bin")
                .unwrap()
                .read_to_end(&mut got)
                .unwrap();
            assert_eq!(&got, f, "attachment of {:?}", d.unid);
        }
    }
    assert_eq!(db.check().unwrap().notes, notes);
    let refs = db.check_store_refs().unwrap();
    assert!(refs.is_ok(), "{refs:?}");
    let stored = kept
        .iter()
        .filter(|d| d.file.as_ref().is_some_and(|f| f.len() >= 4096));
    assert_eq!(refs.references as usize, stored.count());
}

#[test]
fn in_place_returns_the_free_space_and_keeps_everything() {
    let disk: Arc<MemBackend> = Arc::new(MemBackend::new());
    let engine = open(disk.clone());
    let db = engine.create_database(DB, "compact").unwrap();
    let kept = fill(&db, 600);
    let before = db.info().unwrap();
    let check = db.check().unwrap();
    let notes = check.notes;
    let reclaimable = check.free_pages + check.leaked_pages;
    assert!(reclaimable > 100, "half deleted: {reclaimable} pages free");

    let dry = engine.compact(DB, false, true).unwrap();
    assert_eq!(
        db.info().unwrap().page_count,
        before.page_count,
        "a dry run writes nothing"
    );
    assert!(dry.pages_after < dry.pages_before);

    let r = engine.compact(DB, false, false).unwrap();
    assert!(r.truncated, "{r:?}");
    assert_eq!(r.style, "in-place");
    assert_eq!(
        r.instance_after, before.instance_id.0,
        "in place keeps the instance"
    );
    assert_eq!(r.pages_before, before.page_count);
    assert!(r.pages_moved > 0);
    let returned = u64::from(r.pages_before - r.pages_after);
    assert!(
        returned * 10 >= reclaimable * 9,
        "returned {returned} of {reclaimable} free pages"
    );
    assert_eq!(r.bytes_after, u64::from(r.pages_after) * PAGE_SIZE as u64);
    let after = db.info().unwrap();
    assert_eq!(after.instance_id, before.instance_id);
    assert_eq!(after.page_count, r.pages_after);
    assert_eq!(after.file_size, r.bytes_after);
    assert_whole(&db, &kept, notes);
    assert_eq!(db.check().unwrap().leaked_pages, 0);

    // Writes go on in the smaller file, and a restart finds it whole.
    let more = db.create(vec![text("Body", "after")]).unwrap().unid;
    drop(db);
    drop(engine);
    let engine = open(disk);
    let db = engine.open_database(DB).unwrap();
    assert_whole_plus(&db, &kept, more);
}

fn assert_whole_plus(db: &Database, kept: &[Doc], more: Unid) {
    assert_eq!(
        db.get(more).unwrap().item("Body"),
        Some(&text("Body", "after"))
    );
    for d in kept {
        assert_eq!(
            db.get(d.unid).unwrap().item("Body"),
            Some(&text("Body", &d.body))
        );
    }
    db.check().unwrap();
}

#[test]
fn copy_style_gives_a_new_instance_and_keeps_everything() {
    let disk: Arc<MemBackend> = Arc::new(MemBackend::new());
    let engine = open(disk.clone());
    let db = engine.create_database(DB, "compact").unwrap();
    let kept = fill(&db, 200);
    let before = db.info().unwrap();
    let notes = db.check().unwrap().notes;
    drop(db);
    let r = engine.compact(DB, true, false).unwrap();
    assert_eq!(r.style, "copy");
    assert_eq!(r.instance_before, before.instance_id.0);
    assert_ne!(
        r.instance_after, before.instance_id.0,
        "a copy is a new instance"
    );
    assert!(r.truncated, "{r:?}");
    assert!(r.bytes_after < r.bytes_before, "{r:?}");
    assert_eq!((r.notes_lost, r.attachments_lost), (0, 0));
    let db = engine.open_database(DB).unwrap();
    assert_eq!(db.info().unwrap().instance_id.0, r.instance_after);
    assert_whole(&db, &kept, notes);
}

#[test]
fn leaked_pages_are_reclaimed() {
    let engine = open(Arc::new(MemBackend::new()));
    let db = engine.create_database(DB, "").unwrap();
    let kept = fill(&db, 40);
    {
        // Pages reserved for a build that is then abandoned without giving
        // them back: what a crash between reserving and committing leaves.
        let mut w = db.bulk_writer().unwrap();
        for _ in 0..20 {
            w.allocate().unwrap();
        }
    }
    db.create(vec![text("Body", "bumps the page count")])
        .unwrap();
    let leaked = db.check().unwrap().leaked_pages;
    assert!(leaked >= 20, "{leaked}");
    let r = engine.compact(DB, false, false).unwrap();
    assert_eq!(r.leaked_pages, leaked);
    assert!(r.truncated);
    let c = db.check().unwrap();
    assert_eq!(c.leaked_pages, 0);
    for d in &kept {
        db.get(d.unid).unwrap();
    }
}

#[test]
fn writers_meanwhile_lose_nothing() {
    let engine = Arc::new(open(Arc::new(MemBackend::new())));
    let db = engine.create_database(DB, "").unwrap();
    let kept = fill(&db, 600);
    let notes = db.check().unwrap().notes;
    let writers: Vec<_> = (0..3)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for i in 0..150u32 {
                    let body = format!("writer {t} doc {i} ").repeat(if i.is_multiple_of(9) {
                        400
                    } else {
                        5
                    });
                    let unid = db.create(vec![text("Body", &body)]).unwrap().unid;
                    if i.is_multiple_of(3) {
                        db.update(
                            unid,
                            vec![nsf::ItemUpdate::Set(text("Body", "changed"))],
                            None,
                            false,
                        )
                        .unwrap();
                        mine.push((unid, "changed".to_string()));
                    } else {
                        mine.push((unid, body));
                    }
                }
                mine
            })
        })
        .collect();
    let r = engine.compact(DB, false, false).unwrap();
    let written: Vec<(Unid, String)> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert!(r.pages_moved > 0, "{r:?}");
    for (unid, body) in &written {
        assert_eq!(
            db.get(*unid).unwrap().item("Body"),
            Some(&text("Body", body))
        );
    }
    for d in &kept {
        assert_eq!(
            db.get(d.unid).unwrap().item("Body"),
            Some(&text("Body", &d.body))
        );
    }
    let c = db.check().unwrap();
    assert_eq!(c.notes, notes + written.len() as u64);
}

#[test]
fn bad_requests_change_nothing() {
    let engine = open(Arc::new(MemBackend::new()));
    assert!(matches!(
        engine.compact("missing.fdb", false, false),
        Err(NsfError::NoSuchDatabase(_))
    ));
    assert!(matches!(
        engine.compact("missing.fdb", true, false),
        Err(NsfError::NoSuchDatabase(_))
    ));
    assert!(engine.compact("../x.fdb", false, false).is_err());
}

/// A power cut at every sync point of a compact: after restart recovery
/// the database is whole and consistent (no page both referenced and
/// free), and a second compact finishes the job.
fn crash_everywhere(copy: bool) {
    let mut crashed = 0;
    for k in 1.. {
        let disk = Arc::new(CrashBackend::new());
        let engine = open(disk.clone());
        let db = engine.create_database(DB, "").unwrap();
        let kept = fill(&db, 60);
        let notes = db.check().unwrap().notes;
        drop(db);
        let mode = CrashMode::Torn { seed: k };
        disk.arm_crash(disk.sync_count() + k, mode);
        let r = engine.compact(DB, copy, false);
        let image = match disk.crashed_image() {
            Some(image) => {
                crashed += 1;
                image
            }
            None => disk.crash_now(mode),
        };
        let finished = !disk.has_crashed();
        drop(engine);

        let engine = open(Arc::new(image));
        let db = engine.open_database(DB).unwrap();
        assert_whole(&db, &kept, notes);
        if finished {
            let r = r.unwrap();
            assert!(r.truncated, "sync point {k}: {r:?}");
            assert_eq!(db.info().unwrap().page_count, r.pages_after);
            break;
        }
        drop(db);
        let again = engine.compact(DB, false, false).unwrap();
        let db = engine.open_database(DB).unwrap();
        let c = db.check().unwrap();
        assert_eq!(c.leaked_pages, 0, "sync point {k}: {again:?}");
        let pages = u64::from(db.info().unwrap().page_count);
        assert!(
            c.free_pages <= 2 + pages / 128,
            "sync point {k}: {again:?} {c:?}"
        );
        assert_whole(&db, &kept, notes);
    }
    assert!(crashed > 5, "only {crashed} sync points");
}

#[test]
fn a_power_cut_during_in_place_compact_loses_nothing() {
    crash_everywhere(false);
}

#[test]
fn a_power_cut_during_copy_compact_loses_nothing() {
    crash_everywhere(true);
}
