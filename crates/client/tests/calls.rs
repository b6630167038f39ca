//! The typed calls: each request reaches the server and its answer comes
//! back as the right Rust value; server errors keep their codes.

mod common;

use client::{
    Client, ClientError, Cursor, DbHandle, DocRef, ErrorCode, NoteId, ProtocolError, ReadFlags,
    Request, Response, Row, Start, StatValue, Unid,
};
use common::{FakeServer, DB, VIEW};

#[tokio::test]
async fn documents_are_created_read_updated_and_deleted() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    let meta = client.create_document(db, r#"{"v":1}"#).await.unwrap();
    assert_eq!(meta.seq_num, 1);
    let by_note = client
        .read_document(db, DocRef::NoteId(meta.note_id))
        .await
        .unwrap();
    assert_eq!((by_note.meta, by_note.json.as_str()), (meta, r#"{"v":1}"#));

    let v2 = client
        .update_document(db, meta.unid, Some(1), false, r#"{"v":2}"#)
        .await
        .unwrap();
    assert_eq!(v2.seq_num, 2);
    let stale = client
        .update_document(db, meta.unid, Some(1), false, r#"{"v":3}"#)
        .await
        .unwrap_err();
    assert!(stale.is_conflict(), "{stale}");
    let forced = client
        .update_document(db, meta.unid, Some(1), true, r#"{"v":3}"#)
        .await
        .unwrap();
    assert_eq!(forced.seq_num, 3);
    let stale = client
        .delete_document(db, meta.unid, Some(2), false)
        .await
        .unwrap_err();
    assert!(stale.is_conflict(), "{stale}");
    client
        .delete_document(db, meta.unid, Some(3), false)
        .await
        .unwrap();
    let stub = client
        .read_document(db, DocRef::Unid(meta.unid))
        .await
        .unwrap();
    assert!(stub.deleted);

    let bad = client.create_document(db, "[1]").await.unwrap_err();
    assert_eq!(bad.code(), Some(ErrorCode::BadRequest));
    let missing = client
        .read_document(db, DocRef::NoteId(NoteId(999)))
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Some(ErrorCode::NotFound));
    assert!(!missing.is_conflict());
}

#[tokio::test]
async fn modified_since_pages_through_changes() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    for i in 0..7 {
        client
            .create_document(db, &format!(r#"{{"n":{i}}}"#))
            .await
            .unwrap();
    }
    let mut cursor = Cursor(0);
    let mut pages = Vec::new();
    loop {
        let (docs, next, more) = client.modified_since(db, cursor, 3).await.unwrap();
        pages.push(docs.len());
        cursor = next;
        if !more {
            break;
        }
    }
    assert_eq!(pages, [3, 3, 1]);
    assert_eq!(cursor, Cursor(7));
}

#[tokio::test]
async fn databases_are_created_listed_described_and_closed() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let info = client.create_database("mail/bob.fdb", "Bob").await.unwrap();
    assert_eq!(
        (info.path.as_str(), info.title.as_str()),
        ("mail/bob.fdb", "Bob")
    );
    let all = client.list_databases(None).await.unwrap();
    assert_eq!(all.len(), 2);
    let mail = client.list_databases(Some("mail/")).await.unwrap();
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].title, "Bob");
    assert_eq!(client.database_info(DB).await.unwrap().path, DB);
    let (db, _) = client.open_database("mail/bob.fdb").await.unwrap();
    client.close_database(db).await.unwrap();
    let err = client.open_database("nope.fdb").await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotFound));
}

#[tokio::test]
async fn collections_and_folders() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    let mut unids = Vec::new();
    for name in ["apple", "banana", "cherry"] {
        let json = format!(r#"{{"Subject":"{name}"}}"#);
        unids.push(client.create_document(db, &json).await.unwrap().unid);
    }
    let view = client.open_collection(db, VIEW).await.unwrap();
    assert_eq!((view.count, view.titles.len()), (3, 1));
    let flags = ReadFlags {
        count: true,
        ..ReadFlags::default()
    };
    let (rows, total) = client
        .read_entries(view.collection, Start::Position(1), 10, flags)
        .await
        .unwrap();
    assert_eq!(total, Some(3));
    let positions: Vec<u64> = rows
        .iter()
        .map(|row| match row {
            Row::Entry { position, .. } => *position,
            Row::Category { .. } => panic!("no categories"),
        })
        .collect();
    assert_eq!(positions, [1, 2]);
    let found = client
        .find_by_key(view.collection, "cherry", false)
        .await
        .unwrap();
    assert_eq!(found.map(|f| (f.position, f.count)), Some((2, 1)));
    assert_eq!(
        client
            .find_by_key(view.collection, "kiwi", true)
            .await
            .unwrap(),
        None
    );
    let update = client.update_collection(view.collection).await.unwrap();
    assert_eq!(update.changed, 0);
    client.close_collection(view.collection).await.unwrap();
    let err = client.open_collection(db, "Nope").await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotFound));

    client.folder_add(db, "Inbox", &unids).await.unwrap();
    client
        .folder_remove(db, "Inbox", &unids[..1])
        .await
        .unwrap();
}

#[tokio::test]
async fn statistics_acl_and_access() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let stats = client.statistics().await.unwrap();
    assert_eq!(stats[0].name, "server.connections");
    assert_eq!(stats[2].value, StatValue::Text("fake".into()));

    let acl = r#"{"default":"reader","entries":[{"name":"alice","level":"manager"}]}"#;
    client.set_acl(DB, acl).await.unwrap();
    assert_eq!(client.get_acl(DB).await.unwrap(), acl);
    let err = client.set_acl(DB, "not json").await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::BadRequest));
    let access = client.my_access(DB).await.unwrap();
    assert_eq!(access.user.as_deref(), Some("alice"));
    assert_eq!((access.level.as_str(), access.roles.len()), ("manager", 1));
}

#[tokio::test]
async fn the_generic_request_refuses_streamed_requests() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, _) = client.open_database(DB).await.unwrap();
    let search = Request::Search {
        db,
        formula: "SELECT @All".into(),
        since: None,
    };
    let err = client.request(search).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Protocol(ProtocolError::Misuse(_))),
        "{err:?}"
    );
    let answer = client.request(Request::Statistics).await.unwrap();
    assert!(matches!(answer, Response::Statistics(_)));
}

/// Checked at compile time: handles are shared across tasks and threads,
/// and the futures of calls can be spawned.
#[test]
fn clients_and_their_calls_can_cross_threads() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<Client>();
    shareable::<client::blocking::Client>();
    let _ = calls_are_send;
}

fn calls_are_send(client: &Client, db: DbHandle, unid: Unid) {
    fn send<T: Send>(_: T) {}
    send(client.statistics());
    send(client.put_attachment(db, unid, "a", "b", None, &b""[..]));
    send(client.get_attachment(db, unid, "a", Vec::new()));
    send(client.search(db, "f", None, |_| {}));
}
