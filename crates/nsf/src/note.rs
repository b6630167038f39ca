//! The document model (notes made of named, typed items) and its on-disk
//! encoding.
//!
//! Why a hand-written binary format: a note is the unit the database stores,
//! logs and replicates, so its bytes must be compact, stable across versions
//! and safe to decode from a damaged page or a hostile peer. Decoding
//! therefore trusts nothing: every length is bounds-checked, every count is
//! weighed against the bytes that remain (so a corrupt count cannot trigger a
//! huge allocation), and the same limits that [`validate_items`] enforces on
//! the way in are enforced again on the way out. The encoding is canonical:
//! a note decodes only from the exact bytes [`encode_note`] produces for it.
//!
//! Item names are matched case-insensitively, as in Notes; names starting
//! with `$` are reserved for the system fields the JSON form adds and the
//! items the system names itself (attachments, design notes), with two
//! exceptions anyone may set: the *access items* `$Readers` and `$Authors`
//! ([`READERS_ITEM`], [`AUTHORS_ITEM`]), text or text lists of the names,
//! `[roles]` or `*` allowed to read or edit the note (see `acl.rs`).
//!
//! # Encoding, version 1 (all integers little-endian)
//!
//! ```text
//! header, 70 bytes:
//!   u8   version = 1
//!   u8   flags (bit 0: deletion stub; other bits must be 0)
//!   u32  note_id
//!   [16] unid
//!   u32  seq_num          (originator id)
//!   i64  seq_time         (µs since the Unix epoch, UTC)
//!   i64  created
//!   i64  modified
//!   i64  added            (added to this file)
//!   u64  change_seq
//!   u32  item_count
//! then item_count items:
//!   u16  name_len, name (UTF-8)
//!   u8   type tag
//!   u32  value_len, value (exactly value_len bytes)
//! value bytes by tag:
//!   1 Text          UTF-8
//!   2 TextList      u32 n, n × (u32 len, UTF-8)
//!   3 Number        f64
//!   4 NumberList    u32 n, n × f64
//!   5 DateTime      i64
//!   6 DateTimeList  u32 n, n × i64
//!   7 RichText      UTF-8 (markdown)
//!   8 Attachment    u16 len, name; u16 len, mime; u64 size; u32 crc32c;
//!                   u64 blob_id; u32 n, n × (u32 first page, u32 page count)
//!   9 Attachment    in the attachment store (design.md §2.9): u16 len, name;
//!     (stored)      u16 len, mime; u64 size; u32 crc32c; u64 reference id;
//!                   [32] SHA-256; u8 form (0 as is, 1 zstd); u64 stored size
//! ```
//!
//! Nothing may follow the last item.

use crate::{NoteId, OriginatorId, Seq, Timestamp, Unid};
use std::collections::HashSet;

/// Longest item name, in bytes (names are at least 1 byte).
pub const MAX_NAME_BYTES: usize = 255;
/// Most items in one note.
pub const MAX_ITEMS: usize = 10_000;
/// Largest encoded item value, in bytes.
pub const MAX_VALUE_BYTES: usize = 16 << 20;
/// Largest encoded note, in bytes.
pub const MAX_NOTE_BYTES: usize = 64 << 20;
/// Earliest date-time item value: 0000-01-01T00:00:00Z. Date-time items are
/// limited to the years RFC 3339 can write, so every stored value has a
/// JSON form that parses back to itself.
pub const MIN_DATETIME: Timestamp = Timestamp(-62_167_219_200_000_000);
/// Latest date-time item value: 9999-12-31T23:59:59.999999Z.
pub const MAX_DATETIME: Timestamp = Timestamp(253_402_300_799_999_999);

const VERSION: u8 = 1;
const FLAG_DELETED: u8 = 1;
const HEADER_BYTES: usize = 70;
/// Name length, tag and value length: the bytes of an item besides its name
/// and value.
const ITEM_OVERHEAD: usize = 2 + 1 + 4;

const TAG_TEXT: u8 = 1;
const TAG_TEXT_LIST: u8 = 2;
const TAG_NUMBER: u8 = 3;
const TAG_NUMBER_LIST: u8 = 4;
const TAG_DATETIME: u8 = 5;
const TAG_DATETIME_LIST: u8 = 6;
const TAG_RICH_TEXT: u8 = 7;
const TAG_ATTACHMENT: u8 = 8;
const TAG_STORED_ATTACHMENT: u8 = 9;

/// The value of one item.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemValue {
    Text(String),
    TextList(Vec<String>),
    /// Always finite.
    Number(f64),
    NumberList(Vec<f64>),
    /// Between [`MIN_DATETIME`] and [`MAX_DATETIME`].
    DateTime(Timestamp),
    DateTimeList(Vec<Timestamp>),
    /// Markdown.
    RichText(String),
    Attachment(AttachmentRef),
}

/// Where an attachment's content lives; the content itself is stored apart
/// from the note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachmentRef {
    pub name: String,
    pub mime: String,
    pub size: u64,
    pub crc32c: u32,
    pub blob_id: u64,
    /// (first page, page count) runs holding the content (none when the
    /// content is in the attachment store).
    pub extents: Vec<(u32, u32)>,
    /// The content's object in the attachment store (design.md §2.9);
    /// `None`: the content is in this file's blob pages (`extents`).
    pub stored: Option<crate::StoredContent>,
}

/// A named value.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub name: String,
    pub value: ItemValue,
}

/// A document, or the deletion stub left when one is deleted.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub note_id: NoteId,
    pub oid: OriginatorId,
    pub created: Timestamp,
    pub modified: Timestamp,
    /// When the note was added to this file.
    pub added: Timestamp,
    pub change_seq: Seq,
    /// A deletion stub.
    pub deleted: bool,
    pub items: Vec<Item>,
}

impl Note {
    /// The item called `name`, ignoring case.
    pub fn item(&self, name: &str) -> Option<&Item> {
        self.items.iter().find(|i| same_name(&i.name, name))
    }

    /// Replaces the item with the same name (ignoring case), or appends.
    pub fn set_item(&mut self, item: Item) {
        match self
            .items
            .iter_mut()
            .find(|i| same_name(&i.name, &item.name))
        {
            Some(slot) => *slot = item,
            None => self.items.push(item),
        }
    }

    /// Removes and returns the item called `name`, ignoring case.
    pub fn remove_item(&mut self, name: &str) -> Option<Item> {
        let pos = self.items.iter().position(|i| same_name(&i.name, name))?;
        Some(self.items.remove(pos))
    }

    /// The note's items other than its attachments, in item order.
    pub fn plain_items(&self) -> impl Iterator<Item = &Item> {
        self.items
            .iter()
            .filter(|i| !matches!(i.value, ItemValue::Attachment(_)))
    }

    /// The note's attachments, in item order.
    pub fn attachments(&self) -> impl Iterator<Item = &AttachmentRef> {
        self.items.iter().filter_map(|i| match &i.value {
            ItemValue::Attachment(a) => Some(a),
            _ => None,
        })
    }
}

/// Why a note or its items could not be encoded, decoded or accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    #[error("note encoding is truncated in {what}")]
    Truncated { what: String },
    #[error("unsupported note encoding version {0}")]
    BadVersion(u8),
    #[error("unknown note flags {0:#04x}")]
    BadFlags(u8),
    #[error("invalid UTF-8 in {what}")]
    BadUtf8 { what: String },
    #[error("item {item:?} has unknown type tag {tag}")]
    BadTag { item: String, tag: u8 },
    #[error("{what} is {size} bytes; the limit is {limit}")]
    TooLarge {
        what: String,
        size: usize,
        limit: usize,
    },
    #[error("note has {count} items; the limit is {limit}")]
    TooManyItems { count: usize, limit: usize },
    #[error("invalid item name {name:?}: {reason}")]
    BadName { name: String, reason: &'static str },
    #[error("duplicate item name {0:?} (names ignore case)")]
    Duplicate(String),
    #[error("{count} unexpected bytes after {what}")]
    Trailing { what: String, count: usize },
    #[error("item {item:?} holds a number that is not finite")]
    NotFinite { item: String },
    #[error("item {item:?} holds a date outside the years 0000 to 9999")]
    DateOutOfRange { item: String },
    #[error("item {item:?} must be text or a list of text (user names, [roles] or *)")]
    NotNames { item: String },
}

