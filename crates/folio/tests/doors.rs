//! What a stranger (or an attacker) tries at the server's doors, driven
//! against the real `folio serve` binary with clients nobody here wrote
//! (`ureq` for HTTP) as well as the CLI and the client library:
//!
//! - a second spelling of a database path never reaches a second instance
//!   of the file (I18): every spelling but the canonical one is refused,
//!   and all acknowledged writes survive a clean restart and a kill -9;
//! - a caller who may not see a database cannot tell whether it exists;
//! - a view definition with an unknown field or an empty selection is
//!   refused and changes nothing.

mod common;

use client::ErrorCode;
use common::{folio, Server, ADMIN_PW};

fn status(r: Result<ureq::Response, ureq::Error>) -> (u16, String) {
    match r {
        Ok(r) => (r.status(), r.into_string().unwrap()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap()),
        Err(e) => panic!("transport error: {e}"),
    }
}

fn basic(user: &str, pw: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    )
}

/// The spellings of `alias/real.fdb` a stranger would try, percent-encoded
/// as one path segment.
const SPELLINGS: &[&str] = &[
    "alias%2F%2Freal.fdb",
    "alias%2F.%2Freal.fdb",
    ".%2Falias%2Freal.fdb",
    "alias%2Fx%2F..%2Freal.fdb",
    "%2Falias%2Freal.fdb",
    "alias%2Freal.fdb%2F",
    "alias%5Creal.fdb",
    "alias%2Freal.FDB",
    "alias%2Freal.fdb%20",
    "%20alias%2Freal.fdb",
];

