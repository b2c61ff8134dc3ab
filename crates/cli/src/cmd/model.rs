//! Loading models of every kind the commands accept: accy programs (text or wire) and ONNX
//! models (`*.onnx`, imported with `--shape` for symbolic dims), with weights from the ONNX
//! initializers or a `.safetensors` file; and `accy import`, which writes an ONNX model as a
//! text program plus a `.safetensors` file of its weights.

use std::path::{Path, PathBuf};

use accy_cli::weights_file::{self, WeightsFileError};
use accy_ir::{text, ParamKind, Program, Tensor};
use accy_onnx::{ErrorKind, ImportError, ImportOptions};
use accy_session::Weights;

use super::values::Source;
use super::{Buffer, Failure};

/// Options about the model file shared by `run`, `bench`, `inspect` and `import`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ModelArgs {
    /// For ONNX models: the shape of an input whose dims are symbolic or unknown, as
    /// `NAME=1x128` (dims joined by `x`; `NAME=` for a scalar). May be repeated.
    #[arg(long = "shape", value_name = "INPUT=DIMS")]
    pub shapes: Vec<String>,
    /// Read every weight of the program from this `.safetensors` file (as `accy import`
    /// writes). A `--weight` given too takes precedence for its weight.
    #[arg(long = "weights", value_name = "FILE.safetensors")]
    pub weights_file: Option<PathBuf>,
}

/// A program with the weight values that came with it.
#[derive(Debug)]
pub struct Loaded {
    /// The verified program.
    pub program: Program,
    /// Values for weights, by name, from the ONNX initializers.
    pub weights: Vec<(String, Tensor)>,
    /// The weights of the `--weights` file, used in place from its read-only mapping.
    pub mapped: Weights,
    /// Where the weights came from, for the run report.
    pub weights_from: String,
}

