//! The one JSON form of the values the server hands out (a database's
//! description, a view row), printed by the HTTP API and by the CLI alike,
//! so both doors show a value the same way (docs/http.md). Ids are
//! upper-case hex, times RFC 3339 in UTC; values stay typed up to here.

use protocol::{DatabaseInfo, Row, Value};
use serde_json::{json, Map, Value as Json};

/// A database's description.
pub fn database_info(i: &DatabaseInfo) -> Json {
    json!({
        "path": i.path,
        "title": i.title,
        "replica_id": nsf::ReplicaId(i.replica_id).to_string(),
        "instance_id": nsf::DbInstanceId(i.instance_id).to_string(),
        "created": nsf::Timestamp(i.created.0).to_rfc3339(),
        "note_count": i.note_count,
        "file_size": i.file_size,
        "sequence": i.sequence.0,
        "needs_fixup": i.needs_fixup,
        "attachment_logical_bytes": i.attachment_logical_bytes,
        "attachment_stored_bytes": i.attachment_stored_bytes,
    })
}

/// A view row (entries name their columns by title).
pub fn row(row: &Row, titles: &[String]) -> Json {
    match row {
        Row::Entry {
            position,
            note_id,
            unid,
            columns,
        } => {
            let columns: Map<String, Json> = columns
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let title = titles.get(i).cloned().unwrap_or_else(|| format!("${i}"));
                    (title, value(v))
                })
                .collect();
            json!({
                "position": position,
                "note_id": note_id.0,
                "unid": unid.to_string(),
                "columns": columns,
            })
        }
        Row::Category { value: v, count } => json!({"category": value(v), "count": count}),
    }
}

/// A column value as the views layer shows it (one value as itself, a
/// list as an array, date-times as RFC 3339, errors as null).
pub fn value(v: &Value) -> Json {
    let v = match v {
        Value::Text(l) => views::Value::Text(l.clone()),
        Value::Number(l) => views::Value::Number(l.clone()),
        Value::DateTime(l) => views::Value::DateTime(l.iter().map(|t| t.0).collect()),
        Value::Error(e) => views::Value::Error(e.clone()),
    };
    views::value_json(&v)
}

/// A person in the mail directory (`GET /mail/users`, `folio mail
/// list-users`).
pub fn person(p: &mail::Person) -> Json {
    json!({
        "name": p.full_name,
        "short_name": p.short_name,
        "aliases": p.aliases,
        "mail_file": p.mail_file.as_str(),
        "server_user": p.server_user,
        "unid": p.unid.to_string(),
    })
}

/// A person taken out of the directory, and what became of their mail
/// file: `kept`, `deleted` or `absent` (`DELETE /mail/users/{name}`,
/// `folio mail remove-user`).
pub fn removed_person(p: &mail::Person, file: protocol::MailFileFate) -> Json {
    let file = match file {
        protocol::MailFileFate::Kept => "kept",
        protocol::MailFileFate::Deleted => "deleted",
        protocol::MailFileFate::Absent => "absent",
    };
    json!({
        "removed": p.full_name,
        "mail_file": p.mail_file.as_str(),
        "file": file,
    })
}
