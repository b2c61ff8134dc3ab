//! The emulator harness: runs AArch64 kernels under unicorn through the dispatch ABI.
//!
//! Memory of one run (all 4 KiB pages; everything not listed is unmapped):
//! - the code, read + execute;
//! - one page of import stubs: entry `i` of the import table points at stub `i`, a `ret`. A
//!   code hook on the stub runs the same Rust function the runtime's import table holds
//!   (`accy_executable::ImportFn`) on s0/s1 or d0/d1, writes s0/d0, and clobbers the other
//!   caller-saved registers with junk, so code that keeps a value in one across a call fails;
//! - the dispatch state page (the `DispatchState`, the binding pointer and length arrays and
//!   the import table), read-only;
//! - a 256 KiB stack with unmapped pages below;
//! - each binding in its own mapping whose last byte touches an unmapped page, with an
//!   unmapped page before it too, so any out-of-bounds access stops the run with
//!   `READ_UNMAPPED`/`WRITE_UNMAPPED`.
//!
//! The kernel is entered with `lr` = a magic address in a page holding `brk #0`; the run
//! stops there. Since hitting the instruction budget also returns `Ok`, every run checks that `pc` is the
//! magic address, that `sp` is back, and that x19-x29 and d8-d15 hold the sentinels they were
//! given (AAPCS64 callee-saved registers).

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the shared harness"
)]

use accy_artifact::abi::{DispatchState, ABI_VERSION};
use accy_artifact::{Artifact, Command, Import, SlotRole};
use accy_executable::ImportFn;
use accy_ir::{ParamKind, Program, Tensor, TensorData};
use accy_lower::kernel::LoopKernel;
use accy_lower::Target;
use unicorn_engine::{Arch, Arm64CpuModel, Mode, Prot, RegisterARM64, Unicorn};

/// Dispatches [`run_artifact`] has run in this process, so a suite can prove it ran code.
pub static DISPATCHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

const PAGE: u64 = 0x1000;
const MAGIC: u64 = 0x0000_7000;
const STUBS: u64 = 0x0000_8000;
const STATE: u64 = 0x0001_0000;
const STACK_BOTTOM: u64 = 0x0010_0000;
const STACK_SIZE: u64 = 0x0004_0000;
const CODE: u64 = 0x0100_0000;
const BUFFERS: u64 = 0x1000_0000;
/// The most instructions one call may run before it counts as hung. An instruction budget
/// rather than unicorn's wall-clock timeout, whose timer thread made loaded runs flaky.
const MAX_INSTRUCTIONS: usize = 200_000_000;
/// `ret` and `brk #0`.
const RET: u32 = 0xd65f_03c0;
const BRK: u32 = 0xd420_0000;

fn round_up(n: u64) -> u64 {
    n.div_ceil(PAGE).max(1) * PAGE
}

fn x(n: i32) -> i32 {
    RegisterARM64::X0 as i32 + n
}

fn d(n: i32) -> i32 {
    RegisterARM64::D0 as i32 + n
}

fn s(n: i32) -> i32 {
    RegisterARM64::S0 as i32 + n
}

/// Sentinel for callee-saved register `n`.
fn sentinel(n: u64) -> u64 {
    0x5a5a_0000_0000_0000 | (n << 8) | 0xc3
}

