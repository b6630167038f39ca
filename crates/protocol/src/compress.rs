//! Network compression of frame bodies, negotiated per connection.
//!
//! Three methods, so an administrator can trade CPU for bandwidth: `Off`,
//! `Fast` (LZ4 block format, `lz4_flex`) and `Strong` (zstd). The method
//! is fixed by the handshake; each frame then says with its `compressed`
//! flag whether *its* body is compressed, because compression is only
//! worth it for bodies above a threshold and only when it actually
//! shrinks them (random attachment chunks do not shrink, and are sent as
//! they are rather than paying for a useless decompression).
//!
//! A compressed body is the uncompressed length as a `u32` LE, then the
//! compressed bytes (one LZ4 block, or one zstd frame):
//!
//! ```text
//!   +----------------------+---------------------------------+
//!   | uncompressed length  | LZ4 block / zstd frame          |
//!   | u32 LE               |                                 |
//!   +----------------------+---------------------------------+
//! ```
//!
//! Why our own length prefix even for zstd: the receiver refuses a length
//! above the largest body a frame may carry *before* allocating anything,
//! then decompresses into a buffer of exactly that size and requires the
//! output to fill it exactly. A decompression bomb therefore costs at most
//! one maximum-sized buffer, the same as an honest uncompressed frame.
//!
//! The zstd contexts are created once per connection and reused: creating
//! one per frame would cost more than compressing a 1 KiB document. Each
//! frame is still its own zstd frame (no context carried from one frame
//! to the next), so a frame decodes alone and a lost or refused frame
//! never poisons the rest; a replication packet is one frame of up to
//! several MiB, so the window a frame sees is large where it matters.
//!
//! The sending side's zstd level is a [`ZstdLevel`], 3 unless the client
//! asked for another in its Hello (docs/protocol.md §4.1): a client on a
//! 56 kbit/s line gains bytes from level 19 that a LAN would pay for in
//! CPU. The receiver does not need to know the level.

use crate::error::ProtocolError;

/// zstd level of the `Strong` method (chosen by the measurements in
/// docs/protocol.md: level 3 is zstd's default and gives most of the ratio
/// of higher levels at several times their speed).
pub const STRONG_LEVEL: i32 = 3;

/// A zstd level for the `Strong` method's sending side: 1 to 19.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ZstdLevel(u8);

impl ZstdLevel {
    /// The protocol's level, [`STRONG_LEVEL`].
    pub const DEFAULT: ZstdLevel = ZstdLevel(STRONG_LEVEL as u8);
    /// The highest level a connection may use.
    pub const MAX: ZstdLevel = ZstdLevel(19);
    /// The levels a connection may ask for (zstd's regular ones; 20 to
    /// 22 need windows larger than a frame).
    pub const RANGE: std::ops::RangeInclusive<u8> = 1..=19;

    /// The level `n`, or [`ProtocolError::CompressionLevel`].
    pub fn new(n: i64) -> Result<ZstdLevel, ProtocolError> {
        match u8::try_from(n) {
            Ok(l) if Self::RANGE.contains(&l) => Ok(ZstdLevel(l)),
            _ => Err(ProtocolError::CompressionLevel { level: n }),
        }
    }

    /// The level as zstd and the Hello take it.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl Default for ZstdLevel {
    fn default() -> Self {
        ZstdLevel::DEFAULT
    }
}

/// Default smallest body worth compressing, in bytes.
pub const DEFAULT_COMPRESSION_THRESHOLD: usize = 512;

/// Size of the uncompressed-length prefix of a compressed body.
const PREFIX_LEN: usize = 4;

/// A network compression method (a `u8` on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// 0: bodies are sent as they are.
    Off,
    /// 1: LZ4 block format: cheap enough for a LAN.
    Fast,
    /// 2: zstd: fewer bytes for slow links.
    Strong,
}

impl Compression {
    /// Every method, in the order of their codes.
    pub const ALL: [Compression; 3] = [Compression::Off, Compression::Fast, Compression::Strong];

    /// The method's code on the wire.
    pub fn code(self) -> u8 {
        match self {
            Compression::Off => 0,
            Compression::Fast => 1,
            Compression::Strong => 2,
        }
    }

    /// The method with this code, if this version knows it.
    pub fn from_code(code: u8) -> Option<Compression> {
        Compression::ALL.into_iter().find(|c| c.code() == code)
    }

