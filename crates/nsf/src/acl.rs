//! Access control: what a database lets each caller do, and which
//! documents each caller may see and change.
//!
//! Two layers decide, as in Notes:
//!
//! ```text
//!   Acl (per database)           Access (one caller)            Note
//!   default, anonymous   ──►     level, roles, create/delete ──► $Readers, $Authors
//!   entries: name → level,       flags            can_read / can_edit / can_delete
//!     roles, flags               can_create / can_design / can_manage
//! ```
//!
//! **The database's list** ([`Acl`]) gives every caller an [`AccessLevel`]:
//! NoAccess < Depositor < Reader < Author < Editor < Designer < Manager. A
//! named caller gets their entry (names ignore case) or the `default`
//! level; an anonymous caller gets the `anonymous` level. An entry also
//! holds *roles* (named groups the database defines, e.g. `Sales`) and two
//! flags: may create documents (on by default for Depositor and Author and
//! above; Editors and above always may) and may delete documents (on by
//! default for Editor and above).
//!
//! **The document's items** narrow that further. A note with a `$Readers`
//! item can be read only by callers it lists, or that its `$Authors` item
//! lists; an Author may edit only notes whose `$Authors` lists them. An
//! entry in either item is a user name, a role written `[Role]`, or `*`
//! for everyone; matching ignores case and surrounding spaces. The mere
//! presence of `$Readers` restricts: an empty list admits only the
//! authors (remove the item to lift the restriction). Deletion stubs keep
//! both items, so a caller who could not see a document does not learn of
//! its deletion either. Design notes (views, folders) need Designer access
//! to change; the ACL note itself needs Manager access even to read.
//! [`Access::full`] is the unrestricted access of the embedded CLI and of
//! server administrators: Manager, every flag, and not subject to
//! `$Readers`.
//!
//! **Why the list is a note.** The ACL is stored in the database as a
//! design note (`$DesignType` = `acl`, `$ACL` = the list as JSON) whose
//! UNID is derived from the replica id ([`acl_unid`]). So it is committed
//! through the same logged write path as any document — durable when
//! `set_acl` returns, recovered by the same redo — and it replicates as a
//! document does: every replica's ACL note has the same UNID, so the
//! replicator pairs them and settles conflicting edits by the ordinary
//! sequence rules, with no channel of its own. `$DesignType` keeps it out
//! of views and search. The JSON form is the one the CLI, HTTP API and
//! native protocol carry, so what an administrator writes is what is
//! stored and what a dump shows. The header page was not an option: it
//! holds a fixed layout, does not replicate, and a list of thousands of
//! entries does not fit in it.
//!
//! A database caches the parsed list and drops the cache in the same
//! critical section that installs any transaction writing the ACL note
//! (design.md I15), so checking access on every request costs a lock and
//! a clone, not a B+tree lookup and a JSON parse.

use crate::note::{same_name, AUTHORS_ITEM, DESIGN_ITEMS, READERS_ITEM};
use crate::{CodecError, Item, ItemValue, Note, NoteRef, NsfError, ReplicaId, Unid};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Most entries in one list.
pub const MAX_ACL_ENTRIES: usize = 10_000;
/// Most roles one database defines.
pub const MAX_ACL_ROLES: usize = 256;
/// Longest entry name, in bytes.
pub const MAX_ACL_NAME_BYTES: usize = 255;
/// Longest role name, in bytes.
pub const MAX_ROLE_BYTES: usize = 64;
/// Largest list, as JSON text, in bytes.
pub const MAX_ACL_JSON_BYTES: usize = 4 << 20;

/// `$DesignType` of the ACL note.
const ACL_DESIGN_TYPE: &str = "acl";
const DESIGN_TYPE_ITEM: &str = DESIGN_ITEMS[0];
/// The ACL note's item holding the list as JSON.
const ACL_ITEM: &str = DESIGN_ITEMS[3];
/// Second half of the ACL note's UNID (the first is the replica id).
const ACL_UNID_TAG: [u8; 8] = *b"FOLIOACL";

