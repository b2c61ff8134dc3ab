//! The subcommands, and what they share: failures and their exit codes, loading programs,
//! choosing a target, assembling parameter values and compiling them into a session.

pub mod bench;
pub mod buffer;
pub mod inspect;
pub mod model;
pub mod out;
pub mod run;
pub mod values;

use std::path::Path;

use accy_ir::{text, verify, Program};
use accy_session::{Error, Handle, Session, SessionOptions};

pub use buffer::Buffer;
pub use out::Out;

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub enum Failure {
    /// Exit 1: the program is invalid.
    Invalid(String),
    /// Exit 2: bad arguments, or values that do not fit the program.
    Usage(String),
    /// Exit 3: a file could not be read or written, or is not a valid `.npy` file.
    Io(String),
    /// Exit 4: the program could not be compiled, loaded or run here.
    Runtime(String),
    /// Exit 0, quietly: standard output is a pipe whose reader has gone (`accy … | head`),
    /// so there is no one left to tell anything.
    ClosedPipe,
}

impl Failure {
    /// The process exit code.
    pub fn code(&self) -> u8 {
        match self {
            Failure::Invalid(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Io(_) => 3,
            Failure::Runtime(_) => 4,
            Failure::ClosedPipe => 0,
        }
    }

    /// The message for stderr.
    pub fn message(&self) -> &str {
        match self {
            Failure::Invalid(m) | Failure::Usage(m) | Failure::Io(m) | Failure::Runtime(m) => m,
            Failure::ClosedPipe => "",
        }
    }

    /// A session error: an invalid program is exit 1, a model request that breaks a rule
    /// (`--prepare` of another network) exit 2, everything else a runtime failure.
    pub fn session(context: &str, e: &Error) -> Failure {
        let mut message = format!("{context}: {e}");
        if let Some(cause) = e.cause() {
            let shown = cause.to_string();
            if !message.contains(&shown) {
                message.push_str(&format!(" ({shown})"));
            }
        }
        match e {
            Error::InvalidProgram(_) | Error::UnsupportedVersion(_) => Failure::Invalid(message),
            Error::InvalidModel(_) => Failure::Usage(message),
            _ => Failure::Runtime(message),
        }
    }
}

/// A code generator named by `--target`: one of the names `accy_lower::target::names()`
/// lists (`x64-sse2`, `x64-avx2`, `x64-avx512`, `aarch64-neon`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetName(pub &'static str);

/// Parses a `--target` value: a target name, or `aarch64` for `aarch64-neon`.
pub fn parse_target(text: &str) -> Result<TargetName, String> {
    let text = if text == "aarch64" {
        "aarch64-neon"
    } else {
        text
    };
    accy_lower::target::names()
        .into_iter()
        .find(|&name| name == text)
        .map(TargetName)
        .ok_or_else(|| {
            format!(
                "unknown target `{text}`: expected one of {} (or aarch64)",
                accy_lower::target::names().join(", ")
            )
        })
}

/// `accy check`: loads (or imports) and verifies `file` and prints a one-line summary.
pub fn check(file: &Path, model: &model::ModelArgs, out: &mut Out) -> Result<(), Failure> {
    let program = model::load_model(file, model, &[])?.program;
    writeln!(
        out,
        "{}: ok: {} inputs, {} weights, {} instructions, {} outputs",
        file.display(),
        program.inputs().count(),
        program.weights().count(),
        program.instructions.len(),
        program.outputs.len()
    )
}

/// What `accy compile` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompileTo {
    /// Wire bytes.
    Wire,
    /// The text format.
    Text,
    /// A compiled artifact for `target` (the host's best when `None`) in the numeric mode
    /// `numerics`.
    Artifact {
        /// The code generator.
        target: Option<TargetName>,
        /// `--exact` and `--flush-subnormals`.
        numerics: Numerics,
    },
}

/// `accy compile`: writes `file` as wire bytes, text or a compiled artifact to `output` (`-`
/// for stdout).
pub fn compile(file: &Path, output: &Path, to: CompileTo, out: &mut Out) -> Result<(), Failure> {
    let program = load(file)?;
    let bytes = match to {
        CompileTo::Text => text::print(&program).into_bytes(),
        CompileTo::Wire => accy_wire::encode(&program),
        CompileTo::Artifact { target, numerics } => session(target, numerics, Some(1))?
            .compile_program_artifact(&program)
            .map_err(|e| Failure::session("compile", &e))?,
    };
    if output == Path::new("-") {
        return out.bytes(&bytes);
    }
    std::fs::write(output, &bytes)
        .map_err(|e| Failure::Io(format!("writing {}: {e}", output.display())))
}

