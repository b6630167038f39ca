//! A connection that ends never leaves a caller hanging: pending and later
//! calls fail with `Closed` and the reason. (`timeout` only guards the
//! tests against a hang; it is never what ends a call.)

mod common;

use client::ErrorCode;
use client::{Client, ClientError};
use common::{FakeServer, DB, GARBAGE, HOLD};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::timeout;

const GUARD: Duration = Duration::from_secs(30);

fn closed_reason(result: Result<impl std::fmt::Debug, ClientError>) -> String {
    match result {
        Err(ClientError::Closed { reason }) => reason,
        other => panic!("expected Closed, got {other:?}"),
    }
}

/// Three calls the server holds unanswered, running in their own tasks.
async fn pending_calls(server: &FakeServer, client: &Client) -> JoinSet<String> {
    let mut calls = JoinSet::new();
    for _ in 0..3 {
        let client = client.clone();
        calls.spawn(async move { closed_reason(client.database_info(HOLD).await) });
    }
    timeout(GUARD, server.wait_held(3)).await.unwrap();
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_dropping_the_connection_fails_pending_and_later_calls() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    let unid = client.create_document(db, "{}").await.unwrap().unid;
    let mut calls = pending_calls(&server, &client).await;
    // A search and a download in progress fail too.
    let mut search = client.search_hits(db, HOLD, None).unwrap();
    let downloader = client.clone();
    calls.spawn(async move {
        let download = downloader.get_attachment(db, unid, HOLD, Vec::new()).await;
        closed_reason(download)
    });
    timeout(GUARD, server.wait_held(5)).await.unwrap();
    server.drop_connections();
    let search_error = timeout(GUARD, search.next()).await.unwrap();
    assert!(closed_reason(search_error).contains("closed the connection"));
    for reason in timeout(GUARD, calls.join_all()).await.unwrap() {
        assert!(reason.contains("closed the connection"), "{reason}");
    }
    let later = timeout(GUARD, client.statistics()).await.unwrap();
    assert!(closed_reason(later).contains("closed the connection"));
    let later = client.search_hits(db, "SELECT @All", None);
    assert!(matches!(later, Err(ClientError::Closed { .. })));
    assert!(client.closed_reason().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_fails_pending_calls_and_ends_the_connection() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let calls = pending_calls(&server, &client).await;
    client.clone().close();
    for reason in timeout(GUARD, calls.join_all()).await.unwrap() {
        assert_eq!(reason, "closed by the client");
    }
    assert_eq!(
        closed_reason(client.statistics().await),
        "closed by the client"
    );
    timeout(GUARD, server.wait_all_closed()).await.unwrap();
}

#[tokio::test]
async fn dropping_the_last_handle_closes_the_connection() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let other = client.clone();
    drop(client);
    other.statistics().await.unwrap();
    assert_eq!(server.open_connections(), 1);
    drop(other);
    timeout(GUARD, server.wait_all_closed()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_breaking_the_protocol_is_told_and_the_calls_fail() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let calls = pending_calls(&server, &client).await;
    let broken = timeout(GUARD, client.database_info(GARBAGE)).await.unwrap();
    let reason = closed_reason(broken);
    assert!(reason.contains("broke the protocol"), "{reason}");
    assert!(reason.contains("unknown frame type 0x7f"), "{reason}");
    for pending in timeout(GUARD, calls.join_all()).await.unwrap() {
        assert_eq!(pending, reason);
    }
    // The client's error frame reached the server before it hung up.
    timeout(GUARD, server.wait_all_closed()).await.unwrap();
    let goodbyes = server.goodbyes();
    assert_eq!(goodbyes.len(), 1, "{goodbyes:?}");
    assert_eq!(goodbyes[0].0, ErrorCode::ProtocolViolation);
}
