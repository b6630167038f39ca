//! Inbound SMTP against the real `folio serve`, driven by a client nobody
//! here wrote: Python's `smtplib` and `email` packages (and its plain
//! sockets for what no polite client sends). Deposits are checked after
//! the server stops, through the embedded commands.

mod common;
use common::{json, ok, users_dir, Server};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

const COMMON: &str = r#"
import json, smtplib, socket, ssl, sys
from email.message import EmailMessage
host, port = sys.argv[1].rsplit(":", 1)
port = int(port)
def memo(subject, text, attachment=None):
    m = EmailMessage()
    m["Received"] = "from relay.example.net by mx.example.net; Mon, 1 Jan 2024 00:00:00 +0000"
    m["From"] = "Eve Outside <eve@example.net>"
    m["To"] = "Alice <alice@example.com>, bob@example.com"
    m["Subject"] = subject
    m.set_content(text)
    if attachment is not None:
        m.add_attachment(attachment, maintype="application", subtype="pdf", filename="report.pdf")
    return m
"#;

/// A data directory with two people (`Alice Smith`, alias
/// `alice@example.com`; `bob`) and `settings` as folio.toml.
fn mail_dir(settings: &str) -> tempfile::TempDir {
    let tmp = users_dir(&[]);
    let d = tmp.path();
    let args = [
        "mail",
        "create-user",
        "Alice Smith",
        "--alias",
        "alice@example.com",
    ];
    ok(d, &args, "");
    ok(d, &["mail", "create-user", "bob"], "");
    std::fs::write(d.join("folio.toml"), settings).unwrap();
    tmp
}

const SETTINGS: &str = "smtp_listen = \"127.0.0.1:0\"\nshutdown_grace_secs = 2\n\
    [smtp]\nmax_message_size = \"64KiB\"\ncommand_timeout_secs = 2\n[mail]\nboxes = 1\n";

/// Every document of the mail box, as JSON.
fn deposits(d: &Path) -> Vec<serde_json::Value> {
    let dbs = ok(d, &["db", "list"], "");
    if !dbs.lines().any(|l| l == "mail.box.fdb") {
        return Vec::new();
    }
    ok(d, &["doc", "list", "mail.box.fdb"], "")
        .lines()
        .map(json)
        .collect()
}

