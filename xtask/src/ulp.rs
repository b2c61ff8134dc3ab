//! `cargo xtask ulp [--quick] [--threads N] [--samples N] [NAME...]`: the accuracy table of
//! accy's generated math. Builds and runs `accy-ulp` (crate `accy-accuracy`) in release mode:
//! every f32 input of each unary f32 function through the code this CPU's best target
//! generates in default mode, and 10^7 samples of `pow` f32 and of each f64 function against
//! MPFR. `docs/accuracy.md` records the table; the process fails if any function exceeds its
//! bound.

use std::process::Command;

pub fn run(args: &[String]) -> Result<(), String> {
    let status = Command::new("cargo")
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "accy-accuracy",
            "--bin",
            "accy-ulp",
            "--",
        ])
        .args(args)
        .status()
        .map_err(|e| format!("ulp: cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("ulp: accy-ulp failed ({status})"))
    }
}
