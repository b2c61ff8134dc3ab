//! Measurements: run a function's compiled code over many inputs, in parallel, and keep the
//! largest distance from the reference with the input where it occurred.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use accy_ir::DType;
use accy_session::Scratch;

use crate::functions::Function;
use crate::mpfr::Mpfr;
use crate::runner::Runner;
use crate::ulp::{ulps32, ulps64};

/// The result of one measurement.
#[derive(Clone, Debug)]
pub struct Report {
    /// The function's name.
    pub name: &'static str,
    /// `f32` or `f64`.
    pub dtype: DType,
    /// Inputs evaluated.
    pub count: u64,
    /// Largest distance found, in ULPs (`u64::MAX`: a NaN where the reference is not, or the
    /// reverse).
    pub max_ulps: u64,
    /// Inputs with a nonzero distance.
    pub inexact: u64,
    /// The arguments of the largest distance, the result and the reference there.
    pub worst: Point,
    /// Wall time.
    pub time: Duration,
    /// Where it ran (the code generator's name).
    pub target: &'static str,
    /// Whether every input of the type was covered.
    pub exhaustive: bool,
    /// For a function whose bound holds only for `|x| ≤ within`: the largest distance beyond
    /// that (where a NaN result counts as `u64::MAX`), with its arguments, result and
    /// reference, and how many inputs lay there.
    pub beyond: Option<(u64, Point, u64)>,
}

/// Where a distance was seen: the two arguments (the second is 0 for a one-operand
/// function), the result and the reference.
pub type Point = (f64, f64, f64, f64);

/// Elements per invocation.
const CHUNK: usize = 1 << 16;

/// The largest distance seen so far and where, inside the bound's range and beyond it.
#[derive(Default)]
struct Worst {
    max: u64,
    at: (f64, f64, f64, f64),
    inexact: u64,
    beyond_max: u64,
    beyond_at: (f64, f64, f64, f64),
    beyond_count: u64,
}

impl Worst {
    /// Records distance `ulps` at `at` (arguments, result, reference); `inside` when the
    /// first argument is within the range the bound holds in.
    fn merge(&mut self, ulps: u64, at: (f64, f64, f64, f64), inside: bool) {
        if !inside {
            // A NaN where the reduction gives up is the documented behaviour there: counted
            // apart (`beyond_count` counts all inputs beyond), not as an error.
            if at.2.is_nan() && !at.3.is_nan() {
                return;
            }
            if ulps > self.beyond_max {
                self.beyond_max = ulps;
                self.beyond_at = at;
            }
            return;
        }
        if ulps > 0 {
            self.inexact += 1;
        }
        if ulps > self.max {
            self.max = ulps;
            self.at = at;
        }
    }

    fn add(&mut self, w: Worst) {
        self.inexact += w.inexact;
        self.beyond_count += w.beyond_count;
        if w.max > self.max {
            self.max = w.max;
            self.at = w.at;
        }
        if w.beyond_max > self.beyond_max {
            self.beyond_max = w.beyond_max;
            self.beyond_at = w.beyond_at;
        }
    }
}

/// Runs `body(worker)` on `threads` threads; each returns its `Worst`, merged here.
fn parallel(
    threads: usize,
    body: impl Fn() -> Result<Worst, String> + Sync,
) -> Result<Worst, String> {
    let results: Vec<Result<Worst, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(&body)).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a worker panicked".into())))
            .collect()
    });
    let mut total = Worst::default();
    for r in results {
        total.add(r?);
    }
    Ok(total)
}

/// Every f32 input of the unary function `f` (`2^32` of them, in chunks handed out by an
/// atomic counter to `threads` workers), or the first `limit` of a stride through them when
/// `limit` is smaller.
pub fn exhaustive32(f: &Function, threads: usize, limit: u64) -> Result<Report, String> {
    let start = Instant::now();
    let runner = Runner::new(f, DType::F32, CHUNK, false)?;
    let total: u64 = 1 << 32;
    let count = limit.min(total);
    // A stride through the bit patterns that visits `count` of them, spread over all.
    let stride = (total / count.max(1)).max(1);
    let chunks = count.div_ceil(CHUNK as u64);
    let next = AtomicU64::new(0);
    let worst = parallel(threads, || {
        let mut scratch = Scratch::new();
        let mut a = vec![0f32; CHUNK];
        let mut out = vec![0f32; CHUNK];
        let mut w = Worst::default();
        loop {
            let c = next.fetch_add(1, Ordering::Relaxed);
            if c >= chunks {
                return Ok(w);
            }
            for (i, v) in a.iter_mut().enumerate() {
                let k = (c * CHUNK as u64 + i as u64).min(count - 1);
                *v = f32::from_bits((k * stride) as u32);
            }
            runner.run(&mut scratch, &a, &a, &mut out)?;
            let live = (count - c * CHUNK as u64).min(CHUNK as u64) as usize;
            for (&x, &y) in a[..live].iter().zip(&out) {
                let inside = f64::from(x.abs()) <= f.within || x.is_nan();
                w.beyond_count += u64::from(!inside);
                let want = (f.reference32)(x, 0.0);
                let d = ulps32(y, want);
                if d > 0 {
                    w.merge(
                        d,
                        (f64::from(x), 0.0, f64::from(y), f64::from(want)),
                        inside,
                    );
                }
            }
        }
    })?;
    Ok(Report {
        name: f.name,
        dtype: DType::F32,
        count,
        max_ulps: worst.max,
        inexact: worst.inexact,
        worst: worst.at,
        time: start.elapsed(),
        target: runner.target(),
        exhaustive: count == total,
        beyond: f.within.is_finite().then_some((
            worst.beyond_max,
            worst.beyond_at,
            worst.beyond_count,
        )),
    })
}

