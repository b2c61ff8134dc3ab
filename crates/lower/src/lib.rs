//! Lowering verified programs to machine code (internal crate; the public API is
//! `accy-session`).
//!
//! Planned contents (issue "x86-64 JIT end to end", then "AArch64 backend"): fusion, buffer
//! planning, an arch-neutral kernel description and one `dynasm` emitter per ISA. Nothing is
//! implemented yet, so this crate exports nothing.

#![deny(missing_docs)]
