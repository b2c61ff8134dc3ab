//! What the table benchmarks (`parallel`, and those built on it) share: timing by medians,
//! pinning the calling thread to one CPU, a busy neighbour process pinned to another, and
//! compiling and running programs through a session.
//!
//! Absolute times on a shared machine say little; every table reports ratios to something
//! measured in the same run.

#![allow(
    dead_code,
    clippy::print_stdout,
    reason = "each bench binary uses a part of this module, and prints its table"
)]

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use accy_ir::{DType, Program, Tensor};
use accy_session::{Handle, Scratch, Session, Weights};

/// The environment variable that turns this binary into the busy neighbour: its value is the
/// CPU to spin on.
const BUSY_ENV: &str = "ACCY_BENCH_BUSY_CPU";

/// Call first in `main`: if this process was started as a busy neighbour, spin forever on
/// the CPU named in the environment and never return.
pub fn maybe_be_busy_neighbour() {
    let Ok(cpu) = std::env::var(BUSY_ENV) else {
        return;
    };
    if let Ok(cpu) = cpu.parse() {
        pin_to(&[cpu]);
    }
    let mut x = 0u64;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// A process spinning on `cpu` until dropped.
pub struct BusyNeighbour(Child);

impl BusyNeighbour {
    /// Starts one (this very binary, in busy mode).
    pub fn start(cpu: usize) -> BusyNeighbour {
        let exe = std::env::current_exe().expect("own path");
        let child = Command::new(exe)
            .env(BUSY_ENV, cpu.to_string())
            .spawn()
            .expect("start the busy neighbour");
        // Let it get going.
        std::thread::sleep(Duration::from_millis(50));
        BusyNeighbour(child)
    }
}

impl Drop for BusyNeighbour {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Pins the calling thread to `cpus` (threads it starts afterwards inherit the mask).
pub fn pin_to(cpus: &[usize]) {
    // SAFETY: `set` is a plain bit set initialised by CPU_ZERO; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Every CPU of the machine (whatever the current mask).
pub fn all_cpus() -> Vec<usize> {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    (0..n).collect()
}

/// How long one timed sample should last at least: a sample of a short call times a batch of
/// calls, so that reading the clock (a system call for the thread CPU clock, about as long as
/// a 16×64×64 product) adds nothing to the time of one call.
const SAMPLE: Duration = Duration::from_micros(50);

/// Calls per timed sample for `f`: enough to last [`SAMPLE`], from one call timed (after one
/// untimed call) — at least 1, at most 100 000.
fn calls_per_sample(f: &mut impl FnMut()) -> u32 {
    f();
    let t = Instant::now();
    f();
    let one = t.elapsed().as_nanos().max(1);
    (SAMPLE.as_nanos() / one).clamp(1, 100_000) as u32
}

/// The median over samples of `f`'s time per call by `clock` (elapsed time since a reading),
/// each sample a batch of calls ([`calls_per_sample`]), over enough samples to fill about
/// `budget` (at least 3, at most 1000).
fn median_by(budget: Duration, mut f: impl FnMut(), clock: impl Fn() -> Duration) -> Duration {
    let calls = calls_per_sample(&mut f);
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 3 || (start.elapsed() < budget && times.len() < 1000) {
        let t = clock();
        for _ in 0..calls {
            f();
        }
        times.push(clock().saturating_sub(t) / calls);
    }
    times.sort();
    times[times.len() / 2]
}

/// The median of `f`'s wall time per call over enough calls to fill about `budget` (see
/// [`median_by`]).
pub fn median(budget: Duration, f: impl FnMut()) -> Duration {
    let origin = Instant::now();
    median_by(budget, f, || origin.elapsed())
}

/// The CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant Linux supports.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// Like [`median`], but timing the calling thread's CPU time instead of the wall clock: on a
/// shared host, time the thread spends descheduled does not count. Only for work that runs
/// entirely on the calling thread.
pub fn median_cpu(budget: Duration, f: impl FnMut()) -> Duration {
    median_by(budget, f, thread_cpu_time)
}

/// Seeded values for `program`'s inputs (floats in [-2, 2)).
pub fn inputs(program: &Program) -> Vec<Vec<u8>> {
    seeded(program.inputs().map(|(_, p)| p))
}

/// Seeded values for each parameter in `params` (floats in [-2, 2)).
fn seeded<'p>(params: impl Iterator<Item = &'p accy_ir::Param>) -> Vec<Vec<u8>> {
    params
        .enumerate()
        .map(|(i, p)| {
            let n = p.ty.element_count().unwrap_or(0) as usize;
            let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ i as u64;
            let mut next = || {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
            };
            match p.ty.dtype {
                DType::F32 => Tensor::f32s(&p.ty.dims, (0..n).map(|_| next()).collect())
                    .data()
                    .to_le_bytes(),
                _ => vec![0; n * p.ty.dtype.size_bytes() as usize],
            }
        })
        .collect()
}

/// One cache line: the unit [`Aligned`] allocates in.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Bytes that start on a 64-byte boundary, as a host's tensor allocator gives them (ONNX
/// Runtime's aligns to 64), or a set number of bytes past one (`malloc` gives 16 bytes past a
/// page for large blocks), so a table can say which it measured.
pub struct Aligned {
    lines: Vec<Line>,
    offset: usize,
    len: usize,
}

impl Aligned {
    /// A copy of `bytes`, starting `offset` bytes (below 64) past a line.
    pub fn new(bytes: &[u8], offset: usize) -> Aligned {
        let offset = offset % 64;
        let mut aligned = Aligned {
            lines: vec![Line([0; 64]); (offset + bytes.len()).div_ceil(64)],
            offset,
            len: bytes.len(),
        };
        aligned.bytes_mut().copy_from_slice(bytes);
        aligned
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `lines` holds `64 · lines.len() >= offset + len` initialised bytes (a `Line`
        // is `repr(C)` around a byte array, without padding), borrowed for as long as `self`.
        unsafe {
            std::slice::from_raw_parts(self.lines.as_ptr().cast::<u8>().add(self.offset), self.len)
        }
    }

    /// The bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, borrowed mutably for as long as `self` is.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.lines.as_mut_ptr().cast::<u8>().add(self.offset),
                self.len,
            )
        }
    }
}

