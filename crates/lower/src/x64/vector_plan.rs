//! The vector plan: whether and how a loop kernel's innermost dim runs in vector registers
//! (`vector.rs` emits it; `vector_ops.rs` and `vector_zmm.rs` hold each node's code).
//!
//! A kernel qualifies ([`plan`]) when either it is elementwise and stores contiguously along
//! the innermost dim (stride 1), or it reduces over its innermost dim (`vector_reduce.rs`);
//! and every load varying along that dim is contiguous (stride 1) or, in an elementwise
//! kernel, strided (a transposing read: one AVX2 gather per vector, its lane offsets
//! written to a frame slot once at kernel entry; or, when the innermost dim is a short run of
//! whole vectors and the next one out reads contiguously, tiles of whole source lines
//! transposed in registers into frame slots, see `tile.rs`; a gather runs in ymm vectors even
//! on AVX-512, whose zmm code has none, and tiles run in zmm there only when every strided
//! load has them; both end with the scalar tail, not the masked one); an elementwise
//! kernel reads the stored binding only through the store's own map (a point must not see a
//! later point's store early); and every node that varies along the dim has a vector form
//! in one lane width: f32/i32 or f64/i64, with bools as all-ones/zero lane masks. Anything
//! else is left to the scalar loops, which handle every node.
//!
//! Vector values live in ymm5–ymm15 (zmm5–zmm31) by a linear scan over their live ranges
//! (`emit::vregs`: varying values first, then uniform ones for the whole loop), the rest in
//! 32-byte (64-byte) frame slots; registers 0–4 are scratch.

use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};

use super::tile::{tiled, TileShape};
use crate::emit::vregs::{allocate_except, Home};
use crate::kernel::{KernelNode, LoopKernel, Node};

/// The first ymm register the allocator hands out; ymm0–ymm4 are scratch.
const FIRST_REG: u8 = 5;
/// One past the last allocatable ymm register.
const END_REG: u8 = 16;
/// One past the last allocatable zmm register.
const END_ZMM_REG: u8 = 32;
/// The accumulator of a vectorized reduction (then not allocatable).
pub(crate) const ACC_REG: u8 = 15;

/// How the innermost parallel dim is vectorized.
#[derive(Debug)]
pub(crate) struct VectorPlan {
    /// True for 64-bit lanes, false for 32-bit lanes.
    pub wide: bool,
    /// True for 512-bit zmm vectors (the AVX-512 tier, `vector_zmm.rs`), false for ymm.
    pub zmm: bool,
    /// Per node (zmm only): the opmask register a compare whose only users are selects'
    /// conditions leaves its result in, instead of a vector home.
    pub mask_reg: Vec<Option<u8>>,
    /// Per node: for a select that is exactly a float min or max of its two operands, which
    /// (see [`min_max_selects`]); it is then one `vminps`/`vmaxps`.
    pub min_max: Vec<Option<MinMax>>,
    /// Per node: a compare read only by such selects, or (zmm) an AND read only by a bit
    /// select, so never emitted.
    pub absorbed: Vec<bool>,
    /// Per node (zmm only): an OR that is one `vpternlogd` with the AND it absorbs
    /// (`bit_select.rs`).
    pub or_and: Vec<Option<super::bit_select::OrAnd>>,
    /// Where the lanes' sign-bit mask is kept for the whole loop (set by the uniform prefix)
    /// when some float `neg` or `abs` varies (each then costs one instruction instead of
    /// three), or on AVX-512 a float max does (three instead of five).
    pub sign: Option<SignMask>,
    /// Per node: its value does not vary along the vectorized dim.
    pub uniform: Vec<bool>,
    /// Per node: where its vector value lives.
    pub home: Vec<Home>,
    /// Number of 32-byte frame slots the homes (and the accumulator spill) use; a zmm home
    /// takes two (see `Emitter::vslot`).
    pub slots: usize,
    /// For a reduction: the slot the accumulator vector is spilled to for the final combine.
    pub acc_slot: Option<usize>,
    /// For a reduction with a short body: more accumulator registers besides [`ACC_REG`],
    /// which an unrolled loop fills one vector each, round robin (see `vector_reduce.rs`).
    pub extra_accs: Vec<u8>,
    /// Per node: for a load that walks the vectorized dim with a stride other than 0 or 1,
    /// the slot holding its gather's lane offsets (`lane * stride`, one dword per lane),
    /// written once at kernel entry.
    pub gather_slot: Vec<Option<usize>>,
    /// Per node: for a load transposed through tiles (see `tile.rs`), the first of the
    /// consecutive 32-byte frame units its tiles take (`TileShape::units`: the columns, for
    /// zmm columns a pad that lets them start on a 64-byte boundary, then the pointer to the
    /// current column while a run of the vector loop reads them).
    pub tile_slot: Vec<Option<usize>>,
}

