//! The dispatch ABI: the one fixed, versioned calling contract between a runtime and every
//! generated kernel.
//!
//! Emitters (in `accy-lower`) generate code against the numbers here; the runtime
//! (`accy-executable`) fills a [`DispatchState`] for each [`crate::Command::Dispatch`] and calls
//! the kernel once per workgroup. Both sides take the layout from this module only, and the
//! compile-time assertions below pin it, so the two cannot drift apart.
//!
//! # Kernel signature
//!
//! Every kernel entry point ([`crate::KernelEntry`]) has the signature [`KernelFn`]:
//!
//! ```text
//! extern "C" fn(state: *const DispatchState, workgroup: u32, worker: u32) -> u32
//! ```
//!
//! in the platform C calling convention of the artifact's architecture (System V AMD64 on
//! x86-64, AAPCS64 on AArch64; a Windows x64 target would need its own convention recorded in
//! [`crate::TargetSpec`] and is not supported yet). `workgroup` is in
//! `0..state.workgroup_count`. `worker` names the thread making the call, in
//! `0..state.worker_count`: at any moment at most one call of a dispatch runs with a given
//! `worker`, so the worker's slice of [`DispatchState::worker_scratch`] is private to the call.
//! The return value is a status: [`KERNEL_OK`] (0) on success; any other value stops the
//! launch, and the runtime reports it as a launch failure naming the kernel and the value.
//!
//! # Workgroups and workers
//!
//! A runtime may run the workgroups of one dispatch in any order and at the same time on
//! several threads (a thread pool); a kernel computes the same bytes whatever the order, the
//! thread or the number of threads (a chain's link may rely on the order of its chain, below,
//! and computes its bytes only run that way). A kernel that needs working memory larger than its stack
//! frame (packed GEMM panels) declares it per worker in [`crate::KernelEntry::worker_scratch`];
//! the runtime then gives every worker index its own `worker_scratch_stride` bytes at
//! `worker_scratch + worker * worker_scratch_stride`, aligned to [`WORKER_SCRATCH_ALIGN`]. The
//! contents are unspecified at the start of each call, with one exception: a runtime calls
//! the links of a chain ([`crate::launch`]) for one workgroup back to back with the same
//! `worker` and the same `worker_scratch` and stride, and nothing else touches that worker's
//! slice in between, so each link finds the bytes the previous links of that workgroup left
//! there. Kernels use this to pass one workgroup's rows of an intermediate from link to link
//! without a buffer for all of them. (Every runtime of version 2 has called chains so; the
//! rule writes down what kernels may now rely on, so the version stays 2.)
//!
//! # What a kernel may and must do
//!
//! - Read `*state` and the arrays it points to; never write them.
//! - Touch only the bytes `bindings[i] .. bindings[i] + binding_lengths[i]`, and write only
//!   bindings whose [`crate::Access`] writes. Never touch a byte beyond a binding's length,
//!   even with a vector load whose extra lanes would be discarded: the runtime tests kernels
//!   on buffers that end at a guard page.
//! - Assume no alignment of a binding's address beyond what the compiler itself arranged (slot
//!   alignment plus region offset); use unaligned vector accesses otherwise.
//! - Treat a binding of length 0 as having an arbitrary (possibly null) address and never
//!   dereference it; likewise `bindings`, `binding_lengths` and `scalars` when their count is 0.
//! - Preserve the registers the C convention says are callee-saved, return normally (never
//!   unwind), run with the floating-point environment the caller has (round to nearest, no
//!   trapping) and leave it unchanged, and use at most [`MAX_KERNEL_STACK`] bytes of stack.
//! - Write disjoint bytes from different workgroups (see [`crate::launch`]).
//!
//! # Versioning
//!
//! [`ABI_VERSION`] changes whenever the layout or any rule above changes incompatibly; an
//! artifact records the version its code was generated for and the validator refuses others.

/// The version of the dispatch ABI described in this module. Stored in
/// [`crate::Artifact::abi_version`] and in [`DispatchState::abi_version`].
/// Version 2 added the worker argument and the worker-scratch fields.
pub const ABI_VERSION: u32 = 2;

/// Status a kernel returns on success. Any other value is a failure.
pub const KERNEL_OK: u32 = 0;

