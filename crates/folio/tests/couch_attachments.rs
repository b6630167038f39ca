//! Attachments through the CouchDB door, end to end: real PouchDB (Node)
//! pushing and pulling documents with attachments against the real
//! `folio serve`, byte for byte; CouchDB's multipart forms over plain
//! HTTP; bad and hostile input; `$Readers`; kill -9 during a push with
//! attachments.

mod common;
#[path = "couch/support.rs"]
mod support;

use common::{users_dir, Server};
use serde_json::{json, Value};
use support::*;

/// The server with the door on and attachments limited to `max`.
fn start_limited(data: &std::path::Path, max: &str) -> Server {
    Server::start_with_env(
        data,
        &[
            ("FOLIO__COUCHDB_LISTEN", "127.0.0.1:0"),
            ("FOLIO__MAX_ATTACHMENT_SIZE", max),
        ],
    )
}

/// The attachment `name` of `id` as the door serves it.
fn door_bytes(db: &str, id: &str, name: &str, who: (&str, &str)) -> (u16, Vec<u8>) {
    let (status, _, bytes) = raw("GET", &format!("{db}/{id}/{name}"), Some(who), &[], &[]);
    (status, bytes)
}

/// PouchDB's copy of `id` with its attachments' content (base64).
fn pouch_doc(p: &mut Pouch, id: &str) -> Value {
    p.call(json!({"op": "get", "id": id, "opts": {"attachments": true}}))
}

