//! An attachment's content in its stored form, on its way between two
//! servers' stores (design.md §2.9 "Replication", I47).
//!
//! Replication used to read every attachment back to its original bytes
//! and have the target compress them again; now a compressed object
//! travels as its zstd stream with the original's size, crc32c and
//! SHA-256, and the target writes that stream as its own object without
//! recompressing it. The target trusts none of it: before anything is
//! written it decompresses the stream once, hashing what comes out, and
//! refuses content whose length, crc32c or SHA-256 is not what the sender
//! said ([`CarriedContent::verify`]). Decompressing to check is cheap next
//! to compressing; what is never done in flight is a decompress and
//! recompress.
//!
//! ```text
//!   source object ──read stored bytes (crc checked)──▶ wire ──▶ target
//!        verify: zstd-decode → size, crc32c, SHA-256 of the original
//!        auto + zstd: write the stream as is ─▶ tmp ─▶ sync ─▶ publish (I37)
//!        off, or small: the decoded original through the normal writer
//! ```

use super::content::{ContentHash, StoredContent, StoredForm};
use super::object::{ObjectHeader, HEADER_LEN};
use super::registry::AttachStore;
use super::write::{published, Staged};
use crate::{NsfError, NsfResult};
use sha2::{Digest, Sha256};
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{read_exact_at, write_all_at};
use storage::OpenMode;

/// An attachment's content as a store holds it: its form, what the
/// original is (size, crc32c, SHA-256), and the stored bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct CarriedContent {
    pub form: StoredForm,
    /// The original's size, crc32c and SHA-256.
    pub size: u64,
    pub crc32c: u32,
    pub hash: ContentHash,
    /// The stored bytes: the original (`Raw`) or one zstd stream of it.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for CarriedContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CarriedContent({:?}, {} bytes of {} original, {})",
            self.form,
            self.bytes.len(),
            self.size,
            self.hash
        )
    }
}

fn invalid(why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

impl CarriedContent {
    /// The original bytes, decoded from the stored form as they are
    /// read; the reader fails (`InvalidData`) as soon as more bytes come
    /// than the size says, and at the end if the size, crc32c or
    /// SHA-256 differ from what the content claims.
    pub fn original(&self) -> io::Result<impl Read + '_> {
        let inner: Box<dyn Read + '_> = match self.form {
            StoredForm::Raw => Box::new(self.bytes.as_slice()),
            StoredForm::Zstd => Box::new(
                zstd::stream::read::Decoder::with_buffer(self.bytes.as_slice()).map_err(invalid)?,
            ),
        };
        Ok(Checked {
            inner,
            claim: self,
            seen: 0,
            crc: 0,
            sha: Sha256::new(),
        })
    }

    /// Checks that the stored bytes decode to content of the claimed
    /// size, crc32c and SHA-256, without keeping the decoded bytes.
    pub fn verify(&self) -> io::Result<()> {
        io::copy(&mut self.original()?, &mut io::sink()).map(|_| ())
    }
}

/// The original bytes of a [`CarriedContent`], checked against its claim.
struct Checked<'a> {
    inner: Box<dyn Read + 'a>,
    claim: &'a CarriedContent,
    seen: u64,
    crc: u32,
    sha: Sha256,
}

impl Read for Checked<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self
            .inner
            .read(out)
            .map_err(|e| invalid(format!("the stored stream does not decode: {e}")))?;
        self.seen += n as u64;
        if self.seen > self.claim.size {
            return Err(invalid(format!(
                "decodes to more than the {} bytes it claims",
                self.claim.size
            )));
        }
        self.crc = crc32c::crc32c_append(self.crc, &out[..n]);
        self.sha.update(&out[..n]);
        if n == 0 {
            self.check_end()?;
        }
        Ok(n)
    }
}

