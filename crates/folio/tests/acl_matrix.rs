//! Every ACL level against every operation, through the real server.
//!
//! One database, one user per level (plus an anonymous caller), and a
//! table of what each may do. Each operation runs on its own fresh
//! document so an allowed change never affects the next check. Reader
//! restrictions are checked on every path that returns documents: read,
//! changes, search and view rows.

mod common;

use client::blocking::Client;
use client::{ClientOptions, Cursor, DocRef, ErrorCode, ReadFlags, Start};
use common::Server;
use std::sync::Arc;

const LEVELS: [&str; 7] = [
    "manager",
    "designer",
    "editor",
    "author",
    "reader",
    "depositor",
    "noaccess",
];

fn connect(srv: &Server, user: Option<&str>) -> Client {
    let mut o = ClientOptions::new(srv.native.as_str());
    if let Some(u) = user {
        o = o.with_credentials(u, &format!("{u}-password"));
    }
    Client::connect(o).unwrap()
}

/// The outcome of one operation: `ok`, or the error code's name.
fn outcome<T>(r: Result<T, client::ClientError>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => match e.code() {
            Some(ErrorCode::Unauthenticated) => "401",
            Some(ErrorCode::Forbidden) => "403",
            Some(ErrorCode::NotFound) => "404",
            Some(ErrorCode::SaveConflict) => "409",
            other => panic!("unexpected error {other:?}: {e}"),
        },
    }
}

