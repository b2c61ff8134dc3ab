//! Thin, checked wrappers over the kernel's anonymous-mapping calls (`mmap`, `mprotect`,
//! `munmap`), shared by [`crate::code_memory`], [`crate::pages`] and `guard`.
//!
//! Every wrapper returns the `errno` of a failed call instead of panicking, so callers can
//! turn it into their own error variant with the sizes involved.

use std::fmt;
use std::ptr::NonNull;

/// An operating-system error number (`errno`) returned by a failed system call.
///
/// Carried inside this crate's errors so a caller can tell, for example, `ENOMEM` (a limit)
/// from `EACCES` (a policy such as SELinux `execmem` forbidding executable memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// The `errno` value the most recent failed system call on this thread left behind.
    pub(crate) fn last() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", std::io::Error::from_raw_os_error(self.0))
    }
}

/// Memory protection of a range of pages, as the kernel's `PROT_*` bits express it.
///
/// There is deliberately no read+write+execute value: this crate never asks for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protection {
    /// No access at all (guard pages).
    None,
    /// Readable and writable, never executable (code being written, data buffers).
    ReadWrite,
    /// Readable and executable, never writable (published code).
    ReadExecute,
    /// Readable only (frozen weights and their packed forms).
    ReadOnly,
}

impl Protection {
    fn bits(self) -> libc::c_int {
        match self {
            Protection::None => libc::PROT_NONE,
            Protection::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
            Protection::ReadExecute => libc::PROT_READ | libc::PROT_EXEC,
            Protection::ReadOnly => libc::PROT_READ,
        }
    }
}

impl fmt::Display for Protection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protection::None => "none",
            Protection::ReadWrite => "read+write",
            Protection::ReadExecute => "read+execute",
            Protection::ReadOnly => "read-only",
        })
    }
}

/// The size of a virtual-memory page on this host, in bytes (a power of two).
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf only reads a process-constant value; it has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    match usize::try_from(size) {
        Ok(size) if size.is_power_of_two() => size,
        // A kernel that cannot answer is one we do not run on in practice; 4 KiB is the
        // smallest page any supported target uses, so rounding to it never under-sizes.
        _ => 4096,
    }
}

/// Maps `len` bytes (a non-zero multiple of the page size) of fresh, zero-filled, private
/// anonymous memory with protection `prot`, its pages allocated as they are first touched.
/// Only guard-page test buffers want that: everything else accy maps is written in full at
/// once ([`map_anonymous_populated`]).
#[cfg(any(test, feature = "testing"))]
pub(crate) fn map_anonymous(len: usize, prot: Protection) -> Result<NonNull<u8>, Errno> {
    map_anonymous_with(len, prot, false)
}

/// Maps like `map_anonymous`, for memory the caller writes in full straight away (code,
/// weights and their packed forms): on Linux the kernel allocates every page within the one
/// call (`MAP_POPULATE`), which costs less than taking a page fault per page as the bytes are
/// written. Best effort: a page the kernel could not provide yet faults in later as usual; on
/// other systems the pages come as they are touched.
pub(crate) fn map_anonymous_populated(len: usize, prot: Protection) -> Result<NonNull<u8>, Errno> {
    map_anonymous_with(len, prot, true)
}

/// A private anonymous mapping, with `MAP_POPULATE` where the system has it when `populate` is
/// set.
fn map_anonymous_with(len: usize, prot: Protection, populate: bool) -> Result<NonNull<u8>, Errno> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let extra = if populate { libc::MAP_POPULATE } else { 0 };
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let extra = {
        let _ = populate;
        0
    };
    // SAFETY: a private anonymous mapping at an address of the kernel's choosing cannot
    // alias or replace any existing memory; the arguments are plain values, and `extra` is
    // 0 or `MAP_POPULATE`, which changes only when the pages are allocated.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot.bits(),
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(Errno::last());
    }
    NonNull::new(ptr.cast::<u8>()).ok_or(Errno(libc::ENOMEM))
}

/// Changes the protection of `len` bytes at `ptr`.
///
/// # Safety
/// `ptr..ptr + len` must be page aligned and lie inside one mapping the caller owns, and no
/// live Rust reference may point into it in a way the new protection would break (for
/// example a `&mut [u8]` while the range becomes read-only).
pub(crate) unsafe fn protect(ptr: NonNull<u8>, len: usize, prot: Protection) -> Result<(), Errno> {
    // SAFETY: the caller guarantees the range is owned, page aligned and unborrowed.
    let rc = unsafe { libc::mprotect(ptr.as_ptr().cast(), len, prot.bits()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

/// Unmaps `len` bytes at `ptr`.
///
/// # Safety
/// `ptr..ptr + len` must be exactly a mapping the caller owns (from `map_anonymous` or
/// [`map_anonymous_populated`]), and nothing may use it afterwards.
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, len: usize) -> Result<(), Errno> {
    // SAFETY: the caller owns the mapping and guarantees it is no longer used.
    let rc = unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

/// Rounds `len` up to a whole number of pages of `page_size` bytes, or `None` on overflow.
pub(crate) fn round_to_pages(len: usize, page_size: usize) -> Option<usize> {
    debug_assert!(page_size.is_power_of_two());
    len.checked_add(page_size - 1).map(|n| n & !(page_size - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_is_a_power_of_two() {
        let p = page_size();
        assert!(p.is_power_of_two() && p >= 4096, "page size {p}");
    }

    #[test]
    fn rounding_to_pages() {
        assert_eq!(round_to_pages(0, 4096), Some(0));
        assert_eq!(round_to_pages(1, 4096), Some(4096));
        assert_eq!(round_to_pages(4096, 4096), Some(4096));
        assert_eq!(round_to_pages(4097, 4096), Some(8192));
        assert_eq!(round_to_pages(usize::MAX - 10, 4096), None);
    }

    #[test]
    fn errno_displays_the_system_message() {
        let text = Errno(libc::ENOMEM).to_string();
        assert!(text.contains("os error 12"), "{text}");
    }

    #[test]
    fn impossible_mapping_reports_enomem() {
        // Larger than any 57-bit user address space, so it must fail without touching memory.
        let err = map_anonymous(1 << 62, Protection::ReadWrite).unwrap_err();
        assert_eq!(err, Errno(libc::ENOMEM));
    }
}
