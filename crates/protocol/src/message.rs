//! Requests and responses: the bodies of `Request`, `Response` and `Item`
//! frames, and of error frames.
//!
//! Bodies are encoded with postcard (serde): varint integers, length-
//! prefixed strings and sequences, and an enum's variant as its varint
//! index. It was chosen because its wire format is specified and frozen
//! (postcard 1.x), it is compact without a schema file, and its decoder is
//! bounds-checked: a length that runs past the body is an error, strings
//! are checked UTF-8, and sequences never preallocate more than serde's
//! cautious limit, so a lying length cannot make it allocate. A body must
//! be consumed exactly; trailing bytes are a malformed body. Variant
//! indexes are the wire tags, so new variants go at the end of an enum
//! (docs/protocol.md lists them).
//!
//! Documents travel as JSON text, in the mapping the CLI and the HTTP API
//! use (`nsf::json`): one format for people and programs, no second
//! binary item encoding to keep in step, and network compression takes
//! most of JSON's verbosity back.
//!
//! Which frames a request leads to:
//!
//! ```text
//!   most requests     Request ───────────────────────────▶ Response | Error
//!   PutAttachment     Request, Chunk*, End ─────────────▶ Response | Error
//!   SendMailFiles     Request, Chunk*, End ─────────────▶ Response | Error
//!   GetAttachment     Request ─▶ Item(AttachmentHeader), Chunk* ▶ Response | Error
//!   Search            Request ─▶ Item(SearchHit)* ──────▶ Response | Error
//!   Replicate         Request ─▶ Item(ReplicationPacket)* ▶ Response | Error
//! ```
//!
//! Error frames have a fixed body rather than a postcard one, so that any
//! version can read any version's errors (a refused handshake must be
//! readable whatever the client speaks): the code as `u16` LE, then the
//! message as UTF-8 up to the end of the body.

use crate::error::{ErrorCode, ProtocolError};
use crate::frame::FrameType;
use crate::ids::{CollectionHandle, Cursor, DbHandle, NoteId, Timestamp, Unid};
use crate::mailadmin::{MailAdminAnswer, MailAdminRequest};
use crate::mailfiles::MailFile;
use crate::meeting::{MeetingAnswer, MeetingRequest};
use crate::peer::{PeerReplicated, PeerReplication};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[cfg(test)]
use proptest_derive::Arbitrary;

/// Longest error message sent, in bytes; longer ones are cut at a
/// character boundary so an error frame always fits.
pub const MAX_ERROR_MESSAGE: usize = 4096;