fn objects_in_store(data: &std::path::Path) -> usize {
    let dir = data.join("attachstore/objects");
    std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|sub| std::fs::read_dir(sub.path()).map_or(0, |f| f.count()))
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn pouchdb_replicates_attachments_both_ways_byte_identical() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "files");
    let small = b"Hello, world!".to_vec();
    let big = noise(1, 100_000);
    let other = noise(2, 30_000);

    // PouchDB writes documents with attachments and pushes them.
    let mut a = Pouch::open(&db, ALICE);
    let put = a.call(
        json!({"op": "put", "doc": {"_id": "note", "title": "t", "_attachments": {
            "hello.txt": {"content_type": "text/plain", "data": b64(&small)},
            "big.bin": {"content_type": "application/octet-stream", "data": b64(&big)},
        }}}),
    );
    assert_eq!(put["ok"], json!(true), "{put}");
    a.call(json!({"op": "put", "doc": {"_id": "copy", "_attachments": {
        "same.bin": {"content_type": "application/x-same", "data": b64(&big)},
    }}}));
    a.replicate("push");

    // Folio serves each byte for byte, with CouchDB's digest.
    assert_eq!(
        door_bytes(&db, "note", "hello.txt", BOB),
        (200, small.clone())
    );
    assert_eq!(door_bytes(&db, "note", "big.bin", BOB), (200, big.clone()));
    assert_eq!(door_bytes(&db, "copy", "same.bin", BOB), (200, big.clone()));
    let stub = ok("GET", &format!("{db}/note"), BOB, None);
    let pouch_note = a.call(json!({"op": "get", "id": "note"}));
    assert_eq!(stub["_rev"], pouch_note["_rev"]);
    for (name, bytes) in [("hello.txt", &small), ("big.bin", &big)] {
        let att = &stub["_attachments"][name];
        assert_eq!(att["digest"].as_str().unwrap(), md5_digest(bytes), "{name}");
        assert_eq!(att["digest"], pouch_note["_attachments"][name]["digest"]);
        assert_eq!(att["length"], json!(bytes.len()));
        assert_eq!(att["stub"], json!(true));
        assert_eq!(att["revpos"], json!(1));
    }
    // The same content twice is one object of the attachment store.
    assert_eq!(objects_in_store(data.path()), 1, "dedup kept");

    // Edits at Folio: a native attachment added to a native document, an
    // attachment replaced and one added through the door.
    let native = ok(
        "POST",
        &format!("http://{}/db/files.fdb/docs", s.http),
        ALICE,
        Some(json!({"subject": "native"})),
    );
    let unid = native["unid"].as_str().expect("a UNID").to_string();
    let (st, _, _) = raw(
        "PUT",
        &format!(
            "http://{}/db/files.fdb/docs/{unid}/attachments/n.bin",
            s.http
        ),
        Some(ALICE),
        &[("Content-Type", "application/x-native")],
        &other,
    );
    assert_eq!(st, 201);
    let rev = stub["_rev"].as_str().unwrap();
    let replaced = b"Hello again".to_vec();
    let (st, _, body) = raw(
        "PUT",
        &format!("{db}/note/hello.txt?rev={rev}"),
        Some(ALICE),
        &[("Content-Type", "text/plain")],
        &replaced,
    );
    assert_eq!(st, 201, "{}", String::from_utf8_lossy(&body));
    let rev2 = serde_json::from_slice::<Value>(&body).unwrap()["rev"]
        .as_str()
        .unwrap()
        .to_string();
    let after = ok("GET", &format!("{db}/note"), ALICE, None);
    assert_eq!(after["_attachments"]["hello.txt"]["revpos"], json!(2));
    assert_eq!(
        after["_attachments"]["big.bin"]["revpos"],
        json!(1),
        "a stub keeps its revpos"
    );

    // PouchDB pulls it all, byte for byte.
    a.replicate("pull");
    let note = pouch_doc(&mut a, "note");
    assert_eq!(note["_rev"].as_str(), Some(rev2.as_str()));
    assert_eq!(
        note["_attachments"]["hello.txt"]["data"],
        json!(b64(&replaced))
    );
    assert_eq!(note["_attachments"]["big.bin"]["data"], json!(b64(&big)));
    let n = pouch_doc(&mut a, &unid);
    assert_eq!(
        n["_attachments"]["n.bin"]["data"],
        json!(b64(&other)),
        "{n}"
    );
    assert_eq!(
        n["_attachments"]["n.bin"]["content_type"],
        json!("application/x-native")
    );
    assert_eq!(
        n["_attachments"]["n.bin"]["digest"].as_str().unwrap(),
        md5_digest(&other)
    );

    // PouchDB edits a field (attachments kept) and drops one attachment.
    let mut edited = a.call(json!({"op": "get", "id": "note"}));
    edited["title"] = json!("edited");
    edited["_attachments"]
        .as_object_mut()
        .unwrap()
        .remove("hello.txt");
    assert_eq!(
        a.call(json!({"op": "put", "doc": edited}))["ok"],
        json!(true)
    );
    a.replicate("push");
    let back = ok("GET", &format!("{db}/note"), ALICE, None);
    assert_eq!(back["title"], json!("edited"));
    let names: Vec<&String> = back["_attachments"].as_object().unwrap().keys().collect();
    assert_eq!(names, vec!["big.bin"]);
    assert_eq!(
        door_bytes(&db, "note", "big.bin", ALICE),
        (200, big.clone())
    );
    assert_eq!(
        door_bytes(&db, "note", "hello.txt", ALICE).0,
        404,
        "the dropped attachment is gone from the winner"
    );
    let old = raw(
        "GET",
        &format!("{db}/note/hello.txt?rev={rev2}"),
        Some(ALICE),
        &[],
        &[],
    );
    assert_eq!(
        old.0, 404,
        "an old revision's content is not kept (not a leaf)"
    );

    // A second PouchDB pulls the same database: identical to the first.
    let mut b = Pouch::open(&db, BOB);
    b.replicate("pull");
    for id in ["note", "copy", unid.as_str()] {
        let (x, y) = (pouch_doc(&mut a, id), pouch_doc(&mut b, id));
        assert_eq!(x["_rev"], y["_rev"], "{id}");
        assert!(
            same_content(&x["_attachments"], &y["_attachments"]),
            "{id}: {} vs {}",
            without_data(&x),
            without_data(&y)
        );
    }
    // A rerun moves nothing.
    let again = b.replicate("pull");
    assert_eq!(again["docs_written"], json!(0));
}

