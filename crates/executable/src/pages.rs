//! [`Pages`] and [`FrozenPages`]: memory for data written once and then only read — weights
//! copied in, and the packed forms computed from them.
//!
//! A block is a private anonymous mapping of whole pages, writable while it is filled and then
//! frozen with `mprotect(PROT_READ)`. Validation already refuses every command that writes a
//! weight, but it cannot see inside machine code; with the pages read-only, a kernel that
//! broke its contract faults at the first write instead of silently corrupting weights that
//! every plan and every inference slot shares. A page-aligned start also satisfies every
//! alignment a slot can ask for (up to a page).
//!
//! On Linux a block's pages are allocated when it is mapped (`MAP_POPULATE`, best effort),
//! since it is filled at once: a page fault per 4 KiB page while weights were copied in or
//! packed made `accy bench examples/mlp.accy`'s packing (2.7 MB of packed forms, from 2.7 MB
//! of weights) take 1.86 ms, against 1.19 ms populated (Zen 3 VM, pinned, three alternating
//! runs each).

use std::fmt;
use std::ptr::NonNull;

use crate::sys::{self, Errno, Protection};

/// A block of pages could not be mapped or protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PagesFailure {
    /// The bytes asked for.
    pub(crate) bytes: usize,
    /// The system's error (`ENOMEM` when memory or address space ran out, or the size
    /// overflowed once rounded to pages).
    pub(crate) errno: Errno,
}

/// Bytes past the end of every block that stay mapped, readable and present
/// ([`touch_slack`]): a vector load whose masked-off lanes reach past a block's end (the
/// AVX-512 tail of a row) then never touches an absent page. Each such access costs about
/// 150 ns (AMD Zen 5, measured: one that crosses into a present page costs nothing), which
/// made a 16384×1024 layer norm whose rows end in masked tails 2.5× slower when its beta was
/// the last weight of a block (10 ms against 4 ms). One 64-byte vector is enough: no access
/// reaches further past its binding.
pub(crate) const READABLE_SLACK: usize = 64;

/// Reads the first and the last byte of the [`READABLE_SLACK`] after `len` bytes at `ptr`,
/// so the pages they lie in are present: a page of a fresh mapping (or of fresh memory from
/// the allocator) is mapped in by its first access, and an access with masked-off lanes
/// faults nothing in, so without this the slack would stay absent and every masked access
/// into it would pay the cost the slack is there to avoid.
///
/// # Safety
/// `ptr + len .. ptr + len + READABLE_SLACK` must be allocated, initialised and readable.
pub(crate) unsafe fn touch_slack(ptr: *const u8, len: usize) {
    // SAFETY: both bytes lie in the range the caller vouches for.
    unsafe {
        std::ptr::read_volatile(ptr.add(len));
        std::ptr::read_volatile(ptr.add(len + READABLE_SLACK - 1));
    }
}

/// The address a zero-length block reports: non-null and page aligned, never dereferenced.
fn empty_address() -> NonNull<u8> {
    NonNull::new(std::ptr::without_provenance_mut::<u8>(sys::page_size()))
        .unwrap_or(NonNull::dangling())
}

/// A zero-filled, page-aligned block of `len` bytes, readable and writable until
/// [`Pages::freeze`], with [`READABLE_SLACK`] readable bytes after them. Unmapped on drop.
pub(crate) struct Pages {
    ptr: NonNull<u8>,
    len: usize,
    map_len: usize,
}

/// A block made read-only by [`Pages::freeze`]: its bytes never change again, and a write to
/// them faults. Shared freely (`Send + Sync`); unmapped on drop.
pub(crate) struct FrozenPages {
    ptr: NonNull<u8>,
    len: usize,
    map_len: usize,
}

// SAFETY: `Pages` exclusively owns its mapping, like a `Vec<u8>` its buffer; writing needs
// `&mut self`.
unsafe impl Send for Pages {}
// SAFETY: `&Pages` gives no access to the bytes at all.
unsafe impl Sync for Pages {}
// SAFETY: the mapping is owned and read-only for the rest of its life; nothing can write it.
unsafe impl Send for FrozenPages {}
// SAFETY: as above: shared references only ever read immutable bytes.
unsafe impl Sync for FrozenPages {}

impl Pages {
    /// A writable, zero-filled block of `len` bytes starting on a page boundary. A zero-length
    /// block maps nothing.
    pub(crate) fn new(len: usize) -> Result<Pages, PagesFailure> {
        let failure = |errno| PagesFailure { bytes: len, errno };
        if len == 0 {
            return Ok(Pages {
                ptr: empty_address(),
                len,
                map_len: 0,
            });
        }
        let map_len = len
            .checked_add(READABLE_SLACK)
            .and_then(|bytes| sys::round_to_pages(bytes, sys::page_size()))
            .ok_or(failure(Errno(libc::ENOMEM)))?;
        let ptr = sys::map_anonymous_populated(map_len, Protection::ReadWrite).map_err(failure)?;
        // SAFETY: `len + READABLE_SLACK <= map_len` bytes from `ptr` are mapped and readable
        // (zero-filled).
        unsafe { touch_slack(ptr.as_ptr(), len) };
        Ok(Pages { ptr, len, map_len })
    }

