//! IMAP against the real `folio serve`, driven by a client nobody here
//! wrote: Python's `imaplib` (and plain sockets for what no polite client
//! sends). Mail arrives the way it does in production: `smtplib` to the
//! SMTP door, then the router files it in the Inbox.

mod common;
use common::{json, ok, users_dir, Server};
use std::io::Write;
use std::process::{Command, Stdio};

const COMMON: &str = r#"
import base64, imaplib, json, re, smtplib, socket, sys, time
def addr(a):
    host, port = a.rsplit(":", 1)
    return host, int(port)
SENT = (b"From: Eve Outside <eve@example.net>\r\n"
        b"To: bob@example.com\r\n"
        b"Subject: Quarterly figures\r\n"
        b"Message-ID: <q3@example.net>\r\n"
        b"MIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=\"b1\"\r\n"
        b"\r\n"
        b"--b1\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n"
        b"\r\n"
        b"See the attached report.\r\n"
        b"--b1\r\n"
        b"Content-Type: application/pdf\r\n"
        b"Content-Disposition: attachment; filename=\"q3.pdf\"\r\n"
        b"Content-Transfer-Encoding: base64\r\n"
        b"\r\n"
        b"JVBERi0xLjQK\r\n"
        b"--b1--\r\n")
def login(a, user="bob", password="bob-password"):
    m = imaplib.IMAP4(*addr(a))
    m.login(user, password)
    return m
def wait_for(a, mailbox, n):
    for _ in range(200):
        m = login(a)
        typ, data = m.select(mailbox, readonly=True)
        m.logout()
        if int(data[0]) >= n:
            return int(data[0])
        time.sleep(0.05)
    raise SystemExit("mailbox %s never reached %d messages" % (mailbox, n))
"#;

const SETTINGS: &str = "smtp_listen = \"127.0.0.1:0\"\nimap_listen = \"127.0.0.1:0\"\n\
    shutdown_grace_secs = 2\n[mail]\nboxes = 1\n[imap]\nmax_message_size = \"256KiB\"\n";

/// A data directory with the server user `bob` and his mail file.
fn mail_dir() -> tempfile::TempDir {
    let tmp = users_dir(&["bob"]);
    let d = tmp.path();
    ok(d, &["mail", "create-user", "bob"], "");
    std::fs::write(d.join("folio.toml"), SETTINGS).unwrap();
    tmp
}

