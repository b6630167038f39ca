//! The CouchDB door's change feeds end to end against the real `folio
//! serve`: continuous and eventsource streams read line by line as a
//! client reads them, heartbeats and timeouts, `_doc_ids` and Mango
//! `_selector` filters (compared with the same predicate evaluated here),
//! operators outside the subset refused by name, and a Reader's feeds in
//! which a `$Readers`-hidden document never shows — not as a row, not as
//! a move of `last_seq` or `update_seq`.

mod common;
#[path = "couch/support.rs"]
mod support;

use common::users_dir;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use support::*;

/// A streamed answer's lines, as they come.
fn lines(url: &str, who: (&str, &str)) -> impl Iterator<Item = String> {
    let token = b64(format!("{}:{}", who.0, who.1).as_bytes());
    let resp = ureq::get(url)
        .set("Authorization", &format!("Basic {token}"))
        .timeout(std::time::Duration::from_secs(120))
        .call()
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    BufReader::new(resp.into_reader())
        .lines()
        .map_while(Result::ok)
}

fn put(db: &str, id: &str, doc: Value) -> u64 {
    ok("PUT", &format!("{db}/{id}"), ALICE, Some(doc));
    // The change number of this write, as alice (who sees everything) sees it.
    ok("GET", db, ALICE, None)["update_seq"].as_u64().unwrap()
}

#[test]
fn continuous_and_eventsource_feeds_stream_changes_as_they_happen() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "live");
    let s1 = put(&db, "d1", json!({"n": 1}));
    let s2 = put(&db, "d2", json!({"n": 2}));

    // Continuous: the rows there are, then a row per change as it happens.
    let mut feed = lines(
        &format!("{db}/_changes?feed=continuous&heartbeat=100&timeout=60000"),
        BOB,
    )
    .filter(|l| !l.is_empty());
    let first: Value = serde_json::from_str(&feed.next().unwrap()).unwrap();
    let second: Value = serde_json::from_str(&feed.next().unwrap()).unwrap();
    assert_eq!(
        (first["id"].as_str(), first["seq"].as_u64()),
        (Some("d1"), Some(s1))
    );
    assert_eq!(
        (second["id"].as_str(), second["seq"].as_u64()),
        (Some("d2"), Some(s2))
    );
    let s3 = put(&db, "d3", json!({"n": 3}));
    let third: Value = serde_json::from_str(&feed.next().unwrap()).unwrap();
    assert_eq!(
        (third["id"].as_str(), third["seq"].as_u64()),
        (Some("d3"), Some(s3))
    );
    drop(feed);

    // Nothing happening: heartbeats (empty lines), then last_seq at timeout.
    let all: Vec<String> = lines(
        &format!("{db}/_changes?feed=continuous&since={s3}&heartbeat=50&timeout=1000"),
        BOB,
    )
    .collect();
    assert!(all.iter().any(String::is_empty), "a heartbeat: {all:?}");
    let last: Value = serde_json::from_str(all.last().unwrap()).unwrap();
    assert_eq!(last["last_seq"].as_u64(), Some(s3));
    assert!(all[..all.len() - 1].iter().all(String::is_empty), "{all:?}");

    // A limit ends the feed after that many rows.
    let limited: Vec<String> = lines(
        &format!("{db}/_changes?feed=continuous&limit=1&timeout=60000"),
        BOB,
    )
    .collect();
    assert_eq!(limited.len(), 2, "{limited:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&limited[1]).unwrap()["last_seq"].as_u64(),
        Some(s1)
    );

    // Event source: `id` is the seq, `data` the row; it resumes from
    // Last-Event-ID.
    let events: Vec<String> =
        lines(&format!("{db}/_changes?feed=eventsource&timeout=500"), BOB).collect();
    let ids: Vec<u64> = events
        .iter()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(ids, vec![s1, s2, s3]);
    let rows: Vec<Value> = events
        .iter()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2]["id"], json!("d3"));
    let token = b64(b"bob:bob-password");
    let resumed = ureq::get(&format!("{db}/_changes?feed=eventsource&timeout=300"))
        .set("Authorization", &format!("Basic {token}"))
        .set("Last-Event-ID", &s2.to_string())
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(resumed.contains(&format!("id: {s3}")) && !resumed.contains(&format!("id: {s2}")));

    // Bad feed parameters are refused before anything streams.
    for q in [
        "feed=sideways",
        "feed=continuous&timeout=x",
        "feed=continuous&since=-1",
    ] {
        let (st, v) = req("GET", &format!("{db}/_changes?{q}"), Some(BOB), None);
        assert_eq!(st, 400, "{q}: {v}");
    }
    let (st, _) = req("GET", &format!("{db}/_changes?feed=continuous"), None, None);
    assert_eq!(st, 401);
    let (st, _) = req(
        "GET",
        &format!("{}/nosuch/_changes?feed=continuous", couch_url(&s)),
        Some(BOB),
        None,
    );
    assert_eq!(st, 404);
}