/// Checks `items` against the limits: valid, distinct names, the value
/// rules, item count, and value and note sizes.
pub fn validate_items(items: &[Item]) -> Result<(), CodecError> {
    encoded_items_len(items).map(|_| ())
}

/// Encodes a note; fails if its items break the limits (see
/// [`validate_items`]), so every encoding decodes.
pub fn encode_note(n: &Note) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(HEADER_BYTES + encoded_items_len(&n.items)?);
    write_header(n, &mut out);
    for item in &n.items {
        write_item(item, &mut out);
    }
    Ok(out)
}

/// Decodes and validates a note encoded by [`encode_note`].
pub fn decode_note(b: &[u8]) -> Result<Note, CodecError> {
    if b.len() > MAX_NOTE_BYTES {
        return Err(too_large("note".into(), b.len(), MAX_NOTE_BYTES));
    }
    let mut r = Reader::new(b);
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(CodecError::BadVersion(version));
    }
    let flags = r.u8("flags")?;
    if flags & !FLAG_DELETED != 0 {
        return Err(CodecError::BadFlags(flags));
    }
    let note = Note {
        note_id: NoteId(r.u32("note id")?),
        oid: OriginatorId {
            unid: Unid(r.array("unid")?),
            seq_num: r.u32("sequence number")?,
            seq_time: Timestamp(r.i64("sequence time")?),
        },
        created: Timestamp(r.i64("created time")?),
        modified: Timestamp(r.i64("modified time")?),
        added: Timestamp(r.i64("added time")?),
        change_seq: Seq(r.u64("change sequence")?),
        deleted: flags & FLAG_DELETED != 0,
        items: read_items(&mut r)?,
    };
    r.finish("the items")?;
    validate_items(&note.items)?;
    Ok(note)
}

/// A note still in its encoded form: the header is decoded, items only
/// when asked for. Scans that look at a few items of every document
/// (view rebuilds, formula search) skip the allocation and validation of
/// everything else. [`NoteRef::to_note`] decodes it fully, with every
/// check [`decode_note`] makes.
#[derive(Clone, Copy, Debug)]
pub struct NoteRef<'a> {
    bytes: &'a [u8],
    pub note_id: NoteId,
    pub unid: Unid,
    pub created: Timestamp,
    pub modified: Timestamp,
    pub change_seq: Seq,
    pub deleted: bool,
    /// Where the items start, and how many there are.
    items_at: usize,
    count: usize,
}

impl<'a> NoteRef<'a> {
    /// Decodes the header of an encoded note.
    pub fn new(b: &'a [u8]) -> Result<NoteRef<'a>, CodecError> {
        if b.len() > MAX_NOTE_BYTES {
            return Err(too_large("note".into(), b.len(), MAX_NOTE_BYTES));
        }
        let mut r = Reader::new(b);
        let version = r.u8("version")?;
        if version != VERSION {
            return Err(CodecError::BadVersion(version));
        }
        let flags = r.u8("flags")?;
        if flags & !FLAG_DELETED != 0 {
            return Err(CodecError::BadFlags(flags));
        }
        let note_id = NoteId(r.u32("note id")?);
        let unid = Unid(r.array("unid")?);
        r.u32("sequence number")?;
        r.i64("sequence time")?;
        let created = Timestamp(r.i64("created time")?);
        let modified = Timestamp(r.i64("modified time")?);
        r.i64("added time")?;
        let change_seq = Seq(r.u64("change sequence")?);
        let count = r.u32("item count")? as usize;
        if count > MAX_ITEMS {
            return Err(CodecError::TooManyItems {
                count,
                limit: MAX_ITEMS,
            });
        }
        Ok(NoteRef {
            items_at: b.len() - r.buf.len(),
            bytes: b,
            note_id,
            unid,
            created,
            modified,
            change_seq,
            deleted: flags & FLAG_DELETED != 0,
            count,
        })
    }

    /// The value of the item called `name` (ignoring case), decoded and
    /// checked; `Ok(None)` if there is none.
    pub fn item(&self, name: &str) -> Result<Option<ItemValue>, CodecError> {
        let [value] = self.items([name])?;
        Ok(value)
    }

    /// The values of the items called `names` (ignoring case), found in one
    /// pass over the items, which stops once all of them are found.
    pub(crate) fn items<const N: usize>(
        &self,
        names: [&str; N],
    ) -> Result<[Option<ItemValue>; N], CodecError> {
        let mut found: [Option<ItemValue>; N] = std::array::from_fn(|_| None);
        let mut missing = N;
        let mut r = Reader::new(&self.bytes[self.items_at..]);
        for _ in 0..self.count {
            if missing == 0 {
                break;
            }
            let name_len = usize::from(r.u16("item name length")?);
            let item_name = r.str(name_len, "item name")?;
            let tag = r.u8("item type")?;
            let len = r.u32("item value length")? as usize;
            if len > MAX_VALUE_BYTES {
                return Err(too_large(
                    format!("item {item_name:?}"),
                    len,
                    MAX_VALUE_BYTES,
                ));
            }
            let mut v = r.value(len, item_name)?;
            let wanted = names.iter().position(|n| same_name(item_name, n));
            if let Some(slot) = wanted
                .and_then(|i| found.get_mut(i))
                .filter(|s| s.is_none())
            {
                let value = read_value(item_name, tag, &mut v)?;
                v.finish("the value")?;
                *slot = Some(value);
                missing -= 1;
            }
        }
        Ok(found)
    }

    /// Whether the note has an item called `name` (ignoring case).
    pub fn has_item(&self, name: &str) -> Result<bool, CodecError> {
        let mut r = Reader::new(&self.bytes[self.items_at..]);
        for _ in 0..self.count {
            let name_len = usize::from(r.u16("item name length")?);
            let item_name = r.str(name_len, "item name")?;
            r.u8("item type")?;
            let len = r.u32("item value length")? as usize;
            r.value(len, item_name)?;
            if same_name(item_name, name) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The whole note, fully decoded and checked.
    pub fn to_note(&self) -> Result<Note, CodecError> {
        decode_note(self.bytes)
    }
}

/// Item name prefix of attachment items. Attachments and the items of
/// design notes are the items the system names itself, so only they (and
/// the access items) may use a `$` name.
pub const ATTACHMENT_PREFIX: &str = "$FILE:";

/// Text items that mark and define a design note: a view or folder
/// definition (written by the views layer) or the access-control list
/// (`$DesignType` = `acl`, `$ACL` = the list as JSON; see `acl.rs`).
pub const DESIGN_ITEMS: [&str; 4] = ["$DesignType", "$Title", "$ViewDef", "$ACL"];

/// Text items that mark a conflict document (design.md §11.4): `$Conflict`
/// (its value is "1") and `$Ref`, the UNID of the document it is a
/// response to. Replication writes them; they replicate like any item.
pub const CONFLICT_ITEMS: [&str; 2] = ["$Conflict", "$Ref"];

/// Items that carry a document's identity in the CouchDB protocol
/// (design.md §11.9, written by the `couch` crate): `$DocId`, the
/// document's CouchDB id where it is not its UNID (text); `$Rev`, the
/// revision id the version got at the CouchDB door (text); `$Revs`, that
/// revision's ancestors, newest first (a text list); `$Json`, the fields
/// of a CouchDB document that are no item (text: a JSON object);
/// `$Atts`, the CouchDB digest and `revpos` of each attachment (text: a
/// JSON object by attachment name). The system writes them; they
/// replicate like any item, and a deletion stub keeps the first three.
pub const COUCH_ITEMS: [&str; 5] = ["$DocId", "$Rev", "$Revs", "$Json", "$Atts"];

/// Whether a deletion stub keeps an item named `name`: the access items
/// (whoever could not see the document does not see its deletion
/// either), a conflict document's marks and the CouchDB identity items
/// but `$Json` (so a deleted document or conflict keeps its id and
/// revision history, design.md §11.9).
pub fn stub_keeps(name: &str) -> bool {
    access_item_name(name).is_some()
        || CONFLICT_ITEMS.iter().any(|c| c.eq_ignore_ascii_case(name))
        || COUCH_ITEMS[..3]
            .iter()
            .any(|c| c.eq_ignore_ascii_case(name))
}

/// Reader names: when a note has this item, only the names, `[roles]` and
/// `*` it lists (or lists in [`AUTHORS_ITEM`]) may read it.
pub const READERS_ITEM: &str = "$Readers";
/// Author names: an Author may edit only the notes whose item of this name
/// lists them; being listed also lets one read a note with readers.
pub const AUTHORS_ITEM: &str = "$Authors";

/// The canonical spelling of an access item's name, if `name` is one
/// (ignoring case, like every item name).
pub(crate) fn access_item_name(name: &str) -> Option<&'static str> {
    [READERS_ITEM, AUTHORS_ITEM]
        .into_iter()
        .find(|a| same_name(a, name))
}

/// Names compared pairwise before [`check_names`] switches to a set of
/// folded names: most notes have a handful of items, and every note read,
/// staged or written is checked, so the common case allocates no set and
/// folds no strings.
const PAIRWISE_NAMES: usize = 16;

/// Checks each name and that no two are equal ignoring case; `system`
/// marks names the engine chose (attachment and design items), which may
/// start with `$`.
pub(crate) fn check_names<'a>(
    names: impl IntoIterator<Item = (&'a str, bool)>,
) -> Result<(), CodecError> {
    let mut few: Vec<&str> = Vec::new();
    let mut many: Option<HashSet<String>> = None;
    for (name, system) in names {
        check_name(name, system)?;
        let duplicate = match &mut many {
            Some(set) => !set.insert(folded(name)),
            None if few.len() < PAIRWISE_NAMES => {
                let duplicate = few.iter().any(|seen| same_name(seen, name));
                few.push(name);
                duplicate
            }
            None => {
                let mut set: HashSet<String> = few.iter().map(|n| folded(n)).collect();
                let duplicate = !set.insert(folded(name));
                many = Some(set);
                duplicate
            }
        };
        if duplicate {
            return Err(CodecError::Duplicate(name.to_string()));
        }
    }
    Ok(())
}

/// Whether the system named this item (see [`ATTACHMENT_PREFIX`]).
fn is_system_item(i: &Item) -> bool {
    match i.value {
        ItemValue::Attachment(_) => i.name.starts_with(ATTACHMENT_PREFIX),
        ItemValue::Text(_) => {
            DESIGN_ITEMS.contains(&i.name.as_str())
                || CONFLICT_ITEMS.contains(&i.name.as_str())
                || (COUCH_ITEMS.contains(&i.name.as_str()) && i.name != COUCH_ITEMS[2])
        }
        ItemValue::TextList(_) => i.name == COUCH_ITEMS[2],
        _ => false,
    }
}

fn check_name(name: &str, system: bool) -> Result<(), CodecError> {
    let reason = if name.is_empty() {
        "item names must not be empty"
    } else if name.len() > MAX_NAME_BYTES {
        "item names are at most 255 bytes"
    } else if name.chars().any(char::is_control) {
        "item names must not contain control characters"
    } else if name.starts_with('$') && !system && access_item_name(name).is_none() {
        "names starting with '$' are reserved for the system (only $Readers and $Authors may be set)"
    } else {
        return Ok(());
    };
    let name = name.chars().take(64).collect();
    Err(CodecError::BadName { name, reason })
}

/// Case folding for item names; `same_name` and the duplicate check both
/// use it, so they always agree.
fn fold(name: &str) -> impl Iterator<Item = char> + '_ {
    name.chars().flat_map(char::to_lowercase)
}

/// `name` folded as [`same_name`] compares it: two names are the same
/// exactly when their folded forms are equal.
pub(crate) fn folded(name: &str) -> String {
    fold(name).collect()
}

pub(crate) fn same_name(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b); // the common case, without folding
    }
    fold(a).eq(fold(b))
}

