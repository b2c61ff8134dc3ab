//! Executable memory with W^X as a type: [`WritableCode`] (read+write, never executable)
//! becomes [`CodeMemory`] (read+execute, never writable) through one `publish`.
//!
//! Each compiled artifact gets its own fresh page-aligned mapping, sized for its code, which
//! is published once and unmapped on drop — so releasing a program frees its code, and live
//! code is never re-protected or grown. The protocol, in order:
//!
//! 1. validate the layout (non-empty, page rounding without overflow) and map read+write;
//! 2. write the code (the rest of the last page is filled with trap instructions);
//! 3. synchronize the instruction cache with the written bytes;
//! 4. flip the mapping to read+execute;
//! 5. run the pipeline barrier.
//!
//! Steps 3–5 are [`WritableCode::publish`], which consumes the writable value, so publishing
//! twice is a compile error. Entry points ([`CodeEntry`]) borrow the `CodeMemory`.
//! The operating-system calls sit behind [`CodeMemoryProvider`].

mod entry;
mod provider;

use std::fmt;

pub use entry::{CodeEntry, EntryFn};
pub use provider::{pipeline_barrier, sync_icache, CodeMemoryProvider, MappedRegion, MmapProvider};

use crate::sys::{self, Errno, Protection};

/// Why code memory could not be mapped, published or entered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodeMemoryError {
    /// There was no code to map: a caller bug (a compiler never emits an empty artifact).
    #[error("code is empty: there is nothing to map")]
    Empty,
    /// The system had no memory (or address space) for `bytes` bytes of code, or the size
    /// overflowed when rounded up to pages. A limit: freeing other programs may help.
    #[error("out of memory mapping {bytes} bytes of code")]
    OutOfMemory {
        /// The number of bytes requested.
        bytes: usize,
    },
    /// Mapping failed for a reason other than memory (for example a resource limit).
    #[error("mapping {bytes} bytes of code memory failed: {errno}")]
    Map {
        /// The number of bytes requested.
        bytes: usize,
        /// The system's error number.
        errno: Errno,
    },
    /// Changing the protection failed; `EACCES` usually means a security policy (SELinux
    /// `execmem`, PaX, a hardened runtime) forbids executable memory in this process.
    #[error("changing {bytes} bytes of code memory to {to} failed: {errno}")]
    Protect {
        /// The protection that was requested.
        to: Protection,
        /// The size of the range.
        bytes: usize,
        /// The system's error number.
        errno: Errno,
    },
    /// The pipeline barrier (AArch64 `membarrier`) failed unexpectedly.
    #[error("instruction pipeline barrier failed: {errno}")]
    Barrier {
        /// The system's error number.
        errno: Errno,
    },
    /// An entry offset does not lie inside the code: a bug in whoever computed it (for
    /// example an artifact whose kernel table and code disagree).
    #[error("entry offset {offset} is outside the code ({code_len} bytes)")]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: u32,
        /// The length of the code.
        code_len: usize,
    },
    /// An entry offset is not a multiple of the host's instruction alignment (4 on AArch64).
    #[error("entry offset {offset} is not a multiple of the instruction alignment {alignment}")]
    MisalignedEntry {
        /// The offset asked for.
        offset: u32,
        /// The required alignment in bytes.
        alignment: u32,
    },
    /// A [`CodeMemoryProvider`] broke its contract (a page size that is not a power of two,
    /// or a region of the wrong size or alignment): always a bug in that provider.
    #[error("code memory provider broke its contract: {what}")]
    ProviderContract {
        /// What was wrong.
        what: &'static str,
    },
}

/// The byte that fills a mapping beyond the code, so that running off the end traps:
/// `int3` on x86-64; on AArch64 zero words already decode as `udf #0`.
const TRAP_FILL: u8 = if cfg!(any(target_arch = "x86", target_arch = "x86_64")) {
    0xCC
} else {
    0
};

/// The alignment every instruction address must have on the host.
const INSTRUCTION_ALIGNMENT: u32 = if cfg!(target_arch = "aarch64") { 4 } else { 1 };

/// One mapping from a provider; unmaps on drop, whatever state it reached.
struct Mapping<P: CodeMemoryProvider> {
    provider: P,
    region: MappedRegion,
}

