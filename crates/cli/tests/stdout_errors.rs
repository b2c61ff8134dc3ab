//! Standard output that cannot be written: every command that prints ends quietly with exit 0
//! when its reader has gone (a closed pipe, as in `accy inspect … | head -1`), and with exit 3
//! and a message for any other write error (`> /dev/full`) — never with a panic.

use std::process::{Command, Output, Stdio};

mod common;
use common::{assert_code, example, program, stderr};

/// Each printing command with arguments that succeed.
fn commands() -> Vec<Vec<String>> {
    let tiny = program("mlp_tiny.accy");
    [
        vec!["check", &tiny],
        vec!["compile", &tiny, "--text", "-o", "-"],
        vec!["run", &tiny],
        vec!["bench", &tiny, "--iters", "3"],
        vec!["inspect", &example("transformer_block.accy")],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(String::from).collect())
    .collect()
}

fn accy(args: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_accy"));
    cmd.args(args).env_remove("ACCY_CPU_FEATURES_MAX");
    cmd
}

#[test]
fn a_full_device_is_an_io_error_with_a_message() {
    for args in commands() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full exists on Linux");
        let out = accy(&args)
            .stdout(Stdio::from(full))
            .output()
            .expect("run accy");
        assert_code(&out, 3);
        let err = stderr(&out);
        assert!(
            err.contains("error: writing to standard output: No space left on device"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    for args in commands() {
        let mut child = accy(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run accy");
        // Close the only read end before accy writes: every write then fails with EPIPE.
        drop(child.stdout.take());
        let out: Output = child.wait_with_output().expect("wait for accy");
        assert_code(&out, 0);
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}