/// The import hook: runs the import of stub `addr` on the argument registers.
fn run_import<D>(uc: &mut Unicorn<'_, D>, addr: u64) {
    let Some(&import) = Import::ALL.get(((addr - STUBS) / 4) as usize) else {
        return;
    };
    let rd = |uc: &Unicorn<'_, D>, r: i32| uc.reg_read(r).expect("read register");
    match ImportFn::of(import) {
        ImportFn::UnaryF32(f) => {
            let a = f32::from_bits(rd(uc, s(0)) as u32);
            uc.reg_write(s(0), u64::from(f(a).to_bits())).expect("s0");
        }
        ImportFn::UnaryF64(f) => {
            let a = f64::from_bits(rd(uc, d(0)));
            uc.reg_write(d(0), f(a).to_bits()).expect("d0");
        }
        ImportFn::BinaryF32(f) => {
            let (a, b) = (
                f32::from_bits(rd(uc, s(0)) as u32),
                f32::from_bits(rd(uc, s(1)) as u32),
            );
            uc.reg_write(s(0), u64::from(f(a, b).to_bits()))
                .expect("s0");
        }
        ImportFn::BinaryF64(f) => {
            let (a, b) = (f64::from_bits(rd(uc, d(0))), f64::from_bits(rd(uc, d(1))));
            uc.reg_write(d(0), f(a, b).to_bits()).expect("d0");
        }
    }
    // A real callee may clobber every caller-saved register.
    for r in 0..18 {
        uc.reg_write(x(r), 0xdead_beef_0000_0000 | r as u64)
            .expect("clobber");
    }
    for r in (1..8).chain(16..32) {
        uc.reg_write(d(r), 0x7ff4_dead_0000_0000 | r as u64)
            .expect("clobber");
    }
}

/// Formats a unicorn error of step `what`.
fn err(what: &'static str) -> impl Fn(unicorn_engine::uc_error) -> String {
    move |e| format!("{what}: {e:?}")
}

/// What went wrong in one emulated call.
pub type RunResult<T> = Result<T, String>;

/// Runs the kernel at `entry` of `code` over `workgroups` workgroups (one call each, in order)
/// on guarded copies of `buffers`, copies the buffers back and returns the statuses. Errors
/// are emulator faults (unmapped accesses, bad instructions) and ABI violations.
pub fn run_code(
    code: &[u8],
    entry: u32,
    buffers: &mut [Vec<u8>],
    workgroups: u32,
    abi_version: u32,
) -> RunResult<Vec<u32>> {
    let lengths: Vec<u64> = buffers.iter().map(|b| b.len() as u64).collect();
    run_code_claiming(code, entry, buffers, workgroups, abi_version, &lengths)
}

