//! Measures network compression on realistic frame bodies, so the
//! server's default method is chosen by measurement (docs/protocol.md).
//!
//! Payloads, all generated from a fixed seed:
//! * documents: mail-like JSON documents of 1–4 KiB, one per frame (what
//!   reads, writes and search hits carry), and pages of 50 of them in one
//!   body (what `ModifiedSince` answers carry);
//! * text attachments: 1 MiB chunks of prose-like text;
//! * random attachments: 1 MiB chunks of random bytes (stand-ins for
//!   JPEG, ZIP and PDF content, which is already compressed).
//!
//! Each body goes through `BodyCodec` exactly as a connection sends it
//! (threshold 512 bytes, left uncompressed when compressing does not
//! shrink it). Reported: the share of bodies sent compressed, wire bytes
//! over original bytes, compression and decompression speed in MB/s of
//! original data, the CPU cost per body, and the original bytes per
//! second a pipelined stream moves over four links (the slowest of
//! compressing, sending the wire bytes and decompressing), which is what
//! decides the default.
//!
//! Run: `cargo run --release -p protocol --example compression`

use protocol::{BodyCodec, Compression, DEFAULT_COMPRESSION_THRESHOLD, STRONG_LEVEL};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// Minimum time spent measuring each direction of each cell.
const MEASURE: Duration = Duration::from_millis(400);

fn main() {
    let mut rng = StdRng::seed_from_u64(0xF011_0001);
    let words = vocabulary(&mut rng, 4000);
    let docs: Vec<Vec<u8>> = (0..2000).map(|i| document(&mut rng, &words, i)).collect();
    let pages: Vec<Vec<u8>> = docs.chunks(50).map(page).collect();
    let text: Vec<Vec<u8>> = (0..8).map(|_| prose(&mut rng, &words, 1 << 20)).collect();
    let random: Vec<Vec<u8>> = (0..8)
        .map(|_| (0..1 << 20).map(|_| rng.gen::<u8>()).collect())
        .collect();
    let avg_doc = docs.iter().map(Vec::len).sum::<usize>() / docs.len();
    println!(
        "payloads: {} documents (average {} bytes), {} pages of 50, {} x 1 MiB text, {} x 1 MiB random",
        docs.len(),
        avg_doc,
        pages.len(),
        text.len(),
        random.len()
    );
    println!();
    println!("| payload | method | compressed bodies | wire/original | compress MB/s | decompress MB/s | CPU per body | 1 Gbit/s | 100 Mbit/s | 10 Mbit/s | 56 kbit/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, set) in [
        ("document (1-4 KiB)", &docs),
        ("page of 50 documents", &pages),
        ("1 MiB text chunk", &text),
        ("1 MiB random chunk", &random),
    ] {
        for method in Compression::ALL {
            let m = measure(method, set);
            println!(
                "| {name} | {method} | {:.0}% | {:.3} | {} | {} | {} | {} | {} | {} | {} |",
                m.compressed * 100.0,
                m.ratio,
                speed(m.compress_mbs),
                speed(m.decompress_mbs),
                micros(m.cpu_seconds_per_body),
                rate(m.effective(125e6)),
                rate(m.effective(12.5e6)),
                rate(m.effective(1.25e6)),
                rate(m.effective(7e3)),
            );
        }
    }
    println!();
    println!("MB/s are of original data; CPU per body is compress + decompress of one body;");
    println!("link columns: original bytes per second a pipelined stream moves over that link,");
    println!("the slowest of compression, the link (at the wire ratio) and decompression.");
    println!();
    println!("zstd level for `strong` (this build uses level {STRONG_LEVEL}):");
    println!();
    println!("| payload | zstd level | wire/original | compress MB/s | decompress MB/s |");
    println!("|---|---|---|---|---|");
    for (name, set) in [("document (1-4 KiB)", &docs), ("1 MiB text chunk", &text)] {
        for level in [1, 3, 6, 9] {
            let (ratio, c, d) = zstd_level(level, set);
            println!("| {name} | {level} | {ratio:.3} | {c:.0} | {d:.0} |");
        }
    }
}