impl VectorPlan {
    /// Points per vector iteration.
    pub(crate) fn lanes(&self) -> i64 {
        let lanes = if self.wide { 4 } else { 8 };
        if self.zmm {
            2 * lanes
        } else {
            lanes
        }
    }

    /// Bytes per vector.
    pub(crate) fn vector_bytes(&self) -> i32 {
        if self.zmm {
            64
        } else {
            32
        }
    }

    /// Whether some load is a gather or a tile: the AVX-512 masked tail has no form of either
    /// here, so such a loop finishes with the scalar tail.
    pub(crate) fn needs_scalar_tail(&self) -> bool {
        self.tiles() || self.gather_slot.iter().any(Option::is_some)
    }

    /// Whether some load reads through tiles (`tile.rs`).
    pub(crate) fn tiles(&self) -> bool {
        self.tile_slot.iter().any(Option::is_some)
    }

    /// The register holding the sign mask, when the plan keeps it in one.
    pub(crate) fn sign_reg(&self) -> Option<u8> {
        match self.sign {
            Some(SignMask::Reg(r)) => Some(r),
            _ => None,
        }
    }

    /// The shape of this plan's tiles (its lane width and vector size).
    pub(crate) fn tile_shape(&self) -> TileShape {
        TileShape::of(self.wide, self.zmm)
    }
}

/// A select computing `(first < second) ? first : second` (`max`: `>`), which is what x86's
/// `minps`/`maxps first, second` return lane by lane, NaN and signed-zero cases included: the
/// second operand whenever the compare is false.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MinMax {
    pub max: bool,
    pub first: u32,
    pub second: u32,
}

/// The selects of `k` that are a float min or max of their operands (`select(a < b, a, b)`
/// is `minps(a, b)`, `select(a < b, b, a)` is `maxps(b, a)`, and likewise for `>`; `<=` and
/// `>=` are not, as they pick the other operand on ties), and the compares read by nothing
/// else (not emitted at all). Clamps in the math expansions take this form.
pub(crate) fn min_max_selects(
    k: &LoopKernel,
    live: &[bool],
    uniform: &[bool],
) -> (Vec<Option<MinMax>>, Vec<bool>) {
    let n = k.nodes.len();
    let varying = |i: usize| live[i] && !uniform[i];
    let mut min_max = vec![None; n];
    for (j, kn) in k.nodes.iter().enumerate() {
        let Node::Select {
            cond,
            on_true,
            on_false,
        } = kn.node
        else {
            continue;
        };
        let Some(Node::Compare { op, lhs, rhs }) = k.nodes.get(cond as usize).map(|c| &c.node)
        else {
            continue;
        };
        let float = k
            .nodes
            .get(*lhs as usize)
            .is_some_and(|x| x.dtype.is_float());
        if !varying(j) || !float {
            continue;
        }
        let straight = (on_true, on_false) == (*lhs, *rhs);
        let crossed = (on_true, on_false) == (*rhs, *lhs);
        let max = match op {
            CompareOp::Lt if straight || crossed => crossed,
            CompareOp::Gt if straight || crossed => straight,
            _ => continue,
        };
        let (first, second) = if straight { (*lhs, *rhs) } else { (*rhs, *lhs) };
        min_max[j] = Some(MinMax { max, first, second });
    }
    // A compare is absorbed when every code that reads it is such a select.
    let mut read_otherwise = vec![false; n];
    for root in k.roots() {
        if let Some(r) = read_otherwise.get_mut(root as usize) {
            *r = true;
        }
    }
    let mut read_by_min_max = vec![false; n];
    for (j, kn) in k.nodes.iter().enumerate() {
        if !live[j] {
            continue;
        }
        if let (Some(_), Node::Select { cond, .. }) = (min_max[j], &kn.node) {
            read_by_min_max[*cond as usize] = true;
            for o in kn.node.operands().into_iter().filter(|&o| o != *cond) {
                read_otherwise[o as usize] = true;
            }
            continue;
        }
        for o in kn.node.operands() {
            read_otherwise[o as usize] = true;
        }
    }
    let absorbed = (0..n)
        .map(|i| varying(i) && read_by_min_max[i] && !read_otherwise[i])
        .collect();
    (min_max, absorbed)
}

