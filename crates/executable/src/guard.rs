//! Test support: byte buffers placed flush against inaccessible guard pages.
//!
//! Not for production buffers (each one costs at least three pages and three system calls).
//! Its purpose is proving that generated code stays inside its regions (DESIGN.md:
//! "tests run kernels on buffers placed against guard pages"): reading or writing even one
//! byte past the end of a [`GuardedBuffer`], or anywhere in the page before it, kills the
//! process with `SIGSEGV`, so an overrun fails the test loudly instead of silently reading a
//! neighbour's bytes. Always compiled (it needs nothing the crate does not already use), so
//! other crates' tests can use it without a feature flag.
//!
//! Layout, low to high addresses:
//! `[guard page][padding | buffer bytes | tail gap][guard page]`, where the tail gap is empty
//! unless an alignment forces the start down (it is then smaller than that alignment).

use std::fmt;
use std::ptr::NonNull;

use crate::sys::{self, Errno, Protection};

/// Why a [`GuardedBuffer`] could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// `align` is not a power of two, is larger than a page, or `offset` is not below it: a
    /// bug in the test.
    #[error("bad placement: alignment {align} (a power of two up to the page size {page_size}) with offset {offset}")]
    BadPlacement {
        /// The requested alignment.
        align: usize,
        /// The requested offset from that alignment.
        offset: usize,
        /// This host's page size.
        page_size: usize,
    },
    /// The buffer plus its guard pages do not fit in memory (or the size overflowed).
    #[error("out of memory mapping a guarded buffer of {bytes} bytes")]
    OutOfMemory {
        /// The requested buffer length.
        bytes: usize,
    },
    /// A mapping or protection call failed for another reason.
    #[error("setting up a guarded buffer of {bytes} bytes failed: {errno}")]
    System {
        /// The requested buffer length.
        bytes: usize,
        /// The system's error number.
        errno: Errno,
    },
}

/// A zero-initialised byte buffer with a `PROT_NONE` page right after it and another right
/// before the page it starts in.
///
/// Owns its memory like a `Vec<u8>` (hence `Send + Sync`); unmaps it on drop.
pub struct GuardedBuffer {
    /// Start of the whole mapping (the leading guard page).
    map_base: NonNull<u8>,
    map_len: usize,
    /// First byte of the buffer.
    start: NonNull<u8>,
    len: usize,
    align: usize,
    tail_gap: usize,
}

// SAFETY: the buffer exclusively owns its mapping, and mutation needs `&mut self`, exactly as
// for `Vec<u8>`.
unsafe impl Send for GuardedBuffer {}
// SAFETY: `&GuardedBuffer` only gives read access (`as_slice`, `as_ptr`).
unsafe impl Sync for GuardedBuffer {}

impl GuardedBuffer {
    /// A buffer of `len` zero bytes whose last byte is immediately followed by a guard page.
    /// Its start has whatever alignment that leaves (`len`'s largest power-of-two factor, up
    /// to a page); see [`with_alignment`](Self::with_alignment) to choose it.
    pub fn new(len: usize) -> Result<GuardedBuffer, GuardError> {
        GuardedBuffer::with_alignment(len, 1, 0)
    }

