//! The subcommands, and what they share: failures and their exit codes, loading programs,
//! choosing a target, assembling parameter values and compiling them into a session.

pub mod bench;
pub mod inspect;
pub mod model;
pub mod run;

use std::path::Path;

use accy_cli::{npy, seeded};
use accy_ir::{text, verify, ParamKind, Program, Tensor, TensorData};
use accy_session::{Descriptor, Error, Handle, Session, SessionOptions, Weights};

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
}

impl Failure {
    /// The process exit code.
    pub fn code(&self) -> u8 {
        match self {
            Failure::Invalid(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Io(_) => 3,
            Failure::Runtime(_) => 4,
        }
    }

    /// The message for stderr.
    pub fn message(&self) -> &str {
        match self {
            Failure::Invalid(m) | Failure::Usage(m) | Failure::Io(m) | Failure::Runtime(m) => m,
        }
    }

    /// A session error: an invalid program is exit 1, everything else a runtime failure.
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
pub fn check(file: &Path, model: &model::ModelArgs) -> Result<(), Failure> {
    let program = model::load_model(file, model)?.program;
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

/// `accy compile`: writes `file` as wire bytes, or as text with `as_text`, to `output`
/// (`-` for stdout).
pub fn compile(file: &Path, output: &Path, as_text: bool) -> Result<(), Failure> {
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

/// Reads, decodes or parses, and verifies a program file; an ONNX model (`*.onnx`) is
/// imported (its weights are left out: `accy import` writes them).
pub fn load(file: &Path) -> Result<Program, Failure> {
    if model::is_onnx(file) {
        return model::load_model(file, &model::ModelArgs::default()).map(|m| m.program);
    }
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

/// A session generating code for `target` (the host's best when `None`); a usage error for a
/// target of another architecture, a runtime failure if this CPU cannot run its code.
pub fn session(target: Option<TargetName>, exact: bool) -> Result<Session, Failure> {
    let mut options = SessionOptions::default().with_reassociate_float_sums(!exact);
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
    Session::with_options(options).map_err(|e| Failure::session("session", &e))
}

/// The most bytes of parameters plus outputs `run` and `bench` allocate for one program. A
/// verified program may declare tensors up to `isize::MAX` bytes; beyond this budget the
/// command fails cleanly (exit 4) instead of aborting on a failed allocation.
pub const MEMORY_BUDGET: u64 = 16 << 30;

fn check_memory_budget(program: &Program) -> Result<(), Failure> {
    let params = program.params.iter().map(|p| p.ty.byte_size());
    let outputs = program
        .outputs
        .iter()
        .map(|o| program.value_type(o.value).and_then(|t| t.byte_size()));
    let total = params
        .chain(outputs)
        .try_fold(0u64, |acc, b| acc.checked_add(b?));
    match total {
        Some(bytes) if bytes <= MEMORY_BUDGET => Ok(()),
        _ => Err(Failure::Runtime(format!(
            "the program's parameters and outputs need more than the {} GiB this command allocates",
            MEMORY_BUDGET >> 30
        ))),
    }
}

/// Where a parameter's value came from, for the run report.
#[derive(Clone, Debug)]
pub enum Source {
    /// Seeded random values.
    Random,
    /// A `.npy` file.
    File(String),
    /// A literal on the command line.
    Literal,
    /// The model's own weights (ONNX initializers or a `--weights` file).
    Model,
}

/// Values for every parameter of `program`, in parameter order: those named in `inputs` and
/// `weights` (`NAME=@file.npy` or `NAME=literal`), the rest seeded random values.
pub fn arguments(
    program: &Program,
    inputs: &[String],
    weights: &[String],
    seed: u64,
) -> Result<(Vec<Tensor>, Vec<Source>), Failure> {
    check_memory_budget(program)?;
    let mut values = seeded::params(program, seed).ok_or_else(|| {
        Failure::Runtime("a parameter is too large to fill on this machine".into())
    })?;
    let mut sources = vec![Source::Random; values.len()];
    for (flag, kind, given) in [
        ("--input", ParamKind::Input, inputs),
        ("--weight", ParamKind::Weight, weights),
    ] {
        for arg in given {
            let (name, value) = arg.split_once('=').ok_or_else(|| {
                Failure::Usage(format!(
                    "{flag} {arg}: expected NAME=@file.npy or NAME=value"
                ))
            })?;
            let index = param_index(program, kind, name, flag)?;
            if !matches!(sources[index], Source::Random) {
                return Err(Failure::Usage(format!("{flag} {name} is given twice")));
            }
            let ty = &program.params[index].ty;
            let (tensor, source) = if let Some(path) = value.strip_prefix('@') {
                let bytes =
                    std::fs::read(path).map_err(|e| Failure::Io(format!("reading {path}: {e}")))?;
                let tensor =
                    npy::read(&bytes).map_err(|e| Failure::Io(format!("reading {path}: {e}")))?;
                if tensor.ty() != *ty {
                    return Err(Failure::Usage(format!(
                        "{flag} {name}: {path} holds {} but the program's {} {name:?} is {ty}",
                        tensor.ty(),
                        kind_name(kind)
                    )));
                }
                (tensor, Source::File(path.to_owned()))
            } else {
                let tensor = text::parse_literal(value, ty).map_err(|e| {
                    Failure::Usage(format!(
                        "{flag} {name}: not a {ty} literal: {}:{}: {}",
                        e.line, e.column, e.message
                    ))
                })?;
                (tensor, Source::Literal)
            };
            values[index] = tensor;
            sources[index] = source;
        }
    }
    Ok((values, sources))
}

fn kind_name(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Input => "input",
        _ => "weight",
    }
}

/// The position of the parameter `name` of `kind`, or a usage failure listing the names.
fn param_index(
    program: &Program,
    kind: ParamKind,
    name: &str,
    flag: &str,
) -> Result<usize, Failure> {
    if let Some(i) = program
        .params
        .iter()
        .position(|p| p.kind == kind && p.name == name)
    {
        return Ok(i);
    }
    if let Some(other) = program.params.iter().find(|p| p.name == name) {
        let hint = if other.kind == ParamKind::Input {
            "--input"
        } else {
            "--weight"
        };
        return Err(Failure::Usage(format!(
            "{flag} {name}: {name:?} is a{} {} of the program; give it with {hint}",
            if other.kind == ParamKind::Input {
                "n"
            } else {
                ""
            },
            kind_name(other.kind)
        )));
    }
    let names: Vec<&str> = program
        .params
        .iter()
        .filter(|p| p.kind == kind)
        .map(|p| p.name.as_str())
        .collect();
    Err(Failure::Usage(format!(
        "{flag} {name}: the program has no {} named {name:?} (it has: {})",
        kind_name(kind),
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )))
}

/// The program's weights, by name, from the parameter values.
pub fn weights(program: &Program, values: &[Tensor]) -> Result<Weights, Failure> {
    let bytes: Vec<(&str, Vec<u8>)> = program
        .params
        .iter()
        .zip(values)
        .filter(|(p, _)| p.kind == ParamKind::Weight)
        .map(|(p, t)| (p.name.as_str(), t.data().to_le_bytes()))
        .collect();
    let refs: Vec<(&str, &[u8])> = bytes.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    Weights::new(&refs).map_err(|e| Failure::Runtime(format!("weights: {e}")))
}

/// The input values of `program`, in input order, from the parameter values.
pub fn input_values<'v>(program: &Program, values: &'v [Tensor]) -> Vec<&'v Tensor> {
    program
        .params
        .iter()
        .zip(values)
        .filter(|(p, _)| p.kind == ParamKind::Input)
        .map(|(_, t)| t)
        .collect()
}

/// A byte buffer aligned for every accy dtype (8 bytes), as `invoke` requires.
#[derive(Clone, Debug)]
pub struct Buffer {
    words: Vec<u64>,
    len: usize,
}

impl Buffer {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Buffer {
        Buffer {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }

    /// A copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Buffer {
        let mut b = Buffer::zeroed(bytes.len());
        b.bytes_mut().copy_from_slice(bytes);
        b
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    /// The bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}

/// Input buffers holding `inputs` and zeroed output buffers for `outputs`.
pub fn buffers(inputs: &[&Tensor], outputs: &[Descriptor]) -> (Vec<Buffer>, Vec<Buffer>) {
    let ins = inputs
        .iter()
        .map(|t| Buffer::from_bytes(&t.data().to_le_bytes()))
        .collect();
    let outs = outputs
        .iter()
        .map(|d| Buffer::zeroed(d.byte_size))
        .collect();
    (ins, outs)
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

/// The tensor an output buffer holds.
pub fn output_tensor(d: &Descriptor, buffer: &Buffer) -> Result<Tensor, Failure> {
    TensorData::from_le_bytes(d.dtype, buffer.bytes())
        .and_then(|data| Tensor::new(&d.dims, data).ok())
        .ok_or_else(|| Failure::Runtime(format!("an output buffer does not hold {:?}", d.dims)))
}
