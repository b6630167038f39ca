//! Three replicas of one database converge: two `folio serve` servers
//! replicating natively (server to server) and a PouchDB database (real
//! npm `pouchdb` in Node) syncing with both through their CouchDB doors.
//! The same documents are edited concurrently on all three — at the
//! doors, natively on the second server, and in PouchDB — and the syncs
//! are interrupted by kill -9 of a server in the middle of PouchDB's
//! `_bulk_docs`. In each round a quarter of the documents is deleted on
//! one replica while the other two edit it, so deletions race live edits
//! on all three (at a door, natively, in PouchDB). After a full sync all
//! three hold the same revision tree for every document (the same
//! winner, the same conflicts, the same deleted leaves), and every edit
//! and deletion any of them acknowledged is there: the last ones each
//! replica made as a leaf (the winner, a conflict or a deleted leaf), the
//! earlier ones as ancestors of a leaf (design.md I63).

mod common;
#[path = "couch/support.rs"]
mod support;

use common::{users_dir, Server};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use support::*;

const DB: &str = "conv";
const DOOR_DOCS: usize = 12;
const NATIVE_DOCS: usize = 4;

/// One edit a replica acknowledged: the document and the revision.
#[derive(Debug, Clone)]
struct Acked {
    id: String,
    rev: String,
    by: &'static str,
}

/// A document's revision tree as a replica shows it: the winner (with
/// `_conflicts`; `{"missing": 404}` when every leaf is deleted) and
/// every leaf with its `_revisions`, by revision.
fn folio_tree(db: &str) -> Vec<Value> {
    let feed = ok("GET", &format!("{db}/_changes?style=all_docs"), ALICE, None);
    let mut ids: Vec<String> = feed["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids.iter()
        .map(|id| {
            let (status, winner) = req(
                "GET",
                &format!("{db}/{}?conflicts=true", encode(id)),
                Some(ALICE),
                None,
            );
            let winner = if status == 200 {
                winner
            } else {
                assert_eq!(status, 404, "{id}: {winner}");
                json!({"missing": 404})
            };
            let leaves = ok(
                "GET",
                &format!("{db}/{}?open_revs=all&revs=true", encode(id)),
                ALICE,
                None,
            );
            let leaves: Vec<Value> = leaves
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["ok"].clone())
                .collect();
            json!({"id": id, "winner": winner, "leaves": leaves})
        })
        .collect()
}

/// A tree with its leaves in revision order, for comparing.
fn normal(tree: Vec<Value>) -> Vec<Value> {
    tree.into_iter()
        .map(|mut d| {
            let mut leaves = d["leaves"].as_array().unwrap().clone();
            leaves.sort_by_key(|l| l["_rev"].as_str().unwrap().to_string());
            d["leaves"] = Value::Array(leaves);
            if let Some(c) = d["winner"].get_mut("_conflicts") {
                let mut c = c.as_array().unwrap().clone();
                c.sort_by_key(|r| r.as_str().unwrap().to_string());
                d["winner"]["_conflicts"] = Value::Array(c);
            }
            d
        })
        .collect()
}

