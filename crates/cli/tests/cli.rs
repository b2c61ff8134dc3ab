//! Drives the `accy` binary: each subcommand's success and failure paths and exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

fn accy(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_accy"))
        .args(args)
        .output()
        .expect("run accy")
}

fn program(name: &str) -> String {
    format!("{}/../ir/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn check_accepts_a_valid_text_program() {
    let out = accy(&["check", &program("mlp_tiny.accy")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("ok: 1 inputs, 4 weights, 9 instructions, 1 outputs"));
}

#[test]
fn text_to_wire_and_back_round_trips() {
    let wire = scratch("mlp.accyb");
    let out = accy(&[
        "compile",
        &program("mlp_tiny.accy"),
        "-o",
        wire.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bytes = std::fs::read(&wire).unwrap();
    assert!(accy_wire::has_magic(&bytes));

    let check = accy(&["check", wire.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));

    let back = accy(&["compile", wire.to_str().unwrap(), "--text", "-o", "-"]);
    assert_eq!(back.status.code(), Some(0), "{}", stderr(&back));
    let source = std::fs::read_to_string(program("mlp_tiny.accy")).unwrap();
    let original = accy_ir::text::parse(&source).unwrap();
    assert_eq!(accy_ir::text::parse(&stdout(&back)).unwrap(), original);
}

#[test]
fn a_parse_error_reports_line_and_column_with_exit_code_1() {
    let path = scratch("bad.accy");
    std::fs::write(
        &path,
        "program {\n  %x = input \"x\" : f32[2]\n  %y = frobnicate %x : f32[2]\n  output %y\n}\n",
    )
    .unwrap();
    let out = accy(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("bad.accy:3:8:"), "{err}");
    assert!(err.contains("frobnicate"), "{err}");
}

#[test]
fn a_type_error_names_the_instruction() {
    let path = scratch("ill_typed.accy");
    std::fs::write(
        &path,
        "program {\n  %x = input \"x\" : f32[2]\n  %y = exp %x : f32[3]\n  output %y\n}\n",
    )
    .unwrap();
    let out = accy(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("%1 = exp %0 : f32[3]"), "{err}");
    assert!(err.contains("declared type f32[3]"), "{err}");
    // Each verifier error points at its line and column, as `accy check --help` promises.
    assert!(
        err.contains("ill_typed.accy:3:3: `%1 = exp %0 : f32[3]`: "),
        "{err}"
    );
    let two = scratch("two_errors.accy");
    std::fs::write(
        &two,
        "program {\n  %x = input \"x\" : f32[2]\n  %y = exp %x : f32[3]\n\
         \t%z = neg %x : i32[2]\n  output %z\n}\n",
    )
    .unwrap();
    let err = stderr(&accy(&["check", two.to_str().unwrap()]));
    assert!(
        err.contains("2 verifier error(s)")
            && err.contains("two_errors.accy:3:3: `%1 = exp")
            && err.contains("two_errors.accy:4:2: `%2 = neg"),
        "{err}"
    );
}

#[test]
fn corrupt_wire_bytes_are_invalid_with_an_offset() {
    let wire = scratch("corrupt.accyb");
    let source = std::fs::read_to_string(program("softmax_rows.accy")).unwrap();
    let mut bytes = accy_wire::encode(&accy_ir::text::parse(&source).unwrap());
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&wire, &bytes).unwrap();
    let out = accy(&["check", wire.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("at byte"), "{}", stderr(&out));
}

#[test]
fn a_missing_file_is_an_io_error_and_bad_usage_is_2() {
    let out = accy(&["check", "/nonexistent/prog.accy"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("reading /nonexistent/prog.accy"));
    assert_eq!(accy(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        accy(&["compile", &program("mlp_tiny.accy")]).status.code(),
        Some(2)
    );
}

#[test]
fn help_lists_the_commands_and_exit_codes() {
    let out = accy(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for needle in [
        "check",
        "compile",
        "run",
        "bench",
        "inspect",
        "Exit codes",
        "4 runtime failure",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

#[test]
fn an_empty_type_with_a_huge_dim_is_refused_without_being_called_large() {
    let path = scratch("empty_huge.accy");
    std::fs::write(
        &path,
        "program {\n  %x = input \"x\" : f32[0,18446744073709551615]\n  output %x\n}\n",
    )
    .unwrap();
    let out = accy(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("type f32[0,18446744073709551615] holds 0 bytes, but its non-zero dims")
            && !err.contains("larger than"),
        "{err}"
    );
}
