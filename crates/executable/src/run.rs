//! Running a launch plan on prepared [`Bindings`]: [`run`] executes the commands in order
//! with the semantics `accy_artifact::launch` documents.
//!
//! - Fill writes the first `width` (1, 2 or 4) bytes of the pattern, little-endian, over the
//!   region, repeated.
//! - Copy copies the source region to the destination region (validation proved they do not
//!   overlap; distinct slots never share memory, which binding checked for caller buffers).
//! - Dispatch fills a `DispatchState` on the stack — binding addresses (slot base plus region
//!   offset, dangling but non-null for empty regions), binding lengths, scalars, workgroup
//!   count, the [`IMPORT_TABLE`], the worker scratch — and calls the kernel once per
//!   workgroup: on the calling thread when there is one workgroup, otherwise through the
//!   [`Executor`] the bindings were prepared with, which may spread the workgroups over
//!   threads (the ABI lets them run in any order, at once). A non-zero status stops the run
//!   with a [`LaunchError`] naming the kernel; workgroups not yet started are skipped.
//! - A chain (dispatches marked `chained`, then one that is not) runs as one dispatch whose
//!   every workgroup calls each link's kernel in turn with its index, each with the link's
//!   own state but the same worker and worker scratch (a link may leave rows there for the
//!   next, `accy_artifact::abi`); its workgroups are handed out one contiguous range per
//!   worker (`chain_order.rs`), for the chain's prefetch hints.
//!
//! Nothing here allocates (except to describe a failure): every table was built at load or
//! by `prepare_borrowed` in the reusable [`crate::Scratch`].
//!
//! The run sets the documented floating-point environment on the calling thread for its
//! duration ([`crate::fpenv`]); pool threads set it when they start. Every thread a kernel
//! runs on must have at least `abi::MAX_KERNEL_STACK` (64 KiB) of stack free — any thread Rust
//! starts with its default stack size does.

use std::sync::atomic::{AtomicU64, Ordering};

use accy_artifact::abi::{self, DispatchState};

use crate::binding::{prepare_borrowed, region_ptr, BindingError, Bindings};
use crate::code_memory::{CodeEntry, CodeMemoryError};
use crate::fpenv::FpEnvGuard;
use crate::imports::IMPORT_TABLE;
use crate::loaded::LoadedArtifact;
use crate::pool::{Executor, Inline};
use crate::steps::{Step, Steps};
use crate::Scratch;

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// A kernel returned a non-zero status (the run stopped there; outputs are partial).
    #[error(
        "command {command}: kernel {kernel} `{name}` returned status {status} in workgroup \
         {workgroup} of {workgroups}"
    )]
    KernelFailed {
        /// The command's index in the launch plan.
        command: usize,
        /// The kernel's index.
        kernel: usize,
        /// The kernel's name.
        name: String,
        /// The workgroup that failed.
        workgroup: u32,
        /// The dispatch's workgroup count.
        workgroups: u32,
        /// The status it returned (`abi::KERNEL_ABI_MISMATCH` means it was generated for
        /// another ABI version).
        status: u32,
    },
    /// A dispatch has more bindings or scalars than the ABI's 32-bit counts hold (a loader
    /// bug: validation bounds both far lower).
    #[error(
        "command {command}: kernel {kernel} has {bindings} bindings and {scalars} scalars, more \
         than the dispatch ABI's 32-bit counts hold"
    )]
    TooManyArguments {
        /// The command's index in the launch plan.
        command: usize,
        /// The kernel's index.
        kernel: usize,
        /// Its binding count.
        bindings: usize,
        /// Its scalar count.
        scalars: usize,
    },
    /// A kernel's entry point could not be found in the published code (a loader bug: load
    /// checks every entry).
    #[error("command {command}: kernel {kernel} has no callable entry: {source}")]
    NoEntry {
        /// The command's index in the launch plan.
        command: usize,
        /// The kernel's index.
        kernel: usize,
        /// Why.
        source: CodeMemoryError,
    },
}

