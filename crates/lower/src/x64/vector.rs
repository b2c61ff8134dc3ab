//! The vector path: the innermost dim, 8 (32-bit lanes) or 4 (64-bit lanes) points per
//! iteration in ymm registers on the AVX2 tier, then a scalar tail. The AVX-512 tier runs the
//! same plan in zmm registers, 16 or 8 points per iteration (`vector_zmm.rs`), and ends it
//! with one `k1`-masked iteration instead of the tail (see [`Emitter::emit_masked_tail`]);
//! a kernel that gathers or reads through tiles keeps ymm vectors there, with the scalar tail.
//!
//! A kernel qualifies ([`plan`]) when either it is elementwise and stores contiguously along
//! the innermost dim (stride 1), or it reduces over its innermost dim (`vector_reduce.rs`);
//! and every load varying along that dim is contiguous (stride 1) or, in an elementwise
//! kernel, strided (a transposing read: one AVX2 gather per vector, its lane offsets
//! written to a frame slot once at kernel entry; or, when the innermost dim is a short run of
//! whole vectors and the next one out reads contiguously, tiles of whole source lines
//! transposed in registers into frame slots, see `tile.rs`; either way the scalar tail even
//! on AVX-512, whose masked tail has neither here); an elementwise kernel
//! reads the stored binding only through the store's own map (a point must not see a later
//! point's store early); and every node that varies along the dim has a vector form here (see
//! `vector_ops.rs`) in one lane width: f32/i32 (8 lanes) or f64/i64 (4 lanes), with bools as
//! all-ones/zero lane masks. Anything else is left to the scalar loops, which handle every
//! node.
//!
//! Nodes that do not vary along the dim ("uniform": constants, stride-0 loads, indices of
//! outer dims, and anything computed only from those) are evaluated once per run of the inner
//! loop by the scalar code, before it starts, and broadcast; so even an `exp` of a broadcast
//! operand costs one import call per row. Vector values live in ymm5–ymm15 (zmm5–zmm31) by a
//! linear scan over their live ranges (`emit::vregs`: varying values first, then uniform ones
//! for the whole loop), the rest in 32-byte (64-byte) frame slots; registers 0–4 are scratch.
//!
//! Bounds: the vector loop runs while `counter + lanes <= bound`, so it touches only points of
//! the space; the tail finishes the remaining points one at a time. Nothing reads or writes
//! past a binding's end.

use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use super::asm::{gpr, x64};
use super::evex_zmm::{zv, Zins, Zrm};
use super::kernel::Emitter;
use super::tile::TileShape;
use super::X64Tier;
use crate::emit::vregs::allocate_except;
pub(crate) use crate::emit::vregs::Home;
use crate::kernel::{LoopKernel, Node};
use crate::target::EmitError;

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
    /// Per node: its value does not vary along the vectorized dim.
    pub uniform: Vec<bool>,
    /// Per node: where its vector value lives.
    pub home: Vec<Home>,
    /// Number of 32-byte frame slots the homes (and the accumulator spill) use; a zmm home
    /// takes two (see [`Emitter::vslot`]).
    pub slots: usize,
    /// For a reduction: the slot the accumulator vector is spilled to for the final combine.
    pub acc_slot: Option<usize>,
    /// Per node: for a load that walks the vectorized dim with a stride other than 0 or 1,
    /// the slot holding its gather's lane offsets (`lane * stride`, one dword per lane),
    /// written once at kernel entry.
    pub gather_slot: Vec<Option<usize>>,
    /// Per node: for a load transposed through tiles (see `tile.rs`), the first of the
    /// consecutive slots its tiles' columns are written to; the slot after them holds the
    /// pointer to the current column while a run of the vector loop reads them.
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
        Node::Fma { .. } => matches!(dtype, F32 | F64),
        // Validation keeps the lane width.
        Node::Bitcast { .. } => true,
    }
}

/// The largest stride (in elements) a gathered load may have: its lane offsets, up to
/// `7 * stride`, must fit the gather's signed 32-bit indices.
const MAX_GATHER_STRIDE: u64 = (i32::MAX / 8) as u64;

