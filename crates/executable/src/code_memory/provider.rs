//! The seam between [`CodeMemory`](super::CodeMemory) and the operating system: mapping pages,
//! flipping them to read+execute, and keeping the instruction stream coherent.
//!
//! [`MmapProvider`] is the default (plain `mmap`/`mprotect`). A platform that needs something
//! else — macOS `MAP_JIT` with `pthread_jit_write_protect_np`, a pre-reserved arena, a
//! sandbox's own allocator — implements [`CodeMemoryProvider`]; every type in its signature
//! is public, and [`sync_icache`] / [`pipeline_barrier`] give it the host's cache maintenance.

use std::fmt;
use std::ptr::NonNull;

use super::CodeMemoryError;
use crate::sys::{self, Errno, Protection};

/// A page-aligned range of memory that a [`CodeMemoryProvider`] mapped for one
/// [`CodeMemory`](super::CodeMemory).
///
/// A plain description (base and length); it owns nothing. The [`CodeMemory`](super::CodeMemory)
/// that holds it is what hands it back to the provider to unmap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappedRegion {
    base: NonNull<u8>,
    len: usize,
}

impl MappedRegion {
    /// Describes `len` bytes starting at `base`. Providers build their return values with it.
    pub fn new(base: NonNull<u8>, len: usize) -> MappedRegion {
        MappedRegion { base, len }
    }

    /// The first byte of the region (page aligned).
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// The region's length in bytes (a whole number of pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region has no bytes (never true for a region a provider returned).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// How [`CodeMemory`](super::CodeMemory) obtains, protects and releases pages.
///
/// `CodeMemory` calls the methods in exactly this order, all on the thread that publishes:
/// [`map_writable`](Self::map_writable), then (after writing the code)
/// [`sync_icache`](Self::sync_icache), [`make_executable`](Self::make_executable),
/// [`pipeline_barrier`](Self::pipeline_barrier); and [`unmap`](Self::unmap) exactly once when
/// the memory is dropped, also after a failed step. A provider that toggles per-thread write
/// permission (macOS `MAP_JIT`) can rely on the first four calls happening on one thread.
///
/// # Safety
/// Implementors promise that:
/// - `map_writable(len)` returns a fresh region of exactly `len` bytes whose base is aligned
///   to [`page_size`](Self::page_size), readable and writable, **not executable**, and aliased
///   by nothing else until `unmap`;
/// - after `make_executable` returns `Ok`, the region is readable and executable and **not
///   writable** (never both at once), and its bytes are those written before the call;
/// - `page_size` always returns the same power of two.
pub unsafe trait CodeMemoryProvider: Send + Sync + fmt::Debug {
    /// The page size regions are aligned and sized to (a power of two).
    fn page_size(&self) -> usize;

    /// Maps `len` bytes (a non-zero multiple of [`page_size`](Self::page_size)) readable and
    /// writable, not executable. Running out of memory is
    /// [`CodeMemoryError::OutOfMemory`].
    fn map_writable(&self, len: usize) -> Result<MappedRegion, CodeMemoryError>;

    /// Makes a region from [`map_writable`](Self::map_writable) readable and executable and no
    /// longer writable.
    ///
    /// # Safety
    /// `region` must come from this provider's `map_writable`, must not be unmapped yet, and
    /// no reference that writes through it may be live.
    unsafe fn make_executable(&self, region: MappedRegion) -> Result<(), CodeMemoryError>;

    /// Makes freshly written `code` visible to instruction fetch (data-cache clean and
    /// instruction-cache invalidate on AArch64; nothing on x86-64). The default is the host's
    /// [`sync_icache`].
    fn sync_icache(&self, code: &[u8]) {
        sync_icache(code);
    }

    /// Discards instructions a core may have fetched before the code was published. The
    /// default is the host's [`pipeline_barrier`].
    fn pipeline_barrier(&self) -> Result<(), CodeMemoryError> {
        pipeline_barrier()
    }

    /// Releases a region from [`map_writable`](Self::map_writable).
    ///
    /// # Safety
    /// `region` must come from this provider's `map_writable` and not be unmapped yet;
    /// nothing may read or run it afterwards.
    unsafe fn unmap(&self, region: MappedRegion);
}

/// The default provider: private anonymous `mmap` (on Linux its pages allocated in the call),
/// `mprotect` to read+execute, `munmap`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmapProvider;

// SAFETY: regions come from `sys::map_anonymous_populated` with `page_size()`-multiple
// lengths (fresh, private, page aligned, read+write only); `make_executable` requests exactly
// read+execute; the page size is the kernel's constant one.
unsafe impl CodeMemoryProvider for MmapProvider {
    fn page_size(&self) -> usize {
        sys::page_size()
    }

    fn map_writable(&self, len: usize) -> Result<MappedRegion, CodeMemoryError> {
        // Every byte is written at once (the code, then trap fill), so on Linux the pages
        // are allocated in the mapping call instead of faulted in one by one.
        match sys::map_anonymous_populated(len, Protection::ReadWrite) {
            Ok(base) => Ok(MappedRegion::new(base, len)),
            Err(Errno(libc::ENOMEM)) => Err(CodeMemoryError::OutOfMemory { bytes: len }),
            Err(errno) => Err(CodeMemoryError::Map { bytes: len, errno }),
        }
    }

