use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use super::*;

/// Runs `tasks` tiles on `executor`, checking that every tile runs once, that worker indices
/// are in range and never used by two threads at once; returns how many distinct threads ran
/// tiles.
fn run_checked(executor: &dyn Executor, tasks: u32) -> usize {
    let runs: Vec<AtomicU32> = (0..tasks).map(|_| AtomicU32::new(0)).collect();
    let busy: Vec<AtomicU32> = (0..executor.workers()).map(|_| AtomicU32::new(0)).collect();
    let threads = Mutex::new(std::collections::HashSet::new());
    executor.run(tasks, &|worker, tile| {
        assert!(worker < executor.workers(), "worker {worker}");
        assert_eq!(
            busy[worker].fetch_add(1, Ordering::SeqCst),
            0,
            "worker {worker} on two threads"
        );
        runs[tile as usize].fetch_add(1, Ordering::SeqCst);
        threads.lock().unwrap().insert(std::thread::current().id());
        std::hint::black_box((0..200).sum::<u64>());
        busy[worker].fetch_sub(1, Ordering::SeqCst);
    });
    for (tile, r) in runs.iter().enumerate() {
        assert_eq!(r.load(Ordering::SeqCst), 1, "tile {tile}");
    }
    let n = threads.lock().unwrap().len();
    n
}

#[test]
fn a_pool_of_one_starts_no_thread_and_runs_inline() {
    let pool = ThreadPool::new(1).unwrap();
    assert_eq!(pool.threads(), 0);
    assert_eq!(pool.workers(), 1);
    assert_eq!(run_checked(&pool, 50), 1);
    assert_eq!(ThreadPool::new(0).unwrap().workers(), 1);
    assert_eq!(run_checked(&Inline, 7), 1);
}

#[test]
fn every_tile_runs_once_for_every_size_and_count() {
    for size in [2, 3, 8] {
        let pool = ThreadPool::new(size).unwrap();
        assert_eq!(pool.threads(), size - 1);
        for tasks in [0, 1, 2, 3, 7, 64, 1000] {
            run_checked(&pool, tasks);
        }
        // Back to back, as the dispatches of one invocation come: workers still spinning
        // pick up the next job.
        for _ in 0..200 {
            run_checked(&pool, 16);
        }
    }
}

#[test]
fn workers_sleep_when_idle_and_wake_for_the_next_job() {
    let pool = ThreadPool::new(3).unwrap();
    run_checked(&pool, 64);
    // Both threads go to sleep once their bounded spin ends (on a loaded machine a thread may
    // take a while to be scheduled at all, hence the generous deadline).
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.shared.sleepers.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        std::thread::sleep(SPIN);
    }
    assert_eq!(pool.shared.sleepers.load(Ordering::SeqCst), 2);
    // A job whose tiles block until every pool thread has one proves the sleepers woke.
    let barrier = Barrier::new(3);
    let seen = AtomicUsize::new(0);
    pool.run(3, &|_, _| {
        seen.fetch_add(1, Ordering::SeqCst);
        barrier.wait();
    });
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}

#[test]
fn concurrent_callers_of_one_pool_each_get_every_tile() {
    let pool = Arc::new(ThreadPool::new(4).unwrap());
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                for tasks in 0..300u32 {
                    run_checked(&*pool, tasks % 37);
                }
            })
        })
        .collect();
    for c in callers {
        c.join().unwrap();
    }
}

#[test]
fn a_panicking_task_is_reported_to_the_caller_and_the_pool_survives() {
    let pool = ThreadPool::new(3).unwrap();
    let result = catch_unwind(AssertUnwindSafe(|| {
        pool.run(32, &|_, tile| {
            if tile == 17 {
                panic!("tile 17");
            }
        })
    }));
    assert!(result.is_err());
    assert!(run_checked(&pool, 100) >= 1);
}

#[test]
fn dropping_a_pool_joins_its_threads_even_while_they_sleep() {
    for _ in 0..20 {
        let pool = ThreadPool::new(4).unwrap();
        run_checked(&pool, 10);
        drop(pool);
    }
    let pool = ThreadPool::new(2).unwrap();
    std::thread::sleep(SPIN * 10);
    drop(pool);
}