// SAFETY: a `Mapping` exclusively owns its pages (the provider contract says nothing else
// aliases them), so moving it to another thread moves that ownership; through `&Mapping`
// this module only ever reads the pages, so sharing it is sharing read-only memory. The
// provider itself is `Send + Sync` by its trait's bounds.
unsafe impl<P: CodeMemoryProvider> Send for Mapping<P> {}
// SAFETY: see the `Send` impl above: shared access is read-only.
unsafe impl<P: CodeMemoryProvider> Sync for Mapping<P> {}

impl<P: CodeMemoryProvider> Mapping<P> {
    /// The first `len` bytes (at most the region's length) as a shared slice.
    fn bytes(&self, len: usize) -> &[u8] {
        let len = len.min(self.region.len());
        // SAFETY: the region is mapped and readable (read+write or read+execute) for as long
        // as `self` lives, `len` is within it, and nothing writes to it while `&self` is held
        // (writes need `&mut WritableCode`).
        unsafe { std::slice::from_raw_parts(self.region.base().as_ptr(), len) }
    }
}

impl<P: CodeMemoryProvider> Drop for Mapping<P> {
    fn drop(&mut self) {
        // SAFETY: the region came from this provider's `map_writable` and is unmapped only
        // here; every borrow of it (slices, `CodeEntry`) is tied to a borrow of the owner,
        // so none outlives this drop.
        unsafe { self.provider.unmap(self.region) };
    }
}

/// Code memory being written: readable and writable, never executable.
///
/// Write the code through [`as_mut_slice`](Self::as_mut_slice), then call
/// [`publish`](Self::publish). Dropping it instead unmaps it.
pub struct WritableCode<P: CodeMemoryProvider = MmapProvider> {
    mapping: Mapping<P>,
    code_len: usize,
}

impl WritableCode<MmapProvider> {
    /// Maps room for `code_len` bytes of code with the default [`MmapProvider`].
    pub fn new(code_len: usize) -> Result<Self, CodeMemoryError> {
        WritableCode::with_provider(MmapProvider, code_len)
    }
}

impl<P: CodeMemoryProvider> WritableCode<P> {
    /// Maps room for `code_len` bytes of code (rounded up to whole pages) from `provider`.
    /// The bytes start out as trap instructions.
    pub fn with_provider(provider: P, code_len: usize) -> Result<Self, CodeMemoryError> {
        if code_len == 0 {
            return Err(CodeMemoryError::Empty);
        }
        let page = provider.page_size();
        if !page.is_power_of_two() {
            return Err(CodeMemoryError::ProviderContract {
                what: "page size is not a power of two",
            });
        }
        let mapped_len = sys::round_to_pages(code_len, page)
            .ok_or(CodeMemoryError::OutOfMemory { bytes: code_len })?;
        let region = provider.map_writable(mapped_len)?;
        let mapping = Mapping { provider, region };
        if region.len() != mapped_len || !(region.base().as_ptr() as usize).is_multiple_of(page) {
            return Err(CodeMemoryError::ProviderContract {
                what: "mapped region has the wrong length or alignment",
            });
        }
        // SAFETY: the region is freshly mapped read+write, `mapped_len` bytes long, and
        // nothing else references it yet.
        unsafe { std::ptr::write_bytes(region.base().as_ptr(), TRAP_FILL, mapped_len) };
        Ok(WritableCode { mapping, code_len })
    }

    /// The code bytes to fill in (exactly `code_len` bytes).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the region is mapped read+write while `self` is a `WritableCode`,
        // `code_len <= region.len()` was checked at construction, and `&mut self` makes
        // this the only reference into it.
        unsafe {
            std::slice::from_raw_parts_mut(self.mapping.region.base().as_ptr(), self.code_len)
        }
    }

    /// The number of code bytes.
    pub fn code_len(&self) -> usize {
        self.code_len
    }

    /// Makes the code executable and no longer writable: instruction-cache sync, flip to
    /// read+execute, pipeline barrier. On error the mapping is unmapped.
    ///
    /// `publish` consumes `self`, so code cannot be published twice:
    ///
    /// ```compile_fail,E0382
    /// let mut w = accy_executable::WritableCode::new(1).unwrap();
    /// w.as_mut_slice()[0] = 0xC3;
    /// let first = w.publish();
    /// let second = w.publish(); // error[E0382]: use of moved value: `w`
    /// ```
    pub fn publish(self) -> Result<CodeMemory<P>, CodeMemoryError> {
        let WritableCode { mapping, code_len } = self;
        mapping.provider.sync_icache(mapping.bytes(code_len));
        // SAFETY: the region came from this provider and is still mapped (we own it);
        // `self` was consumed, so no `&mut` slice from `as_mut_slice` is alive.
        unsafe { mapping.provider.make_executable(mapping.region) }?;
        mapping.provider.pipeline_barrier()?;
        Ok(CodeMemory { mapping, code_len })
    }
}

