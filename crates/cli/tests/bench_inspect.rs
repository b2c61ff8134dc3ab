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
        "--threads",
        "2",
    ]);
    assert_code(&out, 0);
    let text = stdout(&out);
    for needle in [
        "on 2 threads",
        "compile     median ",
        "fresh session each",
        "p50 ",
        "p90 ",
        "p99 ",
        "(40 invocations, 2 warmup each)",
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
    assert!(text.contains("x64-sse2 on 1 thread"), "{text}");
    assert!(text.contains("weights 92 B resident"), "{text}");
    assert!(
        !stderr(&out).contains("bench:"),
        "no progress line on a short run"
    );
}

#[test]
fn bench_refuses_bad_arguments() {
    let file = example("softmax.accy");
    assert_code(&accy(&["bench", &file, "--threads", "0"]), 2);
    assert_code(&accy(&["bench", &file, "--threads", "100000"]), 2);
    assert_code(&accy(&["bench", &file, "--iters", "0"]), 2);
    assert_code(&accy(&["bench", &file, "--seconds", "-1"]), 2);
    assert_code(
        &accy(&["bench", &file, "--iters", "5", "--seconds", "1"]),
        2,
    );
    assert_code(&accy(&["bench", "/nonexistent.accy"]), 3);
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
        "exp %",
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
