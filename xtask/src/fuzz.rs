//! `cargo xtask fuzz`: installs cargo-fuzz if needed, seeds the corpus and runs one target.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

/// Fuzz targets defined in `fuzz/Cargo.toml`, with what each one checks.
const TARGETS: &[(&str, &str)] = &[
    (
        "decode",
        "wire bytes -> decode -> verify -> print -> parse == decoded; encode -> decode == decoded",
    ),
    (
        "parse",
        "text -> parse -> verify -> print -> parse == parsed",
    ),
    (
        "onnx",
        "ONNX bytes -> import -> verify, weights, print -> parse, interpreter",
    ),
    (
        "artifact",
        "artifact bytes (and resealed) -> from_bytes (checks, validate) -> to_bytes == input",
    ),
];

/// Seed inputs per target, relative to the repository root.
const SEEDS: &[(&str, &str)] = &[
    ("decode", "crates/wire/tests/golden"),
    ("parse", "crates/ir/tests/programs"),
    ("onnx", "fuzz/seeds/onnx"),
    ("artifact", "fuzz/seeds/artifact"),
];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut target = None;
    let mut seconds: u64 = 60;
    let mut asan = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                seconds = v
                    .parse()
                    .map_err(|_| format!("--seconds: `{v}` is not a number"))?;
            }
            "--asan" => asan = true,
            "list" if target.is_none() => {
                for (name, what) in TARGETS {
                    println!("{name:10} {what}");
                }
                return Ok(());
            }
            other if target.is_none() && !other.starts_with('-') => target = Some(other.to_owned()),
            other => return Err(format!("fuzz: unexpected argument `{other}`")),
        }
    }
    let target = target.ok_or("fuzz: which target? (`cargo xtask fuzz list`)")?;
    if !TARGETS.iter().any(|(name, _)| *name == target) {
        return Err(format!(
            "fuzz: no target `{target}` (`cargo xtask fuzz list`)"
        ));
    }
    let root = crate::repo_root()?;
    ensure_cargo_fuzz()?;

    let corpus = root.join("fuzz/corpus").join(&target);
    std::fs::create_dir_all(&corpus).map_err(|e| format!("creating {}: {e}", corpus.display()))?;
    for (name, dir) in SEEDS {
        if *name == target {
            seed_corpus(&root.join(dir), &corpus)?;
        }
    }

    let mut cmd = Command::new("cargo");
    cmd.current_dir(root.join("fuzz")).arg("fuzz").arg("run");
    if asan {
        cmd.env("RUSTC_BOOTSTRAP", "1");
    } else {
        cmd.args(["-s", "none"]);
    }
    cmd.arg(&target)
        .arg(&corpus)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg("-print_final_stats=1")
        .arg("-max_len=65536");
    println!(
        "xtask: fuzzing `{target}` for {seconds} s ({})",
        if asan { "ASan" } else { "no sanitizer" }
    );
    // libFuzzer reports on stderr: pass it through as it comes (progress on long runs, the
    // crash report naming the saved input on failure) and keep it for the final statistics.
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running cargo fuzz: {e}"))?;
    let mut log = String::new();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            log.push_str(&line);
            log.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo fuzz: {e}"))?;
    if !status.success() {
        return Err(format!(
            "fuzz target `{target}` failed ({status}); see the report above"
        ));
    }
    match FinalStats::parse(&log) {
        Some(s) => println!(
            "xtask: `{target}`: {} executions, {} exec/s, {} new corpus units, no failures",
            s.executions, s.per_second, s.new_units
        ),
        None => {
            println!("xtask: `{target}`: finished with no failures (libFuzzer printed no stats)")
        }
    }
    Ok(())
}

/// The numbers libFuzzer prints with `-print_final_stats=1`.
struct FinalStats {
    executions: u64,
    per_second: u64,
    new_units: u64,
}

impl FinalStats {
    fn parse(log: &str) -> Option<FinalStats> {
        let stat = |key: &str| {
            log.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|rest| rest.trim_start_matches(':').trim().parse::<u64>().ok())
        };
        Some(FinalStats {
            executions: stat("stat::number_of_executed_units")?,
            per_second: stat("stat::average_exec_per_sec")?,
            new_units: stat("stat::new_units_added").unwrap_or(0),
        })
    }
}

fn ensure_cargo_fuzz() -> Result<(), String> {
    let present = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    println!("xtask: installing cargo-fuzz (first use)");
    let status = Command::new("cargo")
        .args(["install", "cargo-fuzz", "--locked"])
        .status()
        .map_err(|e| format!("running cargo install: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo install cargo-fuzz failed ({status})"))
    }
}

fn seed_corpus(from: &Path, corpus: &Path) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_file() {
            let dest = corpus.join(format!("seed-{}", entry.file_name().to_string_lossy()));
            std::fs::copy(&path, &dest).map_err(|e| format!("seeding {}: {e}", dest.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_stats_are_read_from_libfuzzer_output() {
        let log = "#1 INITED\nstat::number_of_executed_units: 123456\nstat::average_exec_per_sec:   2057\nstat::new_units_added: 3\n";
        let s = FinalStats::parse(log).unwrap();
        assert_eq!((s.executions, s.per_second, s.new_units), (123456, 2057, 3));
        assert!(FinalStats::parse("no stats here").is_none());
    }

    #[test]
    fn every_seed_dir_names_a_target() {
        for (name, _) in SEEDS {
            assert!(TARGETS.iter().any(|(t, _)| t == name));
        }
    }
}
