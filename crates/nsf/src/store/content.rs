//! What a stored attachment item says about its content: the hash that
//! names the object, the form it is stored in, and its stored size
//! (design.md §2.9). The item also keeps the original size and crc32c,
//! as every attachment item does.

use std::fmt;

/// Attachments smaller than this stay in the database's blob pages
/// (§2.5); at or above it they go to the store.
pub const STORE_MIN: u64 = 4096;

/// SHA-256 of an attachment's original bytes: the name of its object.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash(pub [u8; 32]);

impl ContentHash {
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses 64 lowercase hex digits (an object's file name).
    pub fn from_hex(s: &str) -> Option<ContentHash> {
        if s.len() != 64 || !s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(ContentHash(out))
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentHash({})", self.to_hex())
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// How an object's bytes are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoredForm {
    /// The original bytes.
    Raw,
    /// One zstd frame of the original bytes.
    Zstd,
}

impl StoredForm {
    pub fn code(self) -> u8 {
        match self {
            StoredForm::Raw => 0,
            StoredForm::Zstd => 1,
        }
    }

    pub fn from_code(c: u8) -> Option<StoredForm> {
        match c {
            0 => Some(StoredForm::Raw),
            1 => Some(StoredForm::Zstd),
            _ => None,
        }
    }
}

/// Where a stored attachment's content is: the object and its form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StoredContent {
    pub hash: ContentHash,
    pub form: StoredForm,
    pub stored_size: u64,
}

/// The `attachment_compression` setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AttachmentCompression {
    /// Try zstd on each attachment; keep it where it saves ≥ 10%.
    #[default]
    Auto,
    /// Store every attachment as is.
    Off,
}

impl AttachmentCompression {
    /// Parses the setting's value; anything else is refused with the
    /// values that are allowed.
    pub fn parse(s: &str) -> Result<AttachmentCompression, String> {
        match s {
            "auto" => Ok(AttachmentCompression::Auto),
            "off" => Ok(AttachmentCompression::Off),
            other => Err(format!("{other:?}: expected \"auto\" or \"off\"")),
        }
    }
}

/// The `attachment_compression_level` setting: the zstd level the store
/// compresses an attachment at, once, when it is written (1 to 19).
///
/// Why a setting: the level is paid once per attachment, at write time,
/// and its stored stream then travels as it is on every replication
/// (I47) and is read back at zstd's decoding speed whatever the level.
/// The default, 3, keeps writes near disk speed; a server that feeds
/// replicas over slow links may store harder (docs/benchmarks.md
/// "replication" measures both sides of the trade).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompressionLevel(u8);

impl CompressionLevel {
    /// zstd's default, the store's since it compresses.
    pub const DEFAULT: CompressionLevel = CompressionLevel(3);
    /// The levels allowed: zstd's regular ones (20 to 22 need a large
    /// window for little gain and are left out).
    pub const RANGE: std::ops::RangeInclusive<u8> = 1..=19;

    /// The level `n`, or why it is refused.
    pub fn new(n: i64) -> Result<CompressionLevel, String> {
        match u8::try_from(n) {
            Ok(l) if Self::RANGE.contains(&l) => Ok(CompressionLevel(l)),
            _ => Err(format!(
                "{n}: expected a zstd level from {} to {}",
                Self::RANGE.start(),
                Self::RANGE.end()
            )),
        }
    }

    /// The level as zstd takes it.
    pub fn get(self) -> i32 {
        i32::from(self.0)
    }
}

impl Default for CompressionLevel {
    fn default() -> Self {
        CompressionLevel::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_level_takes_1_to_19_and_refuses_the_rest() {
        assert_eq!(CompressionLevel::new(1).map(CompressionLevel::get), Ok(1));
        assert_eq!(CompressionLevel::new(19).map(CompressionLevel::get), Ok(19));
        assert_eq!(CompressionLevel::default().get(), 3);
        for bad in [0, 20, 22, -1, 256, i64::MAX] {
            let e = CompressionLevel::new(bad).unwrap_err();
            assert!(e.contains(&bad.to_string()) && e.contains("1 to 19"), "{e}");
        }
    }

    #[test]
    fn hashes_round_trip_through_hex_and_refuse_other_names() {
        let h = ContentHash([0xab; 32]);
        assert_eq!(ContentHash::from_hex(&h.to_hex()), Some(h));
        assert_eq!(ContentHash::from_hex("ab"), None);
        assert_eq!(ContentHash::from_hex(&"AB".repeat(32)), None);
        assert_eq!(
            ContentHash::from_hex(&format!("{}.part", "a".repeat(59))),
            None
        );
    }

    #[test]
    fn compression_setting_refuses_unknown_values() {
        assert_eq!(
            AttachmentCompression::parse("auto"),
            Ok(AttachmentCompression::Auto)
        );
        assert_eq!(
            AttachmentCompression::parse("off"),
            Ok(AttachmentCompression::Off)
        );
        let e = AttachmentCompression::parse("lz4").unwrap_err();
        assert!(e.contains("\"auto\" or \"off\""), "{e}");
    }
}
