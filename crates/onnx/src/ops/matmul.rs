//! Contractions: `MatMul` (NumPy `matmul` broadcasting), `Gemm`, `Einsum`.

use accy_ir::{BinaryOp, ReduceOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::helpers::broadcast_shape;
use crate::node::Node;

/// NumPy `matmul(a, b)`: 1-D operands gain a unit axis (dropped again from the result) and
/// the leading (batch) axes broadcast.
pub(crate) fn matmul(em: &mut Emitter, a: Val, b: Val) -> NodeResult<Val> {
    let (ad, bd) = (em.dims(a), em.dims(b));
    if ad.is_empty() || bd.is_empty() {
        return invalid("MatMul operands must have rank ≥ 1");
    }
    let (a1, b1) = (ad.len() == 1, bd.len() == 1);
    let a = if a1 { em.reshape(a, &[1, ad[0]])? } else { a };
    let b = if b1 { em.reshape(b, &[bd[0], 1])? } else { b };
    let (ad, bd) = (em.dims(a), em.dims(b));
    let (ra, rb) = (ad.len(), bd.len());
    let (m, k, k2, n) = (ad[ra - 2], ad[ra - 1], bd[rb - 2], bd[rb - 1]);
    if k != k2 {
        return invalid(format!(
            "MatMul of {ad:?} and {bd:?}: inner dims {k} and {k2} differ"
        ));
    }
    let batch = broadcast_shape(&ad[..ra - 2], &bd[..rb - 2])?;
    let product = if rb == 2 {
        // A shared right operand (a weight): contract a's last axis with b directly.
        let a = if ad[..ra - 2] == batch[..] {
            a
        } else {
            let mut full = batch.clone();
            full.extend_from_slice(&[m, k]);
            em.broadcast_to(a, &full)?
        };
        let last = (em.rank(a) - 1) as u32;
        em.dot(a, b, (&[], &[]), (&[last], &[0]))?
    } else {
        let nb = batch.len() as u32;
        let mut full_a = batch.clone();
        full_a.extend_from_slice(&[m, k]);
        let mut full_b = batch.clone();
        full_b.extend_from_slice(&[k, n]);
        let a = em.broadcast_to(a, &full_a)?;
        let b = em.broadcast_to(b, &full_b)?;
        let axes: Vec<u32> = (0..nb).collect();
        em.dot(a, b, (&axes, &axes), (&[nb + 1], &[nb]))?
    };
    let mut out = batch.clone();
    if !a1 {
        out.push(m);
    }
    if !b1 {
        out.push(n);
    }
    em.reshape(product, &out)
}

/// `MatMul(A, B)`.
pub(super) fn matmul_node(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    Ok(vec![matmul(em, node.input(0)?, node.input(1)?)?])
}

/// `Gemm(A, B, C?; alpha, beta, transA, transB)`: `alpha * A' B' + beta * C`.
pub(super) fn gemm(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["alpha", "beta", "transA", "transB"])?;
    let (a, b) = (node.input(0)?, node.input(1)?);
    if em.rank(a) != 2 || em.rank(b) != 2 {
        return invalid("Gemm operands must be 2-D");
    }
    let ca = if node.int("transA", 0)? != 0 { 0 } else { 1 };
    let cb = if node.int("transB", 0)? != 0 { 1 } else { 0 };
    let mut y = em.dot(a, b, (&[], &[]), (&[ca], &[cb]))?;
    let alpha = f64::from(node.float("alpha", 1.0)?);
    if alpha != 1.0 {
        y = em.binary_scalar(BinaryOp::Mul, y, alpha)?;
    }
    if let Some(c) = node.opt_input(2) {
        let beta = f64::from(node.float("beta", 1.0)?);
        let c = if beta == 1.0 {
            c
        } else {
            em.binary_scalar(BinaryOp::Mul, c, beta)?
        };
        let c = em.broadcast_to(c, &em.dims(y))?;
        y = em.binary(BinaryOp::Add, y, c)?;
    }
    Ok(vec![y])
}

/// One operand of an einsum with one label per axis.
#[derive(Clone, Debug)]
struct Term {
    v: Val,
    labels: Vec<char>,
}

