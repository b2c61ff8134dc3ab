//! Which microkernels a contraction's code holds: one for full row panels only when a tile can
//! have one (m ≥ mr), so a batch-1 product carries no code that could never run. Emitted on
//! every tier (nothing runs, so a tier this CPU lacks is checked too).

use super::encoding::disassemble;
use crate::compile::{compile, Options};
use crate::x64::{X64Target, X64Tier};

/// The number of multiplies of A by B (`mnemonic`) in the code for `[m, 64] · [64, 64]` on
/// `tier`.
fn products(tier: X64Tier, mnemonic: &str, m: u64) -> usize {
    let source = format!(
        "program {{\n  %a = input \"a\" : f32[{m},64]\n  %b = weight \"b\" : f32[64,64]\n  \
         %c = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : \
         f32[{m},64]\n  output %c\n}}\n"
    );
    let program = accy_ir::text::parse(&source).expect("parses");
    let artifact = compile(&program, &X64Target::new(tier), &Options::default()).expect("compiles");
    let listing = disassemble(&artifact.code).expect("decodes");
    listing
        .lines()
        .filter(|line| line.split(' ').next() == Some(mnemonic))
        .count()
}

#[test]
fn only_tiles_with_full_row_panels_get_the_full_microkernel() {
    for (tier, mnemonic) in [
        (X64Tier::Sse2, "mulps"),
        (X64Tier::Avx2, "vfmadd231ps"),
        (X64Tier::Avx512, "vfmadd231ps"),
    ] {
        let (mr, _) = Options::default()
            .for_target(&X64Target::new(tier))
            .micro_tile(accy_ir::DType::F32);
        // m = mr is the full panel's microkernel alone; m = mr + 1 adds a one-row partial
        // panel; m = 1 must be that partial panel alone, without the full one it could never
        // run.
        let count = |m| products(tier, mnemonic, m);
        let (full, both, one_row) = (count(mr), count(mr + 1), count(1));
        assert!(0 < one_row && one_row < full, "{tier:?}: {full} {one_row}");
        assert_eq!(
            both - one_row,
            full,
            "{tier:?}: m = 1 has {one_row} products, m = mr + 1 {both}"
        );
    }
}