#[test]
fn multipart_forms_work_as_the_couchdb_replicator_uses_them() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "mp");
    let content = noise(3, 5_000);
    let digest = md5_digest(&content);
    let doc = json!({
        "_id": "m", "_rev": "1-0123456789abcdef0123456789abcdef",
        "_revisions": {"start": 1, "ids": ["0123456789abcdef0123456789abcdef"]},
        "v": 1,
        "_attachments": {"f.bin": {"follows": true, "content_type": "application/x-f",
                                   "length": content.len(), "digest": digest, "revpos": 1}},
    });
    let body = related("bnd", &doc, &[("f.bin", &content)]);
    let put = raw(
        "PUT",
        &format!("{db}/m?new_edits=false"),
        Some(ALICE),
        &RELATED,
        &body,
    );
    assert_eq!(put.0, 201, "{}", String::from_utf8_lossy(&put.2));
    assert_eq!(door_bytes(&db, "m", "f.bin", ALICE), (200, content.clone()));

    // What the replicator asks for: open_revs, multipart/mixed.
    let (st, ct, bytes) = raw(
        "GET",
        &format!("{db}/m?revs=true&open_revs=[\"1-0123456789abcdef0123456789abcdef\",\"9-00\"]&latest=true&attachments=true"),
        Some(BOB),
        &[("Accept", "multipart/mixed")],
        &[],
    );
    assert_eq!(st, 200);
    assert!(ct.starts_with("multipart/mixed"), "{ct}");
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("multipart/related"), "{text}");
    assert!(text.contains("\"follows\":true"), "{text}");
    assert!(text.contains("{\"missing\":\"9-00\"}"), "{text}");
    let at = find(&bytes, &content).expect("the content is a part, raw");
    assert!(at > 0);
    // atts_since a revision that has it: a stub, no content.
    let (_, _, bytes) = raw(
        "GET",
        &format!("{db}/m?open_revs=all&attachments=true&atts_since=[\"1-0123456789abcdef0123456789abcdef\"]"),
        Some(BOB),
        &[("Accept", "multipart/mixed")],
        &[],
    );
    assert!(find(&bytes, &content).is_none());
    // The whole document as multipart/related.
    let (_, ct, bytes) = raw(
        "GET",
        &format!("{db}/m?attachments=true"),
        Some(BOB),
        &[("Accept", "multipart/related")],
        &[],
    );
    assert!(ct.starts_with("multipart/related"), "{ct}");
    assert!(find(&bytes, &content).is_some());

    // Truncated, lying or surplus multipart bodies store nothing.
    let doc2 = |id: &str| {
        let mut d = doc.clone();
        d["_id"] = json!(id);
        d
    };
    let cut = related("bnd", &doc2("cut"), &[("f.bin", &content)]);
    let r = raw(
        "PUT",
        &format!("{db}/cut?new_edits=false"),
        Some(ALICE),
        &RELATED,
        &cut[..cut.len() - 40],
    );
    assert_eq!(r.0, 400, "{}", String::from_utf8_lossy(&r.2));
    let mut liar = doc2("liar");
    liar["_attachments"]["f.bin"]["digest"] = json!(md5_digest(b"something else"));
    let r = raw(
        "PUT",
        &format!("{db}/liar?new_edits=false"),
        Some(ALICE),
        &RELATED,
        &related("bnd", &liar, &[("f.bin", &content)]),
    );
    assert_eq!(r.0, 400, "{}", String::from_utf8_lossy(&r.2));
    let mut short = doc2("short");
    short["_attachments"]["f.bin"]["length"] = json!(content.len() + 1);
    let r = raw(
        "PUT",
        &format!("{db}/short?new_edits=false"),
        Some(ALICE),
        &RELATED,
        &related("bnd", &short, &[("f.bin", &content)]),
    );
    assert_eq!(r.0, 400);
    let r = raw(
        "PUT",
        &format!("{db}/extra?new_edits=false"),
        Some(ALICE),
        &RELATED,
        &related(
            "bnd",
            &doc2("extra"),
            &[("f.bin", &content), ("g.bin", b"more")],
        ),
    );
    assert_eq!(r.0, 400);
    let r = raw(
        "PUT",
        &format!("{db}/none?new_edits=false"),
        Some(ALICE),
        &RELATED,
        &related("bnd", &doc2("none"), &[]),
    );
    assert_eq!(r.0, 400);
    for id in ["cut", "liar", "short", "extra", "none"] {
        assert_eq!(
            req("GET", &format!("{db}/{id}"), Some(ALICE), None).0,
            404,
            "{id}"
        );
    }
}

