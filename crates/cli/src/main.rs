//! The `accy` command.
//!
//! Exit codes, for scripts: 0 success; 1 the program is invalid (bytes, text or types);
//! 2 bad command-line usage (including input values that do not fit the program); 3 a file
//! could not be read or written (including a malformed `.npy` file, and standard output); 4 the
//! program could not be compiled or run on this machine. A closed pipe on standard output ends
//! a command quietly with 0.

#![deny(missing_docs)]
// No `println!` / `eprintln!` (the workspace lints refuse them): they panic when the stream
// cannot be written. Commands print through `cmd::Out`, which reports write errors.

mod cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cmd::TargetName;

/// Check, convert, run, benchmark and inspect accy tensor programs.
///
/// A program file is either text (the format in docs/text-format.md, usually `*.accy`) or wire
/// bytes (docs/wire-format.md, usually `*.accyb`); the command tells them apart by the wire
/// magic at the start. `run`, `bench`, `inspect` (and `check`, `compile`) also take ONNX
/// models (`*.onnx`, opsets 13 and newer), imported with their initializers as weights.
/// Examples live in `examples/`:
///
///   accy run examples/mlp.accy
///   accy bench examples/transformer_block.accy --concurrency 2 --threads 1
///   accy inspect examples/softmax.accy --target x64-avx2
///   accy run model.onnx --shape input_ids=1x128
///   accy import model.onnx -o model.accy   # also writes model.safetensors
#[derive(Parser, Debug)]
#[command(name = "accy", version, after_help = EXIT_CODES, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 success, 1 invalid program, 2 usage error (bad \
arguments, or input values that do not fit the program), 3 I/O error (a file could not be read \
or written, or is not a valid .npy file), 4 runtime failure (the program could not be compiled, \
loaded or run on this machine, e.g. the CPU lacks the requested --target, or out of memory: run \
and bench hold at most 16 GiB of values). When standard output \
is a pipe whose reader has gone (accy inspect ... | head), the command stops quietly with 0.";

