//! The links scenario: for each compression variant and link, a fresh
//! copy of the corpus at the source, a new replica made over the link
//! (scenario 1), then documents added at the source and replicated
//! incrementally (scenario 2); each figure set beside the same run with
//! compression off, and beside the corpus's best-compressed size.
//!
//! Variants `off` and `network` share one source server that stores
//! attachments as they are (`attachment_compression = "off"`; only the
//! connection's compression differs); `attachment` runs its own with
//! `attachment_compression = "auto"` at `--attachment-level`, whose
//! compressed attachments travel as stored, or is reported unavailable
//! with the reason (`source.rs`). The network variants' connections use
//! `--network-compression` (zstd, or zstd at a level asked for).

use super::args::{ReplArgs, Variant};
use super::corpus::{self, Doc};
use super::link::{Link, Proxy};
use super::pull::{pull, Pulled, Via};
use super::source::{self, upload, Source};
use crate::progress::Progress;
use client::NetCompression;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;

/// The two scenarios, as the report names them.
pub const CREATE: &str = "create replica";
pub const INCREMENTAL: &str = "incremental";

/// Runs every variant over every link; the rows and the corpus figures.
pub fn run(a: &ReplArgs, server: Option<Source>, base: &Path) -> Result<Value, String> {
    let docs = corpus::generate(a.seed, a.docs, a.corpus_bytes());
    let added = corpus::generate(a.seed.wrapping_add(1), a.add, a.corpus_bytes() / 2);
    let corpus = json!({
        "documents": docs.len(),
        "bytes": bytes(&docs),
        "attachments": docs.iter().filter(|d| d.attachment.is_some()).count(),
        "best_compressed_bytes": corpus::best_compressed(&docs)?,
        "parts": corpus::parts(&docs)?,
        "added_documents": added.len(),
        "added_bytes": bytes(&added),
        "added_best_compressed_bytes": corpus::best_compressed(&added)?,
    });
    let progress = Progress::new("replication", (a.variant.len() * a.link.len() * 2) as u64);
    let remote = server.is_some();
    let plain = match server {
        Some(s) => s,
        None => Source::start(&base.join("source"), source::PLAIN_SETTING)?,
    };
    let attach = if !a.variant.contains(&Variant::Attachment) {
        Err(String::new())
    } else if remote {
        Err(
            "--server: the tool cannot set attachment compression on a server it did not start"
                .into(),
        )
    } else if let Some(why) = source::attachment_setting_refusal(a.attachment_level) {
        Err(format!("this build refuses the setting: {why}"))
    } else {
        Source::start(
            &base.join("source-attach"),
            &source::attachment_settings(a.attachment_level),
        )
    };
    let mut rows = Vec::new();
    for &variant in &a.variant {
        let src = match variant {
            Variant::Attachment => attach.as_ref().map_err(Clone::clone),
            _ => Ok(&plain),
        };
        for link in &a.link {
            match &src {
                Ok(src) => {
                    let compression = match variant {
                        Variant::Off => NetCompression::Off,
                        Variant::Network | Variant::Attachment => a.network_compression,
                    };
                    let r = one(
                        src,
                        (variant, compression),
                        link,
                        (&docs, &added),
                        base,
                        &progress,
                    )?;
                    rows.extend(r);
                }
                Err(why) => {
                    progress.line(&format!(
                        "{} over {}: unavailable: {why}",
                        variant.name(),
                        link.name
                    ));
                    progress.step("skipped");
                    progress.step("skipped");
                    for scenario in [CREATE, INCREMENTAL] {
                        rows.push(json!({
                            "scenario": scenario, "link": link.name, "variant": variant.name(),
                            "unavailable": why,
                        }));
                    }
                }
            }
        }
    }
    progress.finish();
    improvements(&mut rows);
    plain.stop()?;
    if let Ok(s) = attach {
        s.stop()?;
    }
    Ok(json!({ "corpus": corpus, "rows": rows }))
}

