//! `$Readers` through every endpoint of the CouchDB door, as a
//! difference test: two databases ("twins") are made by the same
//! sequence of writes, except that the documents hidden from bob (a
//! Reader) and dave (an Editor) — by `$Readers` naming only alice —
//! have other ids, other content, other attachments and other conflicts
//! in each. Every request bob or dave can make (database info,
//! `_all_docs` in each form, `_changes` in every feed style and filter,
//! `_bulk_get`, `open_revs`, `_revs_diff`, `_find`, attachments, reads
//! of one document in each form, and writes naming hidden ids) must
//! then answer byte for byte the same in both twins: whatever a hidden
//! document is — its id, its content, how many revisions or conflicts
//! it has, whether it exists at all — nothing in a count, a seq, an
//! error text or a status tells. A third database without the hidden
//! documents at all gives the same counts and rows.

mod common;
#[path = "couch/support.rs"]
mod support;

use common::users_dir;
use serde_json::{json, Value};
use support::*;

const DAVE: (&str, &str) = ("dave", "dave-password");

/// The hidden documents of one twin: their ids and what tells them apart.
struct Hidden {
    ids: [&'static str; 4],
    word: &'static str,
    attachment: Vec<u8>,
}

/// A database made by the same writes whatever `hidden` is (`None`: the
/// hidden documents are not written at all).
fn build(s: &common::Server, name: &str, hidden: Option<&Hidden>) -> String {
    let db = team_db(s, name);
    let acl = json!({"default": "noaccess", "entries": [
        {"name": "alice", "level": "editor"},
        {"name": "bob", "level": "reader"},
        {"name": "dave", "level": "editor"},
        {"name": "admin", "level": "manager"},
    ]});
    ok(
        "PUT",
        &format!("http://{}/db/{name}.fdb/_acl", s.http),
        ADMIN,
        Some(acl),
    );
    let visible = |i: usize| json!({"_id": format!("v{i}"), "kind": "open", "n": i});
    let put = |doc: Value| {
        ok(
            "POST",
            &format!("{db}/_bulk_docs"),
            ALICE,
            Some(json!({"docs": [doc]})),
        )
    };
    let hide = |i: usize, extra: Value| {
        if let Some(h) = hidden {
            let mut d = json!({"_id": h.ids[i], "kind": "secret", "word": h.word,
                               "$Readers": ["alice"], "n": 100 + i});
            d.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            put(d);
        }
    };
    put(visible(0));
    hide(0, json!({}));
    put(visible(1));
    hide(
        1,
        json!({"_attachments": {"secret.bin": {"content_type": "application/x-secret",
                                                   "data": b64(hidden.map_or(&[][..], |h| &h.attachment))}}}),
    );
    put(
        json!({"_id": "v2", "kind": "open", "_attachments": {"open.txt": {"content_type": "text/plain", "data": b64(b"open content")}}}),
    );
    hide(2, json!({}));
    hide(3, json!({}));
    put(visible(3));
    if let Some(h) = hidden {
        // hidden 0 edited twice, hidden 2 deleted, hidden 3 in conflict.
        for k in 0..2 {
            let url = format!("{db}/{}", h.ids[0]);
            let mut d = ok("GET", &url, ALICE, None);
            d["round"] = json!(k);
            ok("PUT", &url, ALICE, Some(d));
        }
        let url = format!("{db}/{}", h.ids[2]);
        let d = ok("GET", &url, ALICE, None);
        ok(
            "DELETE",
            &format!("{url}?rev={}", d["_rev"].as_str().unwrap()),
            ALICE,
            None,
        );
        let branch = json!({"new_edits": false, "docs": [{"_id": h.ids[3], "_rev": "1-0123456789abcdef0123456789abcdef",
            "_revisions": {"start": 1, "ids": ["0123456789abcdef0123456789abcdef"]},
            "kind": "secret", "word": h.word, "$Readers": ["alice"]}]});
        ok("POST", &format!("{db}/_bulk_docs"), ALICE, Some(branch));
    }
    // The visible ones: an edit, a deletion, a conflict.
    let mut d = ok("GET", &format!("{db}/v0"), ALICE, None);
    d["round"] = json!(1);
    ok("PUT", &format!("{db}/v0"), ALICE, Some(d));
    let d = ok("GET", &format!("{db}/v1"), ALICE, None);
    ok(
        "DELETE",
        &format!("{db}/v1?rev={}", d["_rev"].as_str().unwrap()),
        ALICE,
        None,
    );
    let branch = json!({"new_edits": false, "docs": [{"_id": "v3", "_rev": "1-fedcba9876543210fedcba9876543210",
        "_revisions": {"start": 1, "ids": ["fedcba9876543210fedcba9876543210"]}, "kind": "open"}]});
    ok("POST", &format!("{db}/_bulk_docs"), ALICE, Some(branch));
    put(visible(4));
    db
}

/// One request a reader may make, relative to the database's URL.
struct Probe {
    method: &'static str,
    path: String,
    body: Option<Value>,
    accept: Option<&'static str>,
}

fn get(path: impl Into<String>) -> Probe {
    Probe {
        method: "GET",
        path: path.into(),
        body: None,
        accept: None,
    }
}

fn post(path: impl Into<String>, body: Value) -> Probe {
    Probe {
        method: "POST",
        path: path.into(),
        body: Some(body),
        accept: None,
    }
}

/// Every read a reader can make of the door, naming the hidden ids of
/// both twins (so each twin is asked about ids it holds and ids it does
/// not) and revisions real and made up.
fn reads(all_hidden: &[&str], hidden_revs: &[String]) -> Vec<Probe> {
    let q = |v: Value| encode(&v.to_string());
    let some_keys: Vec<&str> = [all_hidden, &["v0", "v1", "nope"]].concat();
    let mut p = vec![
        get(""),
        get("/_all_docs"),
        get("/_all_docs?include_docs=true&conflicts=true"),
        get("/_all_docs?descending=true"),
        get("/_all_docs?update_seq=true"),
        get("/_all_docs?skip=1&limit=2"),
        get(format!(
            "/_all_docs?startkey={}&endkey={}",
            q(json!("a")),
            q(json!("zzzz"))
        )),
        get(format!("/_all_docs?key={}", q(json!(all_hidden[0])))),
        post("/_all_docs", json!({"keys": all_hidden})),
        post("/_all_docs?include_docs=true", json!({"keys": some_keys})),
        get("/_changes"),
        get("/_changes?style=all_docs"),
        get("/_changes?include_docs=true&conflicts=true&style=all_docs"),
        get("/_changes?since=now"),
        get("/_changes?since=3"),
        get("/_changes?limit=1"),
        get("/_changes?limit=2&since=2"),
        get("/_changes?feed=longpoll&since=now&timeout=200"),
        get("/_changes?feed=continuous&timeout=200"),
        get("/_changes?feed=continuous&since=now&timeout=200"),
        get("/_changes?feed=eventsource&timeout=200"),
        get(format!(
            "/_changes?filter=_doc_ids&doc_ids={}",
            q(json!(all_hidden))
        )),
        post("/_changes?filter=_doc_ids", json!({"doc_ids": all_hidden})),
        post(
            "/_changes?filter=_selector",
            json!({"selector": {"kind": "secret"}}),
        ),
        post(
            "/_changes?filter=_selector&include_docs=true",
            json!({"selector": {"n": {"$gt": 2}}}),
        ),
        post("/_find", json!({"selector": {"kind": "secret"}})),
        post(
            "/_find",
            json!({"selector": {"n": {"$gte": 0}}, "fields": ["_id", "n"]}),
        ),
        post("/_find", json!({"selector": {"_id": {"$in": all_hidden}}})),
        post(
            "/_find",
            json!({"selector": {"$or": [{"word": {"$exists": true}}, {"kind": "open"}]}, "limit": 2, "skip": 1}),
        ),
        post(
            "/_bulk_get",
            json!({"docs": all_hidden.iter().map(|id| json!({"id": id})).collect::<Vec<_>>()}),
        ),
        post(
            "/_bulk_get?revs=true&attachments=true&latest=true",
            json!({"docs":
            all_hidden.iter().zip(hidden_revs.iter().cycle()).map(|(id, rev)| json!({"id": id, "rev": rev})).collect::<Vec<_>>()}),
        ),
        post(
            "/_revs_diff",
            json!(all_hidden
                .iter()
                .map(|id| (id.to_string(), json!(hidden_revs)))
                .collect::<serde_json::Map<_, _>>()),
        ),
    ];
    for id in all_hidden {
        for query in [
            "",
            "?revs=true",
            "?conflicts=true&deleted_conflicts=true",
            "?attachments=true",
            "?open_revs=all",
            "?open_revs=all&revs=true&latest=true",
        ] {
            p.push(get(format!("/{id}{query}")));
        }
        p.push(get(format!("/{id}?open_revs={}", q(json!(hidden_revs)))));
        p.push(get(format!("/{id}?rev={}", hidden_revs[0])));
        p.push(Probe {
            method: "GET",
            path: format!("/{id}?open_revs=all"),
            body: None,
            accept: Some("multipart/mixed"),
        });
        p.push(Probe {
            method: "GET",
            path: format!("/{id}"),
            body: None,
            accept: Some("multipart/related"),
        });
        p.push(get(format!("/{id}/secret.bin")));
        p.push(get(format!("/{id}/other.bin")));
        p.push(Probe {
            method: "HEAD",
            path: format!("/{id}/secret.bin"),
            body: None,
            accept: None,
        });
        p.push(Probe {
            method: "HEAD",
            path: format!("/{id}"),
            body: None,
            accept: None,
        });
    }
    p
}

/// Writes an Editor who may not read the hidden documents tries with
/// their ids: each refused (or not) the same way in both twins.
fn writes(all_hidden: &[&str], hidden_revs: &[String]) -> Vec<Probe> {
    let mut p = Vec::new();
    for (i, id) in all_hidden.iter().enumerate() {
        let rev = &hidden_revs[i % hidden_revs.len()];
        p.push(Probe {
            method: "PUT",
            path: format!("/{id}?rev={rev}"),
            body: Some(json!({"x": 1})),
            accept: None,
        });
        p.push(Probe {
            method: "DELETE",
            path: format!("/{id}?rev={rev}"),
            body: None,
            accept: None,
        });
        p.push(Probe {
            method: "PUT",
            path: format!("/{id}/secret.bin?rev={rev}"),
            body: Some(json!("x")),
            accept: None,
        });
        p.push(Probe {
            method: "DELETE",
            path: format!("/{id}/secret.bin?rev={rev}"),
            body: None,
            accept: None,
        });
        p.push(post(
            "/_bulk_docs",
            json!({"docs": [{"_id": id, "_rev": rev, "x": 1}]}),
        ));
    }
    p
}

/// The answer to `probe` on `db` as `who`: status, content type and
/// body, with the database's name and its instance's start time (which
/// differ between any two databases) taken out.
fn answer(db: &str, name: &str, probe: &Probe, who: (&str, &str)) -> (u16, String, String) {
    let url = format!("{db}{}", probe.path);
    let body = probe
        .body
        .as_ref()
        .map(|b| b.to_string())
        .unwrap_or_default();
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = probe.accept {
        headers.push(("Accept", a));
    }
    let (status, ct, bytes) = raw(probe.method, &url, Some(who), &headers, body.as_bytes());
    let mut text = String::from_utf8_lossy(&bytes).replace(name, "DB");
    if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
        if let Some(o) = v.as_object_mut() {
            o.remove("instance_start_time");
        }
        text = v.to_string();
    }
    // A multipart answer's boundary is made at random.
    let ct = match ct.split_once("boundary=") {
        Some((kind, b)) => {
            text = text.replace(b.trim_matches('"'), "BOUNDARY");
            kind.to_string()
        }
        None => ct,
    };
    (status, ct, text)
}

