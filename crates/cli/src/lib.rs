//! The library behind the `accy` command: the pieces of `accy run` and `accy bench` that tests
//! (and other tools) reuse.
//!
//! - [`npy`]: reading and writing NumPy `.npy` files of accy's dtypes;
//! - [`seeded`]: the deterministic random values `run` and `bench` give parameters the user did
//!   not supply, so a test can reproduce a run's inputs for the reference interpreter;
//! - [`work`]: the FLOP and byte counts behind `bench`'s GFLOPS and GB/s;
//! - [`summary`]: the one-line tensor summaries `run` prints;
//! - [`weights_file`]: named weights as `.safetensors` (what `accy import` writes).

#![deny(missing_docs)]

pub mod npy;
pub mod seeded;
pub mod summary;
pub mod weights_file;
pub mod work;
