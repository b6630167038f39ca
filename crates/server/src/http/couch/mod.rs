//! The CouchDB door: CouchDB's HTTP API at the root of a listener of its
//! own (`couchdb_listen`, off by default), so a CouchDB client pointed at
//! `http://host:port/` — PouchDB's replicator above all — works
//! unchanged. docs/couchdb.md lists what it answers; the protocol logic
//! (revision ids, the revision tree, revs_diff, the change feed) is the
//! `couch` crate's, the access rules `service/couch.rs`'s. This module
//! only turns requests into calls and answers into CouchDB's JSON.
//!
//! ```text
//!   request ─▶ CouchCall (credentials: Basic, Bearer or the AuthSession
//!              cookie; path; query) ─▶ handler: parse body and parameters
//!              ─▶ spawn_blocking(authenticate ─▶ Service::couch_*)
//!   answer  ◀─ JSON, or {"error": kind, "reason": text} with CouchDB's status
//! ```
//!
//! It is served by the same connection handling as the HTTP API
//! (`http_conn::serve_app`: limits, timeouts, TLS, shutdown) and shares
//! its users, sessions and per-database ACLs.
//!
//! ```text
//!   routes.rs   the routes table, and serving it
//!   cors.rs     CORS for the browser pages of `[couchdb] cors_origins`
//!   call.rs     the request as a handler starts from it; errors; running a job
//!   server.rs   /, /_session, /_all_dbs, /_uuids
//!   db.rs       /{db}: create, info, delete; _all_docs, _ensure_full_commit
//!   changes.rs  _changes: normal, longpoll, continuous, eventsource; filters
//!   docs.rs     documents, _bulk_docs, _bulk_get, _revs_diff, _local
//!   find.rs     _find: Mango queries over the selector subset, a bounded scan
//!   atts.rs     one attachment: GET, PUT, DELETE /{db}/{id}/{name}
//!   multipart.rs  multipart/related and multipart/mixed bodies
//! ```

mod atts;
mod call;
mod changes;
mod cors;
mod db;
mod docs;
mod find;
mod multipart;
mod routes;
mod server;

pub use routes::serve_couch;
