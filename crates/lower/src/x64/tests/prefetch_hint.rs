//! A loop kernel's prefetch hint (`crate::kernel::Prefetch`): the vector loops of both tiers
//! follow each whole-vector load of the hinted binding with a `prefetcht0` the hinted number
//! of elements further on; other bindings' loads, and kernels without a hint, get none; a
//! distance no displacement holds is dropped, not wrapped; validation refuses a hint for a
//! binding no node loads. (That a hint changes no result is the conformance suite's: the
//! chains it runs carry hints.) Also the tile fills' own prefetches, which caches with
//! `skip_scattered_prefetch` keep only for rows that start off a line.

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

/// A blocked transpose's tile fills prefetch each group's rows of the block after next, on
/// both vector tiers and lane widths; with `skip_scattered_prefetch` only after a check that
/// the group's first row starts off a 64-byte line, so aligned rows skip them.
#[test]
fn tile_fills_prefetch_unless_the_caches_say_skip() {
    for tier in [X64Tier::Avx2, X64Tier::Avx512] {
        for dtype in [DType::F32, DType::F64] {
            let block = crate::TransposeBlock {
                line_bytes: 128,
                run: 256,
                along_rows: true,
            };
            let k = crate::testing::kernels::blocked_transpose(64, 512, dtype, block);
            assert!(crate::x64::vector_plan::vector_tiles(&k), "{dtype} tiled");
            let text = |skip: bool| {
                let options = Options::default().with_caches(accy_artifact::Blocking {
                    skip_scattered_prefetch: skip,
                    ..Options::default().caches
                });
                let code = X64Target::new(tier)
                    .emit(&[Kernel::Loop(k.clone())], &options)
                    .expect("emit");
                disassemble(&code.code).expect("decodes")
            };
            let fills = |text: &str| text.matches("prefetcht1 [rcx+").count();
            let (kept, skipped) = (text(false), text(true));
            assert!(fills(&kept) > 0, "{tier:?} {dtype}:\n{kept}");
            assert_eq!(fills(&kept), fills(&skipped), "{tier:?} {dtype}");
            assert!(!kept.contains("test cl,0x3F"), "{tier:?} {dtype}:\n{kept}");
            let lines: Vec<&str> = skipped.lines().map(str::trim_start).collect();
            let guarded = lines.windows(3).any(|w| {
                w[0].starts_with("test cl,0x3F")
                    && w[1].starts_with("je ")
                    && w[2].starts_with("prefetcht1 [rcx+")
            });
            assert!(guarded, "{tier:?} {dtype}:\n{skipped}");
        }
    }
}
