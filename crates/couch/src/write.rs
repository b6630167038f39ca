//! Writes: `_bulk_docs` (both modes), `PUT` and `DELETE` of a document.
//!
//! Every write of one request runs in one nsf foreign batch: one
//! transaction, one log sync, durable before the answer (I2), all of it
//! or none of it after a crash (I4) — so a client is told a revision is
//! stored only once it is, and a kill -9 keeps exactly the
//! acknowledged requests. The decision for each document is taken inside
//! that transaction, from what it holds (`ForeignTxn::get`, I25):
//!
//! ```text
//!   new_edits=false (a replicator's revisions, with their _revisions)
//!     the revision is a leaf or an ancestor of one   -> nothing to do
//!     its _revisions name a leaf                     -> that leaf's note takes it
//!                                                       (a conflict document stays one)
//!     otherwise                                      -> the document's note takes it;
//!        the version order decides, and the loser is kept as a conflict
//!        document in the same transaction (I27), as replication does —
//!        a deletion that loses as a conflict stub, a deleted leaf (I63)
//!   new_edits=true (an edit made here)
//!     _rev names a leaf                              -> that leaf's note, next generation
//!     no _rev and no live leaf                       -> a new document (or a revival)
//!     otherwise                                      -> 409 conflict, nothing written
//! ```
//!
//! A version stored here has sequence number = the revision's generation
//! and sequence time = [`Rev::order_time`], its items carry `$Rev`,
//! `$Revs` and `$DocId`, so it is the same Folio version wherever the
//! same revision is stored. Each document is checked against the
//! caller's rights (`WriteCheck`, the rule native replication applies);
//! a refused one gets `forbidden` and nothing is written for it, while
//! the others of the request are written.

use crate::attach::{atts_item, info_of, md5_digest, parse_attachments, read_content, AttIn};
use crate::body::fields_to_items;
use crate::conflicts::{answers, ConflictIndex};
use crate::error::{CouchError, CouchResult};
use crate::id::{needs_doc_id, unid_of_id, validate_doc_id};
use crate::rev::{Rev, MAX_ANCESTORS};
use crate::tree::{id_answers, is_design, read_leaves, Leaf, ReadCheck};
use nsf::{
    AttachmentRef, Database, ForeignAttachment, ForeignContent, ForeignNote, ForeignOutcome,
    ForeignTxn, Item, ItemValue, Note, NoteId, NsfResult, OriginatorId, Seq, StagedNote, Timestamp,
    Unid, ATTACHMENT_PREFIX, CONFLICT_ITEMS, COUCH_ITEMS, MAX_REVISIONS,
};
use serde_json::{Map, Value};

/// Longest `_revisions` accepted (CouchDB's default `revs_limit`).
const MAX_HISTORY: usize = 1_000;

/// Whether the caller may write `incoming` over `held` (`None`: new).
pub type WriteCheck = Box<dyn Fn(&Note, Option<&Note>) -> bool + Send + Sync>;

/// Whether the caller may read a note, inside the write's transaction: an
/// edit naming a revision the caller may not read is a conflict, as one
/// naming a revision that does not exist is, so a write cannot tell a
/// hidden document from a missing one by its answer.
pub type WriteReadCheck = Box<dyn Fn(&Note) -> bool + Send + Sync>;

/// How revisions are given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `new_edits=true`: an edit of `_rev`, revision made here.
    NewEdits,
    /// `new_edits=false`: a revision made elsewhere, with its history.
    Replicated,
}

/// One document to write, checked for form.
#[derive(Clone, Debug)]
pub struct Edit {
    pub id: String,
    /// `_rev`: the revision edited (NewEdits) or given (Replicated).
    pub rev: Option<Rev>,
    /// Replicated: the revision and its ancestors, newest first.
    pub path: Vec<Rev>,
    pub deleted: bool,
    /// The fields without the `_` ones.
    pub fields: Map<String, Value>,
    pub items: Vec<Item>,
    /// `_attachments`, as given (attach.rs).
    pub attachments: Vec<AttIn>,
}