/// Every revision in a tree's leaves or their ancestry, by document.
fn known_revs(tree: &[Value]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for d in tree {
        let id = d["id"].as_str().unwrap().to_string();
        for l in d["leaves"].as_array().unwrap() {
            let start = l["_revisions"]["start"].as_u64().unwrap();
            for (i, h) in l["_revisions"]["ids"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
            {
                let rev = format!("{}-{}", start - i as u64, h.as_str().unwrap());
                out.entry(id.clone()).or_default().insert(rev);
            }
        }
    }
    out
}

fn leaf_revs(tree: &[Value]) -> BTreeMap<String, BTreeSet<String>> {
    tree.iter()
        .map(|d| {
            let revs = d["leaves"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["_rev"].as_str().unwrap().to_string())
                .collect();
            (d["id"].as_str().unwrap().to_string(), revs)
        })
        .collect()
}

/// An edit at a door of the document's current winner (a revival when
/// every leaf there is deleted): its new revision.
fn door_edit(db: &str, id: &str, value: &str) -> String {
    let url = format!("{db}/{}", encode(id));
    let (status, mut doc) = req("GET", &url, Some(ALICE), None);
    if status == 404 {
        doc = json!({"_id": id});
    }
    doc["v"] = json!(value);
    let r = ok("PUT", &url, ALICE, Some(doc));
    r["rev"].as_str().unwrap().to_string()
}

/// A deletion at a door of the document's current winner (an edit when
/// it is deleted there already): its new revision.
fn door_delete(db: &str, id: &str, value: &str) -> String {
    let url = format!("{db}/{}", encode(id));
    let (status, doc) = req("GET", &url, Some(ALICE), None);
    if status == 404 {
        return door_edit(db, id, value);
    }
    let rev = doc["_rev"].as_str().unwrap();
    let r = ok("DELETE", &format!("{url}?rev={rev}"), ALICE, None);
    r["rev"].as_str().unwrap().to_string()
}

/// A native deletion of the document's note on server `s`: the revision
/// the door shows for the stub it made (the deleted leaf that was not
/// there before). A note that is a stub already is deleted at the door.
fn native_delete(s: &Server, id: &str, value: &str) -> String {
    let door = format!("{}/{DB}/{id}?open_revs=all", couch_url(s));
    let dead = |s: &Value| -> BTreeSet<String> {
        s.as_array()
            .unwrap()
            .iter()
            .filter(|l| l["ok"]["_deleted"] == json!(true))
            .map(|l| l["ok"]["_rev"].as_str().unwrap().to_string())
            .collect()
    };
    let before = dead(&ok("GET", &door, ALICE, None));
    let url = format!("http://{}/db/{DB}.fdb/docs/{id}", s.http);
    let (status, _) = req("DELETE", &url, Some(ALICE), None);
    if status != 200 {
        return door_delete(&format!("{}/{DB}", couch_url(s)), id, value);
    }
    let after = dead(&ok("GET", &door, ALICE, None));
    let new: Vec<&String> = after.difference(&before).collect();
    assert_eq!(
        new.len(),
        1,
        "{id}: one new deleted leaf: {before:?} {after:?}"
    );
    new[0].clone()
}

/// A native edit of the document's note on server `s` (its UNID): the
/// revision the door shows for the version it made, found by content.
fn native_edit(s: &Server, id: &str, value: &str) -> String {
    let url = format!("http://{}/db/{DB}.fdb/docs/{id}", s.http);
    let (status, _) = req(
        "PUT",
        &url,
        Some(ALICE),
        Some(&json!({"v": value}).to_string()),
    );
    if status != 200 {
        // The note is a stub here: a revival at the door instead.
        return door_edit(&format!("{}/{DB}", couch_url(s)), id, value);
    }
    let door = format!("{}/{DB}/{id}?open_revs=all", couch_url(s));
    let leaves = ok("GET", &door, ALICE, None);
    leaves
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["ok"])
        .find(|d| d["v"] == json!(value))
        .unwrap_or_else(|| panic!("{id}: the native edit {value} is not a leaf: {leaves}"))["_rev"]
        .as_str()
        .unwrap()
        .to_string()
}

/// An edit in PouchDB of its current winner (a revival when it is
/// deleted there): its new revision.
fn pouch_edit(p: &mut Pouch, id: &str, value: &str) -> String {
    let mut doc = p.call(json!({"op": "get", "id": id}));
    if doc["status"] == json!(404) {
        doc = json!({"_id": id});
    }
    assert!(doc.get("error").is_none(), "{id}: {doc}");
    doc["v"] = json!(value);
    let r = p.call(json!({"op": "put", "doc": doc}));
    assert_eq!(r["ok"], json!(true), "{r}");
    r["rev"].as_str().unwrap().to_string()
}

/// A deletion in PouchDB of its current winner (an edit when it is
/// deleted there already): its new revision.
fn pouch_delete(p: &mut Pouch, id: &str, value: &str) -> String {
    let doc = p.call(json!({"op": "get", "id": id}));
    if doc["status"] == json!(404) {
        return pouch_edit(p, id, value);
    }
    let r = p.call(json!({"op": "remove", "id": id, "rev": doc["_rev"]}));
    assert_eq!(r["ok"], json!(true), "{r}");
    r["rev"].as_str().unwrap().to_string()
}

/// Which replica deletes document `i` in round `round` (the other two
/// edit it): a quarter of the documents each round, a different replica
/// in each round, none for the last quarter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Deleter {
    A,
    B,
    Pouch,
    Nobody,
}

fn deleter(i: usize, round: usize) -> Deleter {
    match (i + round) % 4 {
        0 => Deleter::A,
        1 => Deleter::B,
        2 => Deleter::Pouch,
        _ => Deleter::Nobody,
    }
}

