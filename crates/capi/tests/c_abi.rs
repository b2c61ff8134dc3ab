//! The C test: `tests/c/accy_test.c`, compiled with the system C compiler (found by the `cc`
//! crate) and linked against the static library this very `cargo test` built, runs the MLP
//! example and provokes every status code 1-9 (see the C file's comment). This test writes
//! its inputs, runs it, and compares its outputs bit for bit with what `accy-session` computes
//! in Rust for the same options. It runs the C program twice: as is, and built with
//! AddressSanitizer when the compiler can (a printed line says when it cannot).
//!
//! Where the library is: cargo builds `libaccy_capi.a` (the crate's `staticlib` type) beside
//! this test's executable in `target/<profile>/deps/`, in the same build as the rlib this test
//! links, always with the `test-hooks` feature (the crate names itself as a dev-dependency
//! with it). Cargo puts no hash in that file name and rebuilds it whenever the features
//! change, so the file there is the one this build made.
//!
//! Without a C compiler the test fails when running as root (`cargo xtask test`, which CI
//! runs as root, installs one) and otherwise prints that it was skipped and why.

#![allow(clippy::print_stdout, reason = "the test reports what it skipped")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use accy_session::{Scratch, Session, SessionOptions, Status, Weights};

/// The MLP's weights, in the order of `weight_names` in the C file.
const WEIGHTS: [(&str, usize); 6] = [
    ("fc1.weight", 784 * 512),
    ("fc1.bias", 512),
    ("fc2.weight", 512 * 512),
    ("fc2.bias", 512),
    ("fc3.weight", 512 * 10),
    ("fc3.bias", 10),
];