/// Checks one document of a request. `id` is the one the URL names (a
/// `PUT`), which `_id` must match if given; `new_id` makes one for a
/// document that has none; `max_att` is the largest attachment accepted.
pub fn parse_edit(
    doc: &Value,
    mode: Mode,
    id: Option<&str>,
    new_id: &mut dyn FnMut() -> String,
    max_att: u64,
) -> CouchResult<Edit> {
    let Value::Object(obj) = doc else {
        return Err(CouchError::bad_request("Document must be a JSON object"));
    };
    let given = match obj.get("_id") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(CouchError::bad_request("Document id must be a string")),
    };
    let id = match (id, given) {
        (Some(url), Some(body)) if url != body => {
            return Err(CouchError::bad_request(
                "Document id in the body does not match the URL",
            ))
        }
        (Some(url), _) => url.to_string(),
        (None, Some(body)) => body,
        (None, None) if mode == Mode::NewEdits => new_id(),
        (None, None) => return Err(CouchError::bad_request("Document must have an _id")),
    };
    validate_doc_id(&id)?;
    let rev = match obj.get("_rev") {
        None => None,
        Some(Value::String(s)) => Some(s.parse::<Rev>().map_err(CouchError::bad_request)?),
        Some(_) => return Err(CouchError::bad_request("_rev must be a string")),
    };
    let deleted = match obj.get("_deleted") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(CouchError::bad_request("_deleted must be true or false")),
    };
    let path = match (mode, obj.get("_revisions"), &rev) {
        (Mode::NewEdits, _, _) => Vec::new(),
        (Mode::Replicated, _, None) => {
            return Err(CouchError::bad_request(
                "new_edits=false needs each document's _rev",
            ))
        }
        // As in CouchDB: a revision with no history is a root of its own.
        (Mode::Replicated, None, Some(r)) => vec![r.clone()],
        (Mode::Replicated, Some(h), Some(r)) => history(h, r)?,
    };
    let mut fields = Map::new();
    let mut attachments = Vec::new();
    for (k, v) in obj {
        match k.as_str() {
            "_id" | "_rev" | "_deleted" | "_revisions" => {}
            "_conflicts" | "_deleted_conflicts" | "_revs_info" | "_local_seq" => {}
            "_attachments" => attachments = parse_attachments(v, max_att)?,
            k if REPLICATION_FIELDS.contains(&k) => {
                fields.insert(k.to_string(), v.clone());
            }
            k if k.starts_with('_') => {
                return Err(CouchError::invalid(format!(
                    "Bad special document member: {k}"
                )))
            }
            _ => {
                fields.insert(k.clone(), v.clone());
            }
        }
    }
    let items = fields_to_items(&fields)?;
    Ok(Edit {
        id,
        rev,
        path,
        deleted,
        fields,
        items,
        attachments,
    })
}

/// The fields starting with `_` that CouchDB keeps in a document's body
/// (its replicator's state, written into replication documents).
pub const REPLICATION_FIELDS: [&str; 5] = [
    "_replication_id",
    "_replication_state",
    "_replication_state_time",
    "_replication_state_reason",
    "_replication_stats",
];

/// `_revisions` as revisions, newest first; its first must be `rev`.
fn history(h: &Value, rev: &Rev) -> CouchResult<Vec<Rev>> {
    let bad = |why: &str| CouchError::bad_request(format!("Invalid _revisions: {why}"));
    let start = h
        .get("start")
        .and_then(Value::as_u64)
        .and_then(|s| u32::try_from(s).ok())
        .ok_or_else(|| bad("start must be a revision number"))?;
    let ids = h
        .get("ids")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("ids must be a list"))?;
    if ids.is_empty() || ids.len() > MAX_HISTORY {
        return Err(bad("ids must hold 1 to 1000 revisions"));
    }
    if ids.len() as u64 > u64::from(start) {
        return Err(bad("more ids than revisions before start"));
    }
    let path = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let hash = id.as_str().ok_or_else(|| bad("ids must be strings"))?;
            format!("{}-{hash}", start - i as u32)
                .parse::<Rev>()
                .map_err(CouchError::bad_request)
        })
        .collect::<CouchResult<Vec<Rev>>>()?;
    if path[0] != *rev {
        return Err(bad("its newest revision is not _rev"));
    }
    Ok(path)
}

