//! `cargo xtask test`: the README's test command, which works on a fresh machine that has only
//! Rust.
//!
//! The one thing beyond Rust the tests need is what the unicorn emulator (the AArch64 tests in
//! `crates/a64-emu-tests`) builds with: the Debian packages in [`PACKAGES`]. This command checks
//! for them with `dpkg -s`. Missing ones are installed with `apt-get` when running as root
//! (saying so first); otherwise it names them with the command that installs them and stops.
//! Then it runs `cargo test --workspace --all-features --locked`.
//!
//! `--no-emulator` skips the check and leaves the emulator crate out of the run. Arguments
//! after `--` go to the test binaries. For testing this command itself,
//! `ACCY_XTASK_ASSUME_MISSING=pkg,pkg` treats those packages as missing and
//! `ACCY_XTASK_ASSUME_NOT_ROOT=1` as if not running as root.

use std::process::Command;

/// What the unicorn build needs: cmake for its C core, libclang and clang's headers for
/// bindgen.
pub const PACKAGES: [&str; 3] = ["cmake", "libclang1-14", "libclang-common-14-dev"];

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
    if missing.is_empty() {
        Plan::Ready
    } else if root {
        Plan::Install(missing)
    } else {
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

/// The packages of [`PACKAGES`] that `dpkg -s` does not report installed, or `None` when
/// there is no dpkg to ask.
fn missing_packages() -> Option<Vec<String>> {
    if let Ok(assumed) = std::env::var("ACCY_XTASK_ASSUME_MISSING") {
        return Some(
            assumed
                .split(',')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
        );
    }
    let mut missing = Vec::new();
    for package in PACKAGES {
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
    if emulator {
        match missing_packages() {
            None => println!(
                "xtask: no dpkg here, so the emulator's build needs ({}, or their equivalents: \
                 cmake, libclang and clang's headers) are not checked",
                PACKAGES.join(", ")
            ),
            Some(missing) => match plan(missing, is_root()) {
                Plan::Ready => {}
                Plan::Install(packages) => {
                    println!(
                        "xtask: installing what the emulator tests need: {}",
                        packages.join(" ")
                    );
                    run("apt-get", &["update".to_owned()])?;
                    run("apt-get", &install_args(&packages))?;
                }
                Plan::Refuse(message) => return Err(message),
            },
        }
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
    }
}