/// [`run_code`], but the dispatch state claims `lengths` (one per buffer, or a different
/// count) as the bindings' byte lengths instead of their real sizes: for testing the kernel's
/// own binding checks and, by claiming more than is mapped, the guard pages.
pub fn run_code_claiming(
    code: &[u8],
    entry: u32,
    buffers: &mut [Vec<u8>],
    workgroups: u32,
    abi_version: u32,
    lengths_claimed: &[u64],
) -> RunResult<Vec<u32>> {
    let mut uc = Unicorn::new(Arch::ARM64, Mode::LITTLE_ENDIAN).map_err(err("new"))?;
    // The ARMv8.0 baseline the backend targets (A72 is also unicorn's default).
    uc.ctl_set_cpu_model(Arm64CpuModel::A72 as i32)
        .map_err(err("cpu model"))?;
    let rx = Prot::READ | Prot::EXEC;
    uc.mem_map(MAGIC, PAGE, rx).map_err(err("map magic"))?;
    uc.mem_write(MAGIC, &BRK.to_le_bytes())
        .map_err(err("write magic"))?;
    uc.mem_map(STUBS, PAGE, rx).map_err(err("map stubs"))?;
    let stubs: Vec<u8> = (0..Import::COUNT).flat_map(|_| RET.to_le_bytes()).collect();
    uc.mem_write(STUBS, &stubs).map_err(err("write stubs"))?;
    uc.add_code_hook(
        STUBS,
        STUBS + 4 * Import::COUNT as u64 - 1,
        |uc, addr, _| run_import(uc, addr),
    )
    .map_err(err("hook"))?;
    uc.mem_map(CODE, round_up(code.len() as u64), rx)
        .map_err(err("map code"))?;
    uc.mem_write(CODE, code).map_err(err("write code"))?;
    uc.mem_map(STACK_BOTTOM, STACK_SIZE, Prot::READ | Prot::WRITE)
        .map_err(err("map stack"))?;

    // Bindings: each ends at an unmapped page and has one before it.
    let mut next = BUFFERS;
    let mut addresses = Vec::with_capacity(buffers.len());
    for b in buffers.iter() {
        let len = b.len() as u64;
        if len == 0 {
            // Never dereferenced (ABI); an unmapped address catches it if it is.
            addresses.push(next);
            next += 2 * PAGE;
            continue;
        }
        let size = round_up(len);
        let start = next + PAGE;
        uc.mem_map(start, size, Prot::READ | Prot::WRITE)
            .map_err(err("map binding"))?;
        let at = start + size - len;
        uc.mem_write(at, b).map_err(err("write binding"))?;
        addresses.push(at);
        next = start + size + PAGE;
    }

    // The state page: DispatchState, pointers, lengths, import table.
    let n = buffers.len() as u64;
    let claimed = lengths_claimed.len() as u64;
    let pointers = STATE + 64;
    let lengths = pointers + 8 * n.max(claimed);
    let imports = lengths + 8 * n.max(claimed);
    let state_size = round_up(imports - STATE + 8 * Import::COUNT as u64);
    uc.mem_map(STATE, state_size, Prot::READ)
        .map_err(err("map state"))?;
    let mut page = vec![0u8; state_size as usize];
    let mut put = |at: u64, bytes: &[u8]| {
        let o = (at - STATE) as usize;
        page[o..o + bytes.len()].copy_from_slice(bytes);
    };
    let field = |offset: u32| STATE + u64::from(offset);
    put(
        field(DispatchState::OFFSET_ABI_VERSION),
        &abi_version.to_le_bytes(),
    );
    put(
        field(DispatchState::OFFSET_BINDING_COUNT),
        &(claimed as u32).to_le_bytes(),
    );
    put(
        field(DispatchState::OFFSET_BINDINGS),
        &pointers.to_le_bytes(),
    );
    put(
        field(DispatchState::OFFSET_BINDING_LENGTHS),
        &lengths.to_le_bytes(),
    );
    put(field(DispatchState::OFFSET_SCALARS), &0u64.to_le_bytes());
    put(
        field(DispatchState::OFFSET_SCALAR_COUNT),
        &0u32.to_le_bytes(),
    );
    put(
        field(DispatchState::OFFSET_WORKGROUP_COUNT),
        &workgroups.to_le_bytes(),
    );
    put(field(DispatchState::OFFSET_IMPORTS), &imports.to_le_bytes());
    for (i, a) in addresses.iter().enumerate() {
        put(pointers + 8 * i as u64, &a.to_le_bytes());
    }
    for (i, l) in lengths_claimed.iter().enumerate() {
        put(lengths + 8 * i as u64, &l.to_le_bytes());
    }
    for i in 0..Import::COUNT as u64 {
        put(imports + 8 * i, &(STUBS + 4 * i).to_le_bytes());
    }
    uc.mem_write(STATE, &page).map_err(err("write state"))?;

    let top = STACK_BOTTOM + STACK_SIZE;
    let mut statuses = Vec::new();
    for wg in 0..workgroups.max(1) {
        for r in 19..29 {
            uc.reg_write(x(r), sentinel(r as u64)).map_err(err("x"))?;
        }
        uc.reg_write(RegisterARM64::X29, sentinel(29))
            .map_err(err("fp"))?;
        for r in 8..16 {
            uc.reg_write(d(r), sentinel(100 + r as u64))
                .map_err(err("d"))?;
        }
        uc.reg_write(x(0), STATE).map_err(err("x0"))?;
        uc.reg_write(x(1), u64::from(wg)).map_err(err("x1"))?;
        uc.reg_write(RegisterARM64::LR, MAGIC).map_err(err("lr"))?;
        uc.reg_write(RegisterARM64::SP, top).map_err(err("sp"))?;
        let start = CODE + u64::from(entry);
        uc.emu_start(start, MAGIC, 0, MAX_INSTRUCTIONS)
            .map_err(|e| {
                let pc = uc.reg_read(RegisterARM64::PC).unwrap_or(0);
                format!("workgroup {wg}: emulation stopped with {e:?} at pc {pc:#x}")
            })?;
        let pc = uc.reg_read(RegisterARM64::PC).map_err(err("pc"))?;
        if pc != MAGIC {
            return Err(format!(
                "workgroup {wg}: did not return (pc {pc:#x}; timeout?)"
            ));
        }
        let sp = uc.reg_read(RegisterARM64::SP).map_err(err("sp"))?;
        if sp != top {
            return Err(format!(
                "workgroup {wg}: sp {sp:#x} after return, expected {top:#x}"
            ));
        }
        for r in 19..30 {
            // x29 is not numbered after x28 in unicorn's register enum.
            let reg = if r == 29 {
                RegisterARM64::X29 as i32
            } else {
                x(r)
            };
            let v = uc.reg_read(reg).map_err(err("x"))?;
            if v != sentinel(r as u64) {
                return Err(format!("workgroup {wg}: x{r} not preserved ({v:#x})"));
            }
        }
        for r in 8..16 {
            let v = uc.reg_read(d(r)).map_err(err("d"))?;
            if v != sentinel(100 + r as u64) {
                return Err(format!("workgroup {wg}: d{r} not preserved ({v:#x})"));
            }
        }
        let w0 = uc.reg_read(x(0)).map_err(err("x0"))?;
        statuses.push(w0 as u32);
    }
    for (b, &a) in buffers.iter_mut().zip(&addresses) {
        if !b.is_empty() {
            uc.mem_read(a, b).map_err(err("read binding"))?;
        }
    }
    Ok(statuses)
}

