//! IMAP against the real `folio serve` with two more clients nobody here
//! wrote: the `imapclient` library (PyPI) and `mbsync` (Debian's isync),
//! a mail synchroniser that keeps a local Maildir and the server's
//! mailboxes the same both ways. Both are installed by
//! `scripts/install-mail-clients.sh` on first miss (`common::mail_clients`).

mod common;
use common::{ok, users_dir, Server};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const SETTINGS: &str = "imap_listen = \"127.0.0.1:0\"\nshutdown_grace_secs = 2\n\
    [mail]\nboxes = 1\n";

fn mail_dir() -> tempfile::TempDir {
    let tmp = users_dir(&["bob"]);
    let d = tmp.path();
    ok(d, &["mail", "create-user", "bob"], "");
    std::fs::write(d.join("folio.toml"), SETTINGS).unwrap();
    tmp
}

#[test]
fn imapclient_files_copies_moves_and_renames() {
    common::mail_clients();
    let tmp = mail_dir();
    let server = Server::start(tmp.path());
    let imap = server.imap.clone().unwrap();
    let out = common::python(
        r#"
import json, sys
from imapclient import IMAPClient
host, port = sys.argv[1].rsplit(':', 1)
c = IMAPClient(host, port=int(port), ssl=False)
c.login('bob', 'bob-password')
out = {'caps': sorted(x.decode() for x in c.capabilities())}
c.create_folder('Archive')
out['appended'] = [c.append('INBOX', b'Subject: s%d\r\n\r\nbody\r\n' % i,
                            flags=[b'\\Flagged'] if i == 0 else []).decode() for i in range(3)]
sel = c.select_folder('INBOX')
out['exists'] = sel[b'EXISTS']
uids = c.search(['ALL'])
out['uids'] = uids
c.add_flags(uids[1], [b'\\Seen', b'work'])
flags = c.get_flags(uids)
out['flags'] = {str(u): sorted(f.decode() for f in fl) for u, fl in flags.items()}
c.copy(uids[1], 'Archive')
c.move(uids[2], 'Archive')
out['inbox_left'] = c.search(['ALL'])
out['flagged'] = c.search(['FLAGGED'])
ns = c.namespace()
out['namespace'] = [[p.decode() if isinstance(p, bytes) else p for p in n] for n in ns.personal]
c.unselect_folder()
c.rename_folder('Archive', 'Done')
out['folders'] = sorted(f[2] for f in c.list_folders())
st = c.folder_status('Done', [b'MESSAGES', b'UNSEEN'])
out['done'] = {k.decode(): v for k, v in st.items()}
c.select_folder('Done')
done = c.search(['ALL'])
out['done_flags'] = {str(u): sorted(f.decode() for f in fl) for u, fl in c.get_flags(done).items()}
c.delete_messages(done[0])
c.expunge()
c.select_folder('INBOX')
out['inbox_after'] = {str(u): sorted(f.decode() for f in fl) for u, fl in c.get_flags(c.search(['ALL'])).items()}
c.logout()
print(json.dumps(out))
"#,
        &[&imap],
    );
    let caps = out["caps"].to_string();
    for c in [
        "MOVE",
        "UIDPLUS",
        "NAMESPACE",
        "ENABLE",
        "IDLE",
        "SPECIAL-USE",
    ] {
        assert!(caps.contains(c), "{c} in {caps}");
    }
    for a in out["appended"].as_array().unwrap() {
        assert!(a.as_str().unwrap().contains("APPENDUID"), "{out}");
    }
    assert_eq!(out["exists"], 3);
    let uids: Vec<u64> = out["uids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_u64().unwrap())
        .collect();
    assert_eq!(
        out["flags"][uids[1].to_string()],
        common::json(r#"["\\Seen","work"]"#)
    );
    assert_eq!(
        out["inbox_left"],
        common::json(&format!("[{},{}]", uids[0], uids[1]))
    );
    assert_eq!(out["flagged"], common::json(&format!("[{}]", uids[0])));
    assert_eq!(out["namespace"], common::json(r#"[["","/"]]"#));
    let folders = out["folders"].to_string();
    assert!(
        folders.contains("\"Done\"") && !folders.contains("Archive"),
        "{folders}"
    );
    assert_eq!(out["done"]["MESSAGES"], 2, "{out}");
    assert_eq!(out["done"]["UNSEEN"], 1, "the copy kept \\Seen: {out}");
    let done_flags = out["done_flags"].to_string();
    assert!(
        done_flags.contains("work"),
        "keywords go with a copy: {done_flags}"
    );
    // Expunging the copy in Done left the original in INBOX as it was.
    assert_eq!(
        out["inbox_after"][uids[1].to_string()],
        common::json(r#"["\\Seen","work"]"#),
        "{out}"
    );
    server.stop();
}

/// CONDSTORE through imapclient: HIGHESTMODSEQ from the mail file's
/// change sequence, FETCH CHANGEDSINCE answering only what changed (here,
/// a flag set by another session), STORE UNCHANGEDSINCE refusing a stale
/// change; and the mod-sequences survive a restart.
#[test]
fn imapclient_resyncs_by_modseq() {
    common::mail_clients();
    let tmp = mail_dir();
    let server = Server::start(tmp.path());
    let imap = server.imap.clone().unwrap();
    let script = r#"
import json, sys
from imapclient import IMAPClient
host, port = sys.argv[1].rsplit(':', 1)
def client():
    c = IMAPClient(host, port=int(port), ssl=False)
    c.login('bob', 'bob-password')
    return c
c = client()
out = {'enabled': [x.decode() for x in c.enable('CONDSTORE')]}
for i in range(4):
    c.append('INBOX', b'Subject: r%d\r\n\r\nbody\r\n' % i)
sel = c.select_folder('INBOX')
high = sel[b'HIGHESTMODSEQ']
uids = c.search(['ALL'])
before = c.fetch(uids, ['MODSEQ', 'FLAGS'])
out['modseqs'] = [before[u][b'MODSEQ'][0] for u in uids]
out['high'] = high
other = client()
other.select_folder('INBOX')
other.add_flags(uids[2], [b'\\Seen'])
other.logout()
c.noop()
changed = c.fetch(uids, ['FLAGS'], modifiers=['CHANGEDSINCE %d' % high])
out['changed'] = sorted(changed.keys())
out['changed_modseq'] = changed[uids[2]][b'MODSEQ'][0]
c.logout()
print(json.dumps(out))
"#;
    let out = common::python(script, &[&imap]);
    assert_eq!(out["enabled"], common::json(r#"["CONDSTORE"]"#), "{out}");
    let high = out["high"].as_u64().unwrap();
    let modseqs: Vec<u64> = out["modseqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_u64().unwrap())
        .collect();
    assert!(modseqs.iter().all(|&m| m >= 1 && m <= high), "{out}");
    let uids: Vec<u64> = out["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_u64().unwrap())
        .collect();
    assert_eq!(
        uids.len(),
        1,
        "only the message another session changed: {out}"
    );
    assert!(out["changed_modseq"].as_u64().unwrap() > high, "{out}");

    // UNCHANGEDSINCE through imaplib: a store based on the old
    // HIGHESTMODSEQ is refused for the message changed since.
    let stale = common::python(
        r#"
import imaplib, json, sys
host, port = sys.argv[1].rsplit(':', 1)
m = imaplib.IMAP4(host, int(port))
m.login('bob', 'bob-password')
typ, _ = m.select('INBOX')
typ, data = m.uid('FETCH', '1:*', '(UID MODSEQ)')
rows = [d.decode() for d in data]
typ, r = m._simple_command('STORE', '1:*', '(UNCHANGEDSINCE %s)' % sys.argv[2], '+FLAGS', '(\\Flagged)')
modified = m.response('MODIFIED')[1][0]
m.response('FETCH')  # the STORE's own FETCH answers, read
typ, data = m.fetch('1:*', '(FLAGS)')
flags = [d.decode() for d in data]
m.logout()
print(json.dumps({'store': typ, 'modified': modified.decode() if modified else None, 'flags': flags, 'rows': rows}))
"#,
        &[&imap, &high.to_string()],
    );
    assert_eq!(stale["store"], "OK", "{stale}");
    assert_eq!(stale["modified"], "3", "the message changed since: {stale}");
    let flags = stale["flags"].to_string();
    assert_eq!(flags.matches("Flagged").count(), 3, "{flags}");
    assert!(
        flags.contains("3 (FLAGS (\\\\Seen))"),
        "left alone: {flags}"
    );
    server.stop();
    // After a restart the mod-sequences are the same (they are the
    // documents' change sequence numbers).
    let server = Server::start(tmp.path());
    let imap = server.imap.clone().unwrap();
    let again = common::python(
        r#"
import imaplib, json, sys
host, port = sys.argv[1].rsplit(':', 1)
m = imaplib.IMAP4(host, int(port))
m.login('bob', 'bob-password')
m.select('INBOX')
typ, data = m.uid('FETCH', '1:*', '(UID MODSEQ)')
m.logout()
print(json.dumps([d.decode() for d in data]))
"#,
        &[&imap],
    );
    assert!(again.to_string().contains("MODSEQ ("), "{again}");
    server.stop();
}

/// One message of a Maildir: its subject and its flags (the letters after
/// `:2,` in its file name).
fn maildir(dir: &Path) -> BTreeMap<String, (String, PathBuf)> {
    let mut out = BTreeMap::new();
    for sub in ["cur", "new"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let path = e.unwrap().path();
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            let subject = text
                .lines()
                .find_map(|l| l.strip_prefix("Subject: "))
                .unwrap_or("")
                .trim()
                .to_string();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let flags = name.split_once(":2,").map_or("", |(_, f)| f).to_string();
            out.insert(subject, (flags, path));
        }
    }
    out
}

fn mbsync(config: &Path) -> String {
    let out = Command::new("mbsync")
        .arg("-c")
        .arg(config)
        .arg("-a")
        .output()
        .expect("mbsync runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "mbsync failed: {said}");
    said
}

/// What the server holds, per mailbox: subject → flags.
fn server_side(imap: &str) -> serde_json::Value {
    common::python(
        r#"
import imaplib, json, sys
host, port = sys.argv[1].rsplit(':', 1)
m = imaplib.IMAP4(host, int(port))
m.login('bob', 'bob-password')
out = {}
for box in ['INBOX', 'Archive', 'Laptop']:
    typ, n = m.select(box, readonly=True)
    if typ != 'OK':
        continue
    got = {}
    if int(n[0]) > 0:
        typ, data = m.fetch('1:*', '(FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
        for x in data:
            if isinstance(x, tuple):
                subject = x[1].decode().split(':', 1)[1].strip()
                flags = x[0].decode().split('FLAGS (')[1].split(')')[0]
                got[subject] = flags
    out[box] = got
m.logout()
print(json.dumps(out))
"#,
        &[imap],
    )
}

fn server_do(imap: &str, script: &str) {
    let full = format!(
        "import imaplib, json, sys\nhost, port = sys.argv[1].rsplit(':', 1)\n\
         m = imaplib.IMAP4(host, int(port))\nm.login('bob', 'bob-password')\n{script}\n\
         m.logout()\nprint('{{}}')\n"
    );
    common::python(&full, &[imap]);
}

fn write_maildir_message(dir: &Path, name: &str, text: &str) {
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("new").join(name), text).unwrap();
}

/// mbsync keeps a Maildir and the mail file the same both ways: a first
/// sync brings down every folder and brings up a folder made on the
/// laptop; then a flag changed on each side, a message written on each
/// side and a message deleted on the laptop reach the other side.
#[test]
fn mbsync_syncs_a_mail_file_both_ways() {
    common::mail_clients();
    let tmp = mail_dir();
    let server = Server::start(tmp.path());
    let imap = server.imap.clone().unwrap();
    let port = imap.rsplit(':').next().unwrap().to_string();
    server_do(
        &imap,
        r#"m.create('Archive')
m.append('INBOX', '(\\Flagged)', None, b'Subject: first\r\nMessage-ID: <first@x>\r\n\r\none\r\n')
m.append('INBOX', None, None, b'Subject: second\r\nMessage-ID: <second@x>\r\n\r\ntwo\r\n')
m.append('Archive', '(\\Seen)', None, b'Subject: old\r\nMessage-ID: <old@x>\r\n\r\nthree\r\n')"#,
    );
    let local = tempfile::tempdir().unwrap();
    let mail = local.path().join("mail");
    write_maildir_message(
        &mail.join("Laptop"),
        "1700000000.1.laptop",
        "Subject: written offline\r\nMessage-ID: <offline@x>\r\n\r\nfour\r\n",
    );
    let config = local.path().join("mbsyncrc");
    std::fs::write(
        &config,
        format!(
            "IMAPAccount folio\nHost 127.0.0.1\nPort {port}\nUser bob\nPass bob-password\n\
             SSLType None\nAuthMechs LOGIN\n\n\
             IMAPStore remote\nAccount folio\n\n\
             MaildirStore local\nPath {m}/\nInbox {m}/INBOX\nSubFolders Verbatim\n\n\
             Channel bob\nFar :remote:\nNear :local:\nPatterns INBOX Archive Laptop\n\
             Create Both\nExpunge Both\nSyncState *\n",
            m = mail.display()
        ),
    )
    .unwrap();

    // First sync: both sides hold everything.
    mbsync(&config);
    let inbox = maildir(&mail.join("INBOX"));
    assert_eq!(
        inbox.keys().collect::<Vec<_>>(),
        ["first", "second"],
        "{inbox:?}"
    );
    assert_eq!(inbox["first"].0, "F", "\\Flagged came down as F");
    assert_eq!(inbox["second"].0, "");
    let archive = maildir(&mail.join("Archive"));
    assert_eq!(archive["old"].0, "S", "{archive:?}");
    let remote = server_side(&imap);
    assert!(
        remote["Laptop"].get("written offline").is_some(),
        "the laptop's folder went up: {remote}"
    );

    // A change on each side.
    let (flags, path) = &inbox["second"];
    assert_eq!(flags, "");
    let seen = path.with_file_name(format!(
        "{}:2,S",
        path.file_name()
            .unwrap()
            .to_string_lossy()
            .split(":2,")
            .next()
            .unwrap()
    ));
    let seen = seen
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("cur")
        .join(seen.file_name().unwrap());
    std::fs::rename(path, &seen).unwrap();
    write_maildir_message(
        &mail.join("Archive"),
        "1700000001.2.laptop",
        "Subject: filed on the laptop\r\nMessage-ID: <filed@x>\r\n\r\nfive\r\n",
    );
    server_do(
        &imap,
        r#"m.select('INBOX')
typ, found = m.search(None, 'SUBJECT', 'first')
m.store(found[0].decode(), '+FLAGS', '\\Answered')
m.append('INBOX', None, None, b'Subject: late\r\nMessage-ID: <late@x>\r\n\r\nsix\r\n')"#,
    );
    mbsync(&config);
    let remote = server_side(&imap);
    assert!(
        remote["INBOX"]["second"]
            .as_str()
            .unwrap()
            .contains("\\Seen"),
        "the laptop's \\Seen went up: {remote}"
    );
    assert!(
        remote["Archive"].get("filed on the laptop").is_some(),
        "{remote}"
    );
    let inbox = maildir(&mail.join("INBOX"));
    assert_eq!(
        inbox["first"].0, "FR",
        "\\Answered came down as R: {inbox:?}"
    );
    assert!(inbox.contains_key("late"), "{inbox:?}");

    // A deletion on the laptop reaches the server.
    let archive = maildir(&mail.join("Archive"));
    std::fs::remove_file(&archive["old"].1).unwrap();
    mbsync(&config);
    let remote = server_side(&imap);
    assert!(remote["Archive"].get("old").is_none(), "{remote}");
    assert!(
        remote["Archive"].get("filed on the laptop").is_some(),
        "{remote}"
    );
    assert_eq!(remote["INBOX"].as_object().unwrap().len(), 3, "{remote}");
    // A sync with nothing changed changes nothing.
    mbsync(&config);
    assert_eq!(server_side(&imap), remote);
    assert_eq!(maildir(&mail.join("INBOX")).len(), 3);
    assert!(!server.log().contains("panicked"), "{}", server.log());
    server.stop();
}
