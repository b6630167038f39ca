//! One object file of the store: a fixed header that says what the bytes
//! after it are, so an object can be checked (and copied by backup or
//! replication) without decompressing it (design.md §2.9).
//!
//! ```text
//!   0 magic "FOLIOATT"   8 version u32 = 1   12 form u8, 3 zero bytes
//!  16 original size u64  24 stored size u64  32 crc32c of stored bytes u32
//!  36 crc32c of original u32   40 SHA-256 of original (32)
//!  72 crc32c of bytes 0..72 u32              76 stored bytes
//! ```

use super::content::{ContentHash, StoredContent, StoredForm};

pub(crate) const MAGIC: &[u8; 8] = b"FOLIOATT";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER_LEN: usize = 76;

/// An object's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ObjectHeader {
    pub form: StoredForm,
    pub size: u64,
    pub stored_size: u64,
    pub stored_crc: u32,
    pub crc32c: u32,
    pub hash: ContentHash,
}

impl ObjectHeader {
    /// Whether this is the object an attachment item names: its content
    /// (hash, stored form and size) and the original's size and crc32c.
    pub fn matches(&self, content: &StoredContent, size: u64, crc32c: u32) -> bool {
        self.hash == content.hash
            && self.form == content.form
            && self.stored_size == content.stored_size
            && self.size == size
            && self.crc32c == crc32c
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12] = self.form.code();
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..32].copy_from_slice(&self.stored_size.to_le_bytes());
        b[32..36].copy_from_slice(&self.stored_crc.to_le_bytes());
        b[36..40].copy_from_slice(&self.crc32c.to_le_bytes());
        b[40..72].copy_from_slice(&self.hash.0);
        let crc = crc32c::crc32c(&b[..72]);
        b[72..76].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header, saying what is wrong with a bad one.
    pub fn decode(b: &[u8]) -> Result<ObjectHeader, String> {
        if b.len() < HEADER_LEN {
            return Err(format!("object of {} bytes has no whole header", b.len()));
        }
        if &b[0..8] != MAGIC {
            return Err("not an attachment store object (bad magic)".into());
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        if u32_at(72) != crc32c::crc32c(&b[..72]) {
            return Err("object header checksum mismatch".into());
        }
        if u32_at(8) != VERSION {
            return Err(format!("object format version {}", u32_at(8)));
        }
        let form =
            StoredForm::from_code(b[12]).ok_or_else(|| format!("unknown stored form {}", b[12]))?;
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&b[40..72]);
        Ok(ObjectHeader {
            form,
            size: u64_at(16),
            stored_size: u64_at(24),
            stored_crc: u32_at(32),
            crc32c: u32_at(36),
            hash: ContentHash(hash),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_damage_is_named() {
        let h = ObjectHeader {
            form: StoredForm::Zstd,
            size: 1 << 20,
            stored_size: 4000,
            stored_crc: 7,
            crc32c: 9,
            hash: ContentHash([3; 32]),
        };
        let mut b = h.encode();
        assert_eq!(ObjectHeader::decode(&b), Ok(h));
        b[20] ^= 1;
        assert!(ObjectHeader::decode(&b).unwrap_err().contains("checksum"));
        assert!(ObjectHeader::decode(&b[..10])
            .unwrap_err()
            .contains("no whole header"));
    }
}
