//! A loop kernel's prefetch hint (`crate::kernel::Prefetch`): the vector loops of both tiers
//! follow each whole-vector load of the hinted binding with a `prefetcht0` the hinted number
//! of elements further on; other bindings' loads, and kernels without a hint, get none; a
//! distance no displacement holds is dropped, not wrapped; validation refuses a hint for a
//! binding no node loads. (That a hint changes no result is the conformance suite's: the
//! chains it runs carry hints.)

use accy_ir::DType;

use super::encoding::{add_kernel, disassemble};
use crate::compile::Options;
use crate::kernel::{Kernel, KernelError, LoopKernel, Prefetch};
use crate::target::Target;
use crate::x64::{X64Target, X64Tier};

/// `add_kernel` over `n` elements of `dtype`.
fn adding(n: u64, dtype: DType) -> LoopKernel {
    let mut k = add_kernel();
    k.dims[0] = n;
    for b in &mut k.bindings {
        b.dtype = dtype;
        b.elements = n;
    }
    for node in &mut k.nodes {
        node.dtype = dtype;
    }
    k
}

fn code(tier: X64Tier, k: &LoopKernel) -> String {
    let code = X64Target::new(tier)
        .emit(&[Kernel::Loop(k.clone())], &Options::default())
        .expect("emit");
    disassemble(&code.code).expect("decodes")
}

#[test]
fn hinted_loads_prefetch_ahead() {
    for tier in [X64Tier::Avx2, X64Tier::Avx512] {
        for (dtype, scale) in [(DType::F32, 4), (DType::F64, 8)] {
            let mut k = adding(1000, dtype);
            assert!(!code(tier, &k).contains("prefetcht0"), "{tier:?} {dtype}");
            k.prefetch = Some(Prefetch {
                binding: 1,
                ahead: 1000,
            });
            k.validate().unwrap();
            let text = code(tier, &k);
            let hint = format!("prefetcht0 [rcx+rax*{scale}+{:#X}]", 1000 * scale);
            let hints = text.lines().filter(|l| l.contains("prefetcht0")).count();
            assert!(hints >= 1, "{tier:?} {dtype}:\n{text}");
            assert_eq!(
                text.lines().filter(|l| l.contains(&hint)).count(),
                hints,
                "{tier:?} {dtype}: every hint is {hint}:\n{text}"
            );
            // Too far for a 32-bit displacement: no hint, and the kernel still emits.
            k.prefetch = Some(Prefetch {
                binding: 1,
                ahead: i64::from(i32::MAX),
            });
            assert!(!code(tier, &k).contains("prefetcht0"), "{tier:?} {dtype}");
        }
    }
}

#[test]
fn a_hint_names_a_loaded_binding() {
    let mut k = adding(64, DType::F32);
    k.prefetch = Some(Prefetch {
        binding: 2,
        ahead: 64,
    });
    assert!(matches!(
        k.validate(),
        Err(KernelError::PrefetchNotLoaded { binding: 2, .. })
    ));
}
