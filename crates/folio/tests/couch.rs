//! The CouchDB door end to end: the real `folio serve` with
//! `FOLIO__COUCHDB_LISTEN` set, real PouchDB (npm `pouchdb` in Node, a
//! memory database; `scripts/install-pouchdb.sh` installs it on first
//! miss) replicating both ways, plain HTTP for bad input, and kill -9
//! during `_bulk_docs`.

mod common;
#[path = "couch/support.rs"]
mod support;

use base64::Engine as _;
use common::users_dir;
use serde_json::{json, Value};
use support::*;

#[test]
fn pouchdb_replicates_both_ways_and_conflicts_converge() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "team");
    // Documents made at the door, of every JSON shape, and one made by a
    // native client.
    let docs: Vec<Value> = (0..30)
        .map(|i| {
            json!({"_id": format!("doc-{i:02}"), "n": i, "title": format!("title {i}"),
                   "done": i % 2 == 0, "tags": ["a", "b"], "meta": {"deep": [1, {"x": null}]}})
        })
        .collect();
    let written = ok(
        "POST",
        &format!("{db}/_bulk_docs"),
        ALICE,
        Some(json!({"docs": docs})),
    );
    assert_eq!(written.as_array().unwrap().len(), 30);
    let native = ok(
        "POST",
        &format!("http://{}/db/team.fdb/docs", s.http),
        ALICE,
        Some(json!({"Subject": "made natively", "Count": 3})),
    );
    let native_id = native["unid"].as_str().unwrap().to_string();

    let mut pouch = Pouch::open(&db, ALICE);
    let pulled = pouch.replicate("pull");
    assert_eq!(pulled["docs_written"], json!(31), "{pulled}");
    assert!(
        same_docs(&pouch.all(), &folio_all(&db, ALICE)),
        "the pull copies every document exactly"
    );

    // Edits in PouchDB: five changed, five new, two deleted.
    let mine: Vec<Value> = pouch
        .all()
        .into_iter()
        .filter(|d| d["_id"].as_str().unwrap().starts_with("doc-"))
        .collect();
    for d in mine.iter().take(5) {
        let mut d = d.clone();
        d["title"] = json!("edited in pouch");
        d.as_object_mut().unwrap().remove("_conflicts");
        assert!(pouch.call(json!({"op": "put", "doc": d}))["ok"] == json!(true));
    }
    for i in 0..5 {
        pouch.call(json!({"op": "put", "doc": {"_id": format!("new-{i}"), "from": "pouch"}}));
    }
    for d in mine.iter().skip(5).take(2) {
        let r = pouch.call(json!({"op": "remove", "id": d["_id"], "rev": d["_rev"]}));
        assert_eq!(r["ok"], json!(true), "{r}");
    }
    let pushed = pouch.replicate("push");
    assert_eq!(pushed["docs_written"], json!(12), "{pushed}");
    assert!(
        same_docs(&pouch.all(), &folio_all(&db, ALICE)),
        "the push converges"
    );
    assert_eq!(ok("GET", &db, ALICE, None)["doc_count"], json!(34));

    // A native edit and a door edit reach PouchDB as plain updates.
    let n = ok(
        "PUT",
        &format!("http://{}/db/team.fdb/docs/{native_id}", s.http),
        ALICE,
        Some(json!({"Subject": "edited natively"})),
    );
    assert_eq!(n["seq"], json!(2));
    let y = ok("GET", &format!("{db}/doc-10"), ALICE, None);
    let mut y2 = y.clone();
    y2["title"] = json!("edited at the door");
    ok("PUT", &format!("{db}/doc-10"), ALICE, Some(y2));
    pouch.replicate("pull");
    let all = pouch.all();
    assert!(same_docs(&all, &folio_all(&db, ALICE)));
    assert!(
        all.iter().all(|d| d.get("_conflicts").is_none()),
        "no conflicts: {all:?}"
    );
    let nd = pouch.call(json!({"op": "get", "id": native_id}));
    assert_eq!(nd["Subject"], json!("edited natively"));
    assert_eq!(nd["_rev"].as_str().unwrap().split('-').next(), Some("2"));

    // Concurrent edits of one document: a conflict on both sides, the
    // same winner, the same losing revision.
    let z = pouch.call(json!({"op": "get", "id": "doc-20"}));
    let mut zp = z.clone();
    zp["title"] = json!("pouch side");
    pouch.call(json!({"op": "put", "doc": zp}));
    let mut zf = ok("GET", &format!("{db}/doc-20"), ALICE, None);
    zf["title"] = json!("folio side");
    ok("PUT", &format!("{db}/doc-20"), ALICE, Some(zf));
    pouch.replicate("push");
    pouch.replicate("pull");
    let here = pouch.call(json!({"op": "get", "id": "doc-20", "opts": {"conflicts": true}}));
    let there = ok("GET", &format!("{db}/doc-20?conflicts=true"), ALICE, None);
    assert_eq!(
        here["_conflicts"].as_array().map(Vec::len),
        Some(1),
        "{here}"
    );
    assert!(same(&here, &there), "pouch {here} folio {there}");
    // Natively, the loser is a conflict document.
    let changes = ok(
        "GET",
        &format!("http://{}/db/team.fdb/docs?since=0&limit=1000", s.http),
        ALICE,
        None,
    );
    let conflict_docs = changes.to_string().matches("\"$Conflict\"").count();
    assert_eq!(conflict_docs, 1, "{changes}");

    // Resolved in PouchDB: the losing revision deleted, then synced.
    let loser = here["_conflicts"][0].clone();
    pouch.call(json!({"op": "remove", "id": "doc-20", "rev": loser}));
    pouch.replicate("push");
    pouch.replicate("pull");
    let there = ok("GET", &format!("{db}/doc-20?conflicts=true"), ALICE, None);
    assert!(there.get("_conflicts").is_none(), "{there}");
    assert!(same_docs(&pouch.all(), &folio_all(&db, ALICE)), "converged");

    // A second PouchDB starting from nothing gets the same database.
    let mut other = Pouch::open(&db, ALICE);
    other.replicate("pull");
    assert!(same_docs(&other.all(), &pouch.all()));
    // Nothing changed: a rerun writes nothing.
    assert_eq!(other.replicate("pull")["docs_written"], json!(0));
}

