//! `accy inspect`: the lowered plan of a program (slots, scratch, commands, kernels with their
//! fused node lists) and the disassembly of each kernel's generated code.
//!
//! `accy_lower` does not record which IR instruction each kernel node came from, so fusion is
//! shown as each kernel's node list (loads through their index maps, then the fused
//! arithmetic) rather than as a list of IR instruction numbers.

use std::fmt::Write as _;
use std::path::Path;

use accy_artifact::{Arch, Artifact};
use accy_lower::aarch64::A64Target;
use accy_lower::kernel::{IndexMap, LoopKernel, Node};
use accy_lower::x64::{X64Target, X64Tier};
use accy_lower::Target;
use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};

use super::{Failure, TargetName};

/// `accy inspect`: prints the plan, kernels and (with `disassemble`) their code for `target`
/// (the host's best when `None`).
pub fn inspect(
    file: &Path,
    target: Option<TargetName>,
    exact: bool,
    disassemble: bool,
    model: &super::model::ModelArgs,
) -> Result<(), Failure> {
    let program = super::model::load_model(file, model)?.program;
    let target: Box<dyn Target> = match target {
        Some(TargetName::X64(tier)) => {
            Box::new(X64Target::new(tier).with_float_reassociation(!exact))
        }
        Some(TargetName::Aarch64) => Box::new(A64Target::new().with_float_reassociation(!exact)),
        None => Box::new(X64Target::new(host_tier()?).with_float_reassociation(!exact)),
    };
    let lowered = accy_lower::plan(&program)
        .map_err(|e| Failure::Runtime(format!("planning {}: {e}", file.display())))?;
    let kernels = lowered.kernels.clone();
    let code = target
        .emit(&kernels)
        .map_err(|e| Failure::Runtime(format!("generating code: {e}")))?;
    let artifact = lowered
        .into_artifact(target.spec(), code)
        .map_err(|e| Failure::Runtime(format!("assembling the artifact: {e}")))?;
    artifact
        .validate()
        .map_err(|e| Failure::Runtime(format!("the artifact is invalid: {e}")))?;
    print!(
        "{}",
        render(file, target.name(), &artifact, &kernels, disassemble)
    );
    Ok(())
}

/// The x86-64 tier a default session would use on this CPU.
fn host_tier() -> Result<X64Tier, Failure> {
    let session = super::session(None, false)?;
    let name = session.target_name();
    X64Tier::ALL
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| {
            Failure::Runtime(format!(
                "the host's code generator {name} is not one inspect knows; pass --target"
            ))
        })
}

fn render(
    file: &Path,
    target: &str,
    artifact: &Artifact,
    kernels: &[LoopKernel],
    disassemble: bool,
) -> String {
    let mut s = String::new();
    let scratch = artifact.plan.scratch_layout();
    let _ = writeln!(
        s,
        "{}: target {target} ({}), {} kernels, {} code bytes, {} constant bytes",
        file.display(),
        artifact.target,
        artifact.kernels.len(),
        artifact.code.len(),
        artifact.constants.len()
    );
    match scratch {
        Some(layout) => {
            let _ = writeln!(
                s,
                "\nslots (scratch: {} bytes in one block, align {}):",
                layout.size, layout.alignment
            );
        }
        None => {
            let _ = writeln!(s, "\nslots:");
        }
    }
    for line in artifact.plan.to_string().lines() {
        let _ = writeln!(s, "  {line}");
    }
    let _ = writeln!(s, "\ncommands:");
    for line in artifact.launch.to_string().lines() {
        let _ = writeln!(s, "  {line}");
    }
    for (i, (k, entry)) in kernels.iter().zip(&artifact.kernels).enumerate() {
        let _ = writeln!(s, "\nkernel {i} `{}`: {}", k.name, space(k));
        for (b, binding) in k.bindings.iter().enumerate() {
            let _ = writeln!(
                s,
                "  b{b}: {} {} x {}",
                binding.access, binding.dtype, binding.elements
            );
        }
        for (n, node) in k.nodes.iter().enumerate() {
            let _ = writeln!(s, "  %{n} = {} : {}", node_text(&node.node), node.dtype);
        }
        let combine = k
            .reduction
            .map(|r| format!("{r} over reduction dims, "))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  store {combine}%{} at b{}[{}]",
            k.result,
            k.store.binding,
            map_text(&k.store.map)
        );
        let _ = writeln!(s, "  code: {} bytes at offset {}", entry.len, entry.offset);
        if disassemble {
            if let Some(code) = artifact.kernel_code(u32::try_from(i).unwrap_or(u32::MAX)) {
                match artifact.target.arch {
                    Arch::Aarch64 => disassembly_aarch64(&mut s, code, u64::from(entry.offset)),
                    _ => disassembly(&mut s, code, u64::from(entry.offset)),
                }
            }
        }
    }
    s
}

