//! Deleted leaves of a revision tree, through the CouchDB door of the real
//! `folio serve`: a deletion is a revision like any other, and once the
//! door acknowledged it, it stays a leaf (or an ancestor of one) of the
//! document's tree — when it loses to a concurrent live revision, when it
//! wins beside a live conflict, across kill -9 and restart, through
//! native replication between two servers, and through PouchDB's sync
//! (design.md I63). CouchDB keeps exactly these leaves: `open_revs=all`
//! lists them, `_changes?style=all_docs` names them, `_revs_diff` knows
//! them, `deleted_conflicts=true` shows the losing ones.

mod common;
#[path = "couch/support.rs"]
mod support;

use common::users_dir;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use support::*;

/// A leaf as the door lists it in `open_revs=all`: (revision, deleted).
type LeafRev = (String, bool);

fn leaves(db: &str, id: &str) -> BTreeSet<LeafRev> {
    let all = ok(
        "GET",
        &format!("{db}/{}?open_revs=all", encode(id)),
        ALICE,
        None,
    );
    all.as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let d = &l["ok"];
            (
                d["_rev"].as_str().unwrap().to_string(),
                d["_deleted"] == json!(true),
            )
        })
        .collect()
}

/// The revisions `_changes?style=all_docs` names for `id`.
fn feed_revs(db: &str, id: &str) -> BTreeSet<String> {
    let feed = ok("GET", &format!("{db}/_changes?style=all_docs"), ALICE, None);
    let row = feed["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == json!(id))
        .unwrap_or_else(|| panic!("{id} is not in the feed: {feed}"));
    row["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rev"].as_str().unwrap().to_string())
        .collect()
}

