//! Documents larger than a frame replicate between real `folio serve`
//! processes (design.md §11.7, I48): a 40 MiB attachment, half text and
//! half noise, crosses in fragments from one server to another (a pull)
//! and another back (a push) and reads back with the same SHA-256; a
//! push cut off in the middle of its third document by a proxy that
//! stops forwarding, the target server then killed with SIGKILL, resumes
//! per document: the rerun sends only the documents the target had not
//! written, and nothing is lost or duplicated; a pushed attachment above
//! the target's `max_attachment_size` is refused, naming it, and nothing
//! is stored.

mod common;
use client::blocking::Client;
use common::{json, ok, Server, ADMIN_PW};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

const DB: &str = "big.fdb";
const MIB: usize = 1 << 20;

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Half text that compresses well, half noise that does not.
fn half_compressible(n: usize, seed: u64) -> Vec<u8> {
    let words = [
        "replica", "fragment", "frame", "the", "of", "document", "zstd",
    ];
    let mut out = Vec::with_capacity(n);
    let mut i = seed as usize;
    while out.len() < n / 2 {
        out.extend_from_slice(words[i % words.len()].as_bytes());
        out.push(if i.is_multiple_of(11) { b'\n' } else { b' ' });
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out.truncate(n / 2);
    out.extend(noise(n - out.len(), seed));
    out
}

fn sha(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// An attachment as the server reads it back.
fn read(c: &Client, unid: client::Unid, name: &str) -> Vec<u8> {
    let (db, _) = c.open_database(DB).unwrap();
    let mut out = Vec::new();
    c.get_attachment(db, unid, name, &mut out).unwrap();
    out
}

/// A new document on `c` with `bytes` as `name`.
fn put(c: &Client, subject: &str, name: &str, bytes: &[u8]) -> client::Unid {
    let (db, _) = c.open_database(DB).unwrap();
    let unid = c
        .create_document(db, &format!(r#"{{"Subject":"{subject}"}}"#))
        .unwrap()
        .unid;
    c.put_attachment(
        db,
        unid,
        name,
        "application/octet-stream",
        Some(bytes.len() as u64),
        bytes,
    )
    .unwrap();
    unid
}

/// `folio --data LOCAL --server ADDR --user admin replicate DB DB ARGS`.
fn local_replicate(local: &Path, addr: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_folio"));
    cmd.arg("--data")
        .arg(local)
        .args(["--server", addr, "--user", "admin", "replicate", DB, DB])
        .args(args)
        .env("FOLIO_PASSWORD", ADMIN_PW)
        .stdin(Stdio::null());
    cmd
}

fn output_ok(o: Output, what: &str) -> serde_json::Value {
    assert!(
        o.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    json(&String::from_utf8(o.stdout).unwrap())
}

/// The documents of `DB` on `srv`: UNID → subject.
fn listed(srv: &Server) -> Vec<(String, String)> {
    let o = srv.cli(&["doc", "list", DB], "");
    assert!(
        o.status.success(),
        "doc list: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let d = json(l);
            (
                d["$unid"].as_str().unwrap().to_owned(),
                d["Subject"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_40_mib_attachment_crosses_between_servers_both_ways() {
    let (data_a, data_b) = (common::users_dir(&[]), common::users_dir(&[]));
    let (a, b) = (Server::start(data_a.path()), Server::start(data_b.path()));
    let on_b = b.admin();
    on_b.create_database(DB, "Big").unwrap();
    let pulled = half_compressible(40 * MIB, 1);
    let first = put(&on_b, "pulled", "pulled.bin", &pulled);

    // A pull: A makes a replica of B's database.
    let created = a.replicate_with(&b, DB, &["--create"]);
    let pull = &created["pulls"][0];
    // The document and the ACL note.
    assert_eq!(pull["documents"], 2, "{created}");
    // The text half crossed as B's zstd stream, the noise as is.
    let crossed = pull["bytes_uncompressed"].as_u64().unwrap();
    assert!(crossed < 30 * MIB as u64, "{created}");
    assert!(crossed > 20 * MIB as u64, "{created}");
    let on_a = a.admin();
    assert_eq!(sha(&read(&on_a, first, "pulled.bin")), sha(&pulled));

    // A push: a new document on A goes to B.
    let pushed = half_compressible(40 * MIB, 2);
    let second = put(&on_a, "pushed", "pushed.bin", &pushed);
    let push = a.replicate_with(&b, DB, &["--direction", "push"]);
    assert_eq!(push["pulls"][0]["documents"], 1, "{push}");
    assert_eq!(sha(&read(&on_b, second, "pushed.bin")), sha(&pushed));

    // Both hold the same two documents: nothing more to send either way.
    let again = a.replicate_with(&b, DB, &["--direction", "both"]);
    for p in again["pulls"].as_array().unwrap() {
        assert_eq!(p["documents"], 0, "{again}");
    }
    assert_eq!(listed(&a).len(), 2);
    assert_eq!(listed(&b).len(), 2);
}

/// A TCP proxy to `to` that forwards everything back and, towards `to`,
/// the first `budget` bytes only, then holds the connection open; the
/// receiver hears once the budget is spent.
fn stalling_proxy(to: String, budget: u64) -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (spent_tx, spent_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let left = Arc::new(AtomicU64::new(budget));
        for inbound in listener.incoming() {
            let Ok(inbound) = inbound else { return };
            let Ok(outbound) = TcpStream::connect(&to) else {
                return;
            };
            let (mut in_r, mut out_w) =
                (inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
            let (left, spent) = (left.clone(), spent_tx.clone());
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 << 10];
                loop {
                    let room = left.load(Ordering::SeqCst).min(buf.len() as u64) as usize;
                    if room == 0 {
                        let _ = spent.send(());
                        // Hold the connection until the test ends.
                        let _ = in_r.read_to_end(&mut Vec::new());
                        return;
                    }
                    let n = match in_r.read(&mut buf[..room]) {
                        Ok(0) | Err(_) => {
                            let _ = out_w.shutdown(Shutdown::Write);
                            return;
                        }
                        Ok(n) => n,
                    };
                    left.fetch_sub(n as u64, Ordering::SeqCst);
                    if out_w.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
            let (mut out_r, mut in_w) = (outbound, inbound);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut out_r, &mut in_w);
                let _ = in_w.shutdown(Shutdown::Write);
            });
        }
    });
    (addr, spent_rx)
}

#[test]
fn a_push_cut_mid_document_resumes_per_document() {
    let data = common::users_dir(&[]);
    let srv = Server::start(data.path());
    srv.admin().create_database(DB, "Big").unwrap();
    let local = tempfile::tempdir().unwrap();
    let l = local.path();
    let o = local_replicate(l, &srv.native, &["--create"])
        .output()
        .unwrap();
    output_ok(o, "replicate --create");
    // Five documents of 8 MiB of noise each (nothing for the connection
    // to compress), written here.
    let files = tempfile::tempdir().unwrap();
    let mut docs = Vec::new();
    for i in 0..5u64 {
        let bytes = noise(8 * MIB, 10 + i);
        let file = files.path().join(format!("doc{i}.bin"));
        std::fs::write(&file, &bytes).unwrap();
        let doc = format!(r#"{{"Subject":"doc{i}"}}"#);
        let unid = ok(l, &["doc", "put", DB], &doc).trim().to_string();
        ok(
            l,
            &[
                "attach",
                "put",
                DB,
                &unid,
                file.to_str().unwrap(),
                "--name",
                "n.bin",
            ],
            "",
        );
        docs.push((unid, sha(&bytes)));
    }

    // The push goes through a proxy that stops forwarding after 26 MiB:
    // the server has then answered every request that arrived whole
    // (the client sends the next only after the answer to the last), so
    // what it wrote is settled, and the request in flight holds part of
    // a document it has not written.
    let (proxy, spent) = stalling_proxy(srv.native.clone(), 26 * MIB as u64);
    let mut push = local_replicate(l, &proxy, &["--direction", "push"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    spent
        .recv_timeout(std::time::Duration::from_secs(300))
        .expect("the push reached the proxy's budget");
    let written = listed(&srv).len();
    assert!(
        (1..5).contains(&written),
        "{written} of 5 documents written before the cut"
    );
    srv.kill();
    let first = push.wait().unwrap();
    assert!(!first.success(), "the push was cut off");

    let srv = Server::start(data.path());
    assert_eq!(listed(&srv).len(), written, "what was written survived");
    let o = local_replicate(l, &srv.native, &["--direction", "push"])
        .output()
        .unwrap();
    let rerun = output_ok(o, "the rerun");
    assert_eq!(
        rerun["pulls"][0]["documents"].as_u64().unwrap(),
        (5 - written) as u64,
        "only the documents not written travel again: {rerun}"
    );
    let there = listed(&srv);
    assert_eq!(there.len(), 5, "nothing lost, nothing duplicated");
    for (unid, digest) in &docs {
        let got = srv.cli(&["attach", "get", DB, unid, "n.bin"], "");
        assert!(got.status.success(), "attach get {unid}");
        assert_eq!(&sha(&got.stdout), digest, "{unid}");
    }
}

#[test]
fn a_pushed_attachment_above_the_servers_limit_is_refused() {
    let data = common::users_dir(&[]);
    std::fs::write(
        data.path().join("folio.toml"),
        "max_attachment_size = \"1MiB\"\n",
    )
    .unwrap();
    let srv = Server::start(data.path());
    srv.admin().create_database(DB, "Small").unwrap();
    let local = tempfile::tempdir().unwrap();
    let l = local.path();
    let o = local_replicate(l, &srv.native, &["--create"])
        .output()
        .unwrap();
    output_ok(o, "replicate --create");
    // 3 MiB of text: it travels as a small zstd stream claiming 3 MiB.
    let file = l.join("words.txt");
    std::fs::write(&file, &half_compressible(6 * MIB, 3)[..3 * MIB]).unwrap();
    let unid = ok(l, &["doc", "put", DB], r#"{"Subject":"too big"}"#)
        .trim()
        .to_string();
    ok(l, &["attach", "put", DB, &unid, file.to_str().unwrap()], "");

    let o = local_replicate(l, &srv.native, &["--direction", "push"])
        .output()
        .unwrap();
    assert!(!o.status.success(), "the push is refused");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("words.txt") && err.contains(&(1u64 << 20).to_string()),
        "the error names the attachment and the limit: {err}"
    );
    assert!(listed(&srv).is_empty(), "nothing was stored");
}
