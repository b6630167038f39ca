//! Mail files: one per person, `mail/<short name>.fdb`, made from the
//! mail template and owned by the person; and drafts, the one kind of
//! message written straight into one.
//!
//! A mail file's access-control list gives its owner (the person's
//! server user) Manager access and everyone else nothing: the default and
//! anonymous levels are No Access, and there is no other entry. Server
//! administrators reach it as they reach every database; the router will
//! deliver as the server.
//!
//! Making a user is two changes, the person document and the mail file,
//! made in that order under the directory's lock
//! (`Directory::add_person_then`):
//!
//! ```text
//!   check names ─▶ person document (durable) ─▶ mail file: create, ACL, design
//!                                                    └ fails ─▶ person deleted again
//! ```
//!
//! A crash between the two leaves a person without a mail file (listed,
//! refused when mail is filed for them, put right with `remove-user` and
//! `create-user`), never a mail file nobody owns, which no command could
//! remove while the engine cannot delete a database. A mail file whose
//! ACL or views a crash cut short is completed the first time it is
//! opened through [`open_mail_file`] (`sysdb.rs`).

use crate::attach::{self, Attachment};
use crate::directory::{Directory, NewPerson, Person};
use crate::message::Message;
use crate::sysdb::{self, SystemDb};
use crate::{template, MailConfig, MailError, MailResult};
use nsf::{Acl, Database, DbPath, Engine, NsfError, Unid};
use std::sync::Arc;
use views::Views;

/// What `person`'s mail file is made of.
fn spec(person: &Person) -> SystemDb {
    SystemDb {
        path: person.mail_file.to_string(),
        title: format!("Mail of {}", person.full_name),
        design: template::design,
        acl: Acl::for_creator(Some(&person.server_user)),
    }
}

/// Makes `person`'s mail file: ACL with their server user as its only
/// entry, Manager; the template's views. Durable when this returns. A
/// file already there is refused and left alone.
pub fn create_mail_file(
    engine: &Engine,
    views: &Views,
    person: &Person,
) -> MailResult<Arc<Database>> {
    sysdb::create_new(engine, views, &spec(person)).map_err(|e| match e {
        MailError::Nsf(NsfError::DatabaseExists(_)) => MailError::MailFileExists {
            path: person.mail_file.to_string(),
        },
        e => e,
    })
}

/// Opens `person`'s mail file, completing what a crash left out of its
/// making; a missing file is `NoSuchDatabase`.
pub fn open_mail_file(
    engine: &Engine,
    views: &Views,
    person: &Person,
) -> MailResult<Arc<Database>> {
    sysdb::open_existing(engine, views, &spec(person))
}

/// Adds a person to the directory and makes their mail file (see the
/// module docs). Refused, changing nothing: a bad or taken name, and a
/// mail file already where theirs would go.
pub fn create_user(
    engine: &Engine,
    views: &Views,
    directory: &Directory<'_>,
    new: &NewPerson,
) -> MailResult<Person> {
    directory.add_person_then(new, |p| create_mail_file(engine, views, p).map(drop))
}

/// A draft as saved: where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Draft {
    pub mail_file: DbPath,
    pub unid: Unid,
}

