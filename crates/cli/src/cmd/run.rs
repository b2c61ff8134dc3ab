//! `accy run`: compile a program for this CPU (or load a compiled artifact), run it once on
//! given or seeded values, and report (and optionally save) its outputs.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use accy_cli::{npy, summary};
use accy_session::{Descriptor, Scratch};

use super::values::{self, Source};
use super::{Failure, TargetName};

/// How many leading values of each output the summary shows.
const SHOWN: usize = 8;

/// The arguments of `accy run`.
#[derive(Debug)]
pub struct RunArgs {
    /// Program file.
    pub file: PathBuf,
    /// `--input NAME=VALUE` arguments.
    pub inputs: Vec<String>,
    /// `--weight NAME=VALUE` arguments.
    pub weights: Vec<String>,
    /// Seed of the random values of parameters not given.
    pub seed: u64,
    /// Where to write `out<N>.npy`, if anywhere.
    pub output_dir: Option<PathBuf>,
    /// Threads per invocation; one per core when `None`.
    pub threads: Option<usize>,
    /// Code generator; the host's best when `None`.
    pub target: Option<TargetName>,
    /// Turn off float-sum reassociation.
    pub exact: bool,
    /// Flush subnormal floats to zero in runs.
    pub flush_subnormals: bool,
    /// `--shape` and `--weights`.
    pub model: super::model::ModelArgs,
}

impl RunArgs {
    /// The numeric options these arguments ask for.
    pub fn numerics(&self) -> super::Numerics {
        super::Numerics {
            exact: self.exact,
            flush_subnormals: self.flush_subnormals,
        }
    }
}

/// `accy run`: compiles, runs once, prints output summaries and writes them as `.npy`.
pub fn run(args: &RunArgs, out: &mut super::Out) -> Result<(), Failure> {
    // A `--weight` given too takes precedence over the file's weight of that name.
    let overridden: Vec<&str> = args
        .weights
        .iter()
        .filter_map(|w| w.split_once('=').map(|(name, _)| name))
        .collect();
    let artifact = if super::is_artifact(&args.file) {
        if args.target.is_some() || args.exact || args.flush_subnormals {
            return Err(Failure::Usage(
                "--target, --exact and --flush-subnormals choose how a program is compiled; an artifact's code is \
                 already generated (pass them to `accy compile --artifact`)"
                    .into(),
            ));
        }
        Some(super::model::load_artifact(
            &args.file,
            &args.model,
            &overridden,
        )?)
    } else {
        None
    };
    let (loaded, artifact) = match artifact {
        Some((loaded, bytes, target)) => (loaded, Some((bytes, target))),
        None => (
            super::model::load_model(&args.file, &args.model, &overridden)?,
            None,
        ),
    };
    let program = &loaded.program;
    let (mut values, mut sources) = values::arguments(
        program,
        &args.inputs,
        &args.weights,
        args.seed,
        1,
        &loaded.mapped,
    )?;
    super::model::apply_weights(&loaded, &mut values, &mut sources);
    let session = super::session(args.target, args.numerics(), args.threads)?;
    let weights = values::weights(program, &values, &loaded.mapped)?;
    let handle = match &artifact {
        Some((bytes, target)) => {
            // SAFETY: the artifact's code runs in this process; the user names the file to
            // run, as they would an executable (`accy run --help` says so), and the loader
            // refuses damaged bytes, other versions and code this CPU cannot run.
            let handle = unsafe { session.load_artifact_with_weights(bytes, &weights) }
                .map_err(|e| Failure::session("load", &e))?;
            writeln!(
                out,
                "{}: loaded artifact for {target} (no compile)",
                args.file.display()
            )?;
            handle
        }
        None => {
            let handle = session
                .compile_program_with_weights(program, &weights)
                .map_err(|e| Failure::session("compile", &e))?;
            writeln!(
                out,
                "{}: compiled for {}{}",
                args.file.display(),
                session.target_name(),
                if args.exact {
                    " (exact float sums)"
                } else {
                    ""
                }
            )?;
            handle
        }
    };
    let from_model = sources
        .iter()
        .filter(|s| matches!(s, Source::Model))
        .count();
    if from_model > 0 {
        writeln!(out, "{from_model} weights from {}", loaded.weights_from)?;
    }
    for (param, source) in program.params.iter().zip(&sources) {
        let kind = match param.kind {
            accy_ir::ParamKind::Input => "input",
            _ => "weight",
        };
        let from = match source {
            Source::Random => format!("random (seed {})", args.seed),
            Source::File(path) => format!("from {path}"),
            Source::Literal => "literal".to_owned(),
            Source::Model => continue,
        };
        writeln!(out, "{kind} {:?}: {} {from}", param.name, param.ty)?;
    }

    let descriptors = session
        .outputs(handle)
        .map_err(|e| Failure::session("outputs", &e))?;
    // The session holds the weights now: keep only the inputs.
    let ins = values::into_inputs(program, values);
    let mut outs = values::outputs(&descriptors)?;
    let mut scratch = Scratch::new();
    super::invoke(&session, handle, &mut scratch, &ins, &mut outs)
        .map_err(|e| Failure::session("run", &e))?;

    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Io(format!("creating {}: {e}", dir.display())))?;
    }
    for (i, (d, buffer)) in descriptors.iter().zip(&outs).enumerate() {
        let bytes = buffer.bytes();
        writeln!(
            out,
            "output {i}: {}",
            summary::summarize(d.dtype, &d.dims, bytes, SHOWN)
        )?;
        if let Some(dir) = &args.output_dir {
            let path = dir.join(format!("out{i}.npy"));
            write_npy(&path, d, bytes).map_err(|e| match e {
                NpyWrite::Npy(e) => Failure::Runtime(format!("output {i}: {e}")),
                NpyWrite::Io(e) => Failure::Io(format!("writing {}: {e}", path.display())),
            })?;
            writeln!(out, "  wrote {}", path.display())?;
        }
    }
    Ok(())
}

/// Why an output could not be written.
enum NpyWrite {
    Npy(npy::NpyError),
    Io(std::io::Error),
}

/// Writes the output `d` holding `bytes` to `path` as `.npy`: the header, then the bytes
/// straight from the output buffer (no copy of the data).
fn write_npy(path: &Path, d: &Descriptor, bytes: &[u8]) -> Result<(), NpyWrite> {
    let header = npy::header(d.dtype, &d.dims).map_err(NpyWrite::Npy)?;
    let mut file = std::fs::File::create(path).map_err(NpyWrite::Io)?;
    file.write_all(&header).map_err(NpyWrite::Io)?;
    file.write_all(bytes).map_err(NpyWrite::Io)
}
