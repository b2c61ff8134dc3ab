//! Lowering verified programs to machine code (internal crate; the public API is
//! `accy-session`).
//!
//! The arch-neutral part lives at the top level: [`kernel`] is the kernel description every
//! emitter translates; [`plan()`] fuses a program's ops into kernels and plans its buffers and
//! commands ([`LoweredProgram`]); [`compile()`] runs the whole pipeline through a [`Target`]
//! and returns a validated artifact. One `dynasm` emitter per ISA builds on the kernel
//! description. [`testing`] holds the reference executor of a plan, for tests.

#![deny(missing_docs)]

pub mod aarch64;
mod compile;
mod error;
pub mod kernel;
mod plan;
pub mod target;
pub mod testing;
pub mod x64;

pub use compile::{compile, Options};
pub use error::CompileError;
pub use plan::{plan, plan_with, LoweredProgram, MAX_FUSED_NODES};
pub use target::{EmitError, EmittedCode, Target};
