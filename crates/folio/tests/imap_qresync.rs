//! QRESYNC (RFC 7162) against the real `folio serve`, driven by Python's
//! `imaplib` with raw commands (it has no QRESYNC of its own) and by
//! `imapclient`: a client that held a big folder at some HIGHESTMODSEQ
//! resynchronises it after a restart and a compaction by hearing only
//! what changed (counted in bytes on the wire), never the folder; the
//! rule of design.md I62. And the spellings an attacker tries: each a
//! tagged BAD or NO, nothing changed.

mod common;
use common::{ok, users_dir, Server};

const SETTINGS: &str = "imap_listen = \"127.0.0.1:0\"\nshutdown_grace_secs = 2\n\
    [mail]\nboxes = 1\n";

/// Messages in the folder: enough that a refetch would be hundreds of
/// times the resync (the principle is the same at 100,000).
const FOLDER: usize = 600;

/// A Python imaplib client that counts the bytes it reads.
const COUNTING: &str = r#"
import imaplib, json, re, sys
host, port = sys.argv[1].rsplit(':', 1)
class Counting(imaplib.IMAP4):
    received = 0
    def readline(self):
        line = super().readline()
        self.received += len(line)
        return line
    def read(self, size):
        data = super().read(size)
        self.received += len(data)
        return data
def client():
    m = Counting(host, int(port))
    m.login('bob', 'bob-password')
    return m
def uids_of(fetches):
    return sorted(int(re.search(rb'UID (\d+)', f if isinstance(f, bytes) else f[0]).group(1))
                  for f in fetches if f)
def expand(sets):
    out = []
    for s in sets:
        text = s.decode() if isinstance(s, bytes) else s
        text = text.replace('(EARLIER) ', '')
        for part in text.split(','):
            lo, _, hi = part.partition(':')
            out.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(out)
"#;

fn mail_dir() -> tempfile::TempDir {
    let tmp = users_dir(&["bob"]);
    let d = tmp.path();
    ok(d, &["mail", "create-user", "bob"], "");
    std::fs::write(d.join("folio.toml"), SETTINGS).unwrap();
    tmp
}