/// Both scenarios for one variant and link, on a fresh source database
/// and a fresh target.
fn one(
    src: &Source,
    (variant, compression): (Variant, NetCompression),
    link: &Link,
    (docs, added): (&[Doc], &[Doc]),
    base: &Path,
    progress: &Progress,
) -> Result<Vec<Value>, String> {
    let slug = format!("{}-{}", variant_slug(variant), link.name);
    let db = format!("replload/{slug}-{:08x}.fdb", rand::random::<u32>());
    let direct = src.connect(src.addr(), NetCompression::Auto)?;
    upload(&direct, &db, docs, true)?;
    let upstream: SocketAddr = src
        .addr()
        .parse()
        .map_err(|e| format!("source address {}: {e}", src.addr()))?;
    let proxy = Proxy::start(upstream, link.clone())?;
    let addr = proxy.addr.to_string();
    let via = || Via {
        addr: &addr,
        proxy: Some(&proxy),
    };
    let target = base.join(format!("target-{slug}"));
    progress.step(&format!("{slug}: {CREATE}"));
    let created = pull(src, via(), compression, &target, &db, true)?;
    upload(&direct, &db, added, false)?;
    progress.step(&format!("{slug}: {INCREMENTAL}"));
    let incremental = pull(src, via(), compression, &target, &db, false)?;
    direct.close();
    std::fs::remove_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    let rows: Vec<Value> = [(CREATE, &created), (INCREMENTAL, &incremental)]
        .into_iter()
        .map(|(scenario, p)| row(scenario, variant, link, p))
        .collect();
    for (scenario, p) in [(CREATE, &created), (INCREMENTAL, &incremental)] {
        progress.line(&format!(
            "{slug} {scenario}: {} documents, {:.1} s, {} bytes on the wire",
            p.documents,
            p.seconds,
            p.wire_bytes.unwrap_or(p.session_wire_bytes)
        ));
    }
    Ok(rows)
}

fn row(scenario: &str, variant: Variant, link: &Link, p: &Pulled) -> Value {
    let wire = p.wire_bytes.unwrap_or(p.session_wire_bytes);
    json!({
        "scenario": scenario,
        "link": link.name,
        "variant": variant.name(),
        "seconds": p.seconds,
        "wire_bytes": wire,
        // What the wire bytes take at the link's rate: the time floor.
        "link_seconds": link.bytes_per_s().map(|r| wire as f64 / r),
        "pull": p,
    })
}

/// Adds, to each measured row, its time and bytes saved against the
/// `off` row of the same scenario and link, in percent.
fn improvements(rows: &mut [Value]) {
    let off: Vec<(String, String, f64, f64)> = rows
        .iter()
        .filter(|r| r["variant"] == Variant::Off.name() && r["seconds"].is_number())
        .map(|r| {
            (
                r["scenario"].as_str().unwrap_or("").to_string(),
                r["link"].as_str().unwrap_or("").to_string(),
                r["seconds"].as_f64().unwrap_or(0.0),
                r["wire_bytes"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    for r in rows.iter_mut() {
        let Some(&(_, _, s0, b0)) = off
            .iter()
            .find(|(s, l, _, _)| r["scenario"] == s.as_str() && r["link"] == l.as_str())
        else {
            continue;
        };
        if let (Some(s), Some(b)) = (r["seconds"].as_f64(), r["wire_bytes"].as_f64()) {
            r["time_saved_percent"] = json!(percent_less(s, s0));
            r["bytes_saved_percent"] = json!(percent_less(b, b0));
        }
    }
}

fn percent_less(v: f64, base: f64) -> Option<f64> {
    (base > 0.0).then(|| (base - v) / base * 100.0)
}

fn variant_slug(v: Variant) -> &'static str {
    match v {
        Variant::Off => "off",
        Variant::Network => "network",
        Variant::Attachment => "attachment",
    }
}

fn bytes(docs: &[Doc]) -> u64 {
    docs.iter().map(Doc::bytes).sum()
}
