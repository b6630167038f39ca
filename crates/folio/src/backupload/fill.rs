//! Databases of a given size for the benchmark: documents of
//! `doc_size`-byte bodies created by a few threads (so group commit
//! shares the fsyncs), in rounds of 64 MiB after each of which a
//! checkpoint and archiving let the archive-style log reuse its extents.

use nsf::{Engine, Item, ItemValue, Unid};
use std::sync::atomic::{AtomicU64, Ordering};

const ROUND: u64 = 64 << 20;
const THREADS: u64 = 8;

/// A body unique to document `i`.
pub fn body(i: u64, size: usize) -> String {
    let unit = format!("{i:012x}-");
    unit.repeat(size / unit.len() + 1)[..size].to_string()
}

pub fn doc(i: u64, size: usize) -> Vec<Item> {
    vec![Item {
        name: "Body".into(),
        value: ItemValue::Text(body(i, size)),
    }]
}

/// Creates documents spread over `paths` until `bytes` of bodies are in;
/// `next` numbers the documents across calls. Returns the last UNID.
pub fn fill(
    engine: &Engine,
    paths: &[String],
    bytes: u64,
    doc_size: usize,
    next: &AtomicU64,
) -> Result<Option<Unid>, String> {
    let per_doc = doc_size.max(1) as u64;
    let mut done = 0u64;
    let mut last = None;
    while done < bytes {
        let round = ROUND.min(bytes - done);
        let docs = round.div_ceil(per_doc);
        let results: Vec<Result<Option<Unid>, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    s.spawn(move || -> Result<Option<Unid>, String> {
                        let mut last = None;
                        for k in (t..docs).step_by(THREADS as usize) {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let path = &paths[(k as usize) % paths.len()];
                            let db = engine.open_database(path).map_err(|e| e.to_string())?;
                            let m = db.create(doc(i, doc_size)).map_err(|e| e.to_string())?;
                            last = Some(m.unid);
                        }
                        Ok(last)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a filler panicked".into())))
                .collect()
        });
        for r in results {
            last = r?.or(last);
        }
        done += round;
        engine.checkpoint().map_err(|e| e.to_string())?;
        engine.archive(None).map_err(|e| e.to_string())?;
    }
    Ok(last)
}