/// Ratio and speeds of raw zstd at `level`, contexts reused as a
/// connection reuses them.
fn zstd_level(level: i32, set: &[Vec<u8>]) -> (f64, f64, f64) {
    let mut c = zstd::bulk::Compressor::new(level).expect("zstd context");
    let mut d = zstd::bulk::Decompressor::new().expect("zstd context");
    let z: Vec<Vec<u8>> = set
        .iter()
        .map(|b| c.compress(b).expect("compresses"))
        .collect();
    let original: usize = set.iter().map(Vec::len).sum();
    let wire: usize = z.iter().map(Vec::len).sum();
    let cs = timed(|| {
        for b in set {
            std::hint::black_box(c.compress(b).ok());
        }
    });
    let ds = timed(|| {
        for (z, b) in z.iter().zip(set) {
            std::hint::black_box(d.decompress(z, b.len()).ok());
        }
    });
    let mb = original as f64 / 1e6;
    (wire as f64 / original as f64, mb / cs, mb / ds)
}

/// What one method did to one payload set.
struct Measured {
    /// Share of bodies sent compressed.
    compressed: f64,
    /// Wire bytes (prefix included when compressed) over original bytes.
    ratio: f64,
    /// Original megabytes (10^6) per second of compression.
    compress_mbs: f64,
    /// Original megabytes per second of decompression (infinite when
    /// nothing was compressed).
    decompress_mbs: f64,
    /// Compression plus decompression time of one body, on average.
    cpu_seconds_per_body: f64,
}

impl Measured {
    /// Original bytes per second through compression, a link of `link`
    /// bytes per second and decompression working in a pipeline.
    fn effective(&self, link: f64) -> f64 {
        (self.compress_mbs * 1e6)
            .min(link / self.ratio)
            .min(self.decompress_mbs * 1e6)
    }
}

fn measure(method: Compression, set: &[Vec<u8>]) -> Measured {
    let mut codec = BodyCodec::new(method, DEFAULT_COMPRESSION_THRESHOLD);
    let original: usize = set.iter().map(Vec::len).sum();
    let wire: Vec<Option<Vec<u8>>> = set.iter().map(|b| codec.compress(b)).collect();
    let wire_bytes: usize = wire
        .iter()
        .zip(set)
        .map(|(z, b)| z.as_ref().map_or(b.len(), Vec::len))
        .sum();
    let compressed = wire.iter().filter(|z| z.is_some()).count();
    // Every compressed body must come back intact.
    for (z, b) in wire.iter().zip(set) {
        if let Some(z) = z {
            assert_eq!(&codec.decompress(z, b.len()).expect("decompresses"), b);
        }
    }
    if method == Compression::Off {
        return Measured {
            compressed: 0.0,
            ratio: 1.0,
            compress_mbs: f64::INFINITY,
            decompress_mbs: f64::INFINITY,
            cpu_seconds_per_body: 0.0,
        };
    }
    let compress_s = timed(|| {
        for b in set {
            std::hint::black_box(codec.compress(b));
        }
    });
    let decompress_s = if compressed == 0 {
        0.0
    } else {
        timed(|| {
            for (z, b) in wire.iter().zip(set) {
                if let Some(z) = z {
                    std::hint::black_box(codec.decompress(z, b.len()).ok());
                }
            }
        })
    };
    let mb = original as f64 / 1e6;
    Measured {
        compressed: compressed as f64 / set.len() as f64,
        ratio: wire_bytes as f64 / original as f64,
        compress_mbs: mb / compress_s,
        decompress_mbs: mb / decompress_s,
        cpu_seconds_per_body: (compress_s + decompress_s) / set.len() as f64,
    }
}

/// Seconds per run of `f`, repeated for at least [`MEASURE`].
fn timed(mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    let mut runs = 0u32;
    while start.elapsed() < MEASURE {
        f();
        runs += 1;
    }
    start.elapsed().as_secs_f64() / f64::from(runs)
}

fn speed(mbs: f64) -> String {
    if mbs.is_finite() {
        format!("{mbs:.0}")
    } else {
        "-".into()
    }
}

