//! Meetings over HTTP against the real `folio serve`, its router
//! delivering: a chair invites two people, one accepts and one declines,
//! the chair's entry shows both answers; a reschedule reaches the
//! accepter's calendar and a cancel removes it; strangers and bad input
//! are refused.

mod common;
use common::{users_dir, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn basic(user: &str) -> String {
    use base64::Engine;
    let creds = format!("{user}:{user}-password");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(creds)
    )
}

/// The status and body of a request as `user` (None: anonymous).
fn call(
    http: &str,
    method: &str,
    path: &str,
    user: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = ureq::request(method, &format!("{http}{path}"));
    if let Some(u) = user {
        r = r.set("Authorization", &basic(u));
    }
    let answer = match body {
        Some(b) => r.send_json(b),
        None => r.call(),
    };
    let (code, text) = match answer {
        Ok(resp) => (resp.status(), resp.into_string().unwrap()),
        Err(ureq::Error::Status(code, resp)) => (code, resp.into_string().unwrap()),
        Err(e) => panic!("{e}"),
    };
    (
        code,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Waits (the router works in the background) until `done` holds.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_meeting_over_http_from_invitation_to_cancel() {
    let data = users_dir(&["ann", "ben", "cal", "eve"]);
    for u in ["ann", "ben", "cal"] {
        let out = common::folio(
            data.path(),
            &["mail", "create-user", u, "--server-user", u],
            "",
        );
        assert!(out.status.success(), "{out:?}");
    }
    let srv = Server::start(data.path());
    let http = format!("http://{}", srv.http);
    let h = http.as_str();
    let meeting = json!({
        "subject": "Plan", "body": "Next quarter.", "location": "Room 1",
        "start": "2030-03-01T10:00:00Z", "end": "2030-03-01T11:00:00Z",
        "invitees": ["ben", "cal"],
    });
    // Refused: anonymous, no person, ends before it starts, unknown invitee.
    assert_eq!(
        call(h, "POST", "/mail/meetings", None, Some(meeting.clone())).0,
        401
    );
    assert_eq!(
        call(
            h,
            "POST",
            "/mail/meetings",
            Some("eve"),
            Some(meeting.clone())
        )
        .0,
        403
    );
    let mut early = meeting.clone();
    early["end"] = json!("2030-03-01T09:00:00Z");
    let (code, text) = call(h, "POST", "/mail/meetings", Some("ann"), Some(early));
    assert_eq!(code, 400, "{text}");
    let mut stranger = meeting.clone();
    stranger["invitees"] = json!("ben, nobody");
    assert_eq!(
        call(h, "POST", "/mail/meetings", Some("ann"), Some(stranger)).0,
        404
    );

    let (code, made) = call(h, "POST", "/mail/meetings", Some("ann"), Some(meeting));
    assert_eq!(code, 201, "{made}");
    let id = made["apptunid"].as_str().unwrap().to_string();
    let at = |what: &str| format!("/mail/meetings/{id}{what}");
    // Eve was not invited; Ben and Cal answer once their invitation is in.
    let accept = json!({"response": "accept"});
    assert_eq!(
        call(
            h,
            "POST",
            &at("/respond"),
            Some("eve"),
            Some(accept.clone())
        )
        .0,
        403
    );
    let (code, text) = call(
        h,
        "POST",
        &at("/respond"),
        Some("ben"),
        Some(json!({"response": "maybe"})),
    );
    assert_eq!(code, 400, "{text}");
    until("Ben's invitation", || {
        call(
            h,
            "POST",
            &at("/respond"),
            Some("ben"),
            Some(accept.clone()),
        )
        .0 == 200
    });
    until("Cal's invitation", || {
        let decline = json!({"response": "decline"});
        call(h, "POST", &at("/respond"), Some("cal"), Some(decline)).0 == 200
    });
    until("the answers at the chair", || {
        let (_, m) = call(h, "GET", &at(""), Some("ann"), None);
        m["attendees"]
            == json!([{"name": "ben", "status": "accepted"}, {"name": "cal", "status": "declined"}])
    });
    let (code, mine) = call(h, "GET", &at(""), Some("ben"), None);
    assert_eq!(code, 200, "{mine}");
    assert_eq!(mine["start"], "2030-03-01T10:00:00.000000Z");
    assert_eq!(
        call(h, "GET", &at(""), Some("cal"), None).0,
        404,
        "declined: not in Cal's calendar"
    );

    // Only the chair moves or cancels it.
    let later = json!({"start": "2030-03-02T10:00:00Z", "end": "2030-03-02T11:00:00Z"});
    assert_eq!(
        call(
            h,
            "POST",
            &at("/reschedule"),
            Some("ben"),
            Some(later.clone())
        )
        .0,
        404
    );
    let (code, text) = call(h, "POST", &at("/reschedule"), Some("ann"), Some(later));
    assert_eq!(code, 200, "{text}");
    until("the new time in Ben's calendar", || {
        call(h, "GET", &at(""), Some("ben"), None).1["start"] == "2030-03-02T10:00:00.000000Z"
    });
    let (code, text) = call(h, "POST", &at("/cancel"), Some("ann"), None);
    assert_eq!(code, 200, "{text}");
    assert_eq!(call(h, "GET", &at(""), Some("ann"), None).0, 404);
    until("the cancel in Ben's calendar", || {
        call(h, "GET", &at(""), Some("ben"), None).0 == 404
    });
    let (code, text) = call(h, "POST", &at("/respond"), Some("cal"), Some(accept));
    assert_eq!(code, 409, "{text}");
    srv.stop();
}