/// The content type of the multipart/related bodies here (boundary `bnd`).
const RELATED: [(&str, &str); 1] = [("Content-Type", "multipart/related; boundary=\"bnd\"")];

/// A multipart/related body as the CouchDB replicator writes one.
fn related(boundary: &str, doc: &Value, parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out =
        format!("--{boundary}\r\nContent-Type: application/json\r\n\r\n{doc}\r\n").into_bytes();
    for (name, bytes) in parts {
        out.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: attachment; filename=\"{name}\"\r\n\
                 Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
                bytes.len()
            )
            .as_bytes(),
        );
        out.extend_from_slice(bytes);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{boundary}--").as_bytes());
    out
}

/// Sends `request_line` exactly as given (as alice, with `body`) and
/// returns the answer's status.
fn verbatim(host: &str, request_line: &str, body: &[u8]) -> u16 {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(host).unwrap();
    let head = format!(
        "{request_line} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Basic {}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        b64(b"alice:alice-password"),
        body.len()
    );
    conn.write_all(head.as_bytes()).unwrap();
    conn.write_all(body).unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn hostile_attachments_are_refused_and_change_nothing() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start_limited(data.path(), "64KiB");
    let db = team_db(&s, "hostile");
    let put = |id: &str, atts: Value| {
        let body = json!({"_id": id, "_attachments": atts}).to_string();
        req("PUT", &format!("{db}/{id}"), Some(ALICE), Some(&body))
    };
    let cases = [
        ("b64", json!({"a": {"data": "not base64!!"}}), 400),
        (
            "digest",
            json!({"a": {"data": "aGk=", "digest": md5_digest(b"ho")}}),
            400,
        ),
        (
            "sha",
            json!({"a": {"data": "aGk=", "digest": "sha1-AAAA"}}),
            400,
        ),
        ("length", json!({"a": {"data": "aGk=", "length": 99}}), 400),
        ("huge", json!({"a": {"data": b64(&noise(4, 70_000))}}), 413),
        ("dots", json!({"..": {"data": "aGk="}}), 400),
        ("slash", json!({"a/b": {"data": "aGk="}}), 400),
        ("empty", json!({"": {"data": "aGk="}}), 400),
        ("ctl", json!({"a\u{1}": {"data": "aGk="}}), 400),
        ("nodata", json!({"a": {"content_type": "text/plain"}}), 400),
        (
            "type",
            json!({"a": {"data": "aGk=", "content_type": 5}}),
            400,
        ),
        ("notobj", json!(["a"]), 400),
        ("stub", json!({"a": {"stub": true}}), 412),
    ];
    for (id, atts, status) in &cases {
        let (st, v) = put(id, atts.clone());
        assert_eq!(st, *status, "{id}: {v}");
        assert!(
            v["error"].is_string() && v["reason"].is_string(),
            "{id}: {v}"
        );
    }
    // _bulk_docs with one bad attachment refuses the whole request.
    let bulk = json!({"docs": [
        {"_id": "fine", "_attachments": {"a": {"data": "aGk="}}},
        {"_id": "bad", "_attachments": {"a": {"data": "%%%"}}},
    ]});
    let (st, _) = req(
        "POST",
        &format!("{db}/_bulk_docs"),
        Some(ALICE),
        Some(&bulk.to_string()),
    );
    assert_eq!(st, 400);
    for id in cases.iter().map(|c| c.0).chain(["fine", "bad"]) {
        assert_eq!(
            req("GET", &format!("{db}/{id}"), Some(ALICE), None).0,
            404,
            "{id}"
        );
    }
    assert_eq!(ok("GET", &db, ALICE, None)["doc_count"], json!(0));

    // One attachment's URL: hostile names and sizes.
    let v = ok("PUT", &format!("{db}/d"), ALICE, Some(json!({"x": 1})));
    let rev = v["rev"].as_str().unwrap().to_string();
    let url = |name: &str| format!("{db}/d/{name}?rev={rev}");
    // Sent byte for byte (a URL library would resolve the dot segments).
    let host = couch_url(&s).trim_start_matches("http://").to_string();
    for name in [
        "..", "%2E%2E", "%2e", "a%2Fb", "a/b", "a%5Cb", "a%00b", "a%0Ab",
    ] {
        let status = verbatim(&host, &format!("PUT /hostile/d/{name}?rev={rev}"), b"x");
        assert_eq!(status, 400, "{name}");
    }
    let (st, _, _) = raw("PUT", &url("big"), Some(ALICE), &[], &noise(5, 70_000));
    assert_eq!(st, 413);
    let (st, _, _) = raw(
        "PUT",
        &format!("{db}/d/a?rev=1-00000000000000000000000000000000"),
        Some(ALICE),
        &[],
        b"x",
    );
    assert_eq!(st, 409, "a revision that is not a leaf");
    let (st, _, _) = raw("DELETE", &url("nothere"), Some(ALICE), &[], &[]);
    assert_eq!(st, 404);
    let now = ok("GET", &format!("{db}/d"), ALICE, None);
    assert_eq!(
        now["_rev"].as_str(),
        Some(rev.as_str()),
        "nothing written: {now}"
    );
    assert!(now.get("_attachments").is_none());
    // A Reader may read but not attach.
    let (st, _, _) = raw("PUT", &url("r"), Some(BOB), &[], b"x");
    assert_eq!(st, 403);
}

