//! The tiles of contractions: how the grid follows the caches and whether the target blocks k,
//! and the passes over k the emitters make of them.

use super::planned_with;
use crate::compile::Options;
use crate::emit::contraction::{k_passes, schedule, EpilogueCall, Init, KBlock, Pass};
use crate::kernel::{ContractionKernel, Kernel};
use crate::plan::contract_tiles::K_OUTER_MIN_TILES;
use crate::plan::plan_with;
use accy_artifact::Blocking;
use accy_ir::text;

fn dot(m: u64, k: u64, n: u64) -> String {
    format!(
        "program {{
          %a = input \"a\" : f32[{m},{k}]
          %b = weight \"b\" : f32[{k},{n}]
          %c = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[{m},{n}]
          output %c
        }}"
    )
}

/// Options like an AVX-512 host's: 14 × 32 register tiles, 48 KiB L1d, 1 MiB L2.
fn options(blocks_k: bool) -> Options {
    let mut o = Options::default().with_caches(Blocking {
        l1d: 48 << 10,
        l2: 1 << 20,
        llc: 32 << 20,
        ..Default::default()
    });
    o.micro_tiles = [(14, 32), (14, 16)];
    o.blocks_k = blocks_k;
    o
}

/// Options like a Zen 3 core's: 6 × 16 register tiles (AVX2), 32 KiB L1d, 512 KiB L2.
fn zen3(blocks_k: bool) -> Options {
    let mut o = options(blocks_k).with_caches(Blocking {
        l1d: 32 << 10,
        l2: 512 << 10,
        llc: 32 << 20,
        ..Default::default()
    });
    o.micro_tiles = [(6, 16), (6, 8)];
    o
}

fn contraction(source: &str, options: &Options) -> ContractionKernel {
    let program = text::parse(source).unwrap();
    let lowered = plan_with(&program, options).unwrap();
    lowered
        .kernels
        .iter()
        .find_map(Kernel::as_contraction)
        .cloned()
        .expect("a contraction")
}

/// With k in blocks, a tile's block of B fits a quarter of the L2 and its partial sums half,
/// the grid has enough tiles for a few threads, and among such grids the tiles are large and
/// square-ish: many row panels reuse each block of B, many column panels each row panel of A.
#[test]
fn a_long_k_gets_large_tiles_bounded_by_one_block() {
    let o = options(true);
    let c = contraction(&dot(2048, 2048, 2048), &o);
    // Half the L1 holds a 14-row block of A and a 32-column block of B: 128 steps.
    assert_eq!(c.tile_k, 128);
    let quarter = o.caches.l2 / 4;
    assert!(c.tile_k * c.tile_n * 4 <= quarter, "{c:?}");
    assert_eq!((c.tile_m % 14, c.tile_n % 32), (0, 0), "{c:?}");
    let half = o.caches.l2 / 2;
    assert!(c.tile_m * c.tile_n * 4 <= half, "{c:?}");
    // At least half the buffer's half of the L2 used (more than a quarter: the bound was a
    // quarter before), in at least 4 panels each way.
    assert!(c.tile_m * c.tile_n * 4 * 2 > half, "{c:?}");
    assert!(c.tile_m * c.tile_n * 4 > quarter, "{c:?}");
    assert!(c.tile_m >= 4 * 14 && c.tile_n >= 4 * 32, "{c:?}");
    assert!(c.workgroups() >= K_OUTER_MIN_TILES);

    // Few rows: the columns are split, so that each tile holds every row and B is read once
    // (splitting the rows first gave 28×768 tiles, B read by five row tiles).
    let c = contraction(&dot(128, 768, 3072), &o);
    assert!(c.tile_m >= 128, "{c:?}");
    assert!(c.workgroups() >= K_OUTER_MIN_TILES, "{c:?}");
    let c = contraction(&dot(28, 1024, 2048), &o);
    assert!(c.workgroups() >= K_OUTER_MIN_TILES, "{c:?}");
    assert_eq!(c.tile_m, 28, "{c:?}");
}

/// A target that runs the whole of k in every tile gets one block of k, and tiles whose
/// columns keep all of k of B's panels within half the L2.
#[test]
fn a_target_without_k_blocks_gets_all_of_k() {
    let o = options(false);
    let c = contraction(&dot(2048, 2048, 2048), &o);
    assert_eq!(c.tile_k, 2048);
    assert_eq!(c.tile_n, 64);
    // A short k is one block either way, with the same tiles.
    let short = dot(256, 96, 512);
    let (a, b) = (contraction(&short, &options(true)), contraction(&short, &o));
    assert_eq!(
        (a.tile_m, a.tile_n, a.tile_k),
        (b.tile_m, b.tile_n, b.tile_k)
    );
    assert_eq!(a.tile_k, 96);
}

/// k stays one block when A's row panel alone fits half the L1 and B a few L2 caches, beyond
/// the length at which A's and B's parts of a call fill it; a longer k, or the same k with a
/// large B, is blocked.
#[test]
fn a_panel_that_fits_the_l1_keeps_k_whole_while_b_is_small() {
    let o = zen3(true);
    // 6 × 512 floats are 12 KiB: one block (blocks of 176 would fill the half with B's part).
    for (m, k, n) in [(512, 512, 512), (64, 512, 512), (2048, 512, 512)] {
        let c = contraction(&dot(m, k, n), &o);
        assert_eq!(c.tile_k, k, "{c:?}");
    }
    // 6 × 1024 floats are 24 KiB: blocked.
    let c = contraction(&dot(1024, 1024, 1024), &o);
    assert_eq!(c.tile_k, 176, "{c:?}");
    // B of 6 MiB, re-read by every row tile of one block: blocked.
    let c = contraction(&dot(128, 512, 3072), &o);
    assert_eq!(c.tile_k, 176, "{c:?}");
    assert!(c.tile_m >= 128, "{c:?}");
    // f64 halves the k that fits: 6 × 512 doubles are 24 KiB.
    let f64_dot = dot(512, 512, 512).replace("f32", "f64");
    let c = contraction(&f64_dot, &o);
    assert!(c.tile_k < 512, "{c:?}");
}