/// Why [`LoadedArtifact::invoke`] failed: binding the buffers or running the plan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// The buffers were refused; nothing ran.
    #[error(transparent)]
    Binding(#[from] BindingError),
    /// The run stopped.
    #[error(transparent)]
    Launch(#[from] LaunchError),
}

/// The signature every kernel entry has (`abi::KernelFn`), in the form
/// [`crate::CodeEntry::call`] accepts.
type Kernel = extern "C" fn(*const DispatchState, u32, u32) -> u32;

/// Runs the launch plan of the artifact `bindings` were prepared for, on the buffers they
/// bind, with the executor they were prepared with. Consumes the bindings: prepare again
/// (which allocates nothing) for another run.
#[inline]
pub fn run(bindings: Bindings<'_>) -> Result<(), LaunchError> {
    let loaded = bindings.loaded;
    let executor = bindings.executor;
    let workers = Workers {
        base: bindings.scratch.worker_ptr(),
        stride: loaded.worker_scratch_stride() as u64,
        count: executor.workers().min(u32::MAX as usize) as u32,
    };
    // SAFETY: `prepare_borrowed` bound every slot: caller buffers checked for size and
    // exclusivity (outputs borrowed mutably by `bindings`, overlapping no other buffer),
    // weights, constants and derived blocks of `loaded` (only read: validation proved no run
    // command writes them), scratch slots and worker slices in `bindings.scratch` (borrowed
    // mutably, one slice per executor worker); the binding pointers were computed from those
    // bases for `loaded.steps`.
    unsafe {
        execute(
            loaded,
            executor,
            &workers,
            &loaded.steps,
            bindings.scratch.bases.as_slice(),
            bindings.scratch.binding_ptrs.as_slice(),
        )
    }
}

/// Runs `steps` (prepared from commands of `loaded`'s artifact) over the slot `bases`.
///
/// # Safety
///
/// `bases[i]` is the base of slot `i` for every slot a step touches: valid for reads of the
/// slot's size, and for writes too when a step writes the slot, with nothing else accessing
/// written slots during the call; `binding_ptrs[j]` is `region_ptr(bases, steps.binding_spans[j])`;
/// `workers` names `workers.count` disjoint writable slices of `workers.stride` bytes no one
/// else uses during the call, and `executor` runs at most `workers.count` workers.
pub(crate) unsafe fn execute(
    loaded: &LoadedArtifact,
    executor: &dyn Executor,
    workers: &Workers,
    steps: &Steps,
    bases: &[*mut u8],
    binding_ptrs: &[*mut u8],
) -> Result<(), LaunchError> {
    // The environment the artifact's kernels run in, on this thread (`dispatch` enters it on
    // worker threads too); the caller's comes back at the end.
    let _fp = FpEnvGuard::enter_flushing(loaded.flush_subnormals());
    let mut command = 0;
    while let Some(step) = steps.steps.get(command) {
        match step {
            Step::Fill {
                dst,
                pattern,
                width,
            } => {
                if dst.len > 0 {
                    let ptr = region_ptr(bases, dst);
                    // SAFETY: `dst` lies inside a slot this step writes, so (the caller's
                    // contract) `ptr..ptr + len` is valid for writes and nothing else accesses
                    // it during this step.
                    let bytes = unsafe { std::slice::from_raw_parts_mut(ptr, dst.len) };
                    fill(bytes, pattern, *width);
                }
                command += 1;
            }
            Step::Copy { src, dst } => {
                if dst.len > 0 {
                    // SAFETY: both regions lie inside their slots; `src` is readable and `dst`
                    // writable with no other access (the caller's contract); their lengths
                    // are equal (validation) and they do not overlap: within one slot
                    // validation proved it, and distinct slots are disjoint memory (binding
                    // refused outputs that share bytes with inputs or outputs; weights,
                    // constants, derived blocks and scratch are private allocations).
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            region_ptr(bases, src).cast_const(),
                            region_ptr(bases, dst),
                            dst.len,
                        );
                    }
                }
                command += 1;
            }
            Step::Dispatch { workgroups, .. } => {
                // A chain runs up to its first unchained link (validation proved every
                // chained dispatch is followed by a dispatch of as many workgroups).
                let last = steps.steps[command..]
                    .iter()
                    .position(|s| !matches!(s, Step::Dispatch { chained: true, .. }))
                    .map_or(steps.steps.len() - 1, |i| command + i);
                let chain = Chain {
                    first: command,
                    links: &steps.steps[command..=last],
                    steps,
                    binding_ptrs,
                };
                dispatch(loaded, executor, workers, &chain, *workgroups)?;
                command = last + 1;
            }
        }
    }
    Ok(())
}

