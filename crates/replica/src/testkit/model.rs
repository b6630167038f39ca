//! An in-memory model database with replication's write semantics.
//!
//! What a replica is, reduced to what replication sees: documents keyed
//! by UNID, each with a version, its revisions, a deleted flag and a
//! content; a change sequence (each write takes the next number and the
//! document's previous number disappears, as in `nsf`); the replication
//! histories; and `put_foreign`, which keeps the higher version
//! ([`ForeignStore`]). Every write is durable the moment it returns: the
//! session runner models a crash by not running the writes that were
//! still to come.
//!
//! [`ModelVersion`] mirrors `nsf::Version`: (sequence number, sequence
//! time, digest), compared in that order. The digest is a hash of the
//! whole document (content, deleted flag, revisions), so equal versions are
//! equal documents, as the conflict rule assumes.

use crate::conflict::{Applied, ConflictDoc, Held};
use crate::history::{self, History};
use crate::ids::Peer;
use crate::msg::{Entry, Envelope, Summary};
use crate::version::Version;
use crate::ForeignStore;
use nsf::{Seq, Unid};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::convert::Infallible;

/// How many earlier versions a document remembers.
pub const MAX_REVISIONS: usize = 64;

/// A version: compared by sequence number, then time, then digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ModelVersion {
    /// Edits so far (1 for a new document).
    pub seq: u32,
    /// When the edit was made, in µs (the editing replica's clock).
    pub time: i64,
    /// A hash of the document at this version.
    pub digest: u64,
}

impl Version for ModelVersion {
    fn identity(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.time.to_le_bytes());
        out.extend_from_slice(&self.digest.to_le_bytes());
    }
}

/// A document's content: text items, attachments, and the conflict mark.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Body {
    /// Text items by name.
    pub items: BTreeMap<String, String>,
    /// Attachments by file name.
    pub attachments: BTreeMap<String, Vec<u8>>,
    /// Set on a conflict document: the document it responds to (`$Conflict`
    /// and `$Ref` in nsf).
    #[serde(default, with = "option_unid")]
    pub conflict_of: Option<Unid>,
}

mod option_unid {
    use nsf::Unid;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &Option<Unid>, s: S) -> Result<S::Ok, S::Error> {
        v.map(|u| u.0).serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Unid>, D::Error> {
        Option::<[u8; 16]>::deserialize(d).map(|v| v.map(Unid))
    }
}

impl Body {
    /// A body with one text item.
    pub fn with_item(name: &str, value: &str) -> Body {
        let mut body = Body::default();
        body.items.insert(name.to_owned(), value.to_owned());
        body
    }

    /// Its size in bytes, roughly as stored.
    pub fn size(&self) -> u64 {
        let items: usize = self.items.iter().map(|(k, v)| k.len() + v.len()).sum();
        let files: usize = self
            .attachments
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum();
        (16 + items + files) as u64
    }

    fn hash_into(&self, h: &mut Sha256) {
        for (k, v) in &self.items {
            hash_bytes(h, k.as_bytes());
            hash_bytes(h, v.as_bytes());
        }
        h.update([0xff]);
        for (k, v) in &self.attachments {
            hash_bytes(h, k.as_bytes());
            hash_bytes(h, v);
        }
        h.update(self.conflict_of.map_or([0; 16], |u| u.0));
    }
}

fn hash_bytes(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

impl formula::Document for Body {
    fn item(&self, name: &str) -> Option<formula::Value> {
        self.items
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| formula::Value::text(v.clone()))
    }

    fn created(&self) -> i64 {
        0
    }

    fn modified(&self) -> i64 {
        0
    }
}

/// A document as every replica must agree on it: everything but its
/// local change number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Doc {
    /// Its version.
    pub version: ModelVersion,
    /// Whether it is a deletion stub (then `body` is empty).
    pub deleted: bool,
    /// The versions it was made from, oldest first.
    pub revisions: Vec<ModelVersion>,
    /// Its content.
    pub body: Body,
}

/// A document in one replica.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stored {
    doc: Doc,
    change: Seq,
}

/// One replica.
#[derive(Clone, Debug)]
pub struct ModelDb {
    peer: Peer,
    notes: BTreeMap<Unid, Stored>,
    changes: BTreeMap<Seq, Unid>,
    last: Seq,
    histories: Vec<History>,
    clock: i64,
}