#[test]
fn ordinary_and_hostile_clients_over_smtp() {
    let tmp = mail_dir(SETTINGS);
    let d = tmp.path();
    let server = Server::start(d);
    let smtp = server.smtp.clone().expect("smtp_listen is on");

    // A multipart message with an attachment to two local people: one by
    // an alias in another case, one by a short name at any domain.
    let pdf: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let sent = common::python(
        &format!(
            "{COMMON}
pdf = bytes((i * 7 % 251) for i in range(20000))
with smtplib.SMTP(host, port) as s:
    code, _ = s.ehlo('client.example.net')
    exts = sorted(s.esmtp_features)
    refused = s.send_message(memo('Quarterly figures', 'See the attached report.\\n', pdf),
                             from_addr='bounces@example.net',
                             to_addrs=['ALICE@Example.COM', 'bob@elsewhere.org'])
    print(json.dumps({{'ehlo': code, 'exts': exts, 'refused': refused}}))
"
        ),
        &[&smtp],
    );
    assert_eq!(sent["ehlo"], 250);
    assert_eq!(sent["refused"], json("{}"));
    let exts = sent["exts"].to_string();
    for ext in ["size", "8bitmime", "pipelining"] {
        assert!(exts.contains(ext), "{exts}");
    }
    assert!(!exts.contains("starttls"), "no TLS configured: {exts}");

    // Unknown recipients are refused at RCPT with 550.
    let unknown = common::python(
        &format!(
            "{COMMON}
with smtplib.SMTP(host, port) as s:
    try:
        s.send_message(memo('x', 'y'), from_addr='a@example.net', to_addrs=['nobody@example.com'])
        print(json.dumps({{'error': None}}))
    except smtplib.SMTPRecipientsRefused as e:
        print(json.dumps({{'error': 'refused', 'codes': [c for c, _ in e.recipients.values()]}}))
"
        ),
        &[&smtp],
    );
    assert_eq!(unknown["error"], "refused");
    assert_eq!(unknown["codes"], json("[550]"));

    // Oversized: refused at MAIL when SIZE is declared, and after the
    // final dot when it is not.
    let big = common::python(
        &format!(
            "{COMMON}
m = memo('big', 'x', bytes(100000))
with smtplib.SMTP(host, port) as s:
    try:
        s.send_message(m, from_addr='a@example.net', to_addrs=['bob@example.com'])
        declared = None
    except smtplib.SMTPSenderRefused as e:
        declared = e.smtp_code
    s.rset()
    s.mail('a@example.net')
    s.rcpt('bob@example.com')
    code, _ = s.data(m.as_bytes())
    print(json.dumps({{'declared': declared, 'after_dot': code}}))
"
        ),
        &[&smtp],
    );
    assert_eq!(big["declared"], 552);
    assert_eq!(big["after_dot"], 552);

    // Garbage pipelined after RCPT: error replies, in order, nothing stored.
    let garbage = common::python(
        &format!(
            "{COMMON}
c = socket.create_connection((host, port), timeout=30)
c.sendall(b'EHLO x\\r\\nMAIL FROM:<a@example.net>\\r\\nRCPT TO:<bob@example.com>\\r\\n'
          b'\\x00\\xff\\xfe garbage\\r\\nFROB NICATE\\r\\nRCPT TO:<bad address>\\r\\nRSET\\nQUIT\\r\\n')
data = b''
while True:
    chunk = c.recv(65536)
    if not chunk:
        break
    data += chunk
codes = [int(l[:3]) for l in data.split(b'\\r\\n') if l[:3].isdigit() and l[3:4] == b' ']
print(json.dumps({{'codes': codes}}))
"
        ),
        &[&smtp],
    );
    assert_eq!(
        garbage["codes"],
        json("[220, 250, 250, 250, 500, 500, 501, 500, 221]")
    );

    // A client that connects and says nothing is cut after the command
    // timeout, with a 421.
    let idle = common::python(
        &format!(
            "{COMMON}
c = socket.create_connection((host, port), timeout=60)
f = c.makefile('rb')
lines = [l.decode().strip() for l in f]
print(json.dumps({{'lines': lines}}))
"
        ),
        &[&smtp],
    );
    let lines = idle["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].as_str().unwrap().starts_with("220 "));
    assert!(lines[1].as_str().unwrap().starts_with("421 "), "{lines:?}");

    assert!(server.stop().success());
    let docs = deposits(d);
    assert_eq!(docs.len(), 1, "only the first message was stored: {docs:?}");
    let doc = &docs[0];
    assert_eq!(doc["Form"], "Memo");
    assert_eq!(doc["From"], "Eve Outside <eve@example.net>");
    assert_eq!(doc["Subject"], "Quarterly figures");
    assert_eq!(doc["InboundFrom"], "bounces@example.net");
    assert_eq!(doc["Recipients"], json(r#"["Alice Smith","bob"]"#));
    assert_eq!(doc["DeliveryState"], json(r#"["pending","pending"]"#));
    assert_eq!(doc["Deposited"]["$type"], "datetime");
    assert_eq!(
        doc["Body"],
        json(r#"{"$type":"richtext","v":"See the attached report.\n"}"#)
    );
    assert_eq!(doc["$FILE:report.pdf"]["size"], 20_000);
    // RFC 5321 §4.4: this server's trace line on top of the relay's; two
    // recipients, so none is named.
    let received = doc["Received"].as_array().expect("a list of trace lines");
    assert_eq!(received.len(), 2, "{received:?}");
    let ours = received[0].as_str().unwrap();
    assert!(
        ours.starts_with("from client.example.net ([127.0.0.1]) by ")
            && ours.contains(" with ESMTP; "),
        "{ours}"
    );
    assert!(!ours.contains(" for "), "{ours}");
    assert_eq!(
        received[1],
        "from relay.example.net by mx.example.net; Mon, 1 Jan 2024 00:00:00 +0000"
    );
    let unid = doc["$unid"].as_str().unwrap();
    let o = common::folio(
        d,
        &["attach", "get", "mail.box.fdb", unid, "report.pdf"],
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, pdf);
}

#[test]
fn starttls_and_shutdown_with_an_idle_client() {
    let settings = "smtp_listen = \"127.0.0.1:0\"\nshutdown_grace_secs = 3\n[mail]\nboxes = 1\n";
    let tmp = mail_dir(settings);
    let d = tmp.path();
    let server = Server::start_with(d, &["--tls-self-signed"]);
    let smtp = server.smtp.clone().expect("smtp_listen is on");
    let cert = d.join("tls").join("cert.pem");

    let tls = common::python(
        &format!(
            "{COMMON}
ctx = ssl.create_default_context(cafile=sys.argv[2])
with smtplib.SMTP(host, port) as s:
    s.ehlo('client.example.net')
    before = s.has_extn('starttls')
    code, _ = s.starttls(context=ctx)
    s.ehlo('client.example.net')
    after = s.has_extn('starttls')
    version = s.sock.version()
    refused = s.send_message(memo('Over TLS', 'Private.\\n'), from_addr='a@example.net',
                             to_addrs=['bob@example.com'])
    print(json.dumps({{'before': before, 'code': code, 'after': after,
                       'version': version, 'refused': refused}}))
"
        ),
        &[&smtp, cert.to_str().unwrap()],
    );
    assert_eq!(tls["before"], true);
    assert_eq!(tls["code"], 220);
    assert_eq!(tls["after"], false, "not offered again inside TLS");
    assert!(tls["version"].as_str().unwrap().starts_with("TLS"), "{tls}");
    assert_eq!(tls["refused"], json("{}"));

    // An idle client (the command timeout is 5 minutes) does not keep the
    // server past its grace period: it is told 421 and closed.
    let idle = std::net::TcpStream::connect(&smtp).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut reader = BufReader::new(idle);
    let mut greeting = String::new();
    reader.read_line(&mut greeting).unwrap();
    assert!(greeting.starts_with("220 "), "{greeting}");
    let (status, _) = server.stop_within(Duration::from_secs(3 + 10));
    assert!(status.success());
    let mut bye = String::new();
    reader.read_line(&mut bye).unwrap();
    assert!(bye.starts_with("421 "), "{bye}");

    let docs = deposits(d);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["Subject"], "Over TLS");
    assert_eq!(docs[0]["Recipients"], json(r#"["bob"]"#));
}
