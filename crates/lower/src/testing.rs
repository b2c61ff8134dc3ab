//! Test support shared by this crate's tests, the emitters' tests and the session's (behind the
//! `testing` feature; release builds leave it out).
//!
//! - [`conformance`]: the kernel conformance suite every backend runs through a
//!   [`conformance::KernelRunner`] (in process, or under an emulator);
//! - [`kernels`]: edge values, deterministic data and a random kernel generator;
//! - `peak` (x86-64): a generated FMA loop, for benchmarks that report a fraction of peak;
//! - [`run_commands`]: one plan runner (fill, copy, dispatch in order over plain byte vectors)
//!   whose dispatches run either the reference kernel interpreter ([`run_lowered`], which
//!   checks fusion and buffer planning) or real machine code through a runner
//!   ([`run_artifact`]); [`same_results`] compares outputs with the NaN rule.

use accy_artifact::{
    Arch, Artifact, ArtifactError, ArtifactPlan, Command, FeatureSet, KernelEntry, PlanSummary,
    Region, SlotRole, TargetSpec,
};
use accy_ir::{Program, Tensor, TensorData};

pub mod conformance;
pub mod kernels;
#[cfg(feature = "x64")]
pub mod peak;

use crate::kernel::{run_kernel, IndexMap, Kernel, LoopKernel, Node};
use crate::plan::LoweredProgram;

fn bytes<'a>(slots: &'a [Vec<u8>], r: &Region) -> Result<&'a [u8], String> {
    let end = r.end().ok_or("region end overflows")?;
    slots
        .get(r.slot.index())
        .and_then(|s| s.get(r.offset as usize..end as usize))
        .ok_or_else(|| format!("region {r} is outside its slot"))
}

fn bytes_mut<'a>(slots: &'a mut [Vec<u8>], r: &Region) -> Result<&'a mut [u8], String> {
    let end = r.end().ok_or("region end overflows")?;
    slots
        .get_mut(r.slot.index())
        .and_then(|s| s.get_mut(r.offset as usize..end as usize))
        .ok_or_else(|| format!("region {r} is outside its slot"))
}

/// Which workgroups of a dispatch one [`Dispatcher`] call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grid {
    /// All of this many, in any order.
    All(u32),
    /// Only workgroup `index` of `count` (a link of a chained dispatch, see
    /// `accy_artifact::launch`).
    One {
        /// The workgroup run.
        index: u32,
        /// The dispatch's workgroup count.
        count: u32,
    },
}

/// How [`run_commands`] runs one dispatch: kernel number, the bytes of its bindings (copied
/// out of their regions; written ones are copied back), and which workgroups.
pub type Dispatcher<'a> = dyn FnMut(u32, &mut [Vec<u8>], Grid) -> Result<(), String> + 'a;

