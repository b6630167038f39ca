//! The revision tree over real nsf databases (in memory): door edits,
//! native edits and deletions after them, replicated revisions that
//! conflict in either order of arrival, revs_diff, and stale edits.

use couch::{load_doc, parse_edit, revs_diff, write_docs, ConflictIndex, Doc, Mode, Rev};
use nsf::{Database, Engine, EngineConfig, Item, ItemUpdate, ItemValue, Note};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use translog::LogConfig;

fn engine() -> Engine {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 8 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 1 << 20;
    lc.max_size = 16 << 20;
    cfg.log = Some(lc);
    Engine::open(Arc::new(MemBackend::new()), cfg).unwrap().0
}

fn anyone(_: &Note) -> bool {
    true
}

fn write(db: &Database, docs: Vec<Value>, mode: Mode) -> Vec<Result<Rev, couch::CouchError>> {
    let edits = docs
        .iter()
        .map(|d| parse_edit(d, mode, None, &mut || "generated".into(), 1 << 20).unwrap())
        .collect();
    let index = ConflictIndex::of(db).unwrap();
    write_docs(
        db,
        &index,
        edits,
        mode,
        (Box::new(|_, _| true), Box::new(|_| true)),
        &|_| true,
    )
    .unwrap()
}

fn doc(db: &Database, id: &str) -> Option<Doc> {
    let index = ConflictIndex::of(db).unwrap();
    load_doc(db, &index, id, &anyone).unwrap()
}

fn rev(s: &str) -> Rev {
    s.parse().unwrap()
}

fn replicated(id: &str, path: &[&str], body: Value) -> Value {
    let top = rev(path[0]);
    let ids: Vec<&str> = path.iter().map(|r| r.split_once('-').unwrap().1).collect();
    let mut d = body;
    d["_id"] = json!(id);
    d["_rev"] = json!(path[0]);
    d["_revisions"] = json!({"start": top.gen, "ids": ids});
    d
}

#[test]
fn door_edits_then_native_edits_keep_one_lineage() {
    let e = engine();
    let db = e.create_database("t.fdb", "t").unwrap();
    let r1 = write(&db, vec![json!({"_id": "a", "x": 1})], Mode::NewEdits)[0]
        .clone()
        .unwrap();
    assert_eq!(r1.gen, 1);
    let r2 = write(
        &db,
        vec![json!({"_id": "a", "_rev": r1.to_string(), "x": 2})],
        Mode::NewEdits,
    )[0]
    .clone()
    .unwrap();
    let d = doc(&db, "a").unwrap();
    assert_eq!(d.winner().rev, r2);
    assert_eq!(d.winner().ancestry, vec![r1.clone()]);
    // A stale edit is a conflict, and writes nothing.
    let stale = write(
        &db,
        vec![json!({"_id": "a", "_rev": r1.to_string(), "x": 9})],
        Mode::NewEdits,
    );
    assert_eq!(stale[0].as_ref().unwrap_err().error, "conflict");
    assert_eq!(doc(&db, "a").unwrap().winner().rev, r2);

    // A native edit: the next generation, descending from the door's.
    let unid = d.unid;
    let set = ItemUpdate::Set(Item {
        name: "x".into(),
        value: ItemValue::Number(3.0),
    });
    db.update(unid, vec![set], None, true).unwrap();
    let d = doc(&db, "a").unwrap();
    let r3 = d.winner().rev.clone();
    assert_eq!(r3.gen, 3);
    assert_eq!(d.winner().ancestry, vec![r2.clone(), r1.clone()]);
    assert_eq!(d.id, "a", "the native edit kept the id");
    // A native deletion keeps id and lineage.
    db.delete(unid, None, true).unwrap();
    let d = doc(&db, "a").unwrap();
    assert!(d.is_deleted());
    assert_eq!(d.winner().rev.gen, 4);
    assert_eq!(d.winner().ancestry, vec![r3, r2, r1]);
    // An edit at the door revives it on that branch.
    let w = d.winner().rev.to_string();
    let r5 = write(
        &db,
        vec![json!({"_id": "a", "_rev": w, "x": 5})],
        Mode::NewEdits,
    )[0]
    .clone()
    .unwrap();
    assert_eq!(r5.gen, 5);
    assert!(!doc(&db, "a").unwrap().is_deleted());
}

