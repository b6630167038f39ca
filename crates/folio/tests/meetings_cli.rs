//! `folio mail meeting …` embedded and over `--server` (the native
//! `Meeting` request) against the real binary, its router delivering:
//! a meeting made embedded is answered, shown, moved and cancelled over
//! the network, and both ways print the same; bad input is refused
//! before anything is written; only an administrator acts for others.

mod common;
use common::{fails, json, ok, users_dir, Server};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the CLI against `server` as `user` (password `<user>-password`).
fn cli_as(server: &Server, user: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["--server", &server.native, "--user", user])
        .args(args)
        .env("FOLIO_PASSWORD", format!("{user}-password"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Waits (the router works in the background) until `done` holds.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stdout(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    json(&String::from_utf8_lossy(&o.stdout))
}

/// The number of documents in the chair's mail file's Calendar view.
fn calendar_rows(data: &Path, who: &str) -> usize {
    let file = format!("mail/{who}.fdb");
    ok(data, &["view", "read", &file, "Calendar"], "")
        .lines()
        .count()
}

#[test]
fn meetings_from_the_command_line_embedded_and_over_the_server() {
    let tmp = users_dir(&["ben", "cal"]);
    let d = tmp.path();
    ok(d, &["mail", "create-user", "admin"], "");
    for u in ["ben", "cal"] {
        ok(d, &["mail", "create-user", u, "--server-user", u], "");
    }
    let create = |from: &[&str], extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["mail", "meeting"].iter().map(|s| s.to_string()).collect();
        a.extend(from.iter().map(|s| s.to_string()));
        a.extend(
            [
                "create",
                "--subject",
                "Plan",
                "--invite",
                "ben,cal",
                "--location",
                "Room 1",
                "--start",
                "2030-03-01T10:00:00Z",
                "--end",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };

    // Refused, writing nothing: no --from embedded, a bad time, an end
    // before the start, an invitee nobody is.
    let a = create(&[], &["2030-03-01T11:00:00Z"]);
    fails(d, &strs(&a), "", "needs --from NAME");
    let a = create(&["--from", "admin"], &["tomorrow"]);
    fails(d, &strs(&a), "", "not an RFC 3339 time");
    let a = create(&["--from", "admin"], &["2030-03-01T09:00:00Z"]);
    fails(d, &strs(&a), "", "");
    fails(
        d,
        &[
            "mail",
            "meeting",
            "--from",
            "admin",
            "create",
            "--invite",
            "nobody",
            "--start",
            "2030-03-01T10:00:00Z",
            "--end",
            "2030-03-01T11:00:00Z",
        ],
        "",
        "nobody",
    );
    assert_eq!(calendar_rows(d, "admin"), 0, "nothing was written");

    // Made embedded: the chair's entry, every invitee needing action.
    let a = create(&["--from", "admin"], &["2030-03-01T11:00:00Z"]);
    let made = json(&ok(d, &strs(&a), "Agenda."));
    let appt = made["apptunid"].as_str().unwrap().to_string();
    assert!(made["message_id"].as_str().unwrap().ends_with("@folio>"));
    let shown = json(&ok(
        d,
        &["mail", "meeting", "--from", "admin", "show", &appt],
        "",
    ));
    assert_eq!(shown["subject"], "Plan");
    assert_eq!(shown["location"], "Room 1");
    assert_eq!(
        shown["attendees"],
        serde_json::json!([{"name": "ben", "status": "needs-action"}, {"name": "cal", "status": "needs-action"}])
    );

    // Over the server: the invitees answer once the router delivered.
    let server = Server::start(d);
    let o = server.cli(&["mail", "meeting", "--from", "ben", "show", &appt], "");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--from does not apply with --server"));
    until("Ben's invitation", || {
        cli_as(
            &server,
            "ben",
            &["mail", "meeting", "respond", &appt, "accept"],
        )
        .status
        .success()
    });
    until("Cal's invitation", || {
        cli_as(
            &server,
            "cal",
            &["mail", "meeting", "respond", &appt, "decline"],
        )
        .status
        .success()
    });
    let o = cli_as(
        &server,
        "ben",
        &["mail", "meeting", "respond", &appt, "maybe"],
    );
    assert!(!o.status.success(), "not a response");
    let mut over = serde_json::Value::Null;
    until("the answers at the chair", || {
        over = stdout(&server.cli(&["mail", "meeting", "show", &appt], ""));
        over["attendees"]
            == serde_json::json!([{"name": "ben", "status": "accepted"}, {"name": "cal", "status": "declined"}])
    });
    let bens = stdout(&cli_as(&server, "ben", &["mail", "meeting", "show", &appt]));
    assert_eq!(bens["start"], "2030-03-01T10:00:00.000000Z");

    // Only an administrator acts for another person over the network.
    let ben = server.client(Some(("ben", "ben-password"))).unwrap();
    let refused = ben.meeting(
        client::MeetingRequest::Read {
            appt: client::Unid(parse_unid(&appt)),
        },
        Some("admin"),
    );
    assert!(refused.is_err(), "{refused:?}");

    // Only the chair moves it; the new time reaches Ben's calendar.
    let later = [
        "--start",
        "2030-03-02T10:00:00Z",
        "--end",
        "2030-03-02T11:00:00Z",
    ];
    let mut a = vec!["mail", "meeting", "reschedule", &appt];
    a.extend(later);
    assert!(
        !cli_as(&server, "ben", &a).status.success(),
        "not the chair"
    );
    stdout(&server.cli(&a, ""));
    until("the new time in Ben's calendar", || {
        stdout(&cli_as(&server, "ben", &["mail", "meeting", "show", &appt]))["start"]
            == "2030-03-02T10:00:00.000000Z"
    });
    over = stdout(&server.cli(&["mail", "meeting", "show", &appt], ""));
    server.stop();

    // The same command embedded prints what the server printed.
    let embedded = json(&ok(
        d,
        &["mail", "meeting", "--from", "admin", "show", &appt],
        "",
    ));
    assert_eq!(embedded, over);

    // Cancelled: gone from the chair's calendar.
    let cancelled = json(&ok(
        d,
        &["mail", "meeting", "--from", "admin", "cancel", &appt],
        "",
    ));
    assert!(cancelled["message_id"]
        .as_str()
        .unwrap()
        .ends_with("@folio>"));
    fails(
        d,
        &["mail", "meeting", "--from", "admin", "show", &appt],
        "",
        &appt,
    );
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn parse_unid(s: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}