/// Validates `items` and returns the bytes they take when encoded.
fn encoded_items_len(items: &[Item]) -> Result<usize, CodecError> {
    if items.len() > MAX_ITEMS {
        return Err(CodecError::TooManyItems {
            count: items.len(),
            limit: MAX_ITEMS,
        });
    }
    check_names(items.iter().map(|i| (i.name.as_str(), is_system_item(i))))?;
    let mut total = 0;
    for item in items {
        total += ITEM_OVERHEAD + item.name.len() + check_value(item)?;
    }
    if HEADER_BYTES + total > MAX_NOTE_BYTES {
        return Err(too_large(
            "note".into(),
            HEADER_BYTES + total,
            MAX_NOTE_BYTES,
        ));
    }
    Ok(total)
}

/// Checks the value rules for one item and returns its encoded value size.
fn check_value(item: &Item) -> Result<usize, CodecError> {
    check_contents(item)?;
    let len = value_len(&item.value);
    if len > MAX_VALUE_BYTES {
        return Err(too_large(
            format!("item {:?}", item.name),
            len,
            MAX_VALUE_BYTES,
        ));
    }
    Ok(len)
}

/// Numbers are finite, dates lie in RFC 3339's years, attachment fields
/// fit, access items hold names.
fn check_contents(item: &Item) -> Result<(), CodecError> {
    if access_item_name(&item.name).is_some()
        && !matches!(item.value, ItemValue::Text(_) | ItemValue::TextList(_))
    {
        return Err(CodecError::NotNames {
            item: item.name.clone(),
        });
    }
    let finite = |l: &[f64]| l.iter().all(|x| x.is_finite());
    let in_range = |l: &[Timestamp]| l.iter().all(|t| (MIN_DATETIME..=MAX_DATETIME).contains(t));
    let not_finite = || CodecError::NotFinite {
        item: item.name.clone(),
    };
    let out_of_range = || CodecError::DateOutOfRange {
        item: item.name.clone(),
    };
    match &item.value {
        ItemValue::Number(x) if !x.is_finite() => Err(not_finite()),
        ItemValue::NumberList(l) if !finite(l) => Err(not_finite()),
        ItemValue::DateTime(t) if !in_range(std::slice::from_ref(t)) => Err(out_of_range()),
        ItemValue::DateTimeList(l) if !in_range(l) => Err(out_of_range()),
        ItemValue::Attachment(a) => check_attachment(&item.name, a),
        _ => Ok(()),
    }
}

/// Attachment name and type have 16-bit lengths.
fn check_attachment(item: &str, a: &AttachmentRef) -> Result<(), CodecError> {
    let limit = usize::from(u16::MAX);
    for (field, s) in [("name", &a.name), ("type", &a.mime)] {
        if s.len() > limit {
            let what = format!("attachment {field} in item {item:?}");
            return Err(too_large(what, s.len(), limit));
        }
    }
    Ok(())
}

fn too_large(what: String, size: usize, limit: usize) -> CodecError {
    CodecError::TooLarge { what, size, limit }
}

/// Encoded size of a value, matching `write_value` byte for byte.
fn value_len(v: &ItemValue) -> usize {
    match v {
        ItemValue::Text(s) | ItemValue::RichText(s) => s.len(),
        ItemValue::TextList(l) => 4 + l.iter().map(|s| 4 + s.len()).sum::<usize>(),
        ItemValue::Number(_) | ItemValue::DateTime(_) => 8,
        ItemValue::NumberList(l) => 4 + 8 * l.len(),
        ItemValue::DateTimeList(l) => 4 + 8 * l.len(),
        ItemValue::Attachment(a) => match a.stored {
            Some(_) => 2 + a.name.len() + 2 + a.mime.len() + 20 + 32 + 1 + 8,
            None => 2 + a.name.len() + 2 + a.mime.len() + 24 + 8 * a.extents.len(),
        },
    }
}

