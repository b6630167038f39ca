//! Message submission (RFC 6409) against the real `folio serve`, driven
//! by clients nobody here wrote: Python's `smtplib` submits, `imaplib`
//! reads what arrived. Sign-in with the server's users (argon2, the same
//! passwords as HTTP), the envelope sender checked against the person's
//! addresses, 530 without a sign-in, and passwords refused in the clear
//! off loopback until STARTTLS.

mod common;
use common::{json, ok, users_dir, Server};

const COMMON: &str = r#"
import base64, imaplib, json, smtplib, socket, ssl, sys, time
from email.message import EmailMessage
host, port = sys.argv[1].rsplit(":", 1)
port = int(port)
def memo(subject, text, sender="Alice Smith <alice@example.com>", to="bob@example.com"):
    m = EmailMessage()
    m["From"] = sender
    m["To"] = to
    m["Subject"] = subject
    m["Message-ID"] = "<" + subject.replace(" ", ".") + "@client.example>"
    m.set_content(text)
    return m
def refusal(f):
    try:
        f()
        return None
    except smtplib.SMTPResponseException as e:
        return [e.smtp_code, e.smtp_error.decode()]
    except smtplib.SMTPRecipientsRefused as e:
        return [[c, t.decode()] for c, t in e.recipients.values()]
def cmd(reply):
    # smtplib's mail(), rcpt() and docmd() return the reply, never raise.
    return [reply[0], reply[1].decode()]
def plain(s, user, password):
    # One PLAIN attempt (smtplib's login() would try LOGIN after it too).
    s.user, s.password = user, password
    return s.auth('PLAIN', s.auth_plain)
"#;

/// Server users `alice`, `bob` and `carol` (passwords `<name>-password`);
/// people `Alice Smith` (signs in as alice, alias `alice@example.com`)
/// and `bob` (alias `bob@example.com`); carol is no person.
fn mail_dir(settings: &str) -> tempfile::TempDir {
    let tmp = users_dir(&["alice", "bob", "carol"]);
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
    std::fs::write(d.join("folio.toml"), settings).unwrap();
    tmp
}

const SETTINGS: &str = "submission_listen = \"127.0.0.1:0\"\nimap_listen = \"127.0.0.1:0\"\n\
    shutdown_grace_secs = 2\n[mail]\nboxes = 1\n";

