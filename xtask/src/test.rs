//! `cargo xtask test`: the README's test command, which works on a fresh machine that has only
//! Rust.
//!
//! Two things beyond Rust the tests need: what the unicorn emulator (the AArch64 tests in
//! `crates/a64-emu-tests`) builds with, the Debian packages in [`PACKAGES`], and a C compiler
//! for the C ABI test (`crates/capi/tests/c_abi.rs`), [`C_PACKAGES`]. This command checks for
//! them with `dpkg -s`. Missing ones are installed with `apt-get` when running as root (saying
//! so first). Otherwise, missing emulator packages are named with the command that installs
//! them and the command stops; missing C packages are named too, but the tests run (the C ABI
//! test then says it was skipped, unless another C compiler is there). Then it runs
//! `cargo test --workspace --all-features --locked`.
//!
//! `--no-emulator` skips the check and leaves the emulator crate out of the run. Arguments
//! after `--` go to the test binaries. For testing this command itself,
//! `ACCY_XTASK_ASSUME_MISSING=pkg,pkg` treats those packages as missing and
//! `ACCY_XTASK_ASSUME_NOT_ROOT=1` as if not running as root.

use std::process::Command;

/// What the unicorn build needs: cmake for its C core, libclang and clang's headers for
/// bindgen.
pub const PACKAGES: [&str; 3] = ["cmake", "libclang1-14", "libclang-common-14-dev"];

/// What the C ABI test builds its C program with: a C compiler and the C library's headers.
pub const C_PACKAGES: [&str; 2] = ["gcc", "libc6-dev"];

/// The crate that needs them.
const EMULATOR_CRATE: &str = "accy-a64-emu-tests";

/// What to do about the packages.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Plan {
    /// Everything is there.
    Ready,
    /// Install these (we are root).
    Install(Vec<String>),
    /// Stop with this message.
    Refuse(String),
    /// Say this and run the tests.
    Warn(String),
}

/// The arguments of the `apt-get` command that installs `packages`.
fn install_args(packages: &[String]) -> Vec<String> {
    ["install", "-y", "--no-install-recommends"]
        .iter()
        .map(|a| (*a).to_owned())
        .chain(packages.iter().cloned())
        .collect()
}

/// What to do when `missing` are not installed and we are (or are not) root.
fn plan(missing: Vec<String>, root: bool) -> Plan {
    let emulator: Vec<String> = missing
        .iter()
        .filter(|p| !C_PACKAGES.contains(&p.as_str()))
        .cloned()
        .collect();
    if missing.is_empty() {
        Plan::Ready
    } else if root {
        Plan::Install(missing)
    } else if emulator.is_empty() {
        Plan::Warn(format!(
            "xtask: the C ABI test (crates/capi/tests/c_abi.rs) builds a C program, and these \
             Debian packages are not installed: {}. Unless another C compiler is found, that \
             test will say it was skipped. Install them with:\n    sudo apt-get {}",
            missing.join(", "),
            install_args(&missing).join(" ")
        ))
    } else {
        let missing = emulator;
        Plan::Refuse(format!(
            "the emulator tests ({EMULATOR_CRATE}, crates/a64-emu-tests) build unicorn, which \
             needs Debian packages that are not installed: {}.\n\
             Install them with:\n    sudo apt-get {}\n\
             (or run `cargo xtask test` as root, which installs them), then run it again; \
             `cargo xtask test --no-emulator` runs every other test without them.",
            missing.join(", "),
            install_args(&missing).join(" ")
        ))
    }
}

/// The packages of `packages` that `dpkg -s` does not report installed, or `None` when there
/// is no dpkg to ask.
fn missing_packages(packages: &[&str]) -> Option<Vec<String>> {
    if let Ok(assumed) = std::env::var("ACCY_XTASK_ASSUME_MISSING") {
        return Some(
            assumed
                .split(',')
                .filter(|p| packages.contains(p))
                .map(str::to_owned)
                .collect(),
        );
    }
    let mut missing = Vec::new();
    for &package in packages {
        let output = Command::new("dpkg").args(["-s", package]).output().ok()?;
        let status = String::from_utf8_lossy(&output.stdout);
        let installed = output.status.success()
            && status
                .lines()
                .any(|l| l.starts_with("Status:") && l.ends_with("install ok installed"));
        if !installed {
            missing.push(package.to_owned());
        }
    }
    Some(missing)
}

