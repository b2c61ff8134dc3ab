//! Running the workgroups of one dispatch on several threads: the [`Executor`] trait, and
//! [`ThreadPool`], a fork-join pool that tolerates stolen cores.
//!
//! A dispatch hands its executor `tasks` tiles and a function of `(worker, tile)`; the executor
//! calls it once for every tile, never with the same worker index on two threads at once, and
//! returns when all calls have returned. The calling thread always works too (as worker 0), so
//! a pool of size 1 starts no thread and a dispatch of one tile never leaves the caller.
//!
//! How [`ThreadPool`] avoids the collapse spinning pools show on oversubscribed machines
//! (llama.cpp #13079, onnxruntime #6725):
//! - tiles are claimed one at a time from one atomic counter, so a descheduled thread holds up
//!   at most the one tile it claimed; the others take the rest;
//! - an idle worker spins for at most [`SPIN`] (tens of microseconds, enough to catch the next
//!   dispatch of the same invocation), then sleeps on a condition variable; nothing yields in a
//!   loop and nothing spins without bound;
//! - the caller, done with the tiles it could claim, waits for stragglers the same way: a
//!   bounded spin, then a sleep until the last tile's thread wakes it.
//!
//! One job runs at a time. A caller that finds the pool busy with another caller's job runs
//! its own tiles alone instead of waiting, so concurrent callers never queue behind each
//! other (each has its own scratch, so worker 0 in two jobs is never the same memory).
//!
//! Nothing here is process-global: a pool belongs to whoever made it (a `Session`, or an
//! embedder sharing one through an `Arc`), and dropping it stops and joins its threads.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an idle thread spins before it sleeps. Long enough to catch the next dispatch of
/// the same invocation without a wake-up, short enough that a thread spinning on a core
/// another process needs costs that process little.
pub const SPIN: Duration = Duration::from_micros(30);

/// Runs the tiles of one dispatch. Implemented by [`ThreadPool`] and [`Inline`]; an embedder
/// may implement it over its own scheduler and hand it to a session.
///
/// # Contract
/// [`Executor::run`] calls `task(worker, tile)` exactly once for every `tile` in `0..tasks`,
/// with `worker < self.workers()`, never with the same `worker` on two threads at once, and
/// returns only when every call has returned. It may call from any threads, in any order,
/// including all on the calling thread.
pub trait Executor: Send + Sync + std::fmt::Debug {
    /// The number of worker indices `run` may pass: the most threads that work on one
    /// dispatch at once (the caller included).
    fn workers(&self) -> usize;

    /// Runs `task` for every tile (see the trait's contract).
    fn run(&self, tasks: u32, task: &(dyn Fn(usize, u32) + Sync));
}

/// The executor that runs every tile on the calling thread, in order: what a pool of size 1
/// does, without a pool.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inline;

impl Executor for Inline {
    fn workers(&self) -> usize {
        1
    }

    fn run(&self, tasks: u32, task: &(dyn Fn(usize, u32) + Sync)) {
        for tile in 0..tasks {
            task(0, tile);
        }
    }
}

/// The job being run: what the publishing caller's stack holds for its duration.
struct Job<'a> {
    task: &'a (dyn Fn(usize, u32) + Sync),
    tasks: u32,
}

/// State shared by the caller and the worker threads.
struct Shared {
    /// The job's epoch (high 32 bits) and how many of its tiles are still unclaimed (low 32
    /// bits). A claim is a compare-and-swap that keeps the epoch and takes one tile, so a
    /// thread can only ever claim tiles of the epoch it saw, and never once they are all
    /// claimed; nothing else about a job is read before a claim succeeds.
    claim: AtomicU64,
    /// The current job, valid while a tile of its epoch is unfinished.
    job: AtomicPtr<Job<'static>>,
    /// Tiles of the current job not finished yet.
    pending: AtomicU32,
    /// Whether a task of the current job panicked.
    panicked: AtomicBool,
    /// Threads sleeping (or about to) on `wake`.
    sleepers: AtomicUsize,
    /// Whether the publishing caller sleeps (or is about to) on `finished`.
    caller_sleeps: AtomicBool,
    /// Set once, when the pool is dropped.
    shutdown: AtomicBool,
    /// Workers that have started running [`Shared::worker_loop`].
    started: AtomicUsize,
    /// Held by the one caller whose job is published.
    busy: Mutex<()>,
    /// What sleeping workers and callers wait on (the data is unused: the atomics carry it).
    lock: Mutex<()>,
    wake: Condvar,
    finished: Condvar,
    /// Signalled by each worker as it starts.
    ready: Condvar,
}