    /// The first byte, for writing through; valid for `len` bytes while `self` is not
    /// otherwise used.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The bytes, for writing.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping holds at least `len` zero-initialised, writable bytes (for
        // `len == 0` any non-null pointer is valid) and `&mut self` makes this the only
        // reference to them.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Makes the block read-only for the rest of its life.
    pub(crate) fn freeze(self) -> Result<FrozenPages, PagesFailure> {
        let this = std::mem::ManuallyDrop::new(self);
        let frozen = FrozenPages {
            ptr: this.ptr,
            len: this.len,
            map_len: this.map_len,
        };
        if frozen.map_len > 0 {
            // SAFETY: `ptr..ptr + map_len` is exactly the page-aligned mapping `Pages::new`
            // made, owned by `frozen` now, and `self` (consumed) held the only references.
            unsafe { sys::protect(frozen.ptr, frozen.map_len, Protection::ReadOnly) }.map_err(
                |errno| PagesFailure {
                    bytes: frozen.len,
                    errno,
                },
            )?;
        }
        Ok(frozen)
    }
}

impl FrozenPages {
    /// The number of bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The first byte, for reading only.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The bytes (for tests: the crate reads frozen blocks through raw pointers in runs).
    #[cfg(test)]
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping holds `len` initialised bytes that never change again (for
        // `len == 0` any non-null pointer is valid).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

/// Unmaps `map_len` bytes at `ptr` (nothing for an empty block). A failure cannot be reported
/// from `drop` and would only leak the range, so it is ignored.
fn unmap(ptr: NonNull<u8>, map_len: usize) {
    if map_len > 0 {
        // SAFETY: the caller owns exactly this mapping and is being dropped.
        let _ = unsafe { sys::unmap(ptr, map_len) };
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        unmap(self.ptr, self.map_len);
    }
}

impl Drop for FrozenPages {
    fn drop(&mut self) {
        unmap(self.ptr, self.map_len);
    }
}

impl fmt::Debug for Pages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl fmt::Debug for FrozenPages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrozenPages")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::mapping_perms;

    fn copy_of(bytes: &[u8]) -> FrozenPages {
        let mut pages = Pages::new(bytes.len()).unwrap();
        pages.as_mut_slice().copy_from_slice(bytes);
        pages.freeze().unwrap()
    }

    #[test]
    fn frozen_pages_are_page_aligned_read_only_and_hold_the_copy() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let frozen = copy_of(&bytes);
        assert_eq!(frozen.as_slice(), &bytes[..]);
        assert_eq!(frozen.as_ptr() as usize % sys::page_size(), 0);
        let perms = mapping_perms(frozen.as_ptr() as usize).unwrap();
        assert!(perms.starts_with("r--"), "{perms}");
        let last = frozen.as_ptr() as usize + bytes.len() - 1;
        assert!(mapping_perms(last).unwrap().starts_with("r--"));

        let empty = copy_of(&[]);
        assert_eq!(empty.len(), 0);
        assert_eq!(empty.as_slice(), &[] as &[u8]);
        assert_eq!(empty.as_ptr() as usize % sys::page_size(), 0);
    }

    #[test]
    fn writable_pages_are_zeroed_and_writable_until_frozen() {
        let mut pages = Pages::new(5000).unwrap();
        assert!(pages.as_mut_slice().iter().all(|&b| b == 0));
        let perms = mapping_perms(pages.as_mut_ptr() as usize).unwrap();
        assert!(perms.starts_with("rw-"), "{perms}");
        pages.as_mut_slice()[4999] = 7;
        let frozen = pages.freeze().unwrap();
        assert_eq!(frozen.as_slice()[4999], 7);
    }

    /// A block that fills its pages exactly still has a readable, present vector past its
    /// end ([`READABLE_SLACK`]). (On Linux the whole block is populated when mapped, so there
    /// this holds even without `touch_slack`, which other systems need.)
    #[test]
    fn blocks_end_in_a_readable_present_slack() {
        let exact = Pages::new(sys::page_size()).unwrap().freeze().unwrap();
        let end = exact.as_ptr() as usize + sys::page_size();
        let perms = mapping_perms(end + READABLE_SLACK - 1).unwrap();
        assert!(perms.starts_with('r'), "{perms}");
        // And present: a masked access into an absent page costs far more than one into a
        // present page (see `READABLE_SLACK`).
        let mut resident = [0u8; 1];
        // SAFETY: `end` is page aligned and the page from it is mapped (checked above);
        // `resident` has one entry for that one page.
        let status = unsafe { libc::mincore(end as *mut libc::c_void, 1, resident.as_mut_ptr()) };
        assert_eq!(status, 0);
        assert_eq!(resident[0] & 1, 1, "the slack page is not present");
    }

    /// A fresh block's pages are present before anything writes them (`MAP_POPULATE`), so
    /// filling it takes no page fault per page.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn fresh_blocks_are_populated() {
        let pages = 16;
        let mut block = Pages::new(pages * sys::page_size()).unwrap();
        let mut resident = vec![0u8; pages];
        // SAFETY: the block starts on a page and maps at least `pages` pages from there;
        // `resident` has one entry for each.
        let status = unsafe {
            libc::mincore(
                block.as_mut_ptr().cast(),
                pages * sys::page_size(),
                resident.as_mut_ptr(),
            )
        };
        assert_eq!(status, 0);
        assert!(resident.iter().all(|r| r & 1 == 1), "{resident:?}");
    }

    #[test]
    fn impossible_sizes_fail_with_enomem() {
        let failure = Pages::new(usize::MAX - 10).unwrap_err();
        assert_eq!(failure.errno, Errno(libc::ENOMEM));
        assert_eq!(Pages::new(1 << 62).unwrap_err().errno, Errno(libc::ENOMEM));
    }
}