#[test]
fn every_level_against_every_operation() {
    let tmp = tempfile::tempdir().unwrap();
    let store =
        server::auth::UserStore::open(Arc::new(storage::backend::FsBackend), tmp.path()).unwrap();
    store.add_user("admin", "admin-password", true).unwrap();
    for l in LEVELS {
        store.add_user(l, &format!("{l}-password"), false).unwrap();
    }
    drop(store);
    let srv = Server::start(tmp.path());
    let admin = Client::connect(
        ClientOptions::new(srv.native.as_str()).with_credentials("admin", "admin-password"),
    )
    .unwrap();
    admin.create_database("apps/acl.fdb", "ACL").unwrap();
    let entries: Vec<_> = LEVELS
        .iter()
        .map(|l| serde_json::json!({"name": l, "level": l, "roles": if *l == "reader" { vec!["Auditors"] } else { vec![] }}))
        .collect();
    admin
        .set_acl(
            "apps/acl.fdb",
            &serde_json::json!({"default": "noaccess", "anonymous": "noaccess", "roles": ["Auditors"], "entries": entries}).to_string(),
        )
        .unwrap();
    let (adb, _) = admin.open_database("apps/acl.fdb").unwrap();
    let folder = r#"{"name":"Pile","kind":"folder","columns":[{"title":"S","formula":"Subject","sort":"asc"}]}"#;
    match admin
        .request(client::Request::CreateView {
            db: adb,
            json: folder.into(),
        })
        .unwrap()
    {
        client::Response::Done => {}
        other => panic!("{other:?}"),
    }
    // Documents only some may read: by name, by role, by $Authors.
    let secret = admin
        .create_document(adb, r#"{"Subject":"secret","$Readers":["manager"]}"#)
        .unwrap();
    let audited = admin
        .create_document(adb, r#"{"Subject":"audited","$Readers":["[Auditors]"]}"#)
        .unwrap();
    let authored = admin
        .create_document(
            adb,
            r#"{"Subject":"authored","$Readers":["nobody"],"$Authors":["author"]}"#,
        )
        .unwrap();
    admin
        .folder_add(adb, "Pile", &[secret.unid, audited.unid, authored.unid])
        .unwrap();
    let fresh = |authors: Option<&str>| {
        let json = match authors {
            Some(a) => format!(r#"{{"Subject":"plain","$Authors":["{a}"]}}"#),
            None => r#"{"Subject":"plain"}"#.to_string(),
        };
        admin.create_document(adb, &json).unwrap().unid
    };

    // Columns: open, read, create, edit (unlisted), edit ($Authors lists
    // the caller), delete (listed), create view, folder add, get ACL,
    // secret (named reader), audited (role), authored ($Authors).
    let expected: [(&str, [&str; 12]); 8] = [
        (
            "manager",
            [
                "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "404", "404",
            ],
        ),
        (
            "designer",
            [
                "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "403", "404", "404", "404",
            ],
        ),
        (
            "editor",
            [
                "ok", "ok", "ok", "ok", "ok", "ok", "403", "ok", "403", "404", "404", "404",
            ],
        ),
        (
            "author",
            [
                "ok", "ok", "ok", "403", "ok", "403", "403", "ok", "403", "404", "404", "ok",
            ],
        ),
        (
            "reader",
            [
                "ok", "ok", "403", "403", "403", "403", "403", "403", "403", "404", "ok", "404",
            ],
        ),
        (
            "depositor",
            [
                "ok", "403", "ok", "404", "404", "404", "403", "403", "403", "403", "403", "403",
            ],
        ),
        // No access: the database answers as if it did not exist.
        (
            "noaccess",
            [
                "404", "404", "404", "404", "404", "404", "404", "404", "404", "404", "404", "404",
            ],
        ),
        (
            "anonymous",
            [
                "401", "401", "401", "401", "401", "401", "401", "401", "401", "401", "401", "401",
            ],
        ),
    ];
    let mut failures = Vec::new();
    for (who, want) in expected {
        let user = (who != "anonymous").then_some(who);
        let c = connect(&srv, user);
        // Operations needing a handle run through the admin's handle
        // numbering only if the caller could open it; otherwise a handle
        // that does not exist stands in, and the ACL check must come first.
        let opened = c.open_database("apps/acl.fdb");
        let open = outcome(opened.as_ref().map(|_| ()).map_err(clone_err));
        let got: Vec<&str> = match opened {
            Err(e) => {
                let o = outcome::<()>(Err(e));
                vec![open]
                    .into_iter()
                    .chain(std::iter::repeat_n(o, 11))
                    .collect()
            }
            Ok((db, _)) => {
                let read = outcome(c.read_document(db, DocRef::Unid(fresh(None))));
                let create = outcome(c.create_document(db, r#"{"Subject":"new"}"#));
                let edit =
                    outcome(c.update_document(db, fresh(None), None, false, r#"{"Subject":"x"}"#));
                let edit_listed = outcome(c.update_document(
                    db,
                    fresh(Some(who)),
                    None,
                    false,
                    r#"{"Subject":"x"}"#,
                ));
                let delete = outcome(c.delete_document(db, fresh(Some(who)), None, false));
                let view = outcome(c.request(client::Request::CreateView {
                    db,
                    json: format!(
                        r#"{{"name":"V{who}","kind":"view","selection":"SELECT @All","columns":[{{"title":"S","formula":"Subject"}}]}}"#
                    ),
                }));
                let folder_add = outcome(c.folder_add(db, "Pile", &[fresh(None)]));
                let acl = outcome(c.get_acl("apps/acl.fdb"));
                let secret_r = outcome(c.read_document(db, DocRef::Unid(secret.unid)));
                let audited_r = outcome(c.read_document(db, DocRef::Unid(audited.unid)));
                let authored_r = outcome(c.read_document(db, DocRef::Unid(authored.unid)));
                check_hidden_everywhere(
                    &c,
                    db,
                    who,
                    &[
                        (secret.unid, secret_r),
                        (audited.unid, audited_r),
                        (authored.unid, authored_r),
                    ],
                    &mut failures,
                );
                vec![
                    open,
                    read,
                    create,
                    edit,
                    edit_listed,
                    delete,
                    view,
                    folder_add,
                    acl,
                    secret_r,
                    audited_r,
                    authored_r,
                ]
            }
        };
        if got != want {
            failures.push(format!(
                "{who}: got {got:?}\n{:>w$}  want {want:?}",
                "",
                w = who.len()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "ACL matrix mismatches:\n{}",
        failures.join("\n")
    );
}

fn clone_err(e: &client::ClientError) -> client::ClientError {
    client::ClientError::Server {
        code: e.code().unwrap_or(ErrorCode::ServerError),
        message: e.to_string(),
    }
}

/// A document the caller may not read must not show up in changes,
/// search results or view rows either; one they may read must.
fn check_hidden_everywhere(
    c: &Client,
    db: client::DbHandle,
    who: &str,
    docs: &[(client::Unid, &str)],
    failures: &mut Vec<String>,
) {
    if c.read_document(db, DocRef::Unid(docs[0].0)).is_err()
        && c.modified_since(db, Cursor(0), 1000).is_err()
    {
        return; // no read access at all (depositor): nothing to compare
    }
    let (changes, _, _) = c.modified_since(db, Cursor(0), 1000).unwrap();
    let mut searched = Vec::new();
    c.search(db, "SELECT @All", None, |d| searched.push(d.meta.unid))
        .unwrap();
    let pile = c.open_collection(db, "Pile").unwrap();
    let (rows, _) = c
        .read_entries(
            pile.collection,
            Start::Position(0),
            100,
            ReadFlags::default(),
        )
        .unwrap();
    let in_view: Vec<_> = rows
        .iter()
        .filter_map(|r| match r {
            client::Row::Entry { unid, .. } => Some(*unid),
            _ => None,
        })
        .collect();
    for (unid, read) in docs {
        let visible = *read == "ok";
        let in_changes = changes.iter().any(|d| d.meta.unid == *unid);
        let in_search = searched.contains(unid);
        let in_rows = in_view.contains(unid);
        if (in_changes, in_search, in_rows) != (visible, visible, visible) {
            failures.push(format!(
                "{who}: document readable={visible} but in changes={in_changes}, search={in_search}, view={in_rows}"
            ));
        }
    }
}