    /// The method's name, as in `folio.toml` (`off`, `fast`, `strong`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::Off => "off",
            Compression::Fast => "fast",
            Compression::Strong => "strong",
        }
    }

    /// The method with this name (`off`, `fast`, `strong`).
    pub fn from_name(name: &str) -> Option<Compression> {
        Compression::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One connection's compressor and decompressor (public so benchmarks
/// and tools measure exactly what the protocol does).
pub struct BodyCodec {
    method: Compression,
    threshold: usize,
    level: ZstdLevel,
    zstd_out: Option<zstd::bulk::Compressor<'static>>,
    zstd_in: Option<zstd::bulk::Decompressor<'static>>,
}

impl std::fmt::Debug for BodyCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyCodec")
            .field("method", &self.method)
            .field("threshold", &self.threshold)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl BodyCodec {
    /// A codec for `method` that leaves bodies shorter than `threshold`
    /// bytes alone.
    pub fn new(method: Compression, threshold: usize) -> BodyCodec {
        BodyCodec::with_level(method, threshold, ZstdLevel::DEFAULT)
    }

    /// A codec like [`BodyCodec::new`] whose zstd compresses at `level`.
    pub fn with_level(method: Compression, threshold: usize, level: ZstdLevel) -> BodyCodec {
        BodyCodec {
            method,
            threshold,
            level,
            zstd_out: None,
            zstd_in: None,
        }
    }

    /// The codec's method.
    pub fn method(&self) -> Compression {
        self.method
    }

    /// Whether a body of `len` bytes is worth trying to compress (it is
    /// still sent as it is when compressing does not shrink it).
    pub fn would_compress(&self, len: usize) -> bool {
        self.method != Compression::Off && len >= self.threshold.max(1)
    }

    /// The compressed form of `body` (length prefix included), or `None`
    /// when the method is off, the body is below the threshold, or
    /// compressing would not make it smaller.
    pub fn compress(&mut self, body: &[u8]) -> Option<Vec<u8>> {
        if !self.would_compress(body.len()) {
            return None;
        }
        let prefix = u32::try_from(body.len()).ok()?.to_le_bytes();
        let mut out = Vec::new();
        match self.method {
            Compression::Off => return None,
            Compression::Fast => {
                out.resize(
                    PREFIX_LEN + lz4_flex::block::get_maximum_output_size(body.len()),
                    0,
                );
                let n = lz4_flex::block::compress_into(body, &mut out[PREFIX_LEN..]).ok()?;
                out.truncate(PREFIX_LEN + n);
            }
            Compression::Strong => {
                if self.zstd_out.is_none() {
                    self.zstd_out = zstd::bulk::Compressor::new(i32::from(self.level.0)).ok();
                }
                let z = self.zstd_out.as_mut()?;
                out.reserve(PREFIX_LEN + zstd::zstd_safe::compress_bound(body.len()));
                out.extend_from_slice(&[0; PREFIX_LEN]);
                // The Vec's spare capacity bounds the output, written after
                // the prefix through a cursor.
                let mut cursor = std::io::Cursor::new(&mut out);
                cursor.set_position(PREFIX_LEN as u64);
                z.compress_to_buffer(body, &mut cursor).ok()?;
            }
        }
        out[..PREFIX_LEN].copy_from_slice(&prefix);
        (out.len() < body.len()).then_some(out)
    }

    /// The original body of a compressed one, refusing to produce more
    /// than `max_len` bytes (checked before allocating).
    pub fn decompress(&mut self, body: &[u8], max_len: usize) -> Result<Vec<u8>, ProtocolError> {
        let fail = |reason: String| ProtocolError::Decompress {
            method: self.method.name(),
            reason,
        };
        let Some((prefix, data)) = body.split_first_chunk::<PREFIX_LEN>() else {
            return Err(fail(format!(
                "a compressed body needs a {PREFIX_LEN}-byte length prefix, got {} bytes",
                body.len()
            )));
        };
        let claimed = u32::from_le_bytes(*prefix);
        if claimed as usize > max_len {
            return Err(ProtocolError::DecompressedTooLarge {
                claimed: claimed.into(),
                max: u32::try_from(max_len).unwrap_or(u32::MAX),
            });
        }
        let want = claimed as usize;
        let out = match self.method {
            Compression::Off => return Err(fail("compression is off".into())),
            Compression::Fast => {
                let mut out = vec![0u8; want];
                let n = lz4_flex::block::decompress_into(data, &mut out)
                    .map_err(|e| fail(e.to_string()))?;
                out.truncate(n);
                out
            }
            Compression::Strong => {
                if self.zstd_in.is_none() {
                    self.zstd_in =
                        Some(zstd::bulk::Decompressor::new().map_err(|e| fail(e.to_string()))?);
                }
                let z = self
                    .zstd_in
                    .as_mut()
                    .ok_or_else(|| fail("no context".into()))?;
                // Capacity, not length, bounds what zstd writes.
                let mut out = Vec::with_capacity(want);
                z.decompress_to_buffer(data, &mut out)
                    .map_err(|e| fail(e.to_string()))?;
                out
            }
        };
        if out.len() != want {
            return Err(fail(format!(
                "produced {} bytes, the prefix said {want}",
                out.len()
            )));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(n: usize) -> Vec<u8> {
        let words = [
            "folio ",
            "document ",
            "server ",
            "replica ",
            "view ",
            "mail ",
        ];
        let mut out = Vec::new();
        let mut i = 0usize;
        while out.len() < n {
            out.extend_from_slice(words[(i * 7 + i / 3) % words.len()].as_bytes());
            i += 1;
        }
        out.truncate(n);
        out
    }

    #[test]
    fn text_shrinks_and_comes_back_with_every_method() {
        let body = text(10_000);
        for m in [Compression::Fast, Compression::Strong] {
            let mut c = BodyCodec::new(m, DEFAULT_COMPRESSION_THRESHOLD);
            let z = c.compress(&body).expect("text compresses");
            assert!(z.len() < body.len() / 3, "{m}: {}", z.len());
            assert_eq!(c.decompress(&z, body.len()).unwrap(), body);
        }
    }

    #[test]
    fn small_incompressible_or_uncompressed_bodies_are_left_alone() {
        let mut c = BodyCodec::new(Compression::Fast, 512);
        assert_eq!(c.compress(&text(511)), None);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                // xorshift64: incompressible enough for any LZ method.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        let mut z = BodyCodec::new(Compression::Strong, 512);
        assert_eq!(z.compress(&noise), None);
        assert_eq!(
            BodyCodec::new(Compression::Off, 0).compress(&text(4096)),
            None
        );
    }

    #[test]
    fn a_bomb_is_refused_before_allocating() {
        // A body claiming 4 GiB - 1: refused from the prefix alone.
        for m in [Compression::Fast, Compression::Strong] {
            let mut c = BodyCodec::new(m, 0);
            let bomb = [0xff, 0xff, 0xff, 0xff, 0, 0];
            assert_eq!(
                c.decompress(&bomb, 1 << 20),
                Err(ProtocolError::DecompressedTooLarge {
                    claimed: u32::MAX.into(),
                    max: 1 << 20
                })
            );
        }
        // A real zstd bomb (64 MiB of zeros in a few KiB) with an honest
        // prefix is refused the same way; with a lying prefix, zstd stops
        // at the buffer's end.
        let zeros = vec![0u8; 64 << 20];
        let mut c = BodyCodec::new(Compression::Strong, 0);
        let z = c.compress(&zeros).unwrap();
        assert!(z.len() < 8192, "{}", z.len());
        assert!(matches!(
            c.decompress(&z, 16 << 20),
            Err(ProtocolError::DecompressedTooLarge { .. })
        ));
        let mut lying = z.clone();
        lying[..4].copy_from_slice(&(1024u32).to_le_bytes());
        assert!(matches!(
            c.decompress(&lying, 16 << 20),
            Err(ProtocolError::Decompress { .. })
        ));
        // Same for LZ4.
        let mut c = BodyCodec::new(Compression::Fast, 0);
        let mut z = c.compress(&zeros[..8 << 20]).unwrap();
        z[..4].copy_from_slice(&(1024u32).to_le_bytes());
        assert!(matches!(
            c.decompress(&z, 16 << 20),
            Err(ProtocolError::Decompress { .. })
        ));
    }

    #[test]
    fn a_short_or_truthless_prefix_is_an_error() {
        let mut c = BodyCodec::new(Compression::Fast, 0);
        assert!(c.decompress(&[1, 0], 100).is_err());
        let mut z = c.compress(&text(2000)).unwrap();
        z[..4].copy_from_slice(&3000u32.to_le_bytes());
        assert!(c.decompress(&z, 10_000).is_err());
    }

    proptest! {
        #[test]
        fn compress_then_decompress_is_identity(
            body in proptest::collection::vec(0u8..4, 0..5000),
            strong in any::<bool>(),
        ) {
            let m = if strong { Compression::Strong } else { Compression::Fast };
            let mut c = BodyCodec::new(m, 0);
            if let Some(z) = c.compress(&body) {
                prop_assert!(z.len() < body.len());
                prop_assert_eq!(c.decompress(&z, body.len()).unwrap(), body);
            }
        }

        #[test]
        fn decompressing_garbage_never_panics(
            body in proptest::collection::vec(any::<u8>(), 0..300),
            strong in any::<bool>(),
        ) {
            let m = if strong { Compression::Strong } else { Compression::Fast };
            let mut c = BodyCodec::new(m, 0);
            if let Ok(out) = c.decompress(&body, 4096) {
                prop_assert!(out.len() <= 4096);
            }
        }
    }
}