/// True when `file` starts with the artifact magic (`accy compile --artifact` output). A file
/// that cannot be read is not one; the caller's own read reports why.
pub fn is_artifact(file: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0; accy_artifact::serial::MAGIC.len()];
    std::fs::File::open(file)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| accy_artifact::serial::has_magic(&head))
}

/// Reads, decodes or parses, and verifies a program file; an ONNX model (`*.onnx`) is
/// imported (its weights are left out: `accy import` writes them). Verifier errors in text
/// input carry the `file:line:column` of the item they are about.
pub fn load(file: &Path) -> Result<Program, Failure> {
    if model::is_onnx(file) {
        return model::load_model(file, &model::ModelArgs::default(), &[]).map(|m| m.program);
    }
    let bytes = buffer::read_file(file)?;
    let name = file.display();
    let (program, map) = if bytes.starts_with(&accy_wire::MAGIC) {
        let program =
            accy_wire::decode(&bytes).map_err(|e| Failure::Invalid(format!("{name}: {e}")))?;
        (program, None)
    } else {
        let source = std::str::from_utf8(&bytes).map_err(|e| {
            Failure::Invalid(format!("{name}: neither wire bytes nor UTF-8 text ({e})"))
        })?;
        let (program, map) = text::parse_with_source_map(source)
            .map_err(|e| Failure::Invalid(format!("{name}:{e}")))?;
        (program, Some(map))
    };
    if let Err(errors) = verify(&program) {
        let mut message = format!("{name}: {} verifier error(s)", errors.0.len());
        for e in &errors.0 {
            match map.as_ref().and_then(|m| m.position(e.location)) {
                Some(at) => message.push_str(&format!("\n  {name}:{}:{}: {e}", at.line, at.column)),
                None => message.push_str(&format!("\n  {e}")),
            }
        }
        return Err(Failure::Invalid(message));
    }
    Ok(program)
}

/// The most threads per invocation `--threads` accepts.
pub const MAX_THREADS: usize = 256;

/// The numeric options of `run`, `bench` and `compile --artifact`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Numerics {
    /// `--exact`: never reassociate float sums.
    pub exact: bool,
    /// `--flush-subnormals`: runs flush subnormal floats to zero.
    pub flush_subnormals: bool,
}

/// A session generating code for `target` (the host's best when `None`); a usage error for a
/// target of another architecture, a runtime failure if this CPU cannot run its code.
pub fn session(
    target: Option<TargetName>,
    numerics: Numerics,
    threads: Option<usize>,
) -> Result<Session, Failure> {
    Session::with_options(session_options(target, numerics, threads)?)
        .map_err(|e| Failure::session("session", &e))
}

/// The options of a session (or model context) for `target`, `exact` and `threads` per
/// invocation; a usage error for a target of another architecture or a thread count out of
/// range.
pub fn session_options(
    target: Option<TargetName>,
    numerics: Numerics,
    threads: Option<usize>,
) -> Result<SessionOptions, Failure> {
    let mut options = SessionOptions::default()
        .with_reassociate_float_sums(!numerics.exact)
        .with_flush_subnormals(numerics.flush_subnormals);
    if let Some(threads) = threads {
        if threads == 0 || threads > MAX_THREADS {
            return Err(Failure::Usage(format!(
                "--threads must be between 1 and {MAX_THREADS}, not {threads}"
            )));
        }
        options = options.with_threads(threads);
    }
    if let Some(TargetName(name)) = target {
        let arch = accy_lower::lookup_name(name, None)
            .map_err(|e| Failure::Usage(e.to_string()))?
            .spec()
            .arch;
        if Some(arch) != accy_artifact::Arch::host() {
            return Err(Failure::Usage(format!(
                "{name} code runs only on an {arch} host (this one is not); `accy inspect \
                 --target {name}` shows it here"
            )));
        }
        options = options.with_target(name);
    }
    Ok(options)
}

/// Runs `handle` once on the buffers.
pub fn invoke(
    session: &Session,
    handle: Handle,
    scratch: &mut accy_session::Scratch,
    inputs: &[Buffer],
    outputs: &mut [Buffer],
) -> Result<(), Error> {
    let ins: Vec<&[u8]> = inputs.iter().map(Buffer::bytes).collect();
    let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Buffer::bytes_mut).collect();
    session.invoke(handle, scratch, &ins, &mut outs)
}