/// What a caller may do in a database, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AccessLevel {
    NoAccess,
    /// May create documents but read none.
    Depositor,
    Reader,
    /// Reader, plus edit the documents whose `$Authors` lists them.
    Author,
    /// Edit every document it can read.
    Editor,
    /// Editor, plus change the design (views, folders).
    Designer,
    /// Designer, plus change the access-control list.
    Manager,
}

impl AccessLevel {
    /// Every level, highest first.
    pub const ALL: [AccessLevel; 7] = [
        AccessLevel::Manager,
        AccessLevel::Designer,
        AccessLevel::Editor,
        AccessLevel::Author,
        AccessLevel::Reader,
        AccessLevel::Depositor,
        AccessLevel::NoAccess,
    ];

    /// The level's name in the JSON form: lowercase, `noaccess`.
    pub fn as_str(self) -> &'static str {
        match self {
            AccessLevel::NoAccess => "noaccess",
            AccessLevel::Depositor => "depositor",
            AccessLevel::Reader => "reader",
            AccessLevel::Author => "author",
            AccessLevel::Editor => "editor",
            AccessLevel::Designer => "designer",
            AccessLevel::Manager => "manager",
        }
    }

    /// The create flag when a list does not say.
    fn creates_by_default(self) -> bool {
        self >= AccessLevel::Author || self == AccessLevel::Depositor
    }

    /// The delete flag when a list does not say.
    fn deletes_by_default(self) -> bool {
        self >= AccessLevel::Editor
    }
}

impl fmt::Display for AccessLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no access level.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown access level {0:?}; the levels are manager, designer, editor, author, reader, depositor and noaccess")]
pub struct UnknownLevel(pub String);

impl FromStr for AccessLevel {
    type Err = UnknownLevel;

    /// Accepts the level names in any case, and `no_access` and
    /// `no access` for `noaccess`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let folded = s.to_ascii_lowercase();
        let name = match folded.as_str() {
            "no_access" | "no access" => "noaccess",
            other => other,
        };
        AccessLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == name)
            .ok_or_else(|| UnknownLevel(s.chars().take(64).collect()))
    }
}

impl Serialize for AccessLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AccessLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Why an access-control list was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AclError {
    #[error("invalid access-control list JSON: {0}")]
    Json(String),
    #[error("the access-control list is {size} bytes of JSON; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("the access-control list has {count} {what}; the limit is {limit}")]
    TooMany {
        what: &'static str,
        count: usize,
        limit: usize,
    },
    /// `at` is `default`, `anonymous` or the entry, e.g. `entry 2 ("bob")`.
    #[error("{at}: {source}")]
    BadLevel { at: String, source: UnknownLevel },
    /// `entry` counts from 1.
    #[error("entry {entry}: invalid name {name:?}: {reason}")]
    BadName {
        entry: usize,
        name: String,
        reason: &'static str,
    },
    #[error("entries {first} and {entry} have the same name {name:?} (names ignore case)")]
    DuplicateName {
        first: usize,
        entry: usize,
        name: String,
    },
    #[error("invalid role name {role:?}: {reason}")]
    BadRole { role: String, reason: &'static str },
    #[error("role {role:?} is defined twice (roles ignore case)")]
    DuplicateRole { role: String },
    #[error(
        "entry {name:?} has role {role:?}, which the list does not define (add it to \"roles\")"
    )]
    UnknownRole { name: String, role: String },
    #[error("entry {name:?} lists role {role:?} twice (roles ignore case)")]
    RepeatedRole { name: String, role: String },
}

/// One name in the list and what it grants.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AclEntry {
    /// A user name, matched ignoring case.
    pub name: String,
    pub level: AccessLevel,
    /// Roles held, each one of the list's `roles`.
    pub roles: Vec<String>,
    /// May create documents (Editors and above always may).
    pub create_documents: bool,
    /// May delete the documents it may edit.
    pub delete_documents: bool,
}

impl AclEntry {
    /// An entry with no roles and the level's default flags.
    pub fn new(name: impl Into<String>, level: AccessLevel) -> AclEntry {
        AclEntry {
            name: name.into(),
            level,
            roles: Vec::new(),
            create_documents: level.creates_by_default(),
            delete_documents: level.deletes_by_default(),
        }
    }
}

