//! Project automation, run as `cargo xtask <command>` (aliased in `.cargo/config.toml`).
//!
//! Commands:
//! - `fuzz <target> [--seconds N] [--asan]`: coverage-guided fuzzing of one target in `fuzz/`
//!   with cargo-fuzz (installed on first use). Without `--asan` it builds with `-s none`, which
//!   works on the stable toolchain as is; `--asan` adds AddressSanitizer through
//!   `RUSTC_BOOTSTRAP=1` (the stable toolchain ships the ASan runtime). The corpus is seeded
//!   from the checked-in golden files, and a summary line reports executions per second.
//! - `fuzz list`: the available targets.
//! - `bench <compile|invoke|gemm|parallel|memory|all> [--quick]`: criterion benchmarks, summarised as a
//!   table of medians with ratios to the reference each group measures in the same run; table
//!   benchmarks (`parallel`) print their own.
//! - `ulp [--quick] [--threads N] [--samples N] [NAME...]`: the accuracy table of the generated
//!   math (see `ulp.rs` and `docs/accuracy.md`).
//! - `test [--no-emulator] [-- <args>]`: the README's test command: checks for (or, as root,
//!   installs) the system packages the emulator tests build with, then runs
//!   `cargo test --workspace --all-features --locked` (see `test.rs`).
//! - `capi-header`: regenerates `crates/capi/include/accy.h` with cbindgen (by running the test
//!   that checks it, `crates/capi/tests/header.rs`, with `ACCY_BLESS=1`).
//! - `onnx-conformance [options]`: the ONNX backend node tests (onnx 1.19.0, installed into a
//!   local virtual environment when missing) through the importer and the JIT; see `onnx.rs`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on the terminal"
)]

mod bench;
mod fuzz;
mod onnx;
mod test;
mod ulp;

use std::path::{Path, PathBuf};

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  fuzz <target> [--seconds N] [--asan]   run a coverage-guided fuzzer (default 60 s)
  fuzz list                              list fuzz targets
  bench <compile|invoke|gemm|parallel|memory|all> [--quick]
                                         run benchmarks; print medians and in-run ratios
  test [--no-emulator] [-- <args>]       check (as root: install) the emulator's apt packages,
                                         then cargo test --workspace --all-features --locked
  capi-header                            regenerate crates/capi/include/accy.h (cbindgen)
  onnx-conformance [--help]              run the ONNX backend node tests through accy
  ulp [--quick] [--threads N] [--samples N] [NAME...]
                                         max ULP error of each math function's generated code
                                         (every f32 input; 10^7 f64 samples against MPFR)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("test") => test::test(&args[1..]),
        Some("capi-header") => capi_header(&args[1..]),
        Some("onnx-conformance") => onnx::run(&args[1..]),
        Some("ulp") => ulp::run(&args[1..]),
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(format!("unknown or missing command\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask capi-header`: rewrites the C header from the capi crate's sources. cbindgen
/// runs inside that crate's header test (a dev-dependency there), so xtask itself stays free of
/// dependencies.
fn capi_header(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!(
            "capi-header: unknown argument `{extra}` (it takes none)"
        ));
    }
    let status = std::process::Command::new(env!("CARGO"))
        .args(["test", "--quiet", "-p", "accy-capi", "--test", "header"])
        .env("ACCY_BLESS", "1")
        .current_dir(repo_root()?)
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !status.success() {
        return Err(format!("generating the header failed ({status})"));
    }
    println!("xtask: wrote crates/capi/include/accy.h; review and commit it");
    Ok(())
}

/// The repository root (the parent of `xtask/`).
fn repo_root() -> Result<PathBuf, String> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "xtask has no parent directory".to_owned())
}
