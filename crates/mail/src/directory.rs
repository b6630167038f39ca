//! The directory of people: who has mail here, under which names, in
//! which mail file, signing in as which server user.
//!
//! It is a database of its own, `names.fdb` at the root of the data
//! directory (made on first use, see `sysdb.rs`), holding one *person
//! document* per person, so it is logged, replicable and readable through
//! views like any other database. Its design:
//!
//! ```text
//!   People    view  SELECT Form = "Person"   Name=FullName:asc, ShortName, MailFile, ServerUser
//!   (Names)   view  SELECT Form = "Person"   Name=@Lowercase(FullName : ShortName : Aliases):cat
//! ```
//!
//! `(Names)` is the lookup: its first column is categorized, so a person
//! has one entry per name (full name, short name, each alias), and
//! resolving an address is a find by key, O(log n) whatever the size of
//! the directory, which is what the router will do for every recipient.
//!
//! Names are compared ignoring case and runs of white space
//! (`Alice  SMITH` is `alice smith`), and every name of a person is
//! unique across the directory: adding a person whose full name, short
//! name or alias another person already answers to is refused. The check
//! and the write are made under one lock kept with the database's
//! instance (I18: one instance per file), so two adds in this process
//! cannot both pass it. Two replicas can still each accept a person of
//! the same name; resolving such a name answers [`Resolved::Ambiguous`],
//! never a guess.

use crate::message::{collapse, fold_name, text, text_list, Address, Items, Message};
use crate::sysdb::{self, SystemDb};
use crate::{MailError, MailResult};
use nsf::{AccessLevel, Acl, Database, DbPath, Engine, Item, Note, Unid};
use parking_lot::Mutex;
use std::sync::Arc;
use views::{ColumnDef, Row, Start, ViewDef, Views};

/// The directory's database, at the root of the data directory.
pub const DIRECTORY_PATH: &str = "names.fdb";
/// The view listing people by full name.
pub const PEOPLE_VIEW: &str = "People";
/// The lookup view: one entry per name of each person.
pub const NAMES_VIEW: &str = "(Names)";
/// Longest full name or alias, in bytes (a view compares the first 128
/// characters of a key, so every name fits whole).
pub const MAX_NAME_BYTES: usize = 120;
/// Most aliases of one person.
pub const MAX_ALIASES: usize = 32;
/// Where mail files live, relative to the data directory.
pub const MAIL_FOLDER: &str = "mail";

/// Characters a name may not contain: they separate or delimit addresses
/// (`,` `;` `<` `>` `"`), would make the short name a path (`/` `\`), or
/// mark ACL roles (`[` `]`).
const FORBIDDEN: &str = ",;<>\"/\\[]";

mod person_item {
    pub const FORM: &str = "Person";
    pub const FULL_NAME: &str = "FullName";
    pub const SHORT_NAME: &str = "ShortName";
    pub const ALIASES: &str = "Aliases";
    pub const MAIL_FILE: &str = "MailFile";
    pub const SERVER_USER: &str = "ServerUser";
}

/// A person to add.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewPerson {
    /// The full name (`Alice Smith`).
    pub name: String,
    /// Other names mail to this person may use (`alice@example.com`).
    pub aliases: Vec<String>,
    /// The server user the person signs in as; default: the full name.
    pub server_user: Option<String>,
}

impl NewPerson {
    /// Checks the names and the server user as adding the person would,
    /// without a directory: a caller can refuse bad input before it opens
    /// (and so makes) anything. Whether a name is taken is the
    /// directory's to say.
    pub fn check(&self) -> MailResult<()> {
        checked(self).map(drop)
    }
}

/// A person document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    pub unid: Unid,
    pub full_name: String,
    /// The full name folded (lowercase, spaces as dots): the mail file's
    /// name, `mail/<short name>.fdb`.
    pub short_name: String,
    pub aliases: Vec<String>,
    pub mail_file: DbPath,
    pub server_user: String,
}

