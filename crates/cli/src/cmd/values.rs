//! The values `run` and `bench` give a program's parameters and the buffers they run it on,
//! and the memory budget that bounds them.
//!
//! Every buffer is allocated fallibly ([`Buffer`]), and the budget is checked first against
//! what the command will really hold at its peak ([`Footprint`]), so a program too large for
//! the budget fails before anything is allocated, and one within it that still meets a memory
//! limit fails with "out of memory" — exit 4 either way, never an abort.

use accy_cli::{npy, seeded};
use accy_ir::{text, ParamKind, Program};
use accy_session::{Descriptor, Weights};

use super::buffer::{read_file, Buffer};
use super::Failure;

/// The most bytes `run` and `bench` hold for one program's values at once ([`Footprint`]). A
/// verified program may declare tensors up to `isize::MAX` bytes; beyond this budget the
/// command fails cleanly (exit 4) before allocating.
pub const MEMORY_BUDGET: u64 = 16 << 30;

/// The bytes a command holds for a program's values, by kind, and its peak.
///
/// A run goes through three phases: it fills every parameter (inputs and weights; a value read
/// from a `.npy` file is held twice while it is copied from the file's bytes), copies the
/// weights into the session (both copies are held until the copy is done, then the
/// command's is freed), and runs with every caller's inputs and outputs. The peak is the
/// largest phase. Scratch for intermediate values is the runtime's, allocated fallibly
/// when the program runs, and not counted here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Bytes of all inputs.
    pub inputs: u64,
    /// Bytes of all weights.
    pub weights: u64,
    /// Bytes of all outputs.
    pub outputs: u64,
    /// Bytes of the largest parameter given as a `.npy` file (0 if none).
    pub largest_file: u64,
    /// Callers invoking at once, each with its own inputs and outputs.
    pub callers: u64,
}

impl Footprint {
    /// The footprint of `program` (verified) with `largest_file` and `callers` as described
    /// on the fields; `None` if a size overflows.
    pub fn of(program: &Program, largest_file: u64, callers: u64) -> Option<Footprint> {
        let mut footprint = Footprint {
            inputs: 0,
            weights: 0,
            outputs: 0,
            largest_file,
            callers,
        };
        for p in &program.params {
            let sum = match p.kind {
                ParamKind::Input => &mut footprint.inputs,
                _ => &mut footprint.weights,
            };
            *sum = sum.checked_add(p.ty.byte_size()?)?;
        }
        for o in &program.outputs {
            let bytes = program.value_type(o.value)?.byte_size()?;
            footprint.outputs = footprint.outputs.checked_add(bytes)?;
        }
        Some(footprint)
    }

    /// The most bytes held at once (see the type's documentation); `None` on overflow.
    pub fn peak(&self) -> Option<u64> {
        let values = self.inputs.checked_add(self.weights)?;
        let reading = values.checked_add(self.largest_file)?;
        let copying_weights = values.checked_add(self.weights)?;
        let running = self
            .inputs
            .checked_add(self.outputs)?
            .checked_mul(self.callers)?
            .checked_add(self.weights)?;
        Some(reading.max(copying_weights).max(running))
    }
}

