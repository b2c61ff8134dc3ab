//! `accy inspect`: the lowered plan of a program (slots, scratch, commands, kernels with their
//! fused node lists) and the disassembly of each kernel's generated code; for a compiled
//! artifact, the same without the kernel descriptions, which artifacts do not keep.
//!
//! The compiler hands back the kernel descriptions beside the artifact
//! (`accy_lower::compile_detailed`) with the IR instructions each kernel fused, and each kernel
//! prints itself: a "fuses" line naming those instructions, then its node list (loads through
//! their index maps, then the fused arithmetic).

use std::fmt::Write as _;
use std::path::Path;

use accy_artifact::Arch;
use accy_executable::CpuInfo;
use accy_ir::Program;
use accy_lower::{lookup_host, lookup_name, Compilation, Options, Target};
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
    out: &mut super::Out,
) -> Result<(), Failure> {
    if super::is_artifact(file) {
        if target.is_some() || exact {
            return Err(Failure::Usage(
                "--target and --exact choose how a program is compiled; an artifact's code is \
                 already generated"
                    .into(),
            ));
        }
        let bytes = super::buffer::read_file(file)?;
        let artifact = accy_artifact::Artifact::from_bytes(&bytes)
            .map_err(|e| Failure::Invalid(format!("{}: {e}", file.display())))?;
        let text = render(file, "from the artifact", &artifact, None, &[], disassemble);
        return out.bytes(text.as_bytes());
    }
    let program = super::model::load_model(file, model, &[])?.program;
    // Blocked for this host's caches, as a session compiling here would.
    let caches = accy_executable::CacheInfo::detect().blocking();
    let target: Box<dyn Target> = match target {
        Some(TargetName(name)) => lookup_name(name, None),
        None => {
            let cpu = CpuInfo::detect().map_err(|e| Failure::Usage(e.to_string()))?;
            lookup_host(cpu.arch(), cpu.features())
        }
    }
    .map_err(|e| Failure::Runtime(e.to_string()))?;
    let options = Options::default()
        .with_reassociate(!exact)
        .with_caches(caches);
    let compiled = accy_lower::compile_detailed(&program, target.as_ref(), &options)
        .map_err(|e| Failure::Runtime(format!("compiling {}: {e}", file.display())))?;
    // What the target's code does with each kernel's stores (x64 needs a vector loop besides
    // what `streams_stores` allows); asked here, so compiles do not pay for it.
    let emitted_with = options.for_target(target.as_ref());
    let stores: Vec<StoreNotes> = compiled
        .kernels
        .iter()
        .map(|k| StoreNotes {
            non_temporal: k
                .as_loop()
                .is_some_and(|k| target.streams_stores(k, &emitted_with)),
            on_line: k
                .as_loop()
                .and_then(|k| target.on_line_dims(k, &emitted_with)),
        })
        .collect();
    let text = render(
        file,
        target.name(),
        &compiled.artifact,
        Some((&compiled, &program)),
        &stores,
        disassemble,
    );
    out.bytes(text.as_bytes())
}

/// What the target's code does with one kernel's stores, beyond the kernel's description.
struct StoreNotes {
    /// Whether it streams them (non-temporal stores).
    non_temporal: bool,
    /// The dims of the order it runs instead when the output starts on a 64-byte line.
    on_line: Option<accy_ir::Dims>,
}

/// The listing of `artifact`; `compiled` (the compiler's kernel descriptions and the
/// program) adds each kernel's description and fused instructions, which a loaded artifact
/// does not keep, and `stores` (per kernel) what the target's code does with their stores.
fn render(
    file: &Path,
    target: &str,
    artifact: &accy_artifact::Artifact,
    compiled: Option<(&Compilation, &Program)>,
    stores: &[StoreNotes],
    disassemble: bool,
) -> String {
    let mut s = String::new();
    let scratch = artifact.plan.scratch_layout();
    let _ = writeln!(
        s,
        "{}: target {target} ({}), {} kernels, {} code bytes, {} constant bytes{}",
        file.display(),
        artifact.target,
        artifact.kernels.len(),
        artifact.code.len(),
        artifact.constants.len(),
        if artifact.flush_subnormals {
            ", runs flush subnormals to zero"
        } else {
            ""
        }
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
    if artifact.blocking != Default::default() {
        let _ = writeln!(s, "\nblocked for {}", artifact.blocking);
    }
    if !artifact.setup.commands.is_empty() {
        let _ = writeln!(s, "\nsetup (once, when the weights are bound):");
        for line in artifact.setup.to_string().lines() {
            let _ = writeln!(s, "  {line}");
        }
    }
    let _ = writeln!(s, "\ncommands:");
    for line in artifact.launch.to_string().lines() {
        let _ = writeln!(s, "  {line}");
    }
    for (i, entry) in artifact.kernels.iter().enumerate() {
        match compiled.and_then(|(c, _)| c.kernels.get(i)) {
            Some(k) => {
                let _ = write!(s, "\n{i}: {k}");
                let notes = stores.get(i);
                if notes.is_some_and(|n| n.non_temporal) {
                    let _ = writeln!(
                        s,
                        "  stores: non-temporal in the vector loop (the output is at least half \
                         as large as the last-level cache), except a store whose address is not \
                         aligned for them"
                    );
                }
                if let Some(dims) = notes.and_then(|n| n.on_line.as_ref()) {
                    let _ = writeln!(
                        s,
                        "  on a line: an output that starts on a 64-byte line is written in the \
                         order of dims {dims:?} (sub-stripes of source rows)"
                    );
                }
            }
            None => {
                let _ = writeln!(s, "\n{i}: kernel `{}`", entry.name);
            }
        }
        let fused_from = compiled.and_then(|(c, p)| Some((c.sources.get(i)?, p)));
        if let Some((sources, program)) = fused_from.filter(|(v, _)| !v.is_empty()) {
            let fused: Vec<String> = sources
                .iter()
                .filter_map(|&k| {
                    let inst = program.instructions.get(k as usize)?;
                    let v = program.instruction_value(k as usize);
                    Some(format!("%{} {}", v.index(), inst.op.mnemonic()))
                })
                .collect();
            let _ = writeln!(s, "  fuses: {}", fused.join(", "));
        }
        let _ = writeln!(s, "  code: {} bytes at offset {}", entry.len, entry.offset);
        if disassemble {
            if let Some(code) = artifact.kernel_code(u32::try_from(i).unwrap_or(u32::MAX)) {
                match artifact.target.arch {
                    Arch::Aarch64 => disassembly_aarch64(&mut s, code, u64::from(entry.offset)),
                    Arch::X86_64 => disassembly(&mut s, code, u64::from(entry.offset)),
                }
            }
        }
    }
    s
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
