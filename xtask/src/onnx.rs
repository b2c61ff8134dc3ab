//! `cargo xtask onnx-conformance`: the ONNX backend node tests through the importer and the
//! JIT.
//!
//! The tests ship inside the `onnx` Python package (version 1.19.0 still includes
//! `onnx/backend/test/data/node`, 1615 tests; newer wheels dropped them). The xtask installs that
//! version into a virtual environment (`.venv-onnx` at the repository root, or
//! `$ACCY_ONNX_VENV`) when it is missing, builds the runner (`crates/onnx/examples/node_test.rs`)
//! and runs it once per test with a timeout, so a crash or a hang fails that test alone. It
//! prints every failure, the passed / failed / unsupported counts and the most common reasons
//! for "unsupported", and fails when any test fails, when fewer than `--min-pass` pass, or when
//! the time limit stops the run early. It never reports success without having run the suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The `onnx` release whose node tests are the suite.
const ONNX_VERSION: &str = "1.19.0";

const USAGE: &str = "\
usage: cargo xtask onnx-conformance [options]

  --data DIR          node test directory (default: from onnx 1.19.0 in the venv)
  --filter TEXT       only tests whose name contains TEXT
  --timeout SECONDS   per-test limit; a test running longer fails (default 60)
  --time-limit SECONDS  stop the whole run after this long and fail (default: none)
  --min-pass N        fail unless at least N tests pass (default 800; 0 with --filter)
  --jobs N            tests run at once (default 1)
  --debug             build the runner without optimizations
  --verbose           print every test's result";

#[derive(Debug)]
struct Options {
    data: Option<PathBuf>,
    filter: Option<String>,
    timeout: Duration,
    time_limit: Option<Duration>,
    min_pass: Option<usize>,
    jobs: usize,
    release: bool,
    verbose: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        data: None,
        filter: None,
        timeout: Duration::from_secs(60),
        time_limit: None,
        min_pass: None,
        jobs: 1,
        release: true,
        verbose: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"))
        };
        let number = |name: &str, v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{name}: `{v}` is not a number"))
        };
        match arg.as_str() {
            "--data" => o.data = Some(PathBuf::from(value(arg)?)),
            "--filter" => o.filter = Some(value(arg)?),
            "--timeout" => o.timeout = Duration::from_secs(number(arg, value(arg)?)?),
            "--time-limit" => o.time_limit = Some(Duration::from_secs(number(arg, value(arg)?)?)),
            "--min-pass" => o.min_pass = Some(number(arg, value(arg)?)? as usize),
            "--jobs" => o.jobs = (number(arg, value(arg)?)? as usize).clamp(1, 64),
            "--debug" => o.release = false,
            "--verbose" => o.verbose = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => {
                return Err(format!(
                    "onnx-conformance: unexpected argument `{other}`\n\n{USAGE}"
                ))
            }
        }
    }
    Ok(o)
}

/// The result of one test.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    Pass,
    Unsupported(String),
    Fail(String),
}

pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let started = Instant::now();
    let root = crate::repo_root()?;
    let data = match &options.data {
        Some(d) => d.clone(),
        None => node_test_dir(&root)?,
    };
    let mut tests: Vec<PathBuf> = std::fs::read_dir(&data)
        .map_err(|e| format!("reading {}: {e}", data.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("model.onnx").is_file())
        .filter(|p| {
            options
                .filter
                .as_ref()
                .is_none_or(|f| name_of(p).contains(f.as_str()))
        })
        .collect();
    tests.sort();
    if tests.is_empty() {
        return Err(format!("no node tests found in {}", data.display()));
    }
    let runner = build_runner(&root, options.release)?;
    println!(
        "xtask: running {} ONNX node tests from {} ({} at a time, {} s each at most)",
        tests.len(),
        data.display(),
        options.jobs,
        options.timeout.as_secs()
    );

    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Verdict>>> = Mutex::new(vec![None; tests.len()]);
    let deadline = options.time_limit.map(|l| started + l);
    std::thread::scope(|s| {
        for _ in 0..options.jobs {
            s.spawn(|| loop {
                if deadline.is_some_and(|d| Instant::now() > d) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(test) = tests.get(i) else { return };
                let verdict = run_one(&runner, test, options.timeout);
                if options.verbose {
                    println!("{}: {verdict:?}", name_of(test));
                }
                if let Ok(mut r) = results.lock() {
                    r[i] = Some(verdict);
                }
            });
        }
    });
    let results = results
        .into_inner()
        .map_err(|_| "a runner thread panicked")?;
    report(&tests, &results, &options, started.elapsed())
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The short form of an "unsupported" message used to rank the reasons.
fn reason_key(message: &str) -> String {
    if let Some(at) = message.find("element type ") {
        let rest = &message[at + "element type ".len()..];
        return format!("element type {}", rest.split(' ').next().unwrap_or(""));
    }
    if message.contains("accy imports opsets") {
        return "opset older than 13".into();
    }
    // Drop the node description (`node `n` (#3, Op): ` or `node #3 (Op, output `y`): `).
    let body = match message.strip_prefix("node ") {
        Some(rest) => rest.find("): ").map_or(message, |i| &rest[i + 3..]),
        None => message,
    };
    let end = body.find([':', '(']).unwrap_or(body.len());
    body[..end].trim().to_owned()
}

fn report(
    tests: &[PathBuf],
    results: &[Option<Verdict>],
    options: &Options,
    elapsed: Duration,
) -> Result<(), String> {
    let (mut passed, mut failed, mut unsupported, mut not_run) = (0, 0, 0, 0);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    println!();
    for (test, r) in tests.iter().zip(results) {
        match r {
            Some(Verdict::Pass) => passed += 1,
            Some(Verdict::Unsupported(m)) => {
                unsupported += 1;
                *reasons.entry(reason_key(m)).or_default() += 1;
            }
            Some(Verdict::Fail(m)) => {
                failed += 1;
                println!("FAILED {}: {m}", name_of(test));
            }
            None => not_run += 1,
        }
    }
    let mut ranked: Vec<(usize, String)> = reasons.into_iter().map(|(k, n)| (n, k)).collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    println!("\nmost common reasons for unsupported tests:");
    for (n, k) in ranked.iter().take(25) {
        println!("  {n:5}  {k}");
    }
    println!(
        "\nONNX node tests: {passed} passed, {failed} failed, {unsupported} unsupported of {} \
         ({:.0} s)",
        tests.len(),
        elapsed.as_secs_f64()
    );
    if not_run > 0 {
        return Err(format!(
            "the time limit stopped the run with {not_run} tests not run"
        ));
    }
    if failed > 0 {
        return Err(format!("{failed} ONNX node tests failed"));
    }
    let min_pass = options
        .min_pass
        .unwrap_or(if options.filter.is_some() { 0 } else { 800 });
    if passed < min_pass {
        return Err(format!(
            "only {passed} ONNX node tests passed; at least {min_pass} must"
        ));
    }
    Ok(())
}

/// Runs the runner on one test directory, failing the test on a crash or a timeout.
fn run_one(runner: &Path, test: &Path, timeout: Duration) -> Verdict {
    let child = Command::new(runner)
        .arg(test)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Verdict::Fail(format!("could not start the runner: {e}")),
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Verdict::Fail(format!("timed out after {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Verdict::Fail(format!("waiting for the runner: {e}")),
        }
    };
    let output = child.wait_with_output().ok();
    let stdout = output
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let stderr = output
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default();
    let line = stdout.lines().last().unwrap_or("");
    if status.success() {
        if line == "PASS" {
            return Verdict::Pass;
        }
        if let Some(m) = line.strip_prefix("UNSUPPORTED ") {
            return Verdict::Unsupported(m.to_owned());
        }
        if let Some(m) = line.strip_prefix("FAIL ") {
            return Verdict::Fail(m.to_owned());
        }
    }
    let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
    Verdict::Fail(format!("the runner crashed ({status}): {tail}"))
}

/// Builds the node-test runner and returns its path.
fn build_runner(root: &Path, release: bool) -> Result<PathBuf, String> {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root).args([
        "build",
        "--quiet",
        "-p",
        "accy-onnx",
        "--example",
        "node_test",
    ]);
    if release {
        cmd.arg("--release");
    }
    println!("xtask: building the node-test runner");
    let status = cmd
        .status()
        .map_err(|e| format!("running cargo build: {e}"))?;
    if !status.success() {
        return Err(format!("building the node-test runner failed ({status})"));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let exe = target
        .join(if release { "release" } else { "debug" })
        .join("examples")
        .join(format!("node_test{}", std::env::consts::EXE_SUFFIX));
    if exe.is_file() {
        Ok(exe)
    } else {
        Err(format!(
            "the runner was built but {} is missing",
            exe.display()
        ))
    }
}

/// The node test directory of onnx 1.19.0, installing it into the venv when missing.
fn node_test_dir(root: &Path) -> Result<PathBuf, String> {
    let venv = std::env::var_os("ACCY_ONNX_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv-onnx"));
    let python = venv.join("bin").join("python");
    let locate = |python: &Path| -> Option<PathBuf> {
        let out = Command::new(python)
            .args([
                "-c",
                "import onnx, os; print(onnx.__version__); \
                 print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'node'))",
            ])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text.lines();
        (out.status.success() && lines.next() == Some(ONNX_VERSION))
            .then(|| PathBuf::from(lines.next().unwrap_or("")))
    };
    if let Some(dir) = locate(&python) {
        return Ok(dir);
    }
    let cannot = |why: String| {
        format!(
            "cannot run the ONNX conformance suite: {why}. It needs Python 3 with `venv` and \
             access to PyPI to install onnx=={ONNX_VERSION} into {} (or pass --data DIR).",
            venv.display()
        )
    };
    if !python.exists() {
        println!(
            "xtask: creating a Python virtual environment in {}",
            venv.display()
        );
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .map_err(|e| cannot(format!("python3 could not be started ({e})")))?;
        if !status.success() {
            return Err(cannot(format!("`python3 -m venv` failed ({status})")));
        }
    }
    println!(
        "xtask: installing onnx=={ONNX_VERSION} into {}",
        venv.display()
    );
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(format!("onnx=={ONNX_VERSION}"))
        .status()
        .map_err(|e| cannot(format!("pip could not be started ({e})")))?;
    if !status.success() {
        return Err(cannot(format!("pip install failed ({status})")));
    }
    locate(&python)
        .ok_or_else(|| cannot("onnx was installed but its test data was not found".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_reasons_are_grouped() {
        assert_eq!(
            reason_key("node `a` (#0, Attention): op `Attention` is not supported"),
            "op `Attention` is not supported"
        );
        assert_eq!(
            reason_key(
                "node #2 (TopK, output `y`): op `TopK` is not supported: accy's IR has no sort"
            ),
            "op `TopK` is not supported"
        );
        assert_eq!(
            reason_key("input `x`: element type float16 (code 10) is not supported"),
            "element type float16"
        );
        assert_eq!(
            reason_key("the model uses ai.onnx opset 12; accy imports opsets 13 to 24"),
            "opset older than 13"
        );
    }

    #[test]
    fn options_parse_and_refuse_unknown_flags() {
        let o = parse(&[
            "--jobs".into(),
            "2".into(),
            "--filter".into(),
            "relu".into(),
        ])
        .unwrap();
        assert_eq!((o.jobs, o.filter.as_deref()), (2, Some("relu")));
        assert!(parse(&["--bogus".into()]).is_err());
        assert!(parse(&["--timeout".into(), "x".into()]).is_err());
    }
}
