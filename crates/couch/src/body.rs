//! A CouchDB document's fields as items, and a note's items as fields.
//!
//! CouchDB documents are any JSON; items are typed values (text, number,
//! lists, date-times, rich text). A field becomes an item when the item
//! reads back as the same JSON (nsf's JSON mapping, numbers compared as
//! numbers), so native clients, views and formulas see it as an item;
//! every other field — `true`, `null`, nested objects, mixed lists, a
//! name no item may have or one equal to another ignoring case — is kept,
//! as it came, in one `$Json` item (a JSON object). `$Readers` and
//! `$Authors` are the access items (in any case, as in nsf's mapping, so
//! a document meant to be restricted is never stored unrestricted because
//! of a key's spelling) and must be text or a list of text.
//!
//! Reading back gives the same JSON value for every field (key order
//! aside; an access key in its canonical spelling).

use crate::error::{CouchError, CouchResult};
use nsf::{Item, ItemUpdate, ItemValue, Note, COUCH_ITEMS};
use serde_json::{Map, Value};

/// The items that hold `fields` (a document without its `_` fields).
pub fn fields_to_items(fields: &Map<String, Value>) -> CouchResult<Vec<Item>> {
    let mut items: Vec<Item> = Vec::new();
    let mut rest = Map::new();
    for (key, value) in fields {
        if let Some(access) = access_name(key) {
            items.push(access_item(access, value)?);
            continue;
        }
        match as_item(key, value) {
            Some(item) if !items.iter().any(|i| i.name.eq_ignore_ascii_case(key)) => {
                items.push(item)
            }
            _ => {
                rest.insert(key.clone(), value.clone());
            }
        }
    }
    // Non-ASCII names that fold equal (nsf folds Unicode case) are caught
    // here: the later one moves to $Json.
    while let Err(nsf::CodecError::Duplicate(name)) = nsf::validate_items(&items) {
        let at = items.iter().rposition(|i| i.name == name).unwrap_or(0);
        let item = items.remove(at);
        rest.insert(item.name, fields.get(&name).cloned().unwrap_or(Value::Null));
    }
    if !rest.is_empty() {
        let text = serde_json::to_string(&Value::Object(rest))
            .map_err(|e| CouchError::internal(e.to_string()))?;
        items.push(Item {
            name: COUCH_ITEMS[3].into(),
            value: ItemValue::Text(text),
        });
    }
    nsf::validate_items(&items).map_err(|e| CouchError::invalid(e.to_string()))?;
    Ok(items)
}

/// The document's fields as JSON: every item but the system's (access
/// items included), and the fields kept in `$Json`.
pub fn doc_json(note: &Note) -> Map<String, Value> {
    let plain: Vec<Item> = note
        .items
        .iter()
        .filter(|i| !i.name.starts_with('$') || access_name(&i.name).is_some())
        .filter(|i| !matches!(i.value, ItemValue::Attachment(_)))
        .cloned()
        .collect();
    let mut out = match nsf::items_to_json(&plain) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    out.values_mut().for_each(whole_numbers);
    if let Some(Item {
        value: ItemValue::Text(json),
        ..
    }) = note.item(COUCH_ITEMS[3])
    {
        if let Ok(Value::Object(rest)) = serde_json::from_str::<Value>(json) {
            out.extend(rest);
        }
    }
    out
}

/// Writes whole numbers as integers (`2`, not `2.0`), as JavaScript and
/// CouchDB write them: an item holds a number as a double, and a client
/// that wrote `2` reads `2` back.
fn whole_numbers(v: &mut Value) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64().filter(|x| x.fract() == 0.0 && x.abs() < EXACT) {
                *v = Value::from(x as i64);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(whole_numbers),
        Value::Object(o) => o.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// The canonical name of an access item, if `key` names one.
fn access_name(key: &str) -> Option<&'static str> {
    [nsf::READERS_ITEM, nsf::AUTHORS_ITEM]
        .into_iter()
        .find(|a| a.eq_ignore_ascii_case(key))
}

fn access_item(name: &'static str, value: &Value) -> CouchResult<Item> {
    let value = match value {
        Value::String(s) => ItemValue::Text(s.clone()),
        Value::Array(a) if a.iter().all(Value::is_string) => ItemValue::TextList(
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        _ => {
            return Err(CouchError::invalid(format!(
                "{name} must be a string or a list of strings"
            )))
        }
    };
    Ok(Item {
        name: name.to_string(),
        value,
    })
}

/// The item for one field, if one reads back as the same JSON.
fn as_item(key: &str, value: &Value) -> Option<Item> {
    if key.starts_with('$') {
        return None;
    }
    let mut one = Map::new();
    one.insert(key.to_string(), value.clone());
    let updates = nsf::items_from_json(&Value::Object(one)).ok()?;
    let [ItemUpdate::Set(item)] = <[ItemUpdate; 1]>::try_from(updates).ok()? else {
        return None;
    };
    let back = nsf::items_to_json(std::slice::from_ref(&item));
    same_json(back.get(key)?, value).then_some(item)
}

/// JSON equality with numbers compared as numbers (`1` and `1.0` are one
/// number to JavaScript, and to an item).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64() && x.as_f64().is_some(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::{NoteId, OriginatorId, Seq, Timestamp, Unid};
    use serde_json::json;

    fn note(items: Vec<Item>) -> Note {
        Note {
            note_id: NoteId(1),
            oid: OriginatorId {
                unid: Unid([1; 16]),
                seq_num: 1,
                seq_time: Timestamp(1),
            },
            created: Timestamp(1),
            modified: Timestamp(1),
            added: Timestamp(1),
            change_seq: Seq(1),
            deleted: false,
            items,
        }
    }

    fn round_trip(doc: Value) -> Value {
        let items = fields_to_items(doc.as_object().unwrap()).unwrap();
        Value::Object(doc_json(&note(items)))
    }

    #[test]
    fn plain_fields_become_items() {
        let doc = json!({"title": "x", "n": 3, "tags": ["a", "b"], "xs": [1, 2.5]});
        let items = fields_to_items(doc.as_object().unwrap()).unwrap();
        assert_eq!(items.len(), 4);
        assert!(items.iter().all(|i| !i.name.starts_with('$')));
        assert!(same_json(&round_trip(doc.clone()), &doc));
    }

    #[test]
    fn everything_else_survives_in_json() {
        let doc = json!({
            "ok": true, "none": null, "nested": {"a": [1, {"b": false}]},
            "mixed": [1, "a"], "empty": {}, "$other": 1, "a": 1, "A": 2,
            "when": {"$type": "datetime", "v": "nonsense"}
        });
        let back = round_trip(doc.clone());
        assert!(same_json(&back, &doc), "{back}");
    }

    #[test]
    fn whole_numbers_read_back_as_integers() {
        let back = round_trip(json!({"n": 2, "xs": [1, 2.5], "big": 1e300}));
        assert_eq!(back, json!({"n": 2, "xs": [1, 2.5], "big": 1e300}));
    }

    #[test]
    fn access_fields_are_access_items() {
        let doc = json!({"$readers": ["alice"], "x": "y"});
        let items = fields_to_items(doc.as_object().unwrap()).unwrap();
        assert!(items.iter().any(|i| i.name == "$Readers"));
        let bad = json!({"$Readers": [1]});
        assert_eq!(
            fields_to_items(bad.as_object().unwrap()).unwrap_err().error,
            "doc_validation"
        );
    }
}