/// Emits `kernel` with `target` and runs it (see [`run_code`]).
pub fn run_kernel_emulated(
    target: &dyn Target,
    kernel: &LoopKernel,
    buffers: &mut [Vec<u8>],
    workgroups: u32,
) -> RunResult<Vec<u32>> {
    let code = target
        .emit(std::slice::from_ref(kernel))
        .map_err(|e| format!("emit: {e}"))?;
    run_code(
        &code.code,
        code.entries[0].offset,
        buffers,
        workgroups,
        ABI_VERSION,
    )
}

fn is_nan(dtype: accy_ir::DType, bytes: &[u8]) -> bool {
    match dtype {
        accy_ir::DType::F32 => bytes
            .try_into()
            .is_ok_and(|b: [u8; 4]| f32::from_le_bytes(b).is_nan()),
        accy_ir::DType::F64 => bytes
            .try_into()
            .is_ok_and(|b: [u8; 8]| f64::from_le_bytes(b).is_nan()),
        _ => false,
    }
}

/// Runs `kernel` with the reference interpreter and under emulation (over `workgroups`
/// workgroups) on copies of `buffers`, and returns a message for the first element that
/// differs (floats bit for bit, except that any NaN equals any NaN).
pub fn compare_with_interpreter(
    target: &dyn Target,
    kernel: &LoopKernel,
    buffers: &[Vec<u8>],
    workgroups: u32,
) -> RunResult<()> {
    let mut expected = buffers.to_vec();
    {
        let mut views: Vec<&mut [u8]> = expected.iter_mut().map(|b| b.as_mut_slice()).collect();
        accy_lower::kernel::run_kernel(kernel, &mut views).map_err(|e| e.to_string())?;
    }
    let mut actual = buffers.to_vec();
    let statuses = run_kernel_emulated(target, kernel, &mut actual, workgroups)
        .map_err(|e| format!("{e}\nkernel: {kernel:#?}"))?;
    if statuses.iter().any(|&s| s != 0) {
        return Err(format!("statuses {statuses:?}"));
    }
    for (i, (e, a)) in expected.iter().zip(&actual).enumerate() {
        let dtype = kernel.bindings[i].dtype;
        let size = dtype.size_bytes() as usize;
        for (j, (ee, aa)) in e.chunks(size).zip(a.chunks(size)).enumerate() {
            if ee != aa && !(is_nan(dtype, ee) && is_nan(dtype, aa)) {
                return Err(format!(
                    "binding {i} element {j}: expected {ee:02x?}, got {aa:02x?}\nkernel: {kernel:#?}\ninputs: {buffers:02x?}"
                ));
            }
        }
    }
    Ok(())
}