/// A client's request. The variant order is the wire format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum Request {
    /// Creates a database file; answered with `DatabaseInfo`.
    CreateDatabase {
        /// Path relative to the data directory, e.g. `mail/alice.fdb`.
        path: String,
        /// Its title.
        title: String,
    },
    /// Lists databases, optionally only those under a folder; answered
    /// with `Databases`.
    ListDatabases {
        /// Folder prefix, e.g. `mail/`.
        folder: Option<String>,
    },
    /// Describes a database without opening it; answered with `DatabaseInfo`.
    DatabaseInfo {
        /// Path relative to the data directory.
        path: String,
    },
    /// Opens a database for this connection; answered with `DatabaseOpened`.
    OpenDatabase {
        /// Path relative to the data directory.
        path: String,
    },
    /// Releases a handle from `OpenDatabase`; answered with `Done`.
    CloseDatabase {
        /// The handle.
        db: DbHandle,
    },
    /// Creates a document from JSON; answered with `Saved`.
    CreateDocument {
        /// The database.
        db: DbHandle,
        /// The document's items as a JSON object.
        json: String,
    },
    /// Reads a document; answered with `Document`.
    ReadDocument {
        /// The database.
        db: DbHandle,
        /// Which document.
        doc: DocRef,
    },
    /// Updates a document (items set or, with `null`, removed); answered
    /// with `Saved`, or `SaveConflict` if `based_on` is not current.
    UpdateDocument {
        /// The database.
        db: DbHandle,
        /// The document.
        unid: Unid,
        /// The sequence number the edit was based on (`None`: current).
        based_on: Option<u32>,
        /// Save even if `based_on` is not current.
        force: bool,
        /// The changes as a JSON object.
        json: String,
    },
    /// Deletes a document, leaving a deletion stub; answered with `Saved`.
    DeleteDocument {
        /// The database.
        db: DbHandle,
        /// The document.
        unid: Unid,
        /// The sequence number the deletion was based on (`None`: current).
        based_on: Option<u32>,
        /// Delete even if `based_on` is not current.
        force: bool,
    },
    /// The documents (and deletion stubs) changed after a cursor, oldest
    /// change first; answered with `Changes`.
    ModifiedSince {
        /// The database.
        db: DbHandle,
        /// Changes after this position (`Cursor(0)`: from the beginning).
        since: Cursor,
        /// At most this many documents in the answer.
        limit: u32,
    },
    /// Starts an attachment upload: `Chunk` frames with the content follow,
    /// then an `End` frame; answered with `AttachmentStored`.
    PutAttachment {
        /// The database.
        db: DbHandle,
        /// The document the attachment belongs to.
        unid: Unid,
        /// The file name.
        name: String,
        /// The MIME type.
        mime: String,
        /// The content's size if known in advance (lets the server refuse
        /// a too large upload at once).
        size: Option<u64>,
    },
    /// Downloads an attachment: an `Item(AttachmentHeader)`, `Chunk`
    /// frames, then `AttachmentSent`.
    GetAttachment {
        /// The database.
        db: DbHandle,
        /// The document.
        unid: Unid,
        /// The file name.
        name: String,
    },
    /// Opens a view or folder index; answered with `CollectionOpened`.
    OpenCollection {
        /// The database.
        db: DbHandle,
        /// The view's or folder's name.
        name: String,
    },
    /// Reads a page of rows; answered with `Entries`.
    ReadEntries {
        /// The collection.
        collection: CollectionHandle,
        /// Where to start.
        start: Start,
        /// At most this many document rows.
        count: u32,
        /// Direction, category rows, total count.
        flags: ReadFlags,
    },
    /// Where the entries with a key start and how many there are;
    /// answered with `Found`.
    FindByKey {
        /// The collection.
        collection: CollectionHandle,
        /// The key (the first sorted column's text).
        key: String,
        /// Match entries whose key starts with `key`.
        prefix: bool,
    },
    /// Applies the database's changes since the index was last updated;
    /// answered with `CollectionUpdated`.
    UpdateCollection {
        /// The collection.
        collection: CollectionHandle,
    },
    /// Releases a handle from `OpenCollection`; answered with `Done`.
    CloseCollection {
        /// The collection.
        collection: CollectionHandle,
    },
    /// Adds documents to a folder; answered with `Done`.
    FolderAdd {
        /// The database.
        db: DbHandle,
        /// The folder's name.
        folder: String,
        /// The documents.
        unids: Vec<Unid>,
    },
    /// Removes documents from a folder; answered with `Done`.
    FolderRemove {
        /// The database.
        db: DbHandle,
        /// The folder's name.
        folder: String,
        /// The documents.
        unids: Vec<Unid>,
    },
    /// A formula search over a database's documents: one `Item(SearchHit)`
    /// per document found, then `SearchDone`.
    Search {
        /// The database.
        db: DbHandle,
        /// The selection formula, e.g. `SELECT Form = "Memo"`.
        formula: String,
        /// Only documents modified at or after this time.
        since: Option<Timestamp>,
    },
    /// The server's statistics; answered with `Statistics`.
    Statistics,
    /// A database's access-control list; answered with `Acl`. Needs
    /// Manager access, like every change to it.
    GetAcl {
        /// Path relative to the data directory.
        path: String,
    },
    /// Replaces a database's access-control list; answered with `Done`.
    SetAcl {
        /// Path relative to the data directory.
        path: String,
        /// The new list as JSON (docs/http.md, "Access control").
        json: String,
    },
    /// Who the server thinks the caller is and what a database grants
    /// them; answered with `Access`.
    MyAccess {
        /// Path relative to the data directory.
        path: String,
    },
    /// Creates a view or folder from its definition (JSON, as
    /// `views::ViewDef` serializes); answered with `Done`. Needs Designer
    /// access.
    CreateView {
        /// The database.
        db: DbHandle,
        /// The definition.
        json: String,
    },
    /// Mail user administration (server administrators only); answered
    /// with `MailAdmin`. See `mailadmin.rs`.
    MailAdmin(MailAdminRequest),
    /// Archive style: copies the completed log extents not yet archived
    /// to the archive directory, verifies them and lets the log reuse
    /// them; answered with `Archived`. Server administrators only.
    Archive {
        /// A directory on the server (default: `translog.archive_dir`).
        to: Option<String>,
    },
    /// Deletes a view or folder: its index and its design note go in one
    /// transaction, and the name may be defined again; answered with
    /// `Done`. Needs Designer access.
    DeleteView {
        /// The database.
        db: DbHandle,
        /// The view's or folder's name (case does not matter).
        name: String,
    },
    /// Online backup (archive style) of `dbs` (every database when
    /// empty) into `dest`, a directory on the server; answered with
    /// `BackedUp`. Server administrators only.
    Backup {
        /// An absolute directory on the server, empty or new.
        dest: String,
        /// Paths relative to the data directory.
        dbs: Vec<String>,
    },
    /// One step of a replication session with the server: the caller's
    /// side hands over its packets (the replica crate's wire form,
    /// opaque here), the server's side takes them, does what they ask on
    /// `db`, and streams back every packet it sends as an
    /// `Item(ReplicationPacket)`, then `Replicated`. The first step of a
    /// session opens it on this connection; it lives until it is over or
    /// the connection closes. Pull needs Reader access (documents the
    /// caller may not read never travel); push needs Author access, and
    /// each document is written only if the caller may write it.
    Replicate {
        /// The database.
        db: DbHandle,
        /// The session, chosen by the caller.
        session: u64,
        /// Which way documents flow, for the caller.
        direction: ReplicaDirection,
        /// The caller's packets, in order.
        #[serde(with = "crate::raw_bytes::list")]
        packets: Vec<Vec<u8>>,
    },
    /// The documents changed after `since` that the caller may read, as
    /// `ModifiedSince`, but if there are none yet, waits for a change for
    /// up to `timeout_ms` (at most the server's feed limit) and answers
    /// `Changes` with what came (maybe nothing: a heartbeat).
    WaitChanges {
        /// The database.
        db: DbHandle,
        /// Changes after this position.
        since: Cursor,
        /// At most this many documents in the answer.
        limit: u32,
        /// How long to wait for a first change, in milliseconds.
        timeout_ms: u32,
    },
    /// Sends a message of the mail template (deposited in a mail box for
    /// the router), or with `draft` saves it in the sender's own mail
    /// file; answered with `MailSent` once durable. The sender is the
    /// signed-in user's person in the directory; a server administrator
    /// may name another with `on_behalf_of` (a gateway or load driver
    /// acting for many people over few connections). See docs/mail.md.
    SendMail {
        /// The message's items as a JSON object (the `nsf::json` mapping
        /// of a Memo, Reply, Appointment or Notice, docs/mail.md).
        json: String,
        /// Save as a draft instead of sending.
        draft: bool,
        /// Send as this directory person (server administrators only).
        on_behalf_of: Option<String>,
    },
    /// A meeting operation (`meeting.rs`); answered with `Meeting` once
    /// its writes are durable. The acting person is the signed-in user's
    /// person; a server administrator may name another with
    /// `on_behalf_of`, as for `SendMail`.
    Meeting {
        /// What to do.
        op: MeetingRequest,
        /// Act as this directory person (server administrators only).
        on_behalf_of: Option<String>,
    },
    /// `SendMail` with files attached: the request's `Chunk`s carry the
    /// files' bytes back to back, in order, each exactly its declared
    /// size, then `End` (`mailfiles.rs`); answered with `MailSent` once
    /// the message and every file are durable. A message over the size
    /// limit is refused (413) before anything is stored.
    SendMailFiles {
        /// The message's items as a JSON object, as for `SendMail`.
        json: String,
        /// Save as a draft instead of sending.
        draft: bool,
        /// Send as this directory person (server administrators only).
        on_behalf_of: Option<String>,
        /// The files, in the order their bytes follow.
        files: Vec<MailFile>,
    },
    /// Replicates a database of this server with one on a peer server:
    /// the server connects to the peer itself and runs the pulls;
    /// answered with `PeerReplicated` once every pull's writes and
    /// history are durable on their target. Server administrators only.
    ReplicatePeer(PeerReplication),
    /// Deletes a database (its Manager or a server administrator);
    /// answered with `Done` once durable. Handles to it that any
    /// connection holds answer "the database was deleted" from then on.
    DeleteDatabase {
        /// The database's path.
        path: String,
    },
    /// Copies a database into a new one at `dst` (server administrators
    /// only); answered with `DatabaseCopied` once durable. `replica`: a
    /// new replica (the same replica id) filled by a full replication;
    /// otherwise a non-replica copy (a new replica id, the same
    /// documents, ACL, views and folders).
    CopyDatabase {
        /// The source's path.
        src: String,
        /// The new database's path (must not exist).
        dst: String,
        /// Make a replica rather than a copy.
        replica: bool,
    },
    /// Removes an attachment from a document the caller may edit, as an
    /// update that drops it; answered with `Saved` once durable. A
    /// missing attachment is 404 naming it.
    DeleteAttachment {
        /// The database.
        db: DbHandle,
        /// The document.
        unid: Unid,
        /// The file name.
        name: String,
        /// Only if the document is still at this sequence number.
        based_on: Option<u32>,
    },
    /// Compacts a database (docs/design.md §2.10): in place, while others
    /// read and write, keeping its instance id; or with `copy` rewritten
    /// under a new instance id (the database must not be in use). With
    /// `dry_run`, reports what it would give back and writes nothing.
    /// Answered with `Compacted` once durable. Needs Manager access (or
    /// a server administrator).
    Compact {
        /// Path relative to the data directory.
        path: String,
        /// Copy style instead of in place.
        copy: bool,
        /// Report only.
        dry_run: bool,
    },
}

