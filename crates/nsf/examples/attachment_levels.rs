//! Measures what `attachment_compression_level` costs at write time and
//! saves in stored bytes, so its default is chosen by measurement
//! (docs/benchmarks.md "replication").
//!
//! For each level (1, 3, 9, 15, 19) an engine on a temporary directory
//! of the real file system stores attachments of 1 MiB of prose-like text
//! (words drawn from a vocabulary of a few hundred, skewed towards common
//! ones, as the replication corpus's text attachments are), each different
//! so none is a dedup hit, through `put_attachment` — the whole write
//! path: the trial on the first chunk, zstd at the level, the temporary
//! file, its fsync and publication (I37). Reported per level: MB/s of
//! original bytes stored and the stored size against the original.
//!
//! Run: `cargo run --release -p nsf --example attachment_levels`

use nsf::{CompressionLevel, Engine, EngineConfig, Item, ItemValue};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Attachment size.
const SIZE: usize = 1 << 20;
/// Minimum time spent storing at each level (at least 3 attachments).
const MEASURE: Duration = Duration::from_secs(2);

fn main() {
    let mut rng = StdRng::seed_from_u64(0xF011_0019);
    let words = vocabulary(&mut rng);
    println!("level  MB/s stored  stored / original  attachments");
    for level in [1, 3, 9, 15, 19] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut cfg = EngineConfig::new(dir.path());
        cfg.background = false;
        cfg.attachment_compression_level = CompressionLevel::new(level).expect("1 to 19");
        let (engine, _) =
            Engine::open(Arc::new(storage::backend::FsBackend), cfg).expect("engine opens");
        let db = engine.create_database("levels.fdb", "Levels").expect("db");
        let (mut stored, mut original, mut n) = (0u64, 0u64, 0u32);
        let mut spent = Duration::ZERO;
        while spent < MEASURE || n < 3 {
            let body = prose(&mut rng, &words, SIZE);
            let unid = db
                .create(vec![Item {
                    name: "Subject".into(),
                    value: ItemValue::Text(format!("attachment {n}")),
                }])
                .expect("document")
                .unid;
            let t = Instant::now();
            let r = db
                .put_attachment(unid, "mail.txt", "text/plain", &mut &body[..])
                .expect("stored");
            spent += t.elapsed();
            stored += r.stored.map_or(body.len() as u64, |s| s.stored_size);
            original += body.len() as u64;
            n += 1;
        }
        println!(
            "{level:>5}  {:>11.1}  {:>17.3}  {n:>11}",
            original as f64 / 1e6 / spent.as_secs_f64(),
            stored as f64 / original as f64,
        );
        drop(db);
        engine.shutdown().expect("shutdown");
    }
}

/// A few hundred pseudo-words of 2–10 letters.
fn vocabulary(rng: &mut StdRng) -> Vec<String> {
    const SYLLABLES: [&str; 24] = [
        "ka", "re", "mo", "ti", "lan", "ser", "ver", "po", "da", "ne", "qu", "st", "or", "ing",
        "al", "be", "con", "ex", "pre", "tion", "ma", "il", "ro", "du",
    ];
    (0..400)
        .map(|_| {
            let n = rng.gen_range(1..=4);
            (0..n)
                .map(|_| SYLLABLES[rng.gen_range(0..SYLLABLES.len())])
                .collect()
        })
        .collect()
}

/// `len` bytes of words and line breaks, common words likelier.
fn prose(rng: &mut StdRng, words: &[String], len: usize) -> Vec<u8> {
    let mut s = String::with_capacity(len + 16);
    let mut col = 0;
    while s.len() < len {
        let skew: f64 = rng.gen::<f64>().powi(3);
        let w = &words[((skew * words.len() as f64) as usize).min(words.len() - 1)];
        s.push_str(w);
        col += w.len() + 1;
        if col > 72 {
            s.push('\n');
            col = 0;
        } else {
            s.push(' ');
        }
    }
    s.truncate(len);
    s.into_bytes()
}