/// Whether this process runs as root.
fn is_root() -> bool {
    if std::env::var_os("ACCY_XTASK_ASSUME_NOT_ROOT").is_some() {
        return false;
    }
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `program args`, failing with its exit status.
fn run(program: &str, args: &[String]) -> Result<(), String> {
    let status = Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| format!("running {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed ({status})", args.join(" ")))
    }
}

/// `cargo xtask test [--no-emulator] [-- <test binary args>]`.
pub fn test(args: &[String]) -> Result<(), String> {
    let (ours, passed) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut emulator = true;
    for arg in ours {
        match arg.as_str() {
            "--no-emulator" => emulator = false,
            other => {
                return Err(format!(
                    "test: unknown argument `{other}` (usage: cargo xtask test [--no-emulator] \
                     [-- <test binary args>])"
                ))
            }
        }
    }
    let mut needed: Vec<&str> = C_PACKAGES.to_vec();
    if emulator {
        needed.extend(PACKAGES);
    }
    match missing_packages(&needed) {
        None => println!(
            "xtask: no dpkg here, so what the tests build with ({}, or their equivalents: a C \
             compiler, cmake, libclang and clang's headers) is not checked",
            needed.join(", ")
        ),
        Some(missing) => match plan(missing, is_root()) {
            Plan::Ready => {}
            Plan::Install(packages) => {
                println!(
                    "xtask: installing what the tests build with: {}",
                    packages.join(" ")
                );
                run("apt-get", &["update".to_owned()])?;
                run("apt-get", &install_args(&packages))?;
            }
            Plan::Warn(message) => println!("{message}"),
            Plan::Refuse(message) => return Err(message),
        },
    }
    let mut cargo_args: Vec<String> = ["test", "--workspace", "--all-features", "--locked"]
        .map(str::to_owned)
        .to_vec();
    if !emulator {
        cargo_args.extend(["--exclude".to_owned(), EMULATOR_CRATE.to_owned()]);
    }
    if !passed.is_empty() {
        cargo_args.push("--".to_owned());
        cargo_args.extend(passed.iter().cloned());
    }
    println!("xtask: cargo {}", cargo_args.join(" "));
    run("cargo", &cargo_args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn missing_packages_are_installed_as_root_or_named_with_the_command() {
        assert_eq!(plan(Vec::new(), false), Plan::Ready);
        assert_eq!(plan(Vec::new(), true), Plan::Ready);
        let missing = names(&["cmake", "libclang-common-14-dev"]);
        assert_eq!(plan(missing.clone(), true), Plan::Install(missing.clone()));
        let Plan::Refuse(message) = plan(missing, false) else {
            panic!("not refused")
        };
        assert!(
            message.contains("not installed: cmake, libclang-common-14-dev.")
                && message.contains(
                    "sudo apt-get install -y --no-install-recommends cmake libclang-common-14-dev"
                )
                && message.contains("--no-emulator"),
            "{message}"
        );
        // A missing C compiler alone does not stop the tests; with the emulator's packages
        // it is installed along with them, or only they are named.
        let Plan::Warn(message) = plan(names(&["gcc"]), false) else {
            panic!("not a warning")
        };
        assert!(message.contains("sudo apt-get install -y --no-install-recommends gcc"));
        let all = names(&["gcc", "cmake"]);
        assert_eq!(plan(all.clone(), true), Plan::Install(all.clone()));
        let Plan::Refuse(message) = plan(all, false) else {
            panic!("not refused")
        };
        assert!(message.contains("not installed: cmake."), "{message}");
    }
}