#[test]
fn concurrent_revisions_converge_whatever_the_order() {
    let e = engine();
    let one = e.create_database("one.fdb", "one").unwrap();
    let two = e.create_database("two.fdb", "two").unwrap();
    let base = replicated("z", &["1-a"], json!({"v": 0}));
    let left = replicated("z", &["2-b", "1-a"], json!({"v": "left"}));
    let right = replicated("z", &["2-c", "1-a"], json!({"v": "right", "ok": true}));
    write(
        &one,
        vec![base.clone(), left.clone(), right.clone()],
        Mode::Replicated,
    );
    write(&two, vec![base], Mode::Replicated);
    write(&two, vec![right], Mode::Replicated);
    write(&two, vec![left], Mode::Replicated);
    let (d1, d2) = (doc(&one, "z").unwrap(), doc(&two, "z").unwrap());
    let leaves = |d: &Doc| {
        let mut v: Vec<String> = d.leaves.iter().map(|l| l.rev.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(leaves(&d1), vec!["2-b", "2-c"]);
    assert_eq!(leaves(&d1), leaves(&d2));
    assert_eq!(
        d1.winner().rev,
        rev("2-c"),
        "CouchDB's rule: the larger hash"
    );
    assert_eq!(d2.winner().rev, rev("2-c"));
    assert_eq!(
        d1.winner().to_json("z", true),
        d2.winner().to_json("z", true)
    );
    assert_eq!(d1.conflicts().len(), 1);
    // The same revision is the same Folio version on both.
    let v = |d: &Doc, r: &str| d.leaf(&rev(r)).unwrap().note.version();
    assert_eq!(v(&d1, "2-b"), v(&d2, "2-b"));
    assert_eq!(v(&d1, "2-c"), v(&d2, "2-c"));

    // revs_diff: leaves and ancestors are known.
    let (missing, _) = revs_diff(Some(&d1), &[rev("1-a"), rev("2-b"), rev("3-d")]);
    assert_eq!(missing, vec![rev("3-d")]);
    // Again: nothing written twice.
    let again = write(
        &one,
        vec![replicated("z", &["2-b", "1-a"], json!({"v": "left"}))],
        Mode::Replicated,
    );
    assert_eq!(again[0].as_ref().unwrap(), &rev("2-b"));

    // Deleting the losing leaf (a conflict document) resolves it; the
    // deletion stays a conflict document's stub.
    let gone = replicated("z", &["3-e", "2-b", "1-a"], json!({}));
    let mut gone = gone;
    gone["_deleted"] = json!(true);
    write(&one, vec![gone], Mode::Replicated);
    let d = doc(&one, "z").unwrap();
    assert_eq!(d.winner().rev, rev("2-c"));
    assert!(d.conflicts().is_empty());
    assert_eq!(d.deleted_conflicts().len(), 1);
    assert_eq!(d.deleted_conflicts()[0].rev, rev("3-e"));
}

#[test]
fn a_deletion_of_the_winner_leaves_the_live_conflict_winning() {
    let e = engine();
    let db = e.create_database("d.fdb", "d").unwrap();
    write(
        &db,
        vec![
            replicated("q", &["1-a"], json!({})),
            replicated("q", &["2-b", "1-a"], json!({"s": "b"})),
            replicated("q", &["2-c", "1-a"], json!({"s": "c"})),
        ],
        Mode::Replicated,
    );
    let mut del = replicated("q", &["3-d", "2-c", "1-a"], json!({}));
    del["_deleted"] = json!(true);
    write(&db, vec![del], Mode::Replicated);
    let d = doc(&db, "q").unwrap();
    assert!(!d.is_deleted(), "a live leaf wins over a deleted one");
    assert_eq!(d.winner().rev, rev("2-b"));
}

#[test]
fn hidden_leaves_are_not_there() {
    let e = engine();
    let db = e.create_database("h.fdb", "h").unwrap();
    write(
        &db,
        vec![json!({"_id": "s", "$Readers": ["alice"], "v": 1})],
        Mode::NewEdits,
    );
    let index = ConflictIndex::of(&db).unwrap();
    let nobody = |_: &Note| false;
    assert!(load_doc(&db, &index, "s", &nobody).unwrap().is_none());
    let (missing, possible) = revs_diff(None, &[rev("1-x")]);
    assert_eq!((missing.len(), possible.len()), (1, 0));
    let page = couch::changes(
        &db,
        &index,
        nsf::Seq(0),
        100,
        (true, false),
        &nobody,
        &|_| true,
    )
    .unwrap();
    assert!(page.rows.is_empty());
    assert_eq!(page.last_seq, 0, "a hidden change does not move last_seq");
    assert!(page.scanned > 0);
    assert_eq!(
        couch::doc_counts(&db, &index, &nobody).unwrap(),
        couch::DocCounts::default()
    );
}
