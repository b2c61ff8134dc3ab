//! `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss` (forward only), as their ONNX
//! function bodies define them.

use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, NodeResult};
use crate::node::Node;
use crate::ops::index::take_along_axis;
use crate::ops::norm::log_softmax_axis;

/// The loss of `x` (`[N, C, d…]`, log-probabilities) against integer `target` (`[N, d…]`):
/// `-x[n, target, d…] * weight[target]`, zero where `target == ignore_index`, then reduced
/// (`mean` divides by the summed weights of the counted elements).
fn nll(
    em: &mut Emitter,
    x: Val,
    target: Val,
    weight: Option<Val>,
    ignore_index: Option<i64>,
    reduction: &str,
) -> NodeResult<Val> {
    let dims = em.dims(x);
    let tdims = em.dims(target);
    if dims.len() < 2 || tdims.len() + 1 != dims.len() {
        return invalid(format!(
            "input {dims:?} and target {tdims:?} do not fit [N, C, …] and [N, …]"
        ));
    }
    let d = em.dtype(x);
    let t = em.convert(target, DType::I64)?;
    let ignored = match ignore_index {
        Some(i) => {
            let i = em.scalar_i64(i);
            Some(em.compare(CompareOp::Eq, t, i)?)
        }
        None => None,
    };
    // An ignored target may lie outside [0, C): read class 0 there instead.
    let safe = match ignored {
        Some(ig) => {
            let zero = em.scalar_i64(0);
            em.select(ig, zero, t)?
        }
        None => t,
    };
    let mut idx_dims = tdims.clone();
    idx_dims.insert(1, 1);
    let idx = em.reshape(safe, &idx_dims)?;
    let picked = take_along_axis(em, x, idx, 1)?;
    let picked = em.reshape(picked, &tdims)?;
    let mut loss = em.unary(UnaryOp::Neg, picked)?;
    let zero = em.scalar(d, 0.0);
    let mut w = match weight {
        Some(wv) => Some(em.gather(wv, safe, 0)?),
        None => None,
    };
    if let Some(ig) = ignored {
        let one = em.scalar(d, 1.0);
        let base = w.unwrap_or(one);
        w = Some(em.select(ig, zero, base)?);
    }
    if let Some(wv) = w {
        loss = em.binary(BinaryOp::Mul, loss, wv)?;
    }
    let all: Vec<u32> = (0..tdims.len() as u32).collect();
    Ok(match reduction {
        "none" => loss,
        "sum" => em.reduce(ReduceOp::Sum, loss, &all)?,
        "mean" => {
            let s = em.reduce(ReduceOp::Sum, loss, &all)?;
            match w {
                Some(wv) => {
                    let total = em.reduce(ReduceOp::Sum, wv, &all)?;
                    em.binary(BinaryOp::Div, s, total)?
                }
                None => {
                    let n: u64 = tdims.iter().product();
                    em.binary_scalar(BinaryOp::Div, s, n as f64)?
                }
            }
        }
        r => return invalid(format!("reduction `{r}` must be none, sum or mean")),
    })
}

fn ignore_index(node: &Node) -> NodeResult<Option<i64>> {
    if node.has_attr("ignore_index") {
        Ok(Some(node.int("ignore_index", 0)?))
    } else {
        Ok(None)
    }
}

/// `NegativeLogLikelihoodLoss(input, target, weight?; ignore_index, reduction)`.
pub(super) fn nll_loss(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["ignore_index", "reduction"])?;
    let x = node.input(0)?;
    node.expect_float(em, x)?;
    let loss = nll(
        em,
        x,
        node.input(1)?,
        node.opt_input(2),
        ignore_index(node)?,
        &node.string("reduction", "mean")?,
    )?;
    Ok(vec![loss])
}

/// `SoftmaxCrossEntropyLoss(scores, labels, weights?; ignore_index, reduction)`: the NLL loss
/// of `log_softmax(scores)` over axis 1, and the log-probabilities as the optional output.
pub(super) fn softmax_cross_entropy(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["ignore_index", "reduction"])?;
    let x = node.input(0)?;
    node.expect_float(em, x)?;
    if em.rank(x) < 2 {
        return invalid("scores must be at least 2-D [N, C, …]");
    }
    let log_prob = log_softmax_axis(em, x, 1)?;
    let loss = nll(
        em,
        log_prob,
        node.input(1)?,
        node.opt_input(2),
        ignore_index(node)?,
        &node.string("reduction", "mean")?,
    )?;
    Ok(vec![loss, log_prob])
}
