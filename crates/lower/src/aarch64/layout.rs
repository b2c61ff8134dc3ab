//! The stack frame of one kernel: the x86-64 backend's layout, which is arch-neutral.
//!
//! Every node owns an 8-byte slot, every live map a running offset, every dim a counter, plus
//! the reduction accumulator and a scratch slot; offsets are from `sp` after the prologue and
//! the size is a multiple of 16, which AAPCS64 requires of `sp` too. The frame is below
//! `MAX_FRAME` bytes, so every offset is below 2^24 (what `asm.rs`'s far-offset path
//! handles). NEON values live in registers only (`vector.rs`), so it asks for no vector
//! slots.

pub(crate) use crate::x64::layout::{Layout, MapRef};
