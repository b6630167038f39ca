//! `folio compact` end to end, against the real binary: in place over the
//! native protocol while another client writes (nothing lost, the file
//! smaller, the instance id kept), refused to a non-Manager (native and
//! HTTP), a dry run over HTTP, the same report embedded, the copy style
//! with a new instance id; and a server killed (SIGKILL) while it
//! compacts under writes recovers every acknowledged write.

mod common;

use common::{json, ok, users_dir, Server, ADMIN_PW};
use protocol::{DocRef, ErrorCode, Unid};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn doc(i: usize) -> String {
    format!(
        r#"{{"Form": "Memo", "N": {i}, "Body": "{}"}}"#,
        "x".repeat(3000)
    )
}

fn basic(user: &str, pw: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    )
}

/// Creates `n` documents, then deletes every other one; returns the kept.
fn half_deleted(admin: &client::blocking::Client, path: &str, n: usize) -> Vec<Unid> {
    admin.create_database(path, "C").unwrap();
    let (db, _) = admin.open_database(path).unwrap();
    let all: Vec<Unid> = (0..n)
        .map(|i| admin.create_document(db, &doc(i)).unwrap().unid)
        .collect();
    let mut kept = Vec::new();
    for (i, u) in all.into_iter().enumerate() {
        if i.is_multiple_of(2) {
            kept.push(u);
        } else {
            admin.delete_document(db, u, None, false).unwrap();
        }
    }
    kept
}

/// Writes documents until told to stop; returns the acknowledged ones.
fn writer(
    c: client::blocking::Client,
    path: &str,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Unid>> {
    let path = path.to_string();
    std::thread::spawn(move || {
        let (db, _) = c.open_database(&path).unwrap();
        let mut acked = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match c.create_document(db, &doc(100_000 + acked.len())) {
                Ok(m) => acked.push(m.unid),
                Err(_) => break,
            }
        }
        acked
    })
}

#[test]
fn compact_in_place_over_the_server_while_a_client_writes() {
    let data = users_dir(&["bob"]);
    let srv = Server::start(data.path());
    let admin = srv.admin();
    let kept = half_deleted(&admin, "c.fdb", 300);
    let (db, info) = admin.open_database("c.fdb").unwrap();

    // Not for a non-Manager, on either door.
    let bob = srv.client(Some(("bob", "bob-password"))).unwrap();
    let e = bob.compact("c.fdb", false, false).unwrap_err();
    assert!(
        matches!(
            &e,
            client::ClientError::Server {
                code: ErrorCode::Forbidden | ErrorCode::NotFound,
                ..
            }
        ),
        "{e}"
    );
    let agent = ureq::AgentBuilder::new().build();
    let url = format!("http://{}/db/c.fdb/compact", srv.http);
    let refused = agent
        .post(&url)
        .set("Authorization", &basic("bob", "bob-password"))
        .send_string("");
    assert!(
        matches!(refused, Err(ureq::Error::Status(403 | 404, _))),
        "{refused:?}"
    );
    let dry = agent
        .post(&url)
        .set("Authorization", &basic("admin", ADMIN_PW))
        .send_string(r#"{"dry_run": true}"#)
        .unwrap();
    let dry = json(&dry.into_string().unwrap());
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert!(
        dry["pages_after"].as_u64() < dry["pages_before"].as_u64(),
        "{dry}"
    );
    let bad = agent
        .post(&url)
        .set("Authorization", &basic("admin", ADMIN_PW))
        .send_string(r#"{"copy": "yes"}"#);
    assert!(matches!(bad, Err(ureq::Error::Status(400, _))), "{bad:?}");

    let stop = Arc::new(AtomicBool::new(false));
    let w = writer(srv.admin(), "c.fdb", stop.clone());
    let o = srv.cli(&["compact", "c.fdb"], "");
    stop.store(true, Ordering::Relaxed);
    let written = w.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(r["style"], "in-place", "{r}");
    assert_eq!(r["instance_before"], r["instance_after"], "{r}");
    assert!(r["pages_moved"].as_u64() > Some(0), "{r}");
    // The writer may have taken pages at the end of the file while the
    // run moved others down, so whether that run could cut the file
    // depends on timing; with the writer gone, the file is cut by it or
    // by the next run.
    if r["truncated"] != true {
        let o = srv.cli(&["compact", "c.fdb"], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let again = json(&String::from_utf8_lossy(&o.stdout));
        assert_eq!(again["truncated"], true, "{r} then {again}");
        assert!(
            again["bytes_after"].as_u64() < again["bytes_before"].as_u64(),
            "{again}"
        );
    } else {
        assert!(
            r["bytes_after"].as_u64() < r["bytes_before"].as_u64(),
            "{r}"
        );
    }
    for u in kept.iter().chain(&written) {
        admin.read_document(db, DocRef::Unid(*u)).unwrap();
    }
    let (_, after) = admin.open_database("c.fdb").unwrap();
    assert_eq!(after.instance_id, info.instance_id);
    assert!(srv.stop().success());

    // Embedded: the same report, and a copy gets a new instance id.
    let embedded = json(&ok(data.path(), &["compact", "c.fdb"], ""));
    let keys = |v: &serde_json::Value| -> BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(keys(&embedded), keys(&r));
    let copy = json(&ok(data.path(), &["compact", "c.fdb", "--copy"], ""));
    assert_eq!(copy["style"], "copy");
    assert_ne!(copy["instance_before"], copy["instance_after"], "{copy}");
    let check = json(&ok(data.path(), &["db", "check", "c.fdb"], ""));
    assert_eq!(check["leaked_pages"], 0, "{check}");
    assert_eq!(
        check["notes"].as_u64(),
        Some((kept.len() + written.len()) as u64 + 1),
        "{check}"
    );
}

#[test]
fn a_server_killed_while_compacting_under_writes_loses_nothing() {
    let data = users_dir(&[]);
    for round in 0..3 {
        let srv = Server::start(data.path());
        let admin = srv.admin();
        let path = format!("k{round}.fdb");
        let kept = half_deleted(&admin, &path, 400);
        let stop = Arc::new(AtomicBool::new(false));
        let w = writer(srv.admin(), &path, stop.clone());
        let compactor = {
            let c = srv.admin();
            let path = path.clone();
            std::thread::spawn(move || c.compact(&path, false, false))
        };
        // Somewhere in the compact (or after it): the moment does not
        // matter, every acknowledged write must survive it.
        std::thread::sleep(std::time::Duration::from_millis(20 * (round + 1)));
        srv.kill();
        stop.store(true, Ordering::Relaxed);
        let written = w.join().unwrap();
        let _ = compactor.join().unwrap();

        let srv = Server::start(data.path());
        let admin = srv.admin();
        let (db, _) = admin.open_database(&path).unwrap();
        for u in kept.iter().chain(&written) {
            admin.read_document(db, DocRef::Unid(*u)).unwrap();
        }
        assert!(srv.stop().success());
        let check = json(&ok(data.path(), &["db", "check", &path], ""));
        assert!(check["notes"].as_u64() >= Some((kept.len() + written.len()) as u64));
        // A second compact finishes the job and leaves nothing leaked.
        ok(data.path(), &["compact", &path], "");
        let check = json(&ok(data.path(), &["db", "check", &path], ""));
        assert_eq!(check["leaked_pages"], 0, "{check}");
    }
}
