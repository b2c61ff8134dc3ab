//! Helpers shared by the tests that drive the `accy` binary.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `accy` with `args` and the given extra environment.
pub fn accy_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_accy"));
    cmd.args(args).env_remove("ACCY_CPU_FEATURES_MAX");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run accy")
}

/// Runs `accy` with `args`.
pub fn accy(args: &[&str]) -> Output {
    accy_env(args, &[])
}

/// Path of a file in the repository's `examples/`.
pub fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Path of a checked-in `.npy` fixture.
pub fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Path of a program of accy-ir's test corpus.
pub fn program(name: &str) -> String {
    format!("{}/../ir/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A fresh, empty directory for one test.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` to `dir/name` and returns the path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the exit code, showing both streams on failure.
pub fn assert_code(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}