    unsafe fn make_executable(&self, region: MappedRegion) -> Result<(), CodeMemoryError> {
        // SAFETY: the caller guarantees the region is one of ours, still mapped, and not
        // written through any live reference, so dropping write permission breaks nothing.
        unsafe { sys::protect(region.base(), region.len(), Protection::ReadExecute) }.map_err(
            |errno| CodeMemoryError::Protect {
                to: Protection::ReadExecute,
                bytes: region.len(),
                errno,
            },
        )
    }

    unsafe fn unmap(&self, region: MappedRegion) {
        // SAFETY: the caller guarantees the region is exactly one of our mappings and unused
        // from now on. munmap of a whole existing mapping cannot fail; if a broken caller
        // made it fail, the pages merely stay mapped (a leak, not unsoundness).
        let _ = unsafe { sys::unmap(region.base(), region.len()) };
    }
}

/// The host's instruction-cache maintenance for freshly written `code`.
///
/// On x86-64 the hardware keeps instruction fetch coherent with stores, so this does nothing;
/// on AArch64 it cleans the data cache and invalidates the instruction cache for the range
/// (via `dynasmrt::cache_control`, which also covers macOS).
pub fn sync_icache(code: &[u8]) {
    #[cfg(target_arch = "aarch64")]
    dynasmrt::cache_control::synchronize_icache(code);
    #[cfg(not(target_arch = "aarch64"))]
    let _ = code;
}

/// The host's pipeline barrier after code was published.
///
/// x86-64 needs none: its instruction fetch is coherent with stores, and a fresh mapping
/// cannot be in any core's pipeline (unmapping an earlier one at the same address interrupted
/// every core that used it, and interrupt return serializes). On AArch64 this runs `isb` on the calling
/// core and, on Linux, `membarrier(PRIVATE_EXPEDITED_SYNC_CORE)` so every other core running
/// this process does the same. Kernels older than 4.16 lack that command; there the barrier is
/// the local `isb` only, and another thread is safe once it has passed through the kernel
/// (which any blocking hand-off of the code does), since exception return synchronizes context.
pub fn pipeline_barrier() -> Result<(), CodeMemoryError> {
    #[cfg(target_arch = "aarch64")]
    {
        dynasmrt::cache_control::prepare_for_execution(&[]);
        #[cfg(target_os = "linux")]
        match membarrier_sync_core() {
            Ok(()) => {}
            Err(Errno(libc::EINVAL | libc::ENOSYS | libc::EPERM)) => {}
            Err(errno) => return Err(CodeMemoryError::Barrier { errno }),
        }
    }
    Ok(())
}

/// Asks Linux to run a core-serializing instruction on every CPU currently running a thread
/// of this process. Registration is idempotent (the kernel returns early once registered), so
/// it is repeated here instead of keeping process-wide "registered" state.
#[cfg(target_os = "linux")]
#[cfg_attr(
    not(target_arch = "aarch64"),
    allow(
        dead_code,
        reason = "only AArch64 needs it; still built and tested on every Linux"
    )
)]
pub(crate) fn membarrier_sync_core() -> Result<(), Errno> {
    // From <linux/membarrier.h>; the libc crate does not export them on every target.
    const CMD_PRIVATE_EXPEDITED_SYNC_CORE: libc::c_int = 1 << 5;
    const CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: libc::c_int = 1 << 6;
    for cmd in [
        CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE,
        CMD_PRIVATE_EXPEDITED_SYNC_CORE,
    ] {
        let flags: libc::c_uint = 0;
        let cpu_id: libc::c_int = 0;
        // SAFETY: membarrier takes three integers and reads or writes no user memory.
        let rc = unsafe { libc::syscall(libc::SYS_membarrier, cmd, flags, cpu_id) };
        if rc != 0 {
            return Err(Errno::last());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_accessors() {
        let base = NonNull::<u8>::dangling();
        let r = MappedRegion::new(base, 8192);
        assert_eq!((r.base(), r.len(), r.is_empty()), (base, 8192, false));
        assert!(MappedRegion::new(base, 0).is_empty());
    }

    #[test]
    fn mmap_provider_maps_and_reports_enomem() {
        let p = MmapProvider;
        let page = p.page_size();
        let r = p.map_writable(page).unwrap();
        assert_eq!(r.len(), page);
        assert_eq!(r.base().as_ptr() as usize % page, 0);
        // SAFETY: `r` came from this provider and nothing references it.
        unsafe { p.unmap(r) };
        assert_eq!(
            p.map_writable(1 << 62).unwrap_err(),
            CodeMemoryError::OutOfMemory { bytes: 1 << 62 }
        );
    }

    #[test]
    fn host_barriers_succeed() {
        sync_icache(&[0xC3]);
        assert_eq!(pipeline_barrier(), Ok(()));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn membarrier_is_supported_or_cleanly_refused() {
        // Supported on x86-64 and AArch64 since Linux 4.16; a seccomp filter or an old kernel
        // refuses it with one of these, which `pipeline_barrier` treats as "local isb only".
        match membarrier_sync_core() {
            Ok(()) => {}
            Err(Errno(e)) => assert!(
                [libc::EINVAL, libc::ENOSYS, libc::EPERM].contains(&e),
                "unexpected errno {e}"
            ),
        }
    }
}
