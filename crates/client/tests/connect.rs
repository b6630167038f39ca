//! Connecting: the handshake accepted and refused, unreachable and silent
//! servers, TLS, and each compression method end to end.

mod common;

use client::{
    Client, ClientError, ClientOptions, Compression, DocRef, ErrorCode, TlsOptions, Unid,
};
use common::{random_bytes, text_bytes, FakeServer, DB};
use std::time::Duration;
use tokio::time::timeout;

const GUARD: Duration = Duration::from_secs(30);

#[tokio::test]
async fn the_handshake_succeeds_with_good_credentials() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    assert_eq!(client.server_name(), "fake folio");
    assert_eq!(client.session().0, 1);
    // Loopback: compression is not even offered.
    assert_eq!(client.compression(), Compression::Off);
    assert!(client.closed_reason().is_none());
    let (db, info) = client.open_database(DB).await.unwrap();
    assert_eq!((db.0, info.path.as_str()), (1, DB));
}

#[tokio::test]
async fn a_refused_login_surfaces_the_servers_401() {
    let server = FakeServer::start().await;
    let wrong = ClientOptions::new(server.addr.to_string()).with_credentials("alice", "nope");
    let anonymous = ClientOptions::new(server.addr.to_string());
    for opts in [wrong, anonymous] {
        let err = Client::connect(opts).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::Unauthenticated), "{err}");
        assert!(
            err.to_string().contains("wrong user name or password"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn connecting_to_nothing_names_the_address() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let err = Client::connect(ClientOptions::new(addr.clone()))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Io(_)), "{err:?}");
    assert!(err.to_string().contains(&addr), "{err}");
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut opts = ClientOptions::new(listener.local_addr().unwrap().to_string());
    opts.connect_timeout = Duration::from_millis(200);
    // Accepts (the kernel does) but never says Welcome.
    let err = timeout(GUARD, Client::connect(opts))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout), "{err:?}");
    drop(listener);
}

#[tokio::test]
async fn each_compression_method_carries_documents_and_attachments() {
    let server = FakeServer::start().await;
    for method in Compression::ALL {
        let mut opts = server.options();
        opts.compression = vec![method];
        let client = Client::connect(opts).await.unwrap();
        assert_eq!(client.compression(), method);
        let (db, _) = client.open_database(DB).await.unwrap();
        let body = String::from_utf8(text_bytes(20_000)).unwrap();
        let json = format!(r#"{{"Body":"{body}"}}"#);
        let meta = client.create_document(db, &json).await.unwrap();
        let doc = client
            .read_document(db, DocRef::Unid(meta.unid))
            .await
            .unwrap();
        assert_eq!(doc.json, json);
        for (name, data) in [
            ("text", text_bytes(700_000)),
            ("random", random_bytes(300_000, 5)),
        ] {
            round_trip(&client, db, meta.unid, name, &data).await;
        }
    }
}

async fn round_trip(client: &Client, db: client::DbHandle, unid: Unid, name: &str, data: &[u8]) {
    let size = Some(data.len() as u64);
    let stored = client
        .put_attachment(db, unid, name, "application/octet-stream", size, data)
        .await
        .unwrap();
    assert_eq!(stored, data.len() as u64);
    let mut copy = Vec::new();
    client
        .get_attachment(db, unid, name, &mut copy)
        .await
        .unwrap();
    assert!(copy == data, "{name}: the copy differs");
}

#[tokio::test]
async fn tls_with_a_self_signed_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (acceptor, pem) = common::self_signed_tls(dir.path());
    let server = FakeServer::start_tls(acceptor).await;
    // By IP address (the certificate names 127.0.0.1), then by host name.
    for server_name in [None, Some("localhost".to_string())] {
        let tls = TlsOptions {
            ca_cert: pem.clone(),
            server_name,
        };
        let client = Client::connect(server.options().with_tls(tls))
            .await
            .unwrap();
        let stats = client.statistics().await.unwrap();
        assert_eq!(stats.len(), 3);
        let (db, _) = client.open_database(DB).await.unwrap();
        let meta = client.create_document(db, "{}").await.unwrap();
        round_trip(&client, db, meta.unid, "tls.bin", &random_bytes(1 << 20, 9)).await;
    }
}

#[tokio::test]
async fn tls_refuses_a_certificate_it_does_not_trust() {
    let dir = tempfile::tempdir().unwrap();
    let (acceptor, _pem) = common::self_signed_tls(dir.path());
    let other = tempfile::tempdir().unwrap();
    let (_, other_pem) = common::self_signed_tls(other.path());
    let server = FakeServer::start_tls(acceptor).await;
    let untrusted = TlsOptions {
        ca_cert: other_pem,
        server_name: None,
    };
    let err = Client::connect(server.options().with_tls(untrusted))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Tls(_)), "{err:?}");
    let missing = TlsOptions {
        ca_cert: dir.path().join("missing.pem"),
        server_name: None,
    };
    let err = Client::connect(server.options().with_tls(missing))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("missing.pem"), "{err}");
}
