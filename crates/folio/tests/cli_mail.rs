//! The mail commands end to end through the real binary, embedded: the
//! directory and mail files (`create-user`, `list-users`, `remove-user`),
//! sending with attachments into a mail box with every recipient pending,
//! drafts, and the refusals (taken names, bad addresses, unknown or
//! missing senders, size limits, `--server` without attachments,
//! which `mail_files.rs` covers), none of which changes
//! anything.

mod common;
use common::{fails, folio, json, ok, users_dir, Server};
use std::path::Path;

fn lines(s: &str) -> Vec<serde_json::Value> {
    s.lines().map(json).collect()
}

fn databases(d: &Path) -> Vec<String> {
    ok(d, &["db", "list"], "")
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every live document of every mail box, as JSON.
fn deposits(d: &Path) -> Vec<serde_json::Value> {
    databases(d)
        .iter()
        .filter(|p| p.ends_with(".box.fdb"))
        .flat_map(|b| lines(&ok(d, &["doc", "list", b], "")))
        .collect()
}

#[test]
fn users_mail_files_and_sending_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();

    // Two people: mail files from the template, each owned by its person.
    let alice = json(&ok(
        d,
        &[
            "mail",
            "create-user",
            "Alice Smith",
            "--alias",
            "alice@example.com",
        ],
        "",
    ));
    assert_eq!(alice["mail_file"], "mail/alice.smith.fdb");
    assert_eq!(alice["server_user"], "Alice Smith");
    ok(
        d,
        &[
            "mail",
            "create-user",
            "bob",
            "--alias",
            "bobby",
            "--alias",
            "Robert",
            "--server-user",
            "robert",
        ],
        "",
    );
    let people = lines(&ok(d, &["mail", "list-users"], ""));
    let names: Vec<&str> = people.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Alice Smith", "bob"]);
    assert_eq!(people[1]["aliases"], json(r#"["bobby","Robert"]"#));
    assert_eq!(people[1]["mail_file"], "mail/bob.fdb");
    let acl = json(&ok(d, &["acl", "show", "mail/bob.fdb"], ""));
    assert_eq!(acl["default"], "noaccess");
    assert_eq!(acl["anonymous"], "noaccess");
    let entries = acl["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (&entries[0]["name"], &entries[0]["level"]),
        (&json(r#""robert""#), &json(r#""manager""#))
    );
    let mut views: Vec<String> = ok(d, &["view", "list", "mail/bob.fdb"], "")
        .lines()
        .map(|l| json(l)["name"].as_str().unwrap().to_string())
        .collect();
    views.sort();
    assert_eq!(
        views,
        [
            "(Notices)",
            "All Documents",
            "Calendar",
            "Drafts",
            "Inbox",
            "Sent"
        ]
    );

    // Names are unique across the directory, ignoring case and spaces.
    fails(
        d,
        &["mail", "create-user", "ALICE   smith"],
        "",
        "already a name of \"Alice Smith\"",
    );
    fails(
        d,
        &["mail", "create-user", "carol", "--alias", "BOBBY"],
        "",
        "already a name of \"bob\"",
    );
    fails(
        d,
        &["mail", "create-user", "a/b"],
        "",
        "'/' is not allowed in a name",
    );
    assert_eq!(lines(&ok(d, &["mail", "list-users"], "")).len(), 2);

    // Sending: a memo with an attachment, to one person by alias and one
    // by address; the deposit holds both, pending.
    let content: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let file = d.join("report.bin");
    std::fs::write(&file, &content).unwrap();
    let sent = json(&ok(
        d,
        &[
            "mail",
            "send",
            "--from",
            "alice@example.com",
            "--to",
            "bobby",
            "--cc",
            "Alice <alice smith>",
            "--subject",
            "Quarterly report",
            "--attach",
            file.to_str().unwrap(),
        ],
        "The report is attached.\n",
    ));
    let mail_box = sent["mail_box"].as_str().unwrap();
    assert!(
        ["mail1", "mail2", "mail3", "mail4"]
            .iter()
            .any(|b| mail_box == format!("{b}.box.fdb")),
        "{mail_box}"
    );
    let unid = sent["unid"].as_str().unwrap();
    let doc = json(&ok(d, &["doc", "get", mail_box, unid], ""));
    assert_eq!(doc["Form"], "Memo");
    assert_eq!(doc["From"], "Alice Smith", "From is the sender's full name");
    assert_eq!(doc["Subject"], "Quarterly report");
    assert_eq!(doc["MessageID"], sent["message_id"]);
    assert_eq!(
        doc["Recipients"],
        json(r#"["bobby","Alice <alice smith>"]"#)
    );
    assert_eq!(doc["DeliveryState"], json(r#"["pending","pending"]"#));
    assert_eq!(doc["DeliveryAttempts"], json("[0.0,0.0]"));
    assert_eq!(doc["Deposited"], doc["PostedDate"]);
    assert_eq!(doc["$FILE:report.bin"]["size"], 100_000);
    let o = folio(d, &["attach", "get", mail_box, unid, "report.bin"], "");
    assert!(o.status.success());
    assert_eq!(o.stdout, content);
    assert_eq!(deposits(d).len(), 1);

    // Refused sends change nothing.
    let before = databases(d);
    fails(
        d,
        &["mail", "send", "--from", "bob", "--to", "carol; dan"],
        "",
        "bad address \"carol; dan\"",
    );
    fails(
        d,
        &["mail", "send", "--from", "nobody", "--to", "bob"],
        "",
        "no person named \"nobody\"",
    );
    fails(
        d,
        &["mail", "send", "--to", "bob"],
        "",
        "mail send needs --from",
    );
    fails(
        d,
        &["mail", "send", "--from", "bob", "--subject", "x"],
        "",
        "at least one recipient",
    );
    let small = d.join("small.toml");
    std::fs::write(&small, "[mail]\nmax_message_size = \"64KiB\"\n").unwrap();
    fails(
        d,
        &[
            "--config",
            small.to_str().unwrap(),
            "mail",
            "send",
            "--from",
            "bob",
            "--to",
            "alice@example.com",
            "--attach",
            file.to_str().unwrap(),
        ],
        "hi",
        "the limit is 65536",
    );
    assert_eq!(databases(d), before);
    assert_eq!(deposits(d).len(), 1);

    // A draft goes to the sender's own Drafts, not to a mail box.
    let draft = json(&ok(
        d,
        &[
            "mail",
            "send",
            "--draft",
            "--from",
            "Robert",
            "--subject",
            "Later",
        ],
        "not yet",
    ));
    assert_eq!(draft["mail_file"], "mail/bob.fdb");
    let rows = lines(&ok(d, &["view", "read", "mail/bob.fdb", "Drafts"], ""));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["unid"], draft["draft"]);
    assert_eq!(rows[0]["columns"]["Subject"], "Later");
    assert_eq!(deposits(d).len(), 1);

    // Removing a person keeps their mail file unless asked.
    let removed = json(&ok(d, &["mail", "remove-user", "BOB"], ""));
    assert_eq!(
        removed,
        json(r#"{"file":"kept","mail_file":"mail/bob.fdb","removed":"bob"}"#)
    );
    assert!(databases(d).contains(&"mail/bob.fdb".to_string()));
    assert_eq!(
        ok(d, &["doc", "list", "mail/bob.fdb"], "").lines().count(),
        1,
        "the draft is still there"
    );
    fails(
        d,
        &["mail", "create-user", "bob"],
        "",
        "mail/bob.fdb already exists",
    );
    fails(
        d,
        &["mail", "remove-user", "bobby"],
        "",
        "no person named \"bobby\"",
    );
    let removed = json(&ok(
        d,
        &["mail", "remove-user", "alice smith", "--delete-file"],
        "",
    ));
    assert_eq!(removed["file"], "deleted");
    assert!(!d.join("mail/alice.smith.fdb").exists());
    assert!(!databases(d).contains(&"mail/alice.smith.fdb".to_string()));
    assert!(ok(d, &["mail", "list-users"], "").is_empty());
    // The name is free again, and so is the path of the deleted file.
    ok(d, &["mail", "create-user", "Alice Smith"], "");
}

#[test]
fn one_mail_box_is_mail_box() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("folio.toml"), "[mail]\nboxes = 1\n").unwrap();
    ok(d, &["mail", "create-user", "ann"], "");
    let sent = json(&ok(
        d,
        &["mail", "send", "--from", "ann", "--to", "ann"],
        "to self",
    ));
    assert_eq!(sent["mail_box"], "mail.box.fdb");
    std::fs::write(d.join("folio.toml"), "[mail]\nboxes = 0\n").unwrap();
    fails(d, &["mail", "list-users"], "", "mail.boxes");
}

#[test]
fn mail_send_over_the_server() {
    let tmp = users_dir(&["eve"]);
    let server = Server::start(tmp.path());
    // The signed-in user must be a person in the directory.
    let o = server.cli(&["mail", "send", "--to", "x"], "hi");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is no person in the directory"), "{err}");
    assert!(server
        .cli(&["mail", "create-user", "admin"], "")
        .status
        .success());
    assert!(server
        .cli(&["mail", "create-user", "bob"], "")
        .status
        .success());

    // A memo goes into a mail box; the router delivers it to bob's Inbox.
    let o = server.cli(
        &["mail", "send", "--to", "bob", "--subject", "over"],
        "the wire",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sent = json(&String::from_utf8_lossy(&o.stdout));
    assert!(sent["mail_box"].as_str().unwrap().ends_with(".box.fdb"));
    assert!(sent["message_id"].as_str().unwrap().ends_with("@folio>"));
    let inbox = wait_for_inbox(&server, "mail/bob.fdb", 1);
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    assert!(inbox[0].to_string().contains("over"), "{inbox:?}");

    // A draft lands in the sender's own mail file.
    let o = server.cli(&["mail", "send", "--draft", "--subject", "later"], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let draft = json(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(draft["mail_file"], "mail/admin.fdb");
    let o = server.cli(
        &[
            "doc",
            "get",
            "mail/admin.fdb",
            draft["draft"].as_str().unwrap(),
        ],
        "",
    );
    assert_eq!(
        json(&String::from_utf8_lossy(&o.stdout))["Subject"],
        "later"
    );

    // --from is refused over --server (attachments: mail_files.rs).
    let o = server.cli(&["mail", "send", "--from", "admin", "--to", "x"], "");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--from does not apply with --server"), "{err}");

    // The library: an administrator may send as another person, any form;
    // anyone else may not, and a malformed message is refused.
    let admin = server.admin();
    let appt = r#"{"Form": "Appointment", "Subject": "standup", "Body": "",
        "MessageID": "<a1@test>", "SendTo": ["admin"],
        "ApptUNID": "0123456789abcdef0123456789abcdef",
        "StartDateTime": {"$type": "datetime", "v": "2030-01-01T10:00:00Z"},
        "EndDateTime": {"$type": "datetime", "v": "2030-01-01T10:30:00Z"}}"#;
    let s = admin.send_mail(appt, false, Some("bob")).unwrap();
    assert_eq!(s.message_id, "<a1@test>");
    assert!(!s.draft);
    let eve = server.client(Some(("eve", "eve-password"))).unwrap();
    let e = eve.send_mail(appt, false, Some("bob")).unwrap_err();
    assert_eq!(e.code(), Some(client::ErrorCode::Forbidden), "{e}");
    let e = admin
        .send_mail(r#"{"Form": "Memo"}"#, false, None)
        .unwrap_err();
    assert_eq!(e.code(), Some(client::ErrorCode::BadRequest), "{e}");
    let e = admin.send_mail("not json", false, None).unwrap_err();
    assert_eq!(e.code(), Some(client::ErrorCode::BadRequest), "{e}");
    let inbox = wait_for_inbox(&server, "mail/admin.fdb", 1);
    assert!(inbox[0].to_string().contains("standup"), "{inbox:?}");
    server.stop();
}

/// The Inbox rows of `file` once it holds `n` (the router runs apart).
fn wait_for_inbox(server: &Server, file: &str, n: usize) -> Vec<serde_json::Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let o = server.cli(&["view", "read", file, "Inbox"], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rows = lines(&String::from_utf8_lossy(&o.stdout));
        if rows.len() >= n || std::time::Instant::now() > deadline {
            return rows;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