#[test]
fn every_other_spelling_of_a_database_path_is_refused_and_no_write_is_lost() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    let http = format!("http://{}", srv.http);
    let auth = basic("admin", ADMIN_PW);
    let (code, body) = status(
        ureq::put(&format!("{http}/db/alias%2Freal.fdb"))
            .set("Authorization", &auth)
            .send_string("{}"),
    );
    assert_eq!(code, 201, "{body}");

    let mut acked = Vec::new();
    for (i, spelling) in SPELLINGS.iter().enumerate() {
        // Creating under the odd spelling, reading through it and writing
        // through it are all refused as a bad path, naming the reason.
        let (code, body) = status(
            ureq::put(&format!("{http}/db/{spelling}"))
                .set("Authorization", &auth)
                .send_string("{}"),
        );
        assert_eq!(code, 400, "create {spelling}: {body}");
        assert!(body.contains("invalid database path"), "{spelling}: {body}");
        let (code, body) = status(
            ureq::get(&format!("{http}/db/{spelling}"))
                .set("Authorization", &auth)
                .call(),
        );
        assert_eq!(code, 400, "open {spelling}: {body}");
        let (code, body) = status(
            ureq::post(&format!("{http}/db/{spelling}/docs"))
                .set("Authorization", &auth)
                .send_string(&format!(r#"{{"N":{i},"Via":"odd"}}"#)),
        );
        assert_eq!(code, 400, "write {spelling}: {body}");
        // The canonical spelling takes the same write.
        let (code, body) = status(
            ureq::post(&format!("{http}/db/alias%2Freal.fdb/docs"))
                .set("Authorization", &auth)
                .send_string(&format!(r#"{{"N":{i}}}"#)),
        );
        assert_eq!(code, 201, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        acked.push(v["unid"].as_str().unwrap().to_string());
    }
    let (code, body) = status(
        ureq::get(&format!("{http}/dbs"))
            .set("Authorization", &auth)
            .call(),
    );
    assert_eq!(code, 200);
    let dbs: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(dbs.as_array().unwrap().len(), 1, "{body}");

    let check = |srv: &Server| {
        let http = format!("http://{}", srv.http);
        for u in &acked {
            let (code, body) = status(
                ureq::get(&format!("{http}/db/alias%2Freal.fdb/docs/{u}"))
                    .set("Authorization", &auth)
                    .call(),
            );
            assert_eq!(code, 200, "{u} lost: {body}");
        }
    };
    assert!(srv.stop().success());
    let srv = Server::start(tmp.path());
    check(&srv);
    srv.kill();
    let srv = Server::start(tmp.path());
    check(&srv);
    assert!(srv.stop().success());
}

#[test]
fn the_cli_refuses_non_canonical_paths_embedded_and_remote() {
    let tmp = common::users_dir(&[]);
    for p in ["x/./y.fdb", "x//y.fdb", "x/y.fdb/", "x/../y.fdb", "x/Y.FDB"] {
        common::fails(
            tmp.path(),
            &["db", "create", p],
            "",
            "invalid database path",
        );
    }
    let srv = Server::start(tmp.path());
    for p in ["x/./y.fdb", "x//y.fdb"] {
        let out = srv.cli(&["db", "create", p], "");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains("invalid database path"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    let out = srv.cli(&["db", "list"], "");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "");
    assert!(srv.stop().success());
    assert_eq!(
        folio(tmp.path(), &["db", "list"], "").stdout,
        b"".to_vec(),
        "nothing was created"
    );
}

/// A database the caller may not see answers exactly like one that does
/// not exist: same status, same text but for the path, over HTTP and the
/// native protocol, for anonymous and signed-in callers.
#[test]
fn a_caller_cannot_tell_a_protected_database_from_a_missing_one() {
    let tmp = common::users_dir(&["bob"]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database("apps/secret.fdb", "Secret").unwrap();
    let http = format!("http://{}", srv.http);
    let bob = basic("bob", "bob-password");
    let same = |a: (u16, String), b: (u16, String)| {
        assert_eq!(a.0, b.0, "{a:?} vs {b:?}");
        assert_eq!(
            a.1.replace("secret", "PATH"),
            b.1.replace("absent", "PATH"),
            "texts differ"
        );
        a.0
    };
    for tail in [
        "",
        "/docs",
        "/_access",
        "/_acl",
        "/views/Inbox",
        "/docs/0123456789ABCDEF0123456789ABCDEF",
    ] {
        let url = |db: &str| format!("{http}/db/apps%2F{db}.fdb{tail}");
        let anon = same(
            status(ureq::get(&url("secret")).call()),
            status(ureq::get(&url("absent")).call()),
        );
        assert_eq!(anon, 401, "anonymous {tail}");
        let signed_in = same(
            status(ureq::get(&url("secret")).set("Authorization", &bob).call()),
            status(ureq::get(&url("absent")).set("Authorization", &bob).call()),
        );
        assert_eq!(signed_in, 404, "bob {tail}");
        let write = same(
            status(
                ureq::post(&url("secret"))
                    .set("Authorization", &bob)
                    .send_string("{}"),
            ),
            status(
                ureq::post(&url("absent"))
                    .set("Authorization", &bob)
                    .send_string("{}"),
            ),
        );
        assert!(matches!(write, 404 | 405), "bob writes {tail}: {write}");
    }
    // The native protocol answers alike.
    let anon = srv.client(None).unwrap();
    let bob = srv.client(Some(("bob", "bob-password"))).unwrap();
    for c in [&anon, &bob] {
        let a = c.open_database("apps/secret.fdb").unwrap_err();
        let b = c.open_database("apps/absent.fdb").unwrap_err();
        assert_eq!(a.code(), b.code(), "{a} vs {b}");
        assert_eq!(
            a.to_string().replace("secret", "PATH"),
            b.to_string().replace("absent", "PATH")
        );
    }
    assert_eq!(
        anon.open_database("apps/absent.fdb").unwrap_err().code(),
        Some(ErrorCode::Unauthenticated)
    );
    assert_eq!(
        bob.open_database("apps/absent.fdb").unwrap_err().code(),
        Some(ErrorCode::NotFound)
    );
    drop((anon, bob, admin));
    assert!(srv.stop().success());
}

#[test]
fn view_definitions_with_unknown_fields_or_no_selection_are_refused() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    srv.admin().create_database("v.fdb", "").unwrap();
    let http = format!("http://{}", srv.http);
    let auth = basic("admin", ADMIN_PW);
    let col = r#"{"title":"S","formula":"Subject","sort":"asc"}"#;
    let bad = [
        (format!(r#"{{"name":"V","kind":"view","selection":"SELECT @All","columns":[{col}],"colour":"red"}}"#), "colour"),
        (r#"{"name":"V","kind":"view","selection":"SELECT @All","columns":[{"title":"S","formula":"Subject","widht":3}]}"#.to_string(), "widht"),
        (format!(r#"{{"name":"V","kind":"view","selection":"SELECT @All","columns":[{col}],"refersh":"manual"}}"#), "refersh"),
        (format!(r#"{{"name":"V","kind":"view","selection":"SELECT @All","columns":[{col}],"loged":true}}"#), "loged"),
        (format!(r#"{{"name":"V","kind":"view","selection":"","columns":[{col}]}}"#), "selection"),
        (format!(r#"{{"name":"V","kind":"view","selection":"  ","columns":[{col}]}}"#), "selection"),
        (format!(r#"{{"name":"V","kind":"view","columns":[{col}]}}"#), "selection"),
        (format!(r#"{{"name":"V","kind":"folder","selection":"SELECT @All","columns":[{col}]}}"#), "selection"),
    ];
    for (body, needle) in &bad {
        let (code, text) = status(
            ureq::post(&format!("{http}/db/v.fdb/views"))
                .set("Authorization", &auth)
                .send_string(body),
        );
        assert_eq!(code, 400, "{body}: {text}");
        assert!(text.contains(needle), "{body}: {text}");
        let (code, _) = status(
            ureq::get(&format!("{http}/db/v.fdb/views/V"))
                .set("Authorization", &auth)
                .call(),
        );
        assert_eq!(code, 404, "{body} created a view");
    }
    let good =
        format!(r#"{{"name":"V","kind":"view","selection":"SELECT @All","columns":[{col}]}}"#);
    let (code, text) = status(
        ureq::post(&format!("{http}/db/v.fdb/views"))
            .set("Authorization", &auth)
            .send_string(&good),
    );
    assert!(code == 200 || code == 201, "{text}");
    // The CLI, remote and embedded: a view without --select is refused.
    let out = srv.cli(
        &["view", "create", "v.fdb", "W", "--column", "S=Subject"],
        "",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("selection"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(srv.stop().success());
    common::fails(
        tmp.path(),
        &["view", "create", "v.fdb", "W", "--column", "S=Subject"],
        "",
        "selection",
    );
}
