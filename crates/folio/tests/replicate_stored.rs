//! Attachments travel in their stored form between two real `folio
//! serve` processes (design.md §2.9 "Replication", I47): server A makes a
//! replica of B's database, whose store keeps a text attachment
//! compressed and a random one as is. The text crosses as B's zstd
//! stream — the replication packets are far smaller than the original,
//! before the connection compresses anything — and A stores that stream
//! as it came; the random one crosses as is; both read back identical. A
//! third server with `attachment_compression = "off"` makes a replica
//! too and stores the originals. An edit that keeps the attachments
//! sends them, either way, as references to what the other side holds.

mod common;
use client::blocking::Client;
use client::StatValue;
use common::Server;

const DB: &str = "files.fdb";

fn text(n: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let word = [
            "replica", "server", "stored", "form", "travels", "the", "of", "zstd",
        ][(x % 8) as usize];
        out.extend_from_slice(word.as_bytes());
        out.push(if x.is_multiple_of(13) { b'\n' } else { b' ' });
    }
    out.truncate(n);
    out
}

fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// `folio --server A replicate DB DB --peer B --create`'s answer.
fn create_replica(a: &Server, b: &Server) -> serde_json::Value {
    replicate(a, b, &["--create"])
}

/// `folio --server A replicate DB DB --peer B ARGS`'s answer.
fn replicate(a: &Server, b: &Server, args: &[&str]) -> serde_json::Value {
    a.replicate_with(b, DB, args)
}

fn read(c: &Client, unid: client::Unid, name: &str) -> Vec<u8> {
    let (db, _) = c.open_database(DB).unwrap();
    let mut out = Vec::new();
    c.get_attachment(db, unid, name, &mut out).unwrap();
    out
}

fn count(srv: &Server, name: &str) -> u64 {
    let stats = srv.admin().statistics().unwrap();
    match stats.into_iter().find(|s| s.name == name).map(|s| s.value) {
        Some(StatValue::Count(n)) => n,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn attachments_cross_in_their_stored_form_and_read_back_identical() {
    let (data_a, data_b, data_c) = (
        common::users_dir(&[]),
        common::users_dir(&[]),
        common::users_dir(&[]),
    );
    std::fs::write(
        data_c.path().join("folio.toml"),
        "attachment_compression = \"off\"\n",
    )
    .unwrap();
    let b = Server::start(data_b.path());
    let admin = b.admin();
    admin.create_database(DB, "Files").unwrap();
    let (db, _) = admin.open_database(DB).unwrap();
    let unid = admin
        .create_document(db, r#"{"Subject":"files"}"#)
        .unwrap()
        .unid;
    let (words, random) = (text(1 << 20), noise(96 << 10));
    for (name, bytes) in [("words.txt", &words), ("random.bin", &random)] {
        admin
            .put_attachment(db, unid, name, "x/y", Some(bytes.len() as u64), &bytes[..])
            .unwrap();
    }
    let stored_b = count(&b, "attachstore.stored_bytes");
    assert!(
        stored_b < (words.len() / 4 + random.len()) as u64,
        "B keeps the text compressed: {stored_b}"
    );
    assert!(stored_b > random.len() as u64, "and the noise as is");

    let a = Server::start(data_a.path());
    let created = create_replica(&a, &b);
    let pull = &created["pulls"][0];
    let packets = pull["bytes_uncompressed"].as_u64().unwrap();
    let originals = (words.len() + random.len()) as u64;
    // Before the connection compresses anything, the documents crossed in
    // about the bytes B stores them in, far below their original size.
    assert!(packets < stored_b + 16_384, "{packets} bytes: {created}");
    assert!(packets < originals / 4, "{packets} bytes: {created}");
    assert!(pull["bytes_on_wire"].as_u64().unwrap() < originals / 4);
    let on_a = a.admin();
    assert_eq!(read(&on_a, unid, "words.txt"), words);
    assert_eq!(read(&on_a, unid, "random.bin"), random);
    assert_eq!(
        count(&a, "attachstore.stored_bytes"),
        stored_b,
        "stored as it came"
    );
    // Both hold the same version (the digest sees the original): a
    // replication both ways finds nothing to send.
    let again = replicate(&a, &b, &["--direction", "both"]);
    let sent: u64 = again["pulls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["documents"].as_u64().unwrap())
        .sum();
    assert_eq!(sent, 0, "{again}");

    // An edit that keeps the attachments sends them as references to the
    // content the other side holds: a pull into A after an edit on B, a
    // push into B (the server's door, with its access check) after an
    // edit on A. Each crosses in a few KiB, and reads back identical.
    let (db_b, _) = admin.open_database(DB).unwrap();
    admin
        .update_document(
            db_b,
            unid,
            None,
            false,
            r#"{"Subject":"files, edited on B"}"#,
        )
        .unwrap();
    let pulled = replicate(&a, &b, &[]);
    let pull = &pulled["pulls"][0];
    assert_eq!(pull["documents"], 1, "{pulled}");
    assert_eq!(pull["attachments_skipped"], 2, "{pulled}");
    assert_eq!(pull["attachment_bytes_skipped"], originals, "{pulled}");
    assert!(pull["bytes_on_wire"].as_u64().unwrap() < 8_192, "{pulled}");
    assert_eq!(read(&on_a, unid, "words.txt"), words);
    assert_eq!(read(&on_a, unid, "random.bin"), random);
    let (db_a, _) = on_a.open_database(DB).unwrap();
    on_a.update_document(
        db_a,
        unid,
        None,
        false,
        r#"{"Subject":"files, edited on A"}"#,
    )
    .unwrap();
    let pushed = replicate(&a, &b, &["--direction", "push"]);
    let push = &pushed["pulls"][0];
    assert_eq!(push["documents"], 1, "{pushed}");
    assert_eq!(push["attachments_skipped"], 2, "{pushed}");
    assert!(push["bytes_on_wire"].as_u64().unwrap() < 8_192, "{pushed}");
    assert_eq!(read(&admin, unid, "words.txt"), words);
    assert_eq!(read(&admin, unid, "random.bin"), random);

    // A target that stores as is decompresses what it is sent.
    let c = Server::start(data_c.path());
    create_replica(&c, &b);
    let on_c = c.admin();
    assert_eq!(read(&on_c, unid, "words.txt"), words);
    assert_eq!(read(&on_c, unid, "random.bin"), random);
    assert_eq!(count(&c, "attachstore.stored_bytes"), originals);
    assert_eq!(count(&c, "attachstore.original_bytes"), originals);
}