/// Saves `msg` as a draft in `sender`'s own mail file: signed by the
/// sender, not posted (so it shows in Drafts), nothing deposited. The
/// draft and each attachment are separate commits, all durable when this
/// returns; if an attachment fails the draft is deleted again (best
/// effort: a crash meanwhile leaves the draft without it).
pub fn save_draft(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    sender: &Person,
    mut msg: Message,
    files: &mut [Attachment<'_>],
) -> MailResult<Draft> {
    sender.sign(&mut msg)?;
    msg.header_mut().posted = None;
    msg.validate()?;
    let body = msg.header().body.len();
    attach::check(body, files, config.max_message_bytes())?;
    let db = open_mail_file(engine, views, sender)?;
    let unid = db.create(msg.to_items())?.unid;
    if let Err(e) = attach::store(&db, unid, files, body, config.max_message_bytes()) {
        let _ = db.delete(unid, None, true);
        return Err(e);
    }
    Ok(Draft {
        mail_file: sender.mail_file.clone(),
        unid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{item, Address, Appointment, Header, Memo};
    use crate::sysdb::testing;
    use nsf::{AccessLevel, Timestamp};
    use views::{Row, Start};

    fn new_person(name: &str) -> NewPerson {
        NewPerson {
            name: name.into(),
            ..NewPerson::default()
        }
    }

    fn memo(to: &str) -> Message {
        let mut h = Header::new("Hello", "Body text");
        h.send_to = vec![Address::parse(to).unwrap()];
        Message::Memo(Memo { header: h })
    }

    fn unids(views: &Views, db: &Arc<Database>, view: &str) -> Vec<Unid> {
        let c = views.open(db, view).unwrap();
        c.read(&Start::Position(0), 100, false, false)
            .unwrap()
            .into_iter()
            .filter_map(|r| match r {
                Row::Entry { unid, .. } => Some(unid),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_new_user_gets_a_mail_file_only_they_can_open() {
        let (engine, views) = testing::engine();
        let dir = Directory::open(&engine, &views).unwrap();
        let p = create_user(
            &engine,
            &views,
            &dir,
            &NewPerson {
                server_user: Some("asmith".into()),
                ..new_person("Alice Smith")
            },
        )
        .unwrap();
        let db = engine.open_database("mail/alice.smith.fdb").unwrap();
        let acl = db.acl().unwrap().unwrap();
        assert_eq!(acl, Acl::for_creator(Some("asmith")));
        assert_eq!(acl.access(Some("asmith")).level(), AccessLevel::Manager);
        assert_eq!(acl.access(Some("ASMITH")).level(), AccessLevel::Manager);
        assert_eq!(acl.access(Some("bob")).level(), AccessLevel::NoAccess);
        assert_eq!(acl.access(None).level(), AccessLevel::NoAccess);
        let mut names: Vec<String> = views.list(&db).unwrap().into_iter().map(|v| v.0).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "(Notices)",
                "All Documents",
                "Calendar",
                "Drafts",
                "Inbox",
                "Sent"
            ]
        );
        assert_eq!(dir.person("alice smith").unwrap(), p);
    }

    #[test]
    fn a_mail_file_a_crash_cut_short_is_completed_when_opened() {
        let (engine, views) = testing::engine();
        let dir = Directory::open(&engine, &views).unwrap();
        let p = dir.add_person(&new_person("Carol")).unwrap();
        assert!(matches!(
            open_mail_file(&engine, &views, &p),
            Err(MailError::Nsf(NsfError::NoSuchDatabase(_)))
        ));
        // As a crash right after the file was renamed into place leaves it.
        drop(engine.create_database("mail/carol.fdb", "").unwrap());
        let db = open_mail_file(&engine, &views, &p).unwrap();
        assert_eq!(db.acl().unwrap().unwrap(), Acl::for_creator(Some("Carol")));
        assert_eq!(views.list(&db).unwrap().len(), template::design().len());
    }

    #[test]
    fn a_taken_mail_file_refuses_the_user_and_keeps_the_file() {
        let (engine, views) = testing::engine();
        let dir = Directory::open(&engine, &views).unwrap();
        let other = engine.create_database("mail/bob.fdb", "not mail").unwrap();
        other
            .create(vec![crate::message::text("Subject", "keep me")])
            .unwrap();
        let err = create_user(&engine, &views, &dir, &new_person("Bob")).unwrap_err();
        assert!(matches!(err, MailError::MailFileExists { ref path } if path == "mail/bob.fdb"));
        assert!(matches!(
            dir.resolve("bob").unwrap(),
            crate::Resolved::Unknown
        ));
        assert_eq!(other.info().unwrap().title, "not mail");
        assert!(other.acl().unwrap().is_none(), "the file is left alone");
    }

    #[test]
    fn a_draft_lands_in_drafts_of_the_senders_file_signed_by_them() {
        let (engine, views) = testing::engine();
        let dir = Directory::open(&engine, &views).unwrap();
        let alice = create_user(&engine, &views, &dir, &new_person("Alice")).unwrap();
        let mut content: &[u8] = b"attached";
        let mut files = [Attachment {
            name: "a.txt".into(),
            mime: "text/plain".into(),
            size: None,
            content: &mut content,
        }];
        let mut msg = memo("bob");
        msg.header_mut().posted = Some(Timestamp(5));
        let draft = save_draft(
            &engine,
            &views,
            &MailConfig::default(),
            &alice,
            msg,
            &mut files,
        )
        .unwrap();
        assert_eq!(draft.mail_file.as_str(), "mail/alice.fdb");
        let db = engine.open_database("mail/alice.fdb").unwrap();
        let note = db.get(draft.unid).unwrap();
        let stored = Message::from_items(&note.items).unwrap();
        assert_eq!(stored.header().from.as_ref().unwrap().addr(), "Alice");
        assert_eq!(stored.header().posted, None, "a draft is not posted");
        assert_eq!(note.attachments().next().unwrap().size, 8);
        assert_eq!(unids(&views, &db, "Drafts"), [draft.unid]);
        assert!(unids(&views, &db, "Sent").is_empty());
        // Nobody saves a draft as someone else.
        let mut forged = memo("bob");
        forged.header_mut().from = Some(Address::parse("Bob").unwrap());
        assert!(matches!(
            save_draft(
                &engine,
                &views,
                &MailConfig::default(),
                &alice,
                forged,
                &mut []
            ),
            Err(MailError::ForgedSender { .. })
        ));
    }

    #[test]
    fn the_template_views_select_what_their_names_say() {
        let (engine, views) = testing::engine();
        let dir = Directory::open(&engine, &views).unwrap();
        create_user(&engine, &views, &dir, &new_person("Alice")).unwrap();
        let db = engine.open_database("mail/alice.fdb").unwrap();
        let mut sent = memo("bob");
        sent.header_mut().posted = Some(Timestamp::now());
        let sent = db.create(sent.to_items()).unwrap().unid;
        let mut received = memo("alice").to_items();
        received.push(crate::message::datetime(
            item::POSTED_DATE,
            Timestamp::now(),
        ));
        received.push(crate::message::datetime(
            item::DELIVERED_DATE,
            Timestamp::now(),
        ));
        let received = db.create(received).unwrap().unid;
        let appt = Message::Appointment(Appointment {
            header: Header::new("Review", ""),
            appt_unid: Unid::random(),
            start: Timestamp(1_000_000),
            end: Timestamp(2_000_000),
            location: "Room 2".into(),
            chair: None,
            required_attendees: vec![],
        });
        let appt = db.create(appt.to_items()).unwrap().unid;
        assert_eq!(unids(&views, &db, "Sent"), [sent]);
        assert_eq!(unids(&views, &db, "Calendar"), [appt]);
        assert!(unids(&views, &db, "Drafts").is_empty());
        let all = unids(&views, &db, "All Documents");
        assert_eq!(all.len(), 3);
        assert!(all.contains(&received), "a delivered copy is not in Sent");
    }
}