#[test]
fn readers_hidden_documents_never_reach_an_unauthorised_pouchdb() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "hr");
    let mut docs: Vec<Value> = (0..5)
        .map(|i| json!({"_id": format!("open-{i}"), "v": i}))
        .collect();
    for i in 0..3 {
        docs.push(json!({"_id": format!("secret-{i}"), "v": i, "$Readers": ["alice"]}));
    }
    ok(
        "POST",
        &format!("{db}/_bulk_docs"),
        ALICE,
        Some(json!({"docs": docs})),
    );
    // A hidden document edited and deleted stays hidden in every form.
    let s0 = ok("GET", &format!("{db}/secret-0"), ALICE, None);
    let del = format!("{db}/secret-0?rev={}", s0["_rev"].as_str().unwrap());
    ok("DELETE", &del, ALICE, None);

    let mut bobs = Pouch::open(&db, BOB);
    bobs.replicate("pull");
    let ids: Vec<String> = bobs
        .all()
        .iter()
        .map(|d| d["_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, (0..5).map(|i| format!("open-{i}")).collect::<Vec<_>>());
    let mut alices = Pouch::open(&db, ALICE);
    alices.replicate("pull");
    assert_eq!(alices.all().len(), 7);

    let info = ok("GET", &db, BOB, None);
    assert_eq!(
        (info["doc_count"].clone(), info["doc_del_count"].clone()),
        (json!(5), json!(0))
    );
    let listing = ok("GET", &format!("{db}/_all_docs"), BOB, None);
    assert_eq!(listing["total_rows"], json!(5));
    let feed = ok("GET", &format!("{db}/_changes?style=all_docs"), BOB, None);
    assert_eq!(feed["results"].as_array().unwrap().len(), 5);
    let keys = ok(
        "POST",
        &format!("{db}/_all_docs"),
        BOB,
        Some(json!({"keys": ["secret-1"]})),
    );
    assert_eq!(keys["rows"][0]["error"], json!("not_found"));
    for (route, body) in [
        ("_bulk_get", json!({"docs": [{"id": "secret-1"}]})),
        ("_revs_diff", json!({"secret-1": ["1-abc"]})),
    ] {
        let a = ok("POST", &format!("{db}/{route}"), BOB, Some(body));
        assert!(!a.to_string().contains("\"v\""), "{route}: {a}");
    }
    let (status, e) = req("GET", &format!("{db}/secret-1"), Some(BOB), None);
    assert_eq!((status, e["error"].clone()), (404, json!("not_found")));
    let all = format!("{db}/secret-1?open_revs=all");
    assert_eq!(req("GET", &all, Some(BOB), None).0, 404);
    // Everything bob learns is the same whether the secrets exist or not:
    // nothing of them is in any answer above.
    for a in [&info, &listing, &feed] {
        assert!(!a.to_string().contains("secret"), "{a}");
    }
    // Carol (an Author) edits only what names her in $Authors: a push is
    // refused per document, the rest of it written.
    let owned = ok(
        "PUT",
        &format!("{db}/owned"),
        ALICE,
        Some(json!({"$Authors": ["alice"], "v": 1})),
    );
    let push = json!({"docs": [
        {"_id": "owned", "_rev": owned["rev"], "v": 2},
        {"_id": "carols", "$Authors": ["carol"], "v": 1},
    ]});
    let answer = ok("POST", &format!("{db}/_bulk_docs"), CAROL, Some(push));
    assert_eq!(answer[0]["error"], json!("forbidden"), "{answer}");
    assert_eq!(answer[1]["ok"], json!(true), "{answer}");
    assert_eq!(
        ok("GET", &format!("{db}/owned"), ALICE, None)["v"],
        json!(1)
    );
    let replicated = json!({"new_edits": false, "docs": [
        {"_id": "owned", "_rev": "2-abc", "v": 3, "_revisions": {"start": 2, "ids": ["abc", owned["rev"].as_str().unwrap().split_once('-').unwrap().1]}},
    ]});
    let answer = ok("POST", &format!("{db}/_bulk_docs"), CAROL, Some(replicated));
    assert_eq!(answer[0]["error"], json!("forbidden"), "{answer}");
    assert_eq!(
        ok("GET", &format!("{db}/owned"), ALICE, None)["v"],
        json!(1)
    );

    // Bob (a Reader) cannot push.
    let bad = json!({"docs": [{"_id": "open-0", "_rev": "9-abc", "_revisions": {"start": 9, "ids": ["abc"]}}],
                     "new_edits": false});
    let (status, e) = req(
        "POST",
        &format!("{db}/_bulk_docs"),
        Some(BOB),
        Some(&bad.to_string()),
    );
    assert_eq!((status, e["error"].clone()), (403, json!("forbidden")));
}

#[test]
fn bad_input_gets_couchdb_errors_and_changes_nothing() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "input");
    let base = couch_url(&s);
    ok("PUT", &format!("{db}/a"), ALICE, Some(json!({"x": 1})));
    let before = ok("GET", &db, ALICE, None);
    let big = format!("{{\"x\":\"{}\"}}", "y".repeat(9 << 20));
    let long_history = json!({"docs": [{"_id": "h", "_rev": "1001-a",
        "_revisions": {"start": 1001, "ids": vec!["a"; 1001]}}], "new_edits": false});
    let cases: Vec<(&str, String, Option<String>, u16, &str)> = vec![
        (
            "PUT",
            format!("{db}/b"),
            Some("{not json".into()),
            400,
            "bad_request",
        ),
        (
            "PUT",
            format!("{db}/b"),
            Some("[1,2]".into()),
            400,
            "bad_request",
        ),
        (
            "PUT",
            format!("{db}/b"),
            Some(r#"{"_rev":"x-1"}"#.into()),
            400,
            "bad_request",
        ),
        (
            "PUT",
            format!("{db}/b"),
            Some(r#"{"_weird":1}"#.into()),
            400,
            "doc_validation",
        ),
        (
            "PUT",
            format!("{db}/a"),
            Some(r#"{"x":2}"#.into()),
            409,
            "conflict",
        ),
        (
            "PUT",
            format!("{db}/a"),
            Some(r#"{"_rev":"1-0000","x":2}"#.into()),
            409,
            "conflict",
        ),
        ("PUT", format!("{db}/b"), Some(big), 413, "too_large"),
        (
            "POST",
            format!("{db}/_bulk_docs"),
            Some(r#"{"docs":[{"_id":"c"},{"_id":"d","_rev":"bad"}]}"#.into()),
            400,
            "bad_request",
        ),
        (
            "POST",
            format!("{db}/_bulk_docs"),
            Some(r#"{"docs":[{"_id":"c","x":1}],"new_edits":false}"#.into()),
            400,
            "bad_request",
        ),
        (
            "POST",
            format!("{db}/_bulk_docs"),
            Some(long_history.to_string()),
            400,
            "bad_request",
        ),
        (
            "POST",
            format!("{db}/_bulk_docs"),
            Some(r#"{"nodocs":1}"#.into()),
            400,
            "bad_request",
        ),
        (
            "POST",
            format!("{db}/_revs_diff"),
            Some(r#"{"a":["nope"]}"#.into()),
            400,
            "bad_request",
        ),
        ("GET", format!("{db}/a?rev=1-"), None, 400, "bad_request"),
        ("GET", format!("{db}/nothing"), None, 404, "not_found"),
        ("GET", format!("{base}/nodb"), None, 404, "not_found"),
        (
            "PUT",
            format!("{base}/Bad%20Name"),
            None,
            400,
            "illegal_database_name",
        ),
        (
            "GET",
            format!("{db}/_changes?filter=myddoc/myfilter"),
            None,
            501,
            "not_implemented",
        ),
    ];
    for (method, url, body, status, error) in cases {
        let (got, v) = req(method, &url, Some(ALICE), body.as_deref());
        assert_eq!(
            (got, v["error"].as_str()),
            (status, Some(error)),
            "{method} {url}: {v}"
        );
        assert!(v["reason"].is_string(), "{v}");
    }
    let (got, v) = req("GET", &db, None, None);
    assert_eq!((got, v["error"].as_str()), (401, Some("unauthorized")));
    let (got, v) = req("GET", &db, Some(("alice", "wrong")), None);
    assert_eq!((got, v["error"].as_str()), (401, Some("unauthorized")));
    let after = ok("GET", &db, ALICE, None);
    for k in ["update_seq", "doc_count", "doc_del_count"] {
        assert_eq!(before[k], after[k], "nothing changed: {k}");
    }

    // A session cookie signs in as the user.
    let login = ureq::post(&format!("{base}/_session"))
        .send_json(json!({"name": "alice", "password": "alice-password"}))
        .unwrap();
    let cookie = login
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let me: Value = ureq::get(&format!("{base}/_session"))
        .set("Cookie", &cookie)
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(me["userCtx"]["name"], json!("alice"));
    let info: Value = ureq::get(&db)
        .set("Cookie", &cookie)
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(info["doc_count"], json!(1));
}

#[test]
fn kill_during_bulk_docs_keeps_exactly_the_acknowledged_documents() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let mut s = start(data.path());
    team_db(&s, "kill");
    let mut acknowledged: Vec<(String, String)> = Vec::new();
    let mut in_flight: Vec<Vec<String>> = Vec::new();
    for trial in 0..3u64 {
        let url = format!("{}/kill/_bulk_docs", couch_url(&s));
        let (tx, rx) = std::sync::mpsc::channel();
        let sender = std::thread::spawn(move || {
            for batch in 0.. {
                let ids: Vec<String> = (0..50).map(|i| format!("t{trial}-b{batch}-{i}")).collect();
                let docs: Vec<Value> = ids
                    .iter()
                    .map(|id| json!({"_id": id, "pad": "x".repeat(2000)}))
                    .collect();
                let body = json!({"docs": docs}).to_string();
                if tx.send(Err(ids.clone())).is_err() {
                    return;
                }
                let token =
                    base64::engine::general_purpose::STANDARD.encode("alice:alice-password");
                let r = ureq::post(&url)
                    .set("Authorization", &format!("Basic {token}"))
                    .send_string(&body);
                match r.ok().and_then(|r| r.into_json::<Value>().ok()) {
                    Some(Value::Array(a)) => {
                        let revs = a
                            .iter()
                            .map(|x| {
                                (
                                    x["id"].as_str().unwrap().to_string(),
                                    x["rev"].as_str().unwrap().to_string(),
                                )
                            })
                            .collect();
                        if tx.send(Ok(revs)).is_err() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(300 + 250 * trial));
        unsafe { libc::kill(s.pid() as i32, libc::SIGKILL) };
        sender.join().unwrap();
        let mut pending = None;
        for m in rx.try_iter() {
            match m {
                Ok(revs) => {
                    acknowledged.extend::<Vec<(String, String)>>(revs);
                    pending = None;
                }
                Err(ids) => pending = Some(ids),
            }
        }
        in_flight.extend(pending);
        drop(s);
        s = start(data.path());
    }
    let db = format!("{}/kill", couch_url(&s));
    assert!(!acknowledged.is_empty(), "some batches were acknowledged");
    for (id, rev) in &acknowledged {
        let d = ok("GET", &format!("{db}/{id}"), ALICE, None);
        assert_eq!(d["_rev"].as_str(), Some(rev.as_str()), "{id}");
    }
    // A batch in flight at the kill is all there or not at all.
    for ids in &in_flight {
        let present: Vec<bool> = ids
            .iter()
            .map(|id| req("GET", &format!("{db}/{id}"), Some(ALICE), None).0 == 200)
            .collect();
        assert!(
            present.iter().all(|p| *p) || present.iter().all(|p| !*p),
            "{ids:?}: {present:?}"
        );
    }
    let count = ok("GET", &db, ALICE, None)["doc_count"].as_u64().unwrap() as usize;
    let whole_in_flight: usize = in_flight
        .iter()
        .filter(|ids| req("GET", &format!("{db}/{}", ids[0]), Some(ALICE), None).0 == 200)
        .map(Vec::len)
        .sum();
    assert_eq!(
        count,
        acknowledged.len() + whole_in_flight,
        "nothing else is stored"
    );
}
