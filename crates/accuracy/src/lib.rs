//! Accuracy of accy's generated math (internal crate; the public API is `accy-session`).
//!
//! Measures how far each float function's compiled code — a one-op program compiled by an
//! [`accy_session::Session`] in default mode, so the vectorised expansions of `accy-lower`'s
//! math module run exactly as in any program — lies from the correctly rounded result, in
//! ULPs. `cargo xtask ulp` runs the `accy-ulp` binary (every f32 input of each unary f32
//! function, ≥ 10^7 samples of the rest) and `docs/accuracy.md` records its table; the tests
//! in `tests/` assert the bounds ([`Function::bound`]) on a fixed sample so a regression fails
//! CI.
//!
//! Files: `functions.rs` (the functions, their references and bounds), `ulp.rs` (distances),
//! `runner.rs` (compiling and running one-op programs), `sweep.rs` (exhaustive and sampled
//! measurements, in parallel), `mpfr.rs` (the f64 references, from the system's MPFR).

#![deny(missing_docs)]

pub mod functions;
pub mod mpfr;
pub mod runner;
pub mod sweep;
pub mod ulp;

pub use functions::{Function, FUNCTIONS};
