//! The server-wide attachment store (design.md §2.9, I37–I39): identical
//! content of at least 4 KiB stored once across databases, compressed
//! where that helps, reference counts that always equal the references
//! the notes hold, and objects reclaimed only when nothing references
//! them — also when a power cut interrupts storing or deleting.

mod common;

use nsf::{
    AttachmentCompression, Database, Engine, EngineConfig, Item, ItemValue, StoredForm, Unid,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;

fn text(len: usize, seed: u8) -> Vec<u8> {
    let words = ["alpha ", "beta ", "gamma ", "delta ", "omega "];
    let mut out = Vec::with_capacity(len);
    let mut i = seed as usize;
    while out.len() < len {
        out.extend_from_slice(words[i % words.len()].as_bytes());
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out.truncate(len);
    out
}

fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn doc(db: &Database) -> Unid {
    db.create(vec![Item {
        name: "Subject".into(),
        value: ItemValue::Text("hello".into()),
    }])
    .unwrap()
    .unid
}

fn read_back(db: &Database, unid: Unid, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    db.open_attachment(unid, name)
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The object files in the store, by name.
fn objects(disk: &dyn Backend) -> BTreeSet<String> {
    let root = Path::new("/data/attachstore/objects");
    let mut out = BTreeSet::new();
    for dir in disk.read_dir(root).unwrap_or_default() {
        for f in disk.read_dir(&dir).unwrap_or_default() {
            out.insert(f.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    out
}

fn open(disk: Arc<dyn Backend>, cfg: EngineConfig) -> Engine {
    Engine::open(disk, cfg).unwrap().0
}

/// Every database's counts equal its notes' references and every
/// referenced object exists (I37, I38); returns the hashes referenced.
fn check_all(engine: &Engine, paths: &[&str]) -> BTreeSet<String> {
    let mut referenced = BTreeSet::new();
    for p in paths {
        let db = engine.open_database(p).unwrap();
        let check = db.check_store_refs().unwrap();
        assert!(check.is_ok(), "{p}: {check:?}");
        referenced.extend(
            db.store_references()
                .unwrap()
                .into_iter()
                .map(|(h, _)| h.to_hex()),
        );
    }
    referenced
}

#[test]
fn identical_attachments_are_stored_once_across_databases() {
    let disk = Arc::new(MemBackend::new());
    let engine = open(disk.clone(), common::config(true));
    let a = engine.create_database("a.fdb", "A").unwrap();
    let b = engine.create_database("b.fdb", "B").unwrap();
    let body = text(300_000, 1);
    let (d1, d2, d3) = (doc(&a), doc(&a), doc(&b));
    let r1 = a
        .put_attachment(d1, "r.txt", "text/plain", &mut &body[..])
        .unwrap();
    a.put_attachment(d2, "copy.txt", "text/plain", &mut &body[..])
        .unwrap();
    b.put_attachment(d3, "r.txt", "text/plain", &mut &body[..])
        .unwrap();
    let stored = r1.stored.expect("300 KB goes to the store");
    assert_eq!(stored.form, StoredForm::Zstd, "text compresses");
    assert!(stored.stored_size < body.len() as u64 / 2);
    assert_eq!(
        objects(disk.as_ref()),
        BTreeSet::from([stored.hash.to_hex()])
    );
    for (db, unid, name) in [(&a, d1, "r.txt"), (&a, d2, "copy.txt"), (&b, d3, "r.txt")] {
        assert_eq!(read_back(db, unid, name), body);
    }
    let counts = |db: &Database| db.store_references().unwrap()[0].1.count;
    assert_eq!((counts(&a), counts(&b)), (2, 1));
    let usage = a.attachment_usage().unwrap();
    assert_eq!(usage.logical_bytes, 2 * body.len() as u64);
    assert_eq!(usage.stored_bytes, stored.stored_size);
    let stats = engine.attachment_store_stats();
    assert_eq!((stats.stored, stats.dedup_hits), (3, 2));
    assert_eq!((stats.objects, stats.stored_bytes), (1, stored.stored_size));
    assert_eq!(stats.original_bytes, body.len() as u64);
    engine.sweep_attachment_store().unwrap();
    let stats = engine.attachment_store_stats();
    assert_eq!(
        stats.logical_bytes,
        3 * body.len() as u64,
        "as the sweep counted"
    );
    assert_eq!(check_all(&engine, &["a.fdb", "b.fdb"]).len(), 1);
    // The items survive a restart, as does the content; the store's
    // totals are counted again at open.
    drop((a, b));
    engine.close().unwrap();
    let engine = open(disk.clone(), common::config(true));
    let a = engine.open_database("a.fdb").unwrap();
    assert_eq!(read_back(&a, d2, "copy.txt"), body);
    let stats = engine.attachment_store_stats();
    assert_eq!((stats.objects, stats.stored_bytes), (1, stored.stored_size));
}

#[test]
fn small_attachments_stay_in_the_file_and_noise_is_stored_as_is() {
    let disk = Arc::new(MemBackend::new());
    let engine = open(disk.clone(), common::config(true));
    let db = engine.create_database("a.fdb", "A").unwrap();
    let d = doc(&db);
    let small = text(4095, 2);
    let r = db
        .put_attachment(d, "small", "text/plain", &mut &small[..])
        .unwrap();
    assert!(
        r.stored.is_none() && !r.extents.is_empty(),
        "under 4 KiB stays inline"
    );
    let exact = noise(4096, 3);
    let r = db
        .put_attachment(d, "noise", "application/octet-stream", &mut &exact[..])
        .unwrap();
    let stored = r.stored.expect("4 KiB goes to the store");
    assert_eq!(stored.form, StoredForm::Raw, "noise does not compress");
    assert_eq!(stored.stored_size, 4096);
    assert_eq!(read_back(&db, d, "small"), small);
    assert_eq!(read_back(&db, d, "noise"), exact);
}

#[test]
fn compression_off_stores_everything_as_is() {
    let disk = Arc::new(MemBackend::new());
    let mut cfg = common::config(true);
    cfg.attachment_compression = AttachmentCompression::Off;
    let engine = open(disk.clone(), cfg);
    let db = engine.create_database("a.fdb", "A").unwrap();
    let d = doc(&db);
    let body = text(2 << 20, 4);
    let r = db
        .put_attachment(d, "big.txt", "text/plain", &mut &body[..])
        .unwrap();
    assert_eq!(r.stored.unwrap().form, StoredForm::Raw);
    assert_eq!(r.stored.unwrap().stored_size, body.len() as u64);
    assert_eq!(read_back(&db, d, "big.txt"), body);
}

#[test]
fn a_dedup_hit_names_the_object_in_the_form_it_was_stored() {
    // Stored as is under `off`; the same content written again under
    // `auto` would be compressed, but the object is already there.
    let disk = Arc::new(MemBackend::new());
    let mut cfg = common::config(true);
    cfg.attachment_compression = AttachmentCompression::Off;
    let engine = open(disk.clone(), cfg);
    let a = engine.create_database("a.fdb", "A").unwrap();
    let body = text(64 << 10, 9);
    let da = doc(&a);
    a.put_attachment(da, "t.txt", "text/plain", &mut &body[..])
        .unwrap();
    drop(a);
    engine.shutdown().unwrap();
    let engine = open(disk.clone(), common::config(true));
    let b = engine.create_database("b.fdb", "B").unwrap();
    let db_ = doc(&b);
    let r = b
        .put_attachment(db_, "t.txt", "text/plain", &mut &body[..])
        .unwrap();
    assert_eq!(r.stored.unwrap().form, StoredForm::Raw);
    assert_eq!(r.stored.unwrap().stored_size, body.len() as u64);
    assert_eq!(read_back(&b, db_, "t.txt"), body);
    assert_eq!(engine.attachment_store_stats().dedup_hits, 1);
}

#[test]
fn a_damaged_object_fails_its_read_and_names_the_attachment() {
    let disk = Arc::new(MemBackend::new());
    let engine = open(disk.clone(), common::config(true));
    let db = engine.create_database("a.fdb", "A").unwrap();
    let d = doc(&db);
    let body = noise(50_000, 5);
    let r = db
        .put_attachment(d, "n.bin", "x/y", &mut &body[..])
        .unwrap();
    let hex = r.stored.unwrap().hash.to_hex();
    let path = Path::new("/data/attachstore/objects")
        .join(&hex[..2])
        .join(&hex);
    let f = disk.open(&path, storage::OpenMode::Existing).unwrap();
    f.write_at(&[0xff, 0xfe], 1000).unwrap();
    let mut out = Vec::new();
    let e = db
        .open_attachment(d, "n.bin")
        .unwrap()
        .read_to_end(&mut out)
        .unwrap_err();
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
    assert!(e.to_string().contains("n.bin"), "{e}");
}

#[test]
fn an_object_is_reclaimed_only_when_its_last_reference_goes() {
    let disk = Arc::new(MemBackend::new());
    let engine = open(disk.clone(), common::config(true));
    let a = engine.create_database("a.fdb", "A").unwrap();
    let b = engine.create_database("b.fdb", "B").unwrap();
    let (one, two) = (text(100_000, 6), text(100_000, 7));
    let (da, db_) = (doc(&a), doc(&b));
    let h1 = a
        .put_attachment(da, "f", "t", &mut &one[..])
        .unwrap()
        .stored
        .unwrap()
        .hash;
    b.put_attachment(db_, "f", "t", &mut &one[..]).unwrap();
    // Replacing a's attachment drops a's reference; b still holds one.
    let h2 = a
        .put_attachment(da, "f", "t", &mut &two[..])
        .unwrap()
        .stored
        .unwrap()
        .hash;
    let r = engine.sweep_attachment_store().unwrap();
    assert_eq!(r.removed, 0);
    assert_eq!(
        objects(disk.as_ref()),
        BTreeSet::from([h1.to_hex(), h2.to_hex()])
    );
    // Deleting b's document drops the last reference to `one`.
    b.delete(db_, None, false).unwrap();
    let r = engine.sweep_attachment_store().unwrap();
    assert_eq!(r.removed, 1);
    assert_eq!(objects(disk.as_ref()), BTreeSet::from([h2.to_hex()]));
    assert_eq!(read_back(&a, da, "f"), two);
    check_all(&engine, &["a.fdb", "b.fdb"]);
}

/// A power cut at every sync point of storing an attachment (object,
/// `users`, commit), its content new or already stored, and of deleting
/// one: after recovery the counts
/// equal the references, nothing referenced is missing, an acknowledged
/// attachment reads back whole, and no orphan survives the sweep at
/// open.
#[test]
fn a_power_cut_at_every_sync_point_of_store_and_delete_leaves_counts_right() {
    let body = text(200_000, 8);
    for mode in [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::Torn { seed: 11 },
    ] {
        for phase in ["hit", "new", "delete"] {
            // Sync point n is the n-th after arming (1 is the first).
            for n in 1.. {
                let disk = Arc::new(CrashBackend::new());
                let engine = open(disk.clone(), common::config(true));
                let a = engine.create_database("a.fdb", "A").unwrap();
                let b = engine.create_database("b.fdb", "B").unwrap();
                let (da, dbb) = (doc(&a), doc(&b));
                b.put_attachment(dbb, "f", "t", &mut &body[..]).unwrap();
                if phase == "delete" {
                    a.put_attachment(da, "f", "t", &mut &body[..]).unwrap();
                    b.put_attachment(dbb, "g", "t", &mut &text(50_000, 9)[..])
                        .unwrap();
                }
                disk.arm_crash(disk.sync_count() + n, mode);
                let fresh = text(150_000, 10);
                let acked = match phase {
                    "hit" => a.put_attachment(da, "f", "t", &mut &body[..]).is_ok(),
                    "new" => a.put_attachment(da, "f", "t", &mut &fresh[..]).is_ok(),
                    _ => b.delete(dbb, None, false).is_ok(),
                };
                let image = match disk.crashed_image() {
                    Some(image) => image,
                    None => disk.crash_now(mode),
                };
                let crashed = disk.has_crashed();
                drop((a, b, engine));
                let image: Arc<dyn Backend> = Arc::new(image);
                let after = open(image.clone(), common::config(true));
                let referenced = check_all(&after, &["a.fdb", "b.fdb"]);
                let what = format!("{mode:?}, {phase}, crash at sync point {n}");
                assert_eq!(
                    objects(image.as_ref()),
                    referenced,
                    "{what}: orphans or missing"
                );
                let a = after.open_database("a.fdb").unwrap();
                let b = after.open_database("b.fdb").unwrap();
                if phase != "delete" {
                    assert_eq!(read_back(&b, dbb, "f"), body, "{what}");
                    let put = if phase == "hit" { &body } else { &fresh };
                    if acked {
                        assert_eq!(&read_back(&a, da, "f"), put, "{what}");
                    }
                } else {
                    assert_eq!(read_back(&a, da, "f"), body, "{what}");
                    if acked {
                        assert!(b.get(dbb).is_err(), "{what}: the deletion was lost");
                    }
                }
                if !crashed {
                    // A hit: its temporary file, `users` and the log; a
                    // new object adds its two directories; deleting: the
                    // log. The cut met every one.
                    let least = match phase {
                        "hit" => 3,
                        "new" => 5,
                        _ => 1,
                    };
                    assert!(n > least, "{what}: only {} sync points", n - 1);
                    break;
                }
            }
        }
    }
}

mod model {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        /// Put content `c` on document `d` of database `db` under `name`.
        Put {
            db: usize,
            d: usize,
            name: u8,
            c: usize,
        },
        Delete {
            db: usize,
            d: usize,
        },
        Sweep,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..3usize, 0..3usize, 0..2u8, 0..4usize)
                .prop_map(|(db, d, name, c)| Op::Put { db, d, name, c }),
            2 => (0..3usize, 0..3usize).prop_map(|(db, d)| Op::Delete { db, d }),
            1 => Just(Op::Sweep),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Random puts, replacements and deletes of attachments with
        /// duplicate content across three databases: every database's
        /// counts always equal the references its notes hold (checked
        /// against a model), and after a sweep the store holds exactly
        /// the objects something references.
        #[test]
        fn counts_always_equal_references(ops in proptest::collection::vec(op(), 1..30)) {
            let contents: Vec<Vec<u8>> = vec![
                text(5000, 1), text(5000, 2), noise(6000, 3), text(200, 4),
            ];
            let disk = Arc::new(MemBackend::new());
            let engine = open(disk.clone(), common::config(true));
            let paths = ["a.fdb", "b.fdb", "c.fdb"];
            let dbs: Vec<_> = paths.iter().map(|p| engine.create_database(p, "").unwrap()).collect();
            let docs: Vec<Vec<Unid>> = dbs.iter().map(|db| (0..3).map(|_| doc(db)).collect()).collect();
            // Model: (db, doc, name) -> content index; deleted docs.
            let mut model: BTreeMap<(usize, usize, u8), usize> = BTreeMap::new();
            let mut deleted: BTreeSet<(usize, usize)> = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Put { db, d, name, c } => {
                        let r = dbs[db].put_attachment(docs[db][d], &format!("n{name}"), "t", &mut &contents[c][..]);
                        if deleted.contains(&(db, d)) {
                            prop_assert!(r.is_err());
                        } else {
                            r.unwrap();
                            model.insert((db, d, name), c);
                        }
                    }
                    Op::Delete { db, d } => {
                        if deleted.insert((db, d)) {
                            dbs[db].delete(docs[db][d], None, false).unwrap();
                            model.retain(|k, _| (k.0, k.1) != (db, d));
                        }
                    }
                    Op::Sweep => {
                        engine.sweep_attachment_store().unwrap();
                    }
                }
                for (i, db) in dbs.iter().enumerate() {
                    let want: usize = model.iter().filter(|(k, c)| k.0 == i && **c != 3).count();
                    let check = db.check_store_refs().unwrap();
                    prop_assert!(check.is_ok(), "{check:?}");
                    prop_assert_eq!(check.references as usize, want);
                }
            }
            engine.sweep_attachment_store().unwrap();
            let referenced = check_all(&engine, &paths);
            prop_assert_eq!(objects(disk.as_ref()), referenced);
            for ((db, d, name), c) in &model {
                prop_assert_eq!(read_back(&dbs[*db], docs[*db][*d], &format!("n{name}")), contents[*c].clone());
            }
        }
    }
}

/// Fixup verifies each stored attachment against its object: a damaged
/// object's attachment is dropped from its note, the reference tree is
/// counted afresh from the notes kept (so it checks clean), and the next
/// sweep reclaims the object nothing references any more.
#[test]
fn fixup_drops_an_attachment_whose_object_is_damaged_and_recounts() {
    let disk = Arc::new(MemBackend::new());
    let engine = open(disk.clone(), common::config(true));
    let db = engine.create_database("a.fdb", "A").unwrap();
    let (d1, d2) = (doc(&db), doc(&db));
    let (good, bad) = (text(30_000, 12), noise(30_000, 13));
    db.put_attachment(d1, "good", "t", &mut &good[..]).unwrap();
    db.put_attachment(d2, "good", "t", &mut &good[..]).unwrap();
    let hash = db
        .put_attachment(d2, "bad", "t", &mut &bad[..])
        .unwrap()
        .stored
        .unwrap()
        .hash;
    drop(db);
    engine.close().unwrap();
    let hex = hash.to_hex();
    let path = Path::new("/data/attachstore/objects")
        .join(&hex[..2])
        .join(&hex);
    let f = disk.open(&path, storage::OpenMode::Existing).unwrap();
    f.write_at(&[1, 2, 3], 5000).unwrap();
    let engine = open(disk.clone(), common::config(true));
    let r = engine.fixup("a.fdb", false).unwrap();
    assert_eq!(r.attachments_checked, 3, "{r}");
    assert_eq!(r.attachments_lost.len(), 1, "{r}");
    assert_eq!(r.attachments_lost[0].name, "bad");
    let db = engine.open_database("a.fdb").unwrap();
    let check = db.check_store_refs().unwrap();
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(check.references, 2);
    assert_eq!(read_back(&db, d2, "good"), good);
    assert!(db.open_attachment(d2, "bad").is_err());
    assert_eq!(engine.sweep_attachment_store().unwrap().removed, 1);
    assert!(!objects(disk.as_ref()).contains(&hex));
}

/// Versions written with a foreign identity (replication, the mail
/// router's deliveries) store their large attachments in the store too:
/// the same content delivered to three databases is one object, and a
/// newer version without it drops the reference.
#[test]
fn foreign_versions_share_objects_and_count_references() {
    use nsf::{ForeignAttachment, ForeignContent, ForeignNote, OriginatorId, Timestamp};
    let disk = Arc::new(MemBackend::new());
    let engine = open(disk.clone(), common::config(true));
    let body = text(80_000, 14);
    let unid = Unid([7; 16]);
    let version = |seq: u32, with: bool| ForeignNote {
        oid: OriginatorId {
            unid,
            seq_num: seq,
            seq_time: Timestamp(1_000 * i64::from(seq)),
        },
        created: Timestamp(1_000),
        modified: Timestamp(1_000 * i64::from(seq)),
        deleted: false,
        items: vec![],
        attachments: if with {
            vec![ForeignAttachment {
                name: "m.txt".into(),
                mime: "text/plain".into(),
                content: ForeignContent::Bytes(body.clone()),
            }]
        } else {
            vec![]
        },
        revisions: vec![],
    };
    let paths = ["m1.fdb", "m2.fdb", "m3.fdb"];
    for p in paths {
        let db = engine.create_database(p, "").unwrap();
        db.put_foreign(version(1, true)).unwrap();
        assert_eq!(read_back(&db, unid, "m.txt"), body);
    }
    assert_eq!(objects(disk.as_ref()).len(), 1);
    assert_eq!(check_all(&engine, &paths).len(), 1);
    let db = engine.open_database("m2.fdb").unwrap();
    db.put_foreign(version(2, false)).unwrap();
    assert!(db.store_references().unwrap().is_empty());
    assert_eq!(engine.sweep_attachment_store().unwrap().removed, 0);
    assert_eq!(check_all(&engine, &paths).len(), 1);
}

/// Deleting a database takes its references with it: the sweep at the
/// next clean shutdown reclaims what only it held and keeps what another
/// database (here a copy made of it) still references; the copy's
/// counts are its own (I38, I39, I42).
#[test]
fn a_deleted_database_s_objects_go_at_the_next_shutdown_unless_a_copy_holds_them() {
    let disk = Arc::new(MemBackend::new());
    let engine = open(disk.clone(), common::config(true));
    let a = engine.create_database("a.fdb", "A").unwrap();
    let (shared, own) = (text(60_000, 3), noise(30_000, 9));
    let d1 = doc(&a);
    a.put_attachment(d1, "shared", "t", &mut &shared[..])
        .unwrap();
    engine.copy_database("a.fdb", "b.fdb").unwrap();
    let d2 = doc(&a);
    let own_hash = a
        .put_attachment(d2, "own", "t", &mut &own[..])
        .unwrap()
        .stored
        .unwrap()
        .hash;
    let before = check_all(&engine, &["a.fdb", "b.fdb"]);
    assert_eq!(before.len(), 2);
    assert_eq!(objects(disk.as_ref()), before);
    drop(a);
    // A new session, in which the delete is the only release.
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(disk.clone(), common::config(true));
    assert_eq!(objects(disk.as_ref()), before);
    engine.delete_database("a.fdb").unwrap();
    engine.shutdown().unwrap();
    drop(engine);

    let engine = open(disk.clone(), common::config(true));
    let kept = check_all(&engine, &["b.fdb"]);
    assert!(!kept.contains(&own_hash.to_hex()));
    assert_eq!(
        objects(disk.as_ref()),
        kept,
        "only the copy's object is left"
    );
    let b = engine.open_database("b.fdb").unwrap();
    // A copy keeps the documents' UNIDs.
    assert_eq!(read_back(&b, d1, "shared"), shared);
    assert!(b.get(d2).is_err(), "written after the copy");
}

/// Prose-like text: words drawn from a few hundred, so higher zstd
/// levels find more than lower ones (unlike a short repeated pattern).
fn prose(len: usize, seed: u64) -> Vec<u8> {
    let words: Vec<String> = (0..300u64)
        .map(|w| {
            let n = 2 + (w * 7 % 9) as usize;
            (0..n)
                .map(|i| char::from(b'a' + ((w * 13 + i as u64 * 5) % 26) as u8))
                .collect()
        })
        .collect();
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Skewed towards the first words, as prose is.
        let r = (x % 1000) as f64 / 1000.0;
        let w = &words[((r * r * r) * words.len() as f64) as usize];
        out.extend_from_slice(w.as_bytes());
        out.push(if x.is_multiple_of(11) { b'\n' } else { b' ' });
    }
    out.truncate(len);
    out
}

/// Stores `body` in a fresh engine whose store compresses at `level`;
/// its stored size, after checking it reads back whole.
fn stored_size_at(level: nsf::CompressionLevel, body: &[u8]) -> u64 {
    let mut cfg = common::config(true);
    cfg.attachment_compression_level = level;
    let engine = open(Arc::new(MemBackend::new()), cfg);
    let db = engine.create_database("a.fdb", "A").unwrap();
    let d = doc(&db);
    let r = db
        .put_attachment(d, "mail.txt", "text/plain", &mut &body[..])
        .unwrap();
    let stored = r.stored.expect("1 MiB goes to the store");
    assert_eq!(stored.form, StoredForm::Zstd, "prose compresses");
    assert_eq!(read_back(&db, d, "mail.txt"), body, "level {level:?}");
    stored.stored_size
}

#[test]
fn a_higher_compression_level_stores_compressible_content_smaller() {
    let body = prose(1 << 20, 3);
    let level = |n| nsf::CompressionLevel::new(n).unwrap();
    let at1 = stored_size_at(level(1), &body);
    let at3 = stored_size_at(nsf::CompressionLevel::default(), &body);
    let at19 = stored_size_at(level(19), &body);
    assert!(at19 < at3 && at3 < at1, "1: {at1}, 3: {at3}, 19: {at19}");
    assert!(at1 < body.len() as u64 / 2, "1: {at1}");
}