    /// A buffer of `len` zero bytes whose start address is `offset` bytes past a multiple of
    /// `align` (a power of two up to the page size; `offset < align`). The end is as close
    /// to the trailing guard page as that allows: [`tail_gap`](Self::tail_gap) bytes, fewer
    /// than `align`, and zero whenever `len + offset` is a multiple of `align` — so with
    /// `align` equal to the element size, or `offset` chosen to suit `len`, the last element
    /// touches the guard page. A non-zero `offset` makes deliberately misaligned buffers, to
    /// show code relies only on natural alignment.
    pub fn with_alignment(
        len: usize,
        align: usize,
        offset: usize,
    ) -> Result<GuardedBuffer, GuardError> {
        let page = sys::page_size();
        if !align.is_power_of_two() || align > page || offset >= align {
            return Err(GuardError::BadPlacement {
                align,
                offset,
                page_size: page,
            });
        }
        let oom = GuardError::OutOfMemory { bytes: len };
        // Room for the buffer plus the worst-case tail gap, in whole pages, plus two guards.
        let data_len = len
            .checked_add(align - 1)
            .and_then(|n| sys::round_to_pages(n, page))
            .ok_or(oom.clone())?;
        let map_len = data_len.checked_add(2 * page).ok_or(oom.clone())?;
        let map_base =
            sys::map_anonymous(map_len, Protection::None).map_err(|errno| match errno {
                Errno(libc::ENOMEM) => oom.clone(),
                errno => GuardError::System { bytes: len, errno },
            })?;
        let mut buffer = GuardedBuffer {
            map_base,
            map_len,
            start: map_base,
            len: 0,
            align,
            tail_gap: 0,
        };
        if data_len > 0 {
            // SAFETY: the data pages start one page into the mapping we just made, and
            // `page + data_len <= map_len`; no reference into the mapping exists yet.
            let protected =
                unsafe { sys::protect(map_base.add(page), data_len, Protection::ReadWrite) };
            protected.map_err(|errno| match errno {
                Errno(libc::ENOMEM) => oom.clone(),
                errno => GuardError::System { bytes: len, errno },
            })?;
        }
        // The highest start (so the end is nearest the trailing guard) that is `offset` past a multiple of `align`
        // (addresses relative to the page-aligned mapping base keep every alignment). It
        // cannot fall below the data pages because `data_len >= len + align - 1`.
        let highest = page + data_len - len;
        let start = highest - (highest - offset) % align;
        buffer.tail_gap = highest - start;
        // SAFETY: `page <= start <= page + data_len - len`, inside the mapping.
        buffer.start = unsafe { map_base.add(start) };
        buffer.len = len;
        Ok(buffer)
    }

    /// A guarded buffer holding a copy of `bytes`, placed as by [`new`](Self::new).
    pub fn from_bytes(bytes: &[u8]) -> Result<GuardedBuffer, GuardError> {
        let mut buffer = GuardedBuffer::new(bytes.len())?;
        buffer.as_mut_slice().copy_from_slice(bytes);
        Ok(buffer)
    }

    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no bytes (its pointer then points at the trailing guard page
    /// unless an alignment left a gap).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first byte; `as_ptr().add(len())` is the first inaccessible byte when
    /// [`tail_gap`](Self::tail_gap) is zero.
    pub fn as_ptr(&self) -> *const u8 {
        self.start.as_ptr()
    }

    /// The first byte, for writing through (for example by generated code).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.start.as_ptr()
    }

    /// The buffer's bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `start..start + len` is inside the read+write part of our mapping, which
        // lives as long as `self`; `&self` rules out concurrent writes.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }

    /// The buffer's bytes, for writing.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }

    /// The alignment the start was placed at (1 for [`new`](Self::new)).
    pub fn alignment(&self) -> usize {
        self.align
    }

    /// The start address's offset from a multiple of [`alignment`](Self::alignment).
    pub fn align_offset(&self) -> usize {
        self.start.as_ptr() as usize % self.align
    }

    /// Accessible bytes between the buffer's end and the trailing guard page (0 unless an
    /// alignment forced the start down; always less than the alignment).
    pub fn tail_gap(&self) -> usize {
        self.tail_gap
    }

    /// Accessible bytes between the leading guard page and the buffer's start.
    pub fn head_gap(&self) -> usize {
        self.start.as_ptr() as usize - self.map_base.as_ptr() as usize - sys::page_size()
    }
}

impl Drop for GuardedBuffer {
    fn drop(&mut self) {
        // SAFETY: `map_base..map_base + map_len` is exactly the mapping made in
        // `with_alignment`, and every slice into it borrows `self`, so none outlives this.
        // Failure is impossible for a whole existing mapping; if it happened, we would leak.
        let _ = unsafe { sys::unmap(self.map_base, self.map_len) };
    }
}

impl fmt::Debug for GuardedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedBuffer")
            .field("start", &self.start)
            .field("len", &self.len)
            .field("alignment", &self.align)
            .field("tail_gap", &self.tail_gap)
            .finish()
    }
}

#[cfg(test)]
mod tests;
