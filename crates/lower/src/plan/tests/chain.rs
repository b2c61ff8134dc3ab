//! Dispatch chains (`plan/chain.rs`): which passes are chained, and that the reference
//! executor, which runs each chain's links one after the other and workgroup by workgroup in
//! both orders, catches a chain that should not be.

use accy_artifact::Command;
use accy_ir::text;

use super::{args_for, planned_with};
use crate::compile::Options;
use crate::testing::run_lowered;

/// Caches so small that every tensor below is worth chaining.
fn small_caches() -> Options {
    Options::default().with_caches(accy_artifact::Blocking {
        l1d: 256,
        l2: 1024,
        llc: 2048,
        ..Default::default()
    })
}

/// `(workgroups, chained)` of each dispatch.
fn grid(commands: &[Command]) -> Vec<(u32, bool)> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Dispatch {
                workgroups,
                chained,
                ..
            } => Some((*workgroups, *chained)),
            _ => None,
        })
        .collect()
}

const SOFTMAX: &str = "program {
  %x = input \"x\" : f32[64,32]
  %m = reduce max %x, axes=[1] : f32[64]
  %mb = broadcast %m, dims=[64,32], axes=[0] : f32[64,32]
  %d = sub %x, %mb : f32[64,32]
  %e = exp %d : f32[64,32]
  %s = reduce sum %e, axes=[1] : f32[64]
  %sb = broadcast %s, dims=[64,32], axes=[0] : f32[64,32]
  %y = div %e, %sb : f32[64,32]
  output %y
}";

/// The max, the sum of exponentials and the division each work on rows alone: one chain
/// whose workgroups each hold a cache-sized block of rows. (`planned_with` runs the chain in both
/// orders against the interpreter.)
#[test]
fn a_row_softmax_is_one_chain() {
    let (_, lowered) = planned_with(SOFTMAX, &small_caches());
    let grid = grid(&lowered.commands);
    // Three passes (where the exponentials are stored once, the sum stores them).
    assert!(grid.len() >= 3, "{grid:?}");
    let count = grid[0].0;
    assert!(count >= 16, "{grid:?}");
    let last = grid.len() - 1;
    for (i, &(workgroups, chained)) in grid.iter().enumerate() {
        assert_eq!((workgroups, chained), (count, i < last), "{grid:?}");
    }
}

/// The layer norm chain's last link hints the cache to fetch the next workgroup's rows of
/// `x`, which the first link reads; the other links carry no hint.
#[test]
fn the_last_link_fetches_the_next_workgroups_rows() {
    let (_, lowered) = planned_with(LAYER_NORM, &small_caches());
    let dispatched: Vec<(u32, Vec<accy_artifact::Region>)> = lowered
        .commands
        .iter()
        .filter_map(|c| match c {
            Command::Dispatch {
                kernel,
                bindings,
                workgroups,
                ..
            } => {
                assert!(*workgroups >= 2);
                Some((*kernel, bindings.iter().map(|b| b.region).collect()))
            }
            _ => None,
        })
        .collect();
    let count = grid(&lowered.commands)[0].0;
    let (last, rest) = dispatched.split_last().unwrap();
    for (kernel, _) in rest {
        let k = lowered.kernels[*kernel as usize].as_loop().unwrap();
        assert_eq!(k.prefetch, None, "{}", k.name);
    }
    let k = lowered.kernels[last.0 as usize].as_loop().unwrap();
    let hint = k.prefetch.expect("the last link's hint");
    // The first link's binding 0 is `x`; the last link reads the same region.
    let x = dispatched[0].1[0];
    assert_eq!(last.1[hint.binding as usize], x);
    assert_eq!(hint.ahead, i64::from(32u32.div_ceil(count) * 64));
}

/// A chain forms when a region its links share is at least half the last-level cache: the
/// softmax's 8 KiB input chains with a 16 KiB cache, not with one a line larger.
#[test]
fn chains_form_from_half_the_last_level_cache() {
    let with_llc = |llc| {
        Options::default().with_caches(accy_artifact::Blocking {
            l1d: 256,
            l2: 1024,
            llc,
            ..Default::default()
        })
    };
    let (_, at_half) = planned_with(SOFTMAX, &with_llc(16384));
    assert!(grid(&at_half.commands).iter().any(|&(_, chained)| chained));
    let (_, below) = planned_with(SOFTMAX, &with_llc(16384 + 128));
    assert!(grid(&below.commands).iter().all(|&(_, chained)| !chained));
}