/// Labels standing for ellipsis axes (counted from the right), outside what equations use.
fn ellipsis_label(j: usize) -> char {
    char::from_u32(0x2460 + j as u32).unwrap_or('\u{2460}')
}

/// The labels of one side of an equation for an operand of `rank` axes.
fn parse_labels(s: &str, rank: Option<usize>, ellipsis: &mut usize) -> NodeResult<Vec<char>> {
    let s = s.trim();
    let (before, after) = match s.split_once("...") {
        Some((b, a)) => (b, Some(a)),
        None => (s, None),
    };
    let letters = |t: &str| -> NodeResult<Vec<char>> {
        t.chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    Ok(c)
                } else {
                    invalid(format!("unexpected `{c}` in the equation"))
                }
            })
            .collect()
    };
    let mut out = letters(before)?;
    if let Some(after) = after {
        let tail = letters(after)?;
        let n = match rank {
            Some(r) => r
                .checked_sub(out.len() + tail.len())
                .ok_or_else(|| crate::error::NodeError::Invalid("too many labels".into()))?,
            None => *ellipsis,
        };
        *ellipsis = (*ellipsis).max(n);
        out.extend((0..n).rev().map(ellipsis_label));
        out.extend(tail);
    }
    if let Some(r) = rank {
        if out.len() != r {
            return invalid(format!("`{s}` has {} labels for rank {r}", out.len()));
        }
    }
    Ok(out)
}

/// Takes the diagonal over the two axes at positions `i < j` (equal dims): moves them last,
/// flattens them and keeps every (n+1)-th element.
fn diagonal(em: &mut Emitter, t: Term, i: usize, j: usize) -> NodeResult<Term> {
    let dims = em.dims(t.v);
    if dims[i] != dims[j] {
        return invalid(format!(
            "label `{}` has dims {} and {}",
            t.labels[i], dims[i], dims[j]
        ));
    }
    let n = dims[i];
    let mut perm: Vec<u32> = (0..dims.len() as u32)
        .filter(|&a| a as usize != i && a as usize != j)
        .collect();
    perm.extend([i as u32, j as u32]);
    let moved = em.transpose(t.v, &perm)?;
    let mut flat: Vec<u64> = perm[..perm.len() - 2]
        .iter()
        .map(|&a| dims[a as usize])
        .collect();
    flat.push(n * n);
    let f = em.reshape(moved, &flat)?;
    let last = flat.len() - 1;
    let r = em.rank(f);
    let mut start = vec![0; r];
    let mut stride = vec![1; r];
    let mut limit = flat.clone();
    (start[last], limit[last], stride[last]) = (0, n * n, n + 1);
    let v = em.slice(f, &start, &limit, &stride)?;
    let mut labels: Vec<char> = perm[..perm.len() - 2]
        .iter()
        .map(|&a| t.labels[a as usize])
        .collect();
    labels.push(t.labels[i]);
    Ok(Term { v, labels })
}

/// Sums away the labels of `t` not in `keep`, and takes diagonals of repeated labels.
fn simplify(em: &mut Emitter, mut t: Term, keep: &[char]) -> NodeResult<Term> {
    while let Some((i, j)) = (0..t.labels.len()).find_map(|i| {
        (i + 1..t.labels.len())
            .find(|&j| t.labels[j] == t.labels[i])
            .map(|j| (i, j))
    }) {
        t = diagonal(em, t, i, j)?;
    }
    let gone: Vec<u32> = (0..t.labels.len() as u32)
        .filter(|&a| !keep.contains(&t.labels[a as usize]))
        .collect();
    let v = em.reduce(ReduceOp::Sum, t.v, &gone)?;
    let labels = t
        .labels
        .iter()
        .copied()
        .filter(|l| keep.contains(l))
        .collect();
    Ok(Term { v, labels })
}