/// Writes `edits` in one transaction (module docs); one result per edit,
/// in order: the revision stored (or already held), or why not. An
/// error of the database itself fails the whole request, nothing written.
pub fn write_docs(
    db: &Database,
    index: &ConflictIndex,
    edits: Vec<Edit>,
    mode: Mode,
    (may_write, may_read): (WriteCheck, WriteReadCheck),
    visible: ReadCheck<'_>,
) -> NsfResult<Vec<CouchResult<Rev>>> {
    let known: Vec<Vec<Unid>> = edits
        .iter()
        .map(|e| index.conflicts_of(unid_of_id(&e.id)))
        .collect();
    let now = Timestamp::now();
    let mut carriers = Vec::new();
    let mut kept: Vec<CouchResult<Vec<Kept>>> = Vec::with_capacity(edits.len());
    for e in &edits {
        kept.push(match stage(db, index, e, mode, now, visible) {
            Ok(Some((carrier, k))) => {
                carriers.push(carrier);
                Ok(k)
            }
            Ok(None) => Ok(Vec::new()),
            Err(err) => Err(err),
        });
    }
    db.foreign_batch(&carriers, move |t| {
        edits
            .iter()
            .zip(&known)
            .zip(&kept)
            .map(|((e, conflicts), kept)| {
                let kept = match kept {
                    Ok(k) => k,
                    Err(err) => return Ok(Err(err.clone())),
                };
                let rights = (&*may_write, &*may_read);
                match write_one(t, e, conflicts, kept, mode, rights, now) {
                    Ok(r) => Ok(r),
                    Err(Failed::Db(e)) => Err(e),
                    Err(Failed::Couch(e)) => Ok(Err(e)),
                }
            })
            .collect()
    })
}

/// An attachment staged for a revision: its content (the carrier's, so
/// the batch may store it), digest and revpos (`None`: the revision's).
#[derive(Clone, Debug)]
struct Kept {
    aref: AttachmentRef,
    digest: String,
    revpos: Option<u32>,
}

/// Stages the attachment content of `e` before its transaction (I60): new
/// content as given, a stub's as a reference to the stored object or a
/// copy of small content — only ever from a leaf the caller may read, so a
/// stub cannot copy hidden content into a revision its writer reads.
/// `None` when the revision has no attachments.
fn stage(
    db: &Database,
    index: &ConflictIndex,
    e: &Edit,
    mode: Mode,
    now: Timestamp,
    visible: ReadCheck<'_>,
) -> CouchResult<Option<(StagedNote, Vec<Kept>)>> {
    if e.deleted || e.attachments.is_empty() {
        return Ok(None);
    }
    let main = unid_of_id(&e.id);
    let leaves: Vec<Leaf> = if e
        .attachments
        .iter()
        .any(|a| matches!(a, AttIn::Stub { .. }))
    {
        read_leaves(db, index, main)?
            .into_iter()
            .filter(|(n, _)| !is_design(n) && id_answers(n, main) == e.id && visible(n))
            .map(|(n, r)| Leaf::new(n, r))
            .collect()
    } else {
        Vec::new()
    };
    let mut foreign = Vec::new();
    let mut meta = Vec::new();
    for a in &e.attachments {
        match a {
            AttIn::Data {
                name,
                mime,
                bytes,
                revpos,
            } => {
                meta.push((md5_digest(bytes), *revpos));
                foreign.push(ForeignAttachment {
                    name: name.clone(),
                    mime: mime.clone(),
                    content: ForeignContent::Bytes(bytes.clone()),
                });
            }
            AttIn::Follows { name, .. } => {
                return Err(CouchError::bad_request(format!(
                    "attachment {name:?} follows, but no multipart body carried it"
                )))
            }
            AttIn::Stub { name, digest } => {
                let (leaf, aref, info) = stub_source(db, &leaves, e, mode, name, digest)?;
                let content = match aref.stored {
                    Some(c) => ForeignContent::Held {
                        hash: c.hash,
                        size: aref.size,
                        crc32c: aref.crc32c,
                    },
                    None => ForeignContent::Bytes(read_content(db, &leaf.note, name)?),
                };
                meta.push((info.0, Some(info.1)));
                foreign.push(ForeignAttachment {
                    name: name.clone(),
                    mime: aref.mime.clone(),
                    content,
                });
            }
        }
    }
    let carrier = db.stage_foreign(ForeignNote {
        oid: OriginatorId {
            unid: main,
            seq_num: 1,
            seq_time: now,
        },
        created: now,
        modified: now,
        deleted: false,
        items: Vec::new(),
        attachments: foreign,
        revisions: Vec::new(),
    })?;
    let kept = carrier
        .note()
        .attachments()
        .cloned()
        .zip(meta)
        .map(|(aref, (digest, revpos))| Kept {
            aref,
            digest,
            revpos,
        })
        .collect();
    Ok(Some((carrier, kept)))
}