#[test]
fn smtplib_submits_with_auth_and_the_right_sender_only() {
    let tmp = mail_dir(SETTINGS);
    let d = tmp.path();
    let server = Server::start(d);
    let submission = server.submission.clone().expect("submission_listen is on");
    let imap = server.imap.clone().expect("imap_listen is on");
    assert!(server.smtp.is_none(), "inbound SMTP stays off");

    let got = common::python(
        &format!(
            "{COMMON}
out = {{}}
# Signed in with PLAIN (smtplib's choice), the right sender: accepted.
with smtplib.SMTP(host, port) as s:
    s.ehlo('laptop.example')
    out['auth_offered'] = s.esmtp_features.get('auth', '')
    out['login'] = s.login('alice', 'alice-password')[0]
    out['refused'] = s.send_message(memo('First note', 'Hello Bob.\\n'),
                                    from_addr='alice@example.com', to_addrs=['bob@example.com'])
    # Another address of someone else's, then an address nobody has.
    out['other_sender'] = cmd(s.mail('bob@example.com'))
    out['no_sender'] = cmd(s.docmd('MAIL FROM:<>'))
    again = base64.b64encode(b'\\0alice\\0alice-password').decode()
    out['again'] = cmd(s.docmd('AUTH PLAIN ' + again))
# LOGIN, chosen explicitly, in another case of the address.
with smtplib.SMTP(host, port) as s:
    s.ehlo('laptop.example')
    s.user, s.password = 'alice', 'alice-password'
    out['login_mech'] = s.auth('LOGIN', s.auth_login)[0]
    out['refused_login'] = s.send_message(memo('Second note', 'Again.\\n'),
                                          from_addr='ALICE@Example.COM', to_addrs=['bob@example.com'])
# No sign-in: 530 at MAIL, RCPT and DATA.
with smtplib.SMTP(host, port) as s:
    s.ehlo('laptop.example')
    out['unauth_mail'] = cmd(s.mail('alice@example.com'))
    out['unauth_rcpt'] = cmd(s.rcpt('bob@example.com'))
    out['unauth_data'] = s.docmd('DATA')[0]
# A wrong password, an unknown user (the same answer), a user who is no
# person; the third refusal ends the session.
with smtplib.SMTP(host, port) as s:
    s.ehlo('laptop.example')
    out['wrong_password'] = refusal(lambda: plain(s, 'alice', 'nope'))
    out['unknown_user'] = refusal(lambda: plain(s, 'mallory', 'nope'))
    started = time.time()
    out['third'] = refusal(lambda: plain(s, 'alice', 'still-nope'))
    out['paused'] = time.time() - started >= 2
    try:
        out['after'] = s.noop()[0]
    except smtplib.SMTPServerDisconnected:
        out['after'] = 'disconnected'
with smtplib.SMTP(host, port) as s:
    s.ehlo('laptop.example')
    out['no_person'] = refusal(lambda: plain(s, 'carol', 'carol-password'))
    # Hostile spellings: no mechanism, an unknown one, garbage, a cancel,
    # an authorization identity that is someone else.
    out['bare_auth'] = s.docmd('AUTH')[0]
    out['unknown_mech'] = s.docmd('AUTH CRAM-MD5')[0]
    out['garbage'] = s.docmd('AUTH PLAIN %%%')[0]
    s.docmd('AUTH LOGIN')
    out['cancel'] = s.docmd('*')[0]
    other = base64.b64encode(b'bob\\0alice\\0alice-password').decode()
    out['as_another'] = s.docmd('AUTH PLAIN ' + other)[0]
    out['pipelined_mail'] = cmd(s.mail('alice@example.com'))
print(json.dumps(out))
"
        ),
        &[&submission],
    );
    assert!(
        got["auth_offered"].as_str().unwrap().contains("PLAIN"),
        "{got}"
    );
    assert_eq!(got["login"], 235);
    assert_eq!(got["refused"], json("{}"));
    assert_eq!(got["other_sender"][0], 553, "{got}");
    assert_eq!(got["no_sender"][0], 553, "{got}");
    assert_eq!(got["again"][0], 503, "{got}");
    assert_eq!(got["login_mech"], 235);
    assert_eq!(got["refused_login"], json("{}"));
    for key in ["unauth_mail", "unauth_rcpt"] {
        assert_eq!(got[key][0], 530, "{key}: {got}");
        assert!(got[key][1]
            .as_str()
            .unwrap()
            .contains("Authentication required"));
    }
    assert_eq!(got["unauth_data"], 530);
    assert_eq!(got["wrong_password"][0], 535);
    assert_eq!(
        got["unknown_user"], got["wrong_password"],
        "one answer for both"
    );
    assert_eq!(got["third"][0], 535);
    assert_eq!(got["paused"], true, "refusals are answered after a pause");
    assert!(
        got["after"] == 421 || got["after"] == "disconnected",
        "closed after the third: {got}"
    );
    assert_eq!(got["no_person"][0], 535);
    assert!(got["no_person"][1].as_str().unwrap().contains("no person"));
    assert_eq!(got["bare_auth"], 501);
    assert_eq!(got["unknown_mech"], 504);
    assert_eq!(got["garbage"], 501);
    assert_eq!(got["cancel"], 501);
    assert_eq!(got["as_another"], 535);
    assert_eq!(got["pipelined_mail"][0], 530, "nobody signed in: {got}");

    // Bob reads both notes over IMAP, byte for byte as submitted, under
    // a Received line that says the sender signed in.
    let read = common::python(
        &format!(
            "{COMMON}
deadline = time.time() + 60
while True:
    m = imaplib.IMAP4(host, port)
    m.login('bob', 'bob-password')
    m.select('INBOX')
    _, data = m.uid('SEARCH', None, 'ALL')
    uids = data[0].split()
    if len(uids) >= 2 or time.time() > deadline:
        break
    m.logout()
    time.sleep(0.2)
bodies = []
for uid in uids:
    _, parts = m.uid('FETCH', uid, '(BODY.PEEK[])')
    bodies.append(parts[0][1].decode())
m.logout()
print(json.dumps({{'bodies': bodies}}))
"
        ),
        &[&imap],
    );
    let bodies: Vec<&str> = read["bodies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert_eq!(bodies.len(), 2, "{read}");
    for (body, subject) in bodies.iter().zip(["First note", "Second note"]) {
        assert!(
            body.starts_with("Received: from laptop.example ([127.0.0.1])"),
            "{body}"
        );
        assert!(body
            .lines()
            .next()
            .unwrap()
            .contains("with ESMTPA for <bob@example.com>"));
        assert!(body.contains(&format!("Subject: {subject}\r\n")), "{body}");
        assert!(body.contains("From: Alice Smith <alice@example.com>\r\n"));
    }
    assert!(bodies[0].ends_with("Hello Bob.\r\n"), "{}", bodies[0]);
    let log = server.log();
    assert!(!log.contains("alice-password"), "no password in the log");
    assert!(server.stop().success());

    // Each message was deposited once, marked as Alice's submission,
    // with the envelope sender she used.
    let docs: Vec<serde_json::Value> = ok(d, &["doc", "list", "mail.box.fdb"], "")
        .lines()
        .map(json)
        .collect();
    assert_eq!(docs.len(), 2);
    for doc in &docs {
        assert_eq!(doc["SubmittedBy"], "Alice Smith");
        assert_eq!(doc["Recipients"], json(r#"["bob"]"#));
    }
    let senders: Vec<&str> = docs
        .iter()
        .map(|d| d["InboundFrom"].as_str().unwrap())
        .collect();
    assert!(senders.contains(&"alice@example.com") && senders.contains(&"ALICE@Example.COM"));
}

/// Off loopback, without TLS, passwords are not asked for: AUTH is not
/// offered and is answered 538; after STARTTLS it is offered and works.
#[test]
fn off_loopback_auth_waits_for_starttls() {
    let Some(ip) = outside_address() else {
        panic!("this machine has no non-loopback IPv4 address to test from");
    };
    let settings =
        format!("submission_listen = \"{ip}:0\"\nshutdown_grace_secs = 2\n[mail]\nboxes = 1\n");
    let tmp = mail_dir(&settings);
    let d = tmp.path();
    let server = Server::start_with(d, &["--tls-self-signed"]);
    let submission = server.submission.clone().expect("submission_listen is on");
    let cert = d.join("tls").join("cert.pem");
    let got = common::python(
        &format!(
            "{COMMON}
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
out = {{}}
with smtplib.SMTP(host, port) as s:
    s.ehlo('laptop.example')
    out['before'] = s.has_extn('auth')
    out['starttls_offered'] = s.has_extn('starttls')
    plain = base64.b64encode(b'\\0alice\\0alice-password').decode()
    out['cleartext'] = s.docmd('AUTH PLAIN ' + plain)[0]
    out['mail'] = cmd(s.mail('alice@example.com'))
    s.starttls(context=ctx)
    s.ehlo('laptop.example')
    out['after'] = s.has_extn('auth')
    out['login'] = s.login('alice', 'alice-password')[0]
    out['refused'] = s.send_message(memo('Over TLS', 'Private.\\n'),
                                    from_addr='alice@example.com', to_addrs=['bob@example.com'])
print(json.dumps(out))
"
        ),
        &[&submission, cert.to_str().unwrap()],
    );
    assert_eq!(got["before"], false, "{got}");
    assert_eq!(got["starttls_offered"], true);
    assert_eq!(got["cleartext"], 538);
    assert_eq!(got["mail"][0], 530);
    assert_eq!(got["after"], true);
    assert_eq!(got["login"], 235);
    assert_eq!(got["refused"], json("{}"));
    assert!(server.stop().success());
}

/// The first IPv4 address of this machine that is not loopback.
fn outside_address() -> Option<String> {
    let out = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|a| {
            a.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| !ip.is_loopback())
        })
        .map(str::to_string)
}