/// Writes the first `width` bytes of `pattern` over `bytes`, repeated (`bytes.len()` is a
/// multiple of `width`, which validation proved).
fn fill(bytes: &mut [u8], pattern: &[u8; 4], width: usize) {
    if width == 1 {
        bytes.fill(pattern[0]);
        return;
    }
    // Validation allows only widths 1, 2 and 4; the clamp keeps this panic-free regardless.
    let unit = &pattern[..width.clamp(1, 4)];
    // A line of the repeated pattern (64 is a multiple of every width), copied line by line:
    // a copy of a fixed 64 bytes compiles to vector stores, where a 2- or 4-byte copy per
    // element ran at 2.7 GB/s (16 MiB of f32 in 6 ms).
    let mut line = [0u8; 64];
    for chunk in line.chunks_exact_mut(unit.len()) {
        chunk.copy_from_slice(unit);
    }
    let mut lines = bytes.chunks_exact_mut(line.len());
    for chunk in &mut lines {
        chunk.copy_from_slice(&line);
    }
    let rest = lines.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&line[..n]);
}

/// The worker scratch of one run, as every dispatch passes it on.
pub(crate) struct Workers {
    /// The first worker's slice.
    pub(crate) base: *mut u8,
    /// Bytes from one worker's slice to the next.
    pub(crate) stride: u64,
    /// How many slices there are.
    pub(crate) count: u32,
}

// SAFETY: the description is only read (into each call's state) while a dispatch runs; the
// scratch it names is split by worker index, each slice used by one thread at a time (the
// `Executor` contract), as `SharedState`'s comment says.
unsafe impl Sync for Workers {}

/// A dispatch's state, shared read-only by the threads running its workgroups.
#[derive(Clone, Copy)]
struct SharedState(DispatchState);

// SAFETY: the state is only read during the dispatch (by the threads running its workgroups,
// as the ABI says kernels do); the memory its pointers name is either read-only for the whole
// run or written by workgroups on disjoint bytes (the compiler's promise, `accy_artifact`'s
// launch semantics), and worker scratch is split by worker index, each used by one thread at a
// time (the `Executor` contract).
unsafe impl Sync for SharedState {}

/// The dispatch steps that run together, workgroup by workgroup: one unchained dispatch, or
/// a chain (every link but the last chained to the next, all with the same workgroup count).
struct Chain<'s> {
    /// The command number of the first link.
    first: usize,
    /// The links, each a [`Step::Dispatch`].
    links: &'s [Step],
    /// The tables the links index.
    steps: &'s Steps,
    /// The binding addresses, one per `steps.binding_spans` entry.
    binding_ptrs: &'s [*mut u8],
}

// SAFETY: a chain is only read while its dispatch runs, and outlives it (`execute` borrows it
// across `Executor::run`): each call's state points into its binding-address slice, which the
// kernels read in place, and the memory those addresses name is accessed as `SharedState`'s
// comment says (the compiler's promise, here per chain: a link's workgroup touches only bytes
// no other workgroup index of the chain writes).
unsafe impl Sync for Chain<'_> {}

/// What one call of a link's kernel needs: its entry and state.
#[derive(Clone, Copy)]
struct Call<'c> {
    entry: CodeEntry<'c>,
    state: SharedState,
}

