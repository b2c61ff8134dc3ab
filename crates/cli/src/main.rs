//! The `accy` command.
//!
//! Exit codes, for scripts: 0 success; 1 the program is invalid (bytes, text or types);
//! 2 bad command-line usage; 3 a file could not be read or written.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on the terminal"
)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use accy_ir::{text, verify, Program};
use clap::{Parser, Subcommand};

/// Check and convert accy tensor programs.
///
/// A program file is either text (the format in docs/text-format.md, usually `*.accy`) or wire
/// bytes (docs/wire-format.md, usually `*.accyb`); the command tells them apart by the wire
/// magic at the start.
#[derive(Parser, Debug)]
#[command(name = "accy", version, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 success, 1 invalid program, 2 usage error, 3 I/O error.";

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse or decode FILE and verify it; prints a one-line summary, or every error with its
    /// line:column (text) or byte offset (wire).
    Check {
        /// Program file (text or wire).
        file: PathBuf,
    },
    /// Convert FILE to wire bytes (default) or, with --text, to the text format.
    ///
    /// Example round trip: `accy compile prog.accy -o prog.accyb` then
    /// `accy compile prog.accyb --text -o -`.
    Compile {
        /// Program file (text or wire).
        file: PathBuf,
        /// Where to write; `-` is standard output.
        #[arg(short, long)]
        output: PathBuf,
        /// Write the text format instead of wire bytes.
        #[arg(long)]
        text: bool,
    },
}

/// A failure with the exit code it maps to.
enum Failure {
    Invalid(String),
    Io(String),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { file } => check(&file),
        Command::Compile { file, output, text } => compile(&file, &output, text),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Invalid(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
        Err(Failure::Io(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(3)
        }
    }
}

fn check(file: &Path) -> Result<(), Failure> {
    let program = load(file)?;
    println!(
        "{}: ok: {} inputs, {} weights, {} instructions, {} outputs",
        file.display(),
        program.inputs().count(),
        program.weights().count(),
        program.instructions.len(),
        program.outputs.len()
    );
    Ok(())
}

fn compile(file: &Path, output: &Path, as_text: bool) -> Result<(), Failure> {
    let program = load(file)?;
    let bytes = if as_text {
        text::print(&program).into_bytes()
    } else {
        accy_wire::encode(&program)
    };
    let written = if output == Path::new("-") {
        use std::io::Write;
        std::io::stdout().write_all(&bytes)
    } else {
        std::fs::write(output, &bytes)
    };
    written.map_err(|e| Failure::Io(format!("writing {}: {e}", output.display())))
}

/// Reads, decodes or parses, and verifies a program file.
fn load(file: &Path) -> Result<Program, Failure> {
    let bytes =
        std::fs::read(file).map_err(|e| Failure::Io(format!("reading {}: {e}", file.display())))?;
    let name = file.display();
    let program = if bytes.starts_with(&accy_wire::MAGIC) {
        accy_wire::decode(&bytes).map_err(|e| Failure::Invalid(format!("{name}: {e}")))?
    } else {
        let source = std::str::from_utf8(&bytes).map_err(|e| {
            Failure::Invalid(format!("{name}: neither wire bytes nor UTF-8 text ({e})"))
        })?;
        text::parse(source).map_err(|e| Failure::Invalid(format!("{name}:{e}")))?
    };
    verify(&program).map_err(|e| Failure::Invalid(format!("{name}: {e}")))?;
    Ok(program)
}