#[test]
fn selector_filters_match_the_mango_subset_and_refuse_other_operators() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "sel");
    let docs: Vec<Value> = (0..30)
        .map(|i| {
            let (kind, owner) = (["note", "task", "mail"][i % 3], ["ann", "ben"][i % 2]);
            let mut d = json!({
                "_id": format!("d{i:02}"),
                "type": kind,
                "n": i,
                "meta": {"owner": owner},
            });
            if i % 4 == 0 {
                d["done"] = json!(i % 8 == 0);
            }
            d
        })
        .collect();
    ok(
        "POST",
        &format!("{db}/_bulk_docs"),
        ALICE,
        Some(json!({"docs": docs})),
    );
    type Pred = fn(&Value) -> bool;
    let cases: Vec<(Value, Pred)> = vec![
        (json!({"type": "task"}), |d| d["type"] == "task"),
        (json!({"n": {"$gt": 10, "$lte": 20}}), |d| {
            (11..=20).contains(&d["n"].as_i64().unwrap())
        }),
        (json!({"n": {"$lt": 3}}), |d| d["n"].as_i64().unwrap() < 3),
        (json!({"n": {"$gte": 28}}), |d| {
            d["n"].as_i64().unwrap() >= 28
        }),
        (json!({"type": {"$in": ["mail", "other"]}}), |d| {
            d["type"] == "mail"
        }),
        (json!({"done": {"$exists": true}}), |d| {
            d.get("done").is_some()
        }),
        (json!({"done": {"$exists": false}}), |d| {
            d.get("done").is_none()
        }),
        (json!({"meta.owner": "ben"}), |d| {
            d["meta"]["owner"] == "ben"
        }),
        (json!({"meta": {"owner": {"$eq": "ann"}}}), |d| {
            d["meta"]["owner"] == "ann"
        }),
        (
            json!({"$or": [{"type": "note"}, {"n": {"$in": [1, 2]}}]}),
            |d| d["type"] == "note" || [1, 2].contains(&d["n"].as_i64().unwrap()),
        ),
        (json!({"$and": [{"type": "note"}, {"done": true}]}), |d| {
            d["type"] == "note" && d["done"] == json!(true)
        }),
        (json!({"type": "note", "n": {"$ne": 0}}), |d| {
            d["type"] == "note" && d["n"] != 0
        }),
        (json!({"_id": {"$gt": "d25"}}), |d| {
            d["_id"].as_str().unwrap() > "d25"
        }),
    ];
    for (selector, pred) in &cases {
        let want: Vec<&str> = docs
            .iter()
            .filter(|d| pred(d))
            .map(|d| d["_id"].as_str().unwrap())
            .collect();
        let body = json!({"selector": selector}).to_string();
        let (st, v) = req(
            "POST",
            &format!("{db}/_changes?filter=_selector"),
            Some(BOB),
            Some(&body),
        );
        assert_eq!(st, 200, "{selector}: {v}");
        let got: Vec<&str> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(got, want, "{selector}");
        // The same selector as a parameter, and in a continuous feed.
        let q = encode(&selector.to_string());
        let streamed: Vec<String> = lines(
            &format!("{db}/_changes?feed=continuous&filter=_selector&selector={q}&timeout=100"),
            BOB,
        )
        .filter(|l| l.starts_with("{\"changes\""))
        .collect();
        assert_eq!(streamed.len(), want.len(), "{selector}");
    }
    // A limit counts rows that pass the filter.
    let body = json!({"selector": {"type": "mail"}}).to_string();
    let (_, v) = req(
        "POST",
        &format!("{db}/_changes?filter=_selector&limit=2"),
        Some(BOB),
        Some(&body),
    );
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    assert_eq!(v["results"][1]["id"], json!("d05"));

    for op in [
        "$regex",
        "$nor",
        "$elemMatch",
        "$not",
        "$all",
        "$size",
        "$mod",
        "$type",
        "$allMatch",
    ] {
        let selector = if ["$nor", "$not"].contains(&op) {
            json!({op: [{"type": "note"}]})
        } else {
            json!({"type": {op: "x"}})
        };
        let body = json!({"selector": selector}).to_string();
        let (st, v) = req(
            "POST",
            &format!("{db}/_changes?filter=_selector"),
            Some(BOB),
            Some(&body),
        );
        assert_eq!(st, 400, "{op}: {v}");
        assert!(v["reason"].as_str().unwrap().contains(op), "{op}: {v}");
    }
    for body in [
        json!({}),
        json!({"selector": [1]}),
        json!({"selector": {"n": {"$in": 3}}}),
        json!({"selector": {"n": {"$exists": 1}}}),
    ] {
        let (st, v) = req(
            "POST",
            &format!("{db}/_changes?filter=_selector"),
            Some(BOB),
            Some(&body.to_string()),
        );
        assert_eq!(st, 400, "{body}: {v}");
    }
    let (st, _) = req(
        "POST",
        &format!("{db}/_changes?filter=_selector"),
        Some(BOB),
        Some("{\"selector\": {"),
    );
    assert_eq!(st, 400);
    let (st, _) = req(
        "GET",
        &format!("{db}/_changes?filter=_view&view=a/b"),
        Some(BOB),
        None,
    );
    assert_eq!(st, 501);

    // _doc_ids in every form.
    let ids = encode("[\"d03\",\"d07\",\"nothere\"]");
    let (_, v) = req(
        "GET",
        &format!("{db}/_changes?filter=_doc_ids&doc_ids={ids}"),
        Some(BOB),
        None,
    );
    let got: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, vec!["d03", "d07"]);
    let streamed: Vec<String> = lines(
        &format!("{db}/_changes?feed=continuous&filter=_doc_ids&doc_ids={ids}&timeout=100"),
        BOB,
    )
    .collect();
    assert_eq!(streamed.len(), 3, "two rows and last_seq: {streamed:?}");
}

