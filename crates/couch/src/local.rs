//! `_local` documents: a replicator's checkpoints. They are never
//! replicated and never in the change feed, so they are not notes: each
//! is a replication history entry of the database (`nsf` keeps those
//! beside the notes, durable when written and not a change, I30), keyed
//! by a tag and the SHA-256 of its id. Their revisions are `0-N`, N
//! counting the writes, and an update must name the current one, as in
//! CouchDB.

use crate::error::{CouchError, CouchResult};
use nsf::Database;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// Largest `_local` document, in bytes of JSON.
const MAX_LOCAL: usize = 64 << 10;

/// Serialises the read-check-write of one database's local documents.
#[derive(Default)]
struct LocalLock(Mutex<()>);

fn key(id: &str) -> Vec<u8> {
    let mut k = b"couch-local\0".to_vec();
    k.extend_from_slice(&Sha256::digest(id.as_bytes()));
    k
}

fn read(db: &Database, id: &str) -> CouchResult<Option<Map<String, Value>>> {
    let k = key(id);
    let found = db
        .replication_histories()?
        .into_iter()
        .find(|(key, _)| *key == k);
    Ok(match found {
        Some((_, v)) if !v.is_empty() => match serde_json::from_slice(&v) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        },
        _ => None,
    })
}

/// The local document `_local/{id}`.
pub fn get_local(db: &Database, id: &str) -> CouchResult<Map<String, Value>> {
    read(db, id)?.ok_or_else(|| CouchError::not_found("missing"))
}

fn rev_number(doc: &Map<String, Value>) -> u64 {
    doc.get("_rev")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("0-"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Writes `_local/{id}`; `body` must name the current revision if there
/// is one. Returns the new revision.
pub fn put_local(db: &Database, id: &str, mut body: Map<String, Value>) -> CouchResult<String> {
    let lock = db.extension(LocalLock::default);
    let _held = lock.0.lock();
    let current = read(db, id)?;
    let given = body.get("_rev").cloned();
    match (&current, &given) {
        (None, None) => {}
        (None, Some(_)) => return Err(CouchError::conflict()),
        (Some(c), Some(g)) if c.get("_rev") == Some(g) => {}
        (Some(_), _) => return Err(CouchError::conflict()),
    }
    let rev = format!("0-{}", current.as_ref().map_or(0, rev_number) + 1);
    body.insert("_id".into(), json!(format!("_local/{id}")));
    body.insert("_rev".into(), json!(rev));
    let bytes = serde_json::to_vec(&body).map_err(|e| CouchError::internal(e.to_string()))?;
    if bytes.len() > MAX_LOCAL {
        return Err(CouchError::too_large(format!(
            "a _local document is at most {MAX_LOCAL} bytes"
        )));
    }
    db.put_replication_history(&key(id), &bytes)?;
    Ok(rev)
}

/// Deletes `_local/{id}`, whose current revision `rev` must name.
pub fn delete_local(db: &Database, id: &str, rev: Option<&str>) -> CouchResult<String> {
    let lock = db.extension(LocalLock::default);
    let _held = lock.0.lock();
    let current = read(db, id)?.ok_or_else(|| CouchError::not_found("missing"))?;
    if current.get("_rev").and_then(Value::as_str) != rev {
        return Err(CouchError::conflict());
    }
    db.put_replication_history(&key(id), &[])?;
    Ok("0-0".into())
}
