//! Sending with attachments over the network (native `SendMailFiles`)
//! against the real binary: `folio mail send --attach FILE --server`
//! delivers the files with the message; a message over the size limit, an
//! upload shorter or longer than its declared files and a non-admin
//! acting for another are refused and store nothing.

mod common;
use common::{json, users_dir, Server};
use std::time::{Duration, Instant};

/// Every live document of every mail box, as the CLI lists them.
fn deposits(server: &Server) -> usize {
    let o = server.cli(&["db", "list"], "");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|p| p.ends_with(".box.fdb"))
        .map(|b| {
            let o = server.cli(&["doc", "list", b], "");
            String::from_utf8_lossy(&o.stdout).lines().count()
        })
        .sum()
}

fn file(name: &str) -> client::MailFile {
    client::MailFile {
        name: name.into(),
        mime: "application/octet-stream".into(),
        size: 4,
    }
}

#[test]
fn attachments_over_the_server() {
    let tmp = users_dir(&["eve"]);
    std::fs::write(
        tmp.path().join("folio.toml"),
        "[mail]\nmax_message_size = \"64KiB\"\n",
    )
    .unwrap();
    let server = Server::start(tmp.path());
    for u in ["admin", "bob"] {
        assert!(server.cli(&["mail", "create-user", u], "").status.success());
    }
    let files = tempfile::tempdir().unwrap();
    let a = files.path().join("notes.txt");
    let b = files.path().join("data.bin");
    std::fs::write(&a, b"some notes\n").unwrap();
    let random: Vec<u8> = (0..40_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&b, &random).unwrap();

    // Too large (the files' declared sizes with the body): refused, and
    // nothing is stored.
    let big = files.path().join("big.bin");
    std::fs::write(&big, vec![7u8; 70 << 10]).unwrap();
    let o = server.cli(
        &[
            "mail",
            "send",
            "--to",
            "bob",
            "--attach",
            big.to_str().unwrap(),
        ],
        "hi",
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("limit"), "{err}");
    assert_eq!(deposits(&server), 0);

    // Sent with two files; bob's copy carries both, byte for byte.
    let o = server.cli(
        &[
            "mail",
            "send",
            "--to",
            "bob",
            "--subject",
            "files",
            "--attach",
            a.to_str().unwrap(),
            "--attach",
            b.to_str().unwrap(),
        ],
        "see attached",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sent = json(&String::from_utf8_lossy(&o.stdout));
    assert!(sent["mail_box"].as_str().unwrap().ends_with(".box.fdb"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let unid = loop {
        let o = server.cli(&["view", "read", "mail/bob.fdb", "Inbox"], "");
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        if let Some(line) = out.lines().next() {
            break json(line)["unid"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "not delivered within a minute");
        std::thread::sleep(Duration::from_millis(100));
    };
    for (name, content) in [
        ("notes.txt", &b"some notes\n"[..]),
        ("data.bin", &random[..]),
    ] {
        let o = server.cli(&["attach", "get", "mail/bob.fdb", &unid, name], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.stdout, content, "{name}");
    }
    let stored = deposits(&server);

    // The library: an upload shorter or longer than its files declare is
    // refused and leaves nothing; so is acting for another if not admin.
    let admin = server.admin();
    let memo = r#"{"Form": "Memo", "Subject": "s", "Body": "b", "SendTo": ["bob"], "MessageID": "<f1@test>"}"#;
    for content in [&b"abc"[..], &b"abcdefghi"[..], &b"abcde"[..]] {
        let e = admin
            .send_mail_files(memo, false, None, vec![file("x"), file("y")], content)
            .unwrap_err();
        assert_eq!(e.code(), Some(client::ErrorCode::BadRequest), "{e}");
    }
    let e = admin
        .send_mail_files(
            memo,
            false,
            None,
            vec![file("x"), file("X")],
            &b"abcdefgh"[..],
        )
        .unwrap_err();
    assert_eq!(e.code(), Some(client::ErrorCode::BadRequest), "{e}");
    let eve = server.client(Some(("eve", "eve-password"))).unwrap();
    let e = eve
        .send_mail_files(memo, false, Some("bob"), vec![file("x")], &b"abcd"[..])
        .unwrap_err();
    assert_eq!(e.code(), Some(client::ErrorCode::Forbidden), "{e}");
    assert_eq!(deposits(&server), stored, "nothing more stored");

    // A draft with a file lands in the sender's mail file with it.
    let d = admin
        .send_mail_files(memo, true, Some("bob"), vec![file("x")], &b"abcd"[..])
        .unwrap();
    assert!(d.draft);
    assert_eq!(d.stored_in, "mail/bob.fdb");
    let o = server.cli(
        &["attach", "get", "mail/bob.fdb", &d.unid.to_string(), "x"],
        "",
    );
    assert_eq!(o.stdout, b"abcd");

    // HTTP: a multipart form, the message as JSON and the files as parts.
    let form = |parts: &[(&str, Option<&str>, &[u8])]| {
        let mut b = Vec::new();
        for (name, file, data) in parts {
            b.extend_from_slice(b"--XY\r\nContent-Disposition: form-data; name=\"");
            b.extend_from_slice(name.as_bytes());
            b.push(b'"');
            if let Some(f) = file {
                b.extend_from_slice(
                    format!("; filename=\"{f}\"\r\nContent-Type: text/plain").as_bytes(),
                );
            }
            b.extend_from_slice(b"\r\n\r\n");
            b.extend_from_slice(data);
            b.extend_from_slice(b"\r\n");
        }
        b.extend_from_slice(b"--XY--\r\n");
        b
    };
    let post = |body: &[u8]| {
        use base64::Engine;
        let auth =
            base64::engine::general_purpose::STANDARD.encode(format!("admin:{}", common::ADMIN_PW));
        match ureq::post(&format!("http://{}/mail/send", server.http))
            .set("Authorization", &format!("Basic {auth}"))
            .set("Content-Type", "multipart/form-data; boundary=XY")
            .send_bytes(body)
        {
            Ok(r) => (r.status(), r.into_string().unwrap()),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap()),
            Err(e) => panic!("{e}"),
        }
    };
    let message = br#"{"to": "bob", "subject": "by form", "body": "two files"}"#;
    let before = deposits(&server);
    let (code, text) = post(&form(&[
        ("message", None, message),
        ("attachment", Some("big.txt"), &vec![b'x'; 70 << 10]),
    ]));
    assert_eq!(code, 413, "{text}");
    let (code, text) = post(&form(&[
        ("message", None, message),
        ("attachment", None, b"x"),
    ]));
    assert_eq!(code, 400, "{text}");
    let (code, text) = post(&form(&[("attachment", Some("a.txt"), b"x")]));
    assert_eq!(code, 400, "{text}");
    assert_eq!(deposits(&server), before, "refused forms store nothing");
    let (code, text) = post(&form(&[
        ("message", None, message),
        ("attachment", Some("one.txt"), b"first\r\nfile"),
        ("attachment", Some("two.txt"), b""),
    ]));
    assert_eq!(code, 201, "{text}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let unid = loop {
        let o = server.cli(&["view", "read", "mail/bob.fdb", "Inbox"], "");
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        if let Some(row) = out
            .lines()
            .map(json)
            .find(|r| r.to_string().contains("by form"))
        {
            break row["unid"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "not delivered within a minute");
        std::thread::sleep(Duration::from_millis(100));
    };
    for (name, content) in [("one.txt", &b"first\r\nfile"[..]), ("two.txt", &b""[..])] {
        let o = server.cli(&["attach", "get", "mail/bob.fdb", &unid, name], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.stdout, content, "{name}");
    }
    server.stop();
}