/// Native libraries a C program linking Rust's static library needs
/// (`rustc --print native-static-libs` on Linux).
const NATIVE_LIBS: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Deterministic values in `[-scale, scale)` (xorshift).
fn values(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn bytes_of(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `y = neg(x)` over f32[4].
fn neg_program() -> Vec<u8> {
    let text = "program {\n  %x = input \"x\" : f32[4]\n  %y = neg %x : f32[4]\n  output %y\n}\n";
    accy_wire::encode(&accy_ir::text::parse(text).unwrap())
}

/// A dot of two broadcasts of one scalar over 2^46 elements: its scratch is far larger than
/// the address space, so invoking it fails with out-of-memory before any kernel runs.
fn huge_program() -> Vec<u8> {
    let mut b = accy_ir::Builder::new();
    let k = 1u64 << 46;
    let x = b
        .input("x", accy_ir::Type::new(accy_ir::DType::F32, &[1]))
        .unwrap();
    let row = b.broadcast_to(x, &[1, k]).unwrap();
    let column = b.broadcast_to(x, &[k, 1]).unwrap();
    let product = b.matmul(row, column).unwrap();
    let flat = b.reshape(product, &[1]).unwrap();
    b.output(flat).unwrap();
    accy_wire::encode(&b.finish().unwrap())
}

/// The MLP's output for `x` in a Rust session with `options`.
fn expected(mlp: &[u8], weights: &Weights, x: &[f32], options: SessionOptions) -> Vec<u8> {
    let session = Session::with_options(options).unwrap();
    let h = session.compile_with_weights(mlp, weights).unwrap();
    let mut y = vec![0.0f32; 10];
    session
        .invoke_typed(h, &mut Scratch::new(), &[x], &mut [&mut y])
        .unwrap();
    bytes_of(&y)
}

/// Writes the C program's input files into `dir`; returns the expected outputs of the exact
/// (1 thread) and default (2 threads) sessions.
fn write_inputs(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let text = std::fs::read_to_string(crate_dir().join("../../examples/mlp.accy")).unwrap();
    let mlp = accy_wire::encode(&accy_ir::text::parse(&text).unwrap());
    let x = values(1, 784, 1.0);
    let mut named = Vec::new();
    for (i, (name, n)) in WEIGHTS.iter().enumerate() {
        let w = bytes_of(&values(i as u64 + 2, *n, 0.05));
        std::fs::write(dir.join(format!("{name}.bin")), &w).unwrap();
        named.push((*name, w));
    }
    let refs: Vec<(&str, &[u8])> = named.iter().map(|(n, w)| (*n, w.as_slice())).collect();
    let weights = Weights::new(&refs).unwrap();
    std::fs::write(dir.join("mlp.accyb"), &mlp).unwrap();
    let batch3 = text.replace("[1,", "[3,");
    let mlp_b3 = accy_wire::encode(&accy_ir::text::parse(&batch3).unwrap());
    std::fs::write(dir.join("mlp_b3.accyb"), mlp_b3).unwrap();
    std::fs::write(dir.join("x.bin"), bytes_of(&x)).unwrap();
    std::fs::write(dir.join("neg.accyb"), neg_program()).unwrap();
    let huge = huge_program();
    // What the C program relies on: the huge program compiles and cannot get its scratch.
    let session = Session::with_options(SessionOptions::default().with_threads(1)).unwrap();
    let h = session.compile(&huge).unwrap();
    let e = session
        .invoke(h, &mut Scratch::new(), &[&[0; 4]], &mut [&mut [0; 4]])
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::OutOfMemory, "{e}");
    std::fs::write(dir.join("huge.accyb"), huge).unwrap();
    let exact = SessionOptions::default()
        .with_threads(1)
        .with_reassociate_float_sums(false);
    let default = SessionOptions::default().with_threads(2);
    (
        expected(&mlp, &weights, &x, exact),
        expected(&mlp, &weights, &x, default),
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The system C compiler, as the `cc` crate finds it (`CC`, then `cc`, `gcc`, `clang`), if it
/// runs.
fn c_compiler() -> Result<cc::Tool, String> {
    let target = env!("ACCY_CAPI_TARGET");
    let tool = cc::Build::new()
        .target(target)
        .host(target)
        .opt_level(1)
        .debug(true)
        .cargo_metadata(false)
        .try_get_compiler()
        .map_err(|e| format!("the cc crate found no C compiler: {e}"))?;
    let runs = Command::new(tool.path())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if runs {
        Ok(tool)
    } else {
        Err(format!("{} does not run", tool.path().display()))
    }
}

/// Compiles `sources` into `exe` with `extra` flags; the compiler's output on failure.
fn compile(tool: &cc::Tool, sources: &[&Path], exe: &Path, extra: &[&str]) -> Result<(), String> {
    let mut command = tool.to_command();
    command
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", "-I"])
        .arg(crate_dir().join("include"))
        .args(extra)
        .args(sources)
        .arg("-o")
        .arg(exe);
    let output = command
        .output()
        .map_err(|e| format!("running {command:?}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Runs `exe dir` with `env`, killing it after `limit`; its exit status and output.
fn run(exe: &Path, dir: &Path, env: &[(&str, &str)], limit: Duration) -> (bool, String) {
    let mut child = Command::new(exe)
        .arg(dir)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    match status {
        Some(s) => (s.success(), format!("{exe:?} exited with {s}:\n{text}")),
        None => (
            false,
            format!("{exe:?} ran past {limit:?} and was killed:\n{text}"),
        ),
    }
}

/// Runs the C test binary and checks its outputs against the Rust results.
fn run_and_compare(exe: &Path, dir: &Path, env: &[(&str, &str)], expect: &(Vec<u8>, Vec<u8>)) {
    for out in ["out_exact.bin", "out_default.bin", "out_model.bin"] {
        let _ = std::fs::remove_file(dir.join(out));
    }
    let (ok, report) = run(exe, dir, env, Duration::from_secs(300));
    assert!(ok, "{report}");
    assert!(report.contains(" 0 failed"), "{report}");
    for line in report.lines() {
        if line.starts_with("statuses seen") || line.starts_with("accy_test.c:") {
            println!("{}: {line}", exe.file_name().unwrap().to_string_lossy());
        }
    }
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    assert_eq!(
        read("out_exact.bin"),
        expect.0,
        "exact session: C and Rust differ"
    );
    assert_eq!(
        read("out_default.bin"),
        expect.1,
        "default session: C and Rust differ"
    );
    assert_eq!(
        read("out_model.bin"),
        expect.0,
        "exact-mode model: C and the Rust session differ"
    );
}

#[test]
fn the_c_program_runs_the_mlp_and_sees_every_status() {
    if !cfg!(target_os = "linux") {
        println!(
            "SKIPPED: the C ABI test links with Linux's native libraries; this is {}",
            std::env::consts::OS
        );
        return;
    }
    let tool = match c_compiler() {
        Ok(tool) => tool,
        Err(why) if is_root() => panic!(
            "no C compiler for the C ABI test ({why}), although running as root; \
             `cargo xtask test` installs gcc, or run `apt-get install gcc libc6-dev`"
        ),
        Err(why) => {
            println!(
                "SKIPPED: the C ABI test (crates/capi/tests/c) needs a C compiler: {why}. \
                 Install one (`sudo apt-get install gcc libc6-dev`) or run `cargo xtask test` \
                 as root, which installs it."
            );
            return;
        }
    };
    let exe_dir = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let library = exe_dir.join("libaccy_capi.a");
    assert!(
        library.exists(),
        "{} is missing: cargo builds the staticlib beside the test executables",
        library.display()
    );
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("capi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let expect = write_inputs(&dir);
    let source = crate_dir().join("tests/c/accy_test.c");
    let mut link: Vec<&str> = Vec::new();
    link.push(library.to_str().unwrap());
    link.extend(NATIVE_LIBS);

    let exe = dir.join("accy_test");
    let mut args: Vec<&str> = vec![source.to_str().unwrap()];
    args.extend(&link);
    let sources: Vec<&Path> = args.iter().map(Path::new).collect();
    compile(&tool, &sources, &exe, &[]).unwrap_or_else(|e| panic!("{e}"));
    run_and_compare(&exe, &dir, &[], &expect);

    // Once more under AddressSanitizer, when this compiler can build and run with it.
    let probe_source = dir.join("asan_probe.c");
    std::fs::write(&probe_source, "int main(void) { return 0; }\n").unwrap();
    let probe = dir.join("asan_probe");
    let asan = ["-fsanitize=address", "-fno-omit-frame-pointer"];
    let usable = compile(&tool, &[&probe_source], &probe, &asan).and_then(|()| {
        match run(&probe, &dir, &[], Duration::from_secs(60)) {
            (true, _) => Ok(()),
            (false, report) => Err(report),
        }
    });
    match usable {
        Err(why) => println!("SKIPPED the AddressSanitizer run: this C compiler cannot build or run with -fsanitize=address: {why}"),
        Ok(()) => {
            let asan_exe = dir.join("accy_test_asan");
            compile(&tool, &sources, &asan_exe, &asan).unwrap_or_else(|e| panic!("{e}"));
            // The out-of-memory check asks for more than ASan's allocator serves: it must
            // return NULL, as malloc does, rather than abort.
            let env = [("ASAN_OPTIONS", "allocator_may_return_null=1")];
            run_and_compare(&asan_exe, &dir, &env, &expect);
        }
    }
    if std::env::var_os("ACCY_KEEP_C_TEST").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
