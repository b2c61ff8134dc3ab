//! `accy run` under an address-space limit (`setrlimit(RLIMIT_AS)` in the child): a run that
//! fits needs about its inputs plus its outputs — no copies of values, no copies of outputs
//! for the summary — and one that does not fit ends with exit 4 and "out of memory", never
//! with an allocation abort.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

mod common;
use common::{assert_code, scratch_dir, stderr, stdout, write};

const MIB: u64 = 1 << 20;

/// 256 MiB in, 256 MiB out.
const PROGRAM: &str = "program {\n  %x = input \"x\" : f32[67108864]\n  \
    %y = neg %x : f32[67108864]\n  output %y\n}\n";

/// Runs `accy run file` with its address space limited to `limit` bytes.
fn run_limited(file: &str, limit: u64) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_accy"));
    cmd.args(["run", file]).env_remove("ACCY_CPU_FEATURES_MAX");
    // SAFETY: the closure runs in the forked child before exec; it only calls setrlimit,
    // which is async-signal-safe, on a stack value, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let rlimit = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &rlimit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    cmd.output().expect("run accy")
}

#[test]
fn a_run_needs_its_inputs_and_outputs_and_no_copies() {
    let dir = scratch_dir("memory-limit-fits");
    let file = write(&dir, "big.accy", PROGRAM);
    // 512 MiB of values and room for the binary itself; every extra copy of a value or an
    // output (each 256 MiB) would not fit.
    let out = run_limited(&file, 1024 * MIB);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("output 0: f32[67108864] = [") && text.contains("(67108864 values) min "),
        "{text}"
    );
}

#[test]
fn a_run_that_does_not_fit_is_out_of_memory_with_exit_4() {
    let dir = scratch_dir("memory-limit-short");
    let file = write(&dir, "big.accy", PROGRAM);
    // The input fits, the output does not.
    let out = run_limited(&file, 384 * MIB);
    assert_code(&out, 4);
    let err = stderr(&out);
    assert!(
        err.contains("error: out of memory: output 0 needs 268435456 bytes"),
        "{err}"
    );
}