/// A database's access-control list; see the module docs. Its JSON form:
///
/// ```json
/// {"default":"noaccess","anonymous":"noaccess","roles":["Sales"],
///  "entries":[{"name":"alice","level":"manager","roles":["Sales"],
///              "create_documents":true,"delete_documents":true}]}
/// ```
///
/// On input `default` and `anonymous` may be left out (`noaccess`), as may
/// `roles`, `entries`, an entry's `roles` and its flags (the level's
/// defaults); unknown keys are refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawAcl")]
pub struct Acl {
    /// Level of named callers without an entry.
    pub default: AccessLevel,
    /// Level of callers who did not authenticate.
    pub anonymous: AccessLevel,
    /// The roles the database defines.
    pub roles: Vec<String>,
    pub entries: Vec<AclEntry>,
}

impl Acl {
    /// The list of a new database: its creator (if any) is Manager, nobody
    /// else has access.
    pub fn for_creator(creator: Option<&str>) -> Acl {
        Acl {
            default: AccessLevel::NoAccess,
            anonymous: AccessLevel::NoAccess,
            roles: Vec::new(),
            entries: creator
                .map(|c| AclEntry::new(c, AccessLevel::Manager))
                .into_iter()
                .collect(),
        }
    }

    /// Parses and validates the JSON form.
    pub fn parse_json(json: &str) -> Result<Acl, NsfError> {
        Ok(parse(json)?)
    }

    /// The JSON form (compact).
    pub fn to_json(&self) -> String {
        // A struct of strings, enums written as strings, and booleans.
        serde_json::to_string(self).expect("an access-control list always serializes")
    }

    /// Checks the rules the JSON form is held to: names valid and unique
    /// ignoring case, entry roles defined by the list, sizes bounded.
    pub fn validate(&self) -> Result<(), AclError> {
        check_count("roles", self.roles.len(), MAX_ACL_ROLES)?;
        check_count("entries", self.entries.len(), MAX_ACL_ENTRIES)?;
        for (i, role) in self.roles.iter().enumerate() {
            if let Some(reason) = role_problem(role) {
                let role = role.chars().take(64).collect();
                return Err(AclError::BadRole { role, reason });
            }
            if self.roles[..i].iter().any(|r| same_name(r, role)) {
                let role = role.clone();
                return Err(AclError::DuplicateRole { role });
            }
        }
        for (i, e) in self.entries.iter().enumerate() {
            self.check_entry(i, e)?;
        }
        Ok(())
    }

    fn check_entry(&self, i: usize, e: &AclEntry) -> Result<(), AclError> {
        if let Some(reason) = name_problem(&e.name) {
            let name = e.name.chars().take(64).collect();
            return Err(AclError::BadName {
                entry: i + 1,
                name,
                reason,
            });
        }
        if let Some(first) = self.entries[..i]
            .iter()
            .position(|f| same_name(&f.name, &e.name))
        {
            return Err(AclError::DuplicateName {
                first: first + 1,
                entry: i + 1,
                name: e.name.clone(),
            });
        }
        for (j, role) in e.roles.iter().enumerate() {
            let err = |f: fn(String, String) -> AclError| {
                let role = role.chars().take(64).collect();
                Err(f(e.name.clone(), role))
            };
            if !self.roles.iter().any(|r| same_name(r, role)) {
                return err(|name, role| AclError::UnknownRole { name, role });
            }
            if e.roles[..j].iter().any(|r| same_name(r, role)) {
                return err(|name, role| AclError::RepeatedRole { name, role });
            }
        }
        Ok(())
    }

    /// The entry for `name`, ignoring case.
    pub fn entry(&self, name: &str) -> Option<&AclEntry> {
        self.entries.iter().find(|e| same_name(&e.name, name))
    }

    /// What the list grants a caller: `None` is an anonymous caller, who
    /// gets `anonymous`; a named caller gets their entry or `default`.
    pub fn access(&self, user: Option<&str>) -> Access {
        match user {
            None => Access::at_level(None, self.anonymous),
            Some(name) => match self.entry(name) {
                Some(e) => Access {
                    user: Some(name.to_string()),
                    level: e.level,
                    roles: e.roles.clone(),
                    create_documents: e.create_documents,
                    delete_documents: e.delete_documents,
                    unrestricted: false,
                },
                None => Access::at_level(Some(name), self.default),
            },
        }
    }
}

