//! Making compiled code live on this CPU (internal crate; the public API is `accy-session`).
//!
//! Every earlier stage hands on inert data; this crate is the only place where memory becomes
//! executable and function pointers exist (STYLE.md item 2). It knows nothing of IR ops or of
//! the compiler: it depends on `accy-artifact` only.
//!
//! # Running an artifact
//!
//! ```text
//! Artifact ──load──▶ LoadedArtifact ──prepare_borrowed(inputs, outputs, &mut Scratch)──▶ Bindings ──run──▶ outputs written
//! ```
//!
//! - [`loaded`]: [`LoadedArtifact::load`] / [`LoadedArtifact::load_with_weights`] validate an
//!   artifact, refuse it unless its architecture and features match the host's [`CpuInfo`],
//!   publish its code, copy its constants into aligned memory and bind its weights.
//! - [`weights`]: [`Weights`], immutable named weights on read-only pages (copied once, or
//!   used in place from a file mapping), shared (an `Arc`) by every artifact bound to them,
//!   counted once; the packed forms computed from them live on read-only pages too.
//! - [`binding`]: [`prepare_borrowed`] checks caller buffers against the plan summary in one
//!   pass (counts, exact sizes, alignment, no output overlapping another buffer) and binds
//!   every slot; [`Scratch`] is the caller-owned, reusable memory of a run.
//! - [`run()`]: executes the launch plan (fill, copy, dispatch); after warm-up it allocates
//!   nothing. [`LoadedArtifact::invoke`] does both steps.
//! - [`inference`]: [`PreparedPlan`], a validated model plan (`accy_artifact::model`) over
//!   loaded fragments and shared weights, with a bounded number of inference slots, each
//!   owning private scratch at fixed addresses; [`slot_pool`]: [`SlotPool`], the eventually
//!   fair lending of those slots.
//! - [`imports`]: the import table generated code calls for transcendental math, implemented
//!   with exactly the reference interpreter's functions so results match bit for bit.
//! - [`pool`]: the [`Executor`] a run spreads a dispatch's workgroups over, and
//!   [`ThreadPool`], a fork-join pool with bounded spinning that never collapses when cores
//!   are stolen.
//! - [`fpenv`]: the floating-point environment every run sets for its kernels.
//!
//! # Device-level core
//!
//! - [`code_memory`]: [`CodeMemory`], executable memory with W^X as a type. Code is written
//!   into a [`WritableCode`] (read+write, never executable) and published once into a
//!   `CodeMemory` (read+execute, never writable), one fresh mapping per artifact, unmapped on
//!   drop. Callable [`CodeEntry`]s borrow it. The OS calls sit behind [`CodeMemoryProvider`].
//! - [`cpu`]: [`CpuInfo`], the host's architecture, usable features (maskable to a lower
//!   [`Tier`] with `ACCY_CPU_FEATURES_MAX`), cache sizes, core count and preferred buffer
//!   alignment. Architectures and feature sets are `accy-artifact`'s [`Arch`] and
//!   [`FeatureSet`], so an artifact's needs and the host's features compare directly.
//! - `guard` (feature `testing`, for tests only): `GuardedBuffer`, bytes placed flush against inaccessible
//!   pages so tests prove generated code never touches memory outside its buffers.
//!
//! # Thread contract
//! - [`CodeMemory`] is `Send + Sync` (checked at compile time): once published its bytes never
//!   change, so it can be shared (e.g. in an `Arc`) and its entries called from many threads
//!   at once. [`CodeEntry`] is `Copy + Send + Sync` and borrows it.
//! - [`WritableCode`] is `Send + Sync` too, but writing needs `&mut`, so one thread at a time.
//! - [`CpuInfo`] is a plain `Clone + Send + Sync` value, detected when constructed. There is no
//!   lazily initialised process-wide mutable state anywhere in this crate.
//! - `GuardedBuffer` (feature `testing`) is `Send + Sync` with `Vec<u8>`'s rules.
//! - [`LoadedArtifact`] and [`Weights`] are `Send + Sync` (checked at compile time) and never
//!   change after construction: any number of threads may run one `LoadedArtifact` at once,
//!   each with its own buffers and its own [`Scratch`].
//! - [`Scratch`] is `Send` but used by one run at a time (`&mut`); [`Bindings`] borrows the
//!   buffers and the scratch of one run. The import table is an immutable `static`.
//! - [`PreparedPlan`] is `Send + Sync` (checked at compile time): its runs take `&self`, each
//!   on an inference slot it holds alone for the run.
//!
//! Unix only (it maps memory with `mmap`/`mprotect`).

#![deny(missing_docs)]

mod aligned;
pub mod binding;
mod chain_order;
pub mod code_memory;
pub mod cpu;
mod derive;
pub mod fpenv;
#[cfg(any(test, feature = "testing"))]
pub mod guard;
pub mod imports;
pub mod inference;
mod load_error;
pub mod loaded;
mod overlap;
mod pages;
pub mod pool;
mod run;
pub mod slot_pool;
mod steps;
mod sys;
#[cfg(test)]
mod test_support;
pub mod weights;

pub use binding::{prepare_borrowed, BindingError, Bindings, BufferKind, Scratch};
pub use code_memory::{
    CodeEntry, CodeMemory, CodeMemoryError, CodeMemoryProvider, EntryFn, MappedRegion,
    MmapProvider, WritableCode,
};
pub use cpu::{
    detect_host_features, feature_tier, mask_to_tier, Arch, CacheInfo, CpuError, CpuFeature,
    CpuInfo, FeatureSet, Tier, LLC_PER_SHARER_MAX,
};
pub use fpenv::FpEnvGuard;
#[cfg(any(test, feature = "testing"))]
pub use guard::{GuardError, GuardedBuffer};
pub use imports::{ImportFn, ImportTable, IMPORT_TABLE};
pub use inference::{PlanParts, PrepareError, PreparedPlan, RunError};
pub use loaded::{load, LoadError, LoadedArtifact};
pub use pool::{Executor, Inline, PoolError, ThreadPool};
pub use run::{run, InvokeError, LaunchError};
pub use slot_pool::{SlotGuard, SlotPool, FAIR_AFTER};
pub use sys::{Errno, Protection};
pub use weights::{MappedWeight, WeightError, Weights};
