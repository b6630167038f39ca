//! The mail router against kill -9: a seeded stream of messages is sent
//! over HTTP (`POST /mail/send`) to the real `folio serve` while the
//! router delivers them; the server is killed with SIGKILL at a seeded
//! moment, restarted, and after each restart every accepted message (a
//! 201 answer) must reach every recipient's Inbox exactly once, and no
//! message may be in any Inbox twice.

mod common;
use common::{users_dir, Server, ADMIN_PW};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PEOPLE: [&str; 4] = ["ann", "ben", "cal", "dot"];

fn basic(user: &str, pw: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    )
}

/// Accepted messages: subject → recipients.
type Accepted = Arc<Mutex<BTreeMap<String, Vec<&'static str>>>>;

/// Sends messages until the server stops answering; records each 201.
fn sender(http: String, round: u64, accepted: Accepted) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(round);
    for i in 0.. {
        let from = PEOPLE[rng.gen_range(0..PEOPLE.len())];
        let mut to: Vec<&'static str> = PEOPLE
            .iter()
            .copied()
            .filter(|_| rng.gen_bool(0.5))
            .collect();
        if to.is_empty() {
            to.push(PEOPLE[rng.gen_range(0..PEOPLE.len())]);
        }
        let subject = format!("r{round}-m{i}");
        let body = serde_json::json!({"to": to.join(", "), "subject": subject, "body": "x"});
        let r = ureq::post(&format!("{http}/mail/send"))
            .set("Authorization", &basic(from, &format!("{from}-password")))
            .send_json(body);
        match r {
            Ok(resp) if resp.status() == 201 => {
                accepted.lock().unwrap().insert(subject, to);
            }
            Ok(resp) => panic!("send answered {}", resp.status()),
            Err(ureq::Error::Status(code, resp)) => {
                panic!(
                    "send answered {code}: {}",
                    resp.into_string().unwrap_or_default()
                )
            }
            Err(_) => return, // the server is gone
        }
    }
}

/// The subjects in `person`'s Inbox, with how often each is there.
fn inbox(http: &str, person: &str) -> BTreeMap<String, usize> {
    let url = format!("{http}/db/mail%2F{person}.fdb/folders/Inbox?count=10000");
    let v: serde_json::Value = match ureq::get(&url)
        .set("Authorization", &basic("admin", ADMIN_PW))
        .call()
    {
        Ok(r) => r.into_json().unwrap(),
        Err(ureq::Error::Status(code, r)) => {
            let docs = ureq::get(&format!("{http}/db/mail%2F{person}.fdb/docs?limit=10000"))
                .set("Authorization", &basic("admin", ADMIN_PW))
                .call()
                .map(|r| r.status());
            let all = ureq::get(&format!(
                "{http}/db/mail%2F{person}.fdb/views/All%20Documents"
            ))
            .set("Authorization", &basic("admin", ADMIN_PW))
            .call()
            .map(|r| r.status());
            panic!(
                "reading {person}'s Inbox: {code} {} docs {docs:?} all {all:?}",
                r.into_string().unwrap_or_default()
            )
        }
        Err(e) => panic!("reading {person}'s Inbox: {e}"),
    };
    let mut out = BTreeMap::new();
    for row in v["rows"].as_array().unwrap() {
        let s = row["columns"]["Subject"].as_str().unwrap().to_string();
        *out.entry(s).or_insert(0) += 1;
    }
    out
}

/// Waits (bounded) until every accepted message is delivered, then holds
/// the Inboxes to the accepted list: each exactly once, nothing twice.
fn check(http: &str, accepted: &BTreeMap<String, Vec<&'static str>>) {
    let want = |p: &str| accepted.values().filter(|to| to.contains(&p)).count();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let all = PEOPLE.iter().all(|p| {
            let got = inbox(http, p);
            accepted
                .iter()
                .filter(|(_, to)| to.contains(p))
                .all(|(s, _)| got.contains_key(s))
        });
        if all {
            break;
        }
        if Instant::now() >= deadline {
            let stats: serde_json::Value = ureq::get(&format!("{http}/stats"))
                .set("Authorization", &basic("admin", ADMIN_PW))
                .call()
                .unwrap()
                .into_json()
                .unwrap();
            let router: Vec<String> = stats
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| k.contains("router"))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let missing: Vec<String> = PEOPLE
                .iter()
                .flat_map(|p| {
                    let got = inbox(http, p);
                    accepted
                        .iter()
                        .filter(|(s, to)| to.contains(p) && !got.contains_key(*s))
                        .map(|(s, _)| format!("{p}:{s}"))
                        .collect::<Vec<_>>()
                })
                .collect();
            panic!("accepted mail not delivered in 2 minutes: {missing:?}; {router:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for p in PEOPLE {
        let got = inbox(http, p);
        for (s, n) in &got {
            assert_eq!(*n, 1, "{s} is in {p}'s Inbox {n} times");
        }
        for (s, to) in accepted {
            if to.contains(&p) {
                assert_eq!(got.get(s), Some(&1), "{s} in {p}'s Inbox");
            }
        }
        assert!(got.len() >= want(p));
    }
}