/// The leaf and attachment a stub keeps: for an edit, the leaf it edits;
/// for a replicated revision, an ancestor's leaf first, then any leaf
/// (with the stub's digest, if it names one). None: `missing_stub`.
fn stub_source<'l>(
    db: &Database,
    leaves: &'l [Leaf],
    e: &Edit,
    mode: Mode,
    name: &str,
    digest: &Option<String>,
) -> CouchResult<(&'l Leaf, &'l AttachmentRef, (String, u32))> {
    let mut order: Vec<&Leaf> = match mode {
        Mode::NewEdits => leaves
            .iter()
            .filter(|l| Some(&l.rev) == e.rev.as_ref())
            .collect(),
        Mode::Replicated => leaves
            .iter()
            .filter(|l| e.path[1..].contains(&l.rev))
            .collect(),
    };
    if mode == Mode::NewEdits && order.is_empty() && e.rev.is_some() {
        return Err(CouchError::conflict());
    }
    if mode == Mode::Replicated {
        order.extend(leaves.iter().filter(|l| !e.path[1..].contains(&l.rev)));
    }
    for leaf in order {
        let Some(aref) = leaf.note.attachments().find(|a| a.name == name) else {
            continue;
        };
        let info = info_of(db, &leaf.note, aref, leaf.rev.gen)?;
        if digest.as_ref().is_none_or(|d| *d == info.0) {
            return Ok((leaf, aref, info));
        }
    }
    Err(CouchError::missing_stub(name))
}

enum Failed {
    Couch(CouchError),
    Db(nsf::NsfError),
}

impl From<CouchError> for Failed {
    fn from(e: CouchError) -> Failed {
        Failed::Couch(e)
    }
}

impl From<nsf::NsfError> for Failed {
    fn from(e: nsf::NsfError) -> Failed {
        Failed::Db(e)
    }
}

/// Where a revision goes: the note it is written to, the nsf revisions it
/// was made from, whether that note is a conflict document, the note held
/// there now.
struct Target<'l> {
    unid: Unid,
    revisions: Vec<nsf::Version>,
    conflict: bool,
    held: Option<&'l Leaf>,
}

/// The caller's rights inside the transaction: write a note over the one
/// held, read a note.
type Rights<'a> = (
    &'a (dyn Fn(&Note, Option<&Note>) -> bool + Send + Sync),
    &'a (dyn Fn(&Note) -> bool + Send + Sync),
);

fn write_one(
    t: &mut ForeignTxn<'_, '_>,
    e: &Edit,
    conflicts: &[Unid],
    kept: &[Kept],
    mode: Mode,
    (may_write, may_read): Rights<'_>,
    now: Timestamp,
) -> Result<CouchResult<Rev>, Failed> {
    let main = unid_of_id(&e.id);
    let mut raw = Vec::new();
    if let Some((note, revs)) = t.get(main)? {
        if is_design(&note) || id_answers(&note, main) != e.id {
            return Ok(Err(CouchError::forbidden(
                "Document id is taken by a note that is not this document",
            )));
        }
        raw.push((note, revs));
    }
    for &c in conflicts {
        if let Some((note, revs)) = t.get(c)? {
            if answers(&note) == Some(main) && id_answers(&note, main) == e.id {
                raw.push((note, revs));
            }
        }
    }
    let leaves: Vec<Leaf> = raw.into_iter().map(|(n, r)| Leaf::new(n, r)).collect();
    let (rev, ancestors, base) = match mode {
        Mode::Replicated => {
            let rev = e.path[0].clone();
            if leaves.iter().any(|l| l.knows(&rev)) {
                return Ok(Ok(rev));
            }
            let base = leaves
                .iter()
                .filter(|l| e.path[1..].contains(&l.rev))
                .max_by_key(|l| l.rev.gen);
            let mut ancestors = e.path[1..].to_vec();
            ancestors.truncate(MAX_ANCESTORS);
            (rev, ancestors, base)
        }
        Mode::NewEdits => {
            let base = match &e.rev {
                Some(r) => match leaves.iter().find(|l| l.rev == *r && may_read(&l.note)) {
                    Some(l) => Some(l),
                    None => return Ok(Err(CouchError::conflict())),
                },
                None if leaves.iter().any(|l| !l.deleted()) => {
                    return Ok(Err(CouchError::conflict()))
                }
                None => leaves.iter().max_by(|a, b| a.rev.cmp(&b.rev)),
            };
            let mut fields = e.fields.clone();
            if !kept.is_empty() {
                let digests: Map<String, Value> = kept
                    .iter()
                    .map(|k| (k.aref.name.clone(), Value::from(k.digest.clone())))
                    .collect();
                fields.insert("_attachments".into(), Value::Object(digests));
            }
            let body = Value::Object(fields);
            let rev = Rev::of_edit(base.map(|b| &b.rev), e.deleted, &body);
            let ancestors: Vec<Rev> = base
                .map(|b| {
                    std::iter::once(b.rev.clone())
                        .chain(b.ancestry.iter().cloned())
                        .take(MAX_ANCESTORS)
                        .collect()
                })
                .unwrap_or_default();
            (rev, ancestors, base)
        }
    };
    let target = match base {
        Some(l) => {
            let mut revisions = l.revisions.clone();
            revisions.push(l.note.version());
            let cut = revisions.len().saturating_sub(MAX_REVISIONS);
            Target {
                unid: l.note.oid.unid,
                revisions: revisions.split_off(cut),
                conflict: l.conflict,
                held: Some(l),
            }
        }
        None => Target {
            unid: main,
            revisions: Vec::new(),
            conflict: false,
            held: leaves.iter().find(|l| l.note.oid.unid == main),
        },
    };
    let mut note = version_note(e, &rev, &ancestors, &target, main, now);
    if !e.deleted {
        add_attachments(&mut note, kept, rev.gen);
    }
    if let Err(err) = nsf::encode_note(&note) {
        return Ok(Err(CouchError::invalid(err.to_string())));
    }
    if !may_write(&note, target.held.map(|l| &l.note)) {
        return Ok(Err(CouchError::forbidden(
            "You are not allowed to write this document",
        )));
    }
    let staged = StagedNote::from_note(note, target.revisions);
    match t.put(&staged)? {
        // I27: the version that lost is kept in the same transaction;
        // I63: a deletion too, as a deleted leaf.
        ForeignOutcome::Replaced {
            loser,
            loser_revisions,
            ..
        } if !staged.revisions().contains(&loser.version()) => {
            // The UNID replication gives it: of the note it lost at.
            let unid = replica::conflict_unid(target.unid, &loser.version());
            t.put_conflict(unid, main, &StagedNote::from_note(loser, loser_revisions))?;
        }
        ForeignOutcome::Lost {
            winner_revisions, ..
        } if !winner_revisions.contains(&staged.version()) => {
            let unid = replica::conflict_unid(target.unid, &staged.version());
            t.put_conflict(unid, main, &staged)?;
        }
        _ => {}
    }
    Ok(Ok(rev))
}