/// Which way a replication session moves documents, for the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum ReplicaDirection {
    /// From the server to the caller: the server runs the source.
    Pull,
    /// From the caller to the server: the server runs the target.
    Push,
}

/// How a request names a document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum DocRef {
    /// By universal id.
    Unid(Unid),
    /// By note id in this database file.
    NoteId(NoteId),
}

/// Where a read of entries starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum Start {
    /// At this entry position (0-based, in the view's order).
    Position(u64),
    /// At the first entry whose key equals (or, with `prefix`, starts
    /// with) this text; reading backward, at the last such entry.
    Key {
        /// The key.
        key: String,
        /// Prefix match.
        prefix: bool,
    },
}

/// Options of a read of entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct ReadFlags {
    /// Read toward the beginning.
    pub backward: bool,
    /// Include category rows (categorized views).
    pub categories: bool,
    /// Also return the total number of entries.
    pub count: bool,
}

/// A server's answer (final in a `Response` frame, streamed in an `Item`
/// frame). The variant order is the wire format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum Response {
    /// The request succeeded and has nothing to return.
    Done,
    /// Answer to `ListDatabases`.
    Databases(Vec<DatabaseSummary>),
    /// Answer to `CreateDatabase` and `DatabaseInfo`.
    DatabaseInfo(DatabaseInfo),
    /// Answer to `OpenDatabase`.
    DatabaseOpened {
        /// The handle to use in later requests.
        db: DbHandle,
        /// The database.
        info: DatabaseInfo,
    },
    /// Answer to create, update and delete of a document.
    Saved(NoteMeta),
    /// Answer to `ReadDocument`.
    Document(Document),
    /// Answer to `ModifiedSince`.
    Changes {
        /// The changed documents and deletion stubs, oldest change first.
        docs: Vec<Document>,
        /// The cursor to ask from next time.
        next: Cursor,
        /// Whether more changes are waiting (the limit was reached).
        more: bool,
    },
    /// Final answer to `PutAttachment`.
    AttachmentStored {
        /// Bytes stored.
        size: u64,
    },
    /// First item of a `GetAttachment`; the content follows in chunks.
    AttachmentHeader {
        /// File name.
        name: String,
        /// MIME type.
        mime: String,
        /// Content size in bytes.
        size: u64,
    },
    /// Final answer to `GetAttachment`.
    AttachmentSent {
        /// Bytes sent.
        size: u64,
    },
    /// Answer to `OpenCollection`.
    CollectionOpened {
        /// The handle to use in later requests.
        collection: CollectionHandle,
        /// Column titles.
        titles: Vec<String>,
        /// Whether the first column is a category.
        categorized: bool,
        /// Number of document entries.
        count: u64,
        /// The change sequence the index reflects.
        seq: u64,
    },
    /// Answer to `ReadEntries`.
    Entries {
        /// The rows, in reading order.
        rows: Vec<Row>,
        /// Total number of entries, if asked for.
        total: Option<u64>,
    },
    /// Answer to `FindByKey`: `None` if no entry has the key.
    Found(Option<Found>),
    /// Answer to `UpdateCollection`.
    CollectionUpdated {
        /// The change sequence the index reflects now.
        seq: u64,
        /// Documents whose entries changed.
        changed: u64,
    },
    /// One document found by a `Search` (an item).
    SearchHit(Document),
    /// Final answer to `Search`.
    SearchDone {
        /// Documents found.
        found: u64,
    },
    /// Answer to `Statistics`.
    Statistics(Vec<Statistic>),
    /// Answer to `GetAcl`: the list as JSON.
    Acl {
        /// The access-control list as JSON.
        json: String,
    },
    /// Answer to `MyAccess`.
    Access {
        /// The caller's name (`None`: anonymous).
        user: Option<String>,
        /// Access level name, e.g. `editor`.
        level: String,
        /// Roles the caller holds in the database.
        roles: Vec<String>,
    },
    /// Answer to `MailAdmin`.
    MailAdmin(MailAdminAnswer),
    /// Answer to `Archive`.
    Archived(ArchiveSummary),
    /// Answer to `Backup`.
    BackedUp(BackupSummary),
    /// A packet of the server's replication side (an item of `Replicate`).
    ReplicationPacket(#[serde(with = "crate::raw_bytes")] Vec<u8>),
    /// Final answer to `Replicate`: whether the server's side of the
    /// session is over (finished or failed; it is then forgotten).
    Replicated {
        /// The session is over on the server.
        over: bool,
    },
    /// Answer to `SendMail`.
    MailSent {
        /// The message's id (the same in every copy).
        message_id: String,
        /// Where it was stored: the mail box it waits in, or for a draft
        /// the sender's mail file.
        stored_in: String,
        /// The stored document.
        unid: Unid,
        /// Whether it was saved as a draft.
        draft: bool,
    },
    /// Answer to `Meeting`.
    Meeting(MeetingAnswer),
    /// Answer to `ReplicatePeer`.
    PeerReplicated(PeerReplicated),
    /// Answer to `CopyDatabase`.
    DatabaseCopied {
        /// The new database.
        info: DatabaseInfo,
        /// Documents copied.
        documents: u64,
        /// View and folder definitions defined on a non-replica copy.
        views: u64,
    },
    /// Answer to `Compact`.
    Compacted(CompactSummary),
}

