//! `accy run`: values from .npy files and literals, outputs as .npy, and every failure path
//! with its exit code.

use accy_cli::npy;
use accy_ir::{interp, Tensor, TensorData};

mod common;
use common::{accy, accy_env, assert_code, fixture, program, scratch_dir, stderr, stdout, write};

/// A program whose output is easy to predict: `x * s + w` over f32[3,5].
const AFFINE: &str = "# x * s + w.\nprogram {\n  %x = input \"x\" : f32[3,5]\n  \
    %s = input \"s\" : f32[]\n  %w = weight \"w\" : f32[5]\n  \
    %sb = broadcast %s, dims=[3,5], axes=[] : f32[3,5]\n  \
    %wb = broadcast %w, dims=[3,5], axes=[1] : f32[3,5]\n  \
    %m = mul %x, %sb : f32[3,5]\n  %y = add %m, %wb : f32[3,5]\n  output %y\n}\n";

fn read_npy(path: &std::path::Path) -> Tensor {
    npy::read(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn npy_and_literal_values_run_and_outputs_are_written_as_npy() {
    let dir = scratch_dir("run-values");
    let prog = write(&dir, "affine.accy", AFFINE);
    let x = format!("x=@{}", fixture("f32_3x5.npy"));
    let out = accy(&[
        "run",
        &prog,
        "--input",
        &x,
        "--input",
        "s=2",
        "--weight",
        "w=[1, 2, 3, 4, 5]",
        "--output-dir",
        dir.join("out").to_str().unwrap(),
    ]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("input \"x\": f32[3,5] from "), "{text}");
    assert!(text.contains("input \"s\": f32[] literal"), "{text}");
    assert!(
        text.contains("output 0: f32[3,5] = [-2.5, -1, 0.5, 2, 3.5, "),
        "{text}"
    );
    assert!(text.contains("min -2.500000 max 8.500000"), "{text}");

    let got = read_npy(&dir.join("out/out0.npy"));
    let x = read_npy(std::path::Path::new(&fixture("f32_3x5.npy")));
    let source = std::fs::read_to_string(&prog).unwrap();
    let p = accy_ir::text::parse(&source).unwrap();
    let s = Tensor::new(&[], TensorData::F32(vec![2.0])).unwrap();
    let w = Tensor::new(&[5], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0])).unwrap();
    assert_eq!(vec![got], interp::eval(&p, &[x, s, w]).unwrap());
}

