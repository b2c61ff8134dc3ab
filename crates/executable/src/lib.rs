//! Making compiled code live on this CPU (internal crate; the public API is `accy-session`).
//!
//! Every earlier stage hands on inert data; this crate is the only place where memory becomes
//! executable and function pointers exist (STYLE.md item 2). It knows nothing of IR ops or of
//! the compiler. This part is the device-level core, independent of the artifact format:
//!
//! - [`code_memory`]: [`CodeMemory`], executable memory with W^X as a type. Code is written
//!   into a [`WritableCode`] (read+write, never executable) and published once into a
//!   `CodeMemory` (read+execute, never writable), one fresh mapping per artifact, unmapped on
//!   drop. Callable [`CodeEntry`]s borrow it. The OS calls sit behind [`CodeMemoryProvider`].
//! - [`cpu`]: [`CpuInfo`], the host's architecture, usable features (maskable to a lower
//!   [`Tier`] with `ACCY_CPU_FEATURES_MAX`), cache sizes, core count and preferred buffer
//!   alignment.
//! - [`guard`]: test support — [`GuardedBuffer`], bytes placed flush against inaccessible
//!   pages so tests prove generated code never touches memory outside its buffers.
//!
//! # Thread contract
//! - [`CodeMemory`] is `Send + Sync` (checked at compile time): once published its bytes never
//!   change, so it can be shared (e.g. in an `Arc`) and its entries called from many threads
//!   at once. [`CodeEntry`] is `Copy + Send + Sync` and borrows it.
//! - [`WritableCode`] is `Send + Sync` too, but writing needs `&mut`, so one thread at a time.
//! - [`CpuInfo`] is a plain `Clone + Send + Sync` value, detected when constructed. There is no
//!   lazily initialised process-wide mutable state anywhere in this crate.
//! - [`GuardedBuffer`] is `Send + Sync` with `Vec<u8>`'s rules.
//!
//! Unix only (it maps memory with `mmap`/`mprotect`).

#![deny(missing_docs)]

pub mod code_memory;
pub mod cpu;
pub mod guard;
mod sys;
#[cfg(test)]
mod test_support;

pub use code_memory::{
    CodeEntry, CodeMemory, CodeMemoryError, CodeMemoryProvider, EntryFn, MappedRegion,
    MmapProvider, WritableCode,
};
pub use cpu::{mask_to_tier, Arch, CacheInfo, CpuError, CpuFeature, CpuFeatures, CpuInfo, Tier};
pub use guard::{GuardError, GuardedBuffer};
pub use sys::{Errno, Protection};
