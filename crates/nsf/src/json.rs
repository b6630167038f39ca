//! Documents as JSON, for the command line and the HTTP API.
//!
//! Why a fixed mapping: people type these documents by hand, so common
//! values use plain JSON (a string is text, an array of numbers is a number
//! list) and only types JSON lacks are spelled as typed objects, e.g.
//! `{"$type":"datetime","v":"2026-11-21T10:00:00Z"}`. Output uses the same
//! forms, so a document read out can be edited and written back: the items
//! survive the round trip exactly (attachments excepted, which are managed
//! through their own commands). An empty number list is written as
//! `{"$type":"number-list","v":[]}` because a bare `[]` reads as text.
//! Through JSON text, numbers are exact only if serde_json parses with its
//! `float_roundtrip` feature; without it one may come back a unit in the
//! last place off.
//!
//! Keys starting with `$` are system fields (`$unid`, `$seq`, ...). Item
//! names may not start with `$`, so the two never collide; on input such
//! keys are skipped and the caller reads the ones it needs (e.g. `$seq`).
//! The exceptions are the access items `$Readers` and `$Authors`, which are
//! items like any other: `"$Readers": ["alice", "[Sales]"]` sets one (text
//! or a list of text; the key in any case, stored as spelled here) and
//! `null` removes it. They are never skipped, so a document meant to be
//! restricted cannot be stored unrestricted because of a key's spelling.

use crate::note::{access_item_name, check_names};
use crate::{validate_items, AttachmentRef, CodecError, Item, ItemValue, Note, Timestamp};
use serde_json::{json, Map, Number, Value};

/// One change requested by a JSON document.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemUpdate {
    Set(Item),
    /// The key's value was `null`.
    Remove(String),
}

/// Why a JSON document could not be turned into items.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    #[error("a document must be a JSON object")]
    NotObject,
    #[error("item {item:?}: {reason}")]
    BadValue { item: String, reason: String },
    #[error(transparent)]
    Invalid(#[from] CodecError),
}

/// The item changes a JSON object asks for; keys starting with `$` are
/// skipped, except the access items. The result obeys the item limits (see
/// [`validate_items`]).
pub fn items_from_json(v: &Value) -> Result<Vec<ItemUpdate>, JsonError> {
    let obj = v.as_object().ok_or(JsonError::NotObject)?;
    let fields = obj
        .iter()
        .filter_map(|(k, v)| item_name_of_key(k).map(|name| (name, v)));
    check_names(fields.clone().map(|(k, _)| (k, false)))?;
    let (removes, sets): (Vec<_>, Vec<_>) = fields.partition(|(_, v)| v.is_null());
    let sets = sets
        .into_iter()
        .map(|(name, v)| item_from_json(name, v))
        .collect::<Result<Vec<_>, _>>()?;
    validate_items(&sets)?;
    let removes = removes
        .into_iter()
        .map(|(name, _)| ItemUpdate::Remove(name.to_string()));
    Ok(sets
        .into_iter()
        .map(ItemUpdate::Set)
        .chain(removes)
        .collect())
}

/// The item a JSON key names: the key itself, the canonical name of an
/// access item, or nothing for a system field.
fn item_name_of_key(key: &str) -> Option<&str> {
    if key.starts_with('$') {
        access_item_name(key)
    } else {
        Some(key)
    }
}

/// Items as a JSON object (no system fields): what [`items_from_json`]
/// reads back to the same items.
pub fn items_to_json(items: &[Item]) -> Value {
    Value::Object(
        items
            .iter()
            .map(|i| (i.name.clone(), value_to_json(&i.value)))
            .collect(),
    )
}

/// A note as JSON: its system fields and every item.
pub fn note_to_json(n: &Note) -> Value {
    let mut obj: Map<String, Value> = n
        .items
        .iter()
        .map(|i| (i.name.clone(), value_to_json(&i.value)))
        .collect();
    let system = [
        ("$unid", json!(n.oid.unid.to_string())),
        ("$noteid", json!(n.note_id.0)),
        ("$seq", json!(n.oid.seq_num)),
        ("$seqtime", json!(n.oid.seq_time.to_rfc3339())),
        ("$created", json!(n.created.to_rfc3339())),
        ("$modified", json!(n.modified.to_rfc3339())),
        ("$changeseq", json!(n.change_seq.0)),
    ];
    obj.extend(system.map(|(k, v)| (k.to_string(), v)));
    Value::Object(obj)
}