/// A product of fewer rows than the register tile (a batch-1 layer) counts only its rows
/// against the L1: k stays one block where a full row panel's would not fit, unless B is large.
#[test]
fn a_short_row_panel_keeps_k_whole() {
    let o = zen3(true);
    // 1 × 784 floats are 3 KiB; B 1.5 MiB, within four L2 caches.
    for m in [1, 5] {
        let c = contraction(&dot(m, 784, 512), &o);
        assert_eq!(c.tile_k, 784, "{c:?}");
    }
    // A full panel, 6 × 784 floats, is 18 KiB: blocked.
    let c = contraction(&dot(6, 784, 512), &o);
    assert!(c.tile_k < 784, "{c:?}");
    // B of 9 MiB streams past the one row in blocks.
    let c = contraction(&dot(1, 768, 3072), &o);
    assert!(c.tile_k < 768, "{c:?}");
}

/// With k in one block on a target that blocks k, a tile's columns may read up to two L2
/// caches of B (wider than the half L2 of targets that do not) while a row panel's partial
/// sums fit half the L1, and a small product keeps
/// the tiles the half-L2 rule gives it, up to `K_OUTER_MIN_TILES`.
#[test]
fn one_block_tiles_are_wide_but_keep_small_products_split() {
    let (o, l2) = (zen3(true), 512 << 10);
    for (m, k, n) in [(512, 512, 512), (1024, 512, 1024)] {
        let c = contraction(&dot(m, k, n), &o);
        assert_eq!(c.tile_k, k, "{c:?}");
        let b_bytes = c.tile_n * k * 4;
        assert!(b_bytes > l2 / 2 && b_bytes <= 2 * l2, "{c:?}");
        assert!(c.workgroups() >= K_OUTER_MIN_TILES, "{c:?}");
    }
    // A short k: no wider than the half-L2 rule, whose row panel of partial sums already
    // passes half the L1 (the wide rule alone gave 2048 columns).
    let short = dot(1024, 64, 4096);
    let (c, narrow) = (contraction(&short, &o), contraction(&short, &zen3(false)));
    assert_eq!(c.tile_n, narrow.tile_n, "{c:?}");
    // A target without k blocks keeps B's block within half the L2.
    let c = contraction(&dot(512, 512, 512), &zen3(false));
    assert!(c.tile_n * 512 * 4 <= l2 / 2, "{c:?}");
    // examples/mlp.accy's second layer: four tiles of 128 columns, as the half-L2 rule gives.
    let c = contraction(&dot(1, 512, 512), &o);
    assert_eq!((c.tile_n, c.workgroups()), (128, 4), "{c:?}");
}

/// Tiny caches force several blocks of k and tiles of several row and column panels: the
/// plan still computes what the interpreter does.
#[test]
fn blocked_k_plans_compute_the_same() {
    let mut o = options(true).with_caches(Blocking {
        l1d: 2 << 10,
        l2: 16 << 10,
        llc: 0,
        ..Default::default()
    });
    o.micro_tiles = [(4, 8), (4, 4)];
    let source = dot(30, 150, 70);
    let c = contraction(&source, &o);
    assert!(c.tile_k < c.k, "{c:?}");
    planned_with(&source, &o);
}

/// The tile search visits each distinct equal share of the panels once, as a walk over every
/// tile count would find them.
#[test]
fn shares_are_the_distinct_equal_splits() {
    use crate::plan::contract_tiles::shares;
    for panels in 1..300u64 {
        for most in [1, 2, 7, 40, 1000] {
            let mut all: Vec<u64> = (1..=panels)
                .map(|t| panels.div_ceil(t))
                .filter(|&s| s <= most)
                .collect();
            all.dedup();
            assert_eq!(shares(panels, most), all, "{panels} {most}");
        }
    }
    assert_eq!(shares(0, 10), Vec::<u64>::new());
    assert_eq!(shares(1 << 40, 300).len(), 300);
}

/// The contraction of `relu?(a[m,k] · b[k,n])` planned with [`options`]`(true)`.
fn product(m: u64, k: u64, n: u64, relu: bool) -> ContractionKernel {
    let source = dot(m, k, n);
    let source = if relu {
        source.replace(
            "output %c",
            &format!(
                "%z = constant 0.0 : f32[]
                 %zb = broadcast %z, dims=[{m},{n}], axes=[] : f32[{m},{n}]
                 %r = max %c, %zb : f32[{m},{n}]
                 output %r"
            ),
        )
    } else {
        source
    };
    contraction(&source, &options(true))
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
    let k = product(70, 1024, 512, false);
    let s = schedule(&k, 14, 32, "test", true).unwrap();
    let d = s.direct.expect("a direct store");
    assert_eq!(d.binding, k.store.binding);
    assert_eq!(d.strides[1..], [512, 1]);
    assert!(s.epilogues.is_empty());
    // A backend that does not ask keeps the epilogue kernels.
    let s = schedule(&k, 14, 32, "test", false).unwrap();
    assert!(s.direct.is_none() && !s.epilogues.is_empty());
    // A partial column panel, or an epilogue with more than the sum, needs the epilogue.
    for k in [product(70, 1024, 500, false), product(70, 1024, 512, true)] {
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
        let k = product(70, k_len, 512, false);
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
