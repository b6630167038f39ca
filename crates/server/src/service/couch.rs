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

    /// Where a feed from `since` starts reading, and the `last_seq` it
    /// reports until it sees a change the caller may read: `since`, or for
    /// `now` (none) the caller's last visible change (a scan; the
    /// database's own last change would count hidden ones).
    fn start(&self, since: Option<u64>) -> CouchResult<(u64, u64)> {
        let since = match since {
            Some(s) => s,
            None => couch::doc_counts(&self.db, &self.index, &self.visible())?.last_seq,
        };
        Ok((since, since))
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
            "update_seq": counts.last_seq,
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
        let readable = access.clone();
        let check = Box::new(move |incoming: &Note, held: Option<&Note>| {
            may_write(&access, incoming, held)
        });
        let read_check = Box::new(move |n: &Note| readable.can_read(n));
        let visible = d.visible();
        let rights = (
            check as couch::WriteCheck,
            read_check as couch::WriteReadCheck,
        );
        let written = couch::write_docs(&d.db, &d.index, edits, mode, rights, &visible)?;
        Ok(written)
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

    /// The change feed: at once if something the caller may read (and
    /// `keep` keeps) changed after `since`, else (`wait`) when something
    /// does or the wait is over. `since` none is `now`: the caller's last
    /// visible change. The answer's `last_seq` never counts a change the
    /// caller may not read (`couch::ChangesPage`).
    #[allow(clippy::too_many_arguments)]
    pub fn couch_changes(
        &self,
        caller: &Caller,
        name: &str,
        since: Option<u64>,
        limit: usize,
        (all_leaves, include_docs): (bool, bool),
        keep: &Keep,
        wait: Option<Duration>,
    ) -> CouchResult<ChangesPage> {
        let d = self.couch_db(caller, name, AccessLevel::Reader)?;
        let (mut from, mut reported) = d.start(since)?;
        let deadline = wait.map(|w| Instant::now() + w);
        loop {
            let index = ConflictIndex::of(&d.db)?;
            let mut page = couch::changes(
                &d.db,
                &index,
                Seq(from),
                limit,
                (all_leaves, include_docs),
                &d.visible(),
                keep.as_ref(),
            )?;
            if page.last_seq > from {
                reported = page.last_seq;
            }
            from = page.scanned;
            page.last_seq = reported;
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let waiting = page.rows.is_empty()
                && left.is_some_and(|l| !l.is_zero())
                && !*self.draining.borrow();
            if !waiting {
                return Ok(page);
            }
            let slice = left.unwrap_or_default().min(WAIT_SLICE);
            d.db.wait_for_change(Seq(from), slice)?;
        }
    }

    /// A continuous change feed (`feed=continuous` or `eventsource`): rows
    /// as they happen, a heartbeat when nothing happened for `heartbeat`,
    /// until `limit` rows, `timeout`, the server stopping or `out`
    /// answering false (the client went away); then `End` with the
    /// `last_seq` to resume from.
    #[allow(clippy::too_many_arguments)]
    pub fn couch_feed(
        &self,
        caller: &Caller,
        name: &str,
        since: Option<u64>,
        limit: usize,
        (all_leaves, include_docs): (bool, bool),
        keep: &Keep,
        (heartbeat, timeout): (Option<Duration>, Duration),
        out: &mut dyn FnMut(FeedEvent) -> bool,
    ) -> CouchResult<()> {
        let d = self.couch_db(caller, name, AccessLevel::Reader)?;
        let (mut from, mut reported) = d.start(since)?;
        let deadline = Instant::now() + timeout;
        let mut beat = Instant::now();
        let mut sent = 0usize;
        while sent < limit && !*self.draining.borrow() {
            let index = ConflictIndex::of(&d.db)?;
            let page = couch::changes(
                &d.db,
                &index,
                Seq(from),
                limit - sent,
                (all_leaves, include_docs),
                &d.visible(),
                keep.as_ref(),
            )?;
            if page.last_seq > from {
                reported = page.last_seq;
            }
            from = page.scanned;
            if !page.rows.is_empty() {
                beat = Instant::now();
                for row in page.rows {
                    sent += 1;
                    if !out(FeedEvent::Row(row)) {
                        return Ok(());
                    }
                }
                continue;
            }
            let now = Instant::now();
            if now >= deadline || !out(FeedEvent::Tick) {
                break;
            }
            let next_beat = heartbeat.map(|h| beat + h);
            if next_beat.is_some_and(|b| now >= b) {
                if !out(FeedEvent::Heartbeat) {
                    return Ok(());
                }
                beat = now;
            }
            let until = next_beat.map_or(deadline, |b| b.max(now).min(deadline));
            let slice = until
                .saturating_duration_since(now)
                .clamp(Duration::from_millis(1), WAIT_SLICE);
            d.db.wait_for_change(Seq(from), slice)?;
        }
        out(FeedEvent::End(reported));
        Ok(())
    }

    /// `_all_docs`: the live documents the caller may read, by id, and
    /// (`with_seq`) the caller's `update_seq` (another scan).
    pub fn couch_all_docs(
        &self,
        caller: &Caller,
        name: &str,
        with_seq: bool,
    ) -> CouchResult<(Vec<couch::AllDocsRow>, u64)> {
        let d = self.couch_db(caller, name, AccessLevel::Reader)?;
        let rows = couch::all_docs(&d.db, &d.index, &d.visible())?;
        let seq = match with_seq {
            true => d.start(None)?.1,
            false => 0,
        };
        Ok((rows, seq))
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

/// Which documents a change feed shows (its filter).
pub type Keep = Box<dyn Fn(&Doc) -> bool + Send + Sync>;

/// What a continuous change feed hands its writer.
pub enum FeedEvent {
    Row(couch::Change),
    /// Nothing happened for the heartbeat.
    Heartbeat,
    /// Between two waits: is the client still there?
    Tick,
    /// The feed ends; resume from this `last_seq`.
    End(u64),
}

/// What to do with a `_local` document.
pub enum LocalOp {
    Get,
    Put(Map<String, Value>),
    Delete(Option<String>),
}