/// What `_revs_diff` says is missing of `revs`.
fn missing(db: &str, id: &str, revs: &[&str]) -> Vec<String> {
    let d = ok(
        "POST",
        &format!("{db}/_revs_diff"),
        ALICE,
        Some(json!({ id: revs })),
    );
    d.get(id)
        .and_then(|e| e["missing"].as_array())
        .map(|m| m.iter().map(|r| r.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn put(db: &str, id: &str, body: Value) -> String {
    let r = ok("PUT", &format!("{db}/{}", encode(id)), ALICE, Some(body));
    r["rev"].as_str().unwrap().to_string()
}

fn hash(rev: &str) -> &str {
    rev.split_once('-').unwrap().1
}

/// A replicated deletion (`new_edits=false`), acknowledged 201.
fn push_deletion(db: &str, id: &str, rev: &str, ancestors: &[&str]) {
    let (gen, h) = rev.split_once('-').unwrap();
    let ids: Vec<&str> = std::iter::once(h)
        .chain(ancestors.iter().map(|r| hash(r)))
        .collect();
    let doc = json!({"_id": id, "_rev": rev, "_deleted": true,
                     "_revisions": {"start": gen.parse::<u64>().unwrap(), "ids": ids}});
    let (status, answer) = req(
        "POST",
        &format!("{db}/_bulk_docs"),
        Some(ALICE),
        Some(&json!({"docs": [doc], "new_edits": false}).to_string()),
    );
    assert_eq!(
        (status, answer),
        (201, json!([])),
        "{id} {rev} acknowledged"
    );
}

/// Everything the door says of a document's deleted leaf `dead` beside
/// its live winner `live`.
fn assert_deleted_leaf(db: &str, id: &str, live: &str, dead: &str, when: &str) {
    let want: BTreeSet<LeafRev> = [(live.to_string(), false), (dead.to_string(), true)].into();
    assert_eq!(leaves(db, id), want, "{when}: {id}'s leaves");
    let winner = ok(
        "GET",
        &format!("{db}/{}?deleted_conflicts=true&conflicts=true", encode(id)),
        ALICE,
        None,
    );
    assert_eq!(winner["_rev"], json!(live), "{when}: {winner}");
    assert_eq!(
        winner["_deleted_conflicts"],
        json!([dead]),
        "{when}: {winner}"
    );
    assert!(winner.get("_conflicts").is_none(), "{when}: {winner}");
    let read = ok(
        "GET",
        &format!("{db}/{}?rev={dead}", encode(id)),
        ALICE,
        None,
    );
    assert_eq!(read["_deleted"], json!(true), "{when}: {read}");
    assert_eq!(
        feed_revs(db, id),
        [live.to_string(), dead.to_string()].into(),
        "{when}: {id} in _changes?style=all_docs"
    );
    assert!(
        missing(db, id, &[dead, live]).is_empty(),
        "{when}: _revs_diff knows both"
    );
}

#[test]
fn a_deletion_that_loses_to_a_live_revision_stays_a_deleted_leaf_through_kill_9() {
    let data = users_dir(&["alice"]);
    let s = start(data.path());
    let db = team_db(&s, "t");
    // x: 1 -> 2 -> 3 live here; a replicator brings a deletion of 1 (a
    // generation 2 that is concurrent with this 2 and 3, and loses).
    let r1 = put(&db, "x", json!({"v": 1}));
    let r2 = put(&db, "x", json!({"_rev": r1, "v": 2}));
    let r3 = put(&db, "x", json!({"_rev": r2, "v": 3}));
    push_deletion(&db, "x", "2-d0d0d0", &[&r1]);
    // The same through PUT ?new_edits=false, on y.
    let y1 = put(&db, "y", json!({"v": 1}));
    let y2 = put(&db, "y", json!({"_rev": y1, "v": 2}));
    let y3 = put(&db, "y", json!({"_rev": y2, "v": 3}));
    let (status, answer) = req(
        "PUT",
        &format!("{db}/y?new_edits=false"),
        Some(ALICE),
        Some(
            &json!({"_id": "y", "_rev": "2-e0e0e0", "_deleted": true,
                    "_revisions": {"start": 2, "ids": ["e0e0e0", hash(&y1)]}})
            .to_string(),
        ),
    );
    assert_eq!(status, 201, "{answer}");
    assert_deleted_leaf(&db, "x", &r3, "2-d0d0d0", "acknowledged");
    assert_deleted_leaf(&db, "y", &y3, "2-e0e0e0", "acknowledged");
    // Again: already held, still one deleted leaf.
    push_deletion(&db, "x", "2-d0d0d0", &[&r1]);
    assert_deleted_leaf(&db, "x", &r3, "2-d0d0d0", "pushed twice");

    // kill -9 right after the acknowledgements: both are durable.
    s.kill();
    let s = start(data.path());
    let db = format!("{}/t", couch_url(&s));
    assert_deleted_leaf(&db, "x", &r3, "2-d0d0d0", "after kill -9");
    assert_deleted_leaf(&db, "y", &y3, "2-e0e0e0", "after kill -9");

    // An edit of the live leaf keeps the deleted one; deleting the live
    // one leaves two deleted leaves and the document deleted.
    let r4 = put(&db, "x", json!({"_rev": r3, "v": 4}));
    assert_deleted_leaf(&db, "x", &r4, "2-d0d0d0", "after a further edit");
    let gone = ok("DELETE", &format!("{db}/x?rev={r4}"), ALICE, None);
    let r5 = gone["rev"].as_str().unwrap().to_string();
    let want: BTreeSet<LeafRev> = [(r5, true), ("2-d0d0d0".to_string(), true)].into();
    assert_eq!(leaves(&db, "x"), want);
    let (status, _) = req("GET", &format!("{db}/x"), Some(ALICE), None);
    assert_eq!(status, 404, "every leaf deleted: the document is deleted");
    drop(s);
}

#[test]
fn a_deletion_that_wins_beside_a_live_conflict_keeps_its_leaf_after_kill_9() {
    let data = users_dir(&["alice"]);
    let s = start(data.path());
    let db = team_db(&s, "t");
    // x: 1 -> 2 live here; a replicated 3 (deleted) made from another 2:
    // the deletion is the higher generation, so Folio's note is its stub
    // and the live 2 a conflict document; CouchDB's winner is the live 2.
    let r1 = put(&db, "x", json!({"v": 1}));
    let r2 = put(&db, "x", json!({"_rev": r1, "v": 2}));
    let doc = json!({"_id": "x", "_rev": "3-f0f0f0", "_deleted": true,
                     "_revisions": {"start": 3, "ids": ["f0f0f0", "c2c2c2", hash(&r1)]}});
    let (status, answer) = req(
        "POST",
        &format!("{db}/_bulk_docs"),
        Some(ALICE),
        Some(&json!({"docs": [doc], "new_edits": false}).to_string()),
    );
    assert_eq!(status, 201, "{answer}");
    assert_deleted_leaf(&db, "x", &r2, "3-f0f0f0", "acknowledged");

    // A document made natively, in conflict at the door, then deleted
    // natively (its note becomes a stub beside the live conflict).
    let native = format!("http://{}/db/t.fdb/docs", s.http);
    let made = ok("POST", &native, ALICE, Some(json!({"v": "native"})));
    let unid = made["unid"].as_str().unwrap().to_string();
    // A revision of another branch (its parent is not the native one).
    let other = json!({"_id": unid, "_rev": "2-a1a1a1", "v": "door",
                       "_revisions": {"start": 2, "ids": ["a1a1a1", "b0b0b0"]}});
    ok(
        "POST",
        &format!("{db}/_bulk_docs"),
        ALICE,
        Some(json!({"docs": [other], "new_edits": false})),
    );
    // Natively edit then delete whichever note is the document's own.
    ok(
        "PUT",
        &format!("{native}/{unid}"),
        ALICE,
        Some(json!({"v": "native 2"})),
    );
    ok("DELETE", &format!("{native}/{unid}"), ALICE, None);
    let before = leaves(&db, &unid);
    assert_eq!(before.len(), 2, "a live and a deleted leaf: {before:?}");
    assert_eq!(before.iter().filter(|l| l.1).count(), 1, "{before:?}");
    let feed_before = feed_revs(&db, &unid);

    s.kill();
    let s = start(data.path());
    let db = format!("{}/t", couch_url(&s));
    assert_deleted_leaf(&db, "x", &r2, "3-f0f0f0", "after kill -9");
    assert_eq!(
        leaves(&db, &unid),
        before,
        "the native deletion after kill -9"
    );
    assert_eq!(feed_revs(&db, &unid), feed_before);
    let dead: Vec<&str> = before
        .iter()
        .filter(|l| l.1)
        .map(|l| l.0.as_str())
        .collect();
    assert!(missing(&db, &unid, &dead).is_empty(), "{dead:?} known");
    drop(s);
}

/// Every document's tree at a door: its leaves and the winner's view.
fn door_tree(db: &str, ids: &[&str]) -> Vec<Value> {
    ids.iter()
        .map(|id| {
            let (_, winner) = req(
                "GET",
                &format!("{db}/{}?conflicts=true&deleted_conflicts=true", encode(id)),
                Some(ALICE),
                None,
            );
            let all = ok(
                "GET",
                &format!("{db}/{}?open_revs=all&revs=true", encode(id)),
                ALICE,
                None,
            );
            let mut leaves: Vec<Value> = all
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["ok"].clone())
                .collect();
            leaves.sort_by_key(|l| l["_rev"].as_str().unwrap().to_string());
            json!({"id": id, "winner": winner, "leaves": leaves})
        })
        .collect()
}

#[test]
fn native_replication_between_two_servers_carries_deleted_leaves() {
    let (data_a, data_b) = (users_dir(&["alice"]), users_dir(&["alice"]));
    let a = start(data_a.path());
    let db_a = team_db(&a, "t");
    // On A: a losing deletion (x) and a winning one beside a live conflict (z).
    let x1 = put(&db_a, "x", json!({"v": 1}));
    let x2 = put(&db_a, "x", json!({"_rev": x1, "v": 2}));
    let x3 = put(&db_a, "x", json!({"_rev": x2, "v": 3}));
    push_deletion(&db_a, "x", "2-d0d0d0", &[&x1]);
    let z1 = put(&db_a, "z", json!({"v": 1}));
    let z2 = put(&db_a, "z", json!({"_rev": z1, "v": 2}));
    push_deletion(&db_a, "z", "3-f0f0f0", &["2-c2c2c2", &z1]);
    // w: the same document on both, deleted natively on A while B edits
    // it natively (a race between the servers themselves).
    let native_a = format!("http://{}/db/t.fdb/docs", a.http);
    let w = ok("POST", &native_a, ALICE, Some(json!({"v": "w"})))["unid"]
        .as_str()
        .unwrap()
        .to_string();

    let b = start(data_b.path());
    b.replicate_with(&a, "t.fdb", &["--create"]);
    let db_b = format!("{}/t", couch_url(&b));
    let native_b = format!("http://{}/db/t.fdb/docs", b.http);
    ok("DELETE", &format!("{native_a}/{w}"), ALICE, None);
    for v in ["b1", "b2"] {
        ok(
            "PUT",
            &format!("{native_b}/{w}"),
            ALICE,
            Some(json!({"v": v})),
        );
    }
    let w_dead_on_a: Vec<String> = leaves(&db_a, &w)
        .into_iter()
        .filter(|l| l.1)
        .map(|l| l.0)
        .collect();
    assert_eq!(w_dead_on_a.len(), 1, "A's deletion of {w}");

    b.replicate_with(&a, "t.fdb", &["--direction", "both"]);
    b.replicate_with(&a, "t.fdb", &["--direction", "both"]);
    let ids = ["x", "z", w.as_str()];
    let (tree_a, tree_b) = (door_tree(&db_a, &ids), door_tree(&db_b, &ids));
    for (l, r) in tree_a.iter().zip(&tree_b) {
        assert!(same(l, r), "A and B differ:\n{l}\n{r}");
    }
    assert_deleted_leaf(&db_b, "x", &x3, "2-d0d0d0", "on B");
    assert_deleted_leaf(&db_b, "z", &z2, "3-f0f0f0", "on B");
    // B's later live edit wins; A's acknowledged deletion is a deleted
    // leaf on both, not dropped.
    for db in [&db_a, &db_b] {
        let l = leaves(db, &w);
        assert!(
            l.contains(&(w_dead_on_a[0].clone(), true)),
            "{db}: {w}'s deletion is kept: {l:?}"
        );
        assert!(l.iter().any(|l| !l.1), "{db}: B's edit lives: {l:?}");
    }
}

#[test]
fn pouchdb_and_the_door_agree_on_deleted_leaves_and_a_rerun_carries_nothing() {
    let data = users_dir(&["alice"]);
    let s = start(data.path());
    let db = team_db(&s, "t");
    let mut p = Pouch::open(&db, ALICE);
    put(&db, "x", json!({"v": 0}));
    put(&db, "y", json!({"v": 0}));
    p.replicate("pull");
    // x: deleted in PouchDB, edited twice here (PouchDB's deletion loses).
    // y: edited twice in PouchDB, deleted here (the door's deletion loses).
    let px = p.call(json!({"op": "get", "id": "x"}));
    let gone = p.call(json!({"op": "remove", "id": "x", "rev": px["_rev"]}));
    assert_eq!(gone["ok"], json!(true), "{gone}");
    let mut py = p.call(json!({"op": "get", "id": "y"}));
    for v in [1, 2] {
        py["v"] = json!(v);
        let r = p.call(json!({"op": "put", "doc": py}));
        py["_rev"] = r["rev"].clone();
    }
    let x = ok("GET", &format!("{db}/x"), ALICE, None);
    let x2 = put(&db, "x", json!({"_rev": x["_rev"], "v": 1}));
    put(&db, "x", json!({"_rev": x2, "v": 2}));
    let y = ok("GET", &format!("{db}/y"), ALICE, None);
    let y_dead = ok(
        "DELETE",
        &format!("{db}/y?rev={}", y["_rev"].as_str().unwrap()),
        ALICE,
        None,
    )["rev"]
        .as_str()
        .unwrap()
        .to_string();

    let r = p.call(json!({"op": "sync"}));
    assert_eq!(r["push"]["ok"], json!(true), "{r}");
    let tree_p = p.call(json!({"op": "tree"}));
    let tree_f = door_tree(&db, &["x", "y"]);
    for (f, pd) in tree_f.iter().zip(tree_p.as_array().unwrap()) {
        let mut pl = pd["leaves"].as_array().unwrap().clone();
        pl.sort_by_key(|l| l["_rev"].as_str().unwrap().to_string());
        assert!(
            same(&f["leaves"], &Value::Array(pl)),
            "PouchDB and the door differ:\n{f}\n{pd}"
        );
        assert_eq!(f["winner"]["_rev"], pd["winner"]["_rev"]);
    }
    assert!(
        leaves(&db, "y").contains(&(y_dead.clone(), true)),
        "the door's acknowledged deletion of y survives PouchDB's push"
    );
    assert_eq!(leaves(&db, "x").iter().filter(|l| l.1).count(), 1);

    // A rerun carries nothing either way (PouchDB does not push the
    // deleted leaf again, as it would if the door had not kept it).
    let again = p.call(json!({"op": "sync"}));
    for dir in ["pull", "push"] {
        assert_eq!(again[dir]["docs_written"], json!(0), "{dir}: {again}");
        assert_eq!(again[dir]["docs_read"], json!(0), "{dir}: {again}");
    }

    // After kill -9, the same tree.
    s.kill();
    let s = start(data.path());
    let db = format!("{}/t", couch_url(&s));
    assert!(
        same(&json!(door_tree(&db, &["x", "y"])), &json!(tree_f)),
        "the tree after kill -9"
    );
}
