//! Many tasks, one connection: requests are pipelined, and each caller
//! gets its own answer although the fake server answers out of order.

mod common;

use client::{Client, DocRef};
use common::{FakeServer, DB};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::timeout;

const GUARD: Duration = Duration::from_secs(60);
const TASKS: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_requests_are_in_flight_at_once_on_one_connection() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    // The server answers none of these until all fifty have arrived, so
    // they can only complete if the client sent them without waiting.
    let mut tasks = JoinSet::new();
    for i in 0..TASKS {
        let client = client.clone();
        tasks.spawn(async move {
            let path = format!("barrier/{TASKS}/{i}");
            let info = client.database_info(&path).await.unwrap();
            assert_eq!(info.path, path);
        });
    }
    timeout(GUARD, tasks.join_all()).await.unwrap();
    assert_eq!(server.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_tasks_each_get_their_own_answers() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    let mut tasks = JoinSet::new();
    for i in 0..TASKS {
        let client = client.clone();
        tasks.spawn(async move {
            for round in 0..10 {
                let json = format!(r#"{{"task":{i},"round":{round}}}"#);
                let meta = client.create_document(db, &json).await.unwrap();
                let doc = client
                    .read_document(db, DocRef::Unid(meta.unid))
                    .await
                    .unwrap();
                assert_eq!(doc.json, json);
                let by_note = client
                    .read_document(db, DocRef::NoteId(meta.note_id))
                    .await
                    .unwrap();
                assert_eq!(by_note.meta.unid, meta.unid);
                let edit = format!(r#"{{"task":{i},"round":{round},"edited":true}}"#);
                let saved = client
                    .update_document(db, meta.unid, Some(1), false, &edit)
                    .await
                    .unwrap();
                assert_eq!((saved.unid, saved.seq_num), (meta.unid, 2));
            }
        });
    }
    timeout(GUARD, tasks.join_all()).await.unwrap();
    let (docs, _, more) = client
        .modified_since(db, client::Cursor(0), 10_000)
        .await
        .unwrap();
    assert_eq!((docs.len(), more), (TASKS * 10, false));
    assert_eq!(server.connections(), 1);
}