/// The vector plan for `k`, or `None` when the scalar loops must run it (see the module doc).
/// `zmm` (the AVX-512 tier) asks for 512-bit vectors, which a kernel gets unless it gathers
/// or reads through tiles (those have ymm forms only).
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
    let zmm = zmm && !gathered.contains(&true);
    let end_reg = if zmm { END_ZMM_REG } else { END_REG };
    let regs: Vec<u8> = (FIRST_REG..end_reg)
        .filter(|&r| !reducing || r != ACC_REG)
        .collect();
    let mask_reg = if zmm {
        super::vector_zmm::assign_masks(k, live, &uniform)
    } else {
        vec![None; n]
    };
    // A compare whose selects read its opmask needs no vector home.
    let no_home: Vec<bool> = mask_reg.iter().map(Option::is_some).collect();
    let (home, mut slots) =
        allocate_except(&k.nodes, k.result, &uniform, &needs_vec, &no_home, &regs);
    // A reduction spills its accumulator vector once per run, to combine the lanes.
    let acc_slot = reducing.then(|| {
        slots += 1;
        slots - 1
    });
    if zmm {
        // Nothing gathers or tiles: the slots so far are all homes, two 32-byte units each.
        slots *= 2;
    }
    let mut gather_slot = vec![None; n];
    let mut tile_slot = vec![None; n];
    let mut tile_bytes = 0;
    for (i, kn) in k.nodes.iter().enumerate() {
        let Node::Load { map, .. } = &kn.node else {
            continue;
        };
        if !gathered[i] {
            continue;
        }
        let shape = TileShape::of(wide);
        let tile_slots = shape.slots(k.dims[rank - 1]) + 1;
        if super::tile::tileable(k, &map.strides, shape)
            && tile_bytes + 32 * tile_slots <= super::tile::TILE_BUDGET
        {
            tile_slot[i] = Some(slots);
            slots += tile_slots;
            tile_bytes += 32 * tile_slots;
        } else {
            gather_slot[i] = Some(slots);
            slots += 1;
        }
    }
    Some(VectorPlan {
        wide,
        zmm,
        mask_reg,
        uniform,
        home,
        slots,
        acc_slot,
        gather_slot,
        tile_slot,
    })
}