/// Runs `artifact` (compiled from `program`) on `args` the way a runtime does: slots hold the
/// inputs, weights and constants; Fill and Copy run in Rust; every Dispatch runs its kernel
/// under emulation on guarded copies of its binding regions. Returns one tensor per output.
pub fn run_artifact(
    artifact: &Artifact,
    program: &Program,
    args: &[Tensor],
) -> RunResult<Vec<Tensor>> {
    let inputs: Vec<&Tensor> = program
        .params
        .iter()
        .zip(args)
        .filter(|(p, _)| p.kind == ParamKind::Input)
        .map(|(_, a)| a)
        .collect();
    let mut slots: Vec<Vec<u8>> = Vec::new();
    for slot in &artifact.plan.slots {
        let size = slot.byte_size as usize;
        let data = match &slot.role {
            SlotRole::Input(n) => inputs
                .get(*n as usize)
                .map(|t| t.data().to_le_bytes())
                .ok_or("missing input")?,
            SlotRole::Weight(name) => program
                .params
                .iter()
                .zip(args)
                .find(|(p, _)| p.kind == ParamKind::Weight && &p.name == name)
                .map(|(_, a)| a.data().to_le_bytes())
                .ok_or("missing weight")?,
            SlotRole::Constant { offset } => artifact
                .constants
                .get(*offset as usize..*offset as usize + size)
                .ok_or("constant out of range")?
                .to_vec(),
            // Outputs and scratch start as poison, not zeros, so a kernel that skips a store
            // whose expected value is 0 (or false) is caught; intended zeros come from the
            // plan's Fill commands.
            _ => vec![0xA5; size],
        };
        if data.len() != size {
            return Err(format!(
                "slot {} has {} bytes, needs {size}",
                slot.role,
                data.len()
            ));
        }
        slots.push(data);
    }
    let range = |r: &accy_artifact::Region| {
        let start = r.offset as usize;
        (r.slot.index(), start..start + r.len as usize)
    };
    for command in &artifact.launch.commands {
        match command {
            Command::Fill {
                dst,
                pattern,
                width,
            } => {
                let pattern = pattern.to_le_bytes();
                let (s, r) = range(dst);
                for (i, b) in slots[s][r].iter_mut().enumerate() {
                    *b = pattern[i % usize::from(*width)];
                }
            }
            Command::Copy { src, dst } => {
                let (s, r) = range(src);
                let data = slots[s][r].to_vec();
                let (s, r) = range(dst);
                slots[s][r].copy_from_slice(&data);
            }
            Command::Dispatch {
                kernel,
                bindings,
                workgroups,
                ..
            } => {
                let entry = artifact.kernels[*kernel as usize].offset;
                let mut buffers: Vec<Vec<u8>> = bindings
                    .iter()
                    .map(|b| {
                        let (s, r) = range(&b.region);
                        slots[s][r].to_vec()
                    })
                    .collect();
                let statuses = run_code(
                    &artifact.code,
                    entry,
                    &mut buffers,
                    *workgroups,
                    ABI_VERSION,
                )?;
                DISPATCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if statuses.iter().any(|&s| s != 0) {
                    return Err(format!("kernel {kernel}: statuses {statuses:?}"));
                }
                for (b, data) in bindings.iter().zip(&buffers) {
                    let (s, r) = range(&b.region);
                    if b.access.writes() {
                        slots[s][r].copy_from_slice(data);
                    } else if slots[s][r.clone()] != data[..] {
                        return Err(format!(
                            "kernel {kernel} wrote its read-only binding {:?}",
                            b.region
                        ));
                    }
                }
            }
        }
    }
    let outputs = artifact.plan.output_slots();
    program
        .outputs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let ty = program.value_type(out.value).ok_or("output type")?;
            let data = &slots[outputs.get(i).ok_or("output slot")?.index()];
            let data = TensorData::from_le_bytes(ty.dtype, data).ok_or("output bytes")?;
            Tensor::new(&ty.dims, data).map_err(|e| e.to_string())
        })
        .collect()
}
