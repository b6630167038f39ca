//! IMAP writes go through the mail file's ACL like every other door, and
//! APPEND keeps the date the client gave: driven by Python's `imaplib`
//! against the real `folio serve`. A person whose access to their mail
//! file is lowered to Reader can still read it, but APPEND, STORE,
//! EXPUNGE and UID EXPUNGE are refused with a tagged NO and change
//! nothing.

mod common;
use common::{ok, users_dir, Server};

const SETTINGS: &str = "imap_listen = \"127.0.0.1:0\"\nshutdown_grace_secs = 2\n\
    [mail]\nboxes = 1\n";

const READER_ONLY: &str = r#"{"default":"noaccess","anonymous":"noaccess","entries":[
  {"name":"admin","level":"manager"},{"name":"bob","level":"reader"}]}"#;

#[test]
fn append_keeps_its_date_and_a_reader_cannot_append_store_or_expunge() {
    common::mail_clients();
    let tmp = users_dir(&["bob"]);
    let d = tmp.path();
    ok(d, &["mail", "create-user", "bob"], "");
    std::fs::write(d.join("folio.toml"), SETTINGS).unwrap();
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let first = common::python(
        r#"
import imaplib, json, sys
host, port = sys.argv[1].rsplit(':', 1)
m = imaplib.IMAP4(host, int(port))
m.login('bob', 'bob-password')
dated = m.append('INBOX', None, '"01-Feb-2020 10:30:00 +0200"', b'Subject: old\r\n\r\nold\r\n')
undated = m.append('INBOX', None, None, b'Subject: new\r\n\r\nnew\r\n')
bad = []
for date in ['"31-Feb-2020 10:30:00 +0200"', '"yesterday"', '"01-Feb-2020 10:30:00"']:
    try:
        bad.append(m.append('INBOX', None, date, b'Subject: x\r\n\r\nx\r\n')[0])
    except imaplib.IMAP4.error as e:
        bad.append(str(e))
m.select('INBOX')
typ, data = m.fetch('1:*', '(INTERNALDATE)')
m.store('2', '+FLAGS', '(\\Deleted)')
m.logout()
print(json.dumps({'dated': dated[0], 'undated': undated[0], 'bad': bad,
                  'dates': [d.decode() for d in data]}))
"#,
        &[&imap],
    );
    assert_eq!(first["dated"], "OK", "{first}");
    let dates = first["dates"].to_string();
    assert!(
        dates.contains("INTERNALDATE \\\"01-Feb-2020 08:30:00 +0000\\\""),
        "the client's date, kept: {dates}"
    );
    assert_eq!(
        first["dates"].as_array().unwrap().len(),
        2,
        "the badly dated APPENDs stored nothing: {first}"
    );
    for b in first["bad"].as_array().unwrap() {
        assert!(b.as_str().unwrap().contains("BAD"), "{first}");
    }
    server.stop();

    // Bob is only a Reader of his mail file now.
    ok(d, &["acl", "set", "mail/bob.fdb"], READER_ONLY);
    let server = Server::start(d);
    let imap = server.imap.clone().unwrap();
    let reader = common::python(
        r#"
import imaplib, json, sys
host, port = sys.argv[1].rsplit(':', 1)
m = imaplib.IMAP4(host, int(port))
m.login('bob', 'bob-password')
out = {}
def answer(f):
    try:
        typ, data = f()
        return [typ, [d.decode() if isinstance(d, bytes) else str(d) for d in data]]
    except imaplib.IMAP4.error as e:
        return ['error', str(e)]
out['append'] = answer(lambda: m.append('INBOX', None, None, b'Subject: no\r\n\r\nno\r\n'))
out['select'] = answer(lambda: m.select('INBOX'))
out['store'] = answer(lambda: m.store('1', '+FLAGS', '(\\Flagged)'))
out['expunge'] = answer(lambda: m.expunge())
out['uid_expunge'] = answer(lambda: m.uid('EXPUNGE', '1:*'))
out['move'] = answer(lambda: m._simple_command('MOVE', '1', 'Sent'))
out['flags'] = answer(lambda: m.fetch('1:*', '(FLAGS)'))
out['status'] = answer(lambda: m.status('INBOX', '(MESSAGES)'))
m.logout()
print(json.dumps(out))
"#,
        &[&imap],
    );
    assert_eq!(reader["select"][0], "OK", "a Reader reads: {reader}");
    for k in ["append", "store", "expunge", "uid_expunge", "move"] {
        let a = reader[k].to_string();
        assert!(
            a.contains("NO") || a.contains("error"),
            "{k} refused: {reader}"
        );
        assert!(a.contains("access"), "{k} says why: {reader}");
    }
    assert!(
        reader["status"].to_string().contains("MESSAGES 2"),
        "nothing added or removed: {reader}"
    );
    let flags = reader["flags"].to_string();
    assert!(
        flags.contains("1 (FLAGS ())") && flags.contains("2 (FLAGS (\\\\Deleted))"),
        "flags as they were: {flags}"
    );
    server.stop();
}