/// Where a vector loop keeps its sign-bit mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SignMask {
    /// In a register no home uses.
    Reg(u8),
    /// In the frame, from this 32-byte slot: the sign mask, then (one vector on) its
    /// complement, the magnitude mask `abs` ands with.
    Slot(usize),
}

/// The lane width a dtype needs: `Some(true)` for 64-bit, `Some(false)` for 32-bit, `None`
/// for bool (a mask of whatever width the kernel uses); `Err` if it has no vector form.
fn lane_class(dtype: DType) -> Result<Option<bool>, ()> {
    match dtype {
        DType::F32 | DType::I32 => Ok(Some(false)),
        DType::F64 | DType::I64 => Ok(Some(true)),
        DType::Bool => Ok(None),
        _ => Err(()),
    }
}

/// Whether a varying node of dtype `dtype` (operands of dtype `operand`) has a vector form.
fn vectorizable(node: &Node, dtype: DType, operand: Option<DType>, wide: bool) -> bool {
    use DType::{Bool, F32, F64, I32, I64};
    match node {
        Node::Load { .. } => matches!(dtype, F32 | F64 | I32 | I64),
        Node::Gather { .. } | Node::Index { .. } | Node::Const { .. } => false,
        Node::Unary { op, .. } => match dtype {
            F32 | F64 => matches!(
                op,
                UnaryOp::Neg
                    | UnaryOp::Abs
                    | UnaryOp::Sqrt
                    | UnaryOp::Rsqrt
                    | UnaryOp::Floor
                    | UnaryOp::Ceil
                    | UnaryOp::Round
            ),
            I32 | I64 => matches!(op, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Not),
            Bool => *op == UnaryOp::Not,
            _ => false,
        },
        Node::Binary { op, .. } => {
            use BinaryOp::*;
            match dtype {
                F32 | F64 => matches!(op, Add | Sub | Mul | Div | Max | Min),
                I32 => matches!(
                    op,
                    Add | Sub | Mul | And | Or | Xor | Max | Min | Shl | ShrLogical | ShrArithmetic
                ),
                I64 => matches!(
                    op,
                    Add | Sub | And | Or | Xor | Max | Min | Shl | ShrLogical
                ),
                Bool => matches!(op, And | Or | Xor),
                _ => false,
            }
        }
        Node::Compare { op, .. } => match operand {
            Some(F32 | F64 | I32 | I64) => true,
            Some(Bool) => matches!(op, CompareOp::Eq | CompareOp::Ne),
            _ => false,
        },
        Node::Select { .. } => true,
        Node::Convert { .. } => match (operand, dtype) {
            (Some(from), to) if from == to => true,
            (Some(I32), F32) | (Some(F32), I32) => !wide,
            (Some(Bool), F32 | F64 | I32 | I64) => true,
            (Some(F32 | F64 | I32 | I64), Bool) => true,
            _ => false,
        },
        Node::Acc => false,
        Node::Fma { .. } | Node::ScaleB { .. } => matches!(dtype, F32 | F64),
        // Validation keeps the lane width.
        Node::Bitcast { .. } => true,
    }
}