/// What a compact did (or, for a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct CompactSummary {
    /// Path relative to the data directory.
    pub path: String,
    /// `in-place` or `copy`.
    pub style: String,
    /// Nothing was written: what it would do.
    pub dry_run: bool,
    /// File size before.
    pub bytes_before: u64,
    /// File size after.
    pub bytes_after: u64,
    /// Page count before.
    pub pages_before: u32,
    /// Page count after.
    pub pages_after: u32,
    /// Pages on the free list before.
    pub free_pages_before: u64,
    /// Pages neither referenced nor free (leaked by interrupted
    /// commits), reclaimed.
    pub leaked_pages: u64,
    /// Pages moved down from the end of the file.
    pub pages_moved: u64,
    /// Logged move steps.
    pub steps: u64,
    /// Unlogged view indexes dropped, rebuilt on next use.
    pub views_reset: u64,
    /// Whether the file was cut (false: nothing to cut, or writers grew
    /// it meanwhile; run again).
    pub truncated: bool,
    /// Instance id before.
    pub instance_before: u64,
    /// Instance id after (the same in place).
    pub instance_after: u64,
    /// Copy style: notes dropped as unreadable.
    pub notes_lost: u64,
    /// Copy style: attachments dropped as unreadable.
    pub attachments_lost: u64,
}

