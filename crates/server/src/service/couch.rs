//! The CouchDB door's operations (`http::couch` carries them), with the
//! same access rules as every other door: a database the caller may not
//! see answers as a missing one; reads need Reader, writes Author, and
//! each document written is checked as native replication checks a
//! pushed one (`replicate.rs`'s `may_write`: create rights, `$Authors`
//! for an Author, delete rights for a deletion); `$Readers` decides every
//! leaf, row and count a caller is shown (`couch::ReadCheck`).
//!
//! Errors come back as CouchDB's error objects (`couch::CouchError`).

use super::replicate::may_write;
use super::{Caller, Service};
use crate::ServerError;
use couch::{ChangesPage, ConflictIndex, CouchError, CouchResult, Doc, Edit, Mode, Rev};
use nsf::{Access, AccessLevel, Acl, Database, Note, NsfError, Seq};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait of a long-polled change feed between two looks at the
/// shutdown flag.
const WAIT_SLICE: Duration = Duration::from_millis(500);

/// A database as the door uses it: the database, its conflict index and
/// the caller's access.
pub struct CouchDb {
    pub db: Arc<Database>,
    pub index: Arc<ConflictIndex>,
    pub access: Access,
}

impl CouchDb {
    fn visible(&self) -> impl Fn(&Note) -> bool + Sync + '_ {
        move |n: &Note| self.access.can_read(n)
    }

    /// The document `id` as the caller sees it.
    pub fn doc(&self, id: &str) -> CouchResult<Option<Doc>> {
        Ok(couch::load_doc(&self.db, &self.index, id, &self.visible())?)
    }
}

/// A server error as a CouchDB error object.
pub fn couch_error(e: ServerError) -> CouchError {
    match e {
        ServerError::BadRequest(m) | ServerError::Setting { reason: m, .. } => {
            CouchError::bad_request(m)
        }
        ServerError::Unauthenticated(m) => CouchError::unauthorized(m),
        ServerError::Forbidden(m) => CouchError::forbidden(m),
        ServerError::NotFound(m) | ServerError::NoSuchUser(m) => CouchError::not_found(m),
        ServerError::SaveConflict(_) | ServerError::UserExists(_) => CouchError::conflict(),
        ServerError::TooLarge(m) => CouchError::too_large(m),
        e @ ServerError::Busy(_) => CouchError::unavailable(e.to_string()),
        e => CouchError::internal(e.to_string()),
    }
}

impl Service {
    /// The database named `name` for `caller`, who needs `level` in it.
    pub fn couch_db(
        &self,
        caller: &Caller,
        name: &str,
        level: AccessLevel,
    ) -> CouchResult<CouchDb> {
        let path = couch::db_path_of_name(name)?;
        let (db, access) = self.reach(caller, &path).map_err(|e| match e {
            ServerError::NotFound(_) => CouchError::not_found("Database does not exist."),
            e => couch_error(e),
        })?;
        if access.level() < level {
            return Err(couch_error(super::access::denied(caller, db.path())));
        }
        let index = ConflictIndex::of(&db)?;
        Ok(CouchDb { db, index, access })
    }

