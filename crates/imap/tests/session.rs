//! The session scripted without sockets: a model store (a `BTreeMap` of
//! messages per mailbox) behind it, whole conversations in, the bytes it
//! would write out. And arbitrary bytes in: never a panic, every answer
//! well-formed enough to end in CRLF.

use imap::{
    Accounts, ImapError, ImapResult, LoginRefused, MailboxInfo, Mailstore, MessageMeta, Session,
    SessionLimits, Snapshot, SpecialUse, Step, Transfer, Transport,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Mailbox → UID → (flags, bytes).
type Boxes = BTreeMap<String, BTreeMap<u32, (Vec<String>, Vec<u8>)>>;

#[derive(Clone, Default)]
struct Model {
    boxes: Arc<Mutex<Boxes>>,
    next_uid: Arc<Mutex<u32>>,
    /// UID → mod-sequence (1 until its flags change).
    modseq: Arc<Mutex<BTreeMap<u32, u64>>>,
    /// Expunged UID → the mod-sequence of its expunge.
    expunged: Arc<Mutex<BTreeMap<u32, u64>>>,
}

impl Model {
    fn new() -> Model {
        let m = Model::default();
        *m.next_uid.lock().unwrap() = 1;
        for b in ["INBOX", "Sent"] {
            m.boxes.lock().unwrap().insert(b.into(), BTreeMap::new());
        }
        m
    }
}

impl Mailstore for Model {
    fn list(&self) -> ImapResult<Vec<MailboxInfo>> {
        Ok(self
            .boxes
            .lock()
            .unwrap()
            .keys()
            .map(|n| MailboxInfo {
                name: n.clone(),
                special: (n == "Sent").then_some(SpecialUse::Sent),
                computed: false,
            })
            .collect())
    }
    fn snapshot(&self, mailbox: &str) -> ImapResult<Snapshot> {
        let boxes = self.boxes.lock().unwrap();
        let b = boxes
            .get(mailbox)
            .ok_or_else(|| ImapError::NoMailbox(mailbox.into()))?;
        // Not in the struct expression: its guard would live through the
        // messages' own locking.
        let highest = self
            .modseq
            .lock()
            .unwrap()
            .values()
            .copied()
            .max()
            .unwrap_or(1);
        Ok(Snapshot {
            uid_validity: 7,
            uid_next: *self.next_uid.lock().unwrap(),
            highest_modseq: highest,
            messages: b
                .iter()
                .map(|(uid, (flags, bytes))| MessageMeta {
                    uid: *uid,
                    flags: flags.clone(),
                    internal_date: 0,
                    size: bytes.len() as u32,
                    modseq: *self.modseq.lock().unwrap().get(uid).unwrap_or(&1),
                })
                .collect(),
        })
    }
    fn message(&self, mailbox: &str, uid: u32) -> ImapResult<Vec<u8>> {
        let boxes = self.boxes.lock().unwrap();
        boxes
            .get(mailbox)
            .and_then(|b| b.get(&uid))
            .map(|m| m.1.clone())
            .ok_or(ImapError::NoMessage(uid))
    }
    fn set_flags(
        &self,
        mailbox: &str,
        uid: u32,
        flags: &[String],
        unchanged_since: Option<u64>,
    ) -> ImapResult<Option<u64>> {
        let mut boxes = self.boxes.lock().unwrap();
        let m = boxes
            .get_mut(mailbox)
            .and_then(|b| b.get_mut(&uid))
            .ok_or(ImapError::NoMessage(uid))?;
        let mut seqs = self.modseq.lock().unwrap();
        let now = *seqs.get(&uid).unwrap_or(&1);
        if unchanged_since.is_some_and(|limit| now > limit) {
            return Ok(None);
        }
        m.0 = flags.to_vec();
        let next = seqs.values().copied().max().unwrap_or(1) + 1;
        seqs.insert(uid, next);
        Ok(Some(next))
    }
    fn expunge(&self, mailbox: &str, uids: &[u32]) -> ImapResult<()> {
        let mut boxes = self.boxes.lock().unwrap();
        let b = boxes.get_mut(mailbox).unwrap();
        let mut seqs = self.modseq.lock().unwrap();
        for u in uids {
            b.remove(u);
            // The expunge moves the mailbox's mod-sequence up, as a
            // deletion stub's change does a mail file's.
            let next = seqs.values().copied().max().unwrap_or(1) + 1;
            seqs.insert(0, next);
            self.expunged.lock().unwrap().insert(*u, next);
        }
        Ok(())
    }
    fn vanished_since(&self, _mailbox: &str, since: u64, uid_next: u32) -> ImapResult<Vec<u32>> {
        Ok(self
            .expunged
            .lock()
            .unwrap()
            .iter()
            .filter(|(u, m)| **m > since && **u < uid_next)
            .map(|(u, _)| *u)
            .collect())
    }
    fn append(
        &self,
        mailbox: &str,
        flags: &[String],
        _date: Option<i64>,
        message: &[u8],
    ) -> ImapResult<u32> {
        let mut boxes = self.boxes.lock().unwrap();
        let b = boxes
            .get_mut(mailbox)
            .ok_or_else(|| ImapError::NoMailbox(mailbox.into()))?;
        let mut next = self.next_uid.lock().unwrap();
        let uid = *next;
        *next += 1;
        b.insert(uid, (flags.to_vec(), message.to_vec()));
        Ok(uid)
    }
    fn create(&self, mailbox: &str) -> ImapResult<()> {
        let mut boxes = self.boxes.lock().unwrap();
        if boxes.contains_key(mailbox) {
            return Err(ImapError::MailboxExists(mailbox.into()));
        }
        boxes.insert(mailbox.into(), BTreeMap::new());
        Ok(())
    }
    fn delete(&self, mailbox: &str) -> ImapResult<()> {
        self.boxes.lock().unwrap().remove(mailbox);
        Ok(())
    }
    fn transfer(&self, from: &str, uids: &[u32], to: &str, how: Transfer) -> ImapResult<Vec<u32>> {
        let mut boxes = self.boxes.lock().unwrap();
        if !boxes.contains_key(to) {
            return Err(ImapError::NoMailbox(to.into()));
        }
        let mut next = self.next_uid.lock().unwrap();
        let mut new = Vec::new();
        for u in uids {
            let m = boxes[from]
                .get(u)
                .cloned()
                .ok_or(ImapError::NoMessage(*u))?;
            if how == Transfer::Move {
                boxes.get_mut(from).unwrap().remove(u);
            }
            boxes.get_mut(to).unwrap().insert(*next, m);
            new.push(*next);
            *next += 1;
        }
        Ok(new)
    }
    fn rename(&self, from: &str, to: &str) -> ImapResult<()> {
        let mut boxes = self.boxes.lock().unwrap();
        if boxes.contains_key(to) {
            return Err(ImapError::MailboxExists(to.into()));
        }
        let b = boxes
            .remove(from)
            .ok_or_else(|| ImapError::NoMailbox(from.into()))?;
        boxes.insert(to.into(), b);
        Ok(())
    }
    fn change_marker(&self) -> u64 {
        *self.next_uid.lock().unwrap() as u64
    }
}

struct OneUser(Model);

impl Accounts for OneUser {
    fn login(&self, user: &str, password: &str) -> Result<Box<dyn Mailstore>, LoginRefused> {
        if user == "bob" && password == "secret" {
            Ok(Box::new(self.0.clone()))
        } else {
            Err(LoginRefused::BadCredentials)
        }
    }
}

fn session(model: &Model, transport: Transport) -> Session {
    Session::new(
        Arc::new(OneUser(model.clone())),
        SessionLimits {
            max_literal_bytes: 1 << 10,
            ..SessionLimits::default()
        },
        transport,
    )
}

const LOOPBACK: Transport = Transport {
    tls: false,
    loopback: true,
    starttls: false,
};

/// Feeds `input`, runs the session until it wants more, returns what it
/// wrote (and whether it closed).
fn talk(s: &mut Session, input: &[u8]) -> (String, bool) {
    s.receive(input);
    let mut out = Vec::new();
    loop {
        match s.step() {
            Step::Write(b) => out.extend(b),
            Step::NeedInput => return (String::from_utf8_lossy(&out).into_owned(), false),
            Step::StartTls | Step::Pause(_) => continue,
            Step::Close => return (String::from_utf8_lossy(&out).into_owned(), true),
        }
    }
}

#[test]
fn a_whole_conversation() {
    let model = Model::new();
    model
        .append("INBOX", &[], None, b"Subject: hi\r\n\r\nhello\r\n")
        .unwrap();
    let mut s = session(&model, LOOPBACK);
    let (greeting, _) = talk(&mut s, b"");
    assert!(
        greeting.starts_with("* OK [CAPABILITY IMAP4REV1"),
        "{greeting}"
    );
    let (out, _) = talk(&mut s, b"a1 LOGIN bob wrong\r\n");
    assert!(
        out.contains("a1 NO [AUTHENTICATIONFAILED] wrong user name or password"),
        "{out}"
    );
    let (out, _) = talk(&mut s, b"a2 LOGIN nobody wrong\r\n");
    assert!(
        out.contains("a2 NO [AUTHENTICATIONFAILED] wrong user name or password"),
        "{out}"
    );
    let (out, _) = talk(&mut s, b"a3 LOGIN bob secret\r\n");
    assert!(out.contains("a3 OK"), "{out}");
    let (out, _) = talk(&mut s, b"a4 LIST \"\" *\r\n");
    assert!(
        out.contains("* LIST (\\HasNoChildren \\Sent) \"/\" Sent"),
        "{out}"
    );
    let (out, _) = talk(&mut s, b"a5 SELECT INBOX\r\n");
    assert!(out.contains("* 1 EXISTS"), "{out}");
    assert!(out.contains("[UIDVALIDITY 7]"), "{out}");
    assert!(out.contains("a5 OK [READ-WRITE]"), "{out}");
    let (out, _) = talk(&mut s, b"a6 FETCH 1 (BODY[] FLAGS)\r\n");
    assert!(
        out.contains("BODY[] {22}\r\nSubject: hi\r\n\r\nhello\r\n"),
        "{out}"
    );
    assert!(out.contains("\\Seen"), "BODY[] sets \\Seen: {out}");
    let (out, _) = talk(&mut s, b"a7 UID SEARCH UNSEEN\r\n");
    assert!(out.contains("* SEARCH\r\n"), "{out}");
    // A message arrives: NOOP tells of it.
    model
        .append("INBOX", &[], None, b"Subject: two\r\n\r\n2\r\n")
        .unwrap();
    let (out, _) = talk(&mut s, b"a8 NOOP\r\n");
    assert!(out.contains("* 2 EXISTS"), "{out}");
    let (out, _) = talk(&mut s, b"a9 STORE 1 +FLAGS (\\Deleted)\r\n");
    assert!(
        out.contains("* 1 FETCH (FLAGS (\\Seen \\Deleted))"),
        "{out}"
    );
    let (out, _) = talk(&mut s, b"a10 EXPUNGE\r\n");
    assert!(out.contains("* 1 EXPUNGE"), "{out}");
    let (out, _) = talk(&mut s, b"a11 FETCH 5 FLAGS\r\n");
    assert!(out.contains("a11 BAD"), "{out}");
    let (out, closed) = talk(&mut s, b"a12 LOGOUT\r\n");
    assert!(out.contains("* BYE") && out.contains("a12 OK"), "{out}");
    assert!(closed);
}

#[test]
fn copy_and_move_answer_copyuid_and_expunge_in_order() {
    let model = Model::new();
    for i in 0..3 {
        model
            .append(
                "INBOX",
                &[],
                None,
                format!("Subject: {i}\r\n\r\n{i}\r\n").as_bytes(),
            )
            .unwrap();
    }
    let mut s = session(&model, LOOPBACK);
    talk(&mut s, b"");
    talk(&mut s, b"a1 LOGIN bob secret\r\n");
    let (out, _) = talk(&mut s, b"a2 CAPABILITY\r\n");
    assert!(
        out.contains(
            "* CAPABILITY IMAP4REV1 IDLE UIDPLUS UNSELECT SPECIAL-USE MOVE NAMESPACE ENABLE CONDSTORE QRESYNC\r\n"
        ),
        "{out}"
    );
    let (out, _) = talk(&mut s, b"a3 NAMESPACE\r\n");
    assert!(
        out.contains("* NAMESPACE ((\"\" \"/\")) NIL NIL\r\n"),
        "{out}"
    );
    let (out, _) = talk(&mut s, b"a4 ENABLE FOO\r\n");
    assert!(out.contains("* ENABLED\r\na4 OK"), "{out}");
    talk(&mut s, b"a5 CREATE Archive\r\n");
    talk(&mut s, b"a6 SELECT INBOX\r\n");
    let (out, _) = talk(&mut s, b"a7 ENABLE CONDSTORE\r\n");
    assert!(out.contains("a7 BAD"), "ENABLE after SELECT: {out}");
    let (out, _) = talk(&mut s, b"a8 COPY 1:2 Archive\r\n");
    assert!(out.contains("a8 OK [COPYUID 7 1,2 4,5]"), "{out}");
    let (out, _) = talk(&mut s, b"a9 UID MOVE 2 Archive\r\n");
    let copyuid = out.find("* OK [COPYUID 7 2 6]").expect(&out);
    let expunge = out.find("* 2 EXPUNGE").expect(&out);
    let done = out.find("a9 OK").expect(&out);
    assert!(copyuid < expunge && expunge < done, "RFC 6851 order: {out}");
    let (out, _) = talk(&mut s, b"a10 MOVE 1 Nowhere\r\n");
    assert!(out.contains("a10 NO [TRYCREATE]"), "{out}");
    let (out, _) = talk(&mut s, b"a11 UID MOVE 99 Archive\r\n");
    assert!(out.contains("a11 OK"), "no such UID, nothing moved: {out}");
    let (out, _) = talk(&mut s, b"a12 MOVE 9 Archive\r\n");
    assert!(out.contains("a12 BAD"), "{out}");
    let (out, _) = talk(&mut s, b"a13 EXAMINE INBOX\r\n");
    assert!(out.contains("* 2 EXISTS"), "{out}");
    let (out, _) = talk(&mut s, b"a14 MOVE 1 Archive\r\n");
    assert!(out.contains("a14 NO"), "read-only: {out}");
    let (out, _) = talk(&mut s, b"a15 RENAME Archive Kept\r\n");
    assert!(out.contains("a15 OK"), "{out}");
    let (out, _) = talk(&mut s, b"a16 STATUS Kept (MESSAGES)\r\n");
    assert!(out.contains("(MESSAGES 3)"), "{out}");
    let (out, _) = talk(&mut s, b"a17 RENAME INBOX Other\r\n");
    assert!(out.contains("a17 NO"), "{out}");
}

#[test]
fn condstore_tells_what_changed_since_and_refuses_stale_stores() {
    let model = Model::new();
    for i in 0..3 {
        model
            .append(
                "INBOX",
                &[],
                None,
                format!("Subject: {i}\r\n\r\n{i}\r\n").as_bytes(),
            )
            .unwrap();
    }
    let mut s = session(&model, LOOPBACK);
    talk(&mut s, b"");
    talk(&mut s, b"a1 LOGIN bob secret\r\n");
    let (out, _) = talk(&mut s, b"a2 SELECT INBOX (CONDSTORE)\r\n");
    assert!(out.contains("[HIGHESTMODSEQ 1]"), "{out}");
    let (out, _) = talk(&mut s, b"a3 STORE 2 +FLAGS (\\Seen)\r\n");
    assert!(
        out.contains("* 2 FETCH (FLAGS (\\Seen) MODSEQ (2))"),
        "CONDSTORE on: MODSEQ with the flags: {out}"
    );
    let (out, _) = talk(&mut s, b"a4 FETCH 1:* (FLAGS) (CHANGEDSINCE 1)\r\n");
    assert!(out.contains("* 2 FETCH"), "{out}");
    assert!(
        !out.contains("* 1 FETCH") && !out.contains("* 3 FETCH"),
        "{out}"
    );
    assert!(
        out.contains("MODSEQ (2)"),
        "CHANGEDSINCE implies MODSEQ: {out}"
    );
    // Another session changes message 3: a store based on what this one
    // saw fails for it, and works for the others.
    model
        .set_flags("INBOX", 3, &["\\Flagged".into()], None)
        .unwrap();
    let (out, _) = talk(
        &mut s,
        b"a5 STORE 1,3 (UNCHANGEDSINCE 2) +FLAGS (\\Answered)\r\n",
    );
    assert!(out.contains("a5 OK [MODIFIED 3]"), "{out}");
    assert!(
        out.contains("* 1 FETCH (FLAGS (\\Answered) MODSEQ (4))"),
        "{out}"
    );
    // The session's view moves at NOOP (another session's change).
    let (out, _) = talk(&mut s, b"a8 NOOP\r\n");
    assert!(
        out.contains("* 3 FETCH (FLAGS (\\Flagged) UID 3 MODSEQ (3))"),
        "{out}"
    );
    let (out, _) = talk(&mut s, b"a6 UID SEARCH MODSEQ 3\r\n");
    assert!(out.contains("* SEARCH 1 3 (MODSEQ 4)"), "{out}");
    let (out, _) = talk(&mut s, b"a7 STATUS INBOX (HIGHESTMODSEQ)\r\n");
    assert!(out.contains("HIGHESTMODSEQ 4"), "{out}");
    let (out, _) = talk(&mut s, b"a9 FETCH 1 (FLAGS) (VANISHED)\r\n");
    assert!(out.contains("a9 BAD"), "{out}");
    let (out, _) = talk(&mut s, b"a10 EXAMINE INBOX\r\n");
    assert!(out.contains("* OK [CLOSED]"), "{out}");
}

#[test]
fn qresync_tells_what_vanished_and_changed_and_nothing_else() {
    let model = Model::new();
    for i in 0..6 {
        model
            .append(
                "INBOX",
                &[],
                None,
                format!("Subject: {i}\r\n\r\n{i}\r\n").as_bytes(),
            )
            .unwrap();
    }
    let mut s = session(&model, LOOPBACK);
    talk(&mut s, b"");
    talk(&mut s, b"a1 LOGIN bob secret\r\n");
    // Not enabled: SELECT (QRESYNC ...) and VANISHED are BAD, nothing
    // selected.
    let (out, _) = talk(&mut s, b"a2 SELECT INBOX (QRESYNC (7 1))\r\n");
    assert!(out.contains("a2 BAD"), "{out}");
    assert!(!out.contains("EXISTS"), "{out}");
    let (out, _) = talk(&mut s, b"a3 ENABLE QRESYNC\r\n");
    assert!(out.contains("* ENABLED QRESYNC"), "{out}");
    let (out, _) = talk(&mut s, b"a4 CAPABILITY\r\n");
    assert!(out.contains("QRESYNC"), "{out}");
    // What this client holds: everything at mod-sequence 1.
    model
        .set_flags("INBOX", 2, &["\\Seen".into()], None)
        .unwrap();
    model.expunge("INBOX", &[4, 5]).unwrap();
    let (out, _) = talk(&mut s, b"a5 SELECT INBOX (QRESYNC (7 1))\r\n");
    assert!(out.contains("* VANISHED (EARLIER) 4:5"), "{out}");
    assert!(
        out.contains("* 2 FETCH (FLAGS (\\Seen) UID 2 MODSEQ (2))"),
        "{out}"
    );
    assert_eq!(out.matches("FETCH").count(), 1, "only the change: {out}");
    assert!(out.contains("a5 OK [READ-WRITE]"), "{out}");
    // Known UIDs limit both answers; another UIDVALIDITY gets none.
    let (out, _) = talk(&mut s, b"a6 EXAMINE INBOX (QRESYNC (7 1 1:4))\r\n");
    assert!(out.contains("* VANISHED (EARLIER) 4\r\n"), "{out}");
    let (out, _) = talk(&mut s, b"a7 EXAMINE INBOX (QRESYNC (8 1))\r\n");
    assert!(!out.contains("VANISHED") && !out.contains("FETCH"), "{out}");
    // UID FETCH ... (CHANGEDSINCE n VANISHED): only in that form.
    let (out, _) = talk(
        &mut s,
        b"a8 UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)\r\n",
    );
    assert!(out.contains("* VANISHED (EARLIER) 4:5"), "{out}");
    assert!(out.contains("UID 2"), "{out}");
    let (out, _) = talk(
        &mut s,
        b"a9 FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)\r\n",
    );
    assert!(out.contains("a9 BAD"), "{out}");
    let (out, _) = talk(&mut s, b"a10 UID FETCH 1:* (FLAGS) (VANISHED)\r\n");
    assert!(out.contains("a10 BAD"), "{out}");
    // Bad mod-sequences are BAD from the parser, nothing selected anew.
    for bad in [
        &b"b1 SELECT INBOX (QRESYNC (7 0))\r\n"[..],
        b"b2 SELECT INBOX (QRESYNC (7 -1))\r\n",
        b"b3 SELECT INBOX (QRESYNC (7 99999999999999999999999))\r\n",
        b"b4 SELECT INBOX (QRESYNC (0 1))\r\n",
        b"b5 SELECT INBOX (QRESYNC 7 1)\r\n",
        b"b6 UID FETCH 1:* (FLAGS) (CHANGEDSINCE x)\r\n",
    ] {
        let (out, _) = talk(&mut s, bad);
        let tag = std::str::from_utf8(&bad[..2]).unwrap();
        assert!(out.contains(&format!("{tag} BAD")), "{out}");
    }
    // Expunges in a QRESYNC session are told as VANISHED.
    let (_, _) = talk(&mut s, b"c1 SELECT INBOX\r\n");
    talk(&mut s, b"c2 STORE 1 +FLAGS (\\Deleted)\r\n");
    let (out, _) = talk(&mut s, b"c3 EXPUNGE\r\n");
    assert!(out.contains("* VANISHED 1\r\n"), "{out}");
    assert!(!out.contains("EXPUNGE\r\n"), "{out}");
}

#[test]
fn no_passwords_in_the_clear_off_loopback() {
    let model = Model::new();
    let remote = Transport {
        tls: false,
        loopback: false,
        starttls: true,
    };
    let mut s = session(&model, remote);
    let (greeting, _) = talk(&mut s, b"");
    assert!(greeting.contains("LOGINDISABLED"), "{greeting}");
    assert!(greeting.contains("STARTTLS"), "{greeting}");
    let (out, _) = talk(&mut s, b"a1 LOGIN bob secret\r\n");
    assert!(out.contains("a1 NO [PRIVACYREQUIRED]"), "{out}");
    let (out, _) = talk(&mut s, b"a2 AUTHENTICATE PLAIN AGJvYgBzZWNyZXQ=\r\n");
    assert!(out.contains("a2 NO [PRIVACYREQUIRED]"), "{out}");
    // After STARTTLS it is allowed.
    s.receive(b"a3 STARTTLS\r\n");
    let mut wrote = Vec::new();
    loop {
        match s.step() {
            Step::Write(b) => wrote.extend(b),
            Step::StartTls => break,
            other => panic!("{other:?}: {}", String::from_utf8_lossy(&wrote)),
        }
    }
    s.tls_started();
    let (out, _) = talk(&mut s, b"a4 AUTHENTICATE PLAIN AGJvYgBzZWNyZXQ=\r\n");
    assert!(out.contains("a4 OK"), "{out}");
}

#[test]
fn a_literal_over_the_limit_is_refused_before_it_is_sent() {
    let model = Model::new();
    let mut s = session(&model, LOOPBACK);
    talk(&mut s, b"a1 LOGIN bob secret\r\n");
    let (out, _) = talk(&mut s, b"a2 APPEND INBOX {4096}\r\n");
    assert!(
        out.contains("a2 BAD literal over 1024 bytes refused"),
        "{out}"
    );
    let (out, _) = talk(&mut s, b"a3 APPEND INBOX {5}\r\n");
    assert!(out.contains("+ "), "{out}");
    let (out, _) = talk(&mut s, b"x: y\n\r\n");
    assert!(out.contains("a3 OK [APPENDUID 7 1]"), "{out}");
}

#[test]
fn refused_sign_ins_cost_time_and_end_the_session() {
    let model = Model::new();
    let mut s = session(&model, LOOPBACK);
    talk(&mut s, b"");
    let mut pauses = Vec::new();
    s.receive(b"a1 LOGIN bob x\r\na2 LOGIN bob x\r\na3 LOGIN nobody x\r\na4 LOGIN bob x\r\na5 LOGIN bob x\r\n");
    let mut out = Vec::new();
    loop {
        match s.step() {
            Step::Write(b) => out.extend(b),
            Step::Pause(p) => pauses.push(p.as_secs()),
            Step::Close => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(pauses, [1, 2, 3, 4, 5]);
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("a5 NO [AUTHENTICATIONFAILED]"), "{out}");
    assert!(
        out.ends_with("* BYE too many refused sign-ins\r\n"),
        "{out}"
    );
}

#[test]
fn too_many_bad_commands_end_the_session() {
    let model = Model::new();
    let mut s = session(&model, LOOPBACK);
    talk(&mut s, b"");
    let mut closed = false;
    for i in 0..25 {
        let (out, c) = talk(&mut s, format!("z{i} NONSENSE\r\n").as_bytes());
        closed = c;
        if c {
            assert!(out.contains("* BYE too many bad commands"), "{out}");
            break;
        }
    }
    assert!(closed);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any bytes, in any pieces, before and after signing in: no panic,
    /// and whatever is written ends a line.
    #[test]
    fn arbitrary_bytes_never_panic(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..12),
        signed_in in any::<bool>(),
    ) {
        let model = Model::new();
        model.append("INBOX", &[], None, b"Subject: hi\r\n\r\nhello\r\n").unwrap();
        let mut s = session(&model, LOOPBACK);
        talk(&mut s, b"");
        if signed_in {
            talk(&mut s, b"a LOGIN bob secret\r\nb SELECT INBOX\r\n");
        }
        for c in chunks {
            let (out, closed) = talk(&mut s, &c);
            prop_assert!(out.is_empty() || out.ends_with("\r\n"), "{:?}", out);
            if closed {
                break;
            }
        }
    }

    /// Commands from the grammar with arbitrary arguments.
    #[test]
    fn commands_with_arbitrary_arguments(
        cmd in prop::sample::select(vec!["FETCH", "UID FETCH", "STORE", "SEARCH", "UID SEARCH",
            "SELECT", "STATUS", "LIST", "APPEND", "EXPUNGE", "UID EXPUNGE", "CREATE", "DELETE",
            "EXAMINE", "CLOSE", "IDLE", "AUTHENTICATE"]),
        args in "[ -~]{0,60}",
    ) {
        let model = Model::new();
        model.append("INBOX", &[], None, b"Subject: hi\r\n\r\nhello\r\n").unwrap();
        let mut s = session(&model, LOOPBACK);
        talk(&mut s, b"a LOGIN bob secret\r\nb SELECT INBOX\r\n");
        let (out, _) = talk(&mut s, format!("t {cmd} {args}\r\n").as_bytes());
        prop_assert!(out.is_empty() || out.ends_with("\r\n"), "{:?}", out);
    }
}
