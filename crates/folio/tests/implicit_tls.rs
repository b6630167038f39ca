//! Implicit TLS (RFC 8314) on the mail doors, against the real `folio
//! serve` with Python's own clients: `smtplib.SMTP_SSL` submits on
//! `submissions_listen` (port 465 style) and `imaplib.IMAP4_SSL` reads on
//! `imaps_listen` (port 993 style), both off loopback, where passwords
//! are asked for at once because the connection is TLS from its first
//! byte. A client that speaks in the clear to those ports gets no
//! greeting; a server without a certificate refuses to start them.

mod common;
use common::{ok, users_dir, Server};
use std::process::{Command, Stdio};

/// The first IPv4 address of this machine that is not loopback.
fn outside_address() -> String {
    let out = Command::new("hostname").arg("-I").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|a| {
            a.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| !ip.is_loopback())
        })
        .map(str::to_string)
        .expect("this machine has no non-loopback IPv4 address to test from")
}

fn mail_dir(settings: &str) -> tempfile::TempDir {
    let tmp = users_dir(&["alice", "bob"]);
    let d = tmp.path();
    for (name, alias) in [("alice", "alice@example.com"), ("bob", "bob@example.com")] {
        ok(d, &["mail", "create-user", name, "--alias", alias], "");
    }
    std::fs::write(d.join("folio.toml"), settings).unwrap();
    tmp
}

#[test]
fn smtp_ssl_submits_and_imap4_ssl_reads_off_loopback() {
    common::mail_clients();
    let ip = outside_address();
    let settings = format!(
        "imaps_listen = \"{ip}:0\"\nsubmissions_listen = \"{ip}:0\"\n\
         shutdown_grace_secs = 2\n[mail]\nboxes = 1\n"
    );
    let tmp = mail_dir(&settings);
    let d = tmp.path();
    let server = Server::start_with(d, &["--tls-self-signed"]);
    let imaps = server.imaps.clone().expect("imaps_listen is on");
    let submissions = server
        .submissions
        .clone()
        .expect("submissions_listen is on");
    assert!(server.imap.is_none() && server.submission.is_none());
    let cert = d.join("tls").join("cert.pem");
    let got = common::python(
        r#"
import imaplib, json, smtplib, socket, ssl, sys, time
from email.message import EmailMessage
ctx = ssl.create_default_context(cafile=sys.argv[3])
ctx.check_hostname = False
out = {}
host, port = sys.argv[1].rsplit(':', 1)
with smtplib.SMTP_SSL(host, int(port), context=ctx) as s:
    s.ehlo('laptop.example')
    out['smtp_auth'] = s.has_extn('auth')
    out['smtp_starttls'] = s.has_extn('starttls')
    out['smtp_login'] = s.login('alice', 'alice-password')[0]
    m = EmailMessage()
    m['From'] = 'alice@example.com'
    m['To'] = 'bob@example.com'
    m['Subject'] = 'Over implicit TLS'
    m['Message-ID'] = '<implicit.tls@client.example>'
    m.set_content('Private.\n')
    out['refused'] = s.send_message(m)
host, port = sys.argv[2].rsplit(':', 1)
m = imaplib.IMAP4_SSL(host, int(port), ssl_context=ctx)
caps = m.capabilities
out['imap_caps'] = [c for c in caps]
out['imap_login'] = m.login('bob', 'bob-password')[0]
body = None
for _ in range(600):
    m.select('INBOX')
    typ, data = m.search(None, 'ALL')
    if data[0]:
        typ, data = m.fetch(data[0].split()[0], '(BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
        body = data[0][1].decode()
        break
    time.sleep(0.1)
out['subject'] = body
m.logout()
# In the clear to the TLS ports: no greeting, the connection ends.
for name, addr in [('imap_clear', sys.argv[2]), ('smtp_clear', sys.argv[1])]:
    h, p = addr.rsplit(':', 1)
    c = socket.create_connection((h, int(p)), timeout=30)
    c.sendall(b'a1 LOGIN bob bob-password\r\nEHLO x\r\n')
    got = b''
    try:
        while True:
            chunk = c.recv(4096)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    out[name] = got.decode(errors='replace')
print(json.dumps(out))
"#,
        &[&submissions, &imaps, cert.to_str().unwrap()],
    );
    assert_eq!(got["smtp_auth"], true, "AUTH at once over TLS: {got}");
    assert_eq!(got["smtp_starttls"], false, "no STARTTLS inside TLS: {got}");
    assert_eq!(got["smtp_login"], 235, "{got}");
    assert_eq!(got["refused"], common::json("{}"), "{got}");
    let caps = got["imap_caps"].to_string();
    assert!(caps.contains("AUTH=PLAIN"), "{caps}");
    assert!(
        !caps.contains("LOGINDISABLED") && !caps.contains("STARTTLS"),
        "{caps}"
    );
    assert_eq!(got["imap_login"], "OK", "{got}");
    assert!(
        got["subject"]
            .as_str()
            .unwrap_or_default()
            .contains("Subject: Over implicit TLS"),
        "{got}"
    );
    for k in ["imap_clear", "smtp_clear"] {
        let a = got[k].as_str().unwrap();
        assert!(
            !a.contains("OK") && !a.contains("220") && !a.contains("235"),
            "{k}: {a}"
        );
    }
    assert!(server.stop().success());
}

#[test]
fn implicit_tls_ports_need_a_certificate() {
    for key in ["imaps_listen", "submissions_listen"] {
        let settings = format!("{key} = \"127.0.0.1:0\"\n[mail]\nboxes = 1\n");
        let tmp = mail_dir(&settings);
        let mut child = Command::new(env!("CARGO_BIN_EXE_folio"))
            .arg("--data")
            .arg(tmp.path())
            .args(["serve", "--listen", "127.0.0.1:0", "--http-listen", "off"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // It must end by itself; a guard so a server that started anyway
        // fails the test instead of hanging it.
        let mut status = None;
        for _ in 0..1200 {
            if let Some(s) = child.try_wait().unwrap() {
                status = Some(s);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        if status.is_none() {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(status.is_some_and(|s| !s.success()), "{key}: {err}");
        assert!(
            err.contains(key) && err.contains("TLS"),
            "{key} named: {err}"
        );
    }
}
