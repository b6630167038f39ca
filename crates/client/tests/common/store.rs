//! The fake server's data: databases of JSON documents in `BTreeMap`s,
//! attachments as byte vectors. Just enough behavior for the client's
//! answers to mean something (sequence numbers, save conflicts, change
//! cursors, deletion stubs).

use client::{
    Cursor, DatabaseInfo, DatabaseSummary, Document, ErrorCode, NoteId, NoteMeta, Timestamp, Unid,
};
use std::collections::{BTreeMap, BTreeSet};

/// What a request failed with: the error frame's code and message.
pub type Failure = (ErrorCode, String);

pub fn not_found(what: impl std::fmt::Display) -> Failure {
    (ErrorCode::NotFound, format!("no {what}"))
}

#[derive(Default)]
pub struct Store {
    pub dbs: BTreeMap<String, Db>,
    next_unid: u128,
}

pub struct Db {
    pub title: String,
    pub docs: BTreeMap<Unid, Doc>,
    pub seq: u64,
    next_note: u32,
    pub acl: String,
    pub attachments: BTreeMap<(Unid, String), (String, Vec<u8>)>,
    pub folders: BTreeMap<String, BTreeSet<Unid>>,
}

pub struct Doc {
    pub meta: NoteMeta,
    pub deleted: bool,
    pub json: String,
}

impl Doc {
    pub fn document(&self) -> Document {
        Document {
            meta: self.meta,
            deleted: self.deleted,
            json: self.json.clone(),
        }
    }
}

impl Store {
    pub fn create_db(&mut self, path: &str, title: &str) -> Result<DatabaseInfo, Failure> {
        if self.dbs.contains_key(path) {
            return Err((ErrorCode::BadRequest, format!("{path} exists")));
        }
        let db = Db {
            title: title.into(),
            docs: BTreeMap::new(),
            seq: 0,
            next_note: 1,
            acl: r#"{"default":"editor"}"#.into(),
            attachments: BTreeMap::new(),
            folders: BTreeMap::new(),
        };
        self.dbs.insert(path.into(), db);
        self.info(path)
    }

    pub fn list(&self, folder: Option<&str>) -> Vec<DatabaseSummary> {
        self.dbs
            .iter()
            .filter(|(path, _)| folder.is_none_or(|f| path.starts_with(f)))
            .map(|(path, db)| DatabaseSummary {
                path: path.clone(),
                title: db.title.clone(),
            })
            .collect()
    }

    pub fn info(&self, path: &str) -> Result<DatabaseInfo, Failure> {
        let db = self.db(path)?;
        Ok(DatabaseInfo {
            path: path.into(),
            title: db.title.clone(),
            replica_id: 7,
            instance_id: 8,
            created: Timestamp(1_700_000_000_000_000),
            note_count: db.docs.len() as u64,
            file_size: 4096,
            sequence: Cursor(db.seq),
            needs_fixup: false,
            attachment_logical_bytes: 0,
            attachment_stored_bytes: 0,
        })
    }

    pub fn db(&self, path: &str) -> Result<&Db, Failure> {
        self.dbs
            .get(path)
            .ok_or_else(|| not_found(format!("database {path}")))
    }

    pub fn db_mut(&mut self, path: &str) -> Result<&mut Db, Failure> {
        self.dbs
            .get_mut(path)
            .ok_or_else(|| not_found(format!("database {path}")))
    }

    pub fn create_doc(&mut self, path: &str, json: &str) -> Result<NoteMeta, Failure> {
        check_json(json)?;
        self.next_unid += 1;
        // Big-endian, so UNIDs sort in creation order.
        let unid = Unid(self.next_unid.to_be_bytes());
        let db = self.db_mut(path)?;
        db.seq += 1;
        let meta = NoteMeta {
            note_id: NoteId(db.next_note),
            unid,
            seq_num: 1,
            change: Cursor(db.seq),
        };
        db.next_note += 1;
        let doc = Doc {
            meta,
            deleted: false,
            json: json.into(),
        };
        db.docs.insert(unid, doc);
        Ok(meta)
    }
}

impl Db {
    pub fn doc(&self, unid: &Unid) -> Result<&Doc, Failure> {
        self.docs
            .get(unid)
            .ok_or_else(|| not_found(format!("document {unid}")))
    }

    pub fn doc_by_note(&self, note: NoteId) -> Result<&Doc, Failure> {
        self.docs
            .values()
            .find(|d| d.meta.note_id == note)
            .ok_or_else(|| not_found(format!("document {}", note.0)))
    }

    /// Applies an edit if `based_on` is current (or `force`): the edit
    /// gets the next sequence number and change cursor.
    pub fn edit(
        &mut self,
        unid: &Unid,
        based_on: Option<u32>,
        force: bool,
        change: impl FnOnce(&mut Doc),
    ) -> Result<NoteMeta, Failure> {
        let seq = self.seq + 1;
        let doc = self
            .docs
            .get_mut(unid)
            .ok_or_else(|| not_found(format!("document {unid}")))?;
        if let Some(based_on) = based_on.filter(|b| !force && *b != doc.meta.seq_num) {
            return Err((
                ErrorCode::SaveConflict,
                format!(
                    "document {unid} is at sequence {}, not {based_on}",
                    doc.meta.seq_num
                ),
            ));
        }
        change(doc);
        doc.meta.seq_num += 1;
        doc.meta.change = Cursor(seq);
        self.seq = seq;
        Ok(doc.meta)
    }

    /// The documents changed after `since`, oldest change first.
    pub fn changes(&self, since: Cursor, limit: u32) -> (Vec<Document>, Cursor, bool) {
        let mut changed: Vec<&Doc> = self
            .docs
            .values()
            .filter(|d| d.meta.change > since)
            .collect();
        changed.sort_by_key(|d| d.meta.change);
        let more = changed.len() > limit as usize;
        changed.truncate(limit as usize);
        let next = changed.last().map_or(since, |d| d.meta.change);
        (changed.into_iter().map(Doc::document).collect(), next, more)
    }

    /// Live documents whose JSON contains `text` (`SELECT @All`: all).
    pub fn matching(&self, text: &str) -> Vec<Document> {
        self.docs
            .values()
            .filter(|d| !d.deleted && (text == "SELECT @All" || d.json.contains(text)))
            .map(Doc::document)
            .collect()
    }
}

pub fn check_json(json: &str) -> Result<(), Failure> {
    if json.trim_start().starts_with('{') && json.trim_end().ends_with('}') {
        Ok(())
    } else {
        Err((ErrorCode::BadRequest, "not a JSON object".into()))
    }
}