fn parse(json: &str) -> Result<Acl, AclError> {
    if json.len() > MAX_ACL_JSON_BYTES {
        return Err(AclError::TooLarge {
            size: json.len(),
            limit: MAX_ACL_JSON_BYTES,
        });
    }
    // serde reads a struct from an array too (its fields in order); the
    // list is an object, and only an object is accepted.
    if !json.trim_start().starts_with('{') {
        return Err(AclError::Json(
            "the access-control list must be a JSON object".into(),
        ));
    }
    let raw: RawAcl = serde_json::from_str(json).map_err(|e| AclError::Json(e.to_string()))?;
    Acl::try_from(raw)
}

fn check_count(what: &'static str, count: usize, limit: usize) -> Result<(), AclError> {
    if count > limit {
        return Err(AclError::TooMany { what, count, limit });
    }
    Ok(())
}

/// Why `name` cannot be an entry name, if it cannot.
fn name_problem(name: &str) -> Option<&'static str> {
    Some(if name.is_empty() {
        "names must not be empty"
    } else if name.len() > MAX_ACL_NAME_BYTES {
        "names are at most 255 bytes"
    } else if name.chars().any(char::is_control) {
        "names must not contain control characters"
    } else if name.trim() != name {
        "names must not begin or end with spaces"
    } else if name == "*" || name.starts_with('[') {
        "\"*\" and names starting with '[' mean everyone and roles in $Readers and $Authors"
    } else {
        return None;
    })
}

/// Why `role` cannot be a role name, if it cannot.
fn role_problem(role: &str) -> Option<&'static str> {
    Some(if role.is_empty() {
        "role names must not be empty"
    } else if role.len() > MAX_ROLE_BYTES {
        "role names are at most 64 bytes"
    } else if role.chars().any(char::is_control) {
        "role names must not contain control characters"
    } else if role.trim() != role {
        "role names must not begin or end with spaces"
    } else if role.contains(['[', ']']) {
        "role names are written without brackets (\"Sales\", used as \"[Sales]\")"
    } else {
        return None;
    })
}

/// The JSON form as written, before levels are parsed and defaults filled.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAcl {
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    anonymous: Option<String>,
    #[serde(default)]
    roles: Vec<String>,
    #[serde(default)]
    entries: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    level: String,
    #[serde(default)]
    roles: Vec<String>,
    create_documents: Option<bool>,
    delete_documents: Option<bool>,
}

fn level_at(at: impl FnOnce() -> String, value: Option<&str>) -> Result<AccessLevel, AclError> {
    match value {
        None => Ok(AccessLevel::NoAccess),
        Some(v) => v
            .parse()
            .map_err(|source| AclError::BadLevel { at: at(), source }),
    }
}

impl TryFrom<RawAcl> for Acl {
    type Error = AclError;

    fn try_from(raw: RawAcl) -> Result<Acl, AclError> {
        check_count("entries", raw.entries.len(), MAX_ACL_ENTRIES)?;
        let mut entries = Vec::with_capacity(raw.entries.len());
        for (i, e) in raw.entries.into_iter().enumerate() {
            let at = || format!("entry {} ({:?})", i + 1, e.name);
            let level = level_at(at, Some(&e.level))?;
            entries.push(AclEntry {
                create_documents: e.create_documents.unwrap_or(level.creates_by_default()),
                delete_documents: e.delete_documents.unwrap_or(level.deletes_by_default()),
                name: e.name,
                level,
                roles: e.roles,
            });
        }
        let acl = Acl {
            default: level_at(|| "default".into(), raw.default.as_deref())?,
            anonymous: level_at(|| "anonymous".into(), raw.anonymous.as_deref())?,
            roles: raw.roles,
            entries,
        };
        acl.validate()?;
        Ok(acl)
    }
}

