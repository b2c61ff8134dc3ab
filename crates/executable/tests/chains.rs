//! Dispatch chains run workgroup by workgroup: two hand-assembled copy kernels chained through
//! a scratch slot give the copy on one thread and on a pool; a chain whose second link reads
//! beyond its workgroup's rows shows that each workgroup runs every link before the next
//! workgroup starts; a failing link is reported as itself.

#![cfg(target_arch = "x86_64")]

mod common;

use accy_artifact::{Access, Artifact, Command, Slot, SlotRole};
use accy_executable::{Inline, InvokeError, LaunchError, Scratch, ThreadPool};
use accy_ir::DType;
use common::*;

/// Bytes copied: five workgroups of 1000 bytes (the last one short).
const N: u64 = 4097;
const CHUNK: u64 = 1000;

/// input → scratch (chunks of `CHUNK`), chained to scratch → output (chunks of `second`),
/// both over 5 workgroups; the scratch is filled with 0xEE first.
fn chained_copies(second: u64, second_code: &[u8]) -> Artifact {
    let mut a = artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, N);
    let output = slot(&mut a, SlotRole::Output(0), DType::U8, N);
    let tmp = a.plan.add(Slot::scratch(N, 1)).expect("scratch slot");
    let first = add_kernel(&mut a, "copy_in", &COPY_CHUNK);
    let then = add_kernel(&mut a, "copy_out", second_code);
    a.launch.push(Command::Fill {
        dst: whole(tmp, N),
        pattern: 0xEE,
        width: 1,
    });
    dispatch(
        &mut a,
        first,
        &[
            (whole(input, N), Access::Read),
            (whole(tmp, N), Access::Write),
        ],
        &[CHUNK],
        5,
    );
    if let Some(Command::Dispatch { chained, .. }) = a.launch.commands.last_mut() {
        *chained = true;
    }
    dispatch(
        &mut a,
        then,
        &[
            (whole(tmp, N), Access::Read),
            (whole(output, N), Access::Write),
        ],
        &[second],
        5,
    );
    a.validate().expect("a valid chain");
    a
}

fn data() -> Vec<u8> {
    (0..N).map(|i| (i * 7 + 3) as u8).collect()
}

#[test]
fn a_chain_of_copies_copies_on_one_thread_and_on_a_pool() {
    let loaded = load(&chained_copies(CHUNK, &COPY_CHUNK), &host()).unwrap();
    let data = data();
    let pool = ThreadPool::new(3).unwrap();
    for executor in [&Inline as &dyn accy_executable::Executor, &pool] {
        for _ in 0..20 {
            let mut out = vec![0u8; N as usize];
            loaded
                .invoke_with(executor, &[&data], &mut [&mut out], &mut Scratch::new())
                .unwrap();
            assert_eq!(out, data);
        }
    }
}

/// The second link copies chunks of 2000 bytes: its workgroup 0 reads scratch bytes that the
/// first link's workgroup 1 writes, which a chain has not run yet — so (on one thread, which
/// runs workgroups in order) bytes 1000..2000 come out as the fill, and from 2000 on the
/// second link reads only bytes the first has not reached either. Run one after the other,
/// the two dispatches would copy everything.
#[test]
fn each_workgroup_runs_all_links_before_the_next_starts() {
    let loaded = load(&chained_copies(2 * CHUNK, &COPY_CHUNK), &host()).unwrap();
    let data = data();
    let mut out = vec![0u8; N as usize];
    loaded
        .invoke_with(&Inline, &[&data], &mut [&mut out], &mut Scratch::new())
        .unwrap();
    assert_eq!(out[..1000], data[..1000]);
    assert!(out[1000..].iter().all(|&b| b == 0xEE));
}

#[test]
fn a_failing_link_is_named() {
    let loaded = load(&chained_copies(CHUNK, &STATUS_7), &host()).unwrap();
    let data = data();
    let mut out = vec![0u8; N as usize];
    let err = loaded
        .invoke_with(&Inline, &[&data], &mut [&mut out], &mut Scratch::new())
        .unwrap_err();
    let want = LaunchError::KernelFailed {
        command: 2,
        kernel: 1,
        name: "copy_out".into(),
        workgroup: 0,
        workgroups: 5,
        status: 7,
    };
    assert_eq!(err, InvokeError::Launch(want));
}
