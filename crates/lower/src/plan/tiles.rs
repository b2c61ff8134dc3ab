//! The tile grid of a loop kernel: how many workgroups its dispatch has.
//!
//! Emitters split a kernel's outermost dim into `workgroups` contiguous shares when that dim is
//! parallel (see `crate::emit`), and a runtime may run the shares on any threads. The grid is
//! fixed here, at compile time, from the kernel alone (a dispatch chain, `chain.rs`, may
//! raise it from the cache sizes) — never from the thread count — so a
//! kernel computes the same bytes however many threads run it: each output element is computed
//! by exactly one workgroup, in the same order, in both numeric modes.
//!
//! A split costs a wake-up of sleeping threads (microseconds) and some imbalance, so a kernel
//! is split only when it has at least two tiles' worth of work, [`TILE_COST`] each, estimated
//! as iteration points times a per-point cost of its live nodes. More tiles than threads are
//! made when there is enough work ([`MAX_TILES`] at most), so that a thread that loses its core
//! holds up one small tile while the others take the rest.

use accy_ir::UnaryOp;

use crate::kernel::{LoopKernel, Node};

/// The work one tile should hold, in the units of [`point_cost`]: about 64 K simple vector
/// operations, tens of microseconds on one core — well above the cost of waking a thread.
pub(crate) const TILE_COST: u64 = 1 << 16;

/// The most workgroups one dispatch gets.
pub(crate) const MAX_TILES: u64 = 64;

/// The estimated cost of evaluating `k`'s live nodes at one point: 1 per node, more for the
/// ones that are calls or long sequences (transcendentals, division, gathers).
fn point_cost(k: &LoopKernel) -> u64 {
    let live = k.live_nodes();
    let nodes: u64 = k
        .nodes
        .iter()
        .zip(&live)
        .filter(|(_, &l)| l)
        .map(|(n, _)| match &n.node {
            Node::Unary { op, .. } => match op {
                UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Erf
                | UnaryOp::Sin
                | UnaryOp::Cos => 16,
                UnaryOp::Sqrt | UnaryOp::Rsqrt => 4,
                _ => 1,
            },
            Node::Binary { op, .. } => match op {
                accy_ir::BinaryOp::Div | accy_ir::BinaryOp::Rem => 4,
                accy_ir::BinaryOp::Pow => 32,
                _ => 1,
            },
            Node::Gather { .. } => 4,
            _ => 1,
        })
        .sum();
    // The store (or the combine of a reduction).
    nodes + 1
}

/// The number of workgroups `k`'s dispatch gets (at least 1): 1 unless its outermost dim is
/// parallel and it has at least two tiles of work; never more tiles than that dim's extent.
pub(crate) fn workgroups(k: &LoopKernel) -> u32 {
    let Some(&outer) = k.dims.first() else {
        return 1;
    };
    if k.parallel_rank == 0 {
        return 1;
    }
    let points = k
        .dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .unwrap_or(u64::MAX);
    let work = points.saturating_mul(point_cost(k));
    let tiles = (work / TILE_COST).min(MAX_TILES).min(outer);
    if tiles < 2 {
        1
    } else {
        tiles as u32
    }
}

#[cfg(test)]
mod tests {
    use accy_ir::{BinaryOp, DType, ReduceOp};

    use super::*;
    use crate::testing::kernels::{binary_2d, reduce_2d};

    #[test]
    fn small_work_stays_whole_and_large_work_splits_along_the_outer_dim() {
        let add = |rows, cols| {
            binary_2d(
                [rows, cols],
                DType::F32,
                (rows * cols, 0, [cols as i64, 1]),
                (rows * cols, 0, [cols as i64, 1]),
                BinaryOp::Add,
            )
        };
        assert_eq!(workgroups(&add(4, 1000)), 1);
        assert_eq!(workgroups(&add(4096, 4096)), MAX_TILES as u32);
        // Never more tiles than rows to share out.
        assert_eq!(workgroups(&add(3, 1 << 20)), 3);
        assert_eq!(workgroups(&add(1, 1 << 24)), 1);
        // A reduction splits over its kept dims only.
        assert_eq!(
            workgroups(&reduce_2d(ReduceOp::Sum, DType::F32, 4096, 1024)),
            64
        );
        let mut all = reduce_2d(ReduceOp::Sum, DType::F32, 1, 1 << 24);
        all.parallel_rank = 0;
        assert_eq!(workgroups(&all), 1);
        // Transcendentals weigh more: fewer points make a tile.
        let mut exp = add(64, 1024);
        assert_eq!(workgroups(&exp), 4);
        exp.nodes[2].node = Node::Unary {
            op: UnaryOp::Exp,
            x: 0,
        };
        assert_eq!(workgroups(&exp), 18);
    }
}