/// Refuses a footprint whose peak exceeds [`MEMORY_BUDGET`], with every number.
fn check_budget(footprint: Option<Footprint>) -> Result<(), Failure> {
    let peak = footprint.and_then(|f| f.peak().map(|peak| (f, peak)));
    match peak {
        Some((_, bytes)) if bytes <= MEMORY_BUDGET => Ok(()),
        Some((f, bytes)) => Err(Failure::Runtime(format!(
            "the run would hold {bytes} bytes ({:.1} GiB) at its peak — inputs {}, weights {} \
             (held twice while copied), outputs {}{} — more than the {} GiB this command \
             allows itself",
            bytes as f64 / f64::from(1u32 << 30),
            f.inputs,
            f.weights,
            f.outputs,
            if f.callers > 1 {
                format!(", inputs and outputs once per caller ({})", f.callers)
            } else {
                String::new()
            },
            MEMORY_BUDGET >> 30
        ))),
        None => Err(Failure::Runtime(format!(
            "the program's values overflow a 64-bit byte count, far more than the {} GiB this \
             command allows itself",
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
/// `weights` (`NAME=@file.npy` or `NAME=literal`), then the weights `preset` holds (mapped
/// from a `--weights` file: an empty buffer here, [`Source::Model`]), the rest seeded random
/// values. `callers` is how many callers will each hold inputs and outputs, for the budget
/// check, which comes after the arguments are checked and before anything large is
/// allocated.
pub fn arguments(
    program: &Program,
    inputs: &[String],
    weights: &[String],
    seed: u64,
    callers: u64,
    preset: &Weights,
) -> Result<(Vec<Buffer>, Vec<Source>), Failure> {
    let mut given: Vec<Option<(&str, &str)>> = vec![None; program.params.len()];
    for (flag, kind, args) in [
        ("--input", ParamKind::Input, inputs),
        ("--weight", ParamKind::Weight, weights),
    ] {
        for arg in args {
            let (name, value) = arg.split_once('=').ok_or_else(|| {
                Failure::Usage(format!(
                    "{flag} {arg}: expected NAME=@file.npy or NAME=value"
                ))
            })?;
            let index = param_index(program, kind, name, flag)?;
            if given[index].replace((flag, value)).is_some() {
                return Err(Failure::Usage(format!("{flag} {name} is given twice")));
            }
        }
    }
    let largest_file = program
        .params
        .iter()
        .zip(&given)
        .filter(|(_, g)| g.is_some_and(|(_, value)| value.starts_with('@')))
        .map(|(p, _)| p.ty.byte_size().unwrap_or(u64::MAX))
        .max()
        .unwrap_or(0);
    // Preset weights are the file's pages, not memory this command holds.
    let footprint = Footprint::of(program, largest_file, callers).map(|mut f| {
        f.weights = f.weights.saturating_sub(preset.given_bytes());
        f
    });
    check_budget(footprint)?;

    let mut values = Vec::new();
    let mut sources = Vec::new();
    for (index, (param, given)) in program.params.iter().zip(given).enumerate() {
        let ty = &param.ty;
        let what = format!("{} {:?} ({ty})", kind_name(param.kind), param.name);
        let is_preset = param.kind == ParamKind::Weight && preset.get(&param.name).is_some();
        if given.is_none() && is_preset {
            values.push(Buffer::zeroed(0, &what)?);
            sources.push(Source::Model);
            continue;
        }
        let mut buffer = Buffer::zeroed(ty.byte_size().unwrap_or(u64::MAX), &what)?;
        let source = match given {
            None => {
                seeded::fill(ty, seed, index, buffer.bytes_mut())
                    .ok_or_else(|| Failure::Runtime(format!("no random values for {what}")))?;
                Source::Random
            }
            Some((flag, value)) => {
                let name = &param.name;
                if let Some(path) = value.strip_prefix('@') {
                    let bytes = read_file(path.as_ref())?;
                    let array = npy::parse(&bytes)
                        .map_err(|e| Failure::Io(format!("reading {path}: {e}")))?;
                    if array.dtype != ty.dtype || array.dims != ty.dims.as_slice() {
                        return Err(Failure::Usage(format!(
                            "{flag} {name}: {path} holds {} but the program's {} {name:?} is {ty}",
                            accy_ir::Type::new(array.dtype, &array.dims),
                            kind_name(param.kind)
                        )));
                    }
                    buffer.bytes_mut().copy_from_slice(array.data);
                    Source::File(path.to_owned())
                } else {
                    let tensor = text::parse_literal(value, ty).map_err(|e| {
                        Failure::Usage(format!(
                            "{flag} {name}: not a {ty} literal: {}:{}: {}",
                            e.line, e.column, e.message
                        ))
                    })?;
                    buffer
                        .bytes_mut()
                        .copy_from_slice(&tensor.data().to_le_bytes());
                    Source::Literal
                }
            }
        };
        values.push(buffer);
        sources.push(source);
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

/// The program's weights, by name: `preset` (shared, not copied) plus copies of the other
/// weights' parameter values.
pub fn weights(program: &Program, values: &[Buffer], preset: &Weights) -> Result<Weights, Failure> {
    let named: Vec<(&str, &[u8])> = program
        .params
        .iter()
        .zip(values)
        .filter(|(p, _)| p.kind == ParamKind::Weight && preset.get(&p.name).is_none())
        .map(|(p, b)| (p.name.as_str(), b.bytes()))
        .collect();
    preset
        .extend(&named)
        .map_err(|e| Failure::Runtime(format!("weights: {e}")))
}

/// The input values of `program`, in input order; the weights' values are freed (the
/// session holds its own copy once [`weights`] has run).
pub fn into_inputs(program: &Program, values: Vec<Buffer>) -> Vec<Buffer> {
    program
        .params
        .iter()
        .zip(values)
        .filter(|(p, _)| p.kind == ParamKind::Input)
        .map(|(_, b)| b)
        .collect()
}

/// Zeroed output buffers for `outputs`.
pub fn outputs(outputs: &[Descriptor]) -> Result<Vec<Buffer>, Failure> {
    outputs
        .iter()
        .enumerate()
        .map(|(i, d)| Buffer::zeroed(d.byte_size as u64, &format!("output {i}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_is_the_largest_phase() {
        let f = |inputs, weights, outputs, largest_file, callers| Footprint {
            inputs,
            weights,
            outputs,
            largest_file,
            callers,
        };
        // Running dominates: inputs + outputs + weights.
        assert_eq!(f(10, 1, 20, 0, 1).peak(), Some(31));
        // Copying weights dominates: inputs + 2 × weights.
        assert_eq!(f(10, 50, 20, 0, 1).peak(), Some(110));
        // Reading a file dominates: every value + the file's bytes.
        assert_eq!(f(100, 1, 20, 100, 1).peak(), Some(201));
        // Each caller holds inputs and outputs.
        assert_eq!(f(10, 1, 20, 0, 4).peak(), Some(121));
        assert_eq!(f(u64::MAX, 1, 0, 0, 1).peak(), None);
        let program = text::parse(
            "program {\n  %x = input \"x\" : f32[4]\n  %w = weight \"w\" : f64[3]\n  \
             %y = neg %x : f32[4]\n  output %y\n  output %y\n}\n",
        )
        .unwrap();
        assert_eq!(Footprint::of(&program, 16, 2), Some(f(16, 24, 32, 16, 2)));
    }
}
