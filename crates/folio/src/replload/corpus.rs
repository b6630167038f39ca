//! The replication corpus (WORKLOADS.md "replication"): mail messages of
//! varied size, some carrying an attachment of 50 KiB–10 MiB, half the
//! attachment bytes text-like (compressible) and half random (not), all
//! drawn from a seed, so every variant and link replicates the same
//! bytes.
//!
//! Sizes are drawn log-uniform (many small, few large, as mail is), then
//! scaled together so the corpus totals the size asked for
//! (`--corpus-mb`, 20 MB by default); a smaller corpus is the same mix
//! at a smaller scale. Text is words from a seeded vocabulary of a few
//! hundred, picked with a skew towards common ones, so that it
//! compresses about as much as prose (zstd ≈ 3×), not as much as a
//! repeated phrase.
//!
//! The corpus's own best-compressed size (zstd at level 19 over every
//! document's bytes in one stream) is the floor bytes on the wire are
//! compared against; [`parts`] splits it by kind of content, beside what
//! compressing each item alone gives (as a store or a frame does).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One in this many documents carries an attachment.
const ATTACH_EVERY: usize = 7;
/// Body sizes before scaling, in bytes.
const BODY: (f64, f64) = (1024.0, 20.0 * 1024.0);
/// Attachment sizes before scaling, in bytes.
const ATTACHMENT: (f64, f64) = (50.0 * 1024.0, 10.0 * 1024.0 * 1024.0);
/// Share of the corpus in bodies (the rest is attachments).
const BODY_SHARE: f64 = 0.1;

/// A document of the corpus.
#[derive(Clone, Debug)]
pub struct Doc {
    /// Its items as the JSON a `CreateDocument` takes.
    pub json: String,
    pub attachment: Option<Attachment>,
}

/// An attachment of a document.
#[derive(Clone, Debug)]
pub struct Attachment {
    pub name: String,
    pub mime: &'static str,
    pub bytes: Vec<u8>,
    /// Text-like (compressible) rather than random.
    pub text: bool,
}

impl Doc {
    /// Bytes this document holds: its JSON and its attachment.
    pub fn bytes(&self) -> u64 {
        (self.json.len() + self.attachment.as_ref().map_or(0, |a| a.bytes.len())) as u64
    }
}

/// `docs` documents of about `total` bytes in all, drawn from `seed`.
pub fn generate(seed: u64, docs: usize, total: u64) -> Vec<Doc> {
    let mut rng = StdRng::seed_from_u64(seed);
    let words = vocabulary(&mut rng);
    let bodies: Vec<f64> = (0..docs).map(|_| log_uniform(&mut rng, BODY)).collect();
    let attached = (0..docs).filter(|i| i % ATTACH_EVERY == 0).count();
    let sizes: Vec<f64> = (0..attached)
        .map(|_| log_uniform(&mut rng, ATTACHMENT))
        .collect();
    let body_scale = scale(&bodies, total as f64 * BODY_SHARE);
    let attach_scale = scale(&sizes, total as f64 * (1.0 - BODY_SHARE));
    let mut sizes = sizes.into_iter();
    let (mut text_bytes, mut random_bytes) = (0usize, 0usize);
    (0..docs)
        .map(|i| {
            let body_len = ((bodies[i] * body_scale) as usize).max(64);
            let body = text(&mut rng, &words, body_len);
            let subject = text(&mut rng, &words, 40);
            let json = serde_json::json!({
                "Form": "Memo",
                "Subject": subject.trim(),
                "From": format!("user{:03}", i % 37),
                "SendTo": format!("user{:03}", (i * 7) % 37),
                "Body": body,
            })
            .to_string();
            let attachment = (i % ATTACH_EVERY == 0).then(|| {
                let len = sizes.next().map_or(0.0, |s| s * attach_scale).max(1.0) as usize;
                // Balance bytes, not counts, between the two kinds.
                let is_text = text_bytes <= random_bytes;
                let bytes = if is_text {
                    text_bytes += len;
                    text(&mut rng, &words, len).into_bytes()
                } else {
                    random_bytes += len;
                    let mut b = vec![0u8; len];
                    rng.fill(&mut b[..]);
                    b
                };
                Attachment {
                    name: format!("file{i:04}.{}", if is_text { "txt" } else { "bin" }),
                    mime: if is_text {
                        "text/plain"
                    } else {
                        "application/octet-stream"
                    },
                    bytes,
                    text: is_text,
                }
            });
            Doc { json, attachment }
        })
        .collect()
}

