//! Weights live on read-only pages: generated code that writes a weight faults. The kernel
//! here breaks its contract on purpose — its dispatch declares the weight binding read-only,
//! so validation passes, but the code writes it — and runs in a child process, which must die
//! of a memory-protection signal. The same kernel writing an output slot works, in process.

#![cfg(target_arch = "x86_64")]

mod common;

use std::os::unix::process::ExitStatusExt;

use accy_artifact::{Access, Artifact, Command, Region, SlotRole};
use accy_executable::{LoadedArtifact, Scratch, Weights};
use accy_ir::DType;
use common::*;

const N: u64 = 16;
/// Set in the child process.
const CHILD: &str = "ACCY_READONLY_WEIGHTS_CHILD";

/// `copy_chunk` copying input 0 into binding 1, which is the weight slot (declared `Read`)
/// or, with `to_output`, output 0 (declared `Write`); output 0 is also filled with zeros
/// first, so the plan writes every output byte either way.
fn artifact(to_output: bool) -> Artifact {
    let mut a = common::artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, N);
    let weight = slot(&mut a, SlotRole::Weight("w".into()), DType::U8, N);
    let output = slot(&mut a, SlotRole::Output(0), DType::U8, N);
    let k = add_kernel(&mut a, "copy_chunk", &COPY_CHUNK);
    a.launch.push(Command::Fill {
        dst: Region::new(output, 0, N),
        pattern: 0,
        width: 1,
    });
    let target = if to_output {
        (whole(output, N), Access::Write)
    } else {
        (whole(weight, N), Access::Read)
    };
    dispatch(
        &mut a,
        k,
        &[(whole(input, N), Access::Read), target],
        &[N],
        1,
    );
    a
}

fn loaded(to_output: bool, weights: &Weights) -> LoadedArtifact {
    // SAFETY: deliberately broken for the weight case, and only ever run in a child process
    // that is expected to die: `copy_chunk` writes binding 1, which the plan declares read
    // only. For the output case the declaration is true and the kernel keeps the ABI.
    unsafe { LoadedArtifact::load_with_weights(&artifact(to_output), &host(), weights) }.unwrap()
}

#[test]
#[allow(
    clippy::print_stdout,
    reason = "the child tells the parent how far it got"
)]
fn a_kernel_writing_a_weight_faults() {
    let weights = Weights::new(&[("w", &[7; N as usize])]).unwrap();
    let input: Vec<u8> = (1..=N as u8).collect();
    if std::env::var_os(CHILD).is_some() {
        println!("child: running");
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit reads the struct passed by reference; a crash on purpose should
        // not leave a core file behind.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) };
        let mut out = [0u8; N as usize];
        let result =
            loaded(false, &weights).invoke(&[&input], &mut [&mut out], &mut Scratch::new());
        println!(
            "child: the weight was written ({result:?}): {:?}",
            weights.get("w")
        );
        return;
    }
    // In process, the honest version of the same kernel runs.
    let mut out = [0u8; N as usize];
    loaded(true, &weights)
        .invoke(&[&input], &mut [&mut out], &mut Scratch::new())
        .unwrap();
    assert_eq!(out.as_slice(), input.as_slice());

    let exe = std::env::current_exe().unwrap();
    let child = std::process::Command::new(exe)
        .args([
            "a_kernel_writing_a_weight_faults",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        stdout.contains("child: running"),
        "the child did not run:\n{stdout}"
    );
    assert!(
        !stdout.contains("was written"),
        "the kernel wrote the weight:\n{stdout}"
    );
    let signal = child.status.signal();
    assert!(
        signal == Some(libc::SIGSEGV) || signal == Some(libc::SIGBUS),
        "the child ended with {:?}, not a memory-protection signal",
        child.status
    );
    // The parent's copy of the weight is untouched either way.
    assert_eq!(weights.get("w"), Some(&[7u8; N as usize][..]));
}