/// Status a kernel may return when it checks `state.abi_version` and finds a version it was
/// not generated for.
pub const KERNEL_ABI_MISMATCH: u32 = 1;

/// Status a kernel returns when the dispatch gives it a different number of bindings than it
/// was compiled for, or a binding shorter than the bytes it accesses, or (in code with
/// non-temporal stores) a store binding that is not aligned to its element size: the runtime
/// and the artifact disagree, and running would touch memory outside the bindings or fault.
pub const KERNEL_BINDING_MISMATCH: u32 = 2;

/// Status a kernel returns when the worker index is out of range, the worker scratch is
/// smaller than its entry declares, or (a kernel keeping one workgroup's rows in worker
/// scratch) the workgroup has more rows than the compiler reserved for, that is fewer
/// workgroups than the artifact's dispatch: the runtime and the artifact disagree.
pub const KERNEL_WORKER_MISMATCH: u32 = 3;

/// The alignment, in bytes, of every worker's scratch slice (a cache line, and the widest
/// vector register).
pub const WORKER_SCRATCH_ALIGN: u64 = 64;

/// The most worker scratch, in bytes, one kernel may declare (1 GiB): bounds what a runtime
/// allocates per worker; the validator enforces it.
pub const MAX_WORKER_SCRATCH: u64 = 1 << 30;

/// The most bindings one dispatch may have. Bounded so a runtime can keep a dispatch's
/// pointer and length arrays in fixed-size storage; the validator enforces it.
pub const MAX_BINDINGS: usize = 256;

/// The most scalars one dispatch may have; the validator enforces it.
pub const MAX_SCALARS: usize = 256;

/// The most stack, in bytes, one kernel call may use. A runtime guarantees at least this much
/// free stack on any thread it runs kernels on.
pub const MAX_KERNEL_STACK: u32 = 64 * 1024;

/// The signature of every kernel entry point (see the module documentation for the rules).
///
/// This is a type definition only; the crate never creates a value of it. The runtime
/// obtains one from published executable memory.
pub type KernelFn =
    unsafe extern "C" fn(state: *const DispatchState, workgroup: u32, worker: u32) -> u32;

/// The read-only context a kernel receives for one dispatch: binding base addresses and byte
/// lengths as parallel arrays, the scalars, the number of workgroups, the runtime's import
/// table of math functions, and the worker scratch.
///
/// The runtime fills one per [`crate::Command::Dispatch`] (binding `i` of the command is entry
/// `i` of both arrays) and keeps it and the arrays alive, unchanged, until every workgroup
/// call of that dispatch has returned. It holds raw pointers because it is the definition of
/// what generated code reads, not an owning Rust value: it is neither `Send` nor `Sync`, and
/// nothing about it is valid beyond the dispatch it was filled for.
///
/// The layout is fixed (`#[repr(C)]`, 72 bytes, 8-byte aligned on the 64-bit targets accy
/// supports); emitters address fields with the `OFFSET_*` constants.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DispatchState {
    /// [`ABI_VERSION`] as known to the runtime.
    pub abi_version: u32,
    /// Number of entries in `bindings` and `binding_lengths`.
    pub binding_count: u32,
    /// `binding_count` base addresses, one per binding.
    pub bindings: *const *mut u8,
    /// `binding_count` byte lengths: binding `i` is exactly `binding_lengths[i]` bytes.
    pub binding_lengths: *const u64,
    /// `scalar_count` 64-bit scalars.
    pub scalars: *const u64,
    /// Number of entries in `scalars`.
    pub scalar_count: u32,
    /// Number of workgroups of this dispatch; each call gets one index below it.
    pub workgroup_count: u32,
    /// The runtime's import table: [`crate::Import::COUNT`] function addresses, entry `i`
    /// being the function of the [`crate::Import`] whose `index()` is `i`, with that import's
    /// signature. Never null; the same table serves every dispatch.
    pub imports: *const *const (),
    /// Base of the worker scratch: worker `w` owns `worker_scratch_stride` bytes at
    /// `worker_scratch + w * worker_scratch_stride` (see the module documentation). Arbitrary
    /// (possibly null) when the stride is 0.
    pub worker_scratch: *mut u8,
    /// Bytes of worker scratch each worker index owns: at least the largest
    /// [`crate::KernelEntry::worker_scratch`] of the artifact, a multiple of
    /// [`WORKER_SCRATCH_ALIGN`].
    pub worker_scratch_stride: u64,
    /// Number of worker indices a call may receive.
    pub worker_count: u32,
    /// Zero; keeps the struct's size a multiple of its alignment.
    pub reserved: u32,
}

