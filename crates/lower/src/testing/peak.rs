//! A generated loop of independent fused multiply-adds: the machine's FMA peak, measured in the
//! same run as a benchmark so GEMM results can be reported as a fraction of it.
//!
//! [`fma_loop`] emits `extern "C" fn(iterations: u64)` (System V) for an x86-64 tier: each
//! iteration issues one FMA into each of many independent accumulators (more than any core's
//! FMA latency times its FMA ports), with the vectors of the tier the contraction microkernels
//! use — ymm on AVX2, zmm on AVX-512 — so the peak is the one those kernels can reach.

#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use crate::x64::asm::{x64, Asm};
use crate::x64::evex::{self, zop, Rm};
use crate::x64::X64Tier;

/// The code of the FMA loop for `tier` and the f32 flops one iteration does; `None` for a tier
/// without FMA (SSE2).
pub fn fma_loop(tier: X64Tier) -> Option<(Vec<u8>, u64)> {
    let mut ops = Asm::new(0);
    let (accumulators, flops): (u8, u64) = match tier {
        X64Tier::Sse2 => return None,
        X64Tier::Avx2 => (12, 12 * 8 * 2),
        X64Tier::Avx512 => (24, 24 * 16 * 2),
    };
    let top = ops.new_dynamic_label();
    // Zero operands too: stale register contents could be denormal, which some cores
    // multiply slowly (a microcode assist), understating the peak.
    for r in (0..accumulators).chain([30, 31]) {
        match tier {
            X64Tier::Avx512 => ops.extend(evex::zmm(zop::pxor(), r, Some(r), Rm::Reg(r))),
            _ => x64!(ops; vxorps Ry(r % 16), Ry(r % 16), Ry(r % 16)),
        }
    }
    x64!(ops; test rdi, rdi ; jz >done ; =>top);
    for r in 0..accumulators {
        match tier {
            // zmm30/31 are never accumulators: a constant operand pair.
            X64Tier::Avx512 => {
                ops.extend(evex::zmm(zop::fmadd231(false), r, Some(30), Rm::Reg(31)))
            }
            _ => x64!(ops; vfmadd231ps Ry(r), ymm14, ymm15),
        }
    }
    x64!(ops
        ; sub rdi, 1
        ; jnz =>top
        ; done:
        ; vzeroupper
        ; ret
    );
    ops.finalize().ok().map(|code| (code, flops))
}