#[test]
fn a_weights_file_is_used_and_a_weight_on_the_command_line_takes_precedence() {
    let dir = scratch_dir("run-weights-file");
    let prog = write(&dir, "affine.accy", AFFINE);
    let w = Tensor::new(&[5], TensorData::F32(vec![10.0, 20.0, 30.0, 40.0, 50.0])).unwrap();
    let file = dir.join("affine.safetensors");
    std::fs::write(
        &file,
        accy_cli::weights_file::write(&[("w".into(), w)]).unwrap(),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            &prog,
            "--input",
            "x=[[0,0,0,0,0],[0,0,0,0,0],[1,1,1,1,1]]",
            "--input",
            "s=1",
            "--weights",
            file.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = accy(&args);
        assert_code(&out, 0);
        stdout(&out)
    };
    let text = run(&[]);
    assert!(text.contains("1 weights from"), "{text}");
    assert!(text.contains("= [10, 20, 30, 40, 50, 10, "), "{text}");
    let text = run(&["--weight", "w=[1, 2, 3, 4, 5]"]);
    assert!(text.contains("weight \"w\": f32[5] literal"), "{text}");
    assert!(text.contains("= [1, 2, 3, 4, 5, 1, "), "{text}");
    // A file tensor of another shape is refused, naming both sides.
    let bad = Tensor::new(&[4], TensorData::F32(vec![0.0; 4])).unwrap();
    std::fs::write(
        &file,
        accy_cli::weights_file::write(&[("w".into(), bad)]).unwrap(),
    )
    .unwrap();
    let out = accy(&["run", &prog, "--weights", file.to_str().unwrap()]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("\"w\" is f32[4] in the file, but the program's weight is f32[5]"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn missing_values_are_seeded_random_and_repeatable() {
    let dir = scratch_dir("run-seeded");
    let prog = program("mlp_tiny.accy");
    let run = |seed: &str, sub: &str| {
        let d = dir.join(sub);
        let out = accy(&[
            "run",
            &prog,
            "--seed",
            seed,
            "--output-dir",
            d.to_str().unwrap(),
        ]);
        assert_code(&out, 0);
        assert!(stdout(&out).contains(&format!("random (seed {seed})")));
        std::fs::read(d.join("out0.npy")).unwrap()
    };
    let a = run("5", "a");
    assert_eq!(a, run("5", "b"));
    assert_ne!(a, run("6", "c"));
}

#[test]
fn values_that_do_not_fit_the_program_are_usage_errors() {
    let dir = scratch_dir("run-misfit");
    let prog = write(&dir, "affine.accy", AFFINE);
    let cases: [(&[&str], &str); 7] = [
        (
            &["--input", "nope=1"],
            "has no input named \"nope\" (it has: x, s)",
        ),
        (
            &["--input", "w=[1,2,3,4,5]"],
            "is a weight of the program; give it with --weight",
        ),
        (&["--input", "s"], "expected NAME=@file.npy or NAME=value"),
        (&["--input", "s=[1,2]"], "not a f32[] literal"),
        (&["--input", "s=abc"], "bad f32 value `abc`"),
        (&["--input", "s=1", "--input", "s=2"], "given twice"),
        (
            &["--weight", "w=[1,2,3]"],
            "literal has 3 elements but f32[5] has 5",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["run", prog.as_str()];
        args.extend_from_slice(extra);
        let out = accy(&args);
        assert_code(&out, 2);
        assert!(stderr(&out).contains(needle), "{extra:?}: {}", stderr(&out));
    }
    let wrong_shape = format!("x=@{}", fixture("f32_2x3.npy"));
    let out = accy(&["run", &prog, "--input", &wrong_shape]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("holds f32[2,3] but the program's input \"x\" is f32[3,5]"),
        "{}",
        stderr(&out)
    );
    let wrong_dtype = format!("x=@{}", fixture("i32_4.npy"));
    assert_code(&accy(&["run", &prog, "--input", &wrong_dtype]), 2);
}

#[test]
fn unreadable_files_are_io_errors_and_bad_programs_invalid() {
    let dir = scratch_dir("run-io");
    let prog = write(&dir, "affine.accy", AFFINE);
    let out = accy(&["run", &prog, "--input", "x=@/nonexistent/x.npy"]);
    assert_code(&out, 3);
    assert!(stderr(&out).contains("reading /nonexistent/x.npy"));
    let fortran = format!("x=@{}", fixture("f32_fortran.npy"));
    let out = accy(&["run", &prog, "--input", &fortran]);
    assert_code(&out, 3);
    assert!(stderr(&out).contains("Fortran-order"), "{}", stderr(&out));
    let not_npy = format!("x=@{prog}");
    assert_code(&accy(&["run", &prog, "--input", &not_npy]), 3);

    // A file longer than its header says is not "truncated".
    let mut long = std::fs::read(fixture("f32_3x5.npy")).unwrap();
    long.extend_from_slice(&[0; 4]);
    let long_path = dir.join("long.npy");
    std::fs::write(&long_path, &long).unwrap();
    let out = accy(&[
        "run",
        &prog,
        "--input",
        &format!("x=@{}", long_path.display()),
    ]);
    assert_code(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("4 trailing bytes after the data: the header's shape needs 60 data bytes, the file has 64")
            && !err.contains("truncated"),
        "{err}"
    );

    let blocker = write(&dir, "file", "");
    let out = accy(&["run", &prog, "--output-dir", &format!("{blocker}/sub")]);
    assert_code(&out, 3);

    let bad = write(
        &dir,
        "bad.accy",
        "program {\n  %x = input \"x\" : f32[2]\n  %y = exp %x : f32[3]\n  output %y\n}\n",
    );
    assert_code(&accy(&["run", &bad]), 1);
}

#[test]
fn targets_and_runtime_failures_have_their_own_codes() {
    let prog = program("softmax_rows.accy");
    let out = accy(&["run", &prog, "--target", "x64-sse2"]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("compiled for x64-sse2"));
    let out = accy(&["run", &prog, "--target", "riscv"]);
    assert_code(&out, 2);
    let out = accy(&["run", &prog, "--target", "aarch64"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("runs only on an aarch64 host"));
    // A configuration the session refuses is a runtime failure, exit 4.
    let out = accy_env(&["run", &prog], &[("ACCY_CPU_FEATURES_MAX", "bogus")]);
    assert_code(&out, 4);
    assert!(stderr(&out).contains("bogus"), "{}", stderr(&out));
}

#[test]
fn extreme_slice_strides_and_pad_offsets_run_like_the_interpreter() {
    // `accy check` accepts these, so `accy run` must run them: a stride of u64::MAX on a
    // result dim of extent 1, pad offsets of ±2^63 that leave nothing of the operand, and an
    // interior gap of 2^63 - 1 that leaves one element per axis.
    let programs = [
        "program {\n  %x = input \"x\" : f32[3,4]\n  \
         %y = slice %x, start=[1,0], limit=[3,4], stride=[18446744073709551615,1] : f32[1,4]\n  \
         output %y\n}\n",
        "program {\n  %x = input \"x\" : f32[3]\n  %v = input \"v\" : f32[]\n  \
         %y = pad %x, %v, low=[-9223372036854775808], high=[9223372036854775807], \
         interior=[0] : f32[2]\n  \
         %z = pad %x, %v, low=[9223372036854775807], high=[-9223372036854775807], \
         interior=[0] : f32[3]\n  output %y\n  output %z\n}\n",
        "program {\n  %x = input \"x\" : f32[2,3]\n  %v = input \"v\" : f32[]\n  \
         %y = pad %x, %v, low=[-9223372036854775808,0], high=[-9223372036854775807,0], \
         interior=[18446744073709551615,0] : f32[2,3]\n  \
         %z = pad %x, %v, low=[0,0], high=[-9223372036854775807,0], \
         interior=[9223372036854775807,0] : f32[2,3]\n  output %y\n  output %z\n}\n",
    ];
    let dir = scratch_dir("run-extremes");
    for (n, source) in programs.iter().enumerate() {
        let prog = write(&dir, &format!("p{n}.accy"), source);
        let out_dir = dir.join(format!("out{n}"));
        let out = accy(&["run", &prog, "--output-dir", out_dir.to_str().unwrap()]);
        assert_code(&out, 0);
        let p = accy_ir::text::parse(source).unwrap();
        let expected = interp::eval(&p, &accy_cli::seeded::params(&p, 0).unwrap()).unwrap();
        let got: Vec<Tensor> = (0..expected.len())
            .map(|i| read_npy(&out_dir.join(format!("out{i}.npy"))))
            .collect();
        assert_eq!(got, expected, "{source}");
    }
}
