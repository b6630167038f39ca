//! Names: a CouchDB document id and its note's UNID, a CouchDB database
//! name and its Folio path (design.md §11.9).
//!
//! ```text
//!   document id "8A1F…" (a UNID's 32 upper-case hex digits)  -> that UNID
//!   any other id                                    -> SHA-256("folio couch id v1\0" + id)[..16],
//!                                                      the id kept in the note's $DocId
//!   database "team", "acme/sales"                  <-> team.fdb, acme/sales.fdb
//! ```
//!
//! A note's id is its `$DocId`, or else its UNID: a document made by a
//! native client shows under its UNID, and one made here keeps the id it
//! was given. Reading an id checks the note found answers to that id, so
//! even a hash collision could never show one document under another's id.
//! A database name follows CouchDB's rule (a lower-case letter, then
//! lower-case letters, digits and `_$()+-/`); a Folio path whose name
//! breaks it is not reachable through this door (and not listed).

use crate::error::{CouchError, CouchResult};
use nsf::{ItemValue, Note, Unid};
use sha2::{Digest, Sha256};

/// Longest document id accepted, in bytes.
const MAX_ID: usize = 1_024;

/// The UNID of the note that holds document `id`.
pub fn unid_of_id(id: &str) -> Unid {
    if let Some(u) = direct_unid(id) {
        return u;
    }
    let mut h = Sha256::new();
    h.update(b"folio couch id v1\0");
    h.update(id.as_bytes());
    let mut unid = [0u8; 16];
    unid.copy_from_slice(&h.finalize()[..16]);
    Unid(unid)
}

/// The UNID an id spells, if it is one in its canonical (upper-case) form.
fn direct_unid(id: &str) -> Option<Unid> {
    let canonical = id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b));
    canonical.then(|| id.parse().ok()).flatten()
}

/// Whether `id` needs a `$DocId` item (it is not its UNID).
pub(crate) fn needs_doc_id(id: &str) -> bool {
    direct_unid(id).is_none()
}

/// The CouchDB id of a note (a conflict document's is that of the
/// document it answers, which `tree.rs` reads from that one).
pub fn doc_id_of(note: &Note) -> String {
    match note.item(nsf::COUCH_ITEMS[0]).map(|i| &i.value) {
        Some(ItemValue::Text(id)) => id.clone(),
        _ => note.oid.unid.to_string(),
    }
}

/// Refuses ids CouchDB refuses: empty, too long, or starting with `_`
/// but for design documents (local documents take their own route).
pub fn validate_doc_id(id: &str) -> CouchResult<()> {
    if id.is_empty() {
        return Err(CouchError::bad_request("Document id must not be empty"));
    }
    if id.len() > MAX_ID {
        return Err(CouchError::bad_request(format!(
            "Document id is longer than {MAX_ID} bytes"
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(CouchError::bad_request(
            "Document id must not contain control characters",
        ));
    }
    if id.starts_with('_') && !id.starts_with("_design/") {
        return Err(CouchError::bad_request(
            "Only reserved document ids may start with underscore.",
        ));
    }
    Ok(())
}

/// The Folio path of database `name`, or why the name is refused.
pub fn db_path_of_name(name: &str) -> CouchResult<String> {
    let illegal = || CouchError {
        status: 400,
        error: "illegal_database_name",
        reason: format!(
            "Name: {:?}. Only lowercase characters (a-z), digits (0-9), and any of the \
                 characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.",
            name.chars().take(80).collect::<String>()
        ),
    };
    let first_ok = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase());
    let rest_ok = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_$()+-/".contains(&b));
    if !first_ok || !rest_ok || name.len() > 236 {
        return Err(illegal());
    }
    let path = format!("{name}.fdb");
    nsf::DbPath::parse(&path).map_err(|_| illegal())?;
    Ok(path)
}

/// The CouchDB name of the database at `path`, if it has one.
pub fn db_name_of_path(path: &str) -> Option<String> {
    let name = path.strip_suffix(".fdb")?;
    let path_back = db_path_of_name(name).ok()?;
    (path_back == path).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_map_to_unids_one_way_only() {
        let u = Unid([0xAB; 16]);
        assert_eq!(unid_of_id(&u.to_string()), u, "a UNID is its own id");
        assert!(!needs_doc_id(&u.to_string()));
        let lower = u.to_string().to_lowercase();
        assert_ne!(unid_of_id(&lower), u, "only the canonical spelling");
        assert!(needs_doc_id(&lower));
        assert_eq!(unid_of_id("team-notes"), unid_of_id("team-notes"));
        assert_ne!(unid_of_id("a"), unid_of_id("b"));
    }

    #[test]
    fn document_ids_follow_couchdb() {
        assert!(validate_doc_id("x").is_ok());
        assert!(validate_doc_id("_design/v").is_ok());
        for bad in ["", "_x", "_local/x", "a\nb"] {
            assert!(validate_doc_id(bad).is_err(), "{bad:?}");
        }
        assert!(validate_doc_id(&"a".repeat(1025)).is_err());
    }

    #[test]
    fn database_names_map_to_paths_and_back() {
        assert_eq!(db_path_of_name("team").unwrap(), "team.fdb");
        assert_eq!(db_path_of_name("acme/sales").unwrap(), "acme/sales.fdb");
        assert_eq!(db_name_of_path("acme/sales.fdb").unwrap(), "acme/sales");
        for bad in [
            "", "Team", "1team", "_users", "a//b", "a/", "a b", "a.b", "a/./b",
        ] {
            let e = db_path_of_name(bad).unwrap_err();
            assert_eq!(e.error, "illegal_database_name", "{bad:?}");
        }
        assert_eq!(db_name_of_path("Mail/alice.fdb"), None);
        assert_eq!(db_name_of_path("a.b.fdb"), None);
        assert_eq!(db_name_of_path("notes.nsf"), None);
    }
}