impl<P: CodeMemoryProvider> fmt::Debug for WritableCode<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WritableCode")
            .field("base", &self.mapping.region.base())
            .field("code_len", &self.code_len)
            .field("mapped_len", &self.mapping.region.len())
            .field("provider", &self.mapping.provider)
            .finish()
    }
}

/// Published machine code: readable and executable, never writable, unmapped on drop.
///
/// `Send + Sync`: the bytes never change after publishing, so one `CodeMemory` can be shared
/// (e.g. in an `Arc`) and its entries called from many threads at once.
pub struct CodeMemory<P: CodeMemoryProvider = MmapProvider> {
    mapping: Mapping<P>,
    code_len: usize,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CodeMemory>();
    assert_send_sync::<WritableCode>();
    assert_send_sync::<CodeEntry<'static>>();
};

impl CodeMemory<MmapProvider> {
    /// Maps, writes and publishes `code` with the default [`MmapProvider`].
    pub fn from_code(code: &[u8]) -> Result<Self, CodeMemoryError> {
        CodeMemory::from_code_with(MmapProvider, code)
    }
}

impl<P: CodeMemoryProvider> CodeMemory<P> {
    /// Maps, writes and publishes `code` with `provider`.
    pub fn from_code_with(provider: P, code: &[u8]) -> Result<Self, CodeMemoryError> {
        let mut writable = WritableCode::with_provider(provider, code.len())?;
        writable.as_mut_slice().copy_from_slice(code);
        writable.publish()
    }

    /// The published code bytes (exactly as written, without the trailing trap fill).
    pub fn code(&self) -> &[u8] {
        self.mapping.bytes(self.code_len)
    }

    /// The number of code bytes.
    pub fn code_len(&self) -> usize {
        self.code_len
    }

    /// The size of the whole mapping (the code rounded up to pages).
    pub fn mapped_len(&self) -> usize {
        self.mapping.region.len()
    }

    /// The address of the first code byte, for diagnostics and profiler maps.
    pub fn as_ptr(&self) -> *const u8 {
        self.mapping.region.base().as_ptr()
    }

    /// The provider that mapped this memory.
    pub fn provider(&self) -> &P {
        &self.mapping.provider
    }

    /// An entry point `offset` bytes into the code, checked to lie inside it and to be
    /// instruction aligned. The entry borrows `self`, so the code stays mapped while it lives.
    pub fn entry(&self, offset: u32) -> Result<CodeEntry<'_>, CodeMemoryError> {
        let start = check_entry_offset(offset, self.code_len, INSTRUCTION_ALIGNMENT)?;
        let tail = self
            .code()
            .get(start..)
            .ok_or(CodeMemoryError::OffsetOutOfRange {
                offset,
                code_len: self.code_len,
            })?;
        Ok(CodeEntry::new(tail, offset))
    }
}

impl<P: CodeMemoryProvider> fmt::Debug for CodeMemory<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeMemory")
            .field("base", &self.as_ptr())
            .field("code_len", &self.code_len)
            .field("mapped_len", &self.mapped_len())
            .field("provider", &self.mapping.provider)
            .finish()
    }
}

/// Checks an entry offset against the code length and instruction alignment; returns it as
/// an index.
fn check_entry_offset(
    offset: u32,
    code_len: usize,
    alignment: u32,
) -> Result<usize, CodeMemoryError> {
    let start = usize::try_from(offset)
        .ok()
        .filter(|&start| start < code_len)
        .ok_or(CodeMemoryError::OffsetOutOfRange { offset, code_len })?;
    if !offset.is_multiple_of(alignment) {
        return Err(CodeMemoryError::MisalignedEntry { offset, alignment });
    }
    Ok(start)
}

#[cfg(test)]
mod tests;