/// What one caller may do in one database: the result of
/// [`Acl::access`], or [`Access::full`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    user: Option<String>,
    level: AccessLevel,
    roles: Vec<String>,
    create_documents: bool,
    delete_documents: bool,
    /// Not subject to the list or to `$Readers` ([`Access::full`]).
    unrestricted: bool,
}

/// What kind of note a rule is applied to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NoteKind {
    Document,
    /// A view or folder definition (any other `$DesignType`).
    Design,
    /// The access-control list.
    Acl,
}

/// The items of a note that access depends on.
struct Guards<'v> {
    kind: NoteKind,
    readers: Option<&'v ItemValue>,
    authors: Option<&'v ItemValue>,
}

impl<'v> Guards<'v> {
    fn new(
        design_type: Option<&ItemValue>,
        readers: Option<&'v ItemValue>,
        authors: Option<&'v ItemValue>,
    ) -> Guards<'v> {
        let kind = match design_type {
            None => NoteKind::Document,
            Some(ItemValue::Text(t)) if t.eq_ignore_ascii_case(ACL_DESIGN_TYPE) => NoteKind::Acl,
            Some(_) => NoteKind::Design,
        };
        Guards {
            kind,
            readers,
            authors,
        }
    }

    fn of(note: &'v Note) -> Guards<'v> {
        let value = |name| note.item(name).map(|i| &i.value);
        Guards::new(
            value(DESIGN_TYPE_ITEM),
            value(READERS_ITEM),
            value(AUTHORS_ITEM),
        )
    }
}

impl Access {
    /// Unrestricted access (embedded CLI, server administrators): Manager
    /// with every flag, not subject to `$Readers`.
    pub fn full() -> Access {
        Access {
            user: None,
            level: AccessLevel::Manager,
            roles: Vec::new(),
            create_documents: true,
            delete_documents: true,
            unrestricted: true,
        }
    }

    /// Access at `level` with its default flags and no roles.
    fn at_level(user: Option<&str>, level: AccessLevel) -> Access {
        Access {
            user: user.map(str::to_string),
            level,
            roles: Vec::new(),
            create_documents: level.creates_by_default(),
            delete_documents: level.deletes_by_default(),
            unrestricted: false,
        }
    }

    pub fn level(&self) -> AccessLevel {
        self.level
    }

    /// The roles the caller holds in the database.
    pub fn roles(&self) -> &[String] {
        &self.roles
    }

    /// The caller's name; `None` for anonymous callers and [`Access::full`].
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// May read `note` (a document, design note or deletion stub): Reader
    /// or above and, if it has `$Readers`, listed there or in `$Authors`.
    /// The ACL note needs Manager.
    pub fn can_read(&self, note: &Note) -> bool {
        self.unrestricted || self.may_read(&Guards::of(note))
    }

    /// [`Access::can_read`] on a note still encoded, decoding only the
    /// items the rule looks at.
    pub fn can_read_ref(&self, note: &NoteRef<'_>) -> Result<bool, CodecError> {
        if self.unrestricted {
            return Ok(true);
        }
        if self.level < AccessLevel::Reader {
            return Ok(false);
        }
        let [design_type, readers, authors] =
            note.items([DESIGN_TYPE_ITEM, READERS_ITEM, AUTHORS_ITEM])?;
        let g = Guards::new(design_type.as_ref(), readers.as_ref(), authors.as_ref());
        Ok(self.may_read(&g))
    }

    /// May read a document (not a design note) that `$Readers` restricts
    /// as `r` says: the same answer as [`Access::can_read`] on it, without
    /// the note.
    pub fn can_read_restricted(&self, r: &ReadRestriction) -> bool {
        self.unrestricted
            || (self.level >= AccessLevel::Reader && r.names.iter().any(|n| self.named_by(n)))
    }

    /// Not subject to `$Readers` at all ([`Access::full`]): every document
    /// with Reader access is readable, so a view shows this caller every
    /// entry it holds.
    pub fn sees_every_document(&self) -> bool {
        self.unrestricted
    }

    /// May create documents: Depositor or above with the create flag;
    /// Editors and above always.
    pub fn can_create(&self) -> bool {
        self.unrestricted
            || self.level >= AccessLevel::Editor
            || (self.level >= AccessLevel::Depositor && self.create_documents)
    }