#[test]
fn hidden_documents_never_reach_a_readers_feed_not_even_as_a_jump_of_last_seq() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "quiet");
    let p1 = put(&db, "p1", json!({"kind": "public"}));
    for i in 0..5 {
        put(
            &db,
            &format!("s{i}"),
            json!({"kind": "secret", "$Readers": ["alice"]}),
        );
    }
    let hidden_upto = ok("GET", &db, ALICE, None)["update_seq"].as_u64().unwrap();
    assert!(hidden_upto > p1);

    let feed = |q: &str| ok("GET", &format!("{db}/_changes?{q}"), BOB, None);
    let normal = feed("since=0");
    assert_eq!(normal["results"].as_array().unwrap().len(), 1);
    assert_eq!(normal["last_seq"].as_u64(), Some(p1), "{normal}");
    assert_eq!(feed(&format!("since={p1}"))["last_seq"].as_u64(), Some(p1));
    assert_eq!(feed("since=now")["last_seq"].as_u64(), Some(p1));
    let polled = feed(&format!("since={p1}&feed=longpoll&timeout=300"));
    assert_eq!(
        (
            polled["results"].as_array().unwrap().len(),
            polled["last_seq"].as_u64()
        ),
        (0, Some(p1))
    );
    let sel = json!({"selector": {"kind": "secret"}}).to_string();
    let (_, v) = req(
        "POST",
        &format!("{db}/_changes?filter=_selector"),
        Some(BOB),
        Some(&sel),
    );
    assert_eq!(
        (
            v["results"].as_array().unwrap().len(),
            v["last_seq"].as_u64()
        ),
        (0, Some(p1)),
        "{v}"
    );
    let ids = encode("[\"s0\",\"s1\"]");
    let v = feed(&format!("filter=_doc_ids&doc_ids={ids}"));
    assert_eq!(
        (
            v["results"].as_array().unwrap().len(),
            v["last_seq"].as_u64()
        ),
        (0, Some(p1)),
        "{v}"
    );
    let streamed: Vec<String> =
        lines(&format!("{db}/_changes?feed=continuous&timeout=300"), BOB).collect();
    assert_eq!(streamed.len(), 2, "{streamed:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&streamed[1]).unwrap()["last_seq"].as_u64(),
        Some(p1)
    );
    let events = lines(&format!("{db}/_changes?feed=eventsource&timeout=300"), BOB)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!events.contains("\"id\":\"s"), "{events}");
    assert!(events.contains("\"id\":\"p1\""), "{events}");
    assert_eq!(ok("GET", &db, BOB, None)["update_seq"].as_u64(), Some(p1));
    let all = ok("GET", &format!("{db}/_all_docs?update_seq=true"), BOB, None);
    assert_eq!(all["update_seq"].as_u64(), Some(p1), "{all}");

    // A document bob may read shows at once, with its own seq.
    let p2 = put(&db, "p2", json!({"kind": "public"}));
    let v = feed(&format!("since={p1}"));
    assert_eq!(v["results"][0]["id"], json!("p2"));
    assert_eq!(v["last_seq"].as_u64(), Some(p2));
    // Alice sees everything.
    let v = ok("GET", &format!("{db}/_changes"), ALICE, None);
    assert_eq!(v["results"].as_array().unwrap().len(), 7);
}