fn micros(s: f64) -> String {
    format!("{:.1} µs", s * 1e6)
}

fn rate(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e6 {
        format!("{:.1} MB/s", bytes_per_s / 1e6)
    } else {
        format!("{:.1} kB/s", bytes_per_s / 1e3)
    }
}

/// Pseudo-words with a realistic length spread; picked Zipf-like below.
fn vocabulary(rng: &mut StdRng, n: usize) -> Vec<String> {
    const LETTERS: &[u8] = b"etaoinshrdlcumwfgypbvkjxqz";
    (0..n)
        .map(|_| {
            let len = 2 + rng.gen_range(0..4) + rng.gen_range(0..5);
            (0..len)
                .map(|_| {
                    // Skewed toward frequent letters, as in English.
                    let i = (rng.gen::<f64>().powi(2) * LETTERS.len() as f64) as usize;
                    char::from(LETTERS[i])
                })
                .collect()
        })
        .collect()
}

/// A word, rank chosen with a Zipf-like (1/rank) distribution.
fn word<'w>(rng: &mut StdRng, words: &'w [String]) -> &'w str {
    let n = words.len() as f64;
    let rank = (n.powf(rng.gen::<f64>()) - 1.0) as usize;
    &words[rank.min(words.len() - 1)]
}

fn sentence(rng: &mut StdRng, words: &[String]) -> String {
    let n = rng.gen_range(6..20);
    let mut s: Vec<&str> = (0..n).map(|_| word(rng, words)).collect();
    let first = s[0].to_string();
    let mut capital = first[..1].to_uppercase();
    capital.push_str(&first[1..]);
    s[0] = &capital;
    format!("{}. ", s.join(" "))
}

fn prose(rng: &mut StdRng, words: &[String], size: usize) -> Vec<u8> {
    let mut out = String::with_capacity(size + 200);
    while out.len() < size {
        for _ in 0..rng.gen_range(2..7) {
            out.push_str(&sentence(rng, words));
        }
        out.push_str("\n\n");
    }
    out.truncate(size);
    out.into_bytes()
}

/// A mail memo in the JSON mapping of `nsf::json`, 1–4 KiB.
fn document(rng: &mut StdRng, words: &[String], i: usize) -> Vec<u8> {
    const PEOPLE: [&str; 8] = [
        "Alice Martin",
        "Bob Chen",
        "Carol Diaz",
        "Dan Okafor",
        "Eve Larsen",
        "Frank Ito",
        "Grace Novak",
        "Hugo Silva",
    ];
    let target: usize = rng.gen_range(1024..4096);
    let person = |rng: &mut StdRng| format!("CN={}/O=Acme", PEOPLE[rng.gen_range(0..8)]);
    let to: Vec<String> = (0..rng.gen_range(1..5)).map(|_| person(rng)).collect();
    let subject: String = (0..rng.gen_range(3..8))
        .map(|_| word(rng, words))
        .collect::<Vec<_>>()
        .join(" ");
    let mut doc = serde_json::json!({
        "$unid": format!("{:032X}", rng.gen::<u128>()),
        "$seq": rng.gen_range(1..5),
        "Form": "Memo",
        "From": person(rng),
        "SendTo": to,
        "Subject": subject,
        "PostedDate": {"$type": "datetime", "v": format!("2026-{:02}-{:02}T{:02}:{:02}:00.000000Z",
            rng.gen_range(1..13), rng.gen_range(1..29), rng.gen_range(0..24), rng.gen_range(0..60))},
        "Importance": rng.gen_range(1..4),
        "Categories": ["Projects", "Q3"],
        "ThreadIndex": i,
        "Body": "",
    });
    let base = serde_json::to_vec(&doc).expect("serializes").len();
    let body = prose(rng, words, target.saturating_sub(base).max(50));
    doc["Body"] = serde_json::Value::String(String::from_utf8(body).expect("ASCII prose"));
    serde_json::to_vec(&doc).expect("serializes")
}

/// Documents as one `ModifiedSince`-style body: a JSON array.
fn page(docs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"[".to_vec();
    for (i, d) in docs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(d);
    }
    out.push(b']');
    out
}
