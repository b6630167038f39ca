//! A restore never returns a wrong state (design.md §3.6, I53), end to
//! end against the real binary:
//! - `--until` a time before a backup started is refused naming the
//!   backup's start, even when nobody committed while it ran (the copy
//!   may hold later changes, and the log it rolls forward over cannot
//!   tell); the start itself is accepted;
//! - a refused restore leaves no `*.fdb-restore` file and the target as
//!   it was;
//! - a restore to the latest commit after a server was killed (`kill
//!   -9`) brings back every acknowledged attachment byte for byte, small
//!   (blob pages, I52) and large (attachment store) alike;
//! - an attachment that cannot be read answers a JSON error with a
//!   non-2xx status before any byte of content (or, past the first 256
//!   KiB, a transfer cut short of its `Content-Length`), and the server
//!   log names the database, the document and the object.

mod common;

use common::{folio, json, ok, users_dir, Server, ADMIN_PW};
use protocol::Unid;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

const ARCHIVE_STYLE: &str =
    "[translog]\nstyle = \"archive\"\nextent_size = 262144\nmax_size = 67108864\n";

/// A data directory with an administrator and an archive-style log.
fn archive_dir() -> tempfile::TempDir {
    let data = users_dir(&[]);
    std::fs::write(data.path().join("folio.toml"), ARCHIVE_STYLE).unwrap();
    data
}

/// Content of `len` bytes, distinct per `seed`, incompressible (so the
/// store keeps it as is).
fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn sha_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file name under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

fn no_restore_file(data: &Path) {
    let stale: Vec<_> = files_under(data)
        .into_iter()
        .filter(|f| f.ends_with("-restore"))
        .collect();
    assert!(stale.is_empty(), "left behind: {stale:?}");
}

/// The backup's start time as restore names it, from its manifest.
fn started(backup: &Path) -> String {
    let m = json(&std::fs::read_to_string(backup.join("manifest.json")).unwrap());
    nsf::Timestamp(m["started_micros"].as_i64().unwrap()).to_rfc3339()
}

#[test]
fn until_before_a_quiet_backup_is_refused_naming_its_start_and_leaves_nothing() {
    let data = archive_dir();
    let d = data.path();
    let backups = tempfile::tempdir().unwrap();
    let backup = backups.path().join("b1");
    let b = backup.to_str().unwrap();
    ok(d, &["db", "create", "a.fdb"], "");
    let t0 = nsf::Timestamp::now();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let unid = ok(d, &["doc", "put", "a.fdb"], r#"{"After":"T0"}"#);
    let unid = unid.trim();
    // Nobody commits while the backup runs.
    ok(d, &["backup", b], "");
    let start = started(&backup);
    let before = std::fs::read(d.join("a.fdb")).unwrap();

    for to in [&["--to", "b.fdb"][..], &[][..]] {
        let mut args = vec!["restore", b, "--until"];
        let t0 = t0.to_rfc3339();
        args.push(&t0);
        args.extend_from_slice(to);
        let o = folio(d, &args, "");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} accepted: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
        assert!(
            err.contains(&format!("the backup started at {start}")),
            "{err}"
        );
        no_restore_file(d);
    }
    assert!(!d.join("b.fdb").exists());
    assert_eq!(std::fs::read(d.join("a.fdb")).unwrap(), before);

    // The start itself is a time the backup can restore to: the document
    // committed before it is there.
    let restored = json(&ok(
        d,
        &["restore", b, "--until", &start, "--to", "s.fdb"],
        "",
    ));
    assert_eq!(restored[0]["path"], "s.fdb", "{restored}");
    let doc = json(&ok(d, &["doc", "get", "s.fdb", unid], ""));
    assert_eq!(doc["After"], "T0", "{doc}");
    no_restore_file(d);
}

#[test]
fn a_restore_refused_after_its_copy_began_removes_the_copy() {
    let data = archive_dir();
    let d = data.path();
    let backups = tempfile::tempdir().unwrap();
    let backup = backups.path().join("b1");
    let b = backup.to_str().unwrap();
    ok(d, &["db", "create", "sub/a.fdb"], "");
    ok(d, &["doc", "put", "sub/a.fdb"], r#"{"N":1}"#);
    ok(d, &["backup", b], "");
    // The copy is damaged: restore finds out while copying it in.
    let copy = backup.join("files/sub/a.fdb");
    let mut bytes = std::fs::read(&copy).unwrap();
    bytes[8192 + 100] ^= 0xFF;
    std::fs::write(&copy, bytes).unwrap();
    for to in [&["--to", "sub/c.fdb"][..], &[][..]] {
        let mut args = vec!["restore", b];
        args.extend_from_slice(to);
        let o = folio(d, &args, "");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} accepted");
        assert!(err.contains("fails its checksum"), "{err}");
        no_restore_file(d);
    }
    assert!(!d.join("sub/c.fdb").exists());
    let doc = ok(d, &["doc", "list", "sub/a.fdb"], "");
    assert_eq!(doc.lines().count(), 1, "{doc}");
}

/// An attachment a client had acknowledged.
struct Acked {
    unid: Unid,
    name: String,
    sha: String,
}