/// Runs the commands of a plan (`plan`'s slots, `constants`' payloads, the `setup` commands
/// that compute derived slots, then `commands`, in order) on `args` (one per parameter of
/// `program`, inputs and weights in parameter order) the way a runtime does, with `dispatch`
/// running each kernel, and returns one tensor per output.
///
/// Inputs, weights and constants start with their bytes; outputs, scratch and derived slots
/// start poisoned (`0xA5`), so a kernel that skips a store whose expected value is zero is
/// caught. A dispatch
/// with overlapping bindings where one writes is refused (copying bindings out would hide a
/// kernel reading what it writes through another binding), and so is a kernel that changed a
/// binding it may only read. A chain is run both as its links one after the other and
/// workgroup by workgroup in both orders, and refused if they differ (its links depend on
/// each other across workgroups); but a chain some of whose kernels `alone` says do not
/// compute their dispatch run alone (machine code keeping a workgroup's rows in worker
/// scratch for the next link, `crate::kernel::RowScratch`) runs only workgroup by workgroup,
/// in both orders. Errors are messages for a test failure.
pub fn run_commands(
    plan: &ArtifactPlan,
    constants: &[u8],
    [setup, commands]: [&[Command]; 2],
    program: &Program,
    args: &[Tensor],
    (dispatch, alone): (&mut Dispatcher<'_>, &dyn Fn(u32) -> bool),
) -> Result<Vec<Tensor>, String> {
    if args.len() != program.params.len() {
        return Err(format!(
            "{} arguments for {} parameters",
            args.len(),
            program.params.len()
        ));
    }
    let inputs: Vec<&Tensor> = program
        .params
        .iter()
        .zip(args)
        .filter(|(p, _)| p.kind == accy_ir::ParamKind::Input)
        .map(|(_, a)| a)
        .collect();
    let mut slots: Vec<Vec<u8>> = Vec::with_capacity(plan.slots.len());
    for slot in &plan.slots {
        let size = usize::try_from(slot.byte_size).map_err(|e| e.to_string())?;
        let data = match &slot.role {
            SlotRole::Input(n) => inputs
                .get(*n as usize)
                .map(|t| t.data().to_le_bytes())
                .ok_or_else(|| format!("no argument for input {n}"))?,
            SlotRole::Weight(name) => program
                .params
                .iter()
                .zip(args)
                .find(|(p, _)| p.kind == accy_ir::ParamKind::Weight && &p.name == name)
                .map(|(_, a)| a.data().to_le_bytes())
                .ok_or_else(|| format!("no argument for weight {name:?}"))?,
            SlotRole::Constant { offset } => constants
                .get(*offset as usize..*offset as usize + size)
                .map(<[u8]>::to_vec)
                .ok_or("constant payload out of range")?,
            SlotRole::Output(_) | SlotRole::Scratch | SlotRole::Derived { .. } => {
                vec![0xA5; size]
            }
        };
        if data.len() != size {
            return Err(format!(
                "slot {} needs {size} bytes, has {}",
                slot.role,
                data.len()
            ));
        }
        slots.push(data);
    }

    execute(setup, &mut slots, dispatch, alone).map_err(|e| format!("setup {e}"))?;
    execute(commands, &mut slots, dispatch, alone)?;

    let outputs = plan.output_slots();
    program
        .outputs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let ty = program
                .value_type(out.value)
                .ok_or("output value missing")?;
            let slot = outputs.get(i).ok_or("output slot missing")?;
            let data = slots.get(slot.index()).ok_or("output slot missing")?;
            let data = TensorData::from_le_bytes(ty.dtype, data)
                .ok_or_else(|| format!("output {i} holds invalid {} bytes", ty.dtype))?;
            Tensor::new(&ty.dims, data).map_err(|e| e.to_string())
        })
        .collect()
}

/// Runs `commands` in order over `slots`.
fn execute(
    commands: &[Command],
    slots: &mut [Vec<u8>],
    dispatch: &mut Dispatcher<'_>,
    alone: &dyn Fn(u32) -> bool,
) -> Result<(), String> {
    let mut c = 0;
    while let Some(command) = commands.get(c) {
        match command {
            Command::Fill {
                dst,
                pattern,
                width,
            } => {
                let w = usize::from(*width);
                let pattern = pattern.to_le_bytes();
                let dst = bytes_mut(slots, dst)?;
                for (i, b) in dst.iter_mut().enumerate() {
                    *b = pattern[i % w];
                }
            }
            Command::Copy { src, dst } => {
                let data = bytes(slots, src)?.to_vec();
                bytes_mut(slots, dst)?.copy_from_slice(&data);
            }
            Command::Dispatch {
                workgroups,
                chained,
                ..
            } => {
                if !chained {
                    run_dispatch(c, command, slots, dispatch, Grid::All(*workgroups))?;
                } else {
                    let last = commands[c..]
                        .iter()
                        .position(|d| !matches!(d, Command::Dispatch { chained: true, .. }))
                        .map(|i| c + i)
                        .ok_or_else(|| format!("command {c}: a chain with no last link"))?;
                    let links_in_turn = commands[c..=last].iter().all(|d| match d {
                        Command::Dispatch { kernel, .. } => alone(*kernel),
                        _ => false,
                    });
                    let chain = (c..=last, *workgroups);
                    run_chain(commands, chain, slots, dispatch, links_in_turn)?;
                    c = last;
                }
            }
        }
        c += 1;
    }
    Ok(())
}