/// A SplitMix64 step: the random bits samples are drawn from.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `count` samples of `f` in `dtype` drawn from `f.sample64` (rounded to f32 for f32), seeded
/// by `seed`, against the f32 reference or MPFR.
pub fn sampled(
    f: &Function,
    dtype: DType,
    count: u64,
    seed: u64,
    threads: usize,
    mpfr: Option<&Mpfr>,
) -> Result<Report, String> {
    let start = Instant::now();
    if dtype == DType::F64 && mpfr.is_none() {
        return Err("f64 references need MPFR".into());
    }
    let chunks = count.div_ceil(CHUNK as u64);
    let next = AtomicU64::new(0);
    let target = Mutex::new("");
    let worst = parallel(threads, || {
        let runner = Runner::new(f, dtype, CHUNK, false)?;
        if let Ok(mut t) = target.lock() {
            *t = runner.target();
        }
        let mut scratch = Scratch::new();
        let mut w = Worst::default();
        let (mut a, mut b) = (vec![0f64; CHUNK], vec![0f64; CHUNK]);
        let mut out = vec![0f64; CHUNK];
        let (mut a32, mut b32) = (vec![0f32; CHUNK], vec![0f32; CHUNK]);
        let mut out32 = vec![0f32; CHUNK];
        loop {
            let c = next.fetch_add(1, Ordering::Relaxed);
            if c >= chunks {
                return Ok(w);
            }
            let mut state = seed ^ c.wrapping_mul(0x2545_f491_4f6c_dd1d);
            for (x, y) in a.iter_mut().zip(b.iter_mut()) {
                let (r1, r2) = (splitmix(&mut state), splitmix(&mut state));
                (*x, *y) = (f.sample64)(r1, r2);
            }
            let live = (count - c * CHUNK as u64).min(CHUNK as u64) as usize;
            if dtype == DType::F32 {
                for i in 0..CHUNK {
                    (a32[i], b32[i]) = (a[i] as f32, b[i] as f32);
                }
                runner.run(&mut scratch, &a32, &b32, &mut out32)?;
                for i in 0..live {
                    let inside = f64::from(a32[i].abs()) <= f.within || a32[i].is_nan();
                    w.beyond_count += u64::from(!inside);
                    let want = (f.reference32)(a32[i], b32[i]);
                    let d = ulps32(out32[i], want);
                    if d > 0 {
                        let at = (f64::from(a32[i]), f64::from(b32[i]));
                        w.merge(
                            d,
                            (at.0, at.1, f64::from(out32[i]), f64::from(want)),
                            inside,
                        );
                    }
                }
            } else if let Some(m) = mpfr {
                runner.run(&mut scratch, &a, &b, &mut out)?;
                for i in 0..live {
                    let inside = a[i].abs() <= f.within || a[i].is_nan();
                    w.beyond_count += u64::from(!inside);
                    let want = f.reference64(m, a[i], b[i]);
                    let d = ulps64(out[i], want);
                    if d > 0 {
                        w.merge(d, (a[i], b[i], out[i], want), inside);
                    }
                }
            }
        }
    })?;
    Ok(Report {
        name: f.name,
        dtype,
        count,
        max_ulps: worst.max,
        inexact: worst.inexact,
        worst: worst.at,
        time: start.elapsed(),
        target: target.lock().map(|t| *t).unwrap_or(""),
        exhaustive: false,
        beyond: f.within.is_finite().then_some((
            worst.beyond_max,
            worst.beyond_at,
            worst.beyond_count,
        )),
    })
}