/// Per node, the operands whose register it may take over (`allocate_except`), preferred
/// first: an FMA's addend (`vfmadd231` accumulates into it), else a factor (`vfmadd213`
/// multiplies into it); a bitcast's operand (then it is no instruction at all). A bit-select
/// OR gets an FMA's hints through `bit_select::allocation_view`. The emitters of all three
/// read that operand before they write the destination (`vpternlogd` reads its three
/// sources at once); without these a polynomial's every step and every bitcast cost a
/// register copy.
fn reuse_hints(nodes: &[KernelNode]) -> Vec<Vec<u32>> {
    nodes
        .iter()
        .map(|kn| match kn.node {
            Node::Fma { a, b, c } => vec![c, a, b],
            Node::Bitcast { x } => vec![x],
            _ => Vec::new(),
        })
        .collect()
}

/// The most accumulators a reduction gets besides [`ACC_REG`].
const MAX_EXTRA_ACCS: usize = 3;

/// The most varying nodes a reduction's body may have and still get extra accumulators.
const SHORT_BODY_NODES: usize = 6;

/// Whether `k`'s per-point work is so little that its loop waits on the combine's latency
/// (a float max is three dependent instructions per vector, an add four cycles), not on
/// issuing the body: then independent accumulators let several vectors be in flight. A long
/// body (an `exp`) already overlaps the combine, and unrolling it would only grow the code.
fn short_body(k: &LoopKernel, live: &[bool], uniform: &[bool]) -> bool {
    let varying = k
        .nodes
        .iter()
        .enumerate()
        .filter(|&(i, kn)| live[i] && !uniform[i] && !matches!(kn.node, Node::Const { .. }))
        .count();
    varying <= SHORT_BODY_NODES
}

/// The largest stride (in elements) a gathered load may have: its lane offsets, up to
/// `7 * stride`, must fit the gather's signed 32-bit indices.
const MAX_GATHER_STRIDE: u64 = (i32::MAX / 8) as u64;