/// True for a path ending in `.onnx` (any case).
pub fn is_onnx(file: &Path) -> bool {
    file.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// `NAME=1x128` (or `NAME=` for a scalar) as (name, dims).
fn parse_shape(arg: &str) -> Result<(String, Vec<u64>), Failure> {
    let bad = || {
        Failure::Usage(format!(
            "--shape {arg}: expected INPUT=DIMS, e.g. input_ids=1x128"
        ))
    };
    let (name, dims) = arg.split_once('=').ok_or_else(bad)?;
    if name.is_empty() {
        return Err(bad());
    }
    let dims = if dims.is_empty() {
        Vec::new()
    } else {
        dims.split(['x', ','])
            .map(|d| d.trim().parse::<u64>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?
    };
    Ok((name.to_owned(), dims))
}

/// The failure (and exit code) an import error maps to: a shape the user must give is a usage
/// error (2), unreadable external data an I/O error (3), everything else an invalid or
/// unsupported model (1).
fn import_failure(file: &Path, e: ImportError) -> Failure {
    let message = format!("{}: {e}", file.display());
    match e.kind {
        ErrorKind::Shape => Failure::Usage(message),
        ErrorKind::Io => Failure::Io(message),
        _ => Failure::Invalid(message),
    }
}

/// Loads `file`: an ONNX model when it ends in `.onnx`, otherwise an accy program; then the
/// weights of `--weights` when given, mapped (except those named in `skip`, which the
/// command line gives).
pub fn load_model(file: &Path, args: &ModelArgs, skip: &[&str]) -> Result<Loaded, Failure> {
    let mut loaded = if is_onnx(file) {
        let mut options = ImportOptions::default();
        for arg in &args.shapes {
            let (name, dims) = parse_shape(arg)?;
            if options.shapes.insert(name.clone(), dims).is_some() {
                return Err(Failure::Usage(format!("--shape {name} is given twice")));
            }
        }
        let model = accy_onnx::import_file(file, &options).map_err(|e| import_failure(file, e))?;
        Loaded {
            program: model.program,
            weights: model.weights,
            mapped: Weights::empty(),
            weights_from: file.display().to_string(),
        }
    } else {
        if !args.shapes.is_empty() {
            return Err(Failure::Usage(
                "--shape applies to ONNX models (*.onnx); accy programs declare their shapes"
                    .into(),
            ));
        }
        Loaded {
            program: super::load(file)?,
            weights: Vec::new(),
            mapped: Weights::empty(),
            weights_from: String::new(),
        }
    };
    if let Some(path) = &args.weights_file {
        map_weights_file(&mut loaded, path, skip)?;
    }
    Ok(loaded)
}

/// Maps the `.safetensors` file `path` as `loaded`'s weights (except those named in `skip`,
/// which the command line gives); each must name a weight of the program and have its type.
fn map_weights_file(loaded: &mut Loaded, path: &Path, skip: &[&str]) -> Result<(), Failure> {
    // SAFETY: the file is one the user named for this command, which maps it for its own
    // duration only; like every tool that maps its inputs, it relies on nobody truncating
    // or rewriting the file meanwhile (which would end the process with SIGBUS or show
    // the new bytes, never corrupt accy's own memory).
    let mapped = unsafe { weights_file::map_safetensors(path, &loaded.program, skip) };
    loaded.mapped = mapped.map_err(|e| match e {
        WeightsFileError::Unknown { .. } | WeightsFileError::Mismatch { .. } => {
            Failure::Usage(e.to_string())
        }
        WeightsFileError::Weights { .. } => Failure::Runtime(e.to_string()),
        _ => Failure::Io(e.to_string()),
    })?;
    // ONNX initializers of the same names give way to the file's.
    let mapped = &loaded.mapped;
    loaded
        .weights
        .retain(|(name, _)| mapped.get(name).is_none());
    loaded.weights_from = path.display().to_string();
    Ok(())
}

/// A compiled artifact (`accy compile --artifact`) read from `file`: its bytes, and its
/// interface as a program without instructions, for assembling argument values. The artifact
/// keeps no input names, so its inputs are called `input0`, `input1`, …; its weights keep
/// their names. Malformed bytes are exit 1, as for a program. Also returns the target the
/// code was generated for.
pub fn load_artifact(
    file: &Path,
    args: &ModelArgs,
    skip: &[&str],
) -> Result<(Loaded, Vec<u8>, accy_artifact::TargetSpec), Failure> {
    if !args.shapes.is_empty() {
        return Err(Failure::Usage(
            "--shape applies to ONNX models (*.onnx); an artifact's shapes are fixed".into(),
        ));
    }
    let bytes = super::buffer::read_file(file)?;
    let artifact = accy_artifact::Artifact::from_bytes(&bytes)
        .map_err(|e| Failure::Invalid(format!("{}: {e}", file.display())))?;
    let mut program = Program::default();
    let plan = &artifact.plan;
    for (n, id) in plan.input_slots().into_iter().enumerate() {
        program
            .params
            .push(param(plan, id, ParamKind::Input, format!("input{n}"))?);
    }
    for (id, name) in plan.weight_slots() {
        program
            .params
            .push(param(plan, id, ParamKind::Weight, name.to_owned())?);
    }
    let mut loaded = Loaded {
        program,
        weights: Vec::new(),
        mapped: Weights::empty(),
        weights_from: String::new(),
    };
    if let Some(path) = &args.weights_file {
        map_weights_file(&mut loaded, path, skip)?;
    }
    Ok((loaded, bytes, artifact.target))
}

/// The parameter slot `id` stands for (validation guarantees input and weight slots a type).
fn param(
    plan: &accy_artifact::ArtifactPlan,
    id: accy_artifact::SlotId,
    kind: ParamKind,
    name: String,
) -> Result<accy_ir::Param, Failure> {
    let ty = plan
        .slot(id)
        .and_then(|s| s.ty.clone())
        .ok_or_else(|| Failure::Invalid(format!("artifact slot {id} has no type")))?;
    Ok(accy_ir::Param { kind, name, ty })
}

/// Puts the ONNX initializers into `values` for every weight not given on the command line
/// or by the `--weights` file.
pub fn apply_weights(loaded: &Loaded, values: &mut [Buffer], sources: &mut [Source]) {
    for (i, p) in loaded.program.params.iter().enumerate() {
        if p.kind != ParamKind::Weight || !matches!(sources[i], Source::Random) {
            continue;
        }
        if let Some((_, t)) = loaded.weights.iter().find(|(n, _)| *n == p.name) {
            // `load_model` checked each weight's type against the program's.
            let bytes = t.data().to_le_bytes();
            if values[i].bytes().len() == bytes.len() {
                values[i].bytes_mut().copy_from_slice(&bytes);
                sources[i] = Source::Model;
            }
        }
    }
}

/// `accy import`: writes the program of the ONNX model `file` as text to `output` and its
/// weights to the `.safetensors` file beside it (same stem).
pub fn import(
    file: &Path,
    output: &Path,
    args: &ModelArgs,
    out: &mut super::Out,
) -> Result<(), Failure> {
    if !is_onnx(file) {
        return Err(Failure::Usage(format!(
            "{}: `accy import` reads ONNX models (*.onnx)",
            file.display()
        )));
    }
    let loaded = load_model(file, args, &[])?;
    let weights_path = output.with_extension("safetensors");
    if weights_path == output {
        return Err(Failure::Usage(format!(
            "-o {}: the program and its weights need different file names",
            output.display()
        )));
    }
    let text = text::print(&loaded.program);
    let bytes = weights_file::write(&loaded.weights).map_err(Failure::Runtime)?;
    std::fs::write(output, text)
        .map_err(|e| Failure::Io(format!("writing {}: {e}", output.display())))?;
    std::fs::write(&weights_path, bytes)
        .map_err(|e| Failure::Io(format!("writing {}: {e}", weights_path.display())))?;
    let p = &loaded.program;
    writeln!(
        out,
        "{}: {} inputs, {} weights, {} instructions, {} outputs",
        file.display(),
        p.inputs().count(),
        p.weights().count(),
        p.instructions.len(),
        p.outputs.len()
    )?;
    writeln!(
        out,
        "wrote {} and {}",
        output.display(),
        weights_path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse() {
        assert_eq!(parse_shape("x=1x128").unwrap(), ("x".into(), vec![1, 128]));
        assert_eq!(parse_shape("x=2,3").unwrap(), ("x".into(), vec![2, 3]));
        assert_eq!(parse_shape("s=").unwrap(), ("s".into(), vec![]));
        assert!(parse_shape("x").is_err());
        assert!(parse_shape("=1").is_err());
        assert!(parse_shape("x=1xq").is_err());
    }
}