    /// May change `note`: may read it, and is an Editor or above, or an
    /// Author whom its `$Authors` lists. Design notes need Designer, the
    /// ACL note Manager.
    pub fn can_edit(&self, note: &Note) -> bool {
        self.unrestricted || self.may_edit(&Guards::of(note))
    }

    /// May delete `note`: may edit it and holds the delete flag.
    pub fn can_delete(&self, note: &Note) -> bool {
        self.unrestricted || (self.delete_documents && self.may_edit(&Guards::of(note)))
    }

    /// May change the design (views and folders): Designer or above.
    pub fn can_design(&self) -> bool {
        self.level >= AccessLevel::Designer
    }

    /// May read and change the access-control list: Manager.
    pub fn can_manage(&self) -> bool {
        self.level == AccessLevel::Manager
    }

    fn may_read(&self, g: &Guards<'_>) -> bool {
        if self.level < AccessLevel::Reader
            || (g.kind == NoteKind::Acl && self.level < AccessLevel::Manager)
        {
            return false;
        }
        g.readers.is_none() || self.listed(g.readers) || self.listed(g.authors)
    }

    fn may_edit(&self, g: &Guards<'_>) -> bool {
        self.may_read(g)
            && match g.kind {
                NoteKind::Document => {
                    self.level >= AccessLevel::Editor
                        || (self.level == AccessLevel::Author && self.listed(g.authors))
                }
                NoteKind::Design => self.level >= AccessLevel::Designer,
                NoteKind::Acl => self.level == AccessLevel::Manager,
            }
    }

    /// Whether an access item lists this caller. Anything but text fails
    /// closed (validation keeps other types out of stored notes).
    fn listed(&self, names: Option<&ItemValue>) -> bool {
        match names {
            Some(ItemValue::Text(s)) => self.named_by(s),
            Some(ItemValue::TextList(l)) => l.iter().any(|s| self.named_by(s)),
            _ => false,
        }
    }

    /// Whether one entry of an access item names this caller: `*`, one of
    /// its roles as `[Role]`, or its name.
    fn named_by(&self, entry: &str) -> bool {
        let entry = entry.trim();
        if entry == "*" {
            return true;
        }
        if let Some(role) = entry.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let role = role.trim();
            return self.roles.iter().any(|r| same_name(r, role));
        }
        !entry.is_empty() && self.user.as_deref().is_some_and(|u| same_name(u, entry))
    }
}

/// Who may read a document that has a `$Readers` item: the entries of
/// its `$Readers` and `$Authors` items together (a caller either names
/// admits may read it). A view index keeps this for each entry of such a
/// document, so a caller's view can be computed without the notes
/// ([`Access::can_read_restricted`]). Entries of an item that is not
/// text admit nobody, as in [`Access::can_read`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRestriction {
    pub names: Vec<String>,
}

impl ReadRestriction {
    /// The restriction of a document; `None` if it has no `$Readers`.
    pub fn of(note: &Note) -> Option<ReadRestriction> {
        let g = Guards::of(note);
        ReadRestriction::from_guards(&g)
    }

    /// [`ReadRestriction::of`] on a note still encoded.
    pub fn of_ref(note: &NoteRef<'_>) -> Result<Option<ReadRestriction>, CodecError> {
        let [readers, authors] = note.items([READERS_ITEM, AUTHORS_ITEM])?;
        let g = Guards::new(None, readers.as_ref(), authors.as_ref());
        Ok(ReadRestriction::from_guards(&g))
    }

    fn from_guards(g: &Guards<'_>) -> Option<ReadRestriction> {
        g.readers?;
        let mut names = Vec::new();
        for item in [g.readers, g.authors] {
            match item {
                Some(ItemValue::Text(s)) => names.push(s.clone()),
                Some(ItemValue::TextList(l)) => names.extend(l.iter().cloned()),
                _ => {}
            }
        }
        Some(ReadRestriction { names })
    }
}

/// The UNID of a database's ACL note: the replica id (big-endian) then
/// `FOLIOACL`, the same in every replica.
pub(crate) fn acl_unid(replica_id: ReplicaId) -> Unid {
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&replica_id.0.to_be_bytes());
    u[8..].copy_from_slice(&ACL_UNID_TAG);
    Unid(u)
}

