//! The blocking client: one connection used from eight OS threads at
//! once, and the calls the CLI relies on.

mod common;

use client::{blocking, DocRef};
use common::{random_bytes, DB};

const THREADS: usize = 8;

#[test]
fn eight_threads_share_one_blocking_client() {
    let fake = common::start_blocking();
    let client = blocking::Client::connect(fake.server.options()).unwrap();
    let (db, _) = client.open_database(DB).unwrap();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let client = client.clone();
            scope.spawn(move || {
                for round in 0..25 {
                    let json = format!(r#"{{"thread":{t},"round":{round}}}"#);
                    let meta = client.create_document(db, &json).unwrap();
                    let doc = client.read_document(db, DocRef::Unid(meta.unid)).unwrap();
                    assert_eq!(doc.json, json);
                }
                let unid = client.create_document(db, "{}").unwrap().unid;
                let data = random_bytes(512 * 1024, t as u64 + 10);
                client
                    .put_attachment(db, unid, "t.bin", "x/y", None, &data[..])
                    .unwrap();
                let mut copy = Vec::new();
                client.get_attachment(db, unid, "t.bin", &mut copy).unwrap();
                assert!(copy == data, "thread {t}: the copy differs");
            });
        }
    });
    let found = client.search(db, "thread", None, |_| {}).unwrap();
    assert_eq!(found, (THREADS * 25) as u64);
    assert_eq!(fake.server.connections(), 1);
}

#[test]
fn blocking_search_iterates_and_conflicts_are_recognized() {
    let fake = common::start_blocking();
    let client = blocking::Client::connect(fake.server.options()).unwrap();
    let (db, _) = client.open_database(DB).unwrap();
    let meta = client.create_document(db, r#"{"v":1}"#).unwrap();
    client
        .update_document(db, meta.unid, Some(1), false, r#"{"v":2}"#)
        .unwrap();
    let err = client
        .update_document(db, meta.unid, Some(1), false, r#"{"v":3}"#)
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");

    let mut hits = client.search_hits(db, "SELECT @All", None).unwrap();
    let docs: Vec<_> = hits.by_ref().map(Result::unwrap).collect();
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].json, r#"{"v":2}"#);
    assert_eq!(hits.found(), Some(1));
    assert_eq!(client.my_access(DB).unwrap().level, "manager");
}
