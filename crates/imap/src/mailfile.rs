//! A mail file as IMAP mailboxes (docs/mail.md "IMAP" has the table):
//!
//! ```text
//!   INBOX          the Inbox folder
//!   Drafts         the Drafts view      \Drafts
//!   Sent           the Sent view        \Sent
//!   All Documents  the All Documents view  \All
//!   Trash          a user folder called Trash, if there is one  \Trash
//!   anything else  a user folder of that name
//! ```
//!
//! A message is a document; its UID is its note id in the mail file,
//! which is never reused (design.md I55), so the same message has the same
//! UID in every mailbox and across restarts; UIDVALIDITY is taken from the
//! file's instance id, which changes exactly when note ids may have been
//! (fixup, restore, copy). Flags are the text list item `IMAPFlags`, so
//! they are logged and replicate like any item. The bytes served are the
//! original MIME for mail that came by SMTP (the attachment `OriginalMIME`
//! names) and a rendering (`mail::mime::render`) for everything else.
//!
//! Every read goes through the user's [`Access`]: a document `$Readers`
//! hides from them is in no snapshot, so in no count, SEARCH or FETCH.

use crate::store::{MailboxInfo, Mailstore, MessageMeta, Snapshot, SpecialUse, Transfer};
use crate::{ImapError, ImapResult};
use mail::item;
use mail::mime::render;
use nsf::{
    Access, Database, ForeignAttachment, ForeignContent, ForeignNote, ForeignOutcome, Item,
    ItemUpdate, ItemValue, Note, NoteId, OriginatorId, Timestamp, Unid,
};
use std::io::Read;
use std::sync::Arc;
use views::{ColumnDef, Kind, Row, Sort, Start, ViewDef, Views};

/// The item holding a message's IMAP flags (text list: `\Seen`, ...,
/// then keywords).
pub const FLAGS_ITEM: &str = "IMAPFlags";

/// The item holding a copy's INTERNALDATE, the original's (date-time);
/// without it, INTERNALDATE is when the document was added to the file.
pub const IMAP_DATE_ITEM: &str = "IMAPDate";

/// Changes read at a time when looking for what left a mailbox.
const VANISHED_PAGE: usize = 1000;

/// The built-in mailboxes: IMAP name, view or folder, special use.
const BUILT_IN: [(&str, &str, Option<SpecialUse>); 4] = [
    ("INBOX", mail::INBOX, None),
    ("Drafts", "Drafts", Some(SpecialUse::Drafts)),
    ("Sent", "Sent", Some(SpecialUse::Sent)),
    ("All Documents", "All Documents", Some(SpecialUse::All)),
];

/// Views of the template that are not mailboxes.
const NOT_MAILBOXES: [&str; 2] = ["Calendar", mail::NOTICES_VIEW];

/// A person's mail file seen through their access (see the module docs).
pub struct MailFileStore {
    pub(crate) db: Arc<Database>,
    pub(crate) views: Arc<Views>,
    pub(crate) access: Access,
}

/// Where a mailbox's messages come from.
pub(crate) struct Source {
    /// The folder or view's name in the mail file.
    pub(crate) design: String,
    pub(crate) folder: bool,
    pub(crate) special: Option<SpecialUse>,
}

impl MailFileStore {
    pub fn new(db: Arc<Database>, views: Arc<Views>, access: Access) -> MailFileStore {
        MailFileStore { db, views, access }
    }

    pub(crate) fn source(&self, name: &str) -> ImapResult<Source> {
        if let Some((_, design, special)) = BUILT_IN
            .iter()
            .find(|(n, _, _)| *n == name || (*n == "INBOX" && name.eq_ignore_ascii_case(n)))
        {
            return Ok(Source {
                design: design.to_string(),
                folder: *design == mail::INBOX,
                special: *special,
            });
        }
        let folders = self.user_folders()?;
        if folders.iter().any(|f| f == name) {
            return Ok(Source {
                design: name.to_string(),
                folder: true,
                special: (name == "Trash").then_some(SpecialUse::Trash),
            });
        }
        Err(ImapError::NoMailbox(name.to_string()))
    }

    pub(crate) fn user_folders(&self) -> ImapResult<Vec<String>> {
        Ok(self
            .views
            .list(&self.db)?
            .into_iter()
            .filter(|(n, k)| *k == Kind::Folder && n != mail::INBOX)
            .map(|(n, _)| n)
            .collect())
    }