/// The items of the ACL note holding `json`.
pub(crate) fn acl_note_items(json: String) -> Vec<Item> {
    vec![
        Item {
            name: DESIGN_TYPE_ITEM.into(),
            value: ItemValue::Text(ACL_DESIGN_TYPE.into()),
        },
        Item {
            name: ACL_ITEM.into(),
            value: ItemValue::Text(json),
        },
    ]
}

/// Whether `note` is an ACL note (or the stub of one, which has no items).
pub(crate) fn is_acl_note(note: &Note) -> bool {
    Guards::of(note).kind == NoteKind::Acl
}

/// The list an ACL note holds; `Ok(None)` for a deletion stub. The error
/// says what is wrong with the note.
pub(crate) fn acl_of_note(note: &Note) -> Result<Option<Acl>, String> {
    if note.deleted {
        return Ok(None);
    }
    if !is_acl_note(note) {
        return Err(format!(
            "note {} has the ACL note's UNID but is not an ACL note",
            note.oid.unid
        ));
    }
    match note.item(ACL_ITEM).map(|i| &i.value) {
        Some(ItemValue::Text(json)) => parse(json).map(Some).map_err(|e| e.to_string()),
        _ => Err(format!("the ACL note has no {ACL_ITEM} text item")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_named() {
        let mut sorted = AccessLevel::ALL;
        sorted.sort();
        assert_eq!(sorted[0], AccessLevel::NoAccess);
        assert_eq!(sorted[6], AccessLevel::Manager);
        for l in AccessLevel::ALL {
            assert_eq!(l.as_str().parse::<AccessLevel>(), Ok(l));
            assert_eq!(l.to_string().to_uppercase().parse::<AccessLevel>(), Ok(l));
            assert_eq!(serde_json::to_string(&l).unwrap(), format!("\"{l}\""));
        }
        for s in ["no_access", "No Access", "NOACCESS"] {
            assert_eq!(s.parse(), Ok(AccessLevel::NoAccess), "{s}");
        }
        let err = "admin".parse::<AccessLevel>().unwrap_err().to_string();
        assert_eq!(
            err,
            r#"unknown access level "admin"; the levels are manager, designer, editor, author, reader, depositor and noaccess"#
        );
    }

    #[test]
    fn acl_unid_depends_on_the_replica_id_only() {
        let a = acl_unid(ReplicaId(0x0102_0304_0506_0708));
        assert_eq!(a.to_string(), "0102030405060708464F4C494F41434C");
        assert_eq!(a, acl_unid(ReplicaId(0x0102_0304_0506_0708)));
        assert_ne!(a, acl_unid(ReplicaId(1)));
    }

    #[test]
    fn flags_default_by_level() {
        let json = r#"{"entries":[
            {"name":"d","level":"depositor"},{"name":"r","level":"reader"},
            {"name":"a","level":"author"},{"name":"e","level":"editor"},
            {"name":"m","level":"manager","delete_documents":false}]}"#;
        let acl = parse(json).unwrap();
        let flags: Vec<_> = acl
            .entries
            .iter()
            .map(|e| (e.create_documents, e.delete_documents))
            .collect();
        assert_eq!(
            flags,
            [
                (true, false),
                (false, false),
                (true, false),
                (true, true),
                (true, false)
            ]
        );
        assert_eq!(acl.default, AccessLevel::NoAccess);
        assert_eq!(acl.anonymous, AccessLevel::NoAccess);
    }

    #[test]
    fn json_form_round_trips() {
        let json = r#"{"default":"reader","anonymous":"noaccess","roles":["Sales"],"entries":[{"name":"alice","level":"manager","roles":["Sales"],"create_documents":true,"delete_documents":true}]}"#;
        let acl = parse(json).unwrap();
        assert_eq!(acl.to_json(), json);
        assert_eq!(serde_json::from_str::<Acl>(json).unwrap(), acl);
        let bad = serde_json::from_str::<Acl>(r#"{"default":"boss"}"#).unwrap_err();
        assert!(
            bad.to_string().contains(r#"unknown access level "boss""#),
            "{bad}"
        );
    }

    #[test]
    fn only_an_object_is_a_list() {
        for json in [
            "[]",
            r#"["reader","reader",[],[]]"#,
            r#""manager""#,
            "  [ ]",
            "null",
        ] {
            let e = parse(json).unwrap_err();
            assert!(
                e.to_string().contains("must be a JSON object"),
                "{json}: {e}"
            );
        }
        assert!(parse(" \n{}").is_ok());
    }

    fn document(items: Vec<Item>) -> Note {
        Note {
            note_id: crate::NoteId(7),
            oid: crate::OriginatorId {
                unid: Unid([7; 16]),
                seq_num: 1,
                seq_time: crate::Timestamp(1),
            },
            created: crate::Timestamp(1),
            modified: crate::Timestamp(1),
            added: crate::Timestamp(1),
            change_seq: crate::Seq(1),
            deleted: false,
            items,
        }
    }

    #[test]
    fn a_restriction_answers_as_the_note_does() {
        let mut acl = Acl::for_creator(Some("boss"));
        acl.default = AccessLevel::Reader;
        acl.roles = vec!["Sales".into()];
        acl.entries.push(AclEntry {
            roles: vec!["Sales".into()],
            ..AclEntry::new("seller", AccessLevel::Reader)
        });
        acl.entries
            .push(AclEntry::new("dep", AccessLevel::Depositor));
        let text = |s: &str| ItemValue::Text(s.into());
        let list = |l: &[&str]| ItemValue::TextList(l.iter().map(|s| s.to_string()).collect());
        let cases: Vec<(Option<ItemValue>, Option<ItemValue>)> = vec![
            (None, None),
            (None, Some(text("bob"))),
            (Some(list(&[])), None),
            (Some(list(&[])), Some(list(&["bob"]))),
            (Some(text("Bob ")), None),
            (Some(list(&["[sales]", "x"])), None),
            (Some(list(&["*"])), None),
            (Some(ItemValue::Number(1.0)), Some(text("bob"))),
            (Some(text("alice")), Some(ItemValue::Number(2.0))),
        ];
        let callers = [
            acl.access(Some("bob")),
            acl.access(Some("alice")),
            acl.access(Some("seller")),
            acl.access(Some("dep")),
            acl.access(None),
            Access::full(),
        ];
        for (readers, authors) in cases {
            let mut note = document(vec![]);
            for (name, v) in [(READERS_ITEM, &readers), (AUTHORS_ITEM, &authors)] {
                if let Some(v) = v {
                    note.items.push(Item {
                        name: name.into(),
                        value: v.clone(),
                    });
                }
            }
            let r = ReadRestriction::of(&note);
            assert_eq!(r.is_some(), readers.is_some());
            // Validation keeps non-text access items out of stored notes.
            if let Ok(bytes) = crate::note::encode_note(&note) {
                let nref = NoteRef::new(&bytes).unwrap();
                assert_eq!(ReadRestriction::of_ref(&nref).unwrap(), r);
            }
            for a in &callers {
                let by_restriction = match &r {
                    Some(r) => a.can_read_restricted(r),
                    None => a.can_read(&document(vec![])),
                };
                assert_eq!(
                    by_restriction,
                    a.can_read(&note),
                    "{:?} reading {readers:?}/{authors:?}",
                    a.user()
                );
            }
        }
    }

    #[test]
    fn matching_ignores_case_and_spaces_and_knows_roles() {
        let mut acl = Acl::for_creator(Some("Alice"));
        acl.roles = vec!["Sales".into()];
        acl.entries[0].roles = vec!["Sales".into()];
        let a = acl.access(Some("alice"));
        for entry in ["ALICE", " alice ", "[sales]", "[ Sales ]", "*"] {
            assert!(a.named_by(entry), "{entry:?}");
        }
        for entry in ["", "[]", "bob", "[Sales", "Sales", "[alice]"] {
            assert!(!a.named_by(entry), "{entry:?}");
        }
        let anon = acl.access(None);
        assert!(anon.named_by("*") && !anon.named_by("alice") && !anon.named_by(""));
    }
}