#[test]
fn a_mail_client_reads_what_smtp_delivered() {
    let tmp = mail_dir();
    let d = tmp.path();
    let server = Server::start(d);
    let smtp = server.smtp.clone().expect("smtp_listen is on");
    let imap = server.imap.clone().expect("imap_listen is on");

    let seen = common::python(
        &format!(
            "{COMMON}
with smtplib.SMTP(*addr(sys.argv[1])) as s:
    s.sendmail('bounces@example.net', ['bob@example.com'], SENT)
wait_for(sys.argv[2], 'INBOX', 1)
m = imaplib.IMAP4(*addr(sys.argv[2]))
caps = m.capabilities
m.login('bob', 'bob-password')
typ, boxes = m.list()
typ, exists = m.select('INBOX')
typ, fetched = m.fetch('1', '(UID FLAGS RFC822.SIZE ENVELOPE BODYSTRUCTURE BODY.PEEK[])')
meta, body = fetched[0]
typ, flags_before = m.fetch('1', '(FLAGS)')
typ, part = m.fetch('1', '(BODY.PEEK[2])')
typ, hdr = m.fetch('1', '(BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
typ, stored = m.store('1', '+FLAGS', '\\\\Seen')
typ, unseen = m.search(None, 'UNSEEN')
typ, subj = m.search(None, 'SUBJECT', 'quarterly')
typ, body_hit = m.search(None, 'BODY', '\"attached report\"')
typ, miss = m.search(None, 'FROM', 'nobody')
typ, status = m.status('INBOX', '(MESSAGES UNSEEN UIDNEXT UIDVALIDITY)')
m.logout()
print(json.dumps({{
  'caps': [c for c in caps],
  'boxes': [b.decode() for b in boxes],
  'exists': exists[0].decode(),
  'meta': meta.decode(),
  'body': base64.b64encode(body).decode(),
  'flags_before': flags_before[0].decode(),
  'part': part[0][1].decode(),
  'hdr': hdr[0][1].decode(),
  'stored': stored[0].decode(),
  'unseen': unseen[0].decode(),
  'subj': subj[0].decode(),
  'body_hit': body_hit[0].decode(),
  'miss': miss[0].decode(),
  'status': status[0].decode(),
}}))
"
        ),
        &[&smtp, &imap],
    );
    let caps = seen["caps"].to_string();
    assert!(caps.contains("IMAP4REV1"), "{caps}");
    assert!(caps.contains("AUTH=PLAIN"), "loopback may sign in: {caps}");
    let boxes = seen["boxes"].to_string();
    for b in [
        "\\\\Drafts) \\\"/\\\" Drafts",
        "\\\\Sent) \\\"/\\\" Sent",
        "\\\\All) \\\"/\\\" \\\"All Documents\\\"",
        "INBOX",
    ] {
        assert!(boxes.contains(b), "{b} in {boxes}");
    }
    assert_eq!(seen["exists"], "1");
    let body = base64_decode(seen["body"].as_str().unwrap());
    let sent = SENT_BYTES;
    assert!(
        body.ends_with(sent),
        "the bytes as sent, after the trace line"
    );
    assert!(
        body.starts_with(b"Received: from "),
        "this server's trace line"
    );
    let meta = seen["meta"].as_str().unwrap();
    assert!(
        meta.contains(&format!("RFC822.SIZE {}", body.len())),
        "{meta}"
    );
    assert!(meta.contains("\"Quarterly figures\""), "ENVELOPE: {meta}");
    assert!(
        meta.contains("(\"application\" \"pdf\""),
        "BODYSTRUCTURE: {meta}"
    );
    assert!(
        !seen["flags_before"].as_str().unwrap().contains("Seen"),
        "BODY.PEEK does not set \\Seen"
    );
    assert_eq!(seen["part"], "JVBERi0xLjQK");
    assert_eq!(seen["hdr"], "Subject: Quarterly figures\r\n\r\n");
    assert!(seen["stored"].as_str().unwrap().contains("\\Seen"));
    assert_eq!(seen["unseen"], "");
    assert_eq!(seen["subj"], "1");
    assert_eq!(seen["body_hit"], "1");
    assert_eq!(seen["miss"], "");
    let status = seen["status"].as_str().unwrap();
    assert!(
        status.contains("MESSAGES 1") && status.contains("UNSEEN 0"),
        "{status}"
    );
    let uid = uid_of(meta);

    // \Seen is an item of the document: it survives a restart, and so
    // does the UID.
    server.stop();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let after = common::python(
        &format!(
            "{COMMON}
m = login(sys.argv[1])
m.select('INBOX')
typ, f = m.fetch('1', '(UID FLAGS)')
m.logout()
print(json.dumps({{'f': f[0].decode()}}))
"
        ),
        &[&imap],
    );
    let f = after["f"].as_str().unwrap();
    assert!(f.contains("\\Seen"), "{f}");
    assert_eq!(uid_of(f), uid, "the same UID after a restart");

    // APPEND, then EXPUNGE what is marked \Deleted.
    let appended = common::python(
        &format!(
            "{COMMON}
m = login(sys.argv[1])
typ, a = m.append('INBOX', '(\\\\Flagged)', None, b'Subject: note\\r\\n\\r\\nappended\\r\\n')
typ, exists = m.select('INBOX')
typ, f = m.fetch('2', '(FLAGS BODY.PEEK[])')
m.store('2', '+FLAGS', '\\\\Deleted')
typ, gone = m.expunge()
typ, left = m.select('INBOX')
m.logout()
print(json.dumps({{'a': a[0].decode(), 'exists': exists[0].decode(), 'f': f[0][0].decode(),
                  'body': f[0][1].decode(), 'gone': [g.decode() for g in gone if g],
                  'left': left[0].decode()}}))
"
        ),
        &[&imap],
    );
    assert!(
        appended["a"].as_str().unwrap().contains("APPENDUID"),
        "{appended}"
    );
    assert_eq!(appended["exists"], "2");
    assert!(appended["f"].as_str().unwrap().contains("\\Flagged"));
    assert_eq!(appended["body"], "Subject: note\r\n\r\nappended\r\n");
    assert_eq!(appended["gone"], json("[\"2\"]"));
    assert_eq!(appended["left"], "1");
    server.stop();
}

#[test]
fn bad_input_gets_bad_or_no_and_never_a_panic() {
    let tmp = mail_dir();
    let d = tmp.path();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let out = common::python(
        &format!(
            "{COMMON}
def refused(user, password):
    m = imaplib.IMAP4(*addr(sys.argv[1]))
    try:
        m.login(user, password)
        return 'accepted'
    except imaplib.IMAP4.error as e:
        return str(e)
wrong = refused('bob', 'nope')
unknown = refused('nobody', 'nope')
s = socket.create_connection(addr(sys.argv[1]))
f = s.makefile('rb')
greeting = f.readline().decode()
def say(line):
    s.sendall(line)
    return f.readline().decode()
garbage = say(b'\\x00\\xff garbage (((\\r\\n')
unknown_cmd = say(b'a1 FROBNICATE\\r\\n')
before_login = say(b'a2 SELECT INBOX\\r\\n')
huge = say(b'a3 APPEND INBOX {{999999999}}\\r\\n')
unbalanced = say(b'a4 FETCH 1 (FLAGS\\r\\n')
still = say(b'a5 NOOP\\r\\n')
s.close()
print(json.dumps({{'wrong': wrong, 'unknown': unknown, 'greeting': greeting, 'garbage': garbage,
                  'unknown_cmd': unknown_cmd, 'before_login': before_login, 'huge': huge,
                  'unbalanced': unbalanced, 'still': still}}))
"
        ),
        &[&imap],
    );
    assert_eq!(out["wrong"], out["unknown"], "the same answer: {out}");
    assert!(out["wrong"]
        .as_str()
        .unwrap()
        .contains("wrong user name or password"));
    assert!(out["greeting"].as_str().unwrap().starts_with("* OK"));
    assert!(
        out["garbage"].as_str().unwrap().starts_with("* BAD"),
        "{out}"
    );
    assert!(
        out["unknown_cmd"].as_str().unwrap().starts_with("a1 BAD"),
        "{out}"
    );
    assert!(
        out["before_login"].as_str().unwrap().starts_with("a2 BAD"),
        "{out}"
    );
    assert!(out["huge"].as_str().unwrap().starts_with("a3 BAD"), "{out}");
    assert!(
        out["unbalanced"].as_str().unwrap().starts_with("a4 BAD"),
        "{out}"
    );
    assert!(out["still"].as_str().unwrap().starts_with("a5 OK"), "{out}");
    assert!(!server.log().contains("panicked"), "{}", server.log());
    server.stop();
}

#[test]
fn a_kill_during_appends_keeps_every_acknowledged_message() {
    let tmp = mail_dir();
    let d = tmp.path();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    // Append in the background; the server is killed mid-way.
    let mut child = Command::new("python3")
        .arg("-")
        .arg(&imap)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let script = format!(
        "{COMMON}
m = login(sys.argv[1])
for i in range(100000):
    try:
        typ, _ = m.append('INBOX', None, None, ('Subject: n%d\\r\\n\\r\\nbody %d\\r\\n' % (i, i)).encode())
    except Exception:
        break
    if typ != 'OK':
        break
    print(i, flush=True)
"
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    // Killed once a few appends were acknowledged, while more run.
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut acked: Vec<String> = Vec::new();
    while acked.len() < 5 {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut lines, &mut line).unwrap() == 0 {
            break;
        }
        acked.push(format!("n{}", line.trim()));
    }
    server.kill();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut lines, &mut rest).unwrap();
    child.wait().unwrap();
    acked.extend(rest.lines().map(|l| format!("n{}", l.trim())));
    assert!(acked.len() > 3, "some appends were acknowledged first");
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let kept = common::python(
        &format!(
            "{COMMON}
m = login(sys.argv[1])
typ, n = m.select('INBOX')
subjects = []
if int(n[0]) > 0:
    typ, data = m.fetch('1:*', '(BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
    subjects = [d[1].decode().split(':', 1)[1].strip() for d in data if isinstance(d, tuple)]
m.logout()
print(json.dumps(subjects))
"
        ),
        &[&imap],
    );
    let kept: Vec<String> = kept
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    for a in &acked {
        assert!(kept.contains(a), "acknowledged {a} was lost");
    }
    // The one in flight at the kill may be durable without its OK (the
    // client then sends it again, RFC 9051 leaves that to it); nothing
    // else is there.
    assert!(
        kept.len() <= acked.len() + 1,
        "{} kept, {} acked",
        kept.len(),
        acked.len()
    );
    server.stop();
}

#[test]
fn readers_hide_documents_from_every_count_and_search() {
    let tmp = mail_dir();
    let d = tmp.path();
    // Two memos written through Folio's own API (so served rendered), one
    // restricted to somebody else by $Readers, both in bob's Inbox.
    let put = |json: &str| {
        ok(d, &["doc", "put", "mail/bob.fdb"], json)
            .trim()
            .to_string()
    };
    let open = put(r#"{"Form":"Memo","Subject":"for bob","Body":"hello bob"}"#);
    let hidden =
        put(r#"{"Form":"Memo","Subject":"secret","Body":"not for bob","$Readers":["carol"]}"#);
    ok(
        d,
        &["folder", "add", "mail/bob.fdb", "Inbox", &open, &hidden],
        "",
    );
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let seen = common::python(
        &format!(
            "{COMMON}
m = login(sys.argv[1])
typ, status = m.status('INBOX', '(MESSAGES)')
typ, all_status = m.status('\\\"All Documents\\\"', '(MESSAGES)')
typ, exists = m.select('INBOX')
typ, found = m.search(None, 'ALL')
typ, secret = m.search(None, 'SUBJECT', 'secret')
typ, f = m.fetch('1', '(BODY[])')
m.logout()
print(json.dumps({{'status': status[0].decode(), 'all': all_status[0].decode(),
                  'exists': exists[0].decode(), 'found': found[0].decode(),
                  'secret': secret[0].decode(), 'body': f[0][1].decode()}}))
"
        ),
        &[&imap],
    );
    assert!(
        seen["status"].as_str().unwrap().contains("MESSAGES 1"),
        "{seen}"
    );
    assert!(
        seen["all"].as_str().unwrap().contains("MESSAGES 1"),
        "{seen}"
    );
    assert_eq!(seen["exists"], "1");
    assert_eq!(seen["found"], "1");
    assert_eq!(seen["secret"], "");
    let body = seen["body"].as_str().unwrap();
    assert!(body.contains("Subject: for bob\r\n"), "{body}");
    assert!(body.contains("aGVsbG8gYm9i"), "the body, base64: {body}");
    server.stop();
}

#[test]
fn an_idling_client_hears_of_new_mail() {
    let tmp = mail_dir();
    let d = tmp.path();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let heard = common::python(
        &format!(
            "{COMMON}
s = socket.create_connection(addr(sys.argv[1]))
f = s.makefile('rb')
f.readline()
def until(tag):
    lines = []
    while True:
        line = f.readline().decode()
        lines.append(line)
        if line.startswith(tag):
            return lines
s.sendall(b'a1 LOGIN bob bob-password\\r\\n'); until('a1 ')
s.sendall(b'a2 SELECT INBOX\\r\\n'); until('a2 ')
s.sendall(b'a3 IDLE\\r\\n')
go = f.readline().decode()
# Another session appends; this one is told without asking.
other = login(sys.argv[1])
started = time.time()
other.append('INBOX', None, None, b'Subject: while idle\\r\\n\\r\\nhi\\r\\n')
exists = f.readline().decode()
waited = time.time() - started
s.sendall(b'DONE\\r\\n')
done = until('a3 ')
other.logout()
print(json.dumps({{'go': go, 'exists': exists, 'done': done[-1], 'waited': waited}}))
"
        ),
        &[&imap],
    );
    assert!(heard["go"].as_str().unwrap().starts_with("+ "), "{heard}");
    assert_eq!(heard["exists"], "* 1 EXISTS\r\n");
    assert!(
        heard["done"].as_str().unwrap().starts_with("a3 OK"),
        "{heard}"
    );
    server.stop();
}

const SENT_BYTES: &[u8] = b"From: Eve Outside <eve@example.net>\r\n\
To: bob@example.com\r\n\
Subject: Quarterly figures\r\n\
Message-ID: <q3@example.net>\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"b1\"\r\n\
\r\n\
--b1\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
\r\n\
See the attached report.\r\n\
--b1\r\n\
Content-Type: application/pdf\r\n\
Content-Disposition: attachment; filename=\"q3.pdf\"\r\n\
Content-Transfer-Encoding: base64\r\n\
\r\n\
JVBERi0xLjQK\r\n\
--b1--\r\n";

fn uid_of(fetch: &str) -> String {
    let at = fetch.find("UID ").expect("UID in the answer") + 4;
    fetch[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect()
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}