impl Checked<'_> {
    fn check_end(&self) -> io::Result<()> {
        let c = self.claim;
        if self.seen != c.size {
            return Err(invalid(format!(
                "decodes to {} bytes, claims {}",
                self.seen, c.size
            )));
        }
        if self.crc != c.crc32c {
            return Err(invalid(
                "crc32c of the decoded content differs from its claim",
            ));
        }
        if ContentHash(self.sha.clone().finalize().into()) != c.hash {
            return Err(invalid(
                "SHA-256 of the decoded content differs from its claim",
            ));
        }
        Ok(())
    }
}

/// Reads the object `content` names in its stored form; the header must
/// agree with the item (`size`, `crc32c` of the original) and the stored
/// bytes with the header's crc32c.
pub(crate) fn read_carried(
    store: &AttachStore,
    content: &StoredContent,
    (size, crc32c): (u64, u32),
) -> Result<CarriedContent, String> {
    let path = store.object_path(&content.hash);
    let file = store
        .backend
        .open(&path, OpenMode::Existing)
        .map_err(|e| format!("object {} cannot be opened: {e}", content.hash))?;
    let header = super::read::read_header(file.as_ref())?;
    if !header.matches(content, size, crc32c) {
        return Err(format!(
            "object {} does not match the attachment item",
            content.hash
        ));
    }
    let len = usize::try_from(header.stored_size)
        .map_err(|_| format!("object {} is too large to carry", content.hash))?;
    let mut bytes = vec![0u8; len];
    read_exact_at(file.as_ref(), &mut bytes, HEADER_LEN as u64)
        .map_err(|e| format!("object {}: {e}", content.hash))?;
    if crc32c::crc32c(&bytes) != header.stored_crc {
        return Err(format!(
            "object {}: stored bytes checksum mismatch",
            content.hash
        ));
    }
    Ok(CarriedContent {
        form: header.form,
        size,
        crc32c,
        hash: header.hash,
        bytes,
    })
}

/// Stores carried content as an object in its own form (I47): verified
/// first (nothing is written for content that fails), then written as
/// is, synced and published like any object (I37).
pub(crate) fn stage_carried(
    store: &Arc<AttachStore>,
    db: &str,
    carried: &CarriedContent,
) -> NsfResult<Staged> {
    store.check_writable()?;
    carried.verify().map_err(NsfError::Content)?;
    let tmp = store
        .tmp_dir()
        .join(format!("{:016x}.part", rand::random::<u64>()));
    store.tmp_started(&tmp);
    let staged = write_carried(store, &tmp, carried).and_then(|header| {
        published(store, db, &tmp, header).inspect_err(|_| {
            let _ = store.backend.remove_file(&tmp);
        })
    });
    store.tmp_done(&tmp);
    staged
}

/// Stages content this store already holds, by the SHA-256 of its
/// original (a reference replication carries instead of the bytes,
/// design.md §2.9): the object must be there, with this original size
/// and crc32c. It is pinned for the referencing commit (I37) and counted
/// as a dedup hit.
pub(crate) fn stage_held(
    store: &Arc<AttachStore>,
    db: &str,
    hash: ContentHash,
    size: u64,
    crc32c: u32,
) -> NsfResult<Staged> {
    store.check_writable()?;
    let (pin, header) = store.pin_existing(hash, db)?;
    if header.size != size || header.crc32c != crc32c {
        return Err(NsfError::Store {
            what: format!("object {hash}"),
            reason: format!(
                "holds {} bytes with crc32c {:08x}, not the {size} bytes with crc32c {crc32c:08x} referenced",
                header.size, header.crc32c
            ),
        });
    }
    store.stats.staged(true);
    Ok(Staged::of(header, pin))
}