    /// The readable document with note id `uid`.
    pub(crate) fn note(&self, uid: u32) -> ImapResult<Note> {
        match self.db.get_by_id(NoteId(uid))? {
            Some(n) if !n.deleted && self.access.can_read(&n) => Ok(n),
            _ => Err(ImapError::NoMessage(uid)),
        }
    }

    fn original_name(note: &Note) -> Option<String> {
        match note.item(item::ORIGINAL_MIME).map(|i| &i.value) {
            Some(ItemValue::Text(name)) => note
                .attachments()
                .any(|a| &a.name == name)
                .then(|| name.clone()),
            _ => None,
        }
    }

    pub(crate) fn read_attachment(&self, unid: Unid, name: &str) -> Option<Vec<u8>> {
        let mut r = self.db.open_attachment(unid, name).ok()?;
        let mut out = Vec::new();
        r.read_to_end(&mut out).ok()?;
        Some(out)
    }

    fn bytes_of(&self, note: &Note) -> ImapResult<Vec<u8>> {
        let unid = note.oid.unid;
        if let Some(name) = Self::original_name(note) {
            return self
                .read_attachment(unid, &name)
                .ok_or_else(|| ImapError::Refused(format!("the message's {name} cannot be read")));
        }
        Ok(render(note, &unid.to_string(), &mut |name| {
            self.read_attachment(unid, name)
        }))
    }

    fn meta(&self, note: &Note) -> ImapResult<MessageMeta> {
        let size = match Self::original_name(note) {
            Some(name) => note
                .attachments()
                .find(|a| a.name == name)
                .map_or(0, |a| a.size),
            None => self.bytes_of(note)?.len() as u64,
        };
        Ok(MessageMeta {
            uid: note.note_id.0,
            flags: flags_of(note),
            internal_date: match note.item(IMAP_DATE_ITEM).map(|i| &i.value) {
                Some(ItemValue::DateTime(t)) => t.0,
                _ => note.added.0,
            },
            size: u32::try_from(size).unwrap_or(u32::MAX),
            modseq: note.change_seq.0.max(1),
        })
    }
}