impl Shared {
    fn epoch(&self) -> u32 {
        (self.claim.load(Ordering::Acquire) >> 32) as u32
    }

    /// Claims and runs tiles of the job of `epoch` as `worker` until none is left unclaimed.
    fn work(&self, epoch: u32, worker: usize) {
        loop {
            let current = self.claim.load(Ordering::Acquire);
            let unclaimed = current as u32;
            if (current >> 32) as u32 != epoch || unclaimed == 0 {
                return;
            }
            let job = self.job.load(Ordering::Acquire);
            if self
                .claim
                .compare_exchange_weak(current, current - 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            // SAFETY: the claim succeeded on a word of `epoch` with a tile left, so that job
            // has an unfinished tile (this one) and its publisher is still waiting: the job
            // it published for `epoch` (stored before the epoch, read after seeing it, and
            // not replaced before the epoch completes) is alive until this tile is done.
            let job = unsafe { &*job };
            let tile = job.tasks - unclaimed;
            if catch_unwind(AssertUnwindSafe(|| (job.task)(worker, tile))).is_err() {
                self.panicked.store(true, Ordering::Relaxed);
            }
            // SeqCst pairs with the caller's `caller_sleeps` store: either it sees the count
            // reach 0 before sleeping, or this sees it asleep and wakes it.
            if self.pending.fetch_sub(1, Ordering::SeqCst) == 1
                && self.caller_sleeps.load(Ordering::SeqCst)
            {
                drop(self.lock.lock().unwrap_or_else(PoisonError::into_inner));
                self.finished.notify_all();
            }
        }
    }

    /// A worker thread's life: wait for a new epoch (spin, then sleep), work, repeat.
    fn worker_loop(&self, worker: usize) {
        crate::fpenv::set_default();
        {
            let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.started.fetch_add(1, Ordering::SeqCst);
            self.ready.notify_all();
        }
        let mut seen = self.epoch();
        loop {
            let spin_until = Instant::now() + SPIN;
            let mut epoch = self.epoch();
            while epoch == seen && !self.shutdown.load(Ordering::Acquire) {
                if Instant::now() >= spin_until {
                    self.sleepers.fetch_add(1, Ordering::SeqCst);
                    let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
                    while (self.claim.load(Ordering::SeqCst) >> 32) as u32 == seen
                        && !self.shutdown.load(Ordering::SeqCst)
                    {
                        guard = self
                            .wake
                            .wait(guard)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    drop(guard);
                    self.sleepers.fetch_sub(1, Ordering::SeqCst);
                }
                std::hint::spin_loop();
                epoch = self.epoch();
            }
            if self.shutdown.load(Ordering::Acquire) {
                return;
            }
            seen = epoch;
            self.work(epoch, worker);
        }
    }
}

/// A fork-join pool of `size - 1` threads plus the calling thread (see the module
/// documentation). `Send + Sync`: share it with an `Arc` between sessions that should share
/// threads.
pub struct ThreadPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    size: usize,
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool")
            .field("size", &self.size)
            .finish()
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ThreadPool>();
};

/// Why a pool could not be made.
#[derive(Debug, thiserror::Error)]
#[error("could not start thread {index} of a pool of {size}: {source}")]
pub struct PoolError {
    /// The pool size asked for.
    pub size: usize,
    /// The thread that failed to start.
    pub index: usize,
    /// The operating system's error.
    #[source]
    pub source: std::io::Error,
}

impl ThreadPool {
    /// A pool in which `size` threads (the caller and `size - 1` started here; at least 1)
    /// work on a dispatch. Size 1 starts no thread. Returns once every started thread runs.
    pub fn new(size: usize) -> Result<ThreadPool, PoolError> {
        let size = size.max(1);
        let shared = Arc::new(Shared {
            claim: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            pending: AtomicU32::new(0),
            panicked: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            caller_sleeps: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            started: AtomicUsize::new(0),
            busy: Mutex::new(()),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            finished: Condvar::new(),
            ready: Condvar::new(),
        });
        let mut pool = ThreadPool {
            shared,
            threads: Vec::with_capacity(size - 1),
            size,
        };
        for index in 1..size {
            let shared = Arc::clone(&pool.shared);
            let thread = std::thread::Builder::new()
                .name(format!("accy-worker-{index}"))
                .spawn(move || shared.worker_loop(index))
                .map_err(|source| PoolError {
                    size,
                    index,
                    source,
                })?;
            pool.threads.push(thread);
        }
        // Wait until every worker runs: a thread's start-up (the standard library's
        // per-thread setup allocates) then lies inside `new`, never inside a later dispatch,
        // however late a loaded host schedules the new threads.
        let mut guard = pool
            .shared
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while pool.shared.started.load(Ordering::SeqCst) < size - 1 {
            guard = pool
                .shared
                .ready
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(guard);
        Ok(pool)
    }

    /// A pool with one thread per CPU this process may use
    /// (`std::thread::available_parallelism`).
    pub fn with_available_parallelism() -> Result<ThreadPool, PoolError> {
        ThreadPool::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// Threads started by the pool (its size minus the caller).
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Publishes `job` as a new epoch, works on it as worker 0, and waits for its stragglers.
    fn run_published(&self, job: &Job<'_>) {
        let shared = &*self.shared;
        shared.pending.store(job.tasks, Ordering::Relaxed);
        shared.panicked.store(false, Ordering::Relaxed);
        // The pointer's lifetime is erased; `work` dereferences it only while this call waits.
        shared
            .job
            .store((job as *const Job<'_>).cast_mut().cast(), Ordering::Relaxed);
        let epoch = shared.epoch().wrapping_add(1);
        // SeqCst pairs with the workers' `sleepers` increment: either they see the new epoch
        // before sleeping, or this sees them and wakes them.
        shared.claim.store(
            (u64::from(epoch) << 32) | u64::from(job.tasks),
            Ordering::SeqCst,
        );
        if shared.sleepers.load(Ordering::SeqCst) > 0 {
            drop(shared.lock.lock().unwrap_or_else(PoisonError::into_inner));
            shared.wake.notify_all();
        }
        shared.work(epoch, 0);
        let spin_until = Instant::now() + SPIN;
        while shared.pending.load(Ordering::Acquire) > 0 {
            if Instant::now() >= spin_until {
                shared.caller_sleeps.store(true, Ordering::SeqCst);
                let mut guard = shared.lock.lock().unwrap_or_else(PoisonError::into_inner);
                while shared.pending.load(Ordering::SeqCst) > 0 {
                    guard = shared
                        .finished
                        .wait(guard)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                drop(guard);
                shared.caller_sleeps.store(false, Ordering::SeqCst);
                break;
            }
            std::hint::spin_loop();
        }
        // Every tile of this epoch is finished; no thread dereferences the job from here on
        // (a late claim of this epoch finds no tile left, and reads nothing else).
        if shared.panicked.load(Ordering::Relaxed) {
            panic!("a task of a thread-pool job panicked");
        }
    }
}

impl Executor for ThreadPool {
    fn workers(&self) -> usize {
        self.size
    }

    fn run(&self, tasks: u32, task: &(dyn Fn(usize, u32) + Sync)) {
        if tasks <= 1 || self.threads.is_empty() {
            return Inline.run(tasks, task);
        }
        // Another caller's job is running: run ours alone rather than queue behind it.
        let Ok(_busy) = self.shared.busy.try_lock() else {
            return Inline.run(tasks, task);
        };
        self.run_published(&Job { task, tasks });
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        drop(
            self.shared
                .lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.shared.wake.notify_all();
        for thread in self.threads.drain(..) {
            // A worker catches task panics, so joining only fails if the runtime itself
            // failed; nothing useful can be done about that in a destructor.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests;
