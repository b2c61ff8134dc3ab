//! `cargo xtask bench`: runs the criterion benchmarks and prints each median as a ratio to the
//! reference measured in the same run (a bench whose name contains `reference`, in the same
//! group), because absolute times on a shared 2-core machine say little on their own. Table
//! benchmarks (`gemm`, `parallel`, `memory`) are binaries of the separate `bench/` workspace (which keeps
//! the reference crates out of the main build) and print their own table with its in-run
//! references.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Benchmarks `cargo xtask bench` knows: (name, package, bench target).
const BENCHES: &[(&str, &str, &str)] = &[
    ("compile", "accy-session", "compile"),
    ("invoke", "accy-session", "invoke"),
    ("gemm", "bench", "gemm"),
    ("parallel", "bench", "parallel"),
    ("memory", "bench", "memory"),
];

/// Benchmarks that are binaries of `bench/` and print their own table (with the in-run
/// references it needs); the others are criterion's.
const TABLES: &[&str] = &["gemm", "parallel", "memory"];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut names = Vec::new();
    let mut quick = false;
    // Flags after the names go to the table benchmarks (e.g. `gemm --input-b`).
    let mut extra: Vec<&str> = Vec::new();
    for arg in args {
        match arg.as_str() {
            "--quick" => quick = true,
            flag if flag.starts_with("--") => extra.push(flag),
            "all" => names.extend(BENCHES.iter().map(|(n, _, _)| *n)),
            other => match BENCHES.iter().find(|(n, _, _)| *n == other) {
                Some((n, _, _)) => names.push(*n),
                None => {
                    return Err(format!(
                        "bench: unknown benchmark `{other}` (known: all, {})",
                        list()
                    ))
                }
            },
        }
    }
    if names.is_empty() {
        return Err(format!("bench: which benchmark? (all, {})", list()));
    }
    for name in names {
        let (_, package, target) = BENCHES
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or("unreachable")?;
        let (warm, measure) = if quick { ("0.3", "1") } else { ("1", "3") };
        let table = TABLES.contains(&name);
        let mut command = Command::new("cargo");
        if table {
            println!("xtask: cargo run --release --manifest-path bench/Cargo.toml --bin {target}");
            command.args([
                "run",
                "--release",
                "--quiet",
                "--manifest-path",
                "bench/Cargo.toml",
            ]);
            command.args(["--bin", target, "--"]);
            command.args(&extra);
            if quick {
                command.arg("--quick");
            }
        } else {
            println!("xtask: cargo bench -p {package} --bench {target}");
            command.args(["bench", "-p", package, "--bench", target, "--"]);
            command
                .arg("--noplot")
                .args(["--warm-up-time", warm, "--measurement-time", measure]);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("running cargo bench: {e}"))?;
        let mut log = String::new();
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("{line}");
                log.push_str(&line);
                log.push('\n');
            }
        }
        let status = child
            .wait()
            .map_err(|e| format!("waiting for cargo bench: {e}"))?;
        if !status.success() {
            return Err(format!("bench `{name}` failed ({status})"));
        }
        if !table {
            print!("{}", ratio_table(&parse_medians(&log)));
        }
    }
    Ok(())
}

fn list() -> String {
    BENCHES
        .iter()
        .map(|(n, _, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `(benchmark id, median in nanoseconds)` for every `time: [low median high]` line.
fn parse_medians(log: &str) -> Vec<(String, f64)> {
    let mut results = Vec::new();
    let mut last_id = String::new();
    for line in log.lines() {
        let trimmed = line.trim();
        let (id_part, rest) = match trimmed.find("time:") {
            Some(i) => (trimmed[..i].trim(), &trimmed[i + 5..]),
            None => {
                if !trimmed.is_empty() && !trimmed.contains(':') && !trimmed.starts_with('[') {
                    last_id = trimmed.to_owned();
                }
                continue;
            }
        };
        let id = if id_part.is_empty() {
            last_id.clone()
        } else {
            id_part.to_owned()
        };
        let inner = rest.trim().trim_start_matches('[').trim_end_matches(']');
        let parts: Vec<&str> = inner.split_whitespace().collect();
        if parts.len() >= 4 {
            if let (Ok(value), Some(scale)) = (parts[2].parse::<f64>(), unit_ns(parts[3])) {
                results.push((id, value * scale));
            }
        }
    }
    results
}

fn unit_ns(unit: &str) -> Option<f64> {
    match unit {
        "ps" => Some(1e-3),
        "ns" => Some(1.0),
        "µs" | "us" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    }
}

/// A markdown table of medians with each one's ratio to its group's reference.
fn ratio_table(results: &[(String, f64)]) -> String {
    let mut out =
        String::from("\n| benchmark | median | ratio to in-run reference |\n|---|---:|---:|\n");
    for (id, ns) in results {
        let group = id.split('/').next().unwrap_or(id);
        let reference = results
            .iter()
            .find(|(other, _)| other.starts_with(group) && other.contains("reference"))
            .map(|(_, r)| *r);
        let ratio = match reference {
            Some(r) if r > 0.0 => format!("{:.2}x", ns / r),
            _ => "-".to_owned(),
        };
        out.push_str(&format!("| {id} | {} | {ratio} |\n", human(*ns)));
    }
    out
}

fn human(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.3} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ratios_come_from_criterion_output() {
        let log = "compile_10_ops/reference_decode_verify\n                        time:   [1.0000 µs 2.0000 µs 3.0000 µs]\ncompile_10_ops/compile_x64-avx2\n                        time:   [90.000 µs 100.00 µs 110.00 µs]\ninvoke_tiny/invoke time:   [50.0 ns 60.0 ns 70.0 ns]\n";
        let r = parse_medians(log);
        assert_eq!(r.len(), 3);
        assert_eq!(
            r[0],
            ("compile_10_ops/reference_decode_verify".to_owned(), 2000.0)
        );
        assert_eq!(r[1].1, 100_000.0);
        assert_eq!(r[2], ("invoke_tiny/invoke".to_owned(), 60.0));
        let table = ratio_table(&r);
        assert!(
            table.contains("| compile_10_ops/compile_x64-avx2 | 100.000 µs | 50.00x |"),
            "{table}"
        );
        assert!(
            table.contains("| invoke_tiny/invoke | 60.0 ns | - |"),
            "{table}"
        );
    }
}