fn item_from_json(name: &str, v: &Value) -> Result<Item, JsonError> {
    let value = value_from_json(v).map_err(|reason| JsonError::BadValue {
        item: name.to_string(),
        reason,
    })?;
    let name = name.to_string();
    Ok(Item { name, value })
}

fn value_from_json(v: &Value) -> Result<ItemValue, String> {
    match v {
        Value::String(s) => Ok(ItemValue::Text(s.clone())),
        Value::Number(n) => number(n).map(ItemValue::Number),
        Value::Array(a) if a.iter().all(Value::is_number) && !a.is_empty() => {
            numbers(a).map(ItemValue::NumberList)
        }
        Value::Array(a) => texts(a).map(ItemValue::TextList),
        Value::Object(o) => typed_from_json(o),
        Value::Bool(_) => Err("true and false are not supported; use text or a number".into()),
        Value::Null => Err("null is only allowed as an item's whole value".into()),
    }
}

/// A typed object: `{"$type": ..., "v": ...}`.
fn typed_from_json(o: &Map<String, Value>) -> Result<ItemValue, String> {
    let Some(ty) = o.get("$type").and_then(Value::as_str) else {
        return Err(r#"objects must be typed values like {"$type":"datetime","v":"..."}"#.into());
    };
    let parse: fn(&Value) -> Result<ItemValue, String> = match ty {
        "text" => |v| text(v).map(ItemValue::Text),
        "richtext" => |v| text(v).map(ItemValue::RichText),
        "number" => |v| {
            let n = v.as_number().ok_or_else(expected("a number"))?;
            number(n).map(ItemValue::Number)
        },
        "text-list" => |v| array(v).and_then(texts).map(ItemValue::TextList),
        "number-list" => |v| array(v).and_then(numbers).map(ItemValue::NumberList),
        "datetime" => |v| datetime(v).map(ItemValue::DateTime),
        "datetime-list" => |v| {
            let dates: Result<_, _> = array(v)?.iter().map(datetime).collect();
            dates.map(ItemValue::DateTimeList)
        },
        "attachment" => return Err("attachments are added with `attach put`".into()),
        other => return Err(format!("unknown $type {other:?}")),
    };
    match o.get("v") {
        Some(v) if o.len() == 2 => parse(v),
        _ => Err(format!(
            r#"a "{ty}" value has exactly the keys "$type" and "v""#
        )),
    }
}

fn expected(what: &'static str) -> impl Fn() -> String {
    move || format!("expected {what}")
}

fn text(v: &Value) -> Result<String, String> {
    v.as_str().map(str::to_string).ok_or_else(expected("text"))
}

fn array(v: &Value) -> Result<&[Value], String> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(expected("an array"))
}

fn number(n: &Number) -> Result<f64, String> {
    n.as_f64()
        .ok_or_else(|| format!("{n} is not a representable number"))
}

fn numbers(a: &[Value]) -> Result<Vec<f64>, String> {
    let one = |v: &Value| v.as_number().ok_or_else(mixed).and_then(number);
    a.iter().map(one).collect()
}

fn texts(a: &[Value]) -> Result<Vec<String>, String> {
    let one = |v: &Value| v.as_str().map(str::to_string).ok_or_else(mixed);
    a.iter().map(one).collect()
}

fn mixed() -> String {
    "a list must hold only text or only numbers".into()
}

fn datetime(v: &Value) -> Result<Timestamp, String> {
    let s = v.as_str().ok_or_else(expected("an RFC 3339 date string"))?;
    Timestamp::parse_rfc3339(s)
        .ok_or_else(|| format!("{s:?} is not an RFC 3339 date, e.g. 2026-11-21T10:00:00Z"))
}