fn make_people(data: &Path) {
    for p in PEOPLE {
        let out = common::folio(data, &["mail", "create-user", p, "--server-user", p], "");
        assert!(out.status.success(), "{out:?}");
    }
}

#[test]
fn every_accepted_message_reaches_every_recipient_once_across_kill_9() {
    let data = users_dir(&PEOPLE);
    make_people(data.path());
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let accepted: Accepted = Arc::default();
    let rounds = std::env::var("FOLIO_ROUTER_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5u64);
    for round in 0..rounds {
        let srv = Server::start(data.path());
        let http = format!("http://{}", srv.http);
        check(&http, &accepted.lock().unwrap().clone());
        let sending = {
            let (http, accepted) = (http.clone(), accepted.clone());
            std::thread::spawn(move || sender(http, round, accepted))
        };
        std::thread::sleep(Duration::from_millis(rng.gen_range(200..800)));
        srv.kill();
        sending.join().unwrap();
    }
    let srv = Server::start(data.path());
    let http = format!("http://{}", srv.http);
    let accepted = accepted.lock().unwrap().clone();
    assert!(
        accepted.len() >= rounds as usize,
        "{} accepted",
        accepted.len()
    );
    check(&http, &accepted);
    let stats: serde_json::Value = ureq::get(&format!("{http}/stats"))
        .set("Authorization", &basic("admin", ADMIN_PW))
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(stats["task.router.state"], "running", "{stats}");
    assert!(stats["router.delivered"].as_u64().is_some(), "{stats}");
    srv.stop();
}

#[test]
fn send_is_refused_for_strangers_and_bad_input_and_deposits_nothing() {
    let data = users_dir(&["ann", "eve"]);
    let out = common::folio(
        data.path(),
        &["mail", "create-user", "ann", "--server-user", "ann"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let srv = Server::start(data.path());
    let http = format!("http://{}", srv.http);
    let post = |auth: Option<(&str, &str)>, body: serde_json::Value| {
        let mut r = ureq::post(&format!("{http}/mail/send"));
        if let Some((u, p)) = auth {
            r = r.set("Authorization", &basic(u, p));
        }
        match r.send_json(body) {
            Ok(resp) => (resp.status(), resp.into_string().unwrap()),
            Err(ureq::Error::Status(code, resp)) => (code, resp.into_string().unwrap()),
            Err(e) => panic!("{e}"),
        }
    };
    let ann = Some(("ann", "ann-password"));
    let msg = serde_json::json!({"to": "ann", "subject": "s", "body": "b"});
    assert_eq!(post(None, msg.clone()).0, 401);
    let (code, text) = post(Some(("eve", "eve-password")), msg.clone());
    assert_eq!(code, 403, "{text}");
    assert!(text.contains("directory"), "{text}");
    let (code, text) = post(ann, serde_json::json!({"to": "a<b", "subject": "s"}));
    assert_eq!(code, 400, "{text}");
    let (code, text) = post(ann, serde_json::json!({"to": "ann", "from": "eve"}));
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("from"), "{text}");
    let (code, text) = post(ann, serde_json::json!({"subject": "nobody"}));
    assert_eq!(code, 400, "{text}");
    // Nothing of those was deposited: only the good one arrives.
    let (code, text) = post(ann, msg);
    assert_eq!(code, 201, "{text}");
    let sent = common::json(&text);
    assert!(
        sent["message_id"].as_str().unwrap().ends_with("@folio>"),
        "{sent}"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while inbox(&http, "ann").is_empty() {
        assert!(Instant::now() < deadline, "not delivered in a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(inbox(&http, "ann"), BTreeMap::from([("s".to_string(), 1)]));
    srv.stop();
}