/// Writes `docs` documents to a.fdb, each with a small attachment (1 to
/// 4095 bytes, blob pages) and every third with a large one (100 KiB,
/// the attachment store); every attachment is acknowledged.
fn write_docs(srv: &Server, from: u64, docs: u64, acked: &mut Vec<Acked>) {
    let c = srv.admin();
    let (db, _) = c.open_database("a.fdb").unwrap();
    for n in from..from + docs {
        let unid = c
            .create_document(db, &format!(r#"{{"N": {n}}}"#))
            .unwrap()
            .unid;
        let mut files = vec![("small.bin", content(n, 1 + (n as usize * 397) % 4095))];
        if n.is_multiple_of(3) {
            files.push(("large.bin", content(n + 1000, 100 << 10)));
        }
        for (name, f) in files {
            c.put_attachment(db, unid, name, "application/octet-stream", None, &f[..])
                .unwrap();
            acked.push(Acked {
                unid,
                name: name.into(),
                sha: sha_hex(&f),
            });
        }
    }
}

fn assert_all_there(srv: &Server, path: &str, acked: &[Acked]) {
    let c = srv.admin();
    let (db, _) = c.open_database(path).unwrap();
    for a in acked {
        let mut got = Vec::new();
        c.get_attachment(db, a.unid, &a.name, &mut got)
            .unwrap_or_else(|e| panic!("{path}: {} of {}: {e}", a.name, a.unid));
        assert_eq!(sha_hex(&got), a.sha, "{path}: {} of {}", a.name, a.unid);
    }
}

#[test]
fn a_restore_to_the_latest_after_kill_9_brings_back_every_acknowledged_attachment() {
    let data = archive_dir();
    let d = data.path();
    let backups = tempfile::tempdir().unwrap();
    let backup = backups.path().join("b1");
    let b = backup.to_str().unwrap();
    let srv = Server::start(d);
    srv.admin().create_database("a.fdb", "A").unwrap();
    let mut acked = Vec::new();
    write_docs(&srv, 0, 6, &mut acked);
    let o = srv.cli(&["backup", b], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    write_docs(&srv, 6, 30, &mut acked);
    srv.kill();

    let restored = json(&ok(
        d,
        &["restore", b, "--db", "a.fdb", "--to", "r.fdb"],
        "",
    ));
    assert_eq!(
        restored[0]["attachment_objects_missing"],
        serde_json::json!([])
    );
    let srv = Server::start(d);
    assert_all_there(&srv, "a.fdb", &acked);
    assert_all_there(&srv, "r.fdb", &acked);
    assert!(srv.stop().success());
}

/// One HTTP/1.1 GET as the administrator: status, headers (lowercased
/// names) and the bytes that came before the server closed.
fn http_get(addr: &str, path: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("admin:{ADMIN_PW}"));
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Basic {auth}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    // A connection the server aborts may end in a reset: keep what came.
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, raw[end + 4..].to_vec())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Flips a byte of the stored content of the attachment store object
/// holding `bytes` (stored as is: 76 bytes of header, then the content).
fn damage_object(data: &Path, bytes: &[u8], at: usize) -> String {
    let hash = sha_hex(bytes);
    let object = data
        .join("attachstore/objects")
        .join(&hash[..2])
        .join(&hash);
    let mut stored = std::fs::read(&object).unwrap();
    assert_eq!(stored.len(), 76 + bytes.len(), "stored as is");
    stored[76 + at] ^= 0x5A;
    std::fs::write(&object, stored).unwrap();
    hash
}

#[test]
fn an_unreadable_attachment_answers_a_json_error_before_any_content() {
    let data = users_dir(&[]);
    let d = data.path();
    let srv = Server::start(d);
    let c = srv.admin();
    let (db, _) = c
        .create_database("a.fdb", "A")
        .and_then(|_| c.open_database("a.fdb"))
        .unwrap();
    let unid = c.create_document(db, r#"{"N": 1}"#).unwrap().unid;
    // Within the first 256 KiB read before answering, and past it.
    let short = content(1, 50_000);
    let long = content(2, 600 << 10);
    for (name, f) in [("short.bin", &short), ("long.bin", &long)] {
        c.put_attachment(db, unid, name, "application/octet-stream", None, &f[..])
            .unwrap();
    }
    let short_hash = damage_object(d, &short, 10);
    damage_object(d, &long, 500 << 10);
    let url = |name: &str| format!("/db/a.fdb/docs/{unid}/attachments/{name}");

    // Twice: the first answer must not be a closed connection either.
    for _ in 0..2 {
        let (status, headers, body) = http_get(&srv.http, &url("short.bin"));
        assert_eq!(status, 500, "{}", String::from_utf8_lossy(&body));
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"], "server_error", "{v}");
        let reason = v["reason"].as_str().unwrap();
        assert!(
            reason.contains("a.fdb") && reason.contains("short.bin"),
            "{v}"
        );
    }
    let log = srv.log_with("an attachment cannot be read");
    let line = log
        .lines()
        .find(|l| l.contains("an attachment cannot be read"))
        .unwrap_or_else(|| panic!("nothing logged: {log}"));
    for what in ["a.fdb", &unid.to_string(), "short.bin", &short_hash] {
        assert!(line.contains(what), "{what} not in {line}");
    }

    // Large content fails after its answer began: the transfer ends short
    // of its Content-Length, never looking complete.
    let (status, headers, body) = http_get(&srv.http, &url("long.bin"));
    assert_eq!(status, 200);
    let length: usize = header(&headers, "content-length").unwrap().parse().unwrap();
    assert_eq!(length, long.len());
    assert!(body.len() < length, "{} of {length} bytes", body.len());
    // An object has one checksum for the whole content: the damaged byte
    // itself may have been sent, before the end showed it was wrong.
    let differs = body.iter().zip(&long).position(|(a, b)| a != b);
    assert!(
        differs.is_none_or(|at| at == 500 << 10),
        "what came before the damage is the content ({} bytes)",
        body.len()
    );

    // Content that reads answers as before.
    c.put_attachment(
        db,
        unid,
        "ok.bin",
        "application/octet-stream",
        None,
        &short[..100],
    )
    .unwrap();
    let (status, _, body) = http_get(&srv.http, &url("ok.bin"));
    assert_eq!((status, &body[..]), (200, &short[..100]));
    assert!(srv.stop().success());
}