fn value_to_json(v: &ItemValue) -> Value {
    match v {
        ItemValue::Text(s) => Value::from(s.as_str()),
        ItemValue::TextList(l) => Value::from(l.as_slice()),
        ItemValue::Number(x) => number_to_json(*x),
        ItemValue::NumberList(l) if l.is_empty() => typed("number-list", json!([])),
        ItemValue::NumberList(l) => Value::Array(l.iter().map(|x| number_to_json(*x)).collect()),
        ItemValue::DateTime(t) => typed("datetime", json!(t.to_rfc3339())),
        ItemValue::DateTimeList(l) => {
            typed("datetime-list", l.iter().map(|t| t.to_rfc3339()).collect())
        }
        ItemValue::RichText(s) => typed("richtext", json!(s)),
        ItemValue::Attachment(a) => attachment_to_json(a),
    }
}

/// Stored numbers are finite; a non-finite one (only possible in a note
/// built in memory without validation) shows as `null`.
fn number_to_json(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn typed(ty: &str, v: Value) -> Value {
    json!({ "$type": ty, "v": v })
}

fn attachment_to_json(a: &AttachmentRef) -> Value {
    json!({ "$type": "attachment", "name": a.name, "mime": a.mime, "size": a.size })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::note::tests::arb_note;
    use crate::{NoteId, OriginatorId, Seq, Unid};
    use proptest::prelude::*;

    fn parse(v: Value) -> Result<Vec<ItemUpdate>, JsonError> {
        items_from_json(&v)
    }

    fn set(name: &str, value: ItemValue) -> ItemUpdate {
        let name = name.to_string();
        ItemUpdate::Set(Item { name, value })
    }

    fn bad_value(v: Value) -> String {
        match parse(json!({ "X": v })) {
            Err(JsonError::BadValue { item, reason }) if item == "X" => reason,
            other => panic!("expected BadValue, got {other:?}"),
        }
    }

    fn date(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn plain_json_maps_to_items() {
        let updates = parse(json!({
            "A": "text",
            "B": ["x", "y"],
            "C": 2.5,
            "D": [1, -2.5],
            "E": [],
        }));
        let expected = [
            set("A", ItemValue::Text("text".into())),
            set("B", ItemValue::TextList(vec!["x".into(), "y".into()])),
            set("C", ItemValue::Number(2.5)),
            set("D", ItemValue::NumberList(vec![1.0, -2.5])),
            set("E", ItemValue::TextList(vec![])),
        ];
        assert_eq!(updates.unwrap(), expected);
    }

    #[test]
    fn typed_objects_map_to_items() {
        let t = "2026-11-21T10:00:00Z";
        let updates = parse(json!({
            "A": { "$type": "datetime", "v": t },
            "B": { "$type": "datetime-list", "v": [t, "2026-11-21T11:00:00+01:00"] },
            "C": { "$type": "richtext", "v": "# Title" },
            "D": { "$type": "text", "v": "plain" },
            "E": { "$type": "number", "v": 1 },
            "F": { "$type": "text-list", "v": [] },
            "G": { "$type": "number-list", "v": [] },
        }));
        let expected = [
            set("A", ItemValue::DateTime(date(t))),
            set("B", ItemValue::DateTimeList(vec![date(t), date(t)])),
            set("C", ItemValue::RichText("# Title".into())),
            set("D", ItemValue::Text("plain".into())),
            set("E", ItemValue::Number(1.0)),
            set("F", ItemValue::TextList(vec![])),
            set("G", ItemValue::NumberList(vec![])),
        ];
        assert_eq!(updates.unwrap(), expected);
    }

    #[test]
    fn null_removes_and_system_keys_are_skipped() {
        let updates = parse(json!({ "Old": null, "$seq": 4, "$unid": "x", "$Anything": true }));
        assert_eq!(updates.unwrap(), [ItemUpdate::Remove("Old".into())]);
    }

    #[test]
    fn access_items_are_read_like_other_items() {
        let updates = parse(json!({
            "$Readers": ["alice", "[Sales]"],
            "$authors": "bob",
            "$Bogus": ["x"],
            "$seq": 2,
        }));
        let expected = [
            set(
                "$Readers",
                ItemValue::TextList(vec!["alice".into(), "[Sales]".into()]),
            ),
            set("$Authors", ItemValue::Text("bob".into())),
        ];
        assert_eq!(
            updates.unwrap(),
            expected,
            "canonical names; $Bogus skipped"
        );
        let removed = parse(json!({ "$READERS": null })).unwrap();
        assert_eq!(removed, [ItemUpdate::Remove("$Readers".into())]);
        for v in [
            json!(1),
            json!([1, 2]),
            json!({ "$type": "richtext", "v": "a" }),
        ] {
            let err = parse(json!({ "$Readers": v })).unwrap_err();
            assert!(
                matches!(&err, JsonError::Invalid(CodecError::NotNames { item }) if item == "$Readers"),
                "{err}"
            );
        }
        let dup = parse(json!({ "$Readers": "a", "$readers": "b" })).unwrap_err();
        assert!(
            matches!(dup, JsonError::Invalid(CodecError::Duplicate(_))),
            "{dup}"
        );
    }

    #[test]
    fn access_items_round_trip_through_json_text() {
        let mut n = sample_note();
        n.remove_item("File");
        n.set_item(Item {
            name: "$Readers".into(),
            value: ItemValue::TextList(vec!["alice".into(), "[Sales]".into(), "*".into()]),
        });
        n.set_item(Item {
            name: "$Authors".into(),
            value: ItemValue::Text("bob".into()),
        });
        let v = note_to_json(&n);
        assert_eq!(v["$Readers"], json!(["alice", "[Sales]", "*"]));
        assert_eq!(v["$Authors"], json!("bob"));
        let updates = items_from_json(&serde_json::from_str(&v.to_string()).unwrap()).unwrap();
        assert_eq!(sorted_sets(updates), sorted(n.items));
    }

    #[test]
    fn top_level_must_be_an_object() {
        for v in [json!([]), json!("x"), json!(null), json!(1)] {
            assert!(matches!(parse(v), Err(JsonError::NotObject)));
        }
    }

    #[test]
    fn unsupported_values_are_refused_naming_the_item() {
        assert!(bad_value(json!(true)).contains("true and false"));
        assert!(bad_value(json!({ "a": 1 })).contains("typed values"));
        assert!(bad_value(json!({ "$type": 5, "v": 1 })).contains("typed values"));
        assert!(bad_value(json!({ "$type": "blob", "v": 1 })).contains(r#"unknown $type "blob""#));
        assert!(bad_value(json!({ "$type": "text" })).contains(r#"exactly the keys"#));
        let extra = json!({ "$type": "text", "v": "a", "w": 1 });
        assert!(bad_value(extra).contains(r#"exactly the keys"#));
        assert!(bad_value(json!({ "$type": "text", "v": 1 })).contains("expected text"));
        assert!(bad_value(json!({ "$type": "number", "v": "1" })).contains("expected a number"));
        assert!(bad_value(json!({ "$type": "text-list", "v": "a" })).contains("expected an array"));
    }

    #[test]
    fn mixed_arrays_are_refused() {
        let mixed = "only text or only numbers";
        assert!(bad_value(json!([1, "a"])).contains(mixed));
        assert!(bad_value(json!(["a", 1])).contains(mixed));
        assert!(bad_value(json!([true])).contains(mixed));
        assert!(bad_value(json!([null])).contains(mixed));
        assert!(bad_value(json!([["a"]])).contains(mixed));
        assert!(bad_value(json!({ "$type": "number-list", "v": ["1"] })).contains(mixed));
    }

    #[test]
    fn bad_dates_are_refused() {
        let v = json!({ "$type": "datetime", "v": "21/11/2026" });
        assert!(bad_value(v).contains(r#""21/11/2026" is not an RFC 3339 date"#));
        let v = json!({ "$type": "datetime-list", "v": ["2026-11-21T10:00:00Z", 5] });
        assert!(bad_value(v).contains("expected an RFC 3339 date string"));
        let before_year_0 = json!({ "$type": "datetime", "v": "0000-01-01T00:00:00+01:00" });
        let err = parse(json!({ "D": before_year_0 })).unwrap_err();
        assert!(
            matches!(err, JsonError::Invalid(CodecError::DateOutOfRange { item }) if item == "D")
        );
    }

    #[test]
    fn attachments_are_not_accepted_as_input() {
        let v = json!({ "$type": "attachment", "name": "a", "mime": "b", "size": 1 });
        assert_eq!(bad_value(v), "attachments are added with `attach put`");
    }

    #[test]
    fn item_rules_apply_to_json_keys() {
        let dup = parse(json!({ "Body": "a", "BODY": null })).unwrap_err();
        assert!(matches!(dup, JsonError::Invalid(CodecError::Duplicate(_))));
        for name in ["", "a\nb", &"n".repeat(256)] {
            let err = parse(json!({ name: null })).unwrap_err();
            assert!(
                matches!(err, JsonError::Invalid(CodecError::BadName { .. })),
                "{name:?}"
            );
        }
        let big = "x".repeat(crate::MAX_VALUE_BYTES + 1);
        let err = parse(json!({ "Body": big })).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"item "Body" is 16777217 bytes; the limit is 16777216"#
        );
    }

    fn sample_note() -> Note {
        let attachment = AttachmentRef {
            name: "a.txt".into(),
            mime: "text/plain".into(),
            size: 5,
            crc32c: 1,
            blob_id: 2,
            extents: vec![(3, 1)],
            stored: None,
        };
        let item = |name: &str, value| Item {
            name: name.into(),
            value,
        };
        Note {
            note_id: NoteId(7),
            oid: OriginatorId {
                unid: Unid([0xAB; 16]),
                seq_num: 3,
                seq_time: date("2026-11-21T10:00:00Z"),
            },
            created: date("2026-01-01T00:00:00Z"),
            modified: date("2026-11-21T10:00:00.5Z"),
            added: Timestamp(0),
            change_seq: Seq(u64::MAX),
            deleted: false,
            items: vec![
                item("Subject", ItemValue::Text("Hi".into())),
                item("Tags", ItemValue::TextList(vec!["a".into()])),
                item("Price", ItemValue::Number(3.0)),
                item("Sizes", ItemValue::NumberList(vec![1.5])),
                item("None", ItemValue::NumberList(vec![])),
                item("Due", ItemValue::DateTime(date("2026-12-01T00:00:00Z"))),
                item("Dates", ItemValue::DateTimeList(vec![Timestamp(0)])),
                item("Body", ItemValue::RichText("# T".into())),
                item("File", ItemValue::Attachment(attachment)),
            ],
        }
    }

    #[test]
    fn note_to_json_writes_system_fields_and_items() {
        let expected = json!({
            "$unid": "AB".repeat(16),
            "$noteid": 7,
            "$seq": 3,
            "$seqtime": "2026-11-21T10:00:00.000000Z",
            "$created": "2026-01-01T00:00:00.000000Z",
            "$modified": "2026-11-21T10:00:00.500000Z",
            "$changeseq": u64::MAX,
            "Subject": "Hi",
            "Tags": ["a"],
            "Price": 3.0,
            "Sizes": [1.5],
            "None": { "$type": "number-list", "v": [] },
            "Due": { "$type": "datetime", "v": "2026-12-01T00:00:00.000000Z" },
            "Dates": { "$type": "datetime-list", "v": ["1970-01-01T00:00:00.000000Z"] },
            "Body": { "$type": "richtext", "v": "# T" },
            "File": { "$type": "attachment", "name": "a.txt", "mime": "text/plain", "size": 5 },
        });
        assert_eq!(note_to_json(&sample_note()), expected);
    }

    #[test]
    fn non_finite_numbers_show_as_null() {
        let mut n = sample_note();
        n.items = vec![Item {
            name: "N".into(),
            value: ItemValue::Number(f64::NAN),
        }];
        assert_eq!(note_to_json(&n)["N"], Value::Null);
    }

    #[test]
    fn json_text_round_trips_items() {
        let mut n = sample_note();
        n.remove_item("File");
        let text = note_to_json(&n).to_string();
        let updates = items_from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(sorted_sets(updates), sorted(n.items));
    }

    fn sorted_sets(updates: Vec<ItemUpdate>) -> Vec<Item> {
        let set = |u| match u {
            ItemUpdate::Set(item) => item,
            ItemUpdate::Remove(name) => panic!("unexpected removal of {name:?}"),
        };
        sorted(updates.into_iter().map(set).collect())
    }

    fn sorted(mut items: Vec<Item>) -> Vec<Item> {
        items.sort_by(|a, b| a.name.cmp(&b.name));
        items
    }

    proptest! {
        #[test]
        fn json_round_trips_items(n in arb_note(false)) {
            let updates = items_from_json(&note_to_json(&n)).unwrap();
            prop_assert_eq!(sorted_sets(updates), sorted(n.items));
        }
    }
}
