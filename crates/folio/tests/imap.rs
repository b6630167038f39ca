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

/// COPY, MOVE, UIDPLUS, RENAME, NAMESPACE and ENABLE through imaplib. A
/// copy is a message of its own (a new document, design.md I56): new
/// UIDs in the destination, its own flags, and expunging it leaves the
/// original alone.
#[test]
fn copy_move_rename_and_the_capabilities_that_say_so() {
    let tmp = mail_dir();
    let d = tmp.path();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let script = [
        COMMON,
        r#"
out = {}
m = login(sys.argv[1])
typ, caps = m.capability()
out['caps'] = sorted(caps[0].decode().split())
for i in range(3):
    m.append('INBOX', '(\\Flagged)' if i == 0 else None, None,
             ('Subject: m%d\r\nMessage-ID: <m%d@x>\r\n\r\nbody %d\r\n' % (i, i, i)).encode())
typ, _ = m.create('Archive')
typ, st = m.status('Archive', '(UIDNEXT UIDVALIDITY)')
out['archive_before'] = st[0].decode()
m.select('INBOX')
typ, f = m.fetch('1:*', '(UID)')
out['inbox_uids'] = [x.decode() for x in f]
typ, c = m.copy('1', 'Archive')
out['copy'] = [typ, c[0].decode()]
typ, r = m._simple_command('COPY', '1', 'Archive')
out['copy_resp'] = m.response('COPYUID')[1][0].decode()
typ, moved = m.uid('MOVE', out['inbox_uids'][1].split('UID ')[1].rstrip(')'), 'Archive')
out['move'] = typ
out['move_copyuid'] = m.response('COPYUID')[1][0].decode()
out['move_expunge'] = [x.decode() for x in m.response('EXPUNGE')[1] if x]
typ, n = m.select('INBOX')
out['inbox_after'] = n[0].decode()
typ, nope = m._simple_command('MOVE', '1', 'Nowhere')
out['nowhere'] = [typ, nope[0].decode()]
typ, r = m.copy('1', '"All Documents"')
out['to_all'] = [typ, r[0].decode()]
typ, n = m.select('Archive')
out['archive_exists'] = n[0].decode()
typ, f = m.fetch('1:*', '(UID FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
out['archive'] = [x[0].decode() + x[1].decode().strip() for x in f if isinstance(x, tuple)]
m.store('1', '+FLAGS', '\\Seen \\Deleted')
typ, gone = m.expunge()
out['archive_expunged'] = [g.decode() for g in gone if g]
m.select('INBOX')
typ, f = m.fetch('1:*', '(FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
out['inbox'] = [x[0].decode() + x[1].decode().strip() for x in f if isinstance(x, tuple)]
typ, ns = m.namespace()
out['namespace'] = ns[0].decode()
m.close()
typ, en = m._simple_command('ENABLE', 'CONDSTORE')
out['enable'] = [typ, [x.decode() for x in m.response('ENABLED')[1] if x is not None]]
m.create('Projects')
m.create('Projects/2026')
typ, r = m.rename('Projects', 'Work')
out['rename'] = typ
typ, r = m.rename('Archive', 'Sent')
out['rename_taken'] = [typ, r[0].decode()]
typ, r = m.rename('INBOX', 'Old')
out['rename_inbox'] = typ
typ, r = m.rename('Drafts', 'Mine')
out['rename_drafts'] = typ
typ, r = m.rename('Archive', 'Kept')
typ, boxes = m.list()
out['boxes'] = [b.decode().split(' "/" ')[1] for b in boxes]
typ, n = m.select('Kept')
out['kept'] = n[0].decode()
m.logout()
print(json.dumps(out))
"#,
    ]
    .concat();
    let out = common::python(&script, &[&imap]);
    let caps: Vec<String> = out["caps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        caps,
        [
            "CONDSTORE",
            "ENABLE",
            "IDLE",
            "IMAP4REV1",
            "MOVE",
            "NAMESPACE",
            "QRESYNC",
            "SPECIAL-USE",
            "UIDPLUS",
            "UNSELECT"
        ],
        "exactly what is implemented"
    );
    let before = out["archive_before"].as_str().unwrap();
    let validity = number_after(before, "UIDVALIDITY ");
    let uid_next = number_after(before, "UIDNEXT ");
    let inbox_uids: Vec<u64> = out["inbox_uids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| number_after(u.as_str().unwrap(), "UID "))
        .collect();
    assert_eq!(out["copy"][0], "OK", "{out}");
    // COPYUID validity source destination: a new UID, at or above the
    // UIDNEXT the destination had.
    let copyuid = out["copy_resp"].as_str().unwrap();
    let parts: Vec<&str> = copyuid.split(' ').collect();
    assert_eq!(parts[0].parse::<u64>().unwrap(), validity, "{copyuid}");
    assert_eq!(parts[1].parse::<u64>().unwrap(), inbox_uids[0]);
    assert!(parts[2].parse::<u64>().unwrap() >= uid_next, "{copyuid}");
    assert_eq!(out["move"], "OK", "{out}");
    let moved: Vec<&str> = out["move_copyuid"].as_str().unwrap().split(' ').collect();
    assert_eq!(moved[1].parse::<u64>().unwrap(), inbox_uids[1]);
    assert!(moved[2].parse::<u64>().unwrap() > parts[2].parse::<u64>().unwrap());
    assert_eq!(out["move_expunge"], json("[\"2\"]"), "{out}");
    assert_eq!(out["inbox_after"], "2");
    assert_eq!(out["nowhere"][0], "NO", "{out}");
    assert!(
        out["nowhere"][1].as_str().unwrap().contains("[TRYCREATE]"),
        "{out}"
    );
    assert_eq!(out["to_all"][0], "NO", "{out}");
    assert!(
        out["to_all"][1].as_str().unwrap().contains("All Documents"),
        "{out}"
    );
    // Archive: two copies of m0 (\Flagged kept) and the moved m1.
    assert_eq!(out["archive_exists"], "3", "{out}");
    let archive = out["archive"].to_string();
    assert_eq!(archive.matches("Subject: m0").count(), 2, "{archive}");
    assert_eq!(archive.matches("Subject: m1").count(), 1, "{archive}");
    assert!(
        archive.contains("\\\\Flagged"),
        "flags go with a copy: {archive}"
    );
    assert_eq!(out["archive_expunged"], json("[\"1\"]"));
    // The original m0 in INBOX: still there, \Flagged, not \Seen.
    let inbox = out["inbox"].to_string();
    assert!(inbox.contains("Subject: m0"), "{inbox}");
    assert!(!inbox.contains("Subject: m1"), "moved away: {inbox}");
    assert!(
        !inbox.contains("Seen"),
        "the copy's flags are its own: {inbox}"
    );
    assert_eq!(out["namespace"], "((\"\" \"/\")) NIL NIL");
    assert_eq!(out["enable"][0], "OK", "{out}");
    assert_eq!(out["rename"], "OK");
    assert_eq!(out["rename_taken"][0], "NO");
    assert!(
        out["rename_taken"][1]
            .as_str()
            .unwrap()
            .contains("ALREADYEXISTS"),
        "{out}"
    );
    assert_eq!(out["rename_inbox"], "NO");
    assert_eq!(out["rename_drafts"], "NO");
    let boxes = out["boxes"].to_string();
    for b in ["Work", "Work/2026", "Kept"] {
        assert!(
            boxes.contains(&format!("\\\"{b}\\\"")) || boxes.contains(&format!("\"{b}\"")),
            "{b} in {boxes}"
        );
    }
    assert!(!boxes.contains("Projects"), "{boxes}");
    assert!(!boxes.contains("Archive"), "{boxes}");
    assert_eq!(out["kept"], "2", "the renamed folder keeps its messages");
    assert!(!server.log().contains("panicked"), "{}", server.log());
    server.stop();
}

fn number_after(text: &str, key: &str) -> u64 {
    let at = text.find(key).unwrap_or_else(|| panic!("{key} in {text}")) + key.len();
    text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .unwrap()
}

/// kill -9 while a client copies and moves messages one by one: after the
/// restart every message is in exactly one of INBOX and Archive (a MOVE
/// is one commit: never lost, never in both), every acknowledged MOVE is
/// done, and every acknowledged COPY is there once (the one in flight at
/// the kill at most once).
#[test]
fn a_kill_during_copies_and_moves_loses_and_doubles_nothing() {
    const N: usize = 40;
    let tmp = mail_dir();
    let d = tmp.path();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    common::python(
        &[
            COMMON,
            r#"
m = login(sys.argv[1])
m.create('Archive')
m.create('Copies')
for i in range(int(sys.argv[2])):
    m.append('INBOX', None, None, ('Subject: n%d\r\n\r\nbody %d\r\n' % (i, i)).encode())
m.logout()
print('{}')
"#,
        ]
        .concat(),
        &[&imap, &N.to_string()],
    );
    let mut child = Command::new("python3")
        .arg("-")
        .arg(&imap)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let script = [
        COMMON,
        r#"
m = login(sys.argv[1])
m.select('INBOX')
typ, f = m.fetch('1:*', '(UID BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
pairs = [(x[0].decode().split('UID ')[1].split(' ')[0], x[1].decode().split(':', 1)[1].strip())
         for x in f if isinstance(x, tuple)]
try:
    for uid, subject in pairs:
        typ, _ = m.uid('COPY', uid, 'Copies')
        if typ != 'OK':
            break
        print('c', subject, flush=True)
        typ, _ = m.uid('MOVE', uid, 'Archive')
        if typ != 'OK':
            break
        print('m', subject, flush=True)
except Exception:
    pass
"#,
    ]
    .concat();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut acked: Vec<String> = Vec::new();
    while acked.len() < 10 {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut lines, &mut line).unwrap() == 0 {
            break;
        }
        acked.push(line.trim().to_string());
    }
    server.kill();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut lines, &mut rest).unwrap();
    child.wait().unwrap();
    acked.extend(rest.lines().map(|l| l.trim().to_string()));
    assert!(acked.len() >= 10, "some were acknowledged first: {acked:?}");

    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let seen = common::python(
        &[
            COMMON,
            r#"
m = login(sys.argv[1])
out = {}
for box in ['INBOX', 'Archive', 'Copies']:
    typ, n = m.select(box, readonly=True)
    subjects = []
    if int(n[0]) > 0:
        typ, data = m.fetch('1:*', '(BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
        subjects = [x[1].decode().split(':', 1)[1].strip() for x in data if isinstance(x, tuple)]
    out[box] = subjects
m.logout()
print(json.dumps(out))
"#,
        ]
        .concat(),
        &[&imap],
    );
    let list = |b: &str| -> Vec<String> {
        seen[b]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let (inbox, archive, copies) = (list("INBOX"), list("Archive"), list("Copies"));
    let count = |l: &[String], s: &str| l.iter().filter(|x| *x == s).count();
    for i in 0..N {
        let s = format!("n{i}");
        assert_eq!(
            count(&inbox, &s) + count(&archive, &s),
            1,
            "{s} in exactly one of INBOX {inbox:?} and Archive {archive:?}"
        );
        assert!(count(&copies, &s) <= 1, "{s} copied twice: {copies:?}");
        if acked.contains(&format!("m {s}")) {
            assert_eq!(count(&archive, &s), 1, "acknowledged move of {s} lost");
        }
        if acked.contains(&format!("c {s}")) {
            assert_eq!(count(&copies, &s), 1, "acknowledged copy of {s} lost");
        }
    }
    // Nothing past the one command in flight at the kill.
    let moves = acked.iter().filter(|a| a.starts_with("m ")).count();
    let copied = acked.iter().filter(|a| a.starts_with("c ")).count();
    assert!(archive.len() <= moves + 1, "{archive:?} vs {acked:?}");
    assert!(copies.len() <= copied + 1, "{copies:?} vs {acked:?}");
    server.stop();
}
