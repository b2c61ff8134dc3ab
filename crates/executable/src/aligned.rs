//! [`AlignedBytes`]: an owned, zero-initialised heap block with a chosen alignment, for the
//! memory a run needs beyond the caller's buffers (constants, weights, scratch).
//!
//! `Vec<u8>` cannot promise an alignment above 1, and a slot may ask for 64. Allocation is
//! fallible (an error, never an abort), so a plan asking for more memory than the host has is
//! refused with its numbers (STYLE.md item 19).

use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;

use crate::pages::{touch_slack, READABLE_SLACK};

/// An allocation of `bytes` bytes at `alignment` failed, or the pair is not a valid layout
/// (alignment not a power of two, or size too large once rounded to the alignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AllocFailure {
    /// The size asked for.
    pub(crate) bytes: usize,
    /// The alignment asked for.
    pub(crate) alignment: usize,
}

/// An owned block of `len` bytes whose address is a multiple of `alignment`, zeroed at
/// creation and freed on drop, with [`READABLE_SLACK`] allocated and present bytes after
/// them (see there: a masked vector access past the end never reaches an absent page). A
/// zero-length block allocates nothing and has a dangling, non-null, aligned address.
pub(crate) struct AlignedBytes {
    ptr: NonNull<u8>,
    len: usize,
    alignment: usize,
}

// SAFETY: the block is exclusively owned, like a `Vec<u8>`'s buffer; mutation needs
// `&mut self` (or a raw pointer from `as_mut_ptr`, which needs `&mut self` too).
unsafe impl Send for AlignedBytes {}
// SAFETY: `&AlignedBytes` only gives read access to the bytes.
unsafe impl Sync for AlignedBytes {}

impl AlignedBytes {
    /// An empty block (no allocation) with alignment 1.
    pub(crate) const fn empty() -> AlignedBytes {
        AlignedBytes {
            ptr: NonNull::dangling(),
            len: 0,
            alignment: 1,
        }
    }

    /// A zeroed block of `len` bytes aligned to `alignment` (a power of two).
    pub(crate) fn zeroed(len: usize, alignment: usize) -> Result<AlignedBytes, AllocFailure> {
        let failure = AllocFailure {
            bytes: len,
            alignment,
        };
        let layout = len
            .checked_add(READABLE_SLACK)
            .and_then(|bytes| Layout::from_size_align(bytes, alignment).ok())
            .ok_or(failure)?;
        if len == 0 {
            // The alignment itself is a non-zero multiple of the alignment: the usual
            // dangling address for an aligned empty allocation.
            let ptr =
                NonNull::new(std::ptr::without_provenance_mut::<u8>(alignment)).ok_or(failure)?;
            return Ok(AlignedBytes {
                ptr,
                len,
                alignment,
            });
        }
        // SAFETY: `layout` has a non-zero size (at least the slack).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(failure)?;
        // SAFETY: the allocation holds `len + READABLE_SLACK` zeroed bytes.
        unsafe { touch_slack(ptr.as_ptr(), len) };
        Ok(AlignedBytes {
            ptr,
            len,
            alignment,
        })
    }

    /// A block holding a copy of `bytes`, aligned to `alignment` (a power of two).
    pub(crate) fn copy_of(bytes: &[u8], alignment: usize) -> Result<AlignedBytes, AllocFailure> {
        let mut block = AlignedBytes::zeroed(bytes.len(), alignment)?;
        block.as_mut_slice().copy_from_slice(bytes);
        Ok(block)
    }

    /// The number of bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The alignment the block was made with (its address is a multiple of it).
    pub(crate) fn alignment(&self) -> usize {
        self.alignment
    }

    /// The first byte, for reading.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The first byte, for writing through; valid for `len` bytes while `self` is not
    /// otherwise used.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is non-null and valid for `len` initialised (zeroed or copied) bytes
        // owned by `self` (for `len == 0`, any non-null pointer is valid), and `&self` rules
        // out writes while the slice lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, for writing.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBytes {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: a non-empty block was allocated in `zeroed` with exactly this size (its
        // length and the slack) and alignment, which formed a valid layout then, so they do
        // now, and is freed only here.
        unsafe {
            alloc::dealloc(
                self.ptr.as_ptr(),
                Layout::from_size_align_unchecked(self.len + READABLE_SLACK, self.alignment),
            );
        }
    }
}

impl fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBytes")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("alignment", &self.alignment)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_zeroed_and_copied() {
        for alignment in [1, 2, 8, 64, 4096] {
            for len in [0, 1, 7, 100] {
                let block = AlignedBytes::zeroed(len, alignment).unwrap();
                assert_eq!(block.len(), len);
                assert_eq!(block.alignment(), alignment);
                assert_eq!(
                    block.as_ptr() as usize % alignment,
                    0,
                    "{len} @ {alignment}"
                );
                assert!(!block.as_ptr().is_null());
                assert!(block.as_slice().iter().all(|&b| b == 0));
            }
        }
        let block = AlignedBytes::copy_of(&[1, 2, 3], 32).unwrap();
        assert_eq!(block.as_slice(), &[1, 2, 3]);
        assert_eq!(AlignedBytes::empty().as_slice(), &[] as &[u8]);
    }

    #[test]
    fn impossible_layouts_and_sizes_fail_cleanly() {
        assert_eq!(
            AlignedBytes::zeroed(8, 3).unwrap_err(),
            AllocFailure {
                bytes: 8,
                alignment: 3
            }
        );
        // Larger than `isize::MAX`: not a valid layout.
        assert!(AlignedBytes::zeroed(usize::MAX - 8, 16).is_err());
        // A valid layout no allocator can satisfy.
        assert!(AlignedBytes::zeroed(1 << 62, 8).is_err());
    }
}