#[test]
fn a_hidden_documents_attachment_is_missing_to_whoever_may_not_read_it() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "hidden");
    let secret = noise(6, 10_000);
    ok(
        "PUT",
        &format!("{db}/secret"),
        ALICE,
        Some(json!({
            "$Readers": ["alice"],
            "_attachments": {"s.bin": {"data": b64(&secret)}},
        })),
    );
    assert_eq!(
        door_bytes(&db, "secret", "s.bin", ALICE),
        (200, secret.clone())
    );
    let hidden = raw("GET", &format!("{db}/secret/s.bin"), Some(BOB), &[], &[]);
    let missing = raw("GET", &format!("{db}/nothere/s.bin"), Some(BOB), &[], &[]);
    assert_eq!(hidden.0, 404);
    assert_eq!(hidden, missing, "the same answer as a missing document's");
    let other = raw(
        "GET",
        &format!("{db}/secret/other.bin"),
        Some(BOB),
        &[],
        &[],
    );
    assert_eq!(other, missing, "no name is told apart either");
    // Nor through the bulk and multipart reads.
    let (_, v) = req(
        "POST",
        &format!("{db}/_bulk_get?attachments=true"),
        Some(BOB),
        Some(&json!({"docs": [{"id": "secret"}]}).to_string()),
    );
    assert_eq!(
        v["results"][0]["docs"][0]["error"]["error"],
        json!("not_found"),
        "{v}"
    );
    let (st, _, bytes) = raw(
        "GET",
        &format!("{db}/secret?open_revs=all&attachments=true"),
        Some(BOB),
        &[("Accept", "multipart/mixed")],
        &[],
    );
    assert_eq!(st, 404);
    assert!(find(&bytes, &secret).is_none());
    // Nor may an Author attach to it or remove its attachment.
    let rev = ok("GET", &format!("{db}/secret"), ALICE, None)["_rev"]
        .as_str()
        .unwrap()
        .to_string();
    for (method, name) in [("PUT", "x.bin"), ("DELETE", "s.bin")] {
        let (st, _, _) = raw(
            method,
            &format!("{db}/secret/{name}?rev={rev}"),
            Some(CAROL),
            &[],
            b"x",
        );
        assert!(st == 409 || st == 404, "{method}: {st}");
    }
    assert_eq!(door_bytes(&db, "secret", "s.bin", ALICE), (200, secret));
    assert_eq!(
        ok("GET", &format!("{db}/secret"), ALICE, None)["_rev"].as_str(),
        Some(rev.as_str())
    );
}

