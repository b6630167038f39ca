//! What the commands print: the one JSON form of each value a store
//! returns, embedded or networked alike.
//!
//! Single results (a database's description, a document, an ACL, the
//! statistics) are printed as pretty JSON; streams (documents of a list
//! or search, rows of a view) as one compact JSON object per line, so they
//! pipe into other tools. Keys come out sorted. Ids are upper-case hex,
//! times RFC 3339 in UTC, as in the HTTP API (docs/http.md).

use crate::error::{FolioError, FolioResult};
use crate::store::{Doc, RemovedUser, Sent, ViewSummary, ViewUpdate};
use protocol::{DatabaseInfo, Found, NoteMeta, Row, StatValue, Statistic};
use serde_json::{json, Value as Json};
use std::io::Write;

/// Writes `v` as pretty JSON and a newline.
pub fn pretty(out: &mut dyn Write, v: &Json) -> FolioResult<()> {
    serde_json::to_writer_pretty(&mut *out, v).map_err(|e| write_failed(e.into()))?;
    writeln!(out).map_err(write_failed)
}

/// Writes `v` as compact JSON on one line.
pub fn line(out: &mut dyn Write, v: &Json) -> FolioResult<()> {
    serde_json::to_writer(&mut *out, v).map_err(|e| write_failed(e.into()))?;
    writeln!(out).map_err(write_failed)
}

/// Writes `text` and a newline.
pub fn text(out: &mut dyn Write, text: &str) -> FolioResult<()> {
    writeln!(out, "{text}").map_err(write_failed)
}

/// A failed write to standard output.
pub fn write_failed(e: std::io::Error) -> FolioError {
    FolioError::io("writing to standard output", e)
}

/// A value that serializes as JSON (a report with plain fields).
pub fn serialized(v: &impl serde::Serialize) -> FolioResult<Json> {
    serde_json::to_value(v).map_err(|e| FolioError::Internal(format!("printing a report: {e}")))
}

/// A person of the mail directory.
pub fn person(p: &mail::Person) -> Json {
    server::json::person(p)
}

/// A person taken out of the directory, and what became of their file.
pub fn removed_user(r: &RemovedUser) -> Json {
    server::json::removed_person(&r.person, r.file)
}

/// Where a message went.
pub fn sent(s: &Sent) -> Json {
    match s {
        Sent::Deposited(d) => json!({
            "message_id": d.message_id.as_str(),
            "mail_box": d.mail_box.as_str(),
            "unid": d.unid.to_string(),
        }),
        Sent::Draft(d) => json!({
            "draft": d.unid.to_string(),
            "mail_file": d.mail_file.as_str(),
        }),
    }
}

/// A database's description (the HTTP API's form).
pub fn database_info(i: &DatabaseInfo) -> Json {
    server::json::database_info(i)
}

/// A document: its items and `$` system fields.
pub fn document(d: &Doc) -> Json {
    Json::Object(d.json.clone())
}

/// A document's ids after a change.
pub fn changed(m: &NoteMeta) -> Json {
    json!({"$unid": m.unid.to_string(), "$seq": m.seq_num})
}

/// An attachment as stored.
pub fn attachment(name: &str, size: u64) -> Json {
    json!({"name": name, "size": size})
}

/// A view row (entries name their columns by title; date-times are RFC
/// 3339, lists arrays, errors null).
pub fn row(row: &Row, titles: &[String]) -> Json {
    server::json::row(row, titles)
}

/// The last line of `view read --total`.
pub fn total(n: u64) -> Json {
    json!({ "total": n })
}

/// Where entries with a key start and how many there are.
pub fn found(f: Option<Found>) -> Json {
    match f {
        Some(f) => json!({"position": f.position, "count": f.count}),
        None => json!({"position": null, "count": 0}),
    }
}

/// What `view update` did.
pub fn view_update(u: &ViewUpdate) -> Json {
    json!({"notes_seen": u.notes_seen, "last_seq": u.last_seq})
}

