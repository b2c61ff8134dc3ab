//! Tests of the x86-64 backend: hand-built kernels run on guarded buffers through the
//! dispatch ABI, compared with the reference kernel interpreter.
//!
//! - `errors`: malformed or oversized kernels are errors, never panics;
//! - `harness`: emitting, mapping and calling a kernel; the import table; host tiers;
//! - `nodes`: every node kind × dtype, edge values included, per tier;
//! - `loops`: maps, reductions, workgroups, empty dims, vector/tail boundaries, ABI checks;
//! - `random`: proptest over random kernels, bit-exact against `run_kernel`, per tier;
//! - `abi`: callee-saved registers and the stack pointer survive a kernel call;
//! - `encoding`: the bytes of a tiny kernel disassembled against an expected listing.

mod abi;
mod encoding;
mod errors;
mod harness;
mod loops;
mod nodes;
mod random;