/// With the default options' caches (an 8 MiB last-level cache) the 8 KiB softmax stays
/// cached anyway: no chain.
#[test]
fn small_tensors_are_not_chained() {
    let (_, lowered) = planned_with(SOFTMAX, &Options::default());
    assert!(grid(&lowered.commands).iter().all(|&(_, chained)| !chained));
}

const LAYER_NORM: &str = "program {
  %x = input \"x\" : f32[32,64]
  %g = weight \"g\" : f32[64]
  %b = weight \"b\" : f32[64]
  %s = reduce sum %x, axes=[1] : f32[32]
  %n = constant 0.015625 : f32[]
  %nb = broadcast %n, dims=[32], axes=[] : f32[32]
  %mean = mul %s, %nb : f32[32]
  %meanb = broadcast %mean, dims=[32,64], axes=[0] : f32[32,64]
  %c = sub %x, %meanb : f32[32,64]
  %sq = mul %c, %c : f32[32,64]
  %ss = reduce sum %sq, axes=[1] : f32[32]
  %var = mul %ss, %nb : f32[32]
  %r = rsqrt %var : f32[32]
  %rb = broadcast %r, dims=[32,64], axes=[0] : f32[32,64]
  %xn = mul %c, %rb : f32[32,64]
  %gb = broadcast %g, dims=[32,64], axes=[1] : f32[32,64]
  %bb = broadcast %b, dims=[32,64], axes=[1] : f32[32,64]
  %y0 = mul %xn, %gb : f32[32,64]
  %y = add %y0, %bb : f32[32,64]
  output %y
}";

/// A layer norm with gamma and beta read whole by every workgroup: one chain.
#[test]
fn a_layer_norm_is_one_chain() {
    let (_, lowered) = planned_with(LAYER_NORM, &small_caches());
    let grid = grid(&lowered.commands);
    assert_eq!(grid.len(), 3, "{grid:?}");
    assert!(grid[0].1 && grid[1].1 && !grid[2].1, "{grid:?}");
}

/// The second pass reads the row maxima in reverse: its row `r` needs what another workgroup
/// computes, so the two passes are not chained.
const REVERSED: &str = "program {
  %x = input \"x\" : f32[64,32]
  %m = reduce max %x, axes=[1] : f32[64]
  %r = reverse %m, axes=[0] : f32[64]
  %rb = broadcast %r, dims=[64,32], axes=[0] : f32[64,32]
  %y = sub %x, %rb : f32[64,32]
  output %y
}";

#[test]
fn rows_read_across_workgroups_are_not_chained() {
    let (_, lowered) = planned_with(REVERSED, &small_caches());
    let grid = grid(&lowered.commands);
    assert_eq!(grid.len(), 2, "{grid:?}");
    assert!(grid.iter().all(|&(_, chained)| !chained), "{grid:?}");
}

/// The second pass reads the row maxima one row on: it depends only on later rows, which a
/// chain run first to last has not computed yet (its first pass has one row more, so the two
/// are not chained by the planner either).
const SHIFTED: &str = "program {
  %x = input \"x\" : f32[65,32]
  %m = reduce max %x, axes=[1] : f32[65]
  %n = slice %m, start=[1], limit=[65], stride=[1] : f32[64]
  %x0 = slice %x, start=[0,0], limit=[64,32], stride=[1,1] : f32[64,32]
  %nb = broadcast %n, dims=[64,32], axes=[0] : f32[64,32]
  %y = sub %x0, %nb : f32[64,32]
  output %y
}";