/// What an online backup did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct BackupSummary {
    /// The backup directory (on the server).
    pub dest: String,
    /// The databases copied.
    pub databases: Vec<String>,
    /// The log the range belongs to, 16 hex digits.
    pub log_id: String,
    /// Restore rolls forward from this LSN ...
    pub start_lsn: u64,
    /// ... to at least this one.
    pub end_lsn: u64,
    /// Bytes read from database files.
    pub bytes: u64,
    /// How long the backup took, in milliseconds.
    pub millis: u64,
}

/// What an archive run did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct ArchiveSummary {
    /// The archive directory (on the server).
    pub dir: String,
    /// Extents copied and verified.
    pub extents: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// The archive mark afterwards: the log below this LSN is archived.
    pub archived_lsn: u64,
    /// Completed extents still waiting (written during the run).
    pub waiting: u64,
    /// How long the run took, in milliseconds.
    pub millis: u64,
}

/// A database in a list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct DatabaseSummary {
    /// Path relative to the data directory.
    pub path: String,
    /// Title.
    pub title: String,
}

/// What a database is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct DatabaseInfo {
    /// Path relative to the data directory.
    pub path: String,
    /// Title.
    pub title: String,
    /// Replica id, shared by all replicas.
    pub replica_id: u64,
    /// Instance id of this file.
    pub instance_id: u64,
    /// Creation time.
    pub created: Timestamp,
    /// Number of documents.
    pub note_count: u64,
    /// File size in bytes.
    pub file_size: u64,
    /// Last change sequence.
    pub sequence: Cursor,
    /// Whether the file needs a fixup.
    pub needs_fixup: bool,
    /// Original bytes of the attachments its documents keep in the
    /// server's attachment store (each reference counted).
    pub attachment_logical_bytes: u64,
    /// What the store keeps for them: each distinct content once, in its
    /// stored (possibly compressed) form.
    pub attachment_stored_bytes: u64,
}