const TARGET_HELP: &str = "Code generator: x64-sse2, x64-avx2 or x64-avx512 (default: the best \
this CPU runs, lowered by ACCY_CPU_FEATURES_MAX).";

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse or decode FILE and verify it; prints a one-line summary, or the errors: for text,
    /// each with its FILE:line:column; for wire bytes, a decode error with its byte offset, or
    /// each verifier error with the instruction it names.
    Check {
        /// Program file (text or wire) or ONNX model.
        file: PathBuf,
        #[command(flatten)]
        model: cmd::model::ModelArgs,
    },
    /// Convert FILE to wire bytes (default) or, with --text, to the text format; or, with
    /// --artifact, compile it for this CPU into an artifact that `accy run` loads without
    /// compiling.
    ///
    /// Example round trip: `accy compile prog.accy -o prog.accyb` then
    /// `accy compile prog.accyb --text -o -`.
    ///
    /// An artifact (`accy compile examples/mlp.accy --artifact -o mlp.accya`, then
    /// `accy run mlp.accya`) holds machine code, constants and plans, not weights; it runs on
    /// machines of the same architecture with the CPU features it was compiled for. Running
    /// one runs its code: only run artifacts from a source you trust.
    Compile {
        /// Program file (text or wire).
        file: PathBuf,
        /// Where to write; `-` is standard output.
        #[arg(short, long)]
        output: PathBuf,
        /// Write the text format instead of wire bytes.
        #[arg(long, conflicts_with = "artifact")]
        text: bool,
        /// Write a compiled artifact for this CPU (or --target) instead of wire bytes.
        #[arg(long)]
        artifact: bool,
        #[arg(long, value_parser = cmd::parse_target, help = TARGET_HELP, requires = "artifact")]
        target: Option<TargetName>,
        /// With --artifact: never reassociate float sums (as for `run --exact`).
        #[arg(long, requires = "artifact")]
        exact: bool,
        /// With --artifact: its runs flush subnormal floats to zero (as for `run
        /// --flush-subnormals`).
        #[arg(long, requires = "artifact")]
        flush_subnormals: bool,
    },
    /// Compile FILE for this CPU (or load it, if it is an artifact from `accy compile
    /// --artifact`), run it once and summarise its outputs.
    ///
    /// An artifact's inputs are named input0, input1, … (it keeps no input names); its
    /// weights keep theirs. Loading an artifact runs its code: run only trusted ones.
    /// Every input and weight not given on the command line is filled with seeded random
    /// values (floats uniform in [-1, 1), i32/i64 in [-100, 100], u8 in [0, 255], bool fair
    /// coin), the same for the same --seed. Each output is printed as its type, first values
    /// and min/max/mean, and with --output-dir written as `out0.npy`, `out1.npy`, ….
    ///
    /// Examples:
    ///   accy run examples/mlp.accy --seed 7 --output-dir /tmp/out
    ///   accy run prog.accy --input x=@x.npy --input scale=2.5 --weight w=[1,2,3]
    #[command(verbatim_doc_comment)]
    Run {
        /// Program file (text or wire), ONNX model, or compiled artifact.
        file: PathBuf,
        /// An input's value: `NAME=@file.npy`, or a literal in the text format's syntax
        /// (`x=[[1,2],[3,4]]`, a flat row-major list `x=[1,2,3,4]`, or a scalar `s=2.5`).
        #[arg(long = "input", value_name = "NAME=VALUE")]
        inputs: Vec<String>,
        /// A weight's value, as for --input.
        #[arg(long = "weight", value_name = "NAME=VALUE")]
        weights: Vec<String>,
        /// Seed of the random values of parameters not given.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write each output to DIR/out<N>.npy (the directory is created if needed).
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        /// Threads each invocation spreads its work over (default: one per core; 1 runs every
        /// kernel on the calling thread).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        #[arg(long, value_parser = cmd::parse_target, help = TARGET_HELP)]
        target: Option<TargetName>,
        /// Never reassociate float sums, so results are bit-identical to the reference
        /// interpreter's (slower reductions and dots).
        #[arg(long)]
        exact: bool,
        /// Flush subnormal floats to zero while running (as ONNX Runtime's
        /// set_denormal_as_zero): results differ from the interpreter's where a subnormal
        /// appears, and underflowing work is not slowed down by the CPU's microcode assists.
        #[arg(long)]
        flush_subnormals: bool,
        #[command(flatten)]
        model: cmd::model::ModelArgs,
    },
    /// Time compiling and running FILE on seeded random inputs and weights.
    ///
    /// Reports the median compile time over several compiles (each in a fresh session, the
    /// weights' packed forms already made), apart from it the median time a first compile
    /// spends packing the weights (for programs with weights), the latency of one invocation (min, p50, p90, p99), throughput, GFLOPS and GB/s.
    /// Throughput counts the timed invocations of all callers over one window, from the first
    /// caller's start to the last one's end (callers start measuring together, once all have
    /// warmed up). FLOPs count per IR instruction: a dot is 2·m·n·k·batch, an elementwise op
    /// 1 per result element, a reduce 1 per operand element, movement ops 0. GB/s counts
    /// input plus output bytes per invocation (weights are shown separately). When stderr is
    /// a terminal, a progress line appears once a run passes 2 seconds.
    ///
    /// Seeded floats are uniform in [-1, 1), weights included, with no scaling by fan-in: a
    /// network whose values then fall below the normal range (an attention softmax over widely
    /// spread scores, say) runs at the speed of the CPU's subnormal arithmetic, far slower
    /// on many Intel cores; --flush-subnormals shows how much of the time that is.
    ///
    /// With --slots N the program runs as a model (the models API): its weights loaded once
    /// (a --weights file is mapped, not copied) and packed once, a plan with N inference
    /// slots, and the --concurrency callers sharing them (a caller finding every slot busy
    /// waits its turn). It reports the weight bytes (given and packed, counted once however
    /// many plans and slots use them), the scratch bytes of each slot and the slot count
    /// instead of the compile time; --prepare FILE also times preparing FILE, another shape
    /// of the same network, with the weights already loaded and packed.
    ///
    /// Example: accy bench examples/mlp_b64.accy --seconds 5 --concurrency 2
    /// Example: accy bench examples/mlp_b64.accy --slots 2 --concurrency 4 --prepare examples/mlp.accy
    Bench {
        /// Program file (text or wire).
        file: PathBuf,
        /// Untimed invocations per caller before measuring; with --seconds, warm-up also
        /// stops once it has taken that long.
        #[arg(long, default_value_t = 3)]
        warmup: u64,
        /// Timed invocations per caller (default: run for --seconds).
        #[arg(long, conflicts_with = "seconds")]
        iters: Option<u64>,
        /// Seconds to measure for, when --iters is not given [default: 2].
        #[arg(long)]
        seconds: Option<f64>,
        /// Callers invoking the program at once (1 to 256), each on its own OS thread with
        /// its own scratch and buffers.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Run as a model with this many inference slots (1 to 256) shared by the callers.
        #[arg(long)]
        slots: Option<usize>,
        /// With --slots: also time preparing this program (another shape of the same network,
        /// with weights of the same names and types) for the loaded model.
        #[arg(long, value_name = "FILE", requires = "slots")]
        prepare: Option<PathBuf>,
        /// Seed of the random inputs and weights.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Threads each invocation spreads its work over (default: one per core; 1 runs every
        /// kernel on the calling thread).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        #[arg(long, value_parser = cmd::parse_target, help = TARGET_HELP)]
        target: Option<TargetName>,
        /// Never reassociate float sums (as for `run --exact`).
        #[arg(long)]
        exact: bool,
        /// Flush subnormal floats to zero while running (as for `run --flush-subnormals`).
        #[arg(long)]
        flush_subnormals: bool,
        #[command(flatten)]
        model: cmd::model::ModelArgs,
    },
    /// Show what FILE compiles to: slots with their byte sizes and the scratch total, the
    /// launch commands, then each kernel (its iteration space, bindings and fused node list)
    /// with the disassembly of its generated code.
    ///
    /// The code is generated for the target given, which need not run on this CPU.
    ///
    /// Example: accy inspect examples/layernorm.accy --target x64-sse2
    Inspect {
        /// Program file (text or wire).
        file: PathBuf,
        #[arg(long, value_parser = cmd::parse_target, help = TARGET_HELP)]
        target: Option<TargetName>,
        /// Generate code that never reassociates float sums (as for `run --exact`).
        #[arg(long)]
        exact: bool,
        /// Leave out the disassembly.
        #[arg(long)]
        no_disassembly: bool,
        #[command(flatten)]
        model: cmd::model::ModelArgs,
    },
    /// Import the ONNX model FILE: write its program as text to OUTPUT and its weights (the
    /// initializers it uses) as a `.safetensors` file beside it with the same stem, so that
    /// `accy run OUTPUT --weights OUTPUT_STEM.safetensors` runs the same model.
    ///
    /// Example: accy import model.onnx -o model.accy --shape input_ids=1x128
    Import {
        /// ONNX model (*.onnx).
        file: PathBuf,
        /// Where to write the program text (the weights go to the same name with the
        /// extension `.safetensors`).
        #[arg(short, long)]
        output: PathBuf,
        /// For inputs with symbolic or unknown dims: `NAME=1x128` (repeatable).
        #[arg(long = "shape", value_name = "INPUT=DIMS")]
        shapes: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = cmd::Out::new();
    let out = &mut out;
    let result = match cli.command {
        Command::Check { file, model } => cmd::check(&file, &model, out),
        Command::Compile {
            file,
            output,
            text,
            artifact,
            target,
            exact,
            flush_subnormals,
        } => {
            let to = if artifact {
                cmd::CompileTo::Artifact {
                    target,
                    numerics: cmd::Numerics {
                        exact,
                        flush_subnormals,
                    },
                }
            } else if text {
                cmd::CompileTo::Text
            } else {
                cmd::CompileTo::Wire
            };
            cmd::compile(&file, &output, to, out)
        }
        Command::Run {
            file,
            inputs,
            weights,
            seed,
            output_dir,
            threads,
            target,
            exact,
            flush_subnormals,
            model,
        } => cmd::run::run(
            &cmd::run::RunArgs {
                file,
                inputs,
                weights,
                seed,
                output_dir,
                threads,
                target,
                exact,
                flush_subnormals,
                model,
            },
            out,
        ),
        Command::Bench {
            file,
            warmup,
            iters,
            seconds,
            concurrency,
            slots,
            prepare,
            seed,
            threads,
            target,
            exact,
            flush_subnormals,
            model,
        } => cmd::bench::bench(
            &cmd::bench::BenchArgs {
                file,
                warmup,
                iters,
                seconds,
                concurrency,
                slots,
                prepare,
                seed,
                threads,
                target,
                exact,
                flush_subnormals,
                model,
            },
            out,
        ),
        Command::Inspect {
            file,
            target,
            exact,
            no_disassembly,
            model,
        } => cmd::inspect::inspect(&file, target, exact, !no_disassembly, &model, out),
        Command::Import {
            file,
            output,
            shapes,
        } => cmd::model::import(
            &file,
            &output,
            &cmd::model::ModelArgs {
                shapes,
                weights_file: None,
            },
            out,
        ),
    };
    match result.and_then(|()| out.flush()) {
        Ok(()) | Err(cmd::Failure::ClosedPipe) => ExitCode::SUCCESS,
        Err(failure) => {
            // Nothing is left to report a failing stderr to: ignore it rather than panic.
            let _ = writeln!(std::io::stderr(), "error: {}", failure.message());
            ExitCode::from(failure.code())
        }
    }
}