/// The vector plan for `k`, or `None` when the scalar loops must run it (see the module doc).
/// `zmm` (the AVX-512 tier) asks for 512-bit vectors, which a kernel gets unless it has a
/// strided load that cannot read through zmm tiles (gathers have a ymm form only).
pub(crate) fn plan(
    k: &LoopKernel,
    live: &[bool],
    reassociate: bool,
    zmm: bool,
) -> Option<VectorPlan> {
    let (p, rank) = (k.parallel_rank as usize, k.dims.len());
    let result_dtype = k.nodes.get(k.result as usize)?.dtype;
    let mut wide = lane_class(result_dtype).ok()??;
    match k.reduction {
        // Elementwise: the innermost parallel dim, stored contiguously.
        None => {
            if p == 0 || p != rank || k.store.map.strides.get(p - 1) != Some(&1) {
                return None;
            }
        }
        // A reduction whose innermost dim is reduced: lanes accumulate separately and are
        // combined at the end of each run (see `vector_reduce.rs`). Float sums are thereby
        // reassociated, which the kernel semantics allow in default mode (`reassociate`, from
        // `Options::reassociate`); float products are not vectorized
        // (reordering them can overflow or underflow differently), nor i64 products (no AVX2
        // multiply).
        Some(op) => {
            let ok = match op {
                ReduceOp::Sum => reassociate || !result_dtype.is_float(),
                ReduceOp::Max | ReduceOp::Min => true,
                ReduceOp::Prod => result_dtype == DType::I32,
            };
            if !ok || rank == p {
                return None;
            }
        }
    }
    let inner = rank - 1;
    let n = k.nodes.len();
    let mut gathered = vec![false; n];
    let mut uniform = vec![false; n];
    let mut needs_vec = vec![false; n];
    for (i, kn) in k.nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        uniform[i] = match &kn.node {
            Node::Load { binding, map } => {
                // Elementwise: a point must not see a later point's store early. With a
                // reduction the store follows the whole inner loop, so nothing moves across it.
                let elementwise = k.reduction.is_none();
                if elementwise && *binding == k.store.binding && *map != k.store.map {
                    return None;
                }
                match map.strides.get(inner) {
                    Some(0) => true,
                    Some(1) => false,
                    // Any other stride (a transposing read, a strided slice) is a gather:
                    // elementwise only, so a reduction's masked tail never meets one.
                    Some(s) if elementwise && s.unsigned_abs() <= MAX_GATHER_STRIDE => {
                        gathered[i] = true;
                        false
                    }
                    _ => return None,
                }
            }
            Node::Gather {
                binding,
                map,
                index,
                ..
            } => {
                if k.reduction.is_none() && *binding == k.store.binding {
                    return None;
                }
                map.strides.get(inner) == Some(&0) && *uniform.get(*index as usize)?
            }
            Node::Const { .. } => true,
            Node::Index { dim, .. } => *dim != Some(inner as u32),
            other => other.operands().iter().all(|&o| uniform[o as usize]),
        };
        if !uniform[i] {
            needs_vec[i] = true;
            for o in kn.node.operands() {
                needs_vec[o as usize] = true;
            }
        }
    }
    needs_vec[k.result as usize] = true;
    // A kept value is stored a whole vector at a time, contiguously.
    if let Some(keep) = &k.keep {
        let dtype = k.nodes.get(keep.node as usize)?.dtype;
        let contiguous = keep.map.strides.get(inner) == Some(&1);
        if !contiguous || !matches!(dtype, DType::F32 | DType::F64 | DType::I32 | DType::I64) {
            return None;
        }
        *needs_vec.get_mut(keep.node as usize)? = true;
    }
    // One lane width for every vector value.
    let mut class: Option<bool> = Some(wide);
    for (i, kn) in k.nodes.iter().enumerate() {
        if !needs_vec[i] {
            continue;
        }
        match (lane_class(kn.dtype).ok()?, class) {
            (Some(c), Some(w)) if c != w => return None,
            (Some(c), None) => class = Some(c),
            _ => {}
        }
    }
    wide = class?;
    for (i, kn) in k.nodes.iter().enumerate() {
        if needs_vec[i] && !uniform[i] {
            let operand = kn
                .node
                .operands()
                .last()
                .and_then(|&o| k.nodes.get(o as usize))
                .map(|o| o.dtype);
            let operand = match kn.node {
                Node::Select { .. } => Some(kn.dtype),
                _ => operand,
            };
            if !vectorizable(&kn.node, kn.dtype, operand, wide) {
                return None;
            }
        }
    }
    let reducing = k.reduction.is_some();
    // zmm code has no gather: a strided load needs zmm tiles, or the kernel runs in ymm.
    let zmm = zmm && tiled(k, &gathered, TileShape::of(wide, true)) == gathered;
    let end_reg = if zmm { END_ZMM_REG } else { END_REG };
    let regs: Vec<u8> = (FIRST_REG..end_reg)
        .filter(|&r| !reducing || r != ACC_REG)
        .collect();
    let (min_max, mut absorbed) = min_max_selects(k, live, &uniform);
    let or_and = if zmm {
        let (or_and, ands) = super::bit_select::or_and_selects(k, live, &uniform);
        for (gone, and) in absorbed.iter_mut().zip(ands) {
            *gone |= and;
        }
        or_and
    } else {
        vec![None; n]
    };
    let mask_reg = if zmm {
        super::vector_zmm::assign_masks(k, live, &uniform, &absorbed)
    } else {
        vec![None; n]
    };
    // A compare whose selects read its opmask, or that no code reads at all, needs no home.
    let no_home: Vec<bool> = mask_reg
        .iter()
        .zip(&absorbed)
        .map(|(m, &gone)| m.is_some() || gone)
        .collect();
    // The allocator sees each bit-select OR as the three-input node it becomes.
    let nodes = super::bit_select::allocation_view(&k.nodes, &or_and);
    let reuse = reuse_hints(&nodes);
    let (home, mut slots) = allocate_except(
        &nodes,
        &k.roots(),
        &uniform,
        &needs_vec,
        &no_home,
        &reuse,
        &regs,
    );
    // A reduction spills its accumulator vector once per run, to combine the lanes.
    let acc_slot = reducing.then(|| {
        slots += 1;
        slots - 1
    });
    if zmm {
        // Nothing gathers or tiles: the slots so far are all homes, two 32-byte units each.
        slots *= 2;
    }
    // Float neg and abs take the sign mask, and so does AVX-512's float max (see
    // `emit_zbinary`): of varying lanes, or a max reduction's combine without the range form.
    let flips_sign = k.nodes.iter().enumerate().any(|(i, kn)| {
        let takes_sign = match kn.node {
            Node::Unary { op, .. } => matches!(op, UnaryOp::Neg | UnaryOp::Abs),
            Node::Binary { op, .. } => zmm && op == BinaryOp::Max,
            _ => false,
        };
        live[i] && !uniform[i] && kn.dtype.is_float() && takes_sign
    }) || (zmm
        && k.reduction == Some(ReduceOp::Max)
        && k.nodes.get(k.result as usize).is_some_and(|n| {
            let ranged = super::vector_reduce::has_range_form;
            n.dtype.is_float() && !ranged(zmm, BinaryOp::Max, n.dtype, &mask_reg)
        }));
    let sign = flips_sign.then(|| {
        match regs
            .iter()
            .copied()
            .find(|&r| !home.contains(&Home::Reg(r)))
        {
            Some(r) => SignMask::Reg(r),
            None => {
                let units = if zmm { 2 } else { 1 };
                slots += 2 * units;
                SignMask::Slot(slots - 2 * units)
            }
        }
    });
    let extra_accs = if reducing && short_body(k, live, &uniform) {
        let taken = |r: u8| home.contains(&Home::Reg(r)) || sign == Some(SignMask::Reg(r));
        regs.iter()
            .copied()
            .filter(|&r| !taken(r))
            .take(MAX_EXTRA_ACCS)
            .collect()
    } else {
        Vec::new()
    };
    let mut gather_slot = vec![None; n];
    let mut tile_slot = vec![None; n];
    let shape = TileShape::of(wide, zmm);
    let tiles = tiled(k, &gathered, shape);
    for i in (0..n).filter(|&i| gathered[i]) {
        if tiles[i] {
            tile_slot[i] = Some(slots);
            slots += shape.units(k.dims[rank - 1]);
        } else {
            gather_slot[i] = Some(slots);
            slots += 1;
        }
    }
    Some(VectorPlan {
        wide,
        zmm,
        mask_reg,
        min_max,
        absorbed,
        or_and,
        sign,
        uniform,
        home,
        slots,
        acc_slot,
        extra_accs,
        gather_slot,
        tile_slot,
    })
}

/// Lanes per vector iteration `k` gets on the AVX2 tier, or `None` when it runs scalar loops
/// (for tests that must know which path they exercise).
#[cfg(test)]
pub(crate) fn vector_lanes(k: &LoopKernel) -> Option<i64> {
    let live = k.live_nodes();
    plan(k, &live, true, false).map(|p| p.lanes())
}

/// Whether `k` reads a load through tiles on the AVX2 tier (for tests that must know).
#[cfg(test)]
pub(crate) fn vector_tiles(k: &LoopKernel) -> bool {
    let live = k.live_nodes();
    plan(k, &live, true, false).is_some_and(|p| p.tiles())
}