impl Person {
    /// Every name the person answers to.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        [self.full_name.as_str(), self.short_name.as_str()]
            .into_iter()
            .chain(self.aliases.iter().map(String::as_str))
    }

    /// Whether one of the person's names, folded, is `key`.
    pub(crate) fn answers_to(&self, key: &str) -> bool {
        self.names().any(|n| fold_name(n) == key)
    }

    /// Makes the person the sender of `msg`: its From becomes the full
    /// name. A From already naming someone else is refused, never
    /// replaced: nobody sends as another person.
    pub fn sign(&self, msg: &mut Message) -> MailResult<()> {
        let h = msg.header_mut();
        if let Some(claimed) = &h.from {
            if !self.answers_to(&claimed.lookup_key()) {
                return Err(MailError::ForgedSender {
                    claimed: claimed.to_string(),
                    sender: self.full_name.clone(),
                });
            }
        }
        h.from = Some(Address::parse(&self.full_name)?);
        Ok(())
    }

    fn to_items(&self) -> Vec<Item> {
        use person_item::*;
        vec![
            text("Form", FORM),
            text(FULL_NAME, &self.full_name),
            text(SHORT_NAME, &self.short_name),
            text_list(ALIASES, self.aliases.clone()),
            text(MAIL_FILE, self.mail_file.as_str()),
            text(SERVER_USER, &self.server_user),
        ]
    }

    fn from_note(db: &Database, note: &Note) -> MailResult<Person> {
        use person_item::*;
        let bad = |reason: String| MailError::BadStored {
            db: db.path().to_string(),
            unid: note.oid.unid,
            reason,
        };
        let r = Items(&note.items);
        let read = || -> MailResult<Person> {
            if r.text("Form")? != Some(FORM) {
                return Err(MailError::BadMessage("it is not a person document".into()));
            }
            Ok(Person {
                unid: note.oid.unid,
                full_name: r.required_text(FULL_NAME)?.to_string(),
                short_name: r.required_text(SHORT_NAME)?.to_string(),
                aliases: r.text_list(ALIASES)?,
                mail_file: DbPath::parse(r.required_text(MAIL_FILE)?)
                    .map_err(|e| MailError::BadMessage(format!("item {MAIL_FILE}: {e}")))?,
                server_user: r.required_text(SERVER_USER)?.to_string(),
            })
        };
        read().map_err(|e| match e {
            MailError::BadMessage(reason) => bad(reason),
            e => e,
        })
    }
}

/// What an address names in the directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    Person(Person),
    Unknown,
    /// Every person answering to it (two replicas accepted the same name).
    Ambiguous(Vec<Person>),
}

/// Serialises the directory's check-then-write changes (see the module
/// docs); kept with the database's instance.
#[derive(Default)]
struct Writes(Mutex<()>);

/// The directory, open.
pub struct Directory<'v> {
    db: Arc<Database>,
    views: &'v Views,
}