fn numbers(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("a list: {v}"))
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn a_resync_after_restart_and_compaction_hears_only_the_changes() {
    common::mail_clients();
    let tmp = mail_dir();
    let d = tmp.path();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    // The folder, and what a client holding all of it knows.
    let held = common::python(
        &format!(
            r#"{COUNTING}
m = client()
for i in range({FOLDER}):
    m.append('INBOX', None, None, b'Subject: m%d\r\n\r\nbody %d\r\n' % (i, i))
typ, caps = m.capability()
typ, en = m._simple_command('ENABLE', 'QRESYNC')
enabled = m.untagged_responses.pop('ENABLED', [b''])[0].decode()
typ, _ = m.select('INBOX')
validity = int(m.untagged_responses['UIDVALIDITY'][0])
high = int(m.untagged_responses['HIGHESTMODSEQ'][0])
before = m.received
typ, data = m.uid('FETCH', '1:*', '(UID FLAGS MODSEQ)')
full = m.received - before
uids = uids_of(data)
m.logout()
print(json.dumps({{'caps': caps[0].decode(), 'enabled': enabled, 'validity': validity,
                   'high': high, 'full': full, 'uids': uids}}))
"#
        ),
        &[&imap],
    );
    assert!(held["caps"].as_str().unwrap().contains("QRESYNC"), "{held}");
    assert_eq!(held["enabled"], "QRESYNC", "{held}");
    let uids = numbers(&held["uids"]);
    assert_eq!(uids.len(), FOLDER);
    let high = held["high"].as_u64().unwrap();
    let validity = held["validity"].as_u64().unwrap();

    // Ten changes by another client: six flag changes, four expunges.
    let flagged: Vec<u64> = [3, 100, 101, 250, 400, 599]
        .iter()
        .map(|&i| uids[i])
        .collect();
    let expunged: Vec<u64> = [0, 50, 51, 300].iter().map(|&i| uids[i]).collect();
    let list = |v: &[u64]| {
        v.iter()
            .map(|u| u.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    common::python(
        &format!(
            r#"{COUNTING}
m = client()
m.select('INBOX')
m.uid('STORE', '{flagged}', '+FLAGS', '(\\Flagged)')
m.uid('STORE', '{expunged}', '+FLAGS', '(\\Deleted)')
typ, _ = m.uid('EXPUNGE', '{expunged}')
assert typ == 'OK', typ
m.logout()
print(json.dumps(True))
"#,
            flagged = list(&flagged),
            expunged = list(&expunged),
        ),
        &[&imap],
    );
    // Restart and compact in place: the mod-sequences are the documents'
    // change sequence numbers, which both keep (I62).
    server.stop();
    ok(d, &["compact", "mail/bob.fdb"], "");
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let resync = common::python(
        &format!(
            r#"{COUNTING}
m = client()
m._simple_command('ENABLE', 'QRESYNC')
before = m.received
typ, _ = m._simple_command('SELECT', 'INBOX', '(QRESYNC ({validity} {high}))')
wire = m.received - before
m.state = 'SELECTED'  # imaplib's own select() takes no parameters
vanished = m.untagged_responses.pop('VANISHED', [])
fetched = m.untagged_responses.pop('FETCH', [])
exists = int(m.untagged_responses['EXISTS'][-1])
# The same through UID FETCH (CHANGEDSINCE ... VANISHED).
typ2, data = m.uid('FETCH', '1:*', '(FLAGS) (CHANGEDSINCE {high} VANISHED)')
vanished2 = m.untagged_responses.pop('VANISHED', [])
m.logout()
print(json.dumps({{'select': typ, 'wire': wire, 'vanished': expand(vanished),
                   'fetched': uids_of(fetched), 'exists': exists,
                   'fetch': typ2, 'fetched2': uids_of(data), 'vanished2': expand(vanished2),
                   'flags': [f.decode() for f in fetched]}}))
"#
        ),
        &[&imap],
    );
    assert_eq!(resync["select"], "OK", "{resync}");
    assert_eq!(
        numbers(&resync["vanished"]),
        expunged,
        "VANISHED (EARLIER) names exactly the expunged: {resync}"
    );
    assert_eq!(
        numbers(&resync["fetched"]),
        flagged,
        "only the changed: {resync}"
    );
    assert!(resync["flags"].to_string().contains("Flagged"), "{resync}");
    assert_eq!(resync["exists"], FOLDER - expunged.len());
    assert_eq!(numbers(&resync["vanished2"]), expunged, "{resync}");
    assert_eq!(numbers(&resync["fetched2"]), flagged, "{resync}");
    // What crossed the wire: the changes and SELECT's own lines, not the
    // folder (a refetch of UID, FLAGS and MODSEQ alone is `full`).
    let wire = resync["wire"].as_u64().unwrap();
    let full = held["full"].as_u64().unwrap();
    assert!(wire <= 4096, "a resync of 10 changes in ≤ 4 KiB: {wire}");
    assert!(
        wire * 10 < full,
        "the resync ({wire} B) is a small part of a refetch ({full} B)"
    );
    server.stop();

    // A compaction by copy gives the file a new instance id, so a new
    // UIDVALIDITY: the old state is not resynchronised (no VANISHED, no
    // FETCH), the client must start over, as RFC 7162 §3.2.5 says.
    ok(d, &["compact", "mail/bob.fdb", "--copy"], "");
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let after_copy = common::python(
        &format!(
            r#"{COUNTING}
m = client()
m._simple_command('ENABLE', 'QRESYNC')
typ, _ = m._simple_command('SELECT', 'INBOX', '(QRESYNC ({validity} {high}))')
out = {{'select': typ, 'validity': int(m.untagged_responses['UIDVALIDITY'][-1]),
        'vanished': len(m.untagged_responses.pop('VANISHED', [])),
        'fetched': len(m.untagged_responses.pop('FETCH', []))}}
m.logout()
print(json.dumps(out))
"#
        ),
        &[&imap],
    );
    assert_eq!(after_copy["select"], "OK", "{after_copy}");
    assert_ne!(after_copy["validity"], validity, "{after_copy}");
    assert_eq!(after_copy["vanished"], 0, "{after_copy}");
    assert_eq!(after_copy["fetched"], 0, "{after_copy}");
    server.stop();
}

/// imapclient's ENABLE QRESYNC: a message expunged by another session
/// is told to this one at its next NOOP as `* VANISHED` instead of
/// `* n EXPUNGE` (RFC 7162 §3.2.10).
#[test]
fn a_qresync_client_hears_vanished_not_expunge() {
    common::mail_clients();
    let tmp = mail_dir();
    let server = Server::start(tmp.path());
    let imap = server.imap.clone().unwrap();
    let out = common::python(
        r#"
import json, sys
from imapclient import IMAPClient
host, port = sys.argv[1].rsplit(':', 1)
def client():
    c = IMAPClient(host, port=int(port), ssl=False)
    c.login('bob', 'bob-password')
    return c
c = client()
out = {'enabled': [x.decode() for x in c.enable('QRESYNC')]}
for i in range(3):
    c.append('INBOX', b'Subject: v%d\r\n\r\nbody\r\n' % i)
c.select_folder('INBOX')
uids = c.search(['ALL'])
other = client()
other.select_folder('INBOX')
other.delete_messages(uids[1])
other.uid_expunge(uids[1])
other.logout()
out['heard'] = repr(c.noop())
out['uids'] = uids
c.logout()
print(json.dumps(out))
"#,
        &[&imap],
    );
    assert_eq!(out["enabled"], common::json(r#"["QRESYNC"]"#), "{out}");
    let uids = numbers(&out["uids"]);
    let heard = out["heard"].to_string();
    assert!(
        heard.contains("VANISHED") && heard.contains(&uids[1].to_string()),
        "{heard}"
    );
    assert!(!heard.contains("EXPUNGE"), "{heard}");
    server.stop();
}

/// Attacker spellings around CONDSTORE and QRESYNC: each a tagged BAD
/// (or, where the RFC says so, a plain answer), never a panic, and the
/// mailbox as it was.
#[test]
fn bad_modseqs_and_truncated_qresync_commands_change_nothing() {
    common::mail_clients();
    let tmp = mail_dir();
    let server = Server::start(tmp.path());
    let imap = server.imap.clone().unwrap();
    let out = common::python(
        r#"
import json, socket, sys, time
host, port = sys.argv[1].rsplit(':', 1)
s = socket.create_connection((host, int(port)))
s.settimeout(30)
buf = b''
def until(tag):
    global buf
    while True:
        for line in buf.split(b'\r\n'):
            if line.startswith(tag + b' '):
                got, buf = buf, b''
                return got.decode(errors='replace')
        chunk = s.recv(65536)
        if not chunk:
            got, buf = buf, b''
            return got.decode(errors='replace')
        buf += chunk
def say(tag, line):
    s.sendall(tag + b' ' + line + b'\r\n')
    return until(tag)
until(b'*')
out = {}
say(b'l', b'LOGIN bob bob-password')
s.sendall(b'ap APPEND INBOX {20}\r\n')
while b'+' not in buf:
    buf += s.recv(1024)
buf = b''
s.sendall(b'Subject: a\r\n\r\nbody\r\n\r\n')
out['append'] = until(b'ap')
out['plain_select'] = say(b's0', b'SELECT INBOX')
out['changedsince_plain'] = say(b'c0', b'FETCH 1:* (FLAGS) (CHANGEDSINCE 1)')
out['vanished_plain'] = say(b'c1', b'UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)')
out['select_not_enabled'] = say(b'c2', b'SELECT INBOX (QRESYNC (1 1))')
out['enable_selected'] = say(b'c3', b'ENABLE QRESYNC')
say(b'u', b'UNSELECT')
out['enable'] = say(b'c4', b'ENABLE QRESYNC')
for tag, line in [
    (b'b1', b'SELECT INBOX (QRESYNC (1 0))'),
    (b'b2', b'SELECT INBOX (QRESYNC (1 18446744073709551616))'),
    (b'b3', b'SELECT INBOX (QRESYNC (1 -5))'),
    (b'b4', b'SELECT INBOX (QRESYNC (0 1))'),
    (b'b5', b'SELECT INBOX (QRESYNC (1 1 1:*:3))'),
    (b'b6', b'SELECT INBOX (QRESYNC (1'),
    (b'b7', b'SELECT INBOX (QRESYNC)'),
    (b'b8', b'SELECT INBOX (QRESYNC (1 1) (QRESYNC (1 1)'),
]:
    out[tag.decode()] = say(tag, line)
out['select'] = say(b's1', b'SELECT INBOX')
for tag, line in [
    (b'f1', b'UID FETCH 1:* (FLAGS) (CHANGEDSINCE 0)'),
    (b'f2', b'UID FETCH 1:* (FLAGS) (CHANGEDSINCE abc)'),
    (b'f3', b'UID FETCH 1:* (FLAGS) (VANISHED)'),
    (b'f4', b'FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)'),
    (b'f5', b'STORE 1 (UNCHANGEDSINCE -1) +FLAGS (\\Flagged)'),
    (b'f6', b'STORE 1 (UNCHANGEDSINCE 99999999999999999999999) +FLAGS (\\Flagged)'),
    (b'f7', b'UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED'),
    (b'f8', b'SEARCH MODSEQ x'),
    (b'f9', b'UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1 CHANGEDSINCE)'),
]:
    out[tag.decode()] = say(tag, line)
out['after'] = say(b'z', b'FETCH 1:* (FLAGS MODSEQ)')
say(b'o', b'LOGOUT')
print(json.dumps(out))
"#,
        &[&imap],
    );
    let answer = |k: &str| out[k].as_str().unwrap_or_default().to_string();
    // RFC 7162 §3.1: CHANGEDSINCE turns CONDSTORE on; it is no error.
    assert!(answer("changedsince_plain").contains("c0 OK"), "{out}");
    assert!(answer("changedsince_plain").contains("MODSEQ"), "{out}");
    for (k, tag) in [
        ("vanished_plain", "c1"),
        ("select_not_enabled", "c2"),
        ("enable_selected", "c3"),
    ] {
        assert!(answer(k).contains(&format!("{tag} BAD")), "{k}: {out}");
    }
    assert!(answer("enable").contains("* ENABLED QRESYNC"), "{out}");
    for tag in [
        "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "f1", "f2", "f3", "f4", "f5", "f6", "f7",
        "f8", "f9",
    ] {
        let a = answer(tag);
        assert!(
            a.contains(&format!("{tag} BAD")) || a.contains(&format!("{tag} NO")),
            "{tag}: {a}"
        );
        assert!(!a.contains("EXISTS"), "nothing selected by {tag}: {a}");
    }
    assert!(answer("select").contains("s1 OK"), "{out}");
    // Nothing changed: the one message, its flags as they were.
    let after = answer("after");
    assert!(after.contains("* 1 FETCH (FLAGS () MODSEQ"), "{after}");
    assert!(!after.contains("* 2 FETCH"), "{after}");
    server.stop();
}