/// Every byte of `docs` compressed as one zstd stream at level 19: the
/// corpus's best-compressed size.
pub fn best_compressed(docs: &[Doc]) -> Result<u64, String> {
    let mut all = Vec::new();
    for d in docs {
        all.extend_from_slice(d.json.as_bytes());
        if let Some(a) = &d.attachment {
            all.extend_from_slice(&a.bytes);
        }
    }
    zstd::bulk::compress(&all, 19)
        .map(|c| c.len() as u64)
        .map_err(|e| format!("zstd: {e}"))
}

/// Per part of `docs` (bodies, text attachments, random attachments):
/// its items and bytes, zstd level 19 over the part as one stream, and
/// the sums of zstd levels 19 and 3 over each item alone.
pub fn parts(docs: &[Doc]) -> Result<serde_json::Value, String> {
    let bodies: Vec<&[u8]> = docs.iter().map(|d| d.json.as_bytes()).collect();
    let attached = |text: bool| -> Vec<&[u8]> {
        docs.iter()
            .filter_map(|d| d.attachment.as_ref())
            .filter(|a| a.text == text)
            .map(|a| &a.bytes[..])
            .collect()
    };
    let mut out = serde_json::Map::new();
    for (name, items) in [
        ("bodies", bodies),
        ("text attachments", attached(true)),
        ("random attachments", attached(false)),
    ] {
        let z = |b: &[u8], level| {
            zstd::bulk::compress(b, level)
                .map(|c| c.len() as u64)
                .map_err(|e| format!("zstd: {e}"))
        };
        let each = |level| items.iter().map(|b| z(b, level)).sum::<Result<u64, _>>();
        out.insert(
            name.into(),
            serde_json::json!({
                "items": items.len(),
                "bytes": items.iter().map(|b| b.len() as u64).sum::<u64>(),
                "zstd19_one_stream": z(&items.concat(), 19)?,
                "zstd19_each": each(19)?,
                "zstd3_each": each(3)?,
            }),
        );
    }
    Ok(serde_json::Value::Object(out))
}

fn log_uniform(rng: &mut StdRng, (lo, hi): (f64, f64)) -> f64 {
    (lo.ln() + rng.gen::<f64>() * (hi.ln() - lo.ln())).exp()
}

/// The factor that makes `sizes` sum to `target`.
fn scale(sizes: &[f64], target: f64) -> f64 {
    let sum: f64 = sizes.iter().sum();
    if sum > 0.0 {
        target / sum
    } else {
        0.0
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

/// About `len` bytes of words and line breaks, common words likelier.
fn text(rng: &mut StdRng, words: &[String], len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    let mut col = 0;
    while s.len() < len {
        let skew: f64 = rng.gen::<f64>().powi(3);
        let w = &words[((skew * words.len() as f64) as usize).min(words.len() - 1)];
        if rng.gen_ratio(1, 40) {
            s.push_str(&rng.gen_range(0..100_000).to_string());
        } else {
            s.push_str(w);
        }
        col += w.len() + 1;
        if col > 72 {
            s.push('\n');
            col = 0;
        } else {
            s.push(' ');
        }
    }
    s.truncate(len);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_is_seeded_sized_and_half_incompressible() {
        let a = generate(7, 200, 4_000_000);
        let b = generate(7, 200, 4_000_000);
        assert_eq!(a.len(), 200);
        assert!(a.iter().zip(&b).all(|(x, y)| x.json == y.json
            && x.attachment.as_ref().map(|a| &a.bytes) == y.attachment.as_ref().map(|a| &a.bytes)));
        let total: u64 = a.iter().map(Doc::bytes).sum();
        assert!((3_600_000..4_600_000).contains(&total), "{total}");
        let (text, random): (Vec<_>, Vec<_>) = a
            .iter()
            .filter_map(|d| d.attachment.as_ref())
            .partition(|a| a.text);
        let bytes = |v: &[&Attachment]| v.iter().map(|a| a.bytes.len() as f64).sum::<f64>();
        let share = bytes(&text) / (bytes(&text) + bytes(&random));
        assert!((0.3..0.7).contains(&share), "text share {share}");
        let best = best_compressed(&a).unwrap();
        assert!(
            best < total * 8 / 10 && best > total / 3,
            "{best} of {total}"
        );
    }
}