/// Which version of which document a write produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct NoteMeta {
    /// Note id in this file.
    pub note_id: NoteId,
    /// Universal id.
    pub unid: Unid,
    /// Sequence number (edits so far); what `based_on` refers to.
    pub seq_num: u32,
    /// Position of this change in the database's change sequence.
    pub change: Cursor,
}

/// A document (or a deletion stub) as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct Document {
    /// Its ids and version.
    pub meta: NoteMeta,
    /// Whether this is a deletion stub (then `json` is `{}`).
    pub deleted: bool,
    /// Items and system fields as a JSON object (`nsf::json` mapping).
    pub json: String,
}

/// One row of a view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum Row {
    /// A document's entry.
    Entry {
        /// Its position in the view.
        position: u64,
        /// The document's note id.
        note_id: NoteId,
        /// The document's universal id.
        unid: Unid,
        /// Column values.
        columns: Vec<Value>,
    },
    /// A category heading.
    Category {
        /// The category value.
        value: Value,
        /// Entries under it.
        count: u64,
    },
}

/// A column value: formula values are lists.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum Value {
    /// Text list.
    Text(Vec<String>),
    /// Number list.
    Number(Vec<f64>),
    /// Date-time list.
    DateTime(Vec<Timestamp>),
    /// The formula produced an error.
    Error(String),
}