fn tag(v: &ItemValue) -> u8 {
    match v {
        ItemValue::Text(_) => TAG_TEXT,
        ItemValue::TextList(_) => TAG_TEXT_LIST,
        ItemValue::Number(_) => TAG_NUMBER,
        ItemValue::NumberList(_) => TAG_NUMBER_LIST,
        ItemValue::DateTime(_) => TAG_DATETIME,
        ItemValue::DateTimeList(_) => TAG_DATETIME_LIST,
        ItemValue::RichText(_) => TAG_RICH_TEXT,
        ItemValue::Attachment(a) if a.stored.is_some() => TAG_STORED_ATTACHMENT,
        ItemValue::Attachment(_) => TAG_ATTACHMENT,
    }
}

// Writing. Callers have validated the note, so every length fits its field:
// names are at most 255 bytes, attachment names and types at most 65535,
// and values and lists far below 4 GiB.

fn write_header(n: &Note, out: &mut Vec<u8>) {
    out.push(VERSION);
    out.push(if n.deleted { FLAG_DELETED } else { 0 });
    out.extend_from_slice(&n.note_id.0.to_le_bytes());
    out.extend_from_slice(&n.oid.unid.0);
    out.extend_from_slice(&n.oid.seq_num.to_le_bytes());
    for t in [n.oid.seq_time, n.created, n.modified, n.added] {
        out.extend_from_slice(&t.0.to_le_bytes());
    }
    out.extend_from_slice(&n.change_seq.0.to_le_bytes());
    put_u32_len(out, n.items.len());
}

fn write_item(item: &Item, out: &mut Vec<u8>) {
    put_u16_str(out, &item.name);
    out.push(tag(&item.value));
    put_u32_len(out, value_len(&item.value));
    write_value(&item.value, out);
}

/// An item as a note's version digest sees it (`version.rs`): its stored
/// encoding, except that an attachment is its name, type, size and
/// content checksum only — which blob and pages hold the content is this
/// file's business, not the note's content, and differs between replicas.
pub(crate) fn write_canonical_item(item: &Item, out: &mut Vec<u8>) {
    let ItemValue::Attachment(a) = &item.value else {
        return write_item(item, out);
    };
    put_u16_str(out, &item.name);
    out.push(TAG_ATTACHMENT);
    put_u16_str(out, &a.name);
    put_u16_str(out, &a.mime);
    out.extend_from_slice(&a.size.to_le_bytes());
    out.extend_from_slice(&a.crc32c.to_le_bytes());
}

fn write_value(v: &ItemValue, out: &mut Vec<u8>) {
    match v {
        ItemValue::Text(s) | ItemValue::RichText(s) => out.extend_from_slice(s.as_bytes()),
        ItemValue::TextList(l) => {
            put_u32_len(out, l.len());
            l.iter().for_each(|s| put_u32_str(out, s));
        }
        ItemValue::Number(x) => out.extend_from_slice(&x.to_le_bytes()),
        ItemValue::NumberList(l) => {
            put_u32_len(out, l.len());
            l.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        ItemValue::DateTime(t) => out.extend_from_slice(&t.0.to_le_bytes()),
        ItemValue::DateTimeList(l) => {
            put_u32_len(out, l.len());
            l.iter()
                .for_each(|t| out.extend_from_slice(&t.0.to_le_bytes()));
        }
        ItemValue::Attachment(a) => write_attachment(a, out),
    }
}

fn write_attachment(a: &AttachmentRef, out: &mut Vec<u8>) {
    put_u16_str(out, &a.name);
    put_u16_str(out, &a.mime);
    out.extend_from_slice(&a.size.to_le_bytes());
    out.extend_from_slice(&a.crc32c.to_le_bytes());
    out.extend_from_slice(&a.blob_id.to_le_bytes());
    if let Some(st) = &a.stored {
        out.extend_from_slice(&st.hash.0);
        out.push(st.form.code());
        out.extend_from_slice(&st.stored_size.to_le_bytes());
        return;
    }
    put_u32_len(out, a.extents.len());
    for (first, count) in &a.extents {
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
    }
}

fn put_u16_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_u32_str(out: &mut Vec<u8>, s: &str) {
    put_u32_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn put_u32_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&(len as u32).to_le_bytes());
}

// Reading. Only the structure is checked here; `decode_note` then applies
// the same `validate_items` as the way in.

fn read_items(r: &mut Reader<'_>) -> Result<Vec<Item>, CodecError> {
    let count = r.u32("item count")? as usize;
    if count > MAX_ITEMS {
        return Err(CodecError::TooManyItems {
            count,
            limit: MAX_ITEMS,
        });
    }
    r.expect_room(count, ITEM_OVERHEAD + 1, "items")?;
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(read_item(r)?);
    }
    Ok(items)
}

fn read_item(r: &mut Reader<'_>) -> Result<Item, CodecError> {
    let name_len = usize::from(r.u16("item name length")?);
    let name = r.str(name_len, "item name")?;
    let tag = r.u8("item type")?;
    let len = r.u32("item value length")? as usize;
    if len > MAX_VALUE_BYTES {
        return Err(too_large(format!("item {name:?}"), len, MAX_VALUE_BYTES));
    }
    let mut v = r.value(len, name)?;
    let value = read_value(name, tag, &mut v)?;
    v.finish("the value")?;
    let name = name.to_string();
    Ok(Item { name, value })
}

fn read_value(name: &str, tag: u8, r: &mut Reader<'_>) -> Result<ItemValue, CodecError> {
    Ok(match tag {
        TAG_TEXT => ItemValue::Text(r.rest_str("text")?.to_string()),
        TAG_TEXT_LIST => ItemValue::TextList(r.list(4, |r| Ok(r.u32_str("list entry")?.into()))?),
        TAG_NUMBER => ItemValue::Number(r.f64("number")?),
        TAG_NUMBER_LIST => ItemValue::NumberList(r.list(8, |r| r.f64("number"))?),
        TAG_DATETIME => ItemValue::DateTime(Timestamp(r.i64("date")?)),
        TAG_DATETIME_LIST => ItemValue::DateTimeList(r.list(8, |r| Ok(Timestamp(r.i64("date")?)))?),
        TAG_RICH_TEXT => ItemValue::RichText(r.rest_str("rich text")?.to_string()),
        TAG_ATTACHMENT => ItemValue::Attachment(read_attachment(r)?),
        TAG_STORED_ATTACHMENT => ItemValue::Attachment(read_stored_attachment(r)?),
        tag => {
            let item = name.to_string();
            return Err(CodecError::BadTag { item, tag });
        }
    })
}

fn read_attachment(r: &mut Reader<'_>) -> Result<AttachmentRef, CodecError> {
    Ok(AttachmentRef {
        name: r.u16_str("attachment name")?.to_string(),
        mime: r.u16_str("attachment type")?.to_string(),
        size: r.u64("attachment size")?,
        crc32c: r.u32("attachment checksum")?,
        blob_id: r.u64("attachment blob id")?,
        extents: r.list(8, |r| Ok((r.u32("extent")?, r.u32("extent")?)))?,
        stored: None,
    })
}

fn read_stored_attachment(r: &mut Reader<'_>) -> Result<AttachmentRef, CodecError> {
    let name = r.u16_str("attachment name")?.to_string();
    let mime = r.u16_str("attachment type")?.to_string();
    let size = r.u64("attachment size")?;
    let crc32c = r.u32("attachment checksum")?;
    let blob_id = r.u64("attachment reference id")?;
    let mut hash = [0u8; 32];
    for b in hash.iter_mut() {
        *b = r.u8("attachment content hash")?;
    }
    let code = r.u8("attachment stored form")?;
    let form = crate::StoredForm::from_code(code).ok_or_else(|| CodecError::BadTag {
        item: format!("{name} (stored form)"),
        tag: code,
    })?;
    let stored_size = r.u64("attachment stored size")?;
    Ok(AttachmentRef {
        name,
        mime,
        size,
        crc32c,
        blob_id,
        extents: Vec::new(),
        stored: Some(crate::StoredContent {
            hash: crate::ContentHash(hash),
            form,
            stored_size,
        }),
    })
}