#[test]
fn kill_during_a_pouchdb_push_with_attachments_keeps_every_acknowledged_revision() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let mut s = start(data.path());
    let db_url = team_db(&s, "push");
    let mut p = Pouch::open(&db_url, ALICE);
    let docs: Vec<Value> = (0..240)
        .map(|i| {
            json!({"_id": format!("d{i:03}"), "i": i, "_attachments": {
                "a.bin": {"content_type": "application/octet-stream", "data": b64(&noise(100 + i, 6_000 + 37 * i as usize))},
                "t.txt": {"content_type": "text/plain", "data": b64(format!("doc {i}").as_bytes())},
            }})
        })
        .collect();
    let r = p.call(json!({"op": "bulk", "docs": docs}));
    assert_eq!(r.as_array().unwrap().len(), 240);
    let mut acknowledged: Vec<(String, String)> = Vec::new();
    for round in 0..2u64 {
        // The push runs in Node while the server is killed under it.
        p.send(json!({"op": "push_tracked", "batch_size": 10}));
        std::thread::sleep(std::time::Duration::from_millis(400 + 300 * round));
        unsafe { libc::kill(s.pid() as i32, libc::SIGKILL) };
        let answer = p.receive();
        for w in answer["written"].as_array().unwrap() {
            acknowledged.push((w[0].as_str().unwrap().into(), w[1].as_str().unwrap().into()));
        }
        drop(s);
        s = start(data.path());
        let moved = p.call(json!({"op": "remote", "url": format!("{}/push", couch_url(&s))}));
        assert_eq!(moved["ok"], json!(true));
    }
    let db = format!("{}/push", couch_url(&s));
    // Every acknowledged revision is there, with its attachments whole.
    for (id, rev) in &acknowledged {
        let d = ok(
            "GET",
            &format!("{db}/{id}?rev={rev}&attachments=true"),
            ALICE,
            None,
        );
        let mine = pouch_doc(&mut p, id);
        assert!(
            same_content(&d["_attachments"], &mine["_attachments"]),
            "{id}: {} vs {}",
            without_data(&d),
            without_data(&mine)
        );
    }
    // No document is there without its attachments.
    for row in ok("GET", &format!("{db}/_all_docs"), ALICE, None)["rows"]
        .as_array()
        .unwrap()
    {
        let id = row["id"].as_str().unwrap();
        let d = ok("GET", &format!("{db}/{id}?attachments=true"), ALICE, None);
        assert_eq!(
            d["_attachments"].as_object().map(|a| a.len()),
            Some(2),
            "{id}"
        );
    }
    // The push completes, and Folio holds exactly PouchDB's documents.
    let done = p.replicate("push");
    assert_eq!(done["doc_write_failures"], json!(0));
    assert_eq!(ok("GET", &db, ALICE, None)["doc_count"], json!(240));
    for i in [0, 57, 120, 239] {
        let id = format!("d{i:03}");
        let d = ok("GET", &format!("{db}/{id}?attachments=true"), ALICE, None);
        let mine = pouch_doc(&mut p, &id);
        assert_eq!(d["_rev"], mine["_rev"]);
        assert!(
            same_content(&d["_attachments"], &mine["_attachments"]),
            "{id}: {} vs {}",
            without_data(&d),
            without_data(&mine)
        );
    }
}

/// A document with its attachments' content left out (for messages).
fn without_data(doc: &Value) -> Value {
    let mut doc = doc.clone();
    if let Some(atts) = doc["_attachments"].as_object_mut() {
        for a in atts.values_mut() {
            a.as_object_mut().unwrap().remove("data");
        }
    }
    doc
}

/// Whether two `_attachments` with content (the door's, PouchDB's) hold
/// the same names, types, digests and bytes.
fn same_content(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return false;
    };
    a.len() == b.len()
        && a.iter().all(|(name, x)| {
            b.get(name).is_some_and(|y| {
                ["content_type", "digest", "data"]
                    .iter()
                    .all(|k| x[k].is_string() && x[k] == y[k])
            })
        })
}
