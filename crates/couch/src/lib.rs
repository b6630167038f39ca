//! The CouchDB replication protocol over nsf databases: what PouchDB and
//! CouchDB need of a database to replicate with it, with no network of
//! its own (the server's HTTP door carries it, `server::http::couch`).
//!
//! A CouchDB document is a tree of revisions whose leaves are its
//! current versions; a Folio document is one note (the winner) plus the
//! conflict documents replication made of the versions that lost
//! (design.md §11.4). This crate maps one onto the other (design.md
//! §11.9 is the specification):
//!
//! ```text
//!   CouchDB                          Folio
//!   _id "team-notes"         <->     UNID = SHA-256("folio couch id v1\0" + id)[..16],
//!                                    $DocId = "team-notes"   (an id that is a UNID's
//!                                    32 upper-case hex digits is that UNID, no $DocId)
//!   leaf revisions           <->     the note and its conflict documents ($Ref = the note)
//!   _rev "N-hash"            <->     the version (seq N, seq_time, digest): $Rev when the
//!                                    version came through this door, else a hash of it
//!   _revisions (ancestors)   <->     $Revs, and the note's nsf revisions after it
//!   winning revision         <--     CouchDB's rule over the leaves, computed here
//! ```
//!
//! ```text
//!   attach.rs     _attachments: stubs, digests, inline and multipart content
//!   selector.rs   Mango selectors (a subset) for filtered change feeds
//!   rev.rs        revision ids: parse, the id of a version, of an edit
//!   id.rs         document ids and database names
//!   body.rs       a CouchDB document's fields as items and back
//!   tree.rs       a document's leaves: winner, conflicts, ancestry, revs_diff
//!   conflicts.rs  which conflict documents answer which document (an index)
//!   write.rs      _bulk_docs and PUT/DELETE: one transaction per request
//!   changes.rs    the change feed and _all_docs as CouchDB rows
//!   local.rs      _local documents: kept beside the database, never replicated
//!   error.rs      CouchDB's error objects
//! ```

mod attach;
mod body;
mod changes;
mod conflicts;
mod error;
mod id;
mod local;
mod rev;
mod selector;
mod tree;
mod write;

pub use attach::{
    attachment_infos, check_content, leaf_body, md5_digest, read_content, validate_att_name, AttIn,
    AttInfo, AttMode,
};
pub use body::{doc_json, fields_to_items};
pub use changes::{all_docs, changes, doc_counts, AllDocsRow, Change, ChangesPage, DocCounts};
pub use conflicts::ConflictIndex;
pub use error::{CouchError, CouchResult};
pub use id::{db_name_of_path, db_path_of_name, doc_id_of, unid_of_id, validate_doc_id};
pub use local::{delete_local, get_local, put_local};
pub use rev::{Rev, MAX_ANCESTORS};
pub use selector::Selector;
pub use tree::{load_doc, revs_diff, Doc, Leaf, ReadCheck};
pub use write::{parse_edit, write_docs, Edit, Mode, WriteCheck, WriteReadCheck};