/// `dims [64, 1000], 1 parallel + 1 reduced (max)`.
fn space(k: &LoopKernel) -> String {
    let dims: Vec<String> = k.dims.iter().map(u64::to_string).collect();
    let reduced = k.reduction_dims().len();
    let mut s = format!("dims [{}], {} parallel", dims.join(", "), k.parallel_rank);
    if reduced > 0 || k.reduction.is_some() {
        s.push_str(&format!(" + {reduced} reduced"));
    }
    s
}

/// `3 + 1000*i0 + i1` (terms with stride 0 left out).
fn map_text(map: &IndexMap) -> String {
    let mut s = map.offset.to_string();
    for (d, &stride) in map.strides.iter().enumerate() {
        match stride {
            0 => {}
            1 => s.push_str(&format!(" + i{d}")),
            -1 => s.push_str(&format!(" - i{d}")),
            st if st < 0 => s.push_str(&format!(" - {}*i{d}", st.unsigned_abs())),
            st => s.push_str(&format!(" + {st}*i{d}")),
        }
    }
    s
}

fn node_text(node: &Node) -> String {
    match node {
        Node::Load { binding, map } => format!("load b{binding}[{}]", map_text(map)),
        Node::Gather {
            binding,
            map,
            index,
            axis_len,
            axis_stride,
        } => format!(
            "gather b{binding}[{} + clamp(%{index}, 0, {}) * {axis_stride}]",
            map_text(map),
            axis_len.saturating_sub(1)
        ),
        Node::Const { bits } => format!("const {bits:#x}"),
        Node::Index { dim, scale, offset } => match dim {
            Some(d) => format!("index {offset} + {scale}*i{d}"),
            None => format!("index {offset}"),
        },
        Node::Unary { op, x } => format!("{op} %{x}"),
        Node::Binary { op, lhs, rhs } => format!("{op} %{lhs}, %{rhs}"),
        Node::Compare { op, lhs, rhs } => format!("compare {op} %{lhs}, %{rhs}"),
        Node::Select {
            cond,
            on_true,
            on_false,
        } => format!("select %{cond}, %{on_true}, %{on_false}"),
        Node::Convert { x } => format!("convert %{x}"),
    }
}

/// Appends one line per instruction: address, bytes, Intel syntax.
fn disassembly(s: &mut String, code: &[u8], ip: u64) {
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut formatter = IntelFormatter::new();
    let mut text = String::new();
    for instruction in &mut decoder {
        text.clear();
        formatter.format(&instruction, &mut text);
        let start = usize::try_from(instruction.ip() - ip).unwrap_or(0);
        let bytes: String = code
            .get(start..start + instruction.len())
            .unwrap_or(&[])
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let _ = writeln!(s, "    {:06x}  {bytes:<24} {text}", instruction.ip());
    }
}

/// Appends one line per AArch64 instruction word: address, word, text (yaxpeax-arm), or
/// `<undecodable>` for a word the decoder rejects.
fn disassembly_aarch64(s: &mut String, code: &[u8], address: u64) {
    use yaxpeax_arch::{Decoder as _, U8Reader};
    let decoder = yaxpeax_arm::armv8::a64::InstDecoder::default();
    for (i, word) in code.chunks(4).enumerate() {
        let at = address + 4 * i as u64;
        let mut reader = U8Reader::new(word);
        let text = match decoder.decode(&mut reader) {
            Ok(inst) => inst.to_string(),
            Err(_) => "<undecodable>".to_owned(),
        };
        let hex: String = word.iter().rev().map(|b| format!("{b:02x}")).collect();
        let _ = writeln!(s, "    {at:06x}  {hex:<8} {text}");
    }
}