/// Gives `note` the staged attachments and their `$Atts` entries (I60).
fn add_attachments(note: &mut Note, kept: &[Kept], gen: u32) {
    let atts: Vec<(AttachmentRef, String, u32)> = kept
        .iter()
        .map(|k| (k.aref.clone(), k.digest.clone(), k.revpos.unwrap_or(gen)))
        .collect();
    note.items.extend(atts.iter().map(|(a, _, _)| Item {
        name: format!("{ATTACHMENT_PREFIX}{}", a.name),
        value: ItemValue::Attachment(a.clone()),
    }));
    note.items.extend(atts_item(&atts));
}

/// The note that stores revision `rev` of `e` at `target`.
fn version_note(
    e: &Edit,
    rev: &Rev,
    ancestors: &[Rev],
    target: &Target<'_>,
    main: Unid,
    now: Timestamp,
) -> Note {
    let mut items: Vec<Item> = if e.deleted {
        // A deletion keeps the access items it names, else those of the
        // version it deletes: whoever could not see the document does not
        // see its deletion either.
        let named: Vec<Item> = e
            .items
            .iter()
            .filter(|i| nsf::stub_keeps(&i.name))
            .cloned()
            .collect();
        if named.is_empty() {
            target
                .held
                .map(|l| {
                    l.note
                        .items
                        .iter()
                        .filter(|i| {
                            i.name.eq_ignore_ascii_case(nsf::READERS_ITEM)
                                || i.name.eq_ignore_ascii_case(nsf::AUTHORS_ITEM)
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        } else {
            named
        }
    } else {
        e.items.clone()
    };
    let text = |name: &str, v: String| Item {
        name: name.into(),
        value: ItemValue::Text(v),
    };
    if needs_doc_id(&e.id) {
        items.push(text(COUCH_ITEMS[0], e.id.clone()));
    }
    items.push(text(COUCH_ITEMS[1], rev.to_string()));
    if !ancestors.is_empty() {
        items.push(Item {
            name: COUCH_ITEMS[2].into(),
            value: ItemValue::TextList(ancestors.iter().map(Rev::to_string).collect()),
        });
    }
    if target.conflict {
        items.push(text(CONFLICT_ITEMS[0], "1".into()));
        items.push(text(CONFLICT_ITEMS[1], main.to_string()));
    }
    Note {
        note_id: NoteId(0),
        oid: OriginatorId {
            unid: target.unid,
            seq_num: rev.gen,
            seq_time: rev.order_time(),
        },
        created: target.held.map_or(now, |l| l.note.created),
        modified: now,
        added: now,
        change_seq: Seq(0),
        deleted: e.deleted,
        items,
    }
}