/// Link `link` (command `command`) of a chain with `workgroups` workgroups, ready to call;
/// built on the stack for every call, so a chain of any length runs without allocating.
fn prepare_call<'c>(
    loaded: &'c LoadedArtifact,
    workers: &Workers,
    chain: &Chain<'_>,
    (command, link): (usize, &Step),
    workgroups: u32,
) -> Result<Call<'c>, LaunchError> {
    let Step::Dispatch {
        kernel,
        entry,
        bindings,
        scalars,
        ..
    } = link
    else {
        // `execute` puts only dispatches into a chain.
        return Err(LaunchError::NoEntry {
            command,
            kernel: 0,
            source: CodeMemoryError::Empty,
        });
    };
    let kernel = *kernel;
    let no_entry = |source| LaunchError::NoEntry {
        command,
        kernel,
        source,
    };
    let code = loaded
        .code()
        .ok_or_else(|| no_entry(CodeMemoryError::Empty))?;
    let entry = code.entry(*entry).map_err(no_entry)?;
    let binding_ptrs = &chain.binding_ptrs[bindings.clone()];
    let binding_lengths = &chain.steps.binding_lengths[bindings.clone()];
    let scalars = &chain.steps.scalars[scalars.clone()];
    // Validation bounds both counts by `MAX_BINDINGS` / `MAX_SCALARS` (256); checked anyway.
    let (binding_count, scalar_count) =
        abi_counts(binding_ptrs.len(), scalars.len()).ok_or(LaunchError::TooManyArguments {
            command,
            kernel,
            bindings: binding_ptrs.len(),
            scalars: scalars.len(),
        })?;
    let state = SharedState(DispatchState {
        abi_version: abi::ABI_VERSION,
        binding_count,
        bindings: binding_ptrs.as_ptr(),
        binding_lengths: binding_lengths.as_ptr(),
        scalars: scalars.as_ptr(),
        scalar_count,
        workgroup_count: workgroups,
        imports: IMPORT_TABLE.as_ptr(),
        worker_scratch: workers.base,
        worker_scratch_stride: workers.stride,
        worker_count: workers.count,
        reserved: 0,
    });
    Ok(Call { entry, state })
}

/// Calls each link's kernel once per workgroup: for each workgroup, the links in order on one
/// thread (the chain's promise makes that equal to running the links one after the other).
fn dispatch(
    loaded: &LoadedArtifact,
    executor: &dyn Executor,
    workers: &Workers,
    chain: &Chain<'_>,
    workgroups: u32,
) -> Result<(), LaunchError> {
    let links = || (chain.first..).zip(chain.links);
    let failed = |link: usize, workgroup: u32, status: u32| {
        let (command, kernel) = match chain.links.get(link) {
            Some(Step::Dispatch { kernel, .. }) => (chain.first + link, *kernel),
            _ => (chain.first, 0),
        };
        LaunchError::KernelFailed {
            command,
            kernel,
            name: loaded
                .kernels()
                .get(kernel)
                .map_or_else(String::new, |k| k.name.clone()),
            workgroup,
            workgroups,
            status,
        }
    };
    if workgroups == 1 {
        for (i, link) in links().enumerate() {
            let call = prepare_call(loaded, workers, chain, link, workgroups)?;
            match call_kernel(call.entry, &call.state, 0, 0) {
                abi::KERNEL_OK => {}
                status => return Err(failed(i, 0, status)),
            }
        }
        return Ok(());
    }
    // Every link's entry and counts are checked before any workgroup runs, so the calls
    // below cannot fail to prepare. A lone dispatch (the common case) keeps its call; a
    // chain's links are prepared again on the stack at every call.
    let mut lone = None;
    for link in links() {
        let call = prepare_call(loaded, workers, chain, link, workgroups)?;
        if chain.links.len() == 1 {
            lone = Some(call);
        }
    }
    // One workgroup's calls of every link: the index of the first link that failed and its
    // status, if one did.
    let run_workgroup = |workgroup: u32, worker: u32| -> Option<(usize, u32)> {
        for (i, link) in links().enumerate() {
            let prepared = match lone {
                Some(call) => Ok(call),
                None => prepare_call(loaded, workers, chain, link, workgroups),
            };
            let status = match prepared {
                Ok(call) if worker < call.state.0.worker_count => {
                    call_kernel(call.entry, &call.state, workgroup, worker)
                }
                // The executor promises worker < workers(), which `count` (clamped to u32)
                // bounds; an executor breaking that gets the ABI's worker-mismatch status,
                // not an aliased slice. (Preparing cannot fail here: it succeeded above.)
                _ => abi::KERNEL_WORKER_MISMATCH,
            };
            if status != abi::KERNEL_OK {
                return Some((i, status));
            }
        }
        None
    };
    // The first failure as `workgroup << 32 | status`, and the link it came from; later
    // workgroups are skipped once it is set.
    let first_failure = AtomicU64::new(u64::MAX);
    let failed_link = std::sync::atomic::AtomicUsize::new(usize::MAX);
    let flush = loaded.flush_subnormals();
    // A chain walks a contiguous range of workgroups per worker (`chain_order.rs`).
    let workers_claiming = if chain.links.len() > 1 {
        u32::try_from(executor.workers()).unwrap_or(u32::MAX)
    } else {
        1
    };
    executor.run(workgroups, &|worker, tile| {
        if first_failure.load(Ordering::Relaxed) != u64::MAX {
            return;
        }
        let workgroup = crate::chain_order::workgroup_of(tile, workgroups, workers_claiming);
        // A worker thread's environment is whatever its owner left: set the run's (one
        // control-register read when it is already so).
        let _fp = FpEnvGuard::enter_flushing(flush);
        let outcome = match u32::try_from(worker) {
            Ok(worker) => run_workgroup(workgroup, worker),
            Err(_) => Some((0, abi::KERNEL_WORKER_MISMATCH)),
        };
        if let Some((link, status)) = outcome {
            let code = (u64::from(workgroup) << 32) | u64::from(status);
            if first_failure
                .compare_exchange(u64::MAX, code, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                failed_link.store(link, Ordering::Relaxed);
            }
        }
    });
    match first_failure.into_inner() {
        u64::MAX => Ok(()),
        code => Err(failed(
            failed_link.into_inner(),
            (code >> 32) as u32,
            code as u32,
        )),
    }
}