/// `source`'s plan with every dispatch chained to the next by force runs into the reference
/// executor's check (its result through the chain differs in one of the two orders), and is
/// not chained by the planner.
fn refused_when_chained_by_force(source: &str) {
    let program = text::parse(source).unwrap();
    let (_, planned) = planned_with(source, &small_caches());
    assert!(
        grid(&planned.commands).iter().all(|&(_, chained)| !chained),
        "{source}"
    );
    let mut lowered = super::super::plan_with(&program, &small_caches()).unwrap();
    let dispatches: Vec<&mut Command> = lowered
        .commands
        .iter_mut()
        .filter(|c| matches!(c, Command::Dispatch { .. }))
        .collect();
    let last = dispatches.len() - 1;
    for (i, command) in dispatches.into_iter().enumerate() {
        if let Command::Dispatch {
            workgroups,
            chained,
            ..
        } = command
        {
            *workgroups = 8;
            *chained = i < last;
        }
    }
    let args = args_for(&program);
    let error = run_lowered(&lowered, &program, &args).unwrap_err();
    assert!(error.contains("workgroup by workgroup"), "{error}");
}

#[test]
fn wrong_chains_are_caught() {
    refused_when_chained_by_force(REVERSED);
    refused_when_chained_by_force(SHIFTED);
}

/// How many kernels keep rows in worker scratch.
fn in_scratch(lowered: &crate::plan::LoweredProgram) -> usize {
    lowered
        .kernels
        .iter()
        .filter(|k| k.as_loop().is_some_and(|k| !k.row_scratch.is_empty()))
        .count()
}

/// A softmax's stored exp keeps its rows in worker scratch, also when a later softmax's exp
/// is given the same scratch bytes (slots are reused once a value is dead); an exp that a
/// command outside the chain reads as well keeps its buffer. (`planned_with` checks each plan
/// against the interpreter.)
#[test]
fn a_chained_exp_keeps_its_rows_in_worker_scratch_while_it_lives() {
    let (_, one) = planned_with(SOFTMAX, &small_caches());
    // The link that stores the exp while it sums it, and the division.
    assert_eq!(in_scratch(&one), 2);
    // Two more softmaxes, each of the previous one's result.
    let softmax_of = |x: &str, p: &str| {
        let f = "f32[64,32]";
        let row = "f32[64]";
        format!(
            "  %{p}m = reduce max %{x}, axes=[1] : {row}
  %{p}mb = broadcast %{p}m, dims=[64,32], axes=[0] : {f}
  %{p}d = sub %{x}, %{p}mb : {f}
  %{p}e = exp %{p}d : {f}
  %{p}s = reduce sum %{p}e, axes=[1] : {row}
  %{p}sb = broadcast %{p}s, dims=[64,32], axes=[0] : {f}
  %{p}y = div %{p}e, %{p}sb : {f}
"
        )
    };
    let thrice = SOFTMAX.replace("output %y\n}", "")
        + &softmax_of("y", "two_")
        + &softmax_of("two_y", "three_")
        + "  output %three_y\n}";
    let (_, three) = planned_with(&thrice, &small_caches());
    assert_eq!(in_scratch(&three), 6, "{:#?}", three.kernels);
    // The third exp was given the first one's bytes (all in one chain here), so both qualify
    // only by looking at each value's lifetime alone.
    let exp_regions: Vec<accy_artifact::Region> = three
        .commands
        .iter()
        .filter_map(|c| match c {
            Command::Dispatch {
                kernel, bindings, ..
            } => {
                let k = three.kernels[*kernel as usize].as_loop()?;
                let kept = k.keep.as_ref()?.binding;
                k.row_scratch
                    .iter()
                    .any(|r| r.binding == kept)
                    .then(|| bindings[kept as usize].region)
            }
            _ => None,
        })
        .collect();
    assert_eq!(exp_regions.len(), 3);
    assert!(exp_regions[0].overlaps(&exp_regions[2]), "{exp_regions:?}");
    // The exp also read, reversed along its rows' dim, by a later command.
    let read_later = SOFTMAX.replace(
        "output %y\n}",
        "%r = reverse %e, axes=[0] : f32[64,32]
  output %y
  output %r
}",
    );
    let (_, later) = planned_with(&read_later, &small_caches());
    assert_eq!(in_scratch(&later), 0, "{:#?}", later.kernels);
}