impl<'v> Directory<'v> {
    /// Opens `names.fdb`, making it on first use: design as in the module
    /// docs, and an ACL giving signed-in users Reader access (mail clients
    /// look names up), anonymous callers none, and changes to server
    /// administrators.
    pub fn open(engine: &Engine, views: &'v Views) -> MailResult<Directory<'v>> {
        let db = sysdb::open_or_create(
            engine,
            views,
            &SystemDb {
                path: DIRECTORY_PATH.into(),
                title: "Directory".into(),
                design,
                acl: Acl {
                    default: AccessLevel::Reader,
                    ..Acl::for_creator(None)
                },
            },
        )?;
        Ok(Directory { db, views })
    }

    /// The directory's database.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// Adds a person; see [`Self::add_person_then`].
    pub fn add_person(&self, new: &NewPerson) -> MailResult<Person> {
        self.add_person_then(new, |_| Ok(()))
    }

    /// Adds a person, then runs `then` (which makes the mail file) before
    /// any other change to the directory can begin; if `then` fails the
    /// person document is deleted again and its error returned. Refused,
    /// changing nothing: a bad name, alias or server user, and a name
    /// another person answers to. The person document is durable when
    /// this returns (I2).
    pub fn add_person_then(
        &self,
        new: &NewPerson,
        then: impl FnOnce(&Person) -> MailResult<()>,
    ) -> MailResult<Person> {
        let mut person = checked(new)?;
        // One lock per database instance, and one instance per file (I18).
        let writes = self.db.extension(Writes::default);
        let _one_at_a_time = writes.0.lock();
        for name in person.names() {
            let key = fold_name(name);
            if let Some(holder) = self.answering(&key)?.into_iter().next() {
                return Err(MailError::NameTaken {
                    name: name.to_string(),
                    holder: holder.full_name,
                });
            }
        }
        person.unid = self.db.create(person.to_items())?.unid;
        if let Err(e) = then(&person) {
            // Best effort: the error that made us undo is the one to tell.
            let _ = self.db.delete(person.unid, None, false);
            return Err(e);
        }
        Ok(person)
    }

    /// Removes the person `name` names (any of their names); their mail
    /// file is not touched. Durable when this returns (I2).
    pub fn remove_person(&self, name: &str) -> MailResult<Person> {
        let writes = self.db.extension(Writes::default);
        let _one_at_a_time = writes.0.lock();
        let person = self.person(name)?;
        self.db.delete(person.unid, None, false)?;
        Ok(person)
    }

    /// Every person, by full name.
    pub fn list(&self) -> MailResult<Vec<Person>> {
        const PAGE: usize = 500;
        let people = self.views.open(&self.db, PEOPLE_VIEW)?;
        let mut out = Vec::new();
        loop {
            let rows = people.read(&Start::Position(out.len() as u64), PAGE, false, false)?;
            let done = rows.len() < PAGE;
            for row in rows {
                if let Row::Entry { unid, .. } = row {
                    out.push(self.load(unid)?);
                }
            }
            if done {
                return Ok(out);
            }
        }
    }

    /// Who `address` names: the part inside `<…>` if any, else the whole,
    /// compared with every person's names ignoring case and white space.
    pub fn resolve(&self, address: &str) -> MailResult<Resolved> {
        self.resolve_address(&Address::parse(address)?)
    }

    /// [`Self::resolve`] for a parsed address.
    pub fn resolve_address(&self, address: &Address) -> MailResult<Resolved> {
        let mut found = self.answering(&address.lookup_key())?;
        Ok(match found.len() {
            0 => Resolved::Unknown,
            1 => Resolved::Person(found.remove(0)),
            _ => Resolved::Ambiguous(found),
        })
    }

    /// The one person `name` names, or why there is none.
    pub fn person(&self, name: &str) -> MailResult<Person> {
        match self.resolve(name)? {
            Resolved::Person(p) => Ok(p),
            Resolved::Unknown => Err(MailError::UnknownPerson(name.to_string())),
            Resolved::Ambiguous(people) => Err(MailError::AmbiguousPerson {
                name: name.to_string(),
                candidates: people.into_iter().map(|p| p.full_name).collect(),
            }),
        }
    }

    /// The people answering to the folded name `key`.
    fn answering(&self, key: &str) -> MailResult<Vec<Person>> {
        /// More than a handful is damage; a bounded answer still says so.
        const MOST: u64 = 64;
        let names = self.views.open(&self.db, NAMES_VIEW)?;
        let Some(found) = names.find(key, false)? else {
            return Ok(Vec::new());
        };
        let rows = names.read(
            &Start::Position(found.position),
            found.count.min(MOST) as usize,
            false,
            false,
        )?;
        let mut people: Vec<Person> = Vec::new();
        for row in rows {
            if let Row::Entry { unid, .. } = row {
                if people.iter().all(|p| p.unid != unid) {
                    let p = self.load(unid)?;
                    // The index keeps the first 128 characters of a key.
                    if p.answers_to(key) {
                        people.push(p);
                    }
                }
            }
        }
        Ok(people)
    }

    fn load(&self, unid: Unid) -> MailResult<Person> {
        Person::from_note(&self.db, &self.db.get(unid)?)
    }
}

/// The directory's views (see the module docs).
fn design() -> Vec<ViewDef> {
    let col = |spec: &str| ColumnDef::parse(spec).expect("the directory's columns parse");
    vec![
        ViewDef::view(
            PEOPLE_VIEW,
            "SELECT Form = \"Person\"",
            vec![
                col("Name=FullName:asc"),
                col("ShortName=ShortName"),
                col("MailFile=MailFile"),
                col("ServerUser=ServerUser"),
            ],
        ),
        ViewDef::view(
            NAMES_VIEW,
            "SELECT Form = \"Person\"",
            vec![col("Name=@Lowercase(FullName : ShortName : Aliases):cat")],
        ),
    ]
}

/// The person `new` describes, checked (its UNID is set once stored).
fn checked(new: &NewPerson) -> MailResult<Person> {
    let full_name = check_name(&new.name)?;
    let short_name = fold_name(&full_name).replace(' ', ".");
    let mail_file = DbPath::parse(&format!("{MAIL_FOLDER}/{short_name}.fdb"))
        .map_err(|e| bad_name(&new.name, &format!("it cannot name a mail file: {e}")))?;
    if new.aliases.len() > MAX_ALIASES {
        return Err(bad_name(
            &new.name,
            &format!("a person has at most {MAX_ALIASES} aliases"),
        ));
    }
    let mut aliases: Vec<String> = Vec::new();
    for a in &new.aliases {
        let alias = check_name(a)?;
        let key = fold_name(&alias);
        let repeated = [&full_name, &short_name]
            .into_iter()
            .chain(&aliases)
            .any(|n| fold_name(n) == key);
        if repeated {
            return Err(bad_name(a, "it repeats another name of the same person"));
        }
        aliases.push(alias);
    }
    let server_user = new.server_user.clone().unwrap_or_else(|| full_name.clone());
    Acl::for_creator(Some(&server_user))
        .validate()
        .map_err(|e| bad_name(&server_user, &format!("not a usable server user: {e}")))?;
    Ok(Person {
        unid: Unid([0; 16]),
        full_name,
        short_name,
        aliases,
        mail_file,
        server_user,
    })
}

/// A full name or alias, white space collapsed, or why it cannot be one.
fn check_name(name: &str) -> MailResult<String> {
    let n = collapse(name);
    if n.is_empty() {
        return Err(bad_name(name, "a name cannot be empty"));
    }
    if n.len() > MAX_NAME_BYTES {
        return Err(bad_name(
            name,
            &format!("a name is at most {MAX_NAME_BYTES} bytes"),
        ));
    }
    if n.chars().any(char::is_control) {
        return Err(bad_name(name, "control characters are not allowed"));
    }
    if let Some(c) = n.chars().find(|c| FORBIDDEN.contains(*c)) {
        return Err(bad_name(
            name,
            &format!("{c:?} is not allowed in a name (none of {FORBIDDEN})"),
        ));
    }
    Ok(n)
}

fn bad_name(name: &str, reason: &str) -> MailError {
    MailError::BadName {
        name: name.chars().take(80).collect(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysdb::testing;

    fn person(name: &str, aliases: &[&str]) -> NewPerson {
        NewPerson {
            name: name.into(),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            server_user: None,
        }
    }

    fn resolved_name(d: &Directory<'_>, addr: &str) -> Option<String> {
        match d.resolve(addr).unwrap() {
            Resolved::Person(p) => Some(p.full_name),
            Resolved::Unknown => None,
            Resolved::Ambiguous(p) => panic!("{addr:?} is ambiguous: {p:?}"),
        }
    }

    #[test]
    fn a_person_is_stored_with_derived_names() {
        let (engine, views) = testing::engine();
        let d = Directory::open(&engine, &views).unwrap();
        let p = d
            .add_person(&NewPerson {
                name: "  Alice   Smith ".into(),
                aliases: vec!["alice@example.com".into()],
                server_user: Some("asmith".into()),
            })
            .unwrap();
        assert_eq!(p.full_name, "Alice Smith");
        assert_eq!(p.short_name, "alice.smith");
        assert_eq!(p.mail_file.as_str(), "mail/alice.smith.fdb");
        assert_eq!(p.server_user, "asmith");
        assert_eq!(d.list().unwrap(), vec![p.clone()]);
        // The directory is a database like any other, readable by users.
        let acl = d.database().acl().unwrap().unwrap();
        assert_eq!(acl.default, AccessLevel::Reader);
        assert_eq!(acl.anonymous, AccessLevel::NoAccess);
        let default_user = d.add_person(&person("bob", &[])).unwrap();
        assert_eq!(default_user.server_user, "bob");
    }

    #[test]
    fn resolve_ignores_case_and_white_space_and_knows_aliases() {
        let (engine, views) = testing::engine();
        let d = Directory::open(&engine, &views).unwrap();
        d.add_person(&person("Alice Smith", &["ally", "alice@example.com"]))
            .unwrap();
        d.add_person(&person("Bob", &[])).unwrap();
        let alice = Some("Alice Smith".to_string());
        for addr in [
            "Alice Smith",
            "  alice   SMITH ",
            "alice.smith",
            "ALLY",
            "alice@EXAMPLE.com",
            "Someone Else <ally>",
            "\"Smith, A\" <Alice Smith>",
        ] {
            assert_eq!(resolved_name(&d, addr), alice, "{addr:?}");
        }
        assert_eq!(resolved_name(&d, "bob"), Some("Bob".into()));
        // The display name is never what resolves.
        assert_eq!(resolved_name(&d, "Alice Smith <nobody>"), None);
        assert_eq!(resolved_name(&d, "alic"), None, "no prefix matches");
        assert!(matches!(d.resolve(" "), Err(MailError::BadAddress { .. })));
        assert_eq!(d.list().unwrap().len(), 2);
    }

    #[test]
    fn every_name_is_unique_across_the_directory() {
        let (engine, views) = testing::engine();
        let d = Directory::open(&engine, &views).unwrap();
        d.add_person(&person("Alice Smith", &["ally"])).unwrap();
        let taken = |new: NewPerson, name: &str| match d.add_person(&new) {
            Err(MailError::NameTaken { name: n, holder }) => {
                assert_eq!((n.as_str(), holder.as_str()), (name, "Alice Smith"))
            }
            other => panic!("expected NameTaken for {name:?}, got {other:?}"),
        };
        taken(person("ALICE  smith", &[]), "ALICE smith");
        taken(person("Carol", &["Ally"]), "Ally");
        taken(person("Ally", &[]), "Ally");
        // A short name collides with the full name it comes from.
        taken(person("Dan", &["alice.smith"]), "alice.smith");
        // Nothing of the refused people was stored.
        assert_eq!(d.list().unwrap().len(), 1);
        assert_eq!(resolved_name(&d, "carol"), None);
    }

    #[test]
    fn bad_names_are_refused_with_the_reason() {
        let (engine, views) = testing::engine();
        let d = Directory::open(&engine, &views).unwrap();
        let reason = |new: NewPerson| match d.add_person(&new) {
            Err(MailError::BadName { reason, .. }) => reason,
            other => panic!("expected BadName, got {other:?}"),
        };
        assert!(reason(person("   ", &[])).contains("empty"));
        assert!(reason(person("a/b", &[])).contains("'/'"));
        assert!(reason(person("a, b", &[])).contains("','"));
        assert!(reason(person(&"x".repeat(121), &[])).contains("120 bytes"));
        assert!(reason(person("Ann", &["ann"])).contains("repeats"));
        assert!(reason(person("Ann", &["x", "X"])).contains("repeats"));
        assert!(reason(person("Ann", &["<x>"])).contains("'<'"));
        assert!(reason(NewPerson {
            server_user: Some(" padded".into()),
            ..person("Ann", &[])
        })
        .contains("server user"));
        assert!(d.list().unwrap().is_empty());
    }

    #[test]
    fn a_name_two_replicas_both_gave_out_is_ambiguous() {
        let (engine, views) = testing::engine();
        let d = Directory::open(&engine, &views).unwrap();
        d.add_person(&person("Alice", &["boss"])).unwrap();
        // As replication would bring it: a second person with the alias,
        // written without the directory's check.
        let twin = Person {
            unid: Unid([0; 16]),
            full_name: "Alice Jones".into(),
            short_name: "alice.jones".into(),
            aliases: vec!["Boss".into()],
            mail_file: DbPath::parse("mail/alice.jones.fdb").unwrap(),
            server_user: "ajones".into(),
        };
        d.database().create(twin.to_items()).unwrap();
        match d.resolve("boss").unwrap() {
            Resolved::Ambiguous(p) => {
                let mut names: Vec<String> = p.into_iter().map(|p| p.full_name).collect();
                names.sort();
                assert_eq!(names, ["Alice", "Alice Jones"]);
            }
            other => panic!("expected Ambiguous, got {other:?}"),
        }
        assert!(matches!(
            d.person("BOSS"),
            Err(MailError::AmbiguousPerson { candidates, .. }) if candidates.len() == 2
        ));
        assert!(matches!(
            d.remove_person("boss"),
            Err(MailError::AmbiguousPerson { .. })
        ));
        assert_eq!(resolved_name(&d, "alice"), Some("Alice".into()));
    }

    #[test]
    fn removing_a_person_frees_their_names() {
        let (engine, views) = testing::engine();
        let d = Directory::open(&engine, &views).unwrap();
        d.add_person(&person("Alice", &["ally"])).unwrap();
        let removed = d.remove_person("ALLY").unwrap();
        assert_eq!(removed.full_name, "Alice");
        assert_eq!(resolved_name(&d, "alice"), None);
        assert!(matches!(
            d.remove_person("alice"),
            Err(MailError::UnknownPerson(n)) if n == "alice"
        ));
        d.add_person(&person("Ally", &[])).unwrap();
    }

    #[test]
    fn a_failed_follow_up_takes_the_person_back_out() {
        let (engine, views) = testing::engine();
        let d = Directory::open(&engine, &views).unwrap();
        let err = d
            .add_person_then(&person("Alice", &[]), |_| {
                Err(MailError::MailFileExists {
                    path: "mail/alice.fdb".into(),
                })
            })
            .unwrap_err();
        assert!(matches!(err, MailError::MailFileExists { .. }));
        assert_eq!(resolved_name(&d, "alice"), None);
        assert!(d.list().unwrap().is_empty());
    }

    #[test]
    fn a_damaged_person_document_is_named() {
        let (engine, views) = testing::engine();
        let d = Directory::open(&engine, &views).unwrap();
        let unid = d
            .database()
            .create(vec![text("Form", "Person"), text("FullName", "Eve")])
            .unwrap()
            .unid;
        match d.resolve("eve") {
            Err(MailError::BadStored {
                db,
                unid: u,
                reason,
            }) => {
                assert_eq!((db.as_str(), u), ("names.fdb", unid));
                assert!(reason.contains("ShortName"), "{reason}");
            }
            other => panic!("expected BadStored, got {other:?}"),
        }
    }
}
