//! `accy bench` and `accy inspect`: what they report, and their failure paths.

mod common;
use common::{accy, assert_code, example, program, stderr, stdout};

#[test]
fn bench_reports_compile_latency_throughput_and_work() {
    let out = accy(&[
        "bench",
        &example("softmax.accy"),
        "--iters",
        "20",
        "--warmup",
        "2",
        "--concurrency",
        "2",
    ]);
    assert_code(&out, 0);
    let text = stdout(&out);
    for needle in [
        "with 2 concurrent callers",
        "compile     median ",
        "fresh session each",
        "p50 ",
        "p90 ",
        "p99 ",
        "(40 invocations after 4 warm-up)",
        "invocations/s",
        // 64·1000 elements: max-reduce, sub, exp, sum-reduce, div = 5 FLOP each.
        "320.00 kFLOP per invocation",
        "GFLOPS",
        // 256000 bytes in + 256000 bytes out.
        "512.00 kB in+out per invocation",
        "GB/s",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    assert!(
        !text.contains("packing"),
        "no weights, no packing line:\n{text}"
    );
}

#[test]
fn bench_by_time_shows_weights_and_progress_only_on_long_runs() {
    let out = accy(&[
        "bench",
        &program("mlp_tiny.accy"),
        "--seconds",
        "0.2",
        "--target",
        "x64-sse2",
    ]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("x64-sse2 with 1 caller"), "{text}");
    assert!(text.contains("weights 92 B resident"), "{text}");
    // Compiling and packing the weights are timed apart.
    assert!(text.contains("packed forms already made)"), "{text}");
    assert!(text.contains("packing     median "), "{text}");
    assert!(
        !stderr(&out).contains("bench:"),
        "no progress line on a short run"
    );
}

#[test]
fn bench_refuses_bad_arguments() {
    let file = example("softmax.accy");
    assert_code(&accy(&["bench", &file, "--concurrency", "0"]), 2);
    assert_code(&accy(&["bench", &file, "--concurrency", "100000"]), 2);
    assert_code(&accy(&["bench", &file, "--iters", "0"]), 2);
    assert_code(&accy(&["bench", &file, "--seconds", "-1"]), 2);
    assert_code(
        &accy(&["bench", &file, "--iters", "5", "--seconds", "1"]),
        2,
    );
    assert_code(&accy(&["bench", "/nonexistent.accy"]), 3);
}

#[test]
fn bench_with_slots_reports_weights_once_scratch_slots_and_prepare_time() {
    let out = accy(&[
        "bench",
        &example("mlp.accy"),
        "--slots",
        "2",
        "--concurrency",
        "3",
        "--iters",
        "10",
        "--warmup",
        "1",
        "--prepare",
        &example("mlp_b64.accy"),
    ]);
    assert_code(&out, 0);
    let text = stdout(&out);
    for needle in [
        "with 3 concurrent callers over 2 inference slots",
        "packed, shared by every plan and slot and counted once",
        "slots       2 × ",
        "mlp_b64.accy: median ",
        "weights already loaded and packed",
        "(30 invocations after 3 warm-up)",
        "invocations/s",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    // 784·512 + 512 + 512·512 + 512 + 512·10 + 10 f32 weights, plus their packed forms.
    let total = number_after(&text, "weights     ");
    let given = number_after(&text, "bytes: ");
    let packed = number_after(&text, "given + ");
    assert_eq!(given, 2_678_824.0, "{text}");
    assert!(packed > 0.0 && total == given + packed, "{text}");
    let per_slot = number_after(&text, "slots       2 × ");
    assert!(number_after(&text, "each (") == 2.0 * per_slot, "{text}");
}

#[test]
fn bench_with_slots_refuses_bad_arguments() {
    let file = example("mlp.accy");
    assert_code(&accy(&["bench", &file, "--slots", "0"]), 2);
    assert_code(&accy(&["bench", &file, "--slots", "100000"]), 2);
    assert_code(&accy(&["bench", &file, "--prepare", &file]), 2);
    // Another network's program is not a shape of this one.
    let out = accy(&[
        "bench",
        &file,
        "--slots",
        "1",
        "--iters",
        "1",
        "--prepare",
        &example("softmax.accy"),
    ]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("invalid model"), "{}", stderr(&out));
}

/// The number after `label` in `text` (up to the next space).
fn number_after(text: &str, label: &str) -> f64 {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} in {text}"))
        + label.len();
    let word = text[at..].split_whitespace().next().unwrap();
    word.parse()
        .unwrap_or_else(|_| panic!("{word:?} after {label:?}"))
}

#[test]
fn throughput_of_oversubscribed_callers_fits_the_measured_window() {
    // 24 callers on 2 cores: each caller's own rate says little, since callers wait for
    // cores; the throughput must be what the common window held.
    let out = accy(&[
        "bench",
        &example("softmax.accy"),
        "--iters",
        "10",
        "--warmup",
        "1",
        "--concurrency",
        "24",
    ]);
    assert_code(&out, 0);
    let text = stdout(&out);
    let rate = number_after(&text, "throughput  ");
    let invocations = number_after(&text, "invocations/s (");
    let window = number_after(&text, "invocations in ");
    assert_eq!(invocations, 240.0, "{text}");
    // The rate is printed to 0.1, the window to 1 µs.
    assert!(
        rate * window <= invocations + 0.05 * window + rate * 1e-6,
        "{rate}/s over {window} s claims more than {invocations} invocations:\n{text}"
    );
}

#[test]
fn warm_up_is_bounded_by_seconds_and_progress_stays_off_pipes() {
    // A warm-up of 10^8 softmax invocations would take hours; --seconds must cut it short.
    // The run still lasts past 2 seconds, when a terminal would get a progress line; stderr
    // here is a pipe, which must get none.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_accy"))
        .args(["bench", &example("softmax.accy"), "--warmup", "100000000"])
        .args(["--seconds", "1.2"])
        .env_remove("ACCY_CPU_FEATURES_MAX")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A hang guard, not a timing assertion: the bounded run ends within seconds.
    let guard = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if guard.elapsed() > std::time::Duration::from_secs(300) {
            child.kill().unwrap();
            panic!("bench --seconds 1.2 still warming up after 300 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    assert_code(&out, 0);
    let text = stdout(&out);
    let warmups = number_after(&text, "invocations after ");
    assert!((1.0..1e8).contains(&warmups), "{text}");
    let err = stderr(&out);
    assert!(!err.contains("bench:") && !err.contains('\r'), "{err:?}");
}

#[test]
fn a_program_larger_than_the_memory_budget_fails_cleanly() {
    // Valid (the type fits isize) but far beyond what the command allocates: exit 4 with a
    // message, never an allocation abort.
    let dir = common::scratch_dir("huge");
    let file = dir.join("huge.accy");
    std::fs::write(
        &file,
        "program {\n  %x = input \"x\" : f32[1099511627776]\n  %y = neg %x : f32[1099511627776]\n  output %y\n}\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    for command in ["run", "bench"] {
        let out = accy(&[command, file]);
        assert_code(&out, 4);
        assert!(stderr(&out).contains("GiB"), "{}", stderr(&out));
    }
}

#[test]
fn inspect_shows_slots_commands_kernels_and_disassembly() {
    let out = accy(&["inspect", &example("softmax.accy"), "--target", "x64-avx2"]);
    assert_code(&out, 0);
    let text = stdout(&out);
    for needle in [
        "target x64-avx2 (x86_64+",
        "slots (scratch: ",
        "s0: input 0 f32[64,1000] 256000 bytes align 4",
        "s1: output 0 f32[64,1000] 256000 bytes align 4",
        "commands:",
        "0: dispatch kernel 0",
        "0: kernel `k0`: dims [64, 1000], 1 parallel + 1 reduced",
        "%0 = load b0[0 + 1000*i0 + i1] : f32",
        "store max over reduction dims",
        // Default mode: `exp` is expanded into vector math (fused multiply-adds, bit casts).
        "fma %",
        "bitcast %",
        "code: ",
        "ret",
        "ymm",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let sse2 = stdout(&accy(&[
        "inspect",
        &example("softmax.accy"),
        "--target",
        "x64-sse2",
    ]));
    assert!(sse2.contains("ret") && !sse2.contains("ymm"), "{sse2}");
    let short = stdout(&accy(&[
        "inspect",
        &example("softmax.accy"),
        "--no-disassembly",
    ]));
    assert!(
        short.contains("kernel 0") && !short.contains(" ret"),
        "{short}"
    );
}

#[test]
fn inspect_shows_aarch64_code_and_refuses_unknown_targets_and_bad_files() {
    let file = example("layernorm.accy");
    let out = accy(&["inspect", &file, "--target", "aarch64"]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("target aarch64-neon"), "{text}");
    assert!(
        text.contains("ret") && !text.contains("<undecodable>"),
        "{text}"
    );
    assert_code(&accy(&["inspect", &file, "--target", "x86"]), 2);
    assert_code(&accy(&["inspect", "/nonexistent.accy"]), 3);
}