impl DispatchState {
    /// Byte offset of [`DispatchState::abi_version`] (a `u32`).
    pub const OFFSET_ABI_VERSION: u32 = 0;
    /// Byte offset of [`DispatchState::binding_count`] (a `u32`).
    pub const OFFSET_BINDING_COUNT: u32 = 4;
    /// Byte offset of [`DispatchState::bindings`] (a 64-bit pointer).
    pub const OFFSET_BINDINGS: u32 = 8;
    /// Byte offset of [`DispatchState::binding_lengths`] (a 64-bit pointer).
    pub const OFFSET_BINDING_LENGTHS: u32 = 16;
    /// Byte offset of [`DispatchState::scalars`] (a 64-bit pointer).
    pub const OFFSET_SCALARS: u32 = 24;
    /// Byte offset of [`DispatchState::scalar_count`] (a `u32`).
    pub const OFFSET_SCALAR_COUNT: u32 = 32;
    /// Byte offset of [`DispatchState::workgroup_count`] (a `u32`).
    pub const OFFSET_WORKGROUP_COUNT: u32 = 36;
    /// Byte offset of [`DispatchState::imports`] (a 64-bit pointer).
    pub const OFFSET_IMPORTS: u32 = 40;
    /// Byte offset of [`DispatchState::worker_scratch`] (a 64-bit pointer).
    pub const OFFSET_WORKER_SCRATCH: u32 = 48;
    /// Byte offset of [`DispatchState::worker_scratch_stride`] (a `u64`).
    pub const OFFSET_WORKER_SCRATCH_STRIDE: u32 = 56;
    /// Byte offset of [`DispatchState::worker_count`] (a `u32`).
    pub const OFFSET_WORKER_COUNT: u32 = 64;
    /// Byte offset of [`DispatchState::reserved`] (a `u32`).
    pub const OFFSET_RESERVED: u32 = 68;
    /// Size in bytes of one entry of the `imports` table (a function address).
    pub const IMPORT_STRIDE: u32 = 8;
    /// Size of the struct in bytes.
    pub const SIZE: u32 = 72;
    /// Alignment of the struct in bytes.
    pub const ALIGN: u32 = 8;
    /// Size in bytes of one entry of the `bindings` array (a pointer).
    pub const BINDING_STRIDE: u32 = 8;
    /// Size in bytes of one entry of the `binding_lengths` and `scalars` arrays.
    pub const LENGTH_STRIDE: u32 = 8;
}

