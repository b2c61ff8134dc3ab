//! The emulator harness: runs AArch64 kernels under unicorn through the dispatch ABI, as the
//! conformance suite's [`EmulatorRunner`].
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

use std::sync::atomic::{AtomicUsize, Ordering};

use accy_artifact::abi::DispatchState;
use accy_artifact::Import;
use accy_executable::ImportFn;
use accy_lower::aarch64::A64Target;
use accy_lower::testing::conformance::{KernelRunner, Launch};
use accy_lower::{EmittedCode, Target};
use unicorn_engine::{Arch, Arm64CpuModel, Mode, Prot, RegisterARM64, Unicorn};

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
        ImportFn::TernaryF32(f) => {
            let [a, b, c] = [0, 1, 2].map(|i| f32::from_bits(rd(uc, s(i)) as u32));
            uc.reg_write(s(0), u64::from(f(a, b, c).to_bits()))
                .expect("s0");
        }
        ImportFn::TernaryF64(f) => {
            let [a, b, c] = [0, 1, 2].map(|i| f64::from_bits(rd(uc, d(i))));
            uc.reg_write(d(0), f(a, b, c).to_bits()).expect("d0");
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
    run_code_claiming(
        code,
        entry,
        buffers,
        (workgroups, Launch::new(workgroups).calls()),
        abi_version,
        &lengths,
        WorkerScratch::Fresh(0),
    )
}

/// The worker scratch of an emulated run.
#[derive(Clone, Copy)]
pub enum WorkerScratch<'a> {
    /// This many fresh bytes.
    Fresh(u64),
    /// These bytes, written back after the calls (a chain's links share them).
    Kept(&'a std::cell::RefCell<Vec<u8>>),
}

/// [`run_code`], but the dispatch state claims `lengths` (one per buffer, or a different
/// count) as the bindings' byte lengths instead of their real sizes: for testing the kernel's
/// own binding checks and, by claiming more than is mapped, the guard pages. `calls` are the
/// workgroup indices run, of `workgroups` ([`Launch::calls`]).
pub fn run_code_claiming(
    code: &[u8],
    entry: u32,
    buffers: &mut [Vec<u8>],
    (workgroups, calls): (u32, std::ops::Range<u32>),
    abi_version: u32,
    lengths_claimed: &[u64],
    worker_scratch: WorkerScratch<'_>,
) -> RunResult<Vec<u32>> {
    let (worker_scratch, kept) = match worker_scratch {
        WorkerScratch::Kept(bytes) => (bytes.borrow().len() as u64, Some(bytes)),
        WorkerScratch::Fresh(n) => (n, None),
    };
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

    // Worker scratch for worker 0, between unmapped pages like a binding.
    let worker_base = next + PAGE;
    if worker_scratch > 0 {
        uc.mem_map(
            worker_base,
            round_up(worker_scratch),
            Prot::READ | Prot::WRITE,
        )
        .map_err(err("map worker scratch"))?;
    }
    // Kept bytes end at the unmapped page, like a binding's.
    let worker_at = worker_base + round_up(worker_scratch) - worker_scratch;
    if let Some(bytes) = kept.filter(|_| worker_scratch > 0) {
        uc.mem_write(worker_at, &bytes.borrow())
            .map_err(err("write worker scratch"))?;
    }

    // The state page: DispatchState, pointers, lengths, import table.
    let n = buffers.len() as u64;
    let claimed = lengths_claimed.len() as u64;
    let pointers = STATE + u64::from(DispatchState::SIZE).next_multiple_of(64);
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
    // Worker 0 of 1, with the scratch its kernel declares.
    let stride = if worker_scratch == 0 {
        0
    } else {
        round_up(worker_scratch)
    };
    // Fresh scratch starts at its mapping (its stride rounds up to the page end); kept bytes
    // end at the page, their stride exactly their length.
    let (base, stride) = if kept.is_some() {
        (worker_at, worker_scratch)
    } else {
        (worker_base, stride)
    };
    put(
        field(DispatchState::OFFSET_WORKER_SCRATCH),
        &base.to_le_bytes(),
    );
    put(
        field(DispatchState::OFFSET_WORKER_SCRATCH_STRIDE),
        &stride.to_le_bytes(),
    );
    put(
        field(DispatchState::OFFSET_WORKER_COUNT),
        &1u32.to_le_bytes(),
    );
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
    for wg in calls {
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
        uc.reg_write(x(2), 0).map_err(err("x2"))?;
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
    if let Some(bytes) = kept.filter(|_| worker_scratch > 0) {
        uc.mem_read(worker_at, &mut bytes.borrow_mut())
            .map_err(err("read worker scratch"))?;
    }
    Ok(statuses)
}

/// The conformance suite's runner for the AArch64 backend: every call under unicorn through
/// [`run_code_claiming`], so faults, hangs and ABI violations come back as errors.
#[derive(Debug, Default)]
pub struct EmulatorRunner {
    target: A64Target,
    /// Calls run so far, so a suite can prove it ran code.
    pub runs: AtomicUsize,
}

impl KernelRunner for EmulatorRunner {
    fn target(&self) -> &dyn Target {
        &self.target
    }

    fn describe(&self) -> String {
        format!("{} under unicorn", self.target.name())
    }

    fn catches_faults(&self) -> bool {
        true
    }

    fn run(
        &self,
        code: &EmittedCode,
        index: usize,
        buffers: &mut [Vec<u8>],
        launch: &Launch<'_>,
    ) -> RunResult<Vec<u32>> {
        let entry = code.entries.get(index).ok_or("no such kernel")?;
        let (entry, worker_scratch) = (entry.offset, entry.worker_scratch);
        let real: Vec<u64> = buffers.iter().map(|b| b.len() as u64).collect();
        let lengths = launch.claimed_lengths.unwrap_or(&real).to_vec();
        self.runs.fetch_add(1, Ordering::Relaxed);
        run_code_claiming(
            &code.code,
            entry,
            buffers,
            (launch.workgroups, launch.calls()),
            launch.abi_version,
            &lengths,
            match launch.worker_scratch {
                Some(kept) => WorkerScratch::Kept(kept),
                None => WorkerScratch::Fresh(worker_scratch),
            },
        )
    }
}
