//! The timed part of `accy bench`: several callers invoking one program at once, each with its
//! own scratch and buffers, and what their invocations add up to.
//!
//! Each caller warms up (at most `--warmup` invocations, and for no longer than `--seconds`),
//! then waits at a gate until every caller has warmed up, so the timed windows start
//! together. Throughput counts every timed invocation over one window, from the first
//! caller's start to the last caller's end: whatever the callers' scheduling (even far more
//! callers than cores), it never claims more invocations than that window held.

use std::io::{IsTerminal, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use accy_session::{Error, Scratch};

use crate::cmd::{Buffer, Failure};

/// Runs longer than this get a progress line, if stderr is a terminal.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// When each caller stops measuring.
#[derive(Clone, Copy, Debug)]
pub enum Stop {
    /// After this many timed invocations (warm-up: exactly `--warmup` invocations).
    Iterations(u64),
    /// Once this long has passed since the callers started measuring together (warm-up:
    /// also at most this long).
    Deadline(Duration),
}

/// What one caller measured.
#[derive(Debug)]
pub struct Measured {
    /// Each timed invocation's latency in nanoseconds.
    pub latencies: Vec<u64>,
    /// Untimed warm-up invocations done.
    pub warmups: u64,
    /// When its first timed invocation started.
    pub start: Instant,
    /// When its last timed invocation ended.
    pub end: Instant,
}

/// What all callers did together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Totals {
    /// Timed invocations, all callers.
    pub invocations: u64,
    /// Warm-up invocations, all callers.
    pub warmups: u64,
    /// From the first caller's start to the last caller's end.
    pub window: Duration,
    /// `invocations / window`.
    pub per_second: f64,
}

/// The totals of `measured` (at least one caller's).
pub fn totals(measured: &[Measured]) -> Totals {
    let invocations = measured.iter().map(|m| m.latencies.len() as u64).sum();
    let warmups = measured.iter().map(|m| m.warmups).sum();
    let window = match (
        measured.iter().map(|m| m.start).min(),
        measured.iter().map(|m| m.end).max(),
    ) {
        (Some(start), Some(end)) => end.saturating_duration_since(start),
        _ => Duration::ZERO,
    };
    Totals {
        invocations,
        warmups,
        window,
        per_second: invocations as f64 / window.as_secs_f64().max(1e-9),
    }
}

/// Where the callers wait for each other between warm-up and measurement. It opens when all
/// `callers` have arrived, or at once when the run is abandoned (a caller could not start).
#[derive(Debug)]
struct Gate {
    callers: usize,
    state: Mutex<GateState>,
    opened: Condvar,
}

#[derive(Debug)]
struct GateState {
    arrived: usize,
    /// When the gate opened, if it has.
    opened: Option<Instant>,
    abandoned: bool,
}

impl Gate {
    fn new(callers: usize) -> Gate {
        Gate {
            callers,
            state: Mutex::new(GateState {
                arrived: 0,
                opened: None,
                abandoned: false,
            }),
            opened: Condvar::new(),
        }
    }

    /// Waits until the gate opens and returns when it did; `None` if the run was abandoned.
    fn arrive(&self) -> Option<Instant> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.arrived += 1;
        if state.arrived >= self.callers && state.opened.is_none() {
            state.opened = Some(Instant::now());
            self.opened.notify_all();
        }
        loop {
            if let Some(at) = state.opened {
                return (!state.abandoned).then_some(at);
            }
            state = self
                .opened
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Opens the gate for good, telling every caller to stop.
    fn abandon(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.abandoned = true;
        state.opened.get_or_insert_with(Instant::now);
        self.opened.notify_all();
    }
}

/// One caller's buffers: inputs and outputs.
pub type CallerBuffers = (Vec<Buffer>, Vec<Buffer>);

/// One invocation of what is measured, on a caller's scratch and buffers (a session's
/// program, or a prepared model, which brings its own scratch).
pub type Invoke<'a> =
    dyn Fn(&mut Scratch, &[&[u8]], &mut [&mut [u8]]) -> Result<(), Error> + Sync + 'a;

/// Runs one caller per entry of `buffers`, all calling `invoke` at once, and returns what
/// each measured.
pub fn measure(
    invoke: &Invoke<'_>,
    buffers: Vec<CallerBuffers>,
    warmup: u64,
    stop: Stop,
) -> Result<Vec<Measured>, Failure> {
    let callers = buffers.len();
    let gate = Gate::new(callers);
    let done = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(callers);
        for (ins, outs) in buffers {
            let (gate, done, finished) = (&gate, &done, &finished);
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                let r = caller(invoke, ins, outs, warmup, stop, gate, done);
                finished.fetch_add(1, Ordering::Release);
                r
            });
            match spawned {
                Ok(worker) => workers.push(worker),
                Err(e) => {
                    gate.abandon();
                    return Err(Failure::Runtime(format!(
                        "starting caller {} of {callers}: {e}",
                        workers.len() + 1
                    )));
                }
            }
        }
        progress(started, stop, callers, &done, &finished);
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Failure::Runtime("a bench caller panicked".into())))
            })
            .collect()
    })
}