/// Result of a find by key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct Found {
    /// Position of the first matching entry.
    pub position: u64,
    /// Number of matching entries.
    pub count: u64,
}

/// One server statistic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct Statistic {
    /// Dotted name, e.g. `log.fsyncs_per_s`.
    pub name: String,
    /// Its value.
    pub value: StatValue,
}

/// A statistic's value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum StatValue {
    /// A count.
    Count(u64),
    /// A measurement.
    Gauge(f64),
    /// Text (a state, a name).
    Text(String),
}

/// Whether a request is answered once, streams its answer, or uploads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One `Response` or `Error`.
    Single,
    /// The client sends `Chunk`s and an `End`; then one `Response` or `Error`.
    Upload,
    /// `Item`s and `Chunk`s, then one `Response` or `Error`.
    Download,
    /// `Item`s, then one `Response` or `Error`.
    Stream,
}

impl Request {
    /// How the request's frames flow.
    pub fn shape(&self) -> Shape {
        match self {
            Request::PutAttachment { .. } | Request::SendMailFiles { .. } => Shape::Upload,
            Request::GetAttachment { .. } => Shape::Download,
            Request::Search { .. } | Request::Replicate { .. } => Shape::Stream,
            _ => Shape::Single,
        }
    }

    /// The request's body bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        encode(self)
    }

    /// A request from its body bytes.
    pub fn decode(body: &[u8]) -> Result<Request, ProtocolError> {
        decode(body, FrameType::Request)
    }
}

impl Response {
    /// The response's body bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        encode(self)
    }

    /// A response from the body of a `Response` or `Item` frame.
    pub fn decode(body: &[u8], frame: FrameType) -> Result<Response, ProtocolError> {
        decode(body, frame)
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, ProtocolError> {
    postcard::to_allocvec(value).map_err(|e| ProtocolError::Misuse(e.to_string()))
}

fn decode<T: DeserializeOwned>(body: &[u8], frame: FrameType) -> Result<T, ProtocolError> {
    let bad = |reason: String| ProtocolError::BadBody { frame, reason };
    let (value, rest) = postcard::take_from_bytes(body).map_err(|e| bad(e.to_string()))?;
    if !rest.is_empty() {
        return Err(bad(format!("{} bytes after the message", rest.len())));
    }
    Ok(value)
}

/// The body of an error frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// What kind of error.
    pub code: ErrorCode,
    /// For people: what went wrong and, where it helps, what to do.
    pub message: String,
}

impl Failure {
    /// A failure with `message` cut to [`MAX_ERROR_MESSAGE`] bytes.
    pub fn new(code: ErrorCode, message: &str) -> Failure {
        let mut end = message.len().min(MAX_ERROR_MESSAGE);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        Failure {
            code,
            message: message[..end].to_string(),
        }
    }

