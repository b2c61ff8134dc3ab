//! Test-only crate: runs the AArch64 code accy emits under the unicorn CPU emulator, so
//! `cargo test` checks the AArch64 backend on any host (the tests are in `tests/`; the
//! emulator harness is `tests/common/mod.rs`).
//!
//! unicorn-engine is GPL-2.0. It is a dev-dependency of this crate only, and nothing accy
//! ships depends on this crate, so no shipped binary links it.