impl ModelDb {
    /// An empty replica.
    pub fn new(peer: Peer) -> ModelDb {
        ModelDb {
            peer,
            notes: BTreeMap::new(),
            changes: BTreeMap::new(),
            last: Seq(0),
            histories: Vec::new(),
            clock: 0,
        }
    }

    /// This replica.
    pub fn peer(&self) -> Peer {
        self.peer
    }

    /// A copy of this database under a new instance id (a restore): same
    /// documents, histories and change numbers.
    pub fn restored_as(&self, instance: nsf::DbInstanceId) -> ModelDb {
        let mut copy = self.clone();
        copy.peer.instance = instance;
        copy
    }

    /// The last change number.
    pub fn last_change(&self) -> Seq {
        self.last
    }

    /// Sets the clock local edits take their time from.
    pub fn set_clock(&mut self, micros: i64) {
        self.clock = micros;
    }

    /// Creates or edits a document (reviving a stub), as a user would:
    /// the version after the current one.
    pub fn edit(&mut self, unid: Unid, change: impl FnOnce(&mut Body)) -> ModelVersion {
        let (seq, revisions, mut body) = match self.notes.get(&unid) {
            Some(s) => (
                s.doc.version.seq + 1,
                next_revisions(&s.doc),
                if s.doc.deleted {
                    Body::default()
                } else {
                    s.doc.body.clone()
                },
            ),
            None => (1, Vec::new(), Body::default()),
        };
        change(&mut body);
        self.store_local(unid, seq, false, revisions, body)
    }

    /// Deletes a document, leaving a stub; `None` if there is none to delete.
    pub fn delete(&mut self, unid: Unid) -> Option<ModelVersion> {
        let s = self.notes.get(&unid).filter(|s| !s.doc.deleted)?;
        let (seq, revisions) = (s.doc.version.seq + 1, next_revisions(&s.doc));
        Some(self.store_local(unid, seq, true, revisions, Body::default()))
    }

    /// One document.
    pub fn doc(&self, unid: Unid) -> Option<&Doc> {
        self.notes.get(&unid).map(|s| &s.doc)
    }

    /// Its local change number.
    pub fn change_of(&self, unid: Unid) -> Option<Seq> {
        self.notes.get(&unid).map(|s| s.change)
    }

    /// Every document and stub, by UNID: what replicas compare.
    pub fn docs(&self) -> BTreeMap<Unid, Doc> {
        self.notes
            .iter()
            .map(|(u, s)| (*u, s.doc.clone()))
            .collect()
    }

    /// The histories this replica keeps.
    pub fn histories(&self) -> &[History] {
        &self.histories
    }

    /// Stores a history entry (not a change: the change sequence stays).
    pub fn save_history(&mut self, entry: History) {
        history::record(&mut self.histories, entry);
    }

    /// What a puller's local query answers.
    pub fn held(&self, unids: &[Unid]) -> Vec<Option<Held<ModelVersion>>> {
        unids
            .iter()
            .map(|u| {
                self.notes.get(u).map(|s| Held {
                    version: s.doc.version,
                    deleted: s.doc.deleted,
                    revisions: s.doc.revisions.clone(),
                    have: Vec::new(),
                })
            })
            .collect()
    }

    /// A page of changes after `after`: at most `limit` documents that
    /// `selects` picks (stubs always), and how far the scan got.
    pub fn changes_after(
        &self,
        after: Seq,
        limit: u32,
        selects: impl Fn(&Body) -> bool,
    ) -> Summary<ModelVersion> {
        let mut entries = Vec::new();
        let mut upto = after;
        for (&change, unid) in self.changes.range(Seq(after.0 + 1)..) {
            let Some(s) = self.notes.get(unid) else {
                continue;
            };
            if s.doc.deleted || selects(&s.doc.body) {
                if entries.len() == limit as usize {
                    return Summary {
                        upto,
                        last: false,
                        entries,
                    };
                }
                entries.push(Entry {
                    unid: *unid,
                    version: s.doc.version,
                    size: s.doc.body.size(),
                    deleted: s.doc.deleted,
                    change,
                });
            }
            upto = change;
        }
        Summary {
            upto,
            last: true,
            entries,
        }
    }

