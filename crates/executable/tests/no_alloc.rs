//! Proves that binding and running allocate nothing once a `Scratch` has served a plan: a
//! counting global allocator (this test binary's own) counts every allocation the test
//! thread makes while counting is switched on.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use accy_artifact::{Artifact, Command, Region, Slot, SlotRole};
use accy_executable::{prepare_borrowed, run, Inline, Scratch};
use accy_ir::DType;
use common::*;

/// Counts allocations made by threads that switched [`COUNTING`] on, then defers to the
/// system allocator.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread's allocations are counted (other test threads are not).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the same arguments, which upholds the
// `GlobalAlloc` contract; counting touches only an atomic and a const thread-local without
// a destructor, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations the current thread makes while running `f`.
fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// input (256 bytes) -> scratch, fill output, then scratch -> output: by the hand-written
/// copy kernel in 4 workgroups on x86-64, by a copy command elsewhere.
fn plan() -> Artifact {
    let mut a = artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, 256);
    let out = slot(&mut a, SlotRole::Output(0), DType::U8, 256);
    let tmp = a.plan.add(Slot::scratch(256, 64)).unwrap();
    a.launch.push(Command::Copy {
        src: whole(input, 256),
        dst: whole(tmp, 256),
    });
    a.launch.push(Command::Fill {
        dst: whole(out, 256),
        pattern: 0xdead_beef,
        width: 4,
    });
    if cfg!(target_arch = "x86_64") {
        let k = add_kernel(&mut a, "copy_chunk", &COPY_CHUNK);
        dispatch(
            &mut a,
            k,
            &[
                (whole(tmp, 256), accy_artifact::Access::Read),
                (Region::new(out, 0, 256), accy_artifact::Access::Write),
            ],
            &[64],
            4,
        );
    } else {
        a.launch.push(Command::Copy {
            src: whole(tmp, 256),
            dst: whole(out, 256),
        });
    }
    a
}

#[test]
fn runs_after_the_first_allocate_nothing() {
    let loaded = load(&plan(), &host()).unwrap();
    let input: Vec<u8> = (0..=255).collect();
    let mut output = vec![0u8; 256];
    let mut scratch = Scratch::new();

    // The first run grows the scratch: the counter sees it (so it does count).
    let first = allocations_in(|| {
        loaded
            .invoke(&[&input], &mut [&mut output], &mut scratch)
            .unwrap();
    });
    assert!(first > 0, "the first run must allocate its scratch");
    assert_eq!(output, input);

    let later = allocations_in(|| {
        for round in 0..100 {
            output.fill(round);
            let mut outputs = [&mut output[..]];
            let bindings =
                prepare_borrowed(&loaded, &[&input], &mut outputs, &mut scratch, &Inline)
                    .expect("bind");
            run(bindings).expect("run");
            loaded
                .invoke(&[&input], &mut [&mut output], &mut scratch)
                .expect("invoke");
        }
    });
    assert_eq!(later, 0, "runs after warm-up allocated {later} times");
    assert_eq!(output, input);

    // A scratch sized up front allocates nothing even on its first run.
    let mut sized = Scratch::for_artifact(&loaded, 1).unwrap();
    let fresh = allocations_in(|| {
        loaded
            .invoke(&[&input], &mut [&mut output], &mut sized)
            .unwrap();
    });
    assert_eq!(fresh, 0);
}
