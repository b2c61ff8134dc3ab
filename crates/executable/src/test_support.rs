//! Helpers for this crate's own tests: reading `/proc/self/maps`, and re-running one test in
//! a fresh child process (for checks that must crash, or must not race with other tests'
//! mappings).

use std::process::{Command, Output};

/// Set in a child process to the mode the re-run test should perform.
const CHILD_ENV: &str = "ACCY_EXECUTABLE_TEST_CHILD";

/// Printed by a child once it has entered its mode, so the parent knows the test filter
/// matched and the child really ran.
pub(crate) const CHILD_MARKER: &str = "accy-executable-child-ran:";

/// The mode this process was started with, if it is a child of [`run_child`].
pub(crate) fn child_mode() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// Announces (on stdout) that the child entered `mode`, and stops it from writing a core
/// file if it is about to crash on purpose.
#[allow(
    clippy::print_stdout,
    reason = "the parent test reads this marker from stdout"
)]
pub(crate) fn enter_child(mode: &str) {
    println!("{CHILD_MARKER}{mode}");
    let limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit reads the struct we pass by reference and has no other effect on
    // memory.
    unsafe { libc::setrlimit(libc::RLIMIT_CORE, &limit) };
}

/// Runs the test at `test_path` (e.g. `guard::tests::name`) alone in a new copy of this test
/// binary with `mode` set, single-threaded, and returns how it ended.
pub(crate) fn run_child(test_path: &str, mode: &str) -> Output {
    let exe = std::env::current_exe().expect("test binary path");
    let output = Command::new(exe)
        .args([test_path, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, mode)
        .output()
        .expect("spawn test child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("{CHILD_MARKER}{mode}")),
        "child for {test_path} / {mode} did not run its mode; stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The permission field (e.g. `r-xp`) of the `/proc/self/maps` line whose range holds
/// `addr`, or `None` if no mapping does.
pub(crate) fn mapping_perms(addr: usize) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        (start <= addr && addr < end).then(|| fields.next().unwrap_or("").to_owned())
    })
}