/// A cursor over untrusted bytes. Errors say what was being read and, inside
/// an item's value, which item.
struct Reader<'a> {
    buf: &'a [u8],
    item: Option<&'a str>,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, item: None }
    }

    fn describe(&self, what: &str) -> String {
        match self.item {
            Some(item) => format!("{what} of item {item:?}"),
            None => what.to_string(),
        }
    }

    fn truncated(&self, what: &str) -> CodecError {
        CodecError::Truncated {
            what: self.describe(what),
        }
    }

    fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], CodecError> {
        let buf = self.buf;
        let (head, rest) = buf
            .split_at_checked(n)
            .ok_or_else(|| self.truncated(what))?;
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], CodecError> {
        let buf = self.buf;
        let (head, rest) = buf
            .split_first_chunk()
            .ok_or_else(|| self.truncated(what))?;
        self.buf = rest;
        Ok(*head)
    }

    /// A reader over the next `len` bytes: the value of item `item`.
    fn value(&mut self, len: usize, item: &'a str) -> Result<Reader<'a>, CodecError> {
        let mut v = Reader {
            buf: self.buf,
            item: Some(item),
        };
        let head = v.bytes(len, "the value")?;
        self.buf = v.buf;
        v.buf = head;
        Ok(v)
    }

    fn u8(&mut self, what: &str) -> Result<u8, CodecError> {
        Ok(u8::from_le_bytes(self.array(what)?))
    }

    fn u16(&mut self, what: &str) -> Result<u16, CodecError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32, CodecError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, CodecError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn i64(&mut self, what: &str) -> Result<i64, CodecError> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    fn f64(&mut self, what: &str) -> Result<f64, CodecError> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }

    fn str(&mut self, len: usize, what: &str) -> Result<&'a str, CodecError> {
        let bytes = self.bytes(len, what)?;
        std::str::from_utf8(bytes).map_err(|_| CodecError::BadUtf8 {
            what: self.describe(what),
        })
    }

    fn u16_str(&mut self, what: &str) -> Result<&'a str, CodecError> {
        let len = usize::from(self.u16(what)?);
        self.str(len, what)
    }

    fn u32_str(&mut self, what: &str) -> Result<&'a str, CodecError> {
        let len = self.u32(what)? as usize;
        self.str(len, what)
    }

    fn rest_str(&mut self, what: &str) -> Result<&'a str, CodecError> {
        self.str(self.buf.len(), what)
    }

    /// Reads a u32 count, then that many elements of at least `min_bytes`
    /// each; the count is checked against the bytes left before allocating.
    fn list<T>(
        &mut self,
        min_bytes: usize,
        mut read: impl FnMut(&mut Self) -> Result<T, CodecError>,
    ) -> Result<Vec<T>, CodecError> {
        let count = self.u32("list length")? as usize;
        self.expect_room(count, min_bytes, "list")?;
        (0..count).map(|_| read(self)).collect()
    }

    fn expect_room(&self, count: usize, min_bytes: usize, what: &str) -> Result<(), CodecError> {
        match count.checked_mul(min_bytes) {
            Some(need) if need <= self.buf.len() => Ok(()),
            _ => Err(self.truncated(what)),
        }
    }

    fn finish(&self, what: &str) -> Result<(), CodecError> {
        match self.buf.len() {
            0 => Ok(()),
            count => Err(CodecError::Trailing {
                what: self.describe(what),
                count,
            }),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn note(items: Vec<Item>) -> Note {
        Note {
            note_id: NoteId(7),
            oid: OriginatorId {
                unid: Unid(std::array::from_fn(|i| i as u8)),
                seq_num: 3,
                seq_time: Timestamp(1_700_000_000_000_000),
            },
            created: Timestamp(1),
            modified: Timestamp(2),
            added: Timestamp(3),
            change_seq: Seq(42),
            deleted: false,
            items,
        }
    }

    fn item(name: &str, value: ItemValue) -> Item {
        let name = name.to_string();
        Item { name, value }
    }

    fn text(name: &str, s: &str) -> Item {
        item(name, ItemValue::Text(s.to_string()))
    }

    fn attachment() -> AttachmentRef {
        AttachmentRef {
            name: "a.txt".into(),
            mime: "text/plain".into(),
            size: 5,
            crc32c: 0xDEAD_BEEF,
            blob_id: 9,
            extents: vec![(10, 1)],
            stored: None,
        }
    }

    fn every_type() -> Vec<Item> {
        vec![
            text("Subject", "Hi"),
            item("Tags", ItemValue::TextList(vec!["a".into(), "b".into()])),
            item("Price", ItemValue::Number(1.5)),
            item("Sizes", ItemValue::NumberList(vec![1.0, -2.0])),
            item("Due", ItemValue::DateTime(Timestamp(0))),
            item("Dates", ItemValue::DateTimeList(vec![Timestamp(1)])),
            item("Body", ItemValue::RichText("# T".into())),
            item("File", ItemValue::Attachment(attachment())),
        ]
    }

    /// The v1 encoding of `note(every_type())`. If this test fails, the
    /// on-disk format changed: bump the version instead.
    const GOLDEN: &str = concat!(
        // header: version, flags, note id, unid, seq, seq time, created,
        // modified, added, change seq, item count
        "0100",
        "07000000",
        "000102030405060708090a0b0c0d0e0f",
        "03000000",
        "00401e18240a0600",
        "0100000000000000",
        "0200000000000000",
        "0300000000000000",
        "2a00000000000000",
        "08000000",
        // Subject: Text "Hi"
        "0700",
        "5375626a656374",
        "01",
        "02000000",
        "4869",
        // Tags: TextList ["a", "b"]
        "0400",
        "54616773",
        "02",
        "0e000000",
        "02000000",
        "0100000061",
        "0100000062",
        // Price: Number 1.5
        "0500",
        "5072696365",
        "03",
        "08000000",
        "000000000000f83f",
        // Sizes: NumberList [1, -2]
        "0500",
        "53697a6573",
        "04",
        "14000000",
        "02000000",
        "000000000000f03f",
        "00000000000000c0",
        // Due: DateTime 0
        "0300",
        "447565",
        "05",
        "08000000",
        "0000000000000000",
        // Dates: DateTimeList [1]
        "0500",
        "4461746573",
        "06",
        "0c000000",
        "01000000",
        "0100000000000000",
        // Body: RichText "# T"
        "0400",
        "426f6479",
        "07",
        "03000000",
        "232054",
        // File: Attachment a.txt, text/plain, size 5, crc, blob 9, [(10, 1)]
        "0400",
        "46696c65",
        "08",
        "33000000",
        "0500",
        "612e747874",
        "0a00",
        "746578742f706c61696e",
        "0500000000000000",
        "efbeadde",
        "0900000000000000",
        "01000000",
        "0a000000",
        "01000000",
    );

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn golden_encoding() {
        let n = note(every_type());
        let b = encode_note(&n).unwrap();
        assert_eq!(hex(&b), GOLDEN);
        assert_eq!(decode_note(&b).unwrap(), n);
    }

    #[test]
    fn deleted_flag_is_bit_zero() {
        let mut n = note(vec![]);
        n.deleted = true;
        let b = encode_note(&n).unwrap();
        assert_eq!(b[1], 1);
        assert_eq!(b.len(), HEADER_BYTES);
        assert!(decode_note(&b).unwrap().deleted);
    }

    #[test]
    fn items_are_found_replaced_and_removed_ignoring_case() {
        let mut n = note(every_type());
        assert_eq!(n.item("SUBJECT").unwrap().name, "Subject");
        assert!(n.item("Missing").is_none());
        n.set_item(text("subject", "Bye"));
        assert_eq!(n.items.len(), 8);
        assert_eq!(n.items[0], text("subject", "Bye"));
        n.set_item(text("Extra", "x"));
        assert_eq!(n.items.last().unwrap().name, "Extra");
        assert_eq!(n.remove_item("tAgS").unwrap().name, "Tags");
        assert!(n.remove_item("Tags").is_none());
        assert_eq!(n.items.len(), 8);
    }

    #[test]
    fn unicode_names_fold_case() {
        let n = note(vec![text("Größe", "x")]);
        assert!(n.item("GRÖSSE").is_none(), "no full case folding");
        assert!(n.item("größe").is_some());
        let dup = validate_items(&[text("Ärger", "1"), text("äRGER", "2")]);
        assert_eq!(dup, Err(CodecError::Duplicate("äRGER".into())));
    }

    #[test]
    fn attachments_lists_only_attachments() {
        let mut n = note(every_type());
        let mut second = attachment();
        second.name = "b.bin".into();
        n.set_item(item("Other", ItemValue::Attachment(second.clone())));
        let found: Vec<_> = n.attachments().collect();
        assert_eq!(found, [&attachment(), &second]);
    }

    fn bad_name(name: &str) -> &'static str {
        match validate_items(&[text(name, "x")]) {
            Err(CodecError::BadName { reason, .. }) => reason,
            other => panic!("{name:?}: expected BadName, got {other:?}"),
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(bad_name("").contains("empty"));
        assert!(bad_name(&"n".repeat(256)).contains("255"));
        assert!(bad_name("a\tb").contains("control"));
        assert!(bad_name("a\u{7f}").contains("control"));
        assert!(bad_name("$unid").contains("reserved"));
        assert!(validate_items(&[text(&"n".repeat(255), "x"), text("a$", "x")]).is_ok());
        assert!(validate_items(&[text(&"é".repeat(127), "x")]).is_ok());
        assert!(bad_name(&"é".repeat(128)).contains("255"));
    }

    #[test]
    fn bad_name_error_is_shortened_and_escaped() {
        let err = validate_items(&[text(&format!("\n{}", "x".repeat(300)), "v")]);
        let msg = err.unwrap_err().to_string();
        assert!(msg.starts_with(r#"invalid item name "\nxxx"#), "{msg}");
        assert!(msg.len() < 150, "{msg}");
    }

    #[test]
    fn duplicate_names_ignore_case() {
        let items = [text("Body", "1"), text("Other", "2"), text("BODY", "3")];
        assert_eq!(
            validate_items(&items),
            Err(CodecError::Duplicate("BODY".into()))
        );
    }

    #[test]
    fn duplicates_are_found_past_the_pairwise_names() {
        let names: Vec<String> = (0..40).map(|i| format!("Ärger{i}")).collect();
        let items: Vec<Item> = names.iter().map(|n| text(n, "x")).collect();
        assert!(validate_items(&items).is_ok());
        // The second spelling of a name comes at every position in turn:
        // among the pairwise names, where the set takes over, and after.
        for later in 1..40 {
            for (earlier, name) in names[..later].iter().enumerate() {
                let mut dup = items[..later].to_vec();
                dup.push(text(&name.to_uppercase(), "y"));
                assert_eq!(
                    validate_items(&dup),
                    Err(CodecError::Duplicate(name.to_uppercase())),
                    "{earlier} again at {later}"
                );
            }
        }
    }

    #[test]
    fn item_count_is_limited() {
        let items: Vec<Item> = (0..=MAX_ITEMS)
            .map(|i| text(&format!("i{i}"), ""))
            .collect();
        assert!(validate_items(&items[..MAX_ITEMS]).is_ok());
        assert_eq!(
            validate_items(&items),
            Err(CodecError::TooManyItems {
                count: 10_001,
                limit: 10_000
            })
        );
    }

    #[test]
    fn value_size_is_limited_and_the_error_names_the_item() {
        let ok = text("Body", &"x".repeat(MAX_VALUE_BYTES));
        assert!(validate_items(&[ok]).is_ok());
        let big = text("Body", &"x".repeat(20_000_000));
        let err = validate_items(&[big]).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"item "Body" is 20000000 bytes; the limit is 16777216"#
        );
        let list = ItemValue::TextList(vec![String::new(); MAX_VALUE_BYTES / 4]);
        let err = validate_items(&[item("L", list)]).unwrap_err();
        assert!(matches!(err, CodecError::TooLarge { size, .. } if size == MAX_VALUE_BYTES + 4));
    }

    #[test]
    fn note_size_is_limited() {
        let chunk = "x".repeat(MAX_VALUE_BYTES);
        let items: Vec<Item> = (0..4).map(|i| text(&format!("i{i}"), &chunk)).collect();
        let err = validate_items(&items).unwrap_err();
        let size = HEADER_BYTES + 4 * (ITEM_OVERHEAD + 2 + MAX_VALUE_BYTES);
        assert_eq!(err, too_large("note".into(), size, MAX_NOTE_BYTES));
        assert_eq!(encode_note(&note(items)), Err(err));
        assert!(validate_items(&items_under_note_limit(&chunk)).is_ok());
    }

    /// Three full-size values: just under the note limit.
    fn items_under_note_limit(chunk: &str) -> Vec<Item> {
        (0..3).map(|i| text(&format!("i{i}"), chunk)).collect()
    }

    #[test]
    fn numbers_must_be_finite() {
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let err = Err(CodecError::NotFinite { item: "N".into() });
            assert_eq!(validate_items(&[item("N", ItemValue::Number(x))]), err);
            let list = ItemValue::NumberList(vec![1.0, x]);
            assert_eq!(validate_items(&[item("N", list)]), err);
        }
        let ok = [f64::MAX, f64::MIN_POSITIVE, -0.0, 5e-324];
        assert!(validate_items(&[item("N", ItemValue::NumberList(ok.to_vec()))]).is_ok());
    }

    #[test]
    fn dates_must_have_an_rfc3339_form() {
        assert_eq!(
            Timestamp::parse_rfc3339("0000-01-01T00:00:00Z"),
            Some(MIN_DATETIME)
        );
        assert_eq!(
            Timestamp::parse_rfc3339("9999-12-31T23:59:59.999999Z"),
            Some(MAX_DATETIME)
        );
        let date = |t| item("D", ItemValue::DateTime(Timestamp(t)));
        assert!(validate_items(&[date(MIN_DATETIME.0)]).is_ok());
        assert!(validate_items(&[date(MAX_DATETIME.0)]).is_ok());
        let err = Err(CodecError::DateOutOfRange { item: "D".into() });
        assert_eq!(validate_items(&[date(MAX_DATETIME.0 + 1)]), err);
        assert_eq!(validate_items(&[date(MIN_DATETIME.0 - 1)]), err);
        let list = ItemValue::DateTimeList(vec![MIN_DATETIME, Timestamp(i64::MAX)]);
        assert_eq!(validate_items(&[item("D", list)]), err);
    }

    #[test]
    fn attachment_fields_fit_their_length_prefix() {
        let mut a = attachment();
        a.mime = "m".repeat(65_536);
        let err = validate_items(&[item("F", ItemValue::Attachment(a.clone()))]).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"attachment type in item "F" is 65536 bytes; the limit is 65535"#
        );
        a.mime.pop();
        let n = note(vec![item("F", ItemValue::Attachment(a))]);
        assert_eq!(decode_note(&encode_note(&n).unwrap()).unwrap(), n);
    }

    #[test]
    fn access_items_are_the_only_settable_dollar_names() {
        let names = |v| vec![item("$Readers", v)];
        assert!(validate_items(&names(ItemValue::Text("alice".into()))).is_ok());
        assert!(validate_items(&names(ItemValue::TextList(vec![]))).is_ok());
        let list = ItemValue::TextList(vec!["[Sales]".into(), "*".into()]);
        assert!(
            validate_items(&[item("$authors", list)]).is_ok(),
            "any case"
        );
        for bad in [
            ItemValue::Number(1.0),
            ItemValue::RichText("alice".into()),
            ItemValue::DateTimeList(vec![]),
            ItemValue::Attachment(attachment()),
        ] {
            let err = validate_items(&[item("$AUTHORS", bad)]).unwrap_err();
            assert_eq!(
                err,
                CodecError::NotNames {
                    item: "$AUTHORS".into()
                }
            );
        }
        assert_eq!(
            validate_items(&[item("$Readers", ItemValue::Number(1.0))])
                .unwrap_err()
                .to_string(),
            r#"item "$Readers" must be text or a list of text (user names, [roles] or *)"#
        );
        for name in ["$Bogus", "$Reader", "$Readers2", "$ACL", "$DesignType"] {
            let err = validate_items(&[item(name, ItemValue::TextList(vec![]))]).unwrap_err();
            assert!(matches!(err, CodecError::BadName { .. }), "{name}: {err}");
        }
        let dup = [text("$Readers", "a"), text("$READERS", "b")];
        assert_eq!(
            validate_items(&dup),
            Err(CodecError::Duplicate("$READERS".into()))
        );
        let n = note(vec![text("Subject", "x"), text("$Readers", "alice")]);
        assert_eq!(decode_note(&encode_note(&n).unwrap()).unwrap(), n);
    }

    #[test]
    fn note_ref_finds_several_items_in_one_pass() {
        let mut items = every_type();
        items.push(text("$Readers", "alice"));
        let b = encode_note(&note(items)).unwrap();
        let r = NoteRef::new(&b).unwrap();
        let [readers, price, missing, subject] =
            r.items(["$readers", "PRICE", "Nope", "Subject"]).unwrap();
        assert_eq!(readers, Some(ItemValue::Text("alice".into())));
        assert_eq!(price, Some(ItemValue::Number(1.5)));
        assert_eq!(missing, None);
        assert_eq!(subject, Some(ItemValue::Text("Hi".into())));
    }

    #[test]
    fn encode_refuses_invalid_items() {
        let n = note(vec![text("$x", "")]);
        assert!(matches!(encode_note(&n), Err(CodecError::BadName { .. })));
    }

    // Hand-built encodings, to reach the decoder's checks.

    fn header(count: u32) -> Vec<u8> {
        let mut b = encode_note(&note(vec![])).unwrap();
        b.truncate(HEADER_BYTES - 4);
        b.extend_from_slice(&count.to_le_bytes());
        b
    }

    fn raw_item(b: &mut Vec<u8>, name: &[u8], tag: u8, value: &[u8]) {
        b.extend_from_slice(&(name.len() as u16).to_le_bytes());
        b.extend_from_slice(name);
        b.push(tag);
        b.extend_from_slice(&(value.len() as u32).to_le_bytes());
        b.extend_from_slice(value);
    }

    fn one_raw_item(name: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
        let mut b = header(1);
        raw_item(&mut b, name, tag, value);
        b
    }

    #[test]
    fn decode_checks_version_and_flags() {
        let mut b = encode_note(&note(vec![])).unwrap();
        b[0] = 2;
        assert_eq!(decode_note(&b), Err(CodecError::BadVersion(2)));
        b[0] = 1;
        b[1] = 0b11;
        assert_eq!(decode_note(&b), Err(CodecError::BadFlags(3)));
        assert_eq!(
            decode_note(&[]).unwrap_err().to_string(),
            "note encoding is truncated in version"
        );
    }

    #[test]
    fn decode_reports_truncation_by_field() {
        let b = encode_note(&note(every_type())).unwrap();
        let truncated = |len: usize| match decode_note(&b[..len]) {
            Err(CodecError::Truncated { what }) => what,
            other => panic!("{len}: {other:?}"),
        };
        assert_eq!(truncated(10), "unid");
        assert_eq!(truncated(HEADER_BYTES - 1), "item count");
        assert_eq!(
            truncated(HEADER_BYTES + 3),
            "items",
            "8 items need 64 bytes"
        );
        let file_item = b.len() - (ITEM_OVERHEAD + 4 + 51);
        assert_eq!(truncated(file_item + 3), "item name");
        assert_eq!(truncated(file_item + 10), "item value length");
        assert_eq!(truncated(file_item + 12), r#"the value of item "File""#);
        assert_eq!(truncated(b.len() - 1), r#"the value of item "File""#);
    }

    #[test]
    fn decode_rejects_bad_utf8() {
        let b = one_raw_item(b"\xffName", TAG_TEXT, b"");
        let what = "item name".to_string();
        assert_eq!(decode_note(&b), Err(CodecError::BadUtf8 { what }));
        let b = one_raw_item(b"Body", TAG_RICH_TEXT, b"ok \xc3");
        let what = r#"rich text of item "Body""#.to_string();
        assert_eq!(decode_note(&b), Err(CodecError::BadUtf8 { what }));
        let list = [&1u32.to_le_bytes()[..], &1u32.to_le_bytes(), b"\x80"].concat();
        let b = one_raw_item(b"Tags", TAG_TEXT_LIST, &list);
        let err = decode_note(&b).unwrap_err().to_string();
        assert_eq!(err, r#"invalid UTF-8 in list entry of item "Tags""#);
    }

    #[test]
    fn decode_rejects_unknown_tags() {
        for tag in [0, 10, 255] {
            let b = one_raw_item(b"X", tag, b"");
            let item = "X".to_string();
            assert_eq!(decode_note(&b), Err(CodecError::BadTag { item, tag }));
        }
    }

    #[test]
    fn decode_rejects_trailing_bytes() {
        let mut b = encode_note(&note(every_type())).unwrap();
        b.extend_from_slice(b"zz");
        let what = "the items".to_string();
        assert_eq!(
            decode_note(&b),
            Err(CodecError::Trailing { what, count: 2 })
        );
        let b = one_raw_item(b"N", TAG_NUMBER, &[0; 9]);
        let what = r#"the value of item "N""#.to_string();
        assert_eq!(
            decode_note(&b),
            Err(CodecError::Trailing { what, count: 1 })
        );
    }

    #[test]
    fn decode_checks_declared_sizes_before_reading() {
        let mut b = header(1);
        b.extend_from_slice(&4u16.to_le_bytes());
        b.extend_from_slice(b"Body");
        b.push(TAG_TEXT);
        b.extend_from_slice(&(MAX_VALUE_BYTES as u32 + 1).to_le_bytes());
        let err = decode_note(&b).unwrap_err();
        assert_eq!(
            err,
            too_large(
                r#"item "Body""#.into(),
                MAX_VALUE_BYTES + 1,
                MAX_VALUE_BYTES
            )
        );
        let err = decode_note(&vec![1; MAX_NOTE_BYTES + 1]).unwrap_err();
        assert_eq!(
            err,
            too_large("note".into(), MAX_NOTE_BYTES + 1, MAX_NOTE_BYTES)
        );
    }

    #[test]
    fn decode_weighs_counts_against_remaining_bytes() {
        let too_many = CodecError::TooManyItems {
            count: 10_001,
            limit: MAX_ITEMS,
        };
        assert_eq!(decode_note(&header(10_001)), Err(too_many));
        let huge = decode_note(&header(u32::MAX));
        assert!(matches!(
            huge,
            Err(CodecError::TooManyItems {
                count: 4_294_967_295,
                ..
            })
        ));
        let what = "items".to_string();
        assert_eq!(
            decode_note(&header(10_000)),
            Err(CodecError::Truncated { what })
        );
        for tag in [TAG_TEXT_LIST, TAG_NUMBER_LIST, TAG_DATETIME_LIST] {
            let b = one_raw_item(b"L", tag, &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
            let what = r#"list of item "L""#.to_string();
            assert_eq!(decode_note(&b), Err(CodecError::Truncated { what }));
        }
    }

    #[test]
    fn decode_applies_the_item_rules() {
        let mut b = header(2);
        raw_item(&mut b, b"Body", TAG_TEXT, b"1");
        raw_item(&mut b, b"body", TAG_TEXT, b"2");
        assert_eq!(decode_note(&b), Err(CodecError::Duplicate("body".into())));
        let b = one_raw_item(b"$unid", TAG_TEXT, b"");
        assert!(matches!(decode_note(&b), Err(CodecError::BadName { .. })));
        let mut b = header(2);
        raw_item(&mut b, b"", TAG_TEXT, b"");
        raw_item(&mut b, b"AB", TAG_TEXT, b"");
        assert!(matches!(decode_note(&b), Err(CodecError::BadName { .. })));
        let b = one_raw_item(b"N", TAG_NUMBER, &f64::NAN.to_le_bytes());
        assert_eq!(
            decode_note(&b),
            Err(CodecError::NotFinite { item: "N".into() })
        );
        let b = one_raw_item(b"D", TAG_DATETIME, &i64::MIN.to_le_bytes());
        assert_eq!(
            decode_note(&b),
            Err(CodecError::DateOutOfRange { item: "D".into() })
        );
    }

    // Generators, shared with the JSON tests.

    fn arb_name() -> impl Strategy<Value = String> {
        "[^\\p{Cc}$][^\\p{Cc}]{0,15}"
    }

    fn arb_string() -> impl Strategy<Value = String> {
        vec(any::<char>(), 0..12).prop_map(String::from_iter)
    }

    fn arb_number() -> impl Strategy<Value = f64> {
        any::<f64>().prop_filter("finite", |x| x.is_finite())
    }

    fn arb_date() -> impl Strategy<Value = Timestamp> {
        (MIN_DATETIME.0..=MAX_DATETIME.0).prop_map(Timestamp)
    }

    fn arb_attachment() -> impl Strategy<Value = AttachmentRef> {
        let ids = (any::<u64>(), any::<u32>(), any::<u64>());
        let extents = vec(any::<(u32, u32)>(), 0..4);
        let stored = proptest::option::of((any::<[u8; 32]>(), any::<bool>(), any::<u64>()));
        (arb_string(), arb_string(), ids, extents, stored).prop_map(
            |(name, mime, (size, crc32c, blob_id), extents, stored)| {
                let stored = stored.map(|(hash, zstd, stored_size)| crate::StoredContent {
                    hash: crate::ContentHash(hash),
                    form: if zstd {
                        crate::StoredForm::Zstd
                    } else {
                        crate::StoredForm::Raw
                    },
                    stored_size,
                });
                AttachmentRef {
                    name,
                    mime,
                    size,
                    crc32c,
                    blob_id,
                    // A stored attachment has no blob runs.
                    extents: if stored.is_some() {
                        Vec::new()
                    } else {
                        extents
                    },
                    stored,
                }
            },
        )
    }

    fn arb_value(attachments: bool) -> BoxedStrategy<ItemValue> {
        let plain = prop_oneof![
            arb_string().prop_map(ItemValue::Text),
            vec(arb_string(), 0..4).prop_map(ItemValue::TextList),
            arb_number().prop_map(ItemValue::Number),
            vec(arb_number(), 0..4).prop_map(ItemValue::NumberList),
            arb_date().prop_map(ItemValue::DateTime),
            vec(arb_date(), 0..4).prop_map(ItemValue::DateTimeList),
            arb_string().prop_map(ItemValue::RichText),
        ];
        if attachments {
            prop_oneof![plain, arb_attachment().prop_map(ItemValue::Attachment)].boxed()
        } else {
            plain.boxed()
        }
    }

    /// A value an access item may hold.
    fn arb_names() -> impl Strategy<Value = ItemValue> {
        prop_oneof![
            arb_string().prop_map(ItemValue::Text),
            vec(arb_string(), 0..4).prop_map(ItemValue::TextList),
        ]
    }

    /// Valid items with distinct names (ignoring case), sometimes with
    /// access items.
    pub(crate) fn arb_items(attachments: bool) -> impl Strategy<Value = Vec<Item>> {
        let pairs = vec((arb_name(), arb_value(attachments)), 0..8);
        let access = || prop::option::weighted(0.2, arb_names());
        (pairs, access(), access()).prop_map(|(pairs, readers, authors)| {
            let mut seen = HashSet::new();
            let access = [(READERS_ITEM, readers), (AUTHORS_ITEM, authors)];
            let access = access
                .into_iter()
                .filter_map(|(name, v)| v.map(|v| (name.to_string(), v)));
            pairs
                .into_iter()
                .filter(|(name, _)| seen.insert(fold(name).collect::<String>()))
                .chain(access)
                .map(|(name, value)| Item { name, value })
                .collect()
        })
    }

    pub(crate) fn arb_note(attachments: bool) -> impl Strategy<Value = Note> {
        let ids = (any::<u32>(), any::<[u8; 16]>(), any::<u32>(), any::<u64>());
        let times = any::<[i64; 4]>();
        (ids, times, any::<bool>(), arb_items(attachments)).prop_map(
            |((id, unid, seq_num, change_seq), [t0, t1, t2, t3], deleted, items)| Note {
                note_id: NoteId(id),
                oid: OriginatorId {
                    unid: Unid(unid),
                    seq_num,
                    seq_time: Timestamp(t0),
                },
                created: Timestamp(t1),
                modified: Timestamp(t2),
                added: Timestamp(t3),
                change_seq: Seq(change_seq),
                deleted,
                items,
            },
        )
    }

    /// Decoding arbitrary bytes must not panic, and whatever decodes must
    /// be exactly what `encode_note` writes for it (the format is canonical).
    fn decodes_canonically_or_fails(b: &[u8]) -> Result<(), TestCaseError> {
        if let Ok(n) = decode_note(b) {
            prop_assert_eq!(encode_note(&n).unwrap(), b);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn encode_decode_round_trips(n in arb_note(true)) {
            let b = encode_note(&n).unwrap();
            prop_assert_eq!(decode_note(&b).unwrap(), n);
        }

        #[test]
        fn random_bytes_never_panic(tail in vec(any::<u8>(), 0..200), flags in 0u8..3) {
            decodes_canonically_or_fails(&tail)?;
            let mut b = header(tail.len() as u32 % 5);
            b[1] = flags;
            b.extend_from_slice(&tail);
            decodes_canonically_or_fails(&b)?;
        }

        #[test]
        fn mutations_never_panic(n in arb_note(true), pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let mut b = encode_note(&n).unwrap();
            let i = pos.index(b.len());
            b[i] = byte;
            decodes_canonically_or_fails(&b)?;
            // The lazy reader errs or answers; it never panics.
            if let Ok(r) = NoteRef::new(&b) {
                for it in &n.items {
                    let _ = r.item(&it.name);
                }
                let _ = r.has_item("$DesignType");
            }
        }

        #[test]
        fn lazy_reads_agree_with_full_decoding(n in arb_note(true)) {
            let b = encode_note(&n).unwrap();
            let r = NoteRef::new(&b).unwrap();
            prop_assert_eq!((r.note_id, r.unid, r.created, r.modified, r.change_seq, r.deleted),
                (n.note_id, n.oid.unid, n.created, n.modified, n.change_seq, n.deleted));
            for it in &n.items {
                prop_assert_eq!(r.item(&it.name.to_uppercase()).unwrap(), n.item(&it.name.to_uppercase()).map(|i| i.value.clone()));
            }
            prop_assert_eq!(r.item("no such item").unwrap(), None);
            prop_assert_eq!(r.to_note().unwrap(), n);
        }

        #[test]
        fn every_truncation_fails(n in arb_note(true)) {
            let b = encode_note(&n).unwrap();
            for len in 0..b.len() {
                prop_assert!(decode_note(&b[..len]).is_err());
            }
        }
    }
}