impl Emitter<'_> {
    /// The innermost parallel dim `d`, vectorized, with its scalar tail.
    pub(crate) fn emit_vector_dim(&mut self, d: usize) -> Result<(), EmitError> {
        let Some(plan) = self.vplan.take() else {
            return self.emit_loop(d, |e, _| e.emit_parallel_point());
        };
        let result = self.emit_vector_loops(d, &plan);
        self.vplan = Some(plan);
        result
    }

    fn emit_vector_loops(&mut self, d: usize, plan: &VectorPlan) -> Result<(), EmitError> {
        let counter = self.lay.counter[d];
        let lanes = plan.lanes();
        let [end, vtop, vcheck, ttop, tcheck] = [(); 5].map(|_| self.ops.new_dynamic_label());
        self.emit_counter_start(d);
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; cmp QWORD [rsp + counter], rcx ; jae =>end);
        self.emit_uniform_prefix(plan)?;
        let tile_pointers = self.emit_tile_pointers(plan);
        self.pin_loop_state(d, &tile_pointers);
        x64!(self.ops; jmp =>vcheck ; =>vtop);
        self.emit_vector_body(plan)?;
        self.emit_vstore(plan)?;
        self.add_to_slot(counter, lanes);
        for &slot in &tile_pointers {
            self.add_to_slot(slot, TileShape::of(plan.wide).step());
        }
        self.emit_map_step(d, lanes);
        x64!(self.ops; =>vcheck);
        self.emit_vector_loop_check(d, lanes, vtop);
        self.unpin();
        if self.tier == X64Tier::Avx512 && !plan.needs_scalar_tail() {
            let done = self.ops.new_dynamic_label();
            self.emit_masked_tail(d, done, |e| {
                e.emit_vector_body(plan)?;
                e.emit_vstore(plan)
            })?;
            // Later code may call imports compiled as SSE code.
            x64!(self.ops; =>done ; vzeroupper ; =>end);
            self.emit_map_restore(d);
            return Ok(());
        }
        x64!(self.ops
            // The tail may call imports compiled as SSE code.
            ; vzeroupper
            ; jmp =>tcheck ; =>ttop
        );
        self.emit_parallel_point()?;
        x64!(self.ops; add QWORD [rsp + counter], 1);
        self.emit_map_step(d, 1);
        x64!(self.ops; =>tcheck);
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; cmp QWORD [rsp + counter], rcx ; jb =>ttop ; =>end);
        self.emit_map_restore(d);
        Ok(())
    }

    /// Jumps to `top` while another whole vector fits in dim `d` (counter + lanes <= bound):
    /// against a constant bound of at least a vector as counter <= bound - lanes on the
    /// pinned counter, one compare.
    pub(crate) fn emit_vector_loop_check(&mut self, d: usize, lanes: i64, top: DynamicLabel) {
        let counter = self.lay.counter[d];
        let last_start = (d > 0)
            .then(|| self.k.dims[d].checked_sub(lanes as u64))
            .flatten()
            .and_then(|b| i32::try_from(b).ok());
        match (last_start, self.pinned_reg(counter)) {
            (Some(last), Some(reg)) => x64!(self.ops; cmp Rq(reg), last ; jbe =>top),
            _ => {
                self.emit_bound(d, gpr::RCX);
                self.slot_to_rax(counter);
                x64!(self.ops; add rax, lanes as i32 ; cmp rax, rcx ; jbe =>top);
            }
        }
    }

    /// The uniform values at the first point of a run of the inner loop (they hold for all of
    /// it), computed by the scalar code and broadcast to their vector homes.
    pub(crate) fn emit_uniform_prefix(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        for i in 0..self.k.nodes.len() {
            let konst = matches!(self.k.nodes[i].node, Node::Const { .. });
            if self.live[i] && plan.uniform[i] && !konst {
                self.emit_node(i)?;
            }
        }
        for i in 0..self.k.nodes.len() {
            if plan.uniform[i] && plan.home[i] != Home::None {
                self.emit_broadcast(plan, i)?;
            }
        }
        Ok(())
    }

    /// Every varying node for one vector of points.
    pub(crate) fn emit_vector_body(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        for i in 0..self.k.nodes.len() {
            if self.live[i] && !plan.uniform[i] {
                if plan.zmm {
                    self.emit_znode(plan, i)?;
                } else {
                    self.emit_vnode(plan, i)?;
                }
            }
        }
        Ok(())
    }

    /// The points left after the vector loop (fewer than a vector's worth), as one iteration
    /// with mask `k1` covering exactly them: `body` runs with masked loads and stores, then
    /// the map offsets advance by the remaining count. Jumps to `done` when none remain.
    pub(crate) fn emit_masked_tail(
        &mut self,
        d: usize,
        done: DynamicLabel,
        body: impl FnOnce(&mut Self) -> Result<(), EmitError>,
    ) -> Result<(), EmitError> {
        let counter = self.lay.counter[d];
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops
            ; sub rcx, QWORD [rsp + counter] ; jz =>done
            ; mov eax, 1 ; shl eax, cl ; sub eax, 1
        );
        self.ops.extend(super::evex::kmovw_from_gpr(1, gpr::RAX));
        self.masked = true;
        let result = body(self);
        self.masked = false;
        result?;
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; sub rcx, QWORD [rsp + counter]);
        self.emit_map_step_rcx(d);
        Ok(())
    }

    /// Stores the result vector at the store map's offset.
    fn emit_vstore(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        let src = self.vsrc(plan, self.k.result, 0)?;
        let map = self.lay.store_map;
        let b = self.k.store.binding as i32 * 8;
        self.slot_to_rax(map);
        x64!(self.ops; mov rcx, QWORD [r12 + b]);
        if plan.zmm {
            self.zstore(plan.wide, src);
        } else if self.masked {
            let (lanes, mem) = super::vector_ops::masked_operand(plan.wide);
            self.ops
                .extend(super::evex::store_masked(lanes, src, mem, 1));
        } else if plan.wide {
            x64!(self.ops; vmovups [rcx + rax * 8], Ry(src));
            if let Some(ahead) = self.store_prefetch_distance(plan) {
                x64!(self.ops; prefetcht1 [rcx + rax * 8 + ahead]);
            }
        } else {
            x64!(self.ops; vmovups [rcx + rax * 4], Ry(src));
            if let Some(ahead) = self.store_prefetch_distance(plan) {
                x64!(self.ops; prefetcht1 [rcx + rax * 4 + ahead]);
            }
        }
        Ok(())
    }

    /// Node `i`'s scalar value, broadcast to every lane of its home (a bool becomes a mask).
    fn emit_broadcast(&mut self, plan: &VectorPlan, i: usize) -> Result<(), EmitError> {
        let (slot, dtype) = (self.lay.node[i], self.k.nodes[i].dtype);
        let dst = self.vdst(plan, i);
        let from = if dtype == DType::Bool {
            let tmp = self.lay.tmp;
            x64!(self.ops; movzx eax, BYTE [rsp + slot] ; neg rax ; mov QWORD [rsp + tmp], rax);
            tmp
        } else {
            slot
        };
        // dynasm 5.1 encodes `vbroadcastss ymm, m32` with VEX.L = 0 (an xmm broadcast), so
        // the 32-bit case uses AVX2's `vpbroadcastd`, which it encodes correctly.
        if plan.zmm {
            let op = zv::pbroadcast_mem(plan.wide);
            self.z(Zins::new(op, dst, 0, Zrm::rsp(from)));
        } else if plan.wide {
            x64!(self.ops; vbroadcastsd Ry(dst), QWORD [rsp + from]);
        } else {
            x64!(self.ops; vpbroadcastd Ry(dst), DWORD [rsp + from]);
        }
        self.vfinish(plan, i, dst);
        Ok(())
    }

    /// The register holding node `id`'s vector value, loading it into `scratch` from its
    /// slot if it lives in memory.
    pub(crate) fn vsrc(
        &mut self,
        plan: &VectorPlan,
        id: u32,
        scratch: u8,
    ) -> Result<u8, EmitError> {
        match plan.home.get(id as usize) {
            Some(Home::Reg(r)) => Ok(*r),
            Some(Home::Slot(s)) => {
                let at = self.vslot(plan, *s);
                if plan.zmm {
                    self.z(Zins::new(zv::load(plan.wide), scratch, 0, Zrm::rsp(at)));
                } else {
                    x64!(self.ops; vmovups Ry(scratch), [rsp + at]);
                }
                Ok(scratch)
            }
            _ => Err(self.unsupported(format!("node {id} has no vector value"))),
        }
    }

    /// Puts node `id`'s vector value in register `reg` (a move from its register, or a load
    /// from its slot).
    pub(crate) fn vsrc_into(
        &mut self,
        plan: &VectorPlan,
        id: u32,
        reg: u8,
    ) -> Result<(), EmitError> {
        match plan.home.get(id as usize) {
            Some(Home::Reg(r)) => {
                if *r != reg && plan.zmm {
                    self.z(Zins::rrr(zv::mov(plan.wide), reg, 0, *r));
                } else if *r != reg {
                    x64!(self.ops; vmovaps Ry(reg), Ry(*r));
                }
                Ok(())
            }
            Some(Home::Slot(s)) => {
                let at = self.vslot(plan, *s);
                if plan.zmm {
                    self.z(Zins::new(zv::load(plan.wide), reg, 0, Zrm::rsp(at)));
                } else {
                    x64!(self.ops; vmovups Ry(reg), [rsp + at]);
                }
                Ok(())
            }
            _ => Err(self.unsupported(format!("node {id} has no vector value"))),
        }
    }

    /// The register node `i`'s vector result is computed into (its home, or ymm0 when it
    /// lives in a slot; `vfinish` then stores it).
    pub(crate) fn vdst(&self, plan: &VectorPlan, i: usize) -> u8 {
        match plan.home.get(i) {
            Some(Home::Reg(r)) => *r,
            _ => 0,
        }
    }

    /// Stores `reg` to node `i`'s slot if that is where it lives.
    pub(crate) fn vfinish(&mut self, plan: &VectorPlan, i: usize, reg: u8) {
        if let Some(Home::Slot(s)) = plan.home.get(i) {
            let at = self.vslot(plan, *s);
            if plan.zmm {
                self.z(Zins::new(zv::store(plan.wide), reg, 0, Zrm::rsp(at)));
            } else {
                x64!(self.ops; vmovups [rsp + at], Ry(reg));
            }
        }
    }

    /// The frame offset of vector home slot `s` (zmm homes take two 32-byte slots).
    pub(crate) fn vslot(&self, plan: &VectorPlan, s: usize) -> i32 {
        self.lay.vec_slot(s * (plan.vector_bytes() / 32) as usize)
    }
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
