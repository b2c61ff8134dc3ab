//! Tests of the x86-64 backend. Correctness of every node, loop shape and ABI check is the
//! shared conformance suite's job (`crate::testing::conformance`), run here through
//! [`host::HostRunner`] on every tier this host has; these files add what is x86-specific.
//!
//! - `host`: the runner: emitted code mapped and called in process on guarded buffers;
//! - `conformance`: the suite on each tier, in default and exact mode;
//! - `paths`: which kernels take the vector path, tier feature sets, the generator's mix;
//! - `errors`: malformed or oversized kernels are errors, never panics;
//! - `abi`: callee-saved registers and the stack pointer survive a kernel call;
//! - `bit_select`: which ORs become one `vpternlogd` on AVX-512;
//! - `encoding`: emitted bytes against expected listings, and dynasm's encoding quirks;
//! - `vector_code`: the AVX-512 vector loops' zmm forms and masks, and min/max selects;
//! - `on_line`: which streaming transposes get a sub-striped form for outputs on a line, and
//!   the entry's branch to it;
//! - `prefetch_hint`: the loads a kernel's prefetch hint adds a `prefetcht0` to, and the tile
//!   fills' prefetches;
//! - `row_panels`: a contraction's full-panel microkernel is emitted only when m ≥ mr;
//! - `a_in_place`: which tiers read a contraction's A in place and which copy its row panels.

mod a_in_place;
mod abi;
mod bit_select;
mod conformance;
mod encoding;
mod errors;
mod host;
mod on_line;
mod paths;
mod prefetch_hint;
mod row_panels;
mod vector_code;
