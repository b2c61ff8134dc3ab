//! `accy run`: compile a program for this CPU, run it once on given or seeded values, and
//! report (and optionally save) its outputs.

use std::path::PathBuf;

use accy_cli::{npy, summary};
use accy_session::Scratch;

use super::{Failure, Source, TargetName};

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
    /// Code generator; the host's best when `None`.
    pub target: Option<TargetName>,
    /// Turn off float-sum reassociation.
    pub exact: bool,
    /// `--shape` and `--weights`.
    pub model: super::model::ModelArgs,
}

/// `accy run`: compiles, runs once, prints output summaries and writes them as `.npy`.
pub fn run(args: &RunArgs) -> Result<(), Failure> {
    let loaded = super::model::load_model(&args.file, &args.model)?;
    let program = &loaded.program;
    let (mut values, mut sources) =
        super::arguments(program, &args.inputs, &args.weights, args.seed)?;
    super::model::apply_weights(&loaded, &mut values, &mut sources);
    let session = super::session(args.target, args.exact)?;
    let weights = super::weights(program, &values)?;
    let handle = session
        .compile_program_with_weights(program, &weights)
        .map_err(|e| Failure::session("compile", &e))?;
    println!(
        "{}: compiled for {}{}",
        args.file.display(),
        session.target_name(),
        if args.exact {
            " (exact float sums)"
        } else {
            ""
        }
    );
    let from_model = sources
        .iter()
        .filter(|s| matches!(s, Source::Model))
        .count();
    if from_model > 0 {
        println!("{from_model} weights from {}", loaded.weights_from);
    }
    for ((param, value), source) in program.params.iter().zip(&values).zip(&sources) {
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
        println!("{kind} {:?}: {} {from}", param.name, value.ty());
    }

    let descriptors = session
        .outputs(handle)
        .map_err(|e| Failure::session("outputs", &e))?;
    let inputs = super::input_values(program, &values);
    let (ins, mut outs) = super::buffers(&inputs, &descriptors);
    let mut scratch = Scratch::new();
    super::invoke(&session, handle, &mut scratch, &ins, &mut outs)
        .map_err(|e| Failure::session("run", &e))?;

    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Io(format!("creating {}: {e}", dir.display())))?;
    }
    for (i, (d, buffer)) in descriptors.iter().zip(&outs).enumerate() {
        let tensor = super::output_tensor(d, buffer)?;
        println!("output {i}: {}", summary::summarize(&tensor, SHOWN));
        if let Some(dir) = &args.output_dir {
            let path = dir.join(format!("out{i}.npy"));
            let bytes =
                npy::write(&tensor).map_err(|e| Failure::Runtime(format!("output {i}: {e}")))?;
            std::fs::write(&path, bytes)
                .map_err(|e| Failure::Io(format!("writing {}: {e}", path.display())))?;
            println!("  wrote {}", path.display());
        }
    }
    Ok(())
}
