//! The options of `folio load replication`, and their checks: a bad
//! value, or an option that does not apply, is refused before anything
//! is started.

use super::link::Link;
use client::NetCompression;
use std::path::PathBuf;

/// Which figures a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// Replica creation and incremental replication of the mail corpus,
    /// per link and compression variant.
    Links,
    /// A large database of small documents: LAN replica creation
    /// (documents/s, durable on the target), then a rerun with nothing
    /// changed (round trips and bytes on the wire).
    Large,
}

/// How the replication's bytes are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Variant {
    /// No compression anywhere.
    Off,
    /// Network compression (zstd) on the connection.
    Network,
    /// Network compression, and attachments stored compressed at the
    /// source (the server's `attachment_compression = "auto"`, at
    /// `--attachment-level`).
    Attachment,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Off => "off",
            Variant::Network => "network",
            Variant::Attachment => "network + attachment",
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct ReplArgs {
    /// What to measure: links (the mail corpus over each link and
    /// variant), large (100,000 small documents on the LAN), or both.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "links")]
    pub scenario: Vec<Scenario>,
    /// Links, comma-separated: lan (unlimited), or a rate such as 256kbit
    /// or 56kbit (with 50 ms one-way delay), each made by a proxy.
    #[arg(long, value_delimiter = ',', default_value = "lan,256kbit,56kbit")]
    pub link: Vec<Link>,
    /// Compression variants, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "off,network,attachment"
    )]
    pub variant: Vec<Variant>,
    /// The connection's compression in the network variants: zstd (the
    /// protocol's level 3) or zstd:N (level N, 1 to 19, asked of the
    /// server in the handshake).
    #[arg(long, default_value = "zstd")]
    pub network_compression: NetCompression,
    /// The zstd level the attachment variant's source stores attachments
    /// at (`attachment_compression_level`, 1 to 19). 19 by default: the
    /// source pays it once per attachment, every replication carries the
    /// stored stream as it is.
    #[arg(long, default_value_t = 19)]
    pub attachment_level: i64,
    /// Size of the corpus in MB (the workload's is 20; a smaller one
    /// keeps kbit links short: 20 MB take ~48 min at 56 kbit/s).
    #[arg(long, default_value_t = 20.0)]
    pub corpus_mb: f64,
    /// Documents of the corpus.
    #[arg(long, default_value_t = 200)]
    pub docs: usize,
    /// Documents added for the incremental scenario (with half the
    /// corpus's bytes, the same mix).
    #[arg(long, default_value_t = 50)]
    pub add: usize,
    /// Documents of the large database (1 KiB each).
    #[arg(long, default_value_t = 100_000)]
    pub large_docs: usize,
    /// Seed of the corpus.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory for the temporary data directories (default: the system
    /// temp dir); deleted afterwards.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Where result.json and report.html are written.
    #[arg(long, default_value = "folio-load-replication")]
    pub out: PathBuf,
}

impl ReplArgs {
    /// Refuses bad values and what does not apply (`server`: the source
    /// is a server the tool did not start).
    pub fn check(&self, server: bool) -> Result<(), String> {
        if !(self.corpus_mb > 0.0 && self.corpus_mb <= 4096.0) {
            return Err(format!(
                "--corpus-mb {}: give a size above 0 and at most 4096",
                self.corpus_mb
            ));
        }
        for (n, name) in [
            (self.docs, "--docs"),
            (self.add, "--add"),
            (self.large_docs, "--large-docs"),
        ] {
            if n == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        if self.link.is_empty() || self.variant.is_empty() || self.scenario.is_empty() {
            return Err("--link, --variant and --scenario each need a value".into());
        }
        if self.network_compression.forced() != Some(protocol::Compression::Strong) {
            return Err(format!(
                "--network-compression {}: the network variants use zstd: give zstd or zstd:N",
                self.network_compression
            ));
        }
        nsf::CompressionLevel::new(self.attachment_level)
            .map_err(|e| format!("--attachment-level {e}"))?;
        if server && self.scenario.contains(&Scenario::Large) {
            return Err("--scenario large prepares its 100,000 documents embedded, in a server it starts: leave out --server".into());
        }
        Ok(())
    }

    /// The corpus size in bytes.
    pub fn corpus_bytes(&self) -> u64 {
        (self.corpus_mb * 1e6) as u64
    }
}
