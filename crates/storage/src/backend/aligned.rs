//! Buffers aligned for direct I/O.
//!
//! Direct I/O (`O_DIRECT`) moves data between the disk and the caller's
//! memory without the page cache, and the kernel accepts it only for
//! buffers, lengths and offsets aligned to the device's logical block.
//! 4 KiB covers every block size in use (512-byte and 4 KiB sectors), and
//! database pages are multiples of it, so one constant serves all files.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Alignment of address, length and offset that direct I/O requires.
pub const DIRECT_ALIGN: usize = 4096;

/// A zero-filled heap buffer whose address is a multiple of
/// [`DIRECT_ALIGN`].
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// `len` zero bytes (`len` may be 0).
    pub fn zeroed(len: usize) -> AlignedBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout's size is at least 1.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf { ptr, len }
    }

    /// The allocation's layout (at least one byte: a zero-sized
    /// allocation is not allowed).
    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1), DIRECT_ALIGN)
            .expect("buffer size fits the address space")
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this same layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` initialized bytes (zeroed at
        // allocation) for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_zeroed_and_writable() {
        for len in [0, 1, 4096, 8192 * 128 + 7] {
            let mut b = AlignedBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % DIRECT_ALIGN, 0);
            assert!(b.iter().all(|&x| x == 0));
            if len > 0 {
                b[len - 1] = 7;
                assert_eq!(b[len - 1], 7);
            }
        }
    }
}