/// A program compiled into a session with buffers for one invocation.
pub struct Prepared {
    pub handle: Handle,
    pub inputs: Vec<Aligned>,
    pub outputs: Vec<Aligned>,
    pub scratch: Scratch,
    /// The first compile with the weights: compiling plus packing them (the setup commands).
    pub first_compile: Duration,
    /// A second compile with the same weights, whose packed forms are then shared: compiling
    /// alone.
    pub compile: Duration,
}

impl Prepared {
    pub fn new(session: &Session, program: &Program) -> Prepared {
        Prepared::with_offset(session, program, 0)
    }

    /// As [`Prepared::new`], with every buffer `offset` bytes (below 64) past a cache line.
    pub fn with_offset(session: &Session, program: &Program, offset: usize) -> Prepared {
        let weights: Vec<&accy_ir::Param> = program.weights().map(|(_, p)| p).collect();
        let values = seeded(weights.iter().copied());
        let named: Vec<(&str, &[u8])> = weights
            .iter()
            .zip(&values)
            .map(|(p, v)| (p.name.as_str(), v.as_slice()))
            .collect();
        let weights = Weights::new(&named).expect("weights");
        let wire = accy_wire::encode(program);
        let start = Instant::now();
        let first = session
            .compile_with_weights(&wire, &weights)
            .expect("compile");
        let first_compile = start.elapsed();
        let start = Instant::now();
        let handle = session
            .compile_with_weights(&wire, &weights)
            .expect("compile");
        let compile = start.elapsed();
        session.release(first).expect("release");
        let outputs = session
            .outputs(handle)
            .expect("outputs")
            .iter()
            .map(|d| Aligned::new(&vec![0u8; d.byte_size], offset))
            .collect();
        Prepared {
            handle,
            inputs: inputs(program)
                .iter()
                .map(|b| Aligned::new(b, offset))
                .collect(),
            outputs,
            scratch: Scratch::new(),
            first_compile,
            compile,
        }
    }

    pub fn invoke(&mut self, session: &Session) {
        let inputs: Vec<&[u8]> = self.inputs.iter().map(Aligned::bytes).collect();
        let mut outputs: Vec<&mut [u8]> = self.outputs.iter_mut().map(Aligned::bytes_mut).collect();
        session
            .invoke(self.handle, &mut self.scratch, &inputs, &mut outputs)
            .expect("invoke");
    }
}

/// `d` in the unit that reads best.
pub fn human(d: Duration) -> String {
    let ns = d.as_secs_f64() * 1e9;
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}