    /// The documents asked for, in order, leaving out those not here.
    pub fn envelopes(&self, unids: &[Unid]) -> Vec<Envelope<ModelVersion, Body>> {
        unids
            .iter()
            .filter_map(|u| self.notes.get(u).map(|s| envelope(*u, &s.doc)))
            .collect()
    }

    fn store_local(
        &mut self,
        unid: Unid,
        seq: u32,
        deleted: bool,
        revisions: Vec<ModelVersion>,
        body: Body,
    ) -> ModelVersion {
        let mut h = Sha256::new();
        h.update(unid.0);
        h.update(seq.to_le_bytes());
        h.update(self.clock.to_le_bytes());
        h.update([u8::from(deleted)]);
        for r in &revisions {
            let mut bytes = Vec::new();
            r.identity(&mut bytes);
            hash_bytes(&mut h, &bytes);
        }
        body.hash_into(&mut h);
        let d = h.finalize();
        let mut digest = [0u8; 8];
        digest.copy_from_slice(&d[..8]);
        let version = ModelVersion {
            seq,
            time: self.clock,
            digest: u64::from_le_bytes(digest),
        };
        self.store(
            unid,
            Doc {
                version,
                deleted,
                revisions,
                body,
            },
        );
        version
    }

    /// Writes `doc` under the next change number.
    fn store(&mut self, unid: Unid, doc: Doc) {
        if let Some(old) = self.notes.get(&unid) {
            self.changes.remove(&old.change);
        }
        self.last = Seq(self.last.0 + 1);
        self.changes.insert(self.last, unid);
        self.notes.insert(
            unid,
            Stored {
                doc,
                change: self.last,
            },
        );
    }

    /// put_foreign's rule for a document arriving with its own version.
    fn put(&mut self, unid: Unid, doc: Doc) -> Applied<ModelVersion, Body> {
        let Some(held) = self.notes.get(&unid) else {
            self.store(unid, doc);
            return Applied::Stored;
        };
        if held.doc.version == doc.version {
            Applied::AlreadyHave
        } else if held.doc.version < doc.version {
            let loser = envelope(unid, &held.doc);
            self.store(unid, doc);
            Applied::Replaced { loser }
        } else {
            Applied::Lost {
                winner: Held {
                    version: held.doc.version,
                    deleted: held.doc.deleted,
                    revisions: held.doc.revisions.clone(),
                    have: Vec::new(),
                },
            }
        }
    }
}

impl ForeignStore<ModelVersion, Body> for ModelDb {
    type Error = Infallible;

    fn put_foreign(
        &mut self,
        note: &Envelope<ModelVersion, Body>,
    ) -> Result<Applied<ModelVersion, Body>, Infallible> {
        Ok(self.put(
            note.unid,
            Doc {
                version: note.version,
                deleted: note.deleted,
                revisions: note.revisions.clone(),
                body: note.body.clone(),
            },
        ))
    }

    fn put_conflict(&mut self, doc: &ConflictDoc<ModelVersion, Body>) -> Result<(), Infallible> {
        let mut body = doc.body.clone();
        // A losing version of a conflict document answers what it answers.
        body.conflict_of = body.conflict_of.or(Some(doc.response_to));
        self.put(
            doc.unid,
            Doc {
                version: doc.version,
                deleted: doc.deleted,
                revisions: doc.revisions.clone(),
                body,
            },
        );
        Ok(())
    }
}

fn envelope(unid: Unid, doc: &Doc) -> Envelope<ModelVersion, Body> {
    Envelope {
        unid,
        version: doc.version,
        deleted: doc.deleted,
        revisions: doc.revisions.clone(),
        size: doc.body.size(),
        body: doc.body.clone(),
    }
}

/// The revisions of the version after `doc`: its own plus its version,
/// keeping the newest [`MAX_REVISIONS`].
fn next_revisions(doc: &Doc) -> Vec<ModelVersion> {
    let mut revisions = doc.revisions.clone();
    revisions.push(doc.version);
    if revisions.len() > MAX_REVISIONS {
        revisions.drain(..revisions.len() - MAX_REVISIONS);
    }
    revisions
}