/// Runs the chain `links` (command numbers) of `count` workgroups over `slots`: its links one
/// after the other (when `links_in_turn`), as a chain promises to compute, and workgroup by
/// workgroup, first to last and last to first (each workgroup's links in order); any
/// difference is an error. A link that reads what another link writes in a different
/// workgroup sees it in one of the two orders and not in the other.
fn run_chain(
    commands: &[Command],
    (links, count): (std::ops::RangeInclusive<usize>, u32),
    slots: &mut [Vec<u8>],
    dispatch: &mut Dispatcher<'_>,
    links_in_turn: bool,
) -> Result<(), String> {
    let first = *links.start();
    let mut reference = None;
    if links_in_turn {
        let mut sequential = slots.to_vec();
        for link in links.clone() {
            let grid = Grid::All(count);
            run_dispatch(link, &commands[link], &mut sequential, dispatch, grid)?;
        }
        reference = Some(sequential);
    }
    for last_first in [false, true] {
        let mut chained = slots.to_vec();
        for i in 0..count {
            let index = if last_first { count - 1 - i } else { i };
            for link in links.clone() {
                let grid = Grid::One { index, count };
                run_dispatch(link, &commands[link], &mut chained, dispatch, grid)?;
            }
        }
        match &reference {
            None => reference = Some(chained),
            Some(expected) if chained != *expected => {
                let order = if last_first { "last" } else { "first" };
                let against = if links_in_turn {
                    "its links one after the other"
                } else {
                    "workgroup by workgroup, first first"
                };
                return Err(format!(
                    "command {first}: the chain computes something else workgroup by \
                     workgroup ({order} first) than {against}"
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(result) = reference {
        slots.clone_from_slice(&result);
    }
    Ok(())
}

/// Runs dispatch `command` (number `c`) over `slots` for the workgroups `grid` names.
fn run_dispatch(
    c: usize,
    command: &Command,
    slots: &mut [Vec<u8>],
    dispatch: &mut Dispatcher<'_>,
    grid: Grid,
) -> Result<(), String> {
    let Command::Dispatch {
        kernel, bindings, ..
    } = command
    else {
        return Err(format!("command {c}: a chain links a {}", command.name()));
    };
    for (i, a) in bindings.iter().enumerate() {
        for b in &bindings[i + 1..] {
            if a.region.overlaps(&b.region) && (a.access.writes() || b.access.writes()) {
                return Err(format!("command {c}: bindings overlap: {a} and {b}"));
            }
        }
    }
    let mut buffers: Vec<Vec<u8>> = bindings
        .iter()
        .map(|b| bytes(slots, &b.region).map(<[u8]>::to_vec))
        .collect::<Result<_, String>>()?;
    dispatch(*kernel, &mut buffers, grid).map_err(|e| format!("command {c}: {e}"))?;
    for (b, data) in bindings.iter().zip(&buffers) {
        let region = bytes_mut(slots, &b.region)?;
        if b.access.writes() {
            region.copy_from_slice(data);
        } else if region != data.as_slice() {
            return Err(format!(
                "command {c}: kernel {kernel} wrote its read-only binding {}",
                b.region
            ));
        }
    }
    Ok(())
}

/// `k` cut down to workgroup `index` of `count`: the share of its outer dim the emitters give
/// that workgroup (`[d0 · index / count, d0 · (index + 1) / count)`), its maps moved to start
/// there; `None` when the share is empty.
fn workgroup_share(k: &LoopKernel, index: u32, count: u32) -> Result<Option<LoopKernel>, String> {
    let Some(&d0) = k.dims.first() else {
        return Err(format!("kernel {} has no dims to split", k.name));
    };
    if k.parallel_rank == 0 {
        return Err(format!("kernel {} has no parallel dim to split", k.name));
    }
    let at = |w: u32| (u128::from(d0) * u128::from(w) / u128::from(count.max(1))) as u64;
    let (lo, hi) = (at(index), at(index.saturating_add(1)));
    if lo >= hi {
        return Ok(None);
    }
    let overflow = || format!("kernel {}: a map's offset overflows at row {lo}", k.name);
    let lo_i = i64::try_from(lo).map_err(|_| overflow())?;
    let moved = |offset: i64, step: i64| {
        step.checked_mul(lo_i)
            .and_then(|d| offset.checked_add(d))
            .ok_or_else(overflow)
    };
    let shift = |map: &mut IndexMap| -> Result<(), String> {
        let s0 = map.strides.first().copied().unwrap_or(0);
        map.offset = moved(map.offset, s0)?;
        Ok(())
    };
    let mut share = k.clone();
    share.dims[0] = hi - lo;
    // Where the rows live at run time does not concern the interpreter, and the shifted maps
    // no longer start their rows at 0.
    share.row_scratch.clear();
    shift(&mut share.store.map)?;
    if let Some(keep) = &mut share.keep {
        shift(&mut keep.map)?;
    }
    for n in &mut share.nodes {
        match &mut n.node {
            Node::Load { map, .. } | Node::Gather { map, .. } => shift(map)?,
            Node::Index {
                dim: Some(0),
                scale,
                offset,
            } => *offset = moved(*offset, *scale)?,
            _ => {}
        }
    }
    share.validate().map_err(|e| e.to_string())?;
    Ok(Some(share))
}

/// Runs `lowered` (planned from `program`) on `args` with [`run_commands`], each kernel
/// executed by the reference kernel interpreter: checks fusion and buffer planning without a
/// backend.
pub fn run_lowered(
    lowered: &LoweredProgram,
    program: &Program,
    args: &[Tensor],
) -> Result<Vec<Tensor>, String> {
    let mut dispatch = |kernel: u32, buffers: &mut [Vec<u8>], grid: Grid| {
        let k = lowered
            .kernels
            .get(kernel as usize)
            .ok_or_else(|| format!("no kernel {kernel}"))?;
        let mut views: Vec<&mut [u8]> = buffers.iter_mut().map(Vec::as_mut_slice).collect();
        match (grid, k) {
            (Grid::All(_), k) => k.run(&mut views).map_err(|e| e.to_string()),
            (Grid::One { index, count }, Kernel::Loop(k)) => {
                match workgroup_share(k, index, count)? {
                    Some(share) => run_kernel(&share, &mut views).map_err(|e| e.to_string()),
                    None => Ok(()),
                }
            }
            (Grid::One { .. }, Kernel::Contraction(_)) => {
                Err(format!("kernel {kernel}: a contraction in a chain"))
            }
        }
    };
    run_commands(
        &lowered.plan,
        &lowered.constants,
        [&lowered.setup, &lowered.commands],
        program,
        args,
        (&mut dispatch, &|_| true),
    )
}

/// Runs `artifact` (compiled from `program`) on `args` with [`run_commands`], each kernel's
/// machine code run by `runner` (which must run the artifact's target). Checks the emitted code
/// of a whole program against the interpreter wherever the runner runs it.
pub fn run_artifact(
    artifact: &Artifact,
    program: &Program,
    args: &[Tensor],
    runner: &dyn conformance::KernelRunner,
) -> Result<Vec<Tensor>, String> {
    let code = crate::target::EmittedCode {
        code: artifact.code.clone(),
        entries: artifact.kernels.clone(),
    };
    // One worker's scratch for every chain link: a chain's links of one workgroup find what
    // the previous links left there, as the runtime promises. (Other dispatches get fresh
    // scratch of exactly the size they declare, against its guard page.)
    let most = artifact.kernels.iter().map(|e| e.worker_scratch).max();
    let scratch = std::cell::RefCell::new(vec![0xA5u8; most.unwrap_or(0) as usize]);
    // A chain link declaring worker scratch keeps rows there for the next link: the chain
    // then computes only workgroup by workgroup. (Chains link loop kernels only.)
    let alone = |k: u32| {
        artifact
            .kernels
            .get(k as usize)
            .is_none_or(|e| e.worker_scratch == 0)
    };
    let mut dispatch = |kernel: u32, buffers: &mut [Vec<u8>], grid: Grid| {
        let launch = match grid {
            Grid::All(workgroups) => conformance::Launch::new(workgroups),
            Grid::One { index, count } => conformance::Launch {
                only: Some(index),
                worker_scratch: Some(&scratch),
                ..conformance::Launch::new(count)
            },
        };
        let statuses = runner.run(&code, kernel as usize, buffers, &launch)?;
        match statuses
            .iter()
            .find(|&&s| s != accy_artifact::abi::KERNEL_OK)
        {
            Some(s) => Err(format!("kernel {kernel} returned status {s}")),
            None => Ok(()),
        }
    };
    run_commands(
        &artifact.plan,
        &artifact.constants,
        [&artifact.setup.commands, &artifact.launch.commands],
        program,
        args,
        (&mut dispatch, &alone),
    )
}

/// Checks that `actual` equals `expected` bit for bit, except that any NaN equals any NaN (the
/// IR leaves NaN payloads unspecified). Returns a message naming the first difference.
pub fn same_results(expected: &[Tensor], actual: &[Tensor]) -> Result<(), String> {
    if expected.len() != actual.len() {
        return Err(format!(
            "{} outputs expected, {} produced",
            expected.len(),
            actual.len()
        ));
    }
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        if e.ty() != a.ty() {
            return Err(format!("output {i}: expected {}, got {}", e.ty(), a.ty()));
        }
        let equal = match (e.data(), a.data()) {
            (TensorData::F32(x), TensorData::F32(y)) => x
                .iter()
                .zip(y)
                .position(|(p, q)| p.to_bits() != q.to_bits() && !(p.is_nan() && q.is_nan())),
            (TensorData::F64(x), TensorData::F64(y)) => x
                .iter()
                .zip(y)
                .position(|(p, q)| p.to_bits() != q.to_bits() && !(p.is_nan() && q.is_nan())),
            (x, y) => (x != y).then_some(0),
        };
        if let Some(at) = equal {
            return Err(format!(
                "output {i} differs at element {at}: expected {:?}, got {:?}",
                e.data(),
                a.data()
            ));
        }
    }
    Ok(())
}

/// Validates `lowered` as an artifact whose kernels are one-byte placeholders (x86-64, no
/// features): checks the plan and commands without a backend.
pub fn validate_plan(lowered: &LoweredProgram) -> Result<PlanSummary, ArtifactError> {
    let mut artifact = Artifact::new(TargetSpec::new(Arch::X86_64, FeatureSet::default()));
    let align = Arch::X86_64.code_alignment();
    for (i, k) in lowered.kernels.iter().enumerate() {
        let offset = artifact.code.len() as u32;
        artifact.code.push(0xc3);
        artifact
            .code
            .resize(artifact.code.len().next_multiple_of(align as usize), 0xcc);
        artifact.kernels.push(KernelEntry {
            name: if k.name().is_empty() {
                format!("kernel{i}")
            } else {
                k.name().to_owned()
            },
            offset,
            len: 1,
            worker_scratch: 0,
        });
    }
    artifact.constants = lowered.constants.clone();
    artifact.plan = lowered.plan.clone();
    artifact.setup.commands = lowered.setup.clone();
    artifact.launch.commands = lowered.commands.clone();
    artifact.validate()
}