/// One caller: warm up, wait at the gate, measure.
fn caller(
    run: &Invoke<'_>,
    ins: Vec<Buffer>,
    mut outs: Vec<Buffer>,
    warmup: u64,
    stop: Stop,
    gate: &Gate,
    done: &AtomicU64,
) -> Result<Measured, Failure> {
    let mut scratch = Scratch::new();
    let ins: Vec<&[u8]> = ins.iter().map(Buffer::bytes).collect();
    let mut outs: Vec<&mut [u8]> = outs.iter_mut().map(Buffer::bytes_mut).collect();
    let mut invoke = || run(&mut scratch, &ins, &mut outs).map_err(|e| Failure::session("run", &e));
    // Every caller must reach the gate, or the others would wait for it forever.
    let warmed = catch_unwind(AssertUnwindSafe(|| {
        let began = Instant::now();
        let mut warmups = 0;
        while warmups < warmup {
            invoke()?;
            warmups += 1;
            if matches!(stop, Stop::Deadline(d) if began.elapsed() >= d) {
                break;
            }
        }
        Ok(warmups)
    }))
    .unwrap_or_else(|_| Err(Failure::Runtime("a bench caller panicked".into())));
    let Some(opened) = gate.arrive() else {
        return Err(Failure::Runtime("the run was abandoned".into()));
    };
    let warmups = warmed?;
    let mut latencies = Vec::with_capacity(match stop {
        Stop::Iterations(n) => usize::try_from(n).unwrap_or(0).min(1 << 24),
        Stop::Deadline(_) => 1 << 12,
    });
    let start = Instant::now();
    loop {
        let t = Instant::now();
        invoke()?;
        let end = Instant::now();
        latencies.push(super::nanos(end - t));
        done.fetch_add(1, Ordering::Relaxed);
        let more = match stop {
            Stop::Iterations(n) => (latencies.len() as u64) < n,
            Stop::Deadline(d) => end.saturating_duration_since(opened) < d,
        };
        if !more {
            return Ok(Measured {
                latencies,
                warmups,
                start,
                end,
            });
        }
    }
}

/// Waits for the callers. When stderr is a terminal, a progress line appears once the run
/// passes [`PROGRESS_AFTER`], redrawn in place and ended when the run ends; anything else (a
/// log file, a pipe) gets no progress line, so it never fills with redraws.
fn progress(
    started: Instant,
    stop: Stop,
    callers: usize,
    done: &AtomicU64,
    finished: &AtomicUsize,
) {
    let mut stderr = std::io::stderr();
    let terminal = stderr.is_terminal();
    let mut shown = false;
    while finished.load(Ordering::Acquire) < callers {
        std::thread::sleep(Duration::from_millis(50));
        let elapsed = started.elapsed();
        if !terminal || elapsed < PROGRESS_AFTER {
            continue;
        }
        let goal = match stop {
            Stop::Iterations(n) => format!(" of {}", n.saturating_mul(callers as u64)),
            Stop::Deadline(d) => format!(" ({:.0} s planned)", d.as_secs_f64()),
        };
        // Progress is best effort: a failing stderr must not fail the benchmark.
        let _ = write!(
            stderr,
            "\rbench: {:.1} s, {} invocations{goal}   ",
            elapsed.as_secs_f64(),
            done.load(Ordering::Relaxed)
        );
        let _ = stderr.flush();
        shown = true;
    }
    if shown {
        let _ = writeln!(stderr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(base: Instant, from_ms: u64, to_ms: u64, count: usize) -> Measured {
        Measured {
            latencies: vec![1; count],
            warmups: 2,
            start: base + Duration::from_millis(from_ms),
            end: base + Duration::from_millis(to_ms),
        }
    }

    #[test]
    fn throughput_counts_every_invocation_over_one_window() {
        let base = Instant::now();
        // Two callers one after the other, 100 invocations each: 200 in 2 s is 100/s, not
        // the 200/s that adding each caller's own rate would claim.
        let t = totals(&[
            measured(base, 0, 1000, 100),
            measured(base, 1000, 2000, 100),
        ]);
        assert_eq!(t.invocations, 200);
        assert_eq!(t.warmups, 4);
        assert_eq!(t.window, Duration::from_secs(2));
        assert!((t.per_second - 100.0).abs() < 1e-9, "{t:?}");
        // Overlapping windows: 300 over 1.5 s.
        let t = totals(&[measured(base, 500, 1500, 100), measured(base, 0, 1000, 200)]);
        assert_eq!(t.window, Duration::from_millis(1500));
        assert!((t.per_second - 200.0).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn an_abandoned_gate_releases_every_caller() {
        let gate = Gate::new(3);
        std::thread::scope(|s| {
            let waiting = s.spawn(|| gate.arrive());
            gate.abandon();
            assert_eq!(waiting.join().unwrap(), None);
        });
        let gate = Gate::new(2);
        std::thread::scope(|s| {
            let first = s.spawn(|| gate.arrive());
            let opened = gate.arrive();
            assert!(opened.is_some());
            assert_eq!(first.join().unwrap(), opened, "both see the same opening");
        });
    }
}