/// Writes the header and the stored bytes to `tmp` and syncs it.
fn write_carried(
    store: &AttachStore,
    tmp: &Path,
    carried: &CarriedContent,
) -> NsfResult<ObjectHeader> {
    let header = ObjectHeader {
        form: carried.form,
        size: carried.size,
        stored_size: carried.bytes.len() as u64,
        stored_crc: crc32c::crc32c(&carried.bytes),
        crc32c: carried.crc32c,
        hash: carried.hash,
    };
    let file = store
        .backend
        .open(tmp, OpenMode::CreateNew)
        .map_err(|e| store.fail(tmp, "creating", e))?;
    let written = write_all_at(file.as_ref(), &header.encode(), 0)
        .and_then(|()| write_all_at(file.as_ref(), &carried.bytes, HEADER_LEN as u64))
        // I37: the object is durable before it is published.
        .and_then(|()| file.sync_data());
    if let Err(e) = written {
        // Best effort: a leftover goes at the next sweep.
        let _ = store.backend.remove_file(tmp);
        return Err(store.fail(tmp, "writing", e));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carried(original: &[u8], form: StoredForm) -> CarriedContent {
        CarriedContent {
            form,
            size: original.len() as u64,
            crc32c: crc32c::crc32c(original),
            hash: ContentHash(Sha256::digest(original).into()),
            bytes: match form {
                StoredForm::Raw => original.to_vec(),
                StoredForm::Zstd => zstd::bulk::compress(original, 3).unwrap(),
            },
        }
    }

    fn decoded(c: &CarriedContent) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        c.original()?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn both_forms_decode_to_the_original() {
        let text = b"a line of text that compresses well. ".repeat(500);
        for form in [StoredForm::Raw, StoredForm::Zstd] {
            let c = carried(&text, form);
            assert_eq!(decoded(&c).unwrap(), text);
            c.verify().unwrap();
        }
        assert!(carried(&text, StoredForm::Zstd).bytes.len() < text.len() / 10);
    }

    #[test]
    fn truncated_corrupt_or_misdescribed_content_is_refused() {
        let text = b"a line of text that compresses well. ".repeat(500);
        let good = carried(&text, StoredForm::Zstd);
        let mut cases = Vec::new();
        let mut c = good.clone();
        c.bytes.truncate(c.bytes.len() / 2);
        cases.push(("truncated", c));
        let mut c = good.clone();
        let mid = c.bytes.len() / 2;
        c.bytes[mid] ^= 0x55;
        cases.push(("corrupt", c));
        let mut c = good.clone();
        c.size -= 1;
        cases.push(("size too small", c));
        let mut c = good.clone();
        c.size += 1;
        cases.push(("size too large", c));
        let mut c = good.clone();
        c.crc32c ^= 1;
        cases.push(("crc", c));
        let mut c = good.clone();
        c.hash.0[0] ^= 1;
        cases.push(("hash", c));
        let mut c = good.clone();
        c.bytes.extend_from_slice(b"trailing");
        cases.push(("trailing bytes", c));
        let mut c = carried(&text, StoredForm::Raw);
        c.bytes[0] ^= 1;
        cases.push(("raw corrupt", c));
        for (what, c) in cases {
            let e = c.verify().expect_err(what);
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{what}: {e}");
        }
    }

    #[test]
    fn a_stream_decoding_to_more_than_it_claims_stops_at_the_claim() {
        // 64 MiB of zeros in a few KiB, claiming 4 KiB: the reader refuses
        // on the read that passes the claim and hands out no more than
        // the claim, so nothing downstream ever holds the rest.
        let bomb = zstd::bulk::compress(&vec![0u8; 64 << 20], 3).unwrap();
        assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
        let claim = 4096u64;
        let c = CarriedContent {
            form: StoredForm::Zstd,
            size: claim,
            crc32c: 0,
            hash: ContentHash([0; 32]),
            bytes: bomb,
        };
        let mut r = c.original().unwrap();
        let mut buf = [0u8; 1000];
        let mut handed_out = 0u64;
        let e = loop {
            match r.read(&mut buf) {
                Ok(0) => panic!("a bomb read to its end"),
                Ok(n) => handed_out += n as u64,
                Err(e) => break e,
            }
        };
        assert!(handed_out <= claim, "{handed_out} bytes handed out");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("more than"), "{e}");
        assert_eq!(c.verify().unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
