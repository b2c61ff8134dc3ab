//! Where a contraction's microkernels read A: in place on the SSE2 and AVX2 tiers (whose 4 and
//! 6 rows fit an L1 set's ways), from a copy on AVX-512 (14 rows) unless the product has one
//! row. Emitted on every tier (nothing runs, so a tier this CPU lacks is checked too).

use crate::compile::{compile_detailed, Compilation, Options};
use crate::kernel::{ContractionKernel, Kernel};
use crate::x64::{X64Target, X64Tier};

/// `[m, 1024] · [1024, 512]`: rows 4 KiB apart, several column panels a tile.
fn product(m: u64) -> accy_ir::Program {
    let source = format!(
        "program {{\n  %a = input \"a\" : f32[{m},1024]\n  \
         %b = weight \"b\" : f32[1024,512]\n  %c = dot %a, %b, lhs_batch=[], rhs_batch=[], \
         lhs_contract=[1], rhs_contract=[0] : f32[{m},512]\n  output %c\n}}\n"
    );
    accy_ir::text::parse(&source).expect("parses")
}

/// The contraction kernel of `c` and its index.
fn contraction(c: &Compilation) -> (usize, &ContractionKernel) {
    c.kernels
        .iter()
        .enumerate()
        .find_map(|(i, k)| match k {
            Kernel::Contraction(k) => Some((i, k)),
            Kernel::Loop(_) => None,
        })
        .expect("a contraction")
}

#[test]
fn only_the_avx512_tier_copies_a() {
    let program = product(96);
    for (tier, copies) in [
        (X64Tier::Sse2, false),
        (X64Tier::Avx2, false),
        (X64Tier::Avx512, true),
    ] {
        let c = compile_detailed(&program, &X64Target::new(tier), &Options::default())
            .expect("compiles");
        let (i, k) = contraction(&c);
        assert_eq!(k.copy_a, copies, "{tier:?}: {k}");
        let (mr, nr) = Options::default()
            .for_target(&X64Target::new(tier))
            .micro_tile(accy_ir::DType::F32);
        assert!(k.tile_n >= 2 * nr, "{tier:?}: {k}");
        // The worker scratch is the partial sums alone (a row panel's, or the tile's when k
        // is in blocks), or with the copy of a row panel's block of A after them.
        let rows = if k.tile_k < k.k { k.tile_m } else { mr };
        let sums = rows * k.tile_n * 4;
        let scratch = c.artifact.kernels[i].worker_scratch;
        if copies {
            assert!(scratch > sums, "{tier:?}: {scratch} bytes for {k}");
        } else {
            assert_eq!(scratch, sums, "{tier:?}: {k}");
        }
    }
}

/// One row shares cache sets with no other: read in place on every tier.
#[test]
fn one_row_is_never_copied() {
    let program = product(1);
    for tier in X64Tier::ALL {
        let c = compile_detailed(&program, &X64Target::new(tier), &Options::default())
            .expect("compiles");
        let (_, k) = contraction(&c);
        assert!(!k.copy_a, "{tier:?}: {k}");
    }
}