/// One workgroup's call of a kernel.
fn call_kernel(entry: CodeEntry<'_>, state: &SharedState, workgroup: u32, worker: u32) -> u32 {
    // SAFETY: the entry is a kernel of a validated artifact, published for this host
    // (architecture and features checked at load), and follows the dispatch ABI: it has the
    // `Kernel` signature and touches only the bytes its bindings describe. `state` and the
    // arrays it points to live in the caller's frame, in the loaded artifact or in the scratch
    // tables until every workgroup call has returned (`Executor::run` returns only then); each
    // binding address is valid for its length and writable when its access writes (binding
    // checked sizes and exclusivity); `worker` is below `worker_count` (the executor's worker
    // count, for which the scratch holds a worker slice each) and no other thread runs with it
    // now (the `Executor` contract).
    unsafe { entry.call::<Kernel>((&state.0, workgroup, worker)) }
}

/// The binding and scalar counts as the ABI's `u32`s, if both fit.
fn abi_counts(bindings: usize, scalars: usize) -> Option<(u32, u32)> {
    Some((u32::try_from(bindings).ok()?, u32::try_from(scalars).ok()?))
}

impl LoadedArtifact {
    /// Binds `inputs` and `outputs` ([`prepare_borrowed`]) and runs the plan ([`run`]) on the
    /// calling thread alone.
    pub fn invoke(
        &self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
        scratch: &mut Scratch,
    ) -> Result<(), InvokeError> {
        self.invoke_with(&Inline, inputs, outputs, scratch)
    }

    /// [`LoadedArtifact::invoke`], running the dispatches on `executor`.
    pub fn invoke_with(
        &self,
        executor: &dyn Executor,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
        scratch: &mut Scratch,
    ) -> Result<(), InvokeError> {
        let bindings = prepare_borrowed(self, inputs, outputs, scratch, executor)?;
        run(bindings)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_repeats_the_pattern_over_whole_lines_and_the_rest() {
        let pattern = [0x11, 0x22, 0x33, 0x44];
        for width in [1usize, 2, 4] {
            // Around a line, several lines, and a remainder of every length.
            for units in [0usize, 1, 3, 15, 16, 17, 31, 32, 33, 100, 257] {
                let len = units * width;
                // One byte of guard on each side: nothing outside the region is written.
                let mut buffer = vec![0xEEu8; len + 2];
                fill(&mut buffer[1..=len], &pattern, width);
                assert_eq!((buffer[0], buffer[len + 1]), (0xEE, 0xEE));
                for (i, &b) in buffer[1..=len].iter().enumerate() {
                    assert_eq!(
                        b,
                        pattern[i % width],
                        "width {width}, {len} bytes, byte {i}"
                    );
                }
            }
        }
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn counts_beyond_u32_are_refused_not_truncated() {
        assert_eq!(abi_counts(3, 256), Some((3, 256)));
        let over = u32::MAX as usize + 1;
        assert_eq!(abi_counts(over, 0), None);
        assert_eq!(abi_counts(0, over), None);
        assert_eq!(
            LaunchError::TooManyArguments {
                command: 2,
                kernel: 1,
                bindings: over,
                scalars: 0
            }
            .to_string(),
            "command 2: kernel 1 has 4294967296 bindings and 0 scalars, more than the dispatch \
             ABI's 32-bit counts hold"
        );
    }
}
