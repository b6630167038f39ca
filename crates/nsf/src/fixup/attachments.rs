//! Phase 3, verify attachments: read every attachment's content as a
//! reader would (each blob page's checksum, blob id and index, or the
//! store object's header and stored bytes, then the whole content's
//! crc32c). An attachment that fails is dropped from its
//! note, which is kept; the note is marked changed so the rebuild writes
//! it afresh with a new change sequence (views and replication see it).

use super::report::LostAttachment;
use super::salvage::Kept;
use crate::attach::AttachmentReader;
use crate::store::{AttachStore, ObjectReader};
use crate::{ItemValue, NoteId};
use std::collections::BTreeMap;
use std::sync::Arc;
use storage::{FileHandle, PageId};

/// Returns how many attachments were checked, those dropped, and the
/// pages of the dropped ones (free in the rebuilt file).
pub(crate) fn verify(
    (handle, store): (&Arc<dyn FileHandle>, &AttachStore),
    name: &str,
    notes: &mut BTreeMap<NoteId, Kept>,
) -> (u64, Vec<LostAttachment>, Vec<PageId>) {
    let mut checked = 0;
    let mut lost = Vec::new();
    let mut released = Vec::new();
    for kept in notes.values_mut() {
        let note = &mut kept.note;
        let mut bad = Vec::new();
        for a in note.attachments() {
            checked += 1;
            let read = match a.stored {
                None => {
                    let mut reader = AttachmentReader::from_pages(
                        Arc::new(()),
                        handle.clone(),
                        name.to_string(),
                        a.clone(),
                    );
                    std::io::copy(&mut reader, &mut std::io::sink())
                }
                Some(content) => {
                    let what = format!("{name}: attachment {:?}", a.name);
                    ObjectReader::open(store, &content, (a.size, a.crc32c), what)
                        .and_then(|mut r| std::io::copy(&mut r, &mut std::io::sink()))
                }
            };
            if let Err(e) = read {
                bad.push((a.name.clone(), e.to_string()));
            }
        }
        if bad.is_empty() {
            continue;
        }
        note.items.retain(|i| match &i.value {
            ItemValue::Attachment(a) if bad.iter().any(|(n, _)| *n == a.name) => {
                for (first, count) in &a.extents {
                    released.extend((0..*count).map(|i| PageId(first.saturating_add(i))));
                }
                false
            }
            _ => true,
        });
        kept.changed = true;
        for (name, reason) in bad {
            lost.push(LostAttachment {
                note_id: note.note_id,
                unid: note.oid.unid,
                name,
                reason,
            });
        }
    }
    (checked, lost, released)
}