#[test]
fn a_readers_every_answer_is_the_same_whatever_the_hidden_documents_are() {
    let data = users_dir(&["alice", "bob", "dave", "eve"]);
    let s = start(data.path());
    let one = Hidden {
        ids: ["h-alpha", "h-beta", "x-gamma", "v05"],
        word: "ALPHA",
        attachment: noise(1, 9000),
    };
    let two = Hidden {
        ids: ["a-one", "zz-two", "h-three", "v00x"],
        word: "OTHER-WORD-LONGER",
        attachment: noise(2, 100),
    };
    let db1 = build(&s, "twin1", Some(&one));
    let db2 = build(&s, "twin2", Some(&two));
    let bare = build(&s, "bare", None);
    let all_hidden: Vec<&str> = one.ids.iter().chain(two.ids.iter()).copied().collect();
    // Revisions that name hidden versions in one twin or the other, and
    // one that names none.
    let mut hidden_revs: Vec<String> = Vec::new();
    for (db, h) in [(&db1, &one), (&db2, &two)] {
        for id in [h.ids[0], h.ids[1]] {
            let d = ok("GET", &format!("{db}/{id}?revs=true"), ALICE, None);
            hidden_revs.push(d["_rev"].as_str().unwrap().to_string());
        }
    }
    hidden_revs.push("1-0123456789abcdef0123456789abcdef".into());
    hidden_revs.push("9-00000000000000000000000000000000".into());
    // Alice sees them: the twins do differ.
    assert_ne!(
        answer(&db1, "twin1", &get("/_all_docs"), ALICE),
        answer(&db2, "twin2", &get("/_all_docs"), ALICE)
    );

    let mut compared = 0;
    for who in [BOB, DAVE] {
        for probe in reads(&all_hidden, &hidden_revs) {
            let a = answer(&db1, "twin1", &probe, who);
            let b = answer(&db2, "twin2", &probe, who);
            assert_eq!(a, b, "{} {} as {}", probe.method, probe.path, who.0);
            for word in ["ALPHA", "OTHER-WORD", "secret\"", "\"word\""] {
                assert!(
                    !a.2.contains(word),
                    "{} {}: {word} in {}",
                    probe.method,
                    probe.path,
                    a.2
                );
            }
            compared += 1;
        }
    }
    // A database without the hidden documents at all: the same rows and
    // counts (a row's seq may differ: other changes came between).
    for who in [BOB, DAVE] {
        for path in ["", "/_all_docs", "/_changes?style=all_docs"] {
            let with = ok("GET", &format!("{db1}{path}"), who, None);
            let without = ok("GET", &format!("{bare}{path}"), who, None);
            for key in ["doc_count", "doc_del_count", "total_rows", "offset"] {
                assert_eq!(with[key], without[key], "{path} {key} as {}", who.0);
            }
            let ids = |v: &Value, list: &str| -> Vec<Value> {
                v[list]
                    .as_array()
                    .map(|l| {
                        l.iter()
                            .map(|r| json!([r["id"], r["value"], r["changes"], r["deleted"]]))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            assert_eq!(ids(&with, "rows"), ids(&without, "rows"), "{path}");
            assert_eq!(ids(&with, "results"), ids(&without, "results"), "{path}");
        }
    }
    // Dave's writes naming hidden ids, each tried on both twins.
    for probe in writes(&all_hidden, &hidden_revs) {
        let a = answer(&db1, "twin1", &probe, DAVE);
        let b = answer(&db2, "twin2", &probe, DAVE);
        assert_eq!(a, b, "{} {} as dave", probe.method, probe.path);
        compared += 1;
    }
    // None of them touched a hidden document.
    for (db, h) in [(&db1, &one), (&db2, &two)] {
        for id in h.ids {
            let d = ok("GET", &format!("{db}/{id}?open_revs=all"), ALICE, None);
            assert!(!d.to_string().contains("\"x\""), "{id}: {d}");
        }
    }
    // What a writer does learn: an id a hidden document holds cannot be
    // made anew (409, where a free id is written) — that it is taken,
    // nothing else (docs/couchdb.md).
    let fresh = json!({"x": 2}).to_string();
    let taken = req("PUT", &format!("{db1}/h-alpha"), Some(DAVE), Some(&fresh));
    assert_eq!(
        (taken.0, taken.1["error"].clone()),
        (409, json!("conflict"))
    );
    assert_eq!(
        req("PUT", &format!("{db2}/h-alpha"), Some(DAVE), Some(&fresh)).0,
        201
    );

    // A user outside the ACL: the database is as missing as one that is
    // not there, through every route.
    let eve = ("eve", "eve-password");
    let nothere = format!("{}/nothere", couch_url(&s));
    for probe in reads(&all_hidden, &hidden_revs) {
        let a = answer(&db1, "twin1", &probe, eve);
        let b = answer(&nothere, "nothere", &probe, eve);
        assert_eq!(a, b, "{} {} as eve", probe.method, probe.path);
        assert_eq!(a.0, 404, "{} {} as eve", probe.method, probe.path);
    }
    assert!(compared > 200, "{compared} requests compared");
}