#[test]
fn find_answers_the_selector_subset_without_showing_hidden_documents() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start(data.path());
    let db = team_db(&s, "find");
    let docs: Vec<Value> = (0..12)
        .map(|i| json!({"_id": format!("f{i:02}"), "n": i, "box": {"size": i % 3}}))
        .collect();
    ok(
        "POST",
        &format!("{db}/_bulk_docs"),
        ALICE,
        Some(json!({"docs": docs})),
    );
    put(&db, "secret", json!({"n": 5, "$Readers": ["alice"]}));
    let find = |who: (&str, &str), q: Value| {
        req(
            "POST",
            &format!("{db}/_find"),
            Some(who),
            Some(&q.to_string()),
        )
    };
    let ids = |v: &Value| -> Vec<String> {
        v["docs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["_id"].as_str().unwrap().to_string())
            .collect()
    };
    let (st, v) = find(BOB, json!({"selector": {"n": {"$gte": 5}, "box.size": 2}}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(ids(&v), vec!["f05", "f08", "f11"]);
    assert!(v["warning"].is_string());
    let (_, v) = find(BOB, json!({"selector": {"n": 5}}));
    assert_eq!(ids(&v), vec!["f05"], "the hidden one is not found by bob");
    let (_, v) = find(ALICE, json!({"selector": {"n": 5}}));
    assert_eq!(ids(&v), vec!["f05", "secret"]);
    let (_, v) = find(
        BOB,
        json!({"selector": {"n": {"$gt": 0}}, "skip": 2, "limit": 3, "fields": ["_id", "box.size"]}),
    );
    assert_eq!(ids(&v), vec!["f03", "f04", "f05"]);
    assert_eq!(v["docs"][0], json!({"_id": "f03", "box": {"size": 0}}));
    let (_, v) = find(BOB, json!({"selector": {}}));
    assert_eq!(
        v["docs"].as_array().unwrap().len(),
        12,
        "all bob may read (under the default limit)"
    );
    for (q, what) in [
        (json!({"selector": {"n": {"$regex": "1"}}}), "$regex"),
        (
            json!({"selector": {"n": 1}, "sort": [{"n": "asc"}]}),
            "sort",
        ),
        (json!({"selector": {"n": 1}, "limit": -1}), "limit"),
        (json!({"n": 1}), "selector"),
        (json!({"selector": {"n": 1}, "fields": "n"}), "fields"),
        (json!({"selector": {"n": 1}, "bogus": 1}), "bogus"),
    ] {
        let (st, v) = find(BOB, q.clone());
        assert_eq!(st, 400, "{q}: {v}");
        assert!(v["reason"].as_str().unwrap().contains(what), "{q}: {v}");
    }
    let (st, _) = req(
        "POST",
        &format!("{db}/_find"),
        None,
        Some("{\"selector\":{}}"),
    );
    assert_eq!(st, 401);
}
