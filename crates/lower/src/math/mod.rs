//! Vector math from one source: each transcendental written once as an expansion into kernel
//! nodes (range reduction, a polynomial evaluated with [`Node::Fma`], exponent manipulation
//! with [`Node::Bitcast`] and integer shifts, special values with compares and selects), so
//! every backend — scalar loops, AVX2/AVX-512, NEON — gets the same arithmetic from the same
//! description, branch-free, and bit-identical to the kernel interpreter running the
//! expanded kernel.
//!
//! [`expand`] replaces the `Unary` nodes of `exp`, `log`, `tanh`, `sigmoid`, `erf`, `sin` and
//! `cos` of every kernel (loop bodies and contraction epilogues) by their expansions, and
//! `pow`: a float `pow` whose exponent is a constant 0, 1, 2, 3, 4, 0.5 or -1 by products, a
//! square root or a division, any other f32 `pow` by the general expansion (`power.rs`); an
//! f64 `pow` by another exponent still calls the import table per element.
//! [`crate::compile()`] calls it in default mode
//! ([`crate::Options::reassociate`]) on targets with a fused multiply-add
//! ([`crate::Target::has_fma`]); exact mode, and the SSE2 tier (scalar code only, no FMA),
//! keep calling the runtime's import table, which is bit-identical to the reference
//! interpreter. The accuracy of each expansion — within the bounds `accy_ir::UnaryOp`
//! states — is measured over every f32 input by `cargo xtask ulp` and recorded, with how each
//! expansion works, in `docs/accuracy.md`; `sqrt` and `rsqrt` need no expansion (the vector
//! paths use the correctly rounded instructions).
//!
//! Files: `builder.rs` (the node-appending helper), one file per family (`exp.rs`, …); the
//! coefficients come from `tools/remez.py`.

mod builder;
mod erf;
mod exp;
mod hyperbolic;
mod log;
mod power;
mod trig;

use std::collections::HashMap;

use accy_ir::{BinaryOp, DType, UnaryOp};

use crate::kernel::{Kernel, KernelError, KernelNode, Node, NodeId};
use builder::{Builder, Format, V};

