//! The shared kernel conformance suite (`accy_lower::testing::conformance`) for the AArch64
//! backend, every case run under the unicorn emulator (guard pages around every binding,
//! callee-saved registers, `sp` and the return checked after every call), in exact mode, where
//! every result must match the interpreter bit for bit, and in default mode, where float sums
//! (the NEON reduction loop) and contractions may be reassociated within their bounds. The
//! same cases run natively on every x86-64 tier in `accy-lower`'s own tests.

mod common;

use accy_lower::Options;
use common::EmulatorRunner;

accy_lower::conformance_tests!(
    aarch64_neon,
    Some(EmulatorRunner::default()),
    Options::default().with_reassociate(false),
    600
);

// Default mode: the contraction microkernels fuse multiply and add, and float sum reductions
// run on the NEON loop, one partial sum per lane.
accy_lower::conformance_tests!(
    aarch64_neon_default,
    Some(EmulatorRunner::default()),
    Options::default(),
    200
);