fn flags_of(note: &Note) -> Vec<String> {
    match note.item(FLAGS_ITEM).map(|i| &i.value) {
        Some(ItemValue::TextList(l)) => l.clone(),
        Some(ItemValue::Text(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

impl Mailstore for MailFileStore {
    fn list(&self) -> ImapResult<Vec<MailboxInfo>> {
        let mut out: Vec<MailboxInfo> = BUILT_IN
            .iter()
            .map(|(name, design, special)| MailboxInfo {
                name: name.to_string(),
                special: *special,
                computed: *design != mail::INBOX,
            })
            .collect();
        for f in self.user_folders()? {
            if NOT_MAILBOXES.contains(&f.as_str()) {
                continue;
            }
            out.push(MailboxInfo {
                special: (f == "Trash").then_some(SpecialUse::Trash),
                name: f,
                computed: false,
            });
        }
        Ok(out)
    }

    fn snapshot(&self, mailbox: &str) -> ImapResult<Snapshot> {
        let source = self.source(mailbox)?;
        // Read first: a change after it shows in a message's modseq
        // above it, never the other way round.
        let highest = self.db.last_seq().0;
        let info = self.db.info()?;
        let view = self
            .views
            .open(&self.db, &source.design)?
            .seen_by(self.access.clone());
        let count = view.count()? as usize;
        let rows = view.read(&Start::Position(0), count, false, false)?;
        let mut ids: Vec<u32> = rows
            .into_iter()
            .filter_map(|r| match r {
                Row::Entry { note_id, .. } => Some(note_id.0),
                Row::Category { .. } => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut messages = Vec::with_capacity(ids.len());
        for id in ids {
            // A document deleted since the view was read is left out.
            if let Ok(note) = self.note(id) {
                messages.push(self.meta(&note)?);
            }
        }
        let highest = messages
            .iter()
            .map(|m| m.modseq)
            .fold(highest.max(1), u64::max);
        Ok(Snapshot {
            uid_validity: uid_validity(info.instance_id.0),
            uid_next: info.next_note_id.max(1),
            highest_modseq: highest,
            messages,
        })
    }

    fn message(&self, _mailbox: &str, uid: u32) -> ImapResult<Vec<u8>> {
        let note = self.note(uid)?;
        self.bytes_of(&note)
    }

    fn set_flags(
        &self,
        _mailbox: &str,
        uid: u32,
        flags: &[String],
        unchanged_since: Option<u64>,
    ) -> ImapResult<Option<u64>> {
        let note = self.note(uid)?;
        if !self.access.can_edit(&note) {
            return Err(ImapError::Refused(format!(
                "your access does not let you change message {uid}"
            )));
        }
        let set = ItemUpdate::Set(Item {
            name: FLAGS_ITEM.into(),
            value: ItemValue::TextList(flags.to_vec()),
        });
        let Some(limit) = unchanged_since else {
            let meta = self.db.update(note.oid.unid, vec![set], None, true)?;
            return Ok(Some(meta.change_seq.0));
        };
        if note.change_seq.0 > limit {
            return Ok(None);
        }
        // Based on the version just compared: a change in between makes
        // it a save conflict, which is what UNCHANGEDSINCE reports.
        match self
            .db
            .update(note.oid.unid, vec![set], Some(note.oid.seq_num), false)
        {
            Ok(meta) => Ok(Some(meta.change_seq.0)),
            Err(nsf::NsfError::SaveConflict { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn expunge(&self, mailbox: &str, uids: &[u32]) -> ImapResult<()> {
        let source = self.source(mailbox)?;
        let others = if source.folder {
            self.other_folders(&source.design)?
        } else {
            Vec::new()
        };
        // Every message checked before any is touched: a refusal changes
        // nothing.
        let mut notes = Vec::with_capacity(uids.len());
        for &uid in uids {
            let note = self.note(uid)?;
            if !self.access.can_delete(&note) {
                return Err(ImapError::Refused(format!(
                    "your access does not let you remove message {uid}"
                )));
            }
            notes.push(note);
        }
        for note in notes {
            let uid = note.note_id.0;
            if !self.held_elsewhere(&note, &others)? {
                self.db.delete(note.oid.unid, None, true)?;
                continue;
            }
            // Another folder holds the same document (filed there through
            // Folio's own API): it leaves this folder only, and the
            // \Deleted meant for this folder does not follow it there.
            self.views
                .folder_remove(&self.db, &source.design, &[note.oid.unid])?;
            let mut flags = flags_of(&note);
            flags.retain(|f| !f.eq_ignore_ascii_case("\\Deleted"));
            self.set_flags(mailbox, uid, &flags, None)?;
        }
        Ok(())
    }

    fn transfer(&self, from: &str, uids: &[u32], to: &str, how: Transfer) -> ImapResult<Vec<u32>> {
        self.transfer_messages(from, uids, to, how)
    }

    fn vanished_since(&self, mailbox: &str, since: u64, uid_next: u32) -> ImapResult<Vec<u32>> {
        self.source(mailbox)?;
        let mut out = Vec::new();
        let mut cursor = nsf::Seq(since);
        loop {
            let page = self.db.modified_since(cursor, VANISHED_PAGE)?;
            let Some(last) = page.last() else { break };
            cursor = last.change_seq;
            // A stub is a message deleted (EXPUNGE, MOVE, or through
            // Folio's API); a readable document changed since may have
            // left this folder while staying in another (I62).
            out.extend(
                page.iter()
                    .filter(|n| n.note_id.0 < uid_next)
                    .filter(|n| n.deleted || self.access.can_read(n))
                    .map(|n| n.note_id.0),
            );
            if page.len() < VANISHED_PAGE {
                break;
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    fn append(
        &self,
        mailbox: &str,
        flags: &[String],
        date: Option<i64>,
        message: &[u8],
    ) -> ImapResult<u32> {
        if !self.access.can_create() {
            return Err(ImapError::Refused(
                "your access to this mail file does not let you add messages".into(),
            ));
        }
        let source = self.source(mailbox)?;
        let posted = match source.special {
            Some(SpecialUse::Drafts) => false,
            Some(SpecialUse::All) => {
                return Err(ImapError::Refused(
                    "All Documents shows every document: APPEND to a folder, Drafts or Sent".into(),
                ))
            }
            _ => true,
        };
        let inbound =
            mail::mime::to_document(message).map_err(|e| ImapError::NotAMessage(e.to_string()))?;
        let mut msg = mail::memo_from(&inbound, None);
        let now = Timestamp::now();
        let h = msg.header_mut();
        h.posted = posted.then_some(now);
        h.original_mime = Some(mail::ORIGINAL_MIME_NAME.to_string());
        let mut items = msg.to_items();
        if source.folder {
            // Filed like delivered mail: not the owner's Sent.
            items.push(Item {
                name: item::DELIVERED_DATE.into(),
                value: ItemValue::DateTime(now),
            });
        }
        items.push(Item {
            name: FLAGS_ITEM.into(),
            value: ItemValue::TextList(flags.to_vec()),
        });
        if let Some(date) = date {
            // The client's INTERNALDATE (RFC 9051 §6.3.12), kept as a
            // copy keeps the original's.
            items.push(Item {
                name: IMAP_DATE_ITEM.into(),
                value: ItemValue::DateTime(Timestamp(date)),
            });
        }
        let unid = Unid::random();
        let note = ForeignNote {
            oid: OriginatorId {
                unid,
                seq_num: 1,
                seq_time: now,
            },
            created: now,
            modified: now,
            deleted: false,
            items,
            attachments: vec![ForeignAttachment {
                name: mail::ORIGINAL_MIME_NAME.into(),
                mime: mail::ORIGINAL_MIME_TYPE.into(),
                content: ForeignContent::Bytes(message.to_vec()),
            }],
            revisions: Vec::new(),
        };
        // One transaction: the document and its bytes are durable
        // together (I55), then it joins the folder.
        let stored = self
            .db
            .put_foreign_batch(vec![note])
            .pop()
            .unwrap_or_else(|| Err(nsf::NsfError::Invalid("nothing stored".into())))?;
        let meta = match stored {
            ForeignOutcome::Stored(m) => m,
            other => {
                return Err(ImapError::Refused(format!(
                    "the message was not stored: {other:?}"
                )))
            }
        };
        if source.folder {
            self.views.folder_add(&self.db, &source.design, &[unid])?;
        }
        Ok(meta.note_id.0)
    }

    fn create(&self, mailbox: &str) -> ImapResult<()> {
        if self.taken(mailbox)? {
            return Err(ImapError::MailboxExists(mailbox.to_string()));
        }
        let column = |title: &str, formula: &str, sort| ColumnDef {
            title: title.into(),
            formula: formula.into(),
            sort,
            case_sensitive: false,
            categorized: false,
        };
        let def = ViewDef::folder(
            mailbox,
            vec![
                column("Date", "@Created", Sort::Desc),
                column("From", "From", Sort::None),
                column("Subject", "Subject", Sort::None),
            ],
        );
        self.views.create(&self.db, def)?;
        Ok(())
    }

    fn delete(&self, mailbox: &str) -> ImapResult<()> {
        let source = self.source(mailbox)?;
        if !source.folder || source.design == mail::INBOX {
            return Err(ImapError::Refused(format!(
                "{mailbox} belongs to the mail template and cannot be deleted"
            )));
        }
        self.views.delete(&self.db, &source.design)?;
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> ImapResult<()> {
        let source = self.source(from)?;
        if !source.folder || source.design == mail::INBOX {
            return Err(ImapError::Refused(format!(
                "{from} belongs to the mail template and cannot be renamed"
            )));
        }
        let below = format!("{}/", source.design);
        if to.starts_with(&below) {
            return Err(ImapError::Refused(format!(
                "{from} cannot move below itself"
            )));
        }
        let case_only = to.eq_ignore_ascii_case(&source.design);
        if !case_only && self.taken(to)? {
            return Err(ImapError::MailboxExists(to.to_string()));
        }
        // The folder, then every folder below it (RFC 9051 §6.3.6).
        let mut pairs = vec![(source.design.clone(), to.to_string())];
        for f in self.user_folders()? {
            if let Some(rest) = f.strip_prefix(&below) {
                let new = format!("{to}/{rest}");
                if self.taken(&new)? {
                    return Err(ImapError::MailboxExists(new));
                }
                pairs.push((f, new));
            }
        }
        self.views.rename(&self.db, &pairs)?;
        Ok(())
    }

    fn change_marker(&self) -> u64 {
        self.db.last_seq().0
    }
}

impl MailFileStore {
    /// Whether a new folder may not be called `name`: empty, a name of
    /// the template (in any case), or a folder's already.
    fn taken(&self, name: &str) -> ImapResult<bool> {
        let template = BUILT_IN
            .iter()
            .any(|(n, d, _)| n.eq_ignore_ascii_case(name) || d.eq_ignore_ascii_case(name))
            || NOT_MAILBOXES.iter().any(|n| n.eq_ignore_ascii_case(name));
        Ok(name.is_empty()
            || template
            || self
                .user_folders()?
                .iter()
                .any(|f| f.eq_ignore_ascii_case(name)))
    }
}

/// UIDVALIDITY from the instance id: non-zero, and different whenever the
/// instance id is (but for one chance in 2³²).
fn uid_validity(instance: u64) -> u32 {
    ((instance ^ (instance >> 32)) as u32).max(1)
}