/// A view or folder in `view list`.
pub fn view_summary(v: &ViewSummary) -> Json {
    json!({"name": v.name, "kind": v.kind})
}

/// An access-control list (docs/http.md, "Access control").
pub fn acl(acl: &nsf::Acl) -> FolioResult<Json> {
    serialized(acl)
}

/// The server's statistics, one key per statistic (gauges to three
/// decimals).
pub fn statistics(stats: &[Statistic]) -> Json {
    let map = stats
        .iter()
        .map(|s| {
            let v = match &s.value {
                StatValue::Count(n) => json!(n),
                StatValue::Gauge(g) => json!((g * 1000.0).round() / 1000.0),
                StatValue::Text(t) => json!(t),
            };
            (s.name.clone(), v)
        })
        .collect();
    Json::Object(map)
}

/// What an archive run did.
pub fn archived(a: &protocol::ArchiveSummary) -> Json {
    json!({
        "dir": a.dir,
        "extents_copied": a.extents,
        "bytes_copied": a.bytes,
        "archived_lsn": a.archived_lsn,
        "extents_waiting": a.waiting,
        "millis": a.millis,
    })
}

/// The transaction log's state.
pub fn log_info(i: &translog::LogInfo) -> Json {
    json!({
        "style": format!("{:?}", i.style).to_lowercase(),
        "tuning": format!("{:?}", i.tuning).to_lowercase(),
        "extent_size": i.extent_size,
        "max_size": i.max_size,
        "extents": i.extents_on_disk,
        "capacity": i.capacity,
        "bytes_in_use": i.bytes_in_use,
        "checkpoint_lsn": i.checkpoint_lsn.0,
        "redo_lsn": i.redo_lsn.0,
        "durable_lsn": i.durable_lsn.0,
        "end_lsn": i.end_lsn.0,
        "epoch": i.epoch,
        "failed": i.failed,
        "commits": i.commits,
        "fsyncs": i.fsyncs,
        "bytes_written": i.bytes_written,
        "log_full_events": i.log_full_events,
        "checkpoints": i.checkpoints,
        "archive_dir": i.archive_dir,
        "archived_lsn": i.archived_lsn.0,
        "extents_awaiting_archive": i.extents_awaiting_archive,
        "archive_needed": i.archive_needed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{Cursor, NoteId, Timestamp, Unid, Value};

    #[test]
    fn a_database_is_described_with_hex_ids_and_an_rfc3339_time() {
        let i = DatabaseInfo {
            path: "mail/a.fdb".into(),
            title: "A".into(),
            replica_id: 0xAB,
            instance_id: 0x1_0000_0000,
            created: Timestamp(0),
            note_count: 3,
            file_size: 8192,
            sequence: Cursor(7),
            needs_fixup: false,
            attachment_logical_bytes: 0,
            attachment_stored_bytes: 0,
        };
        assert_eq!(
            database_info(&i),
            json!({
                "path": "mail/a.fdb", "title": "A",
                "replica_id": "00000000000000AB", "instance_id": "0000000100000000",
                "created": "1970-01-01T00:00:00.000000Z",
                "note_count": 3, "file_size": 8192, "sequence": 7, "needs_fixup": false,
                "attachment_logical_bytes": 0, "attachment_stored_bytes": 0,
            })
        );
    }

    #[test]
    fn rows_name_their_columns_and_untitled_ones_by_position() {
        let entry = Row::Entry {
            position: 4,
            note_id: NoteId(9),
            unid: Unid([0x11; 16]),
            columns: vec![Value::Text(vec!["a".into()]), Value::Number(vec![1.0, 2.0])],
        };
        assert_eq!(
            row(&entry, &["S".into()]),
            json!({"position": 4, "note_id": 9, "unid": "11".repeat(16),
                   "columns": {"S": "a", "$1": [1.0, 2.0]}})
        );
        let cat = Row::Category {
            value: Value::Text(vec!["x".into()]),
            count: 2,
        };
        assert_eq!(row(&cat, &[]), json!({"category": "x", "count": 2}));
    }
}