    /// The error frame's body bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 + self.message.len());
        out.extend_from_slice(&self.code.as_u16().to_le_bytes());
        out.extend_from_slice(self.message.as_bytes());
        out
    }

    /// A failure from an error frame's body. Invalid UTF-8 in the message
    /// is replaced rather than refused: the error is still worth reporting.
    pub fn decode(body: &[u8]) -> Result<Failure, ProtocolError> {
        let Some((code, message)) = body.split_first_chunk::<2>() else {
            return Err(ProtocolError::BadBody {
                frame: FrameType::Error,
                reason: "shorter than its 2-byte code".into(),
            });
        };
        Ok(Failure {
            code: ErrorCode::from_u16(u16::from_le_bytes(*code)),
            message: String::from_utf8_lossy(message).into_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn request_bodies_are_compact_and_exact() {
        let r = Request::ReadDocument {
            db: DbHandle(3),
            doc: DocRef::NoteId(NoteId(300)),
        };
        // Variant 6, handle 3, DocRef variant 1, varint 300.
        assert_eq!(r.encode().unwrap(), [6, 3, 1, 0xac, 0x02]);
        assert_eq!(Request::Statistics.encode().unwrap(), [20]);
        assert_eq!(Response::Done.encode().unwrap(), [0]);
    }

    /// Deleting a database sits at request tag 35 and is answered with
    /// `Done`; copying at 36, removing an attachment at 37.
    #[test]
    fn delete_database_has_its_tag() {
        let r = Request::DeleteDatabase { path: "a".into() };
        assert_eq!(r.encode().unwrap(), [35, 1, b'a']);
        assert_eq!(Request::decode(&[35, 1, b'a']).ok(), Some(r));
        let c = Request::CopyDatabase {
            src: "a".into(),
            dst: "b".into(),
            replica: true,
        };
        assert_eq!(c.encode().unwrap(), [36, 1, b'a', 1, b'b', 1]);
        let d = Request::DeleteAttachment {
            db: DbHandle(2),
            unid: Unid([0; 16]),
            name: "f".into(),
            based_on: None,
        };
        assert_eq!(d.encode().unwrap()[..2], [37, 2]);
    }

    #[test]
    fn trailing_bytes_and_truncations_are_malformed() {
        let mut b = Request::Statistics.encode().unwrap();
        b.push(0);
        assert!(Request::decode(&b).is_err());
        let b = Request::CreateDocument {
            db: DbHandle(1),
            json: "{\"a\":1}".into(),
        }
        .encode()
        .unwrap();
        for cut in 0..b.len() {
            assert!(Request::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        // A length claiming 4 GiB of text is an error, not an allocation.
        assert!(Request::decode(&[5, 1, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        // Unknown variants too.
        assert!(Request::decode(&[200]).is_err());
    }

    #[test]
    fn failure_layout_and_cut() {
        let f = Failure::new(ErrorCode::NotFound, "no database x.fdb");
        let b = f.encode();
        assert_eq!(&b[..2], &404u16.to_le_bytes());
        assert_eq!(&b[2..], b"no database x.fdb");
        assert_eq!(Failure::decode(&b).unwrap(), f);
        let long = "é".repeat(MAX_ERROR_MESSAGE);
        let cut = Failure::new(ErrorCode::ServerError, &long);
        assert!(cut.message.len() <= MAX_ERROR_MESSAGE);
        assert!(Failure::decode(&[1]).is_err());
        assert_eq!(
            Failure::decode(&[0x94, 0x01, 0xff]).unwrap().message,
            "\u{fffd}"
        );
    }

    // Round trips compare the re-encoded bytes and the Debug text, so NaN
    // numbers (not equal to themselves) are checked too.
    proptest! {
        #[test]
        fn every_request_round_trips(r in any::<Request>()) {
            let b = r.encode().unwrap();
            let back = Request::decode(&b).unwrap();
            prop_assert_eq!(back.encode().unwrap(), b);
            prop_assert_eq!(format!("{back:?}"), format!("{r:?}"));
        }

        #[test]
        fn every_response_round_trips(r in any::<Response>()) {
            let b = r.encode().unwrap();
            let back = Response::decode(&b, FrameType::Response).unwrap();
            prop_assert_eq!(back.encode().unwrap(), b);
            prop_assert_eq!(format!("{back:?}"), format!("{r:?}"));
        }

        #[test]
        fn every_failure_round_trips(code in any::<u16>(), msg in ".{0,100}") {
            let f = Failure::new(ErrorCode::from_u16(code), &msg);
            prop_assert_eq!(Failure::decode(&f.encode()).unwrap(), f);
        }

        #[test]
        fn decoding_arbitrary_bodies_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Request::decode(&body);
            let _ = Response::decode(&body, FrameType::Item);
            let _ = Failure::decode(&body);
        }
    }
}
