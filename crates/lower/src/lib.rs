//! Lowering verified programs to machine code (internal crate; the public API is
//! `accy-session`).
//!
//! The arch-neutral part lives at the top level: [`kernel`] is the kernel description every
//! emitter translates; [`plan()`] fuses a program's ops into kernels and plans its buffers and
//! commands ([`LoweredProgram`]); [`compile()`] runs the whole pipeline through a [`Target`]
//! and returns a validated artifact; [`target`] looks a backend up by host or name. One
//! `dynasm` emitter per ISA builds on the kernel description, each behind a cargo feature
//! (`x64`, `aarch64`; both default). The `testing` feature adds `testing`: the reference
//! executor of a plan and the conformance suite every backend runs, for tests only.

#![deny(missing_docs)]

#[cfg(feature = "aarch64")]
pub mod aarch64;
mod compile;
mod emit;
mod error;
pub mod kernel;
mod math;
mod plan;
pub mod target;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(feature = "x64")]
pub mod x64;

pub use compile::{compile, compile_detailed, Compilation, Options};
pub use emit::streams_stores;
pub use error::CompileError;
pub use plan::{plan, plan_with, LoweredProgram, MAX_FUSED_NODES};
pub use target::{
    lookup_host, lookup_name, EmitError, EmittedCode, LookupError, Target, TransposeBlock,
};
