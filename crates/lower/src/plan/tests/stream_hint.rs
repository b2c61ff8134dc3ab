//! Prefetch hints for kernels that stream a large input on their own (`plan/stream_hint.rs`):
//! which kernels get one, for which binding, how far ahead; chains keep theirs.

use super::planned_with;
use crate::compile::Options;
use crate::kernel::{Kernel, Prefetch};
use crate::plan::stream_hint::STREAM_AHEAD_BYTES;
use accy_artifact::{Blocking, Command};

/// `y = tanh(x · w)` over `n` elements of `dtype` (`x` as 4 rows; `w` one row, broadcast:
/// a quarter of `x`'s size).
fn streaming(dtype: &str, n: u64) -> String {
    let r = n / 4;
    format!(
        "program {{
  %x = input \"x\" : {dtype}[4,{r}]
  %w = input \"w\" : {dtype}[{r}]
  %wb = broadcast %w, dims=[4,{r}], axes=[1] : {dtype}[4,{r}]
  %p = mul %x, %wb : {dtype}[4,{r}]
  %t = tanh %p : {dtype}[4,{r}]
  output %t
}}"
    )
}

fn with_l2(l2: u64) -> Options {
    Options::default().with_caches(Blocking {
        l1d: 1024,
        l2,
        llc: 1 << 30,
        ..Default::default()
    })
}

fn hints(options: &Options, source: &str) -> Vec<Option<Prefetch>> {
    let (_, l) = planned_with(source, options);
    l.kernels
        .iter()
        .filter_map(Kernel::as_loop)
        .map(|k| k.prefetch)
        .collect()
}

#[test]
fn the_largest_streamed_input_past_the_l2_is_fetched_ahead() {
    for (dtype, size) in [("f32", 4u64), ("f64", 8)] {
        let source = streaming(dtype, 1024);
        let x_bytes = 1024 * size;
        // x is larger than the L2, w (a quarter of it) is not the largest: x gets the hint.
        let ahead = i64::try_from(STREAM_AHEAD_BYTES / size).unwrap();
        let hinted = hints(&with_l2(x_bytes - 1), &source);
        assert_eq!(hinted.len(), 1, "{dtype}: one elementwise kernel");
        assert_eq!(
            hinted[0],
            Some(Prefetch { binding: 0, ahead }),
            "{dtype}: x (binding 0) is fetched {STREAM_AHEAD_BYTES} bytes ahead"
        );
        // Both past the L2: still the larger, x.
        let both = hints(&with_l2(x_bytes / 4 - 1), &source);
        assert_eq!(both, [Some(Prefetch { binding: 0, ahead })], "{dtype}");
        // Exactly the L2's size stays cached: no hint.
        assert_eq!(hints(&with_l2(x_bytes), &source), [None], "{dtype}");
    }
}

#[test]
fn a_chain_keeps_its_own_hint_and_its_first_links_get_none() {
    // A row softmax, chained where the LLC is small: only the last link carries a hint,
    // the chain's own (the next workgroup's rows), not the stream distance.
    let source = "program {
  %x = input \"x\" : f32[64,256]
  %m = reduce max %x, axes=[1] : f32[64]
  %mb = broadcast %m, dims=[64,256], axes=[0] : f32[64,256]
  %d = sub %x, %mb : f32[64,256]
  %s = reduce sum %d, axes=[1] : f32[64]
  %sb = broadcast %s, dims=[64,256], axes=[0] : f32[64,256]
  %y = div %d, %sb : f32[64,256]
  output %y
}";
    let options = Options::default().with_caches(Blocking {
        l1d: 1024,
        l2: 4096,
        llc: 8192,
        ..Default::default()
    });
    let hinted = hints(&options, source);
    let (last, first) = hinted.split_last().unwrap();
    assert!(first.iter().all(Option::is_none), "{hinted:?}");
    let last = last.expect("the chain's last link has its hint");
    // The chain's hint: the next workgroup's rows, 256 elements each.
    let (_, l) = planned_with(source, &options);
    let workgroups = l
        .commands
        .iter()
        .find_map(|c| match c {
            Command::Dispatch {
                workgroups,
                chained: true,
                ..
            } => Some(u64::from(*workgroups)),
            _ => None,
        })
        .expect("a chain");
    let rows = i64::try_from(64u64.div_ceil(workgroups)).unwrap();
    assert_eq!(
        last,
        Prefetch {
            binding: 0,
            ahead: rows * 256
        }
    );
}
