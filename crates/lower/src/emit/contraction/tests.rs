//! The schedule's direct stores and the passes over k they ask for.

use super::{k_passes, schedule, EpilogueCall, Init, KBlock, Pass};
use crate::compile::Options;
use crate::kernel::{ContractionKernel, Kernel};
use crate::plan::plan_with;
use accy_artifact::Blocking;
use accy_ir::text;

/// The contraction of `relu?(a[m,k] · b[k,n])`, planned for 14 × 32 tiles with k in blocks of
/// 128 (48 KiB L1d).
fn contraction(m: u64, k: u64, n: u64, relu: bool) -> ContractionKernel {
    let tail = if relu {
        format!(
            "%z = constant 0.0 : f32[]
             %zb = broadcast %z, dims=[{m},{n}], axes=[] : f32[{m},{n}]
             %r = max %c, %zb : f32[{m},{n}]
             output %r"
        )
    } else {
        "output %c".to_string()
    };
    let source = format!(
        "program {{
          %a = input \"a\" : f32[{m},{k}]
          %b = weight \"b\" : f32[{k},{n}]
          %c = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[{m},{n}]
          {tail}
        }}"
    );
    let mut o = Options::default().with_caches(Blocking {
        l1d: 48 << 10,
        l2: 1 << 20,
        llc: 32 << 20,
        ..Default::default()
    });
    o.micro_tiles = [(14, 32), (14, 16)];
    o.blocks_k = true;
    let lowered = plan_with(&text::parse(&source).unwrap(), &o).unwrap();
    lowered
        .kernels
        .iter()
        .find_map(Kernel::as_contraction)
        .cloned()
        .expect("a contraction")
}

/// The blocks each pass covers, in order, and whether it ends in the epilogue.
fn blocks(k: &ContractionKernel, direct: bool) -> Vec<(u64, bool)> {
    let passes = k_passes(k, direct);
    let at = |p: Pass| match p.block {
        KBlock::At(b) => (b, p.epilogue == EpilogueCall::Always),
        KBlock::Current => unreachable!("only looped passes are Current"),
    };
    assert_eq!(passes.first.init, Init::Zero);
    let mut out = vec![at(passes.first)];
    if let Some((p, end)) = passes.looped {
        assert_eq!(p.block, KBlock::Current);
        for b in 1..end {
            let last = matches!(p.epilogue, EpilogueCall::InBlock(l) if l == b);
            out.push((b, last));
        }
    }
    if let Some(p) = passes.rest {
        out.push(at(p));
    }
    out
}

#[test]
fn a_plain_product_with_whole_panels_stores_directly() {
    let k = contraction(70, 1024, 512, false);
    let s = schedule(&k, 14, 32, "test", true).unwrap();
    let d = s.direct.expect("a direct store");
    assert_eq!(d.binding, k.store.binding);
    assert_eq!(d.strides[1..], [512, 1]);
    assert!(s.epilogues.is_empty());
    // A backend that does not ask keeps the epilogue kernels.
    let s = schedule(&k, 14, 32, "test", false).unwrap();
    assert!(s.direct.is_none() && !s.epilogues.is_empty());
    // A partial column panel, or an epilogue with more than the sum, needs the epilogue.
    for k in [
        contraction(70, 1024, 500, false),
        contraction(70, 1024, 512, true),
    ] {
        let s = schedule(&k, 14, 32, "test", true).unwrap();
        assert!(s.direct.is_none() && !s.epilogues.is_empty(), "{k:?}");
    }
}

/// Every block is computed once, in order, and only the last ends in the epilogue (or the
/// direct store); with direct stores the last block is a pass of its own, never chosen at run
/// time inside the loop.
#[test]
fn direct_stores_give_the_last_block_its_own_pass() {
    for k_len in [96, 256, 384, 1024, 1000] {
        let k = contraction(70, k_len, 512, false);
        let n = k.k.div_ceil(k.tile_k);
        for direct in [false, true] {
            let got = blocks(&k, direct);
            let want: Vec<(u64, bool)> = (0..n).map(|b| (b, b + 1 == n)).collect();
            assert_eq!(
                got, want,
                "k {k_len}, blocks of {}, direct {direct}",
                k.tile_k
            );
            if direct {
                let passes = k_passes(&k, true);
                assert!(passes
                    .looped
                    .is_none_or(|(p, _)| p.epilogue == EpilogueCall::Never));
            }
        }
    }
}