/// One round: every document edited or deleted on all three replicas,
/// apart; each revision made, by replica.
fn round(
    ids: &[String],
    n: usize,
    (db_a, db_b, b): (&str, &str, &Server),
    p: &mut Pouch,
) -> Vec<Acked> {
    let mut made = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let who = deleter(i, n);
        let value = |r: &str| format!("{r}{n}-{id}");
        let rev = if who == Deleter::A {
            door_delete(db_a, id, &value("a"))
        } else {
            door_edit(db_a, id, &value("a"))
        };
        made.push(Acked {
            id: id.clone(),
            rev,
            by: "a door",
        });
        let rev = match (i < DOOR_DOCS, who == Deleter::B) {
            (true, true) => door_delete(db_b, id, &value("b")),
            (true, false) => door_edit(db_b, id, &value("b")),
            (false, true) => native_delete(b, id, &value("b")),
            (false, false) => native_edit(b, id, &value("b")),
        };
        made.push(Acked {
            id: id.clone(),
            rev,
            by: "b",
        });
        let rev = if who == Deleter::Pouch {
            pouch_delete(p, id, &value("p"))
        } else {
            pouch_edit(p, id, &value("p"))
        };
        made.push(Acked {
            id: id.clone(),
            rev,
            by: "pouch",
        });
    }
    made
}

