//! The dispatch ABI's checks, as every kernel's prologue makes them: a wrong ABI version or an
//! out-of-range workgroup returns `KERNEL_ABI_MISMATCH`, bindings that differ from the
//! compiled ones return `KERNEL_BINDING_MISMATCH`, both before touching memory; and, where the
//! runner can observe faults, a binding claimed longer than it is faults at its guard page
//! instead of being read past.

use accy_artifact::abi::{ABI_VERSION, KERNEL_ABI_MISMATCH, KERNEL_BINDING_MISMATCH, KERNEL_OK};
use accy_ir::{BinaryOp, DType};

use super::{Conformance, Launch};
use crate::testing::kernels::{binary_2d, buffers_for};

/// Runs `code` kernel 0 and checks the statuses and whether the buffers changed.
fn expect(
    s: &mut Conformance<'_>,
    what: &str,
    code: &crate::target::EmittedCode,
    buffers: &[Vec<u8>],
    launch: &Launch<'_>,
    statuses: &[u32],
    changes: bool,
) -> Result<(), String> {
    let mut after = buffers.to_vec();
    let got = s.runner().run(code, 0, &mut after, launch)?;
    if got != statuses {
        return Err(format!("{what}: statuses {got:?}, expected {statuses:?}"));
    }
    if (after != buffers) != changes {
        let verb = if changes { "left" } else { "changed" };
        return Err(format!("{what}: the kernel {verb} its buffers"));
    }
    s.checked += 1;
    Ok(())
}

pub(super) fn abi(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    let k = binary_2d(
        [2, 9],
        DType::I32,
        (18, 0, [9, 1]),
        (18, 0, [9, 1]),
        BinaryOp::Add,
    );
    let code = s.emit(&k)?;
    let buffers = buffers_for(&k, 3);
    let wrong_abi = Launch {
        abi_version: ABI_VERSION + 1,
        ..Launch::new(1)
    };
    expect(
        s,
        "wrong ABI version",
        &code,
        &buffers,
        &wrong_abi,
        &[KERNEL_ABI_MISMATCH],
        false,
    )?;
    // Workgroup 0 of a dispatch of 0 workgroups is out of range.
    let none = Launch::new(0);
    expect(
        s,
        "no workgroups",
        &code,
        &buffers,
        &none,
        &[KERNEL_ABI_MISMATCH],
        false,
    )?;
    expect(
        s,
        "a good call",
        &code,
        &buffers,
        &Launch::new(2),
        &[KERNEL_OK; 2],
        true,
    )?;
    // One binding missing, and one binding too many.
    let fewer = &buffers[..2];
    expect(
        s,
        "a missing binding",
        &code,
        fewer,
        &Launch::new(1),
        &[KERNEL_BINDING_MISMATCH],
        false,
    )?;
    let claimed = [72u64, 72, 72, 72];
    let more = Launch {
        claimed_lengths: Some(&claimed),
        ..Launch::new(1)
    };
    expect(
        s,
        "an extra binding",
        &code,
        &buffers,
        &more,
        &[KERNEL_BINDING_MISMATCH],
        false,
    )?;
    // The output one byte short of the 72 the kernel writes.
    let mut short = buffers.clone();
    short[2].pop();
    expect(
        s,
        "a short binding",
        &code,
        &short,
        &Launch::new(1),
        &[KERNEL_BINDING_MISMATCH],
        false,
    )?;
    // A longer binding is fine: the kernel touches only the bytes it was compiled for.
    let mut longer = buffers.clone();
    longer[0].extend_from_slice(&[0; 8]);
    expect(
        s,
        "a longer binding",
        &code,
        &longer,
        &Launch::new(1),
        &[KERNEL_OK],
        true,
    )?;
    if s.runner().catches_faults() {
        // Binding 0 claimed one element longer than it is: the kernel's own check passes, and
        // the guard page must stop the read past its end.
        let mut short_input = buffers.clone();
        short_input[0].truncate(68);
        let claimed = [72u64, 72, 72];
        let lying = Launch {
            claimed_lengths: Some(&claimed),
            ..Launch::new(1)
        };
        match s.runner().run(&code, 0, &mut short_input, &lying) {
            Err(_) => s.checked += 1,
            Ok(statuses) => {
                return Err(format!(
                    "an overrun past a guard page went unnoticed (statuses {statuses:?})"
                ))
            }
        }
    }
    Ok(())
}
