//! Outbound delivery against the real `folio serve`, with the outside
//! world played by `aiosmtpd` (PyPI, installed by
//! scripts/install-mail-clients.sh) and mail submitted by Python's
//! `smtplib`: messages for other domains reach the sink once each, a
//! temporary refusal is retried, a permanent one comes back to the
//! sender as an RFC 3464 report in their mail file, and kill -9 of the
//! server during delivery sends nothing twice outside the one window
//! design.md I58 names (the peer's 250 to the final dot, before the
//! server's record of it is durable).

mod common;
use common::{json, ok, users_dir, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The sink: an aiosmtpd server on an ephemeral loopback port (printed
/// first). Every event goes to the log file as a JSON line, fsynced.
/// Recipients at `bad.example` are refused (550 5.1.1), at
/// `later.example` always put off (451 4.3.0 at RCPT); a message for
/// `slow.example` is refused once (451) and then taken. Until the
/// `armed` file exists every MAIL gets 451 (logged `refused`). Each
/// connection is numbered at its first MAIL, and every kept message
/// says on which it came. `plan` kills the server
/// (pid in the pid file): at the n-th MAIL (`kill_mail`), or at the
/// n-th DATA (`kill_data`): `pre` before the sink keeps the message,
/// `post` after it kept it but before its 250 (the peer has it, the
/// server never hears so), `after` right after the 250.
const SINK: &str = r#"
import asyncio, email, json, os, signal, sys
from aiosmtpd.smtp import SMTP
log_path, pid_path, armed_path, plan = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
state = {"datas": 0, "mails": 0, "tempfailed": set(), "conns": 0}
def note(record):
    with open(log_path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())
def kill():
    try:
        os.kill(int(open(pid_path).read()), signal.SIGKILL)
    except (OSError, ValueError):
        pass
class Handler:
    async def handle_MAIL(self, server, session, envelope, address, options):
        if not os.path.exists(armed_path):
            note({"event": "refused"})
            return "451 4.3.2 sink not ready"
        if not hasattr(session, "conn_no"):
            state["conns"] += 1
            session.conn_no = state["conns"]
        state["mails"] += 1
        if plan.get("kill_mail") == state["mails"]:
            note({"event": "kill", "at": "mail"})
            kill()
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"
    async def handle_RCPT(self, server, session, envelope, address, options):
        if address.rsplit("@", 1)[-1].lower() == "bad.example":
            return "550 5.1.1 <%s>: no such user here" % address
        if address.rsplit("@", 1)[-1].lower() == "later.example":
            note({"event": "later"})
            return "451 4.3.0 <%s>: mailbox busy, try later" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"
    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.original_content)
        mid = msg.get("Message-ID", "")
        domains = {a.rsplit("@", 1)[-1].lower() for a in envelope.rcpt_tos}
        if "slow.example" in domains and mid not in state["tempfailed"]:
            state["tempfailed"].add(mid)
            note({"event": "tempfail", "id": mid})
            return "451 4.3.0 try again later"
        state["datas"] += 1
        how = plan.get("kill_data", {}).get(str(state["datas"]))
        if how == "pre":
            note({"event": "kill", "at": "pre", "id": mid})
            kill()
            return "451 4.3.0 not kept"
        note({"event": "accepted", "id": mid, "from": envelope.mail_from,
              "conn": session.conn_no, "subject": msg.get("Subject", ""),
              "to": envelope.rcpt_tos, "data": envelope.original_content.decode("utf-8", "replace")})
        if how == "post":
            note({"event": "kill", "at": "post", "id": mid})
            kill()
        elif how == "after":
            note({"event": "kill", "at": "after", "id": mid})
            asyncio.get_running_loop().call_soon(kill)
        return "250 2.0.0 OK"
async def main():
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: SMTP(Handler(), hostname="sink.example"), "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"#;

/// A running sink and its files.
struct Sink {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Sink {
    fn start(plan: &str, armed: bool) -> Sink {
        common::mail_clients();
        let dir = tempfile::tempdir().unwrap();
        if armed {
            std::fs::write(dir.path().join("armed"), "").unwrap();
        }
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(SINK)
            .arg(dir.path().join("log"))
            .arg(dir.path().join("pid"))
            .arg(dir.path().join("armed"))
            .arg(plan)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the sink prints its port");
        Sink { child, port, dir }
    }

    fn arm(&self) {
        std::fs::write(self.dir.path().join("armed"), "").unwrap();
    }

    /// Tells the sink which process to kill.
    fn target(&self, pid: u32) {
        std::fs::write(self.dir.path().join("pid"), pid.to_string()).unwrap();
    }

    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("log"))
            .unwrap_or_default()
            .lines()
            .map(json)
            .collect()
    }

    /// The Message-IDs the sink kept, once per time it kept one.
    fn accepted(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter(|e| e["event"] == "accepted")
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Alice (server user `alice`, alias `alice@example.com`) and bob, both
/// at example.com, the server's domain; `routes` to the sink.
fn mail_dir(sink: &Sink, domains: &[&str], extra: &str) -> tempfile::TempDir {
    let tmp = users_dir(&["alice", "bob"]);
    let d = tmp.path();
    let alice = [
        "mail",
        "create-user",
        "Alice Smith",
        "--alias",
        "alice@example.com",
        "--server-user",
        "alice",
    ];
    ok(d, &alice, "");
    ok(
        d,
        &["mail", "create-user", "bob", "--alias", "bob@example.com"],
        "",
    );
    let mut settings = format!(
        "submission_listen = \"127.0.0.1:0\"\nimap_listen = \"127.0.0.1:0\"\n\
         shutdown_grace_secs = 2\n{extra}\n[mail]\nboxes = 2\ndomains = [\"example.com\"]\n\
         outbound_first_retry_secs = 0.5\n"
    );
    for domain in domains {
        settings.push_str(&format!(
            "[[mail.route]]\ndomain = \"{domain}\"\nhost = \"127.0.0.1:{}\"\n",
            sink.port
        ));
    }
    std::fs::write(d.join("folio.toml"), settings).unwrap();
    tmp
}

const SUBMIT: &str = r#"
import json, smtplib, sys
from email.message import EmailMessage
host, port = sys.argv[1].rsplit(":", 1)
messages = json.loads(sys.argv[2])
out = []
with smtplib.SMTP(host, int(port)) as s:
    s.login("alice", "alice-password")
    for m in messages:
        e = EmailMessage()
        e["From"] = "Alice Smith <alice@example.com>"
        e["To"] = ", ".join(m["to"])
        e["Subject"] = m["subject"]
        e["Message-ID"] = m["id"]
        e.set_content(m["body"])
        try:
            out.append(s.send_message(e, from_addr="alice@example.com", to_addrs=m["to"]))
        except smtplib.SMTPRecipientsRefused as r:
            out.append({k: [c, t.decode()] for k, (c, t) in r.recipients.items()})
print(json.dumps(out))
"#;

fn submit(server: &Server, messages: &Value) -> Value {
    let submission = server.submission.clone().unwrap();
    common::python(SUBMIT, &[&submission, &messages.to_string()])
}

/// Waits (at most `limit`) for `done` to hold of the sink.
fn wait_for(sink: &Sink, limit: Duration, done: impl Fn(&Sink) -> bool) {
    let deadline = Instant::now() + limit;
    while !done(sink) {
        assert!(
            Instant::now() < deadline,
            "the sink did not see what was expected: {:#?}",
            sink.events()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `show stats` of `server` (a JSON object).
fn stats(server: &Server) -> Value {
    let out = server.cli(&["show", "stats"], "");
    assert!(out.status.success(), "{out:?}");
    json(&String::from_utf8_lossy(&out.stdout))
}

/// `show stats` once `done` holds of it (at most 30 s: the figures
/// follow the records by a moment).
fn stats_once(server: &Server, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = stats(server);
        if done(&s) || Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn submitted_mail_goes_out_once_retries_and_bounces() {
    let sink = Sink::start("{}", true);
    let tmp = mail_dir(&sink, &["ok.example", "slow.example", "bad.example"], "");
    let d = tmp.path();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();

    let sent = submit(
        &server,
        &json(
            r#"[
        {"id": "<one@laptop>", "subject": "One", "body": "To Carl and Bob.\n",
         "to": ["carl@ok.example", "bob@example.com"]},
        {"id": "<two@laptop>", "subject": "Two", "body": "Slowly.\n", "to": ["dave@slow.example"]},
        {"id": "<three@laptop>", "subject": "Three", "body": "Nobody.\n",
         "to": ["nobody@bad.example", "erin@ok.example"]},
        {"id": "<four@laptop>", "subject": "Four", "body": "No route.\n",
         "to": ["x@nowhere.example"]}
    ]"#,
        ),
    );
    assert_eq!(sent[0], json("{}"));
    assert_eq!(sent[1], json("{}"));
    assert_eq!(
        sent[2],
        json("{}"),
        "the sink refuses nobody later, at its RCPT"
    );
    // A domain no route reaches is refused at RCPT: nothing is relayed blind.
    assert_eq!(sent[3]["x@nowhere.example"][0], 550, "{sent}");

    wait_for(&sink, Duration::from_secs(60), |s| {
        let a = s.accepted();
        ["<one@laptop>", "<two@laptop>", "<three@laptop>"]
            .iter()
            .all(|id| a.iter().any(|x| x == id))
    });
    let events = sink.events();
    let kept: Vec<&Value> = events.iter().filter(|e| e["event"] == "accepted").collect();
    // Each message once, with its envelope, the bytes as submitted under
    // the submission's Received line.
    let one = kept.iter().find(|e| e["id"] == "<one@laptop>").unwrap();
    assert_eq!(one["from"], "alice@example.com");
    assert_eq!(one["to"], json(r#"["carl@ok.example"]"#), "bob is local");
    let data = one["data"].as_str().unwrap();
    assert!(data.starts_with("Received: from "), "{data}");
    assert!(data.contains("with ESMTPA"), "{data}");
    assert!(data.contains("Subject: One\r\n") && data.ends_with("To Carl and Bob.\r\n"));
    let three = kept.iter().find(|e| e["id"] == "<three@laptop>").unwrap();
    assert_eq!(three["to"], json(r#"["erin@ok.example"]"#));
    // The slow domain was refused once, then taken.
    let tempfails = events.iter().filter(|e| e["event"] == "tempfail").count();
    assert_eq!(tempfails, 1);

    // Alice finds the report about nobody@bad.example in her Inbox, Bob
    // the message sent to him.
    let read = common::python(
        r#"
import imaplib, json, sys, time
host, port = sys.argv[1].rsplit(":", 1)
def inbox(user, want):
    deadline = time.time() + 60
    while True:
        m = imaplib.IMAP4(host, int(port))
        m.login(user, user + "-password")
        m.select("INBOX")
        _, data = m.uid("SEARCH", None, "ALL")
        uids = data[0].split()
        if len(uids) >= want or time.time() > deadline:
            break
        m.logout()
        time.sleep(0.2)
    out = []
    for uid in uids:
        _, parts = m.uid("FETCH", uid, "(BODY.PEEK[])")
        out.append(parts[0][1].decode("utf-8", "replace"))
    m.logout()
    return out
print(json.dumps({"alice": inbox("alice", 1), "bob": inbox("bob", 1)}))
"#,
        &[&imap],
    );
    let alice = read["alice"].as_array().unwrap();
    assert_eq!(alice.len(), 1, "one report: {read}");
    let dsn = alice[0].as_str().unwrap();
    for needle in [
        "Content-Type: multipart/report; report-type=delivery-status;",
        "Content-Type: message/delivery-status",
        "Final-Recipient: rfc822; nobody@bad.example",
        "Action: failed",
        "Status: 5.1.1",
        "Diagnostic-Code: smtp; 550 5.1.1",
        "Subject: Three",
    ] {
        assert!(dsn.contains(needle), "{needle} in {dsn}");
    }
    assert!(!dsn.contains("Final-Recipient: rfc822; erin@ok.example"));
    let bob = read["bob"].as_array().unwrap();
    assert_eq!(bob.len(), 1);
    assert!(bob[0].as_str().unwrap().contains("Subject: One"));

    let s = stats_once(&server, |s| {
        s["outbound.delivered"] == 3 && s["outbound.dsns"] == 1
    });
    assert_eq!(s["outbound.delivered"], 3, "{s}");
    assert_eq!(s["outbound.failed"], 1, "{s}");
    assert_eq!(s["outbound.dsns"], 1, "{s}");
    let s = stats_once(&server, |s| {
        s["outbound.waiting"] == 0 && s["outbound.retrying"] == 0
    });
    assert_eq!(
        (&s["outbound.waiting"], &s["outbound.retrying"]),
        (&json("0"), &json("0"))
    );
    assert!(server.stop().success());
    assert_eq!(sink.accepted().len(), 3, "{:#?}", sink.events());
}

#[test]
fn kill_9_during_delivery_sends_each_message_once_outside_the_window() {
    const N: usize = 24;
    // Kills: at the 2nd MAIL; at DATAs 4 (before the sink keeps it),
    // 8 (kept, before its 250: in the window), 13 (right after the 250:
    // in the window), 18 (before keeping) and 21 (kept, before the 250).
    let plan = r#"{"kill_mail": 2, "kill_data": {"4": "pre", "8": "post", "13": "after",
                   "18": "pre", "21": "post"}}"#;
    let sink = Sink::start(plan, false);
    let tmp = mail_dir(&sink, &["ok.example"], "");
    let d = tmp.path();
    let mut server = Server::start(d);
    sink.target(server.pid());
    let messages: Vec<Value> = (0..N)
        .map(|i| {
            serde_json::json!({"id": format!("<m{i}@laptop>"), "subject": format!("Message {i}"),
                "body": format!("Body {i}.\n"), "to": [format!("r{}@ok.example", i % 3)]})
        })
        .collect();
    let sent = submit(&server, &Value::Array(messages));
    assert!(
        sent.as_array().unwrap().iter().all(|r| *r == json("{}")),
        "{sent}"
    );
    sink.arm();

    let all = |s: &Sink| {
        let a = s.accepted();
        (0..N).all(|i| a.contains(&format!("<m{i}@laptop>")))
    };
    let mut kills = 0;
    let deadline = Instant::now() + Duration::from_secs(240);
    while !all(&sink) {
        assert!(Instant::now() < deadline, "{:#?}", sink.events());
        if server.has_exited() {
            kills += 1;
            server = Server::start(d);
            sink.target(server.pid());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(server.stop().success());
    let events = sink.events();
    let killed: Vec<&Value> = events.iter().filter(|e| e["event"] == "kill").collect();
    assert_eq!(killed.len(), 6, "every planned kill happened: {events:#?}");
    assert_eq!(kills, 6);

    // The window (I58): a message the sink kept whose 250 the server had
    // not yet recorded. Only those may arrive twice; `post` ones must
    // (the server never saw their 250).
    let window: Vec<&str> = killed
        .iter()
        .filter(|e| e["at"] == "post" || e["at"] == "after")
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let accepted = sink.accepted();
    for i in 0..N {
        let id = format!("<m{i}@laptop>");
        let times = accepted.iter().filter(|a| **a == id).count();
        let kill = killed.iter().find(|e| e["id"] == id.as_str());
        match kill.map(|e| e["at"].as_str().unwrap()) {
            Some("post") => assert_eq!(times, 2, "{id}: kept, then sent again"),
            Some("after") => assert!((1..=2).contains(&times), "{id}: {times}"),
            _ => assert_eq!(times, 1, "{id} outside the window {window:?}"),
        }
    }

    // The server's record agrees: nothing left in the queue.
    let server = Server::start(d);
    let s = stats_once(&server, |s| s["outbound.attempts"].is_u64());
    assert_eq!(
        (&s["outbound.waiting"], &s["outbound.retrying"]),
        (&json("0"), &json("0"))
    );
    assert_eq!(s["outbound.attempts"], 0, "nothing was due: {s}");
    assert!(server.stop().success());
}

/// Alice's Inbox over IMAP: every message's bytes, once it holds at least
/// `want` (or after 60 s, whatever it holds).
fn alice_inbox(server: &Server, want: usize) -> Vec<String> {
    let imap = server.imap.clone().unwrap();
    let got = common::python(
        r#"
import imaplib, json, sys, time
host, port = sys.argv[1].rsplit(":", 1)
want = int(sys.argv[2])
deadline = time.time() + 60
while True:
    m = imaplib.IMAP4(host, int(port))
    m.login("alice", "alice-password")
    m.select("INBOX")
    _, data = m.uid("SEARCH", None, "ALL")
    uids = data[0].split()
    if len(uids) >= want or time.time() > deadline:
        break
    m.logout()
    time.sleep(0.2)
out = []
for uid in uids:
    _, parts = m.uid("FETCH", uid, "(BODY.PEEK[])")
    out.append(parts[0][1].decode("utf-8", "replace"))
m.logout()
print(json.dumps(out))
"#,
        &[&imap, &want.to_string()],
    );
    got.as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect()
}

/// Mail sent through Folio's own HTTP API (`POST /mail/send`, Python's
/// urllib) to another domain reaches the outside world as well-formed
/// MIME, from the sender's address.
#[test]
fn mail_sent_over_http_reaches_the_sink() {
    let sink = Sink::start("{}", true);
    let tmp = mail_dir(&sink, &["ok.example"], "");
    let server = Server::start(tmp.path());
    let sent = common::python(
        r#"
import base64, json, sys, urllib.request
body = json.dumps({"to": "Carl <carl@ok.example>, bob", "subject": "From the API",
                   "body": "Hello **Carl**.\n\nA second paragraph."}).encode()
req = urllib.request.Request(sys.argv[1] + "/mail/send", data=body, method="POST",
                             headers={"Content-Type": "application/json",
                                      "Authorization": "Basic " + base64.b64encode(b"alice:alice-password").decode()})
with urllib.request.urlopen(req) as r:
    print(json.dumps({"status": r.status, "body": json.loads(r.read())}))
"#,
        &[&format!("http://{}", server.http)],
    );
    assert_eq!(sent["status"], 201, "{sent}");
    let id = sent["body"]["message_id"].as_str().unwrap().to_string();
    wait_for(&sink, Duration::from_secs(60), |s| {
        s.accepted().contains(&id)
    });
    let events = sink.events();
    let kept: Vec<&Value> = events.iter().filter(|e| e["event"] == "accepted").collect();
    assert_eq!(kept.len(), 1, "once: {events:#?}");
    let e = kept[0];
    assert_eq!(e["from"], "alice@example.com", "the sender's address");
    assert_eq!(e["to"], json(r#"["carl@ok.example"]"#), "bob is local");
    assert_eq!(e["subject"], "From the API");
    // Python's email parser reads it as one text message with the body.
    let parsed = common::python(
        r#"
import email, json, sys
from email import policy
m = email.message_from_string(sys.argv[1], policy=policy.default)
print(json.dumps({"defects": len(m.defects), "type": m.get_content_type(),
                  "from": m["From"], "to": m["To"],
                  "text": m.get_body(preferencelist=("plain",)).get_content()}))
"#,
        &[e["data"].as_str().unwrap()],
    );
    assert_eq!(parsed["defects"], 0, "{parsed}");
    assert!(
        parsed["from"]
            .as_str()
            .unwrap()
            .contains("alice@example.com"),
        "{parsed}"
    );
    assert!(
        parsed["text"].as_str().unwrap().contains("Hello **Carl**."),
        "{parsed}"
    );
    assert!(server.stop().success());
}

/// Entries due together for one host go over one connection (RSET
/// between them), and a message still waiting after
/// `mail.outbound_delay_notice_secs` gets its sender one RFC 3464
/// `Action: delayed` notice, however often it is tried again.
#[test]
fn one_connection_per_pass_and_one_delay_notice() {
    const N: usize = 6;
    let sink = Sink::start("{}", false);
    let tmp = mail_dir(&sink, &["ok.example", "later.example"], "");
    let d = tmp.path();
    let server = Server::start(d);
    let mut messages: Vec<Value> = (0..N)
        .map(|i| {
            serde_json::json!({"id": format!("<p{i}@laptop>"), "subject": format!("Pass {i}"),
                "body": "Body.\n", "to": [format!("r{i}@ok.example")]})
        })
        .collect();
    messages.push(serde_json::json!({"id": "<late@laptop>", "subject": "Late",
        "body": "Whenever.\n", "to": ["x@later.example"]}));
    let sent = submit(&server, &Value::Array(messages));
    assert!(sent.as_array().unwrap().iter().all(|r| *r == json("{}")));
    // Each entry tried once while the sink refuses every MAIL.
    wait_for(&sink, Duration::from_secs(60), |s| {
        s.events()
            .iter()
            .filter(|e| e["event"] == "refused")
            .count()
            > N
    });
    assert!(server.stop().success());
    sink.arm();
    // Restarted once every entry is due (their OutNext, read from the
    // queue's view), the first pass takes them all.
    let rows = ok(
        d,
        &["view", "read", "mail.out.fdb", "(Queue)", "--count", "100"],
        "",
    );
    let latest = rows
        .lines()
        .map(|l| json(l)["columns"]["Next"].as_f64().unwrap_or(0.0))
        .fold(0.0, f64::max);
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as f64
    };
    while now() <= latest {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Delay notices after a second from now on: only the late one is
    // still pending after this pass.
    let env = [("FOLIO__MAIL__OUTBOUND_DELAY_NOTICE_SECS", "1")];
    let server = Server::start_with_env(d, &env);
    wait_for(&sink, Duration::from_secs(60), |s| s.accepted().len() >= N);
    let events = sink.events();
    let conns: std::collections::BTreeSet<u64> = events
        .iter()
        .filter(|e| e["event"] == "accepted")
        .map(|e| e["conn"].as_u64().unwrap())
        .collect();
    assert_eq!(conns.len(), 1, "one connection for the pass: {events:#?}");

    // The late one: one delay notice, whatever the retries since.
    let inbox = alice_inbox(&server, 1);
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    for needle in [
        "Subject: Delayed Mail (still being retried)",
        "Content-Type: multipart/report; report-type=delivery-status;",
        "Final-Recipient: rfc822; x@later.example",
        "Action: delayed",
        "Status: 4.3.0",
        "Will-Retry-Until: ",
        "Diagnostic-Code: smtp; 451 4.3.0",
        "Subject: Late",
    ] {
        assert!(inbox[0].contains(needle), "{needle} in {}", inbox[0]);
    }
    let tried = sink
        .events()
        .iter()
        .filter(|e| e["event"] == "later")
        .count();
    wait_for(&sink, Duration::from_secs(60), |s| {
        s.events().iter().filter(|e| e["event"] == "later").count() >= tried + 2
    });
    assert_eq!(alice_inbox(&server, 1).len(), 1, "still one notice");
    let s = stats_once(&server, |s| s["outbound.delay_notices"] == 1);
    assert_eq!(s["outbound.delay_notices"], 1, "{s}");
    assert_eq!(s["outbound.delivered"], N as u64, "{s}");
    assert!(server.stop().success());
    assert_eq!(sink.accepted().len(), N, "{:#?}", sink.events());
}
