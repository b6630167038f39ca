//! The engine's values as the protocol carries them: both doors answer
//! with these types, so a value is converted in one place.

use crate::error::nsf_err;
use crate::ServerResult;
use nsf::{note_to_json, Database, Note};
use protocol::{Cursor, DatabaseInfo, Document, NoteId, NoteMeta, Row, Unid, Value};

/// A write's outcome.
pub(super) fn meta(m: nsf::NoteMeta) -> NoteMeta {
    NoteMeta {
        note_id: NoteId(m.note_id.0),
        unid: Unid(m.unid.0),
        seq_num: m.seq_num,
        change: Cursor(m.change_seq.0),
    }
}

/// A note as the protocol carries it.
pub fn document(n: &Note) -> Document {
    Document {
        meta: NoteMeta {
            note_id: NoteId(n.note_id.0),
            unid: Unid(n.oid.unid.0),
            seq_num: n.oid.seq_num,
            change: Cursor(n.change_seq.0),
        },
        deleted: n.deleted,
        json: if n.deleted {
            "{}".into()
        } else {
            note_to_json(n).to_string()
        },
    }
}

/// A database's description.
pub(super) fn database_info(db: &Database) -> ServerResult<DatabaseInfo> {
    let i = db.info().map_err(nsf_err)?;
    let usage = db.attachment_usage().map_err(nsf_err)?;
    Ok(DatabaseInfo {
        path: i.path,
        title: i.title,
        replica_id: i.replica_id.0,
        instance_id: i.instance_id.0,
        created: protocol::Timestamp(i.created.0),
        note_count: i.note_count,
        file_size: i.file_size,
        sequence: Cursor(i.sequence),
        needs_fixup: i.needs_fixup,
        attachment_logical_bytes: usage.logical_bytes,
        attachment_stored_bytes: usage.stored_bytes,
    })
}

/// A view row.
pub(super) fn wire_row(row: views::Row) -> Row {
    match row {
        views::Row::Entry {
            position,
            note_id,
            unid,
            columns,
        } => Row::Entry {
            position,
            note_id: NoteId(note_id.0),
            unid: Unid(unid.0),
            columns: columns.into_iter().map(wire_value).collect(),
        },
        views::Row::Category { category, count } => Row::Category {
            value: wire_value(category),
            count,
        },
    }
}

/// A column value.
fn wire_value(v: views::Value) -> Value {
    match v {
        views::Value::Text(l) => Value::Text(l),
        views::Value::Number(l) => Value::Number(l),
        views::Value::DateTime(l) => {
            Value::DateTime(l.into_iter().map(protocol::Timestamp).collect())
        }
        views::Value::Error(e) => Value::Error(e),
    }
}