/// Contracts two simplified terms, keeping the labels in `keep`.
fn contract(em: &mut Emitter, a: Term, b: Term, keep: &[char]) -> NodeResult<Term> {
    let pos = |t: &Term, l: char| t.labels.iter().position(|&x| x == l).map(|p| p as u32);
    let shared: Vec<char> = a
        .labels
        .iter()
        .copied()
        .filter(|l| b.labels.contains(l))
        .collect();
    let (batch, summed): (Vec<char>, Vec<char>) = shared.iter().partition(|l| keep.contains(l));
    let (ad, bd) = (em.dims(a.v), em.dims(b.v));
    for &l in &shared {
        if let (Some(i), Some(j)) = (pos(&a, l), pos(&b, l)) {
            if ad[i as usize] != bd[j as usize] {
                return unsupported(format!(
                    "label `{l}` has dims {} and {} (broadcasting in Einsum)",
                    ad[i as usize], bd[j as usize]
                ));
            }
        }
    }
    let axes =
        |t: &Term, ls: &[char]| -> Vec<u32> { ls.iter().filter_map(|&l| pos(t, l)).collect() };
    let v = em.dot(
        a.v,
        b.v,
        (&axes(&a, &batch), &axes(&b, &batch)),
        (&axes(&a, &summed), &axes(&b, &summed)),
    )?;
    let mut labels = batch.clone();
    labels.extend(a.labels.iter().filter(|l| !shared.contains(l)));
    labels.extend(b.labels.iter().filter(|l| !shared.contains(l)));
    Ok(Term { v, labels })
}

/// `Einsum(inputs...; equation)`: diagonals, sums and pairwise contractions left to right.
pub(super) fn einsum(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["equation"])?;
    let eq = node.string("equation", "")?;
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let sides: Vec<&str> = lhs.split(',').collect();
    if sides.len() != node.input_count() {
        return invalid(format!(
            "`{eq}` has {} operands but the node {}",
            sides.len(),
            node.input_count()
        ));
    }
    let mut ellipsis = 0;
    let mut terms = Vec::new();
    for (i, s) in sides.iter().enumerate() {
        let v = node.input(i)?;
        let labels = parse_labels(s, Some(em.rank(v)), &mut ellipsis)?;
        terms.push(Term { v, labels });
    }
    let out: Vec<char> = match rhs {
        Some(r) => parse_labels(r, None, &mut ellipsis)?,
        None => {
            // Implicit output: the ellipsis axes, then labels used once, alphabetically.
            let all: Vec<char> = terms.iter().flat_map(|t| t.labels.clone()).collect();
            let mut once: Vec<char> = all
                .iter()
                .copied()
                .filter(|l| l.is_ascii_alphabetic() && all.iter().filter(|x| *x == l).count() == 1)
                .collect();
            once.sort_unstable();
            let mut out: Vec<char> = (0..ellipsis).rev().map(ellipsis_label).collect();
            out.extend(once);
            out
        }
    };
    let needed_after = |terms: &[Term], from: usize| -> Vec<char> {
        let mut k = out.clone();
        for t in &terms[from..] {
            k.extend(&t.labels);
        }
        k
    };
    let mut acc: Option<Term> = None;
    for i in 0..terms.len() {
        let keep = needed_after(&terms, i + 1);
        let mut with_acc = keep.clone();
        if let Some(a) = &acc {
            with_acc.extend(&a.labels);
        }
        let t = simplify(em, terms[i].clone(), &with_acc)?;
        acc = Some(match acc {
            None => simplify(em, t, &keep)?,
            Some(a) => {
                let c = contract(em, a, t, &keep)?;
                simplify(em, c, &keep)?
            }
        });
    }
    let Some(result) = acc else {
        return invalid("Einsum needs at least one operand");
    };
    let perm = out
        .iter()
        .map(|l| {
            result
                .labels
                .iter()
                .position(|x| x == l)
                .map(|p| p as u32)
                .ok_or_else(|| {
                    crate::error::NodeError::Invalid(format!("output label `{l}` is in no operand"))
                })
        })
        .collect::<NodeResult<Vec<u32>>>()?;
    if perm.len() != result.labels.len() {
        return invalid(format!("`{eq}` repeats an output label"));
    }
    Ok(vec![em.transpose(result.v, &perm)?])
}