/// The expansion of a one-operand function in the builder's format.
type Expansion = fn(&mut Builder<'_>, V) -> V;

/// The expansion of unary `op`, if this module has one.
fn unary_expansion(op: UnaryOp) -> Option<Expansion> {
    match op {
        UnaryOp::Exp => Some(exp::exp),
        UnaryOp::Log => Some(log::log),
        UnaryOp::Tanh => Some(hyperbolic::tanh),
        UnaryOp::Sigmoid => Some(hyperbolic::sigmoid),
        UnaryOp::Erf => Some(erf::erf),
        UnaryOp::Sin => Some(trig::sin),
        UnaryOp::Cos => Some(trig::cos),
        _ => None,
    }
}

/// Whether `node` (of `dtype`) is a call this module expands, or (a float `pow`) may expand,
/// depending on its exponent (see `power.rs`).
pub(crate) fn expands(node: &Node, dtype: DType) -> bool {
    let float = matches!(dtype, DType::F32 | DType::F64);
    match node {
        Node::Unary { op, .. } => float && unary_expansion(*op).is_some(),
        Node::Binary {
            op: BinaryOp::Pow, ..
        } => float,
        _ => false,
    }
}

/// The value of constant node `id` of `nodes` as an f64, if it is a float constant of
/// `dtype` (the operand of a well-typed node of that dtype; validation runs after expansion).
fn constant(nodes: &[KernelNode], id: NodeId, dtype: DType) -> Option<f64> {
    let n = nodes.get(id as usize).filter(|n| n.dtype == dtype)?;
    let Node::Const { bits } = n.node else {
        return None;
    };
    match n.dtype {
        DType::F32 => Some(f64::from(f32::from_bits(bits as u32))),
        DType::F64 => Some(f64::from_bits(bits)),
        _ => None,
    }
}

/// Replaces every transcendental node of `kernels` by its expansion (see the module doc) and
/// validates the result. A kernel without one is left as it is. With `scale_b` (a target
/// whose code scales by a power of two in one instruction) the expansions use
/// [`Node::ScaleB`] for it. The result, a kept value and the nodes listed at most zero are
/// renumbered with the nodes.
pub(crate) fn expand(kernels: &mut [Kernel], scale_b: bool) -> Result<(), KernelError> {
    for kernel in kernels.iter_mut() {
        match kernel {
            Kernel::Loop(k) => {
                if let Some((nodes, new_id)) = expand_nodes(&k.nodes, &k.at_most_zero, scale_b) {
                    k.nodes = nodes;
                    k.result = renumbered(&k.name, &new_id, k.result)?;
                    if let Some(keep) = &mut k.keep {
                        keep.node = renumbered(&k.name, &new_id, keep.node)?;
                    }
                    for n in &mut k.at_most_zero {
                        *n = renumbered(&k.name, &new_id, *n)?;
                    }
                }
            }
            Kernel::Contraction(k) => {
                if let Some((nodes, new_id)) = expand_nodes(&k.epilogue, &[], scale_b) {
                    k.epilogue = nodes;
                    k.result = renumbered(&k.name, &new_id, k.result)?;
                }
            }
        }
        kernel.validate()?;
    }
    Ok(())
}

/// The new id of node `id` of kernel `name` in `new_id` ([`expand_nodes`]'s), or the error
/// of a result that names no node.
fn renumbered(name: &str, new_id: &[NodeId], id: NodeId) -> Result<NodeId, KernelError> {
    new_id
        .get(id as usize)
        .copied()
        .ok_or_else(|| KernelError::BadResult {
            kernel: name.to_owned(),
            result: id,
            count: new_id.len(),
        })
}

/// `nodes` with each expandable node replaced by its expansion, and each old node's new id;
/// `None` when nothing expands. An `exp` of a node in `at_most_zero` (at most zero or NaN,
/// see [`crate::kernel::LoopKernel::at_most_zero`]) has no overflow guard where `scale_b`
/// keeps a NaN argument NaN by itself (without it, NaN needs the guard).
fn expand_nodes(
    nodes: &[KernelNode],
    at_most_zero: &[NodeId],
    scale_b: bool,
) -> Option<(Vec<KernelNode>, Vec<NodeId>)> {
    if !nodes.iter().any(|n| expands(&n.node, n.dtype)) {
        return None;
    }
    let mut out: Vec<KernelNode> = Vec::with_capacity(nodes.len() * 8);
    let mut consts: HashMap<(DType, u64), NodeId> = HashMap::new();
    let mut new_id: Vec<NodeId> = Vec::with_capacity(nodes.len());
    for n in nodes {
        // Operands always name earlier nodes (validation), so they are mapped already.
        let node = n
            .node
            .map_operands(|o| new_id.get(o as usize).copied().ok_or(()))
            .ok()?;
        let fmt = Format::of(n.dtype);
        let below_overflow = scale_b
            && matches!(n.node, Node::Unary { op: UnaryOp::Exp, x } if at_most_zero.contains(&x));
        let id = match (&node, fmt) {
            (Node::Unary { op, x }, Some(fmt)) if expands(&node, n.dtype) => {
                let b = &mut Builder::new(&mut out, &mut consts, fmt, scale_b);
                if below_overflow {
                    let reach = exp::Reach {
                        low: true,
                        high: false,
                    };
                    exp::exp_reaching(b, *x, reach)
                } else {
                    unary_expansion(*op)?(b, *x)
                }
            }
            (
                Node::Binary {
                    op: BinaryOp::Pow,
                    lhs,
                    rhs,
                },
                Some(fmt),
            ) if constant(&out, *rhs, n.dtype).is_some_and(power::supports) => {
                let c = constant(&out, *rhs, n.dtype)?;
                let mut b = Builder::new(&mut out, &mut consts, fmt, scale_b);
                power::pow_by_constant(&mut b, *lhs, c)?
            }
            (
                Node::Binary {
                    op: BinaryOp::Pow,
                    lhs,
                    rhs,
                },
                Some(fmt),
            ) if !fmt.wide() => {
                let mut b = Builder::new(&mut out, &mut consts, fmt, scale_b);
                power::pow(&mut b, *lhs, *rhs)?
            }
            (Node::Const { bits }, _) => {
                let key = (n.dtype, *bits);
                match consts.get(&key) {
                    Some(&v) => v,
                    None => {
                        out.push(KernelNode {
                            node,
                            dtype: n.dtype,
                        });
                        let v = (out.len() - 1) as NodeId;
                        consts.insert(key, v);
                        v
                    }
                }
            }
            _ => {
                out.push(KernelNode {
                    node,
                    dtype: n.dtype,
                });
                (out.len() - 1) as NodeId
            }
        };
        new_id.push(id);
    }
    Some((out, new_id))
}

#[cfg(test)]
mod tests;