// The constants above are the ABI; the Rust struct mirrors them on the 64-bit hosts that run
// generated code. (On other hosts the constants still describe the target layout, which is
// what emitters need.)
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    type S = DispatchState;
    assert!(offset_of!(S, abi_version) == S::OFFSET_ABI_VERSION as usize);
    assert!(offset_of!(S, binding_count) == S::OFFSET_BINDING_COUNT as usize);
    assert!(offset_of!(S, bindings) == S::OFFSET_BINDINGS as usize);
    assert!(offset_of!(S, binding_lengths) == S::OFFSET_BINDING_LENGTHS as usize);
    assert!(offset_of!(S, scalars) == S::OFFSET_SCALARS as usize);
    assert!(offset_of!(S, scalar_count) == S::OFFSET_SCALAR_COUNT as usize);
    assert!(offset_of!(S, workgroup_count) == S::OFFSET_WORKGROUP_COUNT as usize);
    assert!(offset_of!(S, imports) == S::OFFSET_IMPORTS as usize);
    assert!(offset_of!(S, worker_scratch) == S::OFFSET_WORKER_SCRATCH as usize);
    assert!(offset_of!(S, worker_scratch_stride) == S::OFFSET_WORKER_SCRATCH_STRIDE as usize);
    assert!(offset_of!(S, worker_count) == S::OFFSET_WORKER_COUNT as usize);
    assert!(offset_of!(S, reserved) == S::OFFSET_RESERVED as usize);
    assert!(size_of::<*const ()>() == S::IMPORT_STRIDE as usize);
    assert!(size_of::<S>() == S::SIZE as usize);
    assert!(align_of::<S>() == S::ALIGN as usize);
    assert!(size_of::<*mut u8>() == S::BINDING_STRIDE as usize);
    assert!(size_of::<u64>() == S::LENGTH_STRIDE as usize);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_do_not_overlap_and_fill_the_struct() {
        // Each field's [offset, offset + size) in declaration order must tile 0..SIZE: a
        // reordered or resized field shows up here even if someone edits both the struct
        // and the constants.
        let fields = [
            (DispatchState::OFFSET_ABI_VERSION, 4),
            (DispatchState::OFFSET_BINDING_COUNT, 4),
            (DispatchState::OFFSET_BINDINGS, 8),
            (DispatchState::OFFSET_BINDING_LENGTHS, 8),
            (DispatchState::OFFSET_SCALARS, 8),
            (DispatchState::OFFSET_SCALAR_COUNT, 4),
            (DispatchState::OFFSET_WORKGROUP_COUNT, 4),
            (DispatchState::OFFSET_IMPORTS, 8),
            (DispatchState::OFFSET_WORKER_SCRATCH, 8),
            (DispatchState::OFFSET_WORKER_SCRATCH_STRIDE, 8),
            (DispatchState::OFFSET_WORKER_COUNT, 4),
            (DispatchState::OFFSET_RESERVED, 4),
        ];
        let mut next = 0;
        for (offset, size) in fields {
            assert_eq!(offset, next);
            assert_eq!(offset % size, 0, "field at {offset} is misaligned");
            next = offset + size;
        }
        assert_eq!(next, DispatchState::SIZE);
        assert_eq!(ABI_VERSION, 2);
        assert_eq!(KERNEL_OK, 0);
    }

    #[test]
    fn a_rust_kernel_with_the_abi_signature_reads_its_state() {
        // A kernel written in Rust against the same definition: proves the signature and
        // field meanings compose (the runtime calls JIT code the same way).
        unsafe extern "C" fn sum_first_binding(
            state: *const DispatchState,
            wg: u32,
            worker: u32,
        ) -> u32 {
            // SAFETY: the caller below passes a state whose arrays hold `binding_count` and
            // `scalar_count` valid entries, and binding 0 is `binding_lengths[0]` bytes.
            unsafe {
                let s = &*state;
                if s.abi_version != ABI_VERSION || wg >= s.workgroup_count {
                    return KERNEL_ABI_MISMATCH;
                }
                if worker >= s.worker_count {
                    return KERNEL_WORKER_MISMATCH;
                }
                let base = *s.bindings;
                let len = *s.binding_lengths;
                let out = *s.bindings.add(1);
                let mut sum = u64::from(wg) + *s.scalars;
                for i in 0..len as usize {
                    sum += u64::from(*base.add(i));
                }
                *out = sum as u8;
                KERNEL_OK
            }
        }
        let mut input = [1u8, 2, 3];
        let mut output = [0u8];
        let bindings = [input.as_mut_ptr(), output.as_mut_ptr()];
        let lengths = [3u64, 1];
        let scalars = [10u64];
        let state = DispatchState {
            abi_version: ABI_VERSION,
            binding_count: 2,
            bindings: bindings.as_ptr(),
            binding_lengths: lengths.as_ptr(),
            scalars: scalars.as_ptr(),
            scalar_count: 1,
            workgroup_count: 2,
            imports: std::ptr::null(),
            worker_scratch: std::ptr::null_mut(),
            worker_scratch_stride: 0,
            worker_count: 1,
            reserved: 0,
        };
        let kernel: KernelFn = sum_first_binding;
        // SAFETY: `state` and every array it points to live until the call returns, and the
        // counts and lengths match the arrays.
        let status = unsafe { kernel(&state, 1, 0) };
        assert_eq!(status, KERNEL_OK);
        assert_eq!(output[0], 1 + 10 + 1 + 2 + 3);
        // SAFETY: as above.
        let status = unsafe { kernel(&state, 2, 0) };
        assert_eq!(status, KERNEL_ABI_MISMATCH);
        // SAFETY: as above.
        let status = unsafe { kernel(&state, 0, 1) };
        assert_eq!(status, KERNEL_WORKER_MISMATCH);
    }
}
