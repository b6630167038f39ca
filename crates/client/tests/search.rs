//! Searches: hits arrive in the server's order, then the count; other
//! requests may run between hits; a refused formula is an error.

mod common;

use client::{Client, DocRef, ErrorCode};
use common::{FakeServer, BAD_FORMULA, DB};
use std::time::Duration;
use tokio::time::timeout;

const GUARD: Duration = Duration::from_secs(30);

#[tokio::test]
async fn hits_arrive_in_order_then_the_count() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    let mut created = Vec::new();
    for i in 0..20 {
        let form = if i % 2 == 0 { "Memo" } else { "Task" };
        let json = format!(r#"{{"Form":"{form}","n":{i}}}"#);
        created.push((client.create_document(db, &json).await.unwrap().unid, form));
    }
    let mut hits = Vec::new();
    let found = client
        .search(db, "SELECT @All", None, |doc| hits.push(doc.meta.unid))
        .await
        .unwrap();
    let all: Vec<_> = created.iter().map(|(unid, _)| *unid).collect();
    assert_eq!((found, hits), (20, all));

    let memos: Vec<_> = created
        .iter()
        .filter(|(_, form)| *form == "Memo")
        .map(|(unid, _)| *unid)
        .collect();
    let mut stream = client.search_hits(db, "Memo", None).unwrap();
    let mut seen = Vec::new();
    assert_eq!(stream.found(), None);
    while let Some(doc) = timeout(GUARD, stream.next()).await.unwrap().unwrap() {
        seen.push(doc.meta.unid);
    }
    assert_eq!(seen, memos);
    assert_eq!(stream.found(), Some(10));
    assert!(stream.next().await.unwrap().is_none());
}

#[tokio::test]
async fn other_requests_run_between_hits() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    for i in 0..200 {
        let json = format!(r#"{{"n":{i}}}"#);
        client.create_document(db, &json).await.unwrap();
    }
    let mut hits = client.search_hits(db, "SELECT @All", None).unwrap();
    let mut count = 0;
    while let Some(hit) = timeout(GUARD, hits.next()).await.unwrap().unwrap() {
        let unid = hit.meta.unid;
        let doc = client.read_document(db, DocRef::Unid(unid)).await.unwrap();
        let json = doc.json.replace('}', r#","seen":true}"#);
        client
            .update_document(db, unid, Some(doc.meta.seq_num), false, &json)
            .await
            .unwrap();
        count += 1;
    }
    assert_eq!((count, hits.found()), (200, Some(200)));
}

#[tokio::test]
async fn a_refused_formula_is_the_searchs_error() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    let err = client
        .search(db, BAD_FORMULA, None, |_| panic!("no hits"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::BadRequest), "{err}");
    assert_eq!(client.statistics().await.unwrap().len(), 3);
}