    /// The names of the databases the caller may see that have one.
    pub fn couch_all_dbs(&self, caller: &Caller) -> CouchResult<Vec<String>> {
        let mut names: Vec<String> = self
            .list_databases(caller, None)
            .map_err(couch_error)?
            .into_iter()
            .filter_map(|d| couch::db_name_of_path(&d.path))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Creates database `name` (server administrators; the creator
    /// becomes its Manager, as with every door).
    pub fn couch_create_db(&self, caller: &Caller, name: &str) -> CouchResult<()> {
        let path = couch::db_path_of_name(name)?;
        if !caller.admin {
            return Err(couch_error(ServerError::Forbidden(
                "only server administrators may create databases".into(),
            )));
        }
        let db = match self.engine.create_database(&path, name) {
            Ok(db) => db,
            Err(NsfError::DatabaseExists(_)) => return Err(CouchError::file_exists()),
            Err(e) => return Err(e.into()),
        };
        db.set_acl(&Acl::for_creator(caller.user.as_deref()))?;
        Ok(())
    }

    /// Deletes database `name` (its Manager or an administrator).
    pub fn couch_delete_db(&self, caller: &Caller, name: &str) -> CouchResult<()> {
        let path = couch::db_path_of_name(name)?;
        self.delete_database(caller, &path).map_err(|e| match e {
            ServerError::NotFound(_) => CouchError::not_found("Database does not exist."),
            e => couch_error(e),
        })
    }

    /// `GET /{db}`: counts as the caller sees them.
    pub fn couch_db_info(&self, caller: &Caller, name: &str) -> CouchResult<Value> {
        let d = self.couch_db(caller, name, AccessLevel::Reader)?;
        let counts = couch::doc_counts(&d.db, &d.index, &d.visible())?;
        let info = d.db.info()?;
        Ok(json!({
            "db_name": name,
            "doc_count": counts.live,
            "doc_del_count": counts.deleted,
            "update_seq": d.db.last_seq().0,
            "purge_seq": 0,
            "compact_running": false,
            "disk_format_version": 8,
            "instance_start_time": "0",
            "sizes": {"file": info.file_size, "external": 0, "active": 0},
            "props": {},
        }))
    }

    /// Writes documents in one transaction (`couch::write_docs`).
    pub fn couch_write(
        &self,
        caller: &Caller,
        name: &str,
        edits: Vec<Edit>,
        mode: Mode,
    ) -> CouchResult<Vec<CouchResult<Rev>>> {
        let d = self.couch_db(caller, name, AccessLevel::Author)?;
        let access = d.access.clone();
        let check = Box::new(move |incoming: &Note, held: Option<&Note>| {
            may_write(&access, incoming, held)
        });
        Ok(couch::write_docs(&d.db, &d.index, edits, mode, check)?)
    }

    /// The documents `ids` as the caller sees them, in order.
    pub fn couch_docs(
        &self,
        caller: &Caller,
        name: &str,
        ids: &[String],
    ) -> CouchResult<Vec<Option<Doc>>> {
        let d = self.couch_db(caller, name, AccessLevel::Reader)?;
        ids.iter().map(|id| d.doc(id)).collect()
    }

    /// The change feed: at once if something the caller may read changed
    /// after `since`, else (`wait`) when something does or the wait is over.
    pub fn couch_changes(
        &self,
        caller: &Caller,
        name: &str,
        since: Option<u64>,
        limit: usize,
        (all_leaves, include_docs): (bool, bool),
        wait: Option<Duration>,
    ) -> CouchResult<ChangesPage> {
        let d = self.couch_db(caller, name, AccessLevel::Reader)?;
        let since = since.unwrap_or_else(|| d.db.last_seq().0);
        let deadline = wait.map(|w| Instant::now() + w);
        let mut from = Seq(since);
        loop {
            let index = ConflictIndex::of(&d.db)?;
            let page = couch::changes(
                &d.db,
                &index,
                from,
                limit,
                all_leaves,
                include_docs,
                &d.visible(),
            )?;
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let waiting = page.rows.is_empty()
                && left.is_some_and(|l| !l.is_zero())
                && !*self.draining.borrow();
            if !waiting {
                return Ok(page);
            }
            from = Seq(page.last_seq);
            let slice = left.unwrap_or_default().min(WAIT_SLICE);
            d.db.wait_for_change(from, slice)?;
        }
    }

    /// `_all_docs`: the live documents the caller may read, by id.
    pub fn couch_all_docs(
        &self,
        caller: &Caller,
        name: &str,
    ) -> CouchResult<(Vec<couch::AllDocsRow>, u64)> {
        let d = self.couch_db(caller, name, AccessLevel::Reader)?;
        let rows = couch::all_docs(&d.db, &d.index, &d.visible())?;
        Ok((rows, d.db.last_seq().0))
    }

    /// `_local/{id}`: read (`body` none), write or delete.
    pub fn couch_local(
        &self,
        caller: &Caller,
        name: &str,
        id: &str,
        op: LocalOp,
    ) -> CouchResult<Value> {
        // A replicator checkpoints on its source too, where a puller may
        // only read: Reader suffices, as in CouchDB.
        let d = self.couch_db(caller, name, AccessLevel::Reader)?;
        match op {
            LocalOp::Get => Ok(Value::Object(couch::get_local(&d.db, id)?)),
            LocalOp::Put(body) => {
                let rev = couch::put_local(&d.db, id, body)?;
                Ok(json!({"ok": true, "id": format!("_local/{id}"), "rev": rev}))
            }
            LocalOp::Delete(rev) => {
                let rev = couch::delete_local(&d.db, id, rev.as_deref())?;
                Ok(json!({"ok": true, "id": format!("_local/{id}"), "rev": rev}))
            }
        }
    }

    /// A stable id of this server for `GET /` (CouchDB's `uuid`, which
    /// replicators fold into their checkpoint ids): derived from the data
    /// directory.
    pub fn couch_server_uuid(&self) -> String {
        use sha2::{Digest, Sha256};
        let dir = self.engine.data_dir().to_string_lossy().into_owned();
        let h = Sha256::digest(format!("folio couch server\0{dir}").as_bytes());
        h[..16].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// What to do with a `_local` document.
pub enum LocalOp {
    Get,
    Put(Map<String, Value>),
    Delete(Option<String>),
}
