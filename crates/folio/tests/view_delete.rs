//! Deleting a view end to end: the real `folio serve`, over HTTP (ureq)
//! and the native protocol. A Designer deletes and defines it again; a
//! Reader is refused; an anonymous caller on a protected database gets
//! the answer a missing database gets; an unknown view is 404; and the
//! design note cannot be deleted as a document.

mod common;

use client::{DocRef, ErrorCode, NoteId};
use common::{json, Server, ADMIN_PW};
use serde_json::Value;

const DB: &str = "apps/v.fdb";
const DB_SEGMENT: &str = "apps%2Fv.fdb";
const VIEW: &str = r#"{"name":"Subjects","kind":"view","selection":"SELECT @All","columns":[{"title":"Subject","formula":"Subject","sort":"asc"}]}"#;

/// One HTTP request as `user` (`None`: anonymous): status and JSON body.
fn http(srv: &Server, method: &str, user: Option<&str>, path: &str, body: &str) -> (u16, Value) {
    let mut req = ureq::request(method, &format!("http://{}{path}", srv.http));
    if let Some(user) = user {
        let password = if user == "admin" {
            ADMIN_PW.to_string()
        } else {
            format!("{user}-password")
        };
        let auth = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{user}:{password}"),
        );
        req = req.set("Authorization", &format!("Basic {auth}"));
    }
    let r = if body.is_empty() {
        req.call()
    } else {
        req.send_string(body)
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let status = resp.status();
    let text = resp.into_string().unwrap();
    (status, json(&text))
}

fn subjects(v: &Value) -> Vec<String> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["columns"]["Subject"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_designer_deletes_a_view_over_http_and_defines_it_again() {
    let tmp = common::users_dir(&["dana", "rita"]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database(DB, "Views").unwrap();
    admin
        .set_acl(
            DB,
            r#"{"default":"noaccess","anonymous":"noaccess","entries":[
                {"name":"admin","level":"manager"},
                {"name":"dana","level":"designer"},
                {"name":"rita","level":"reader"}]}"#,
        )
        .unwrap();
    let (db, _) = admin.open_database(DB).unwrap();
    for s in ["pear", "apple"] {
        admin
            .create_document(db, &format!(r#"{{"Subject":"{s}"}}"#))
            .unwrap();
    }
    let views = format!("/db/{DB_SEGMENT}/views");
    let view = format!("{views}/Subjects");
    assert_eq!(http(&srv, "POST", Some("dana"), &views, VIEW).0, 201);
    let (status, rows) = http(&srv, "GET", Some("rita"), &view, "");
    assert_eq!(
        (status, subjects(&rows)),
        (200, vec!["apple".into(), "pear".into()])
    );

    // Refused: a Reader, an anonymous caller (as for a missing database),
    // an unknown view. Each changes nothing.
    let (status, body) = http(&srv, "DELETE", Some("rita"), &view, "");
    assert_eq!(status, 403, "{body}");
    let (anon, anon_body) = http(&srv, "DELETE", None, &view, "");
    let (missing, missing_body) = http(&srv, "DELETE", None, "/db/nope.fdb/views/Subjects", "");
    assert_eq!(anon, 401, "{anon_body}");
    assert_eq!(missing, anon, "{missing_body}");
    assert_eq!(
        anon_body["error"], missing_body["error"],
        "{anon_body} / {missing_body}"
    );
    let (status, body) = http(&srv, "DELETE", Some("dana"), &format!("{views}/Nope"), "");
    assert_eq!(status, 404, "{body}");
    assert!(body["reason"].as_str().unwrap().contains("Nope"), "{body}");
    assert_eq!(http(&srv, "GET", Some("rita"), &view, "").0, 200);

    // The design note is not deleted as a document, by either door.
    let design = (1..20)
        .filter_map(|i| admin.read_document(db, DocRef::NoteId(NoteId(i))).ok())
        .find(|d| d.json.contains("$ViewDef") && d.json.contains("Subjects"))
        .expect("the view's design note");
    let unid = design.meta.unid;
    let (status, body) = http(
        &srv,
        "DELETE",
        Some("dana"),
        &format!("/db/{DB_SEGMENT}/docs/{unid}"),
        "",
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["reason"].as_str().unwrap().contains("view delete"),
        "{body}"
    );
    let e = admin.delete_document(db, unid, None, false).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::BadRequest), "{e}");
    assert!(e.to_string().contains("view delete"), "{e}");
    assert_eq!(http(&srv, "GET", Some("rita"), &view, "").0, 200);

    // A Designer deletes it; it is gone, then defined afresh.
    let (status, body) = http(&srv, "DELETE", Some("dana"), &view, "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(http(&srv, "GET", Some("rita"), &view, "").0, 404);
    admin.create_document(db, r#"{"Subject":"fig"}"#).unwrap();
    assert_eq!(http(&srv, "POST", Some("dana"), &views, VIEW).0, 201);
    let (status, rows) = http(&srv, "GET", Some("rita"), &view, "");
    assert_eq!(
        (status, subjects(&rows)),
        (200, vec!["apple".into(), "fig".into(), "pear".into()])
    );

    // The native protocol: refused to a Reader, done for a Designer.
    let rita = srv.client(Some(("rita", "rita-password"))).unwrap();
    let (rdb, _) = rita.open_database(DB).unwrap();
    let e = rita.delete_view(rdb, "Subjects").unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Forbidden), "{e}");
    let dana = srv.client(Some(("dana", "dana-password"))).unwrap();
    let (ddb, _) = dana.open_database(DB).unwrap();
    dana.delete_view(ddb, "subjects").unwrap();
    let e = dana.delete_view(ddb, "Subjects").unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound), "{e}");
    assert_eq!(http(&srv, "GET", Some("rita"), &view, "").0, 404);
}
