//! `or(keep, and(lhs, rhs))` in one AVX-512 instruction: the bit select that the math
//! expansions end with (`Builder::with_sign_of`, a magnitude given `x`'s sign bit: tanh, erf,
//! pow), which `vpternlogd` computes from its three inputs at once, one operation instead of
//! an AND and an OR on ports that the expansions keep busy. The AND, read by this OR alone, is
//! then never emitted (the plan counts it among its absorbed nodes and gives it no home), and
//! the register allocator sees the OR as the three-input node it becomes, so the AND's
//! operands stay live until the OR reads them ([`allocation_view`]).

use std::borrow::Cow;

use accy_ir::{BinaryOp, DType};

use super::evex_zmm::{zv, Zins};
use super::kernel::Emitter;
use super::vector::VectorPlan;
use crate::kernel::{KernelNode, LoopKernel, Node};
use crate::target::EmitError;

/// An OR computed as a bit select: `keep | (lhs & rhs)`, `and` being the AND node it absorbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OrAnd {
    pub keep: u32,
    pub and: u32,
    pub lhs: u32,
    pub rhs: u32,
}

/// `vpternlogd`'s truth table for `A | (B & C)`, A being the destination's old value, B and
/// C the other two sources.
const A_OR_B_AND_C: u8 = 0xF8;
/// `B | (A & C)`: for a destination that holds one of the AND's operands.
const B_OR_A_AND_C: u8 = 0xEC;

/// Per node of `k`: for an integer OR whose one operand is an AND read by nothing else (and
/// not one of [`LoopKernel::roots`], which are read after the body), varying as the OR is,
/// the bit select it is; and per node whether it is such an AND. `live` and `uniform` are
/// the plan's.
pub(crate) fn or_and_selects(
    k: &LoopKernel,
    live: &[bool],
    uniform: &[bool],
) -> (Vec<Option<OrAnd>>, Vec<bool>) {
    let n = k.nodes.len();
    let varying = |i: usize| live.get(i) == Some(&true) && uniform.get(i) == Some(&false);
    let mut readers = vec![0usize; n];
    for (j, kn) in k.nodes.iter().enumerate() {
        if varying(j) {
            for o in kn.node.operands() {
                if let Some(r) = readers.get_mut(o as usize) {
                    *r += 1;
                }
            }
        }
    }
    let bits = |d: DType| matches!(d, DType::I32 | DType::I64);
    let mut or_and = vec![None; n];
    let mut absorbed = vec![false; n];
    for (j, kn) in k.nodes.iter().enumerate() {
        let Node::Binary {
            op: BinaryOp::Or,
            lhs,
            rhs,
        } = kn.node
        else {
            continue;
        };
        if !varying(j) || !bits(kn.dtype) || lhs == rhs {
            continue;
        }
        for (and, keep) in [(rhs, lhs), (lhs, rhs)] {
            let a = and as usize;
            let Some(&Node::Binary {
                op: BinaryOp::And,
                lhs: l,
                rhs: r,
            }) = k.nodes.get(a).map(|x| &x.node)
            else {
                continue;
            };
            // Read once, by this OR (whose operands differ): no other OR can claim it.
            let single = readers[a] == 1 && !k.roots().contains(&and);
            if varying(a) && k.nodes[a].dtype == kn.dtype && single {
                or_and[j] = Some(OrAnd {
                    keep,
                    and,
                    lhs: l,
                    rhs: r,
                });
                absorbed[a] = true;
                break;
            }
        }
    }
    (or_and, absorbed)
}

/// The nodes as the register allocator is to see them: each bit-select OR as a three-input
/// node reading its kept operand and its AND's two (an FMA's shape, the kept value as the
/// addend, so that the OR takes over its register first where it dies there, as an FMA
/// does its accumulator's), and each absorbed AND reading nothing.
pub(crate) fn allocation_view<'a>(
    nodes: &'a [KernelNode],
    or_and: &[Option<OrAnd>],
) -> Cow<'a, [KernelNode]> {
    if or_and.iter().all(Option::is_none) {
        return Cow::Borrowed(nodes);
    }
    let mut view = nodes.to_vec();
    for (j, sel) in or_and.iter().enumerate() {
        if let Some(sel) = sel {
            if let Some(x) = view.get_mut(j) {
                x.node = Node::Fma {
                    a: sel.lhs,
                    b: sel.rhs,
                    c: sel.keep,
                };
            }
            if let Some(x) = view.get_mut(sel.and as usize) {
                x.node = Node::Const { bits: 0 };
            }
        }
    }
    Cow::Owned(view)
}

impl Emitter<'_> {
    /// The bit select `sel` into `zmm(dst)`: one `vpternlogd`, whose destination is also its
    /// first source: the kept value's register or an AND operand's, when the allocator gave
    /// the destination one of those (it dies there), else a copy of the kept value.
    pub(crate) fn emit_or_and(
        &mut self,
        plan: &VectorPlan,
        sel: OrAnd,
        dst: u8,
    ) -> Result<(), EmitError> {
        let keep = self.vsrc(plan, sel.keep, 0)?;
        let lhs = self.vsrc(plan, sel.lhs, 1)?;
        let rhs = self.vsrc(plan, sel.rhs, 2)?;
        let (b, c, imm) = if dst == keep {
            (lhs, rhs, A_OR_B_AND_C)
        } else if dst == lhs {
            (keep, rhs, B_OR_A_AND_C)
        } else if dst == rhs {
            (keep, lhs, B_OR_A_AND_C)
        } else {
            self.z(Zins::rrr(zv::mov(false), dst, 0, keep));
            (lhs, rhs, A_OR_B_AND_C)
        };
        self.z(Zins::rrr(zv::pternlog(false), dst, b, c).imm(imm));
        Ok(())
    }
}