/// Starts PouchDB pushing `p`'s changes to the server's door and kills
/// the server with SIGKILL as soon as two of its `_bulk_docs` batches
/// have landed (the door's document count has moved by more than a
/// batch), so the push is cut in the middle. Returns the restarted server and the
/// revisions PouchDB saw acknowledged before the kill, each of which the
/// restarted server holds.
fn push_and_kill(
    p: &mut Pouch,
    s: Server,
    data: &std::path::Path,
    acked: &mut Vec<Acked>,
) -> Server {
    let db = format!("{}/{DB}", couch_url(&s));
    let before = ok("GET", &db, ALICE, None)["doc_count"].as_u64().unwrap();
    p.call(json!({"op": "remote", "url": db}));
    p.send(json!({"op": "push_tracked", "batch_size": 10}));
    // More than one batch (of 10) has landed: PouchDB reports a batch once
    // it is acknowledged and checkpointed, before it sends the next, so
    // at least one is reported (one batch alone may move the count, by
    // revivals of documents deleted here, and be cut before its answer).
    loop {
        let count = ok("GET", &db, ALICE, None)["doc_count"].as_u64().unwrap();
        if count > before + 10 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    unsafe { libc::kill(s.pid() as i32, libc::SIGKILL) };
    let answer = p.receive();
    assert_eq!(
        answer["ok"],
        json!(false),
        "the kill cut the push: {answer}"
    );
    drop(s);
    let s = start(data);
    let db = format!("{}/{DB}", couch_url(&s));
    let written = answer["written"].as_array().unwrap();
    assert!(!written.is_empty(), "a batch was acknowledged: {answer}");
    for w in written {
        let (id, rev) = (w[0].as_str().unwrap(), w[1].as_str().unwrap());
        let (status, d) = req(
            "GET",
            &format!("{db}/{}?rev={rev}", encode(id)),
            Some(ALICE),
            None,
        );
        assert_eq!(status, 200, "{id} {rev}, acknowledged before the kill: {d}");
        acked.push(Acked {
            id: id.to_string(),
            rev: rev.to_string(),
            by: "door (pushed)",
        });
    }
    s
}

/// PouchDB syncs with both doors, the servers replicate with each other,
/// until a round changes nothing.
fn full_sync(p: &mut Pouch, a: &Server, b: &Server) {
    let door = |s: &Server| format!("{}/{DB}", couch_url(s));
    for round in 0..4 {
        let mut written = 0;
        for s in [a, b] {
            p.call(json!({"op": "remote", "url": door(s)}));
            let r = p.call(json!({"op": "sync"}));
            for dir in ["pull", "push"] {
                assert_eq!(r[dir]["ok"], json!(true), "{r}");
                assert_eq!(r[dir]["doc_write_failures"], json!(0), "{r}");
                written += r[dir]["docs_written"].as_u64().unwrap();
            }
            a.replicate_with(b, &format!("{DB}.fdb"), &["--direction", "both"]);
        }
        if written == 0 && round > 0 {
            return;
        }
    }
    panic!("four rounds of sync still carried documents");
}

#[test]
fn two_folio_servers_and_pouchdb_converge_through_edits_and_kills() {
    let (data_a, data_b) = (users_dir(&["alice"]), users_dir(&["alice"]));
    let mut a = start(data_a.path());
    let db_a = team_db(&a, DB);
    let seed: Vec<Value> = (0..DOOR_DOCS)
        .map(|i| json!({"_id": format!("d{i:02}"), "v": "seed", "n": i}))
        .collect();
    ok(
        "POST",
        &format!("{db_a}/_bulk_docs"),
        ALICE,
        Some(json!({"docs": seed})),
    );
    let native_ids: Vec<String> = (0..NATIVE_DOCS)
        .map(|i| {
            let url = format!("http://{}/db/{DB}.fdb/docs", a.http);
            let r = ok("POST", &url, ALICE, Some(json!({"v": "seed", "n": i})));
            r["unid"].as_str().unwrap().to_string()
        })
        .collect();
    let ids: Vec<String> = (0..DOOR_DOCS)
        .map(|i| format!("d{i:02}"))
        .chain(native_ids.iter().cloned())
        .collect();

    // B is a replica of A's database, made server to server; PouchDB
    // pulls everything from A.
    let mut b = start(data_b.path());
    b.replicate_with(&a, &format!("{DB}.fdb"), &["--create"]);
    let mut p = Pouch::open(&db_a, ALICE);
    p.replicate("pull");
    assert_eq!(p.all().len(), DOOR_DOCS + NATIVE_DOCS);

    // Round 1: every document edited or deleted on all three, apart;
    // many new documents in PouchDB.
    let db_b = format!("{}/{DB}", couch_url(&b));
    let mut acked = round(&ids, 1, (&db_a, &db_b, &b), &mut p);
    let pad = "x".repeat(3000);
    let news: Vec<Value> = (0..400)
        .map(|i| json!({"_id": format!("p{i:03}"), "v": "p1", "pad": pad}))
        .collect();
    let made = p.call(json!({"op": "bulk", "docs": news}));
    for r in made.as_array().unwrap() {
        acked.push(Acked {
            id: r["id"].as_str().unwrap().into(),
            rev: r["rev"].as_str().unwrap().into(),
            by: "pouch",
        });
    }

    // Interrupted syncs: PouchDB's push cut by kill -9 of A, then of B.
    a = push_and_kill(&mut p, a, data_a.path(), &mut acked);
    b = push_and_kill(&mut p, b, data_b.path(), &mut acked);
    let (db_a, db_b) = (
        format!("{}/{DB}", couch_url(&a)),
        format!("{}/{DB}", couch_url(&b)),
    );
    // A partial native replication between them.
    a.replicate_with(&b, &format!("{DB}.fdb"), &["--direction", "pull"]);

    // Round 2: each edits or deletes its own winner again (another
    // replica deleting); these are the last revisions, so each must end
    // as a leaf: the winner, a conflict or a deleted leaf.
    let last = round(&ids, 2, (&db_a, &db_b, &b), &mut p);

    full_sync(&mut p, &a, &b);

    let tree_a = normal(folio_tree(&db_a));
    let tree_b = normal(folio_tree(&db_b));
    let tree_p = normal(p.call(json!({"op": "tree"})).as_array().unwrap().clone());
    assert_eq!(tree_a.len(), DOOR_DOCS + NATIVE_DOCS + 400);
    for (x, y, what) in [
        (&tree_a, &tree_b, "A and B"),
        (&tree_a, &tree_p, "A and PouchDB"),
    ] {
        assert_eq!(x.len(), y.len(), "{what}: as many documents");
        for (l, r) in x.iter().zip(y.iter()) {
            assert!(same(l, r), "{what} differ:\n{l}\n{r}");
        }
    }
    // Concurrent edits made conflicts, and they are the same everywhere;
    // the deletions that raced them are deleted leaves beside them.
    let conflicted = tree_a
        .iter()
        .filter(|d| d["leaves"].as_array().unwrap().len() > 1)
        .count();
    assert!(
        conflicted >= ids.len(),
        "{conflicted} documents in conflict"
    );
    let beside_live = tree_a
        .iter()
        .filter(|d| {
            let l = d["leaves"].as_array().unwrap();
            l.iter().any(|x| x["_deleted"] == json!(true))
                && l.iter().any(|x| x["_deleted"] != json!(true))
        })
        .count();
    assert!(
        beside_live >= ids.len() / 2,
        "{beside_live} documents with a deleted leaf beside a live one"
    );

    let known = known_revs(&tree_a);
    for e in &acked {
        assert!(
            known.get(&e.id).is_some_and(|r| r.contains(&e.rev)),
            "{} acknowledged {} {} and it is lost",
            e.by,
            e.id,
            e.rev
        );
    }
    let leaves = leaf_revs(&tree_a);
    for e in &last {
        assert!(
            leaves.get(&e.id).is_some_and(|r| r.contains(&e.rev)),
            "{e:?}, a last edit, is neither the winner nor a conflict: {:?}",
            leaves.get(&e.id)
        );
    }
}
