//! `Attention` (opset 23) and `RotaryEmbedding` (opset 23), decomposed as their ONNX function
//! bodies (and the reference implementation the node tests were generated with) define them.

use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::node::Node;
use crate::ops::norm::softmax_axis;
use crate::tensor::dtype;

/// `[B, S, H*D]` to `[B, H, S, D]`.
fn heads_first(em: &mut Emitter, x: Val, heads: i64, what: &str) -> NodeResult<Val> {
    let d = em.dims(x);
    let h = u64::try_from(heads).unwrap_or(0);
    if d.len() != 3 || h == 0 || !d[2].is_multiple_of(h) {
        return invalid(format!("{what} {d:?} does not split into {heads} heads"));
    }
    let r = em.reshape(x, &[d[0], d[1], h, d[2] / h])?;
    em.transpose(r, &[0, 2, 1, 3])
}

/// `where(mask, 0, -inf)` for a bool mask; a float mask as it is.
fn mask_bias(em: &mut Emitter, mask: Val, d: DType) -> NodeResult<Val> {
    if em.dtype(mask) != DType::Bool {
        return em.convert(mask, d);
    }
    let zero = em.scalar(d, 0.0);
    let minus_inf = em.scalar(d, f64::NEG_INFINITY);
    em.select(mask, zero, minus_inf)
}

/// `Attention(Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?)` →
/// `(Y, present_key, present_value, qk_matmul_output)`.
pub(super) fn attention(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[
        "is_causal",
        "kv_num_heads",
        "q_num_heads",
        "qk_matmul_output_mode",
        "scale",
        "softcap",
        "softmax_precision",
    ])?;
    let (mut q, mut k, mut v) = (node.input(0)?, node.input(1)?, node.input(2)?);
    let d = node.expect_float(em, q)?;
    let three_d = em.rank(q) == 3;
    if three_d {
        let qh = node.int("q_num_heads", 0)?;
        let kvh = node.int("kv_num_heads", 0)?;
        q = heads_first(em, q, qh, "Q")?;
        k = heads_first(em, k, kvh, "K")?;
        v = heads_first(em, v, kvh, "V")?;
    }
    let (qd, kd, vd) = (em.dims(q), em.dims(k), em.dims(v));
    if qd.len() != 4 || kd.len() != 4 || vd.len() != 4 {
        return invalid("Q, K and V must all be 3-D or all 4-D");
    }
    let scale = if node.has_attr("scale") {
        f64::from(node.float("scale", 1.0)?)
    } else {
        1.0 / (qd[3] as f64).sqrt()
    };
    let root = scale.sqrt();

    let present_k = match node.opt_input(4) {
        Some(past) => em.concat(&[past, k], 2)?,
        None => k,
    };
    let present_v = match node.opt_input(5) {
        Some(past) => em.concat(&[past, v], 2)?,
        None => v,
    };
    let (q_seq, kv_seq) = (qd[2], em.dims(present_k)[2]);

    // The additive bias: mask (padded with -inf / false to kv_seq), causal, padding.
    let mut bias = None;
    if let Some(mask) = node.opt_input(3) {
        let md = em.dims(mask);
        let Some(&last) = md.last() else {
            return invalid("attn_mask must have rank ≥ 1");
        };
        let mask = if last < kv_seq {
            let (low, mut high) = (vec![0i64; md.len()], vec![0i64; md.len()]);
            high[md.len() - 1] = (kv_seq - last) as i64;
            let fill = if em.dtype(mask) == DType::Bool {
                em.scalar(DType::Bool, 0.0)
            } else {
                em.scalar(em.dtype(mask), f64::NEG_INFINITY)
            };
            em.pad(mask, fill, &low, &high)?
        } else {
            mask
        };
        bias = Some(mask_bias(em, mask, d)?);
    }
    if node.int("is_causal", 0)? != 0 {
        let rows = em.iota(DType::I64, &[q_seq, kv_seq], 0)?;
        let cols = em.iota(DType::I64, &[q_seq, kv_seq], 1)?;
        let keep = em.compare(CompareOp::Le, cols, rows)?;
        let causal = mask_bias(em, keep, d)?;
        bias = Some(match bias {
            Some(b) => em.binary(BinaryOp::Add, b, causal)?,
            None => causal,
        });
    }
    if let Some(lens) = node.opt_input(6) {
        let b = qd[0];
        let lens = em.convert(lens, DType::I64)?;
        let lens = em.reshape(lens, &[b, 1, 1, 1])?;
        let pos = em.iota(DType::I64, &[b, 1, 1, kv_seq], 3)?;
        let keep = em.compare(CompareOp::Lt, pos, lens)?;
        let pad = mask_bias(em, keep, d)?;
        bias = Some(match bias {
            Some(x) => em.binary(BinaryOp::Add, x, pad)?,
            None => pad,
        });
    }

    // Grouped-query attention repeats the kv heads as `Tile` does: [h0, h1, h0, h1, …].
    let (qh, kvh) = (qd[1], kd[1]);
    let tile_heads = |em: &mut Emitter, x: Val| -> NodeResult<Val> {
        if qh == kvh {
            return Ok(x);
        }
        if kvh == 0 || qh % kvh != 0 {
            return invalid(format!(
                "{qh} query heads are not a multiple of {kvh} kv heads"
            ));
        }
        let xd = em.dims(x);
        let wide = [xd[0], qh / kvh, kvh, xd[2], xd[3]];
        let b = em.broadcast_axes(x, &wide, &[0, 2, 3, 4])?;
        em.reshape(b, &[xd[0], qh, xd[2], xd[3]])
    };
    let kt = tile_heads(em, present_k)?;
    let vt = tile_heads(em, present_v)?;

    let qs = em.binary_scalar(BinaryOp::Mul, q, root)?;
    let ks = em.binary_scalar(BinaryOp::Mul, kt, root)?;
    let qk = em.dot(qs, ks, (&[0, 1], &[0, 1]), (&[3], &[3]))?;
    let mut scores = match bias {
        Some(b) => em.binary(BinaryOp::Add, qk, b)?,
        None => qk,
    };
    let mode = node.int("qk_matmul_output_mode", 0)?;
    let mut qk_out = if mode == 1 { scores } else { qk };
    let cap = f64::from(node.float("softcap", 0.0)?);
    if cap > 0.0 {
        let s = em.binary_scalar(BinaryOp::Div, scores, cap)?;
        let t = em.unary(UnaryOp::Tanh, s)?;
        scores = em.binary_scalar(BinaryOp::Mul, t, cap)?;
        if mode == 2 {
            qk_out = scores;
        }
    }
    let work = if node.has_attr("softmax_precision") {
        let code = node.int("softmax_precision", 1)?;
        match dtype(i32::try_from(code).unwrap_or(0)) {
            Ok(w) if w.is_float() => w,
            _ => return unsupported(format!("softmax_precision {code}")),
        }
    } else {
        d
    };
    let scores = em.convert(scores, work)?;
    let probs = softmax_axis(em, scores, 3)?;
    if mode == 3 {
        qk_out = em.convert(probs, d)?;
    }
    let vw = em.convert(vt, work)?;
    let y = em.dot(probs, vw, (&[0, 1], &[0, 1]), (&[3], &[2]))?;
    let mut y = em.convert(y, d)?;
    if three_d {
        let yd = em.dims(y);
        let t = em.transpose(y, &[0, 2, 1, 3])?;
        y = em.reshape(t, &[yd[0], yd[2], yd[1] * yd[3]])?;
    }
    Ok(vec![y, present_k, present_v, qk_out])
}

/// `RotaryEmbedding(X, cos_cache, sin_cache, position_ids?; interleaved, num_heads,
/// rotary_embedding_dim)`.
pub(super) fn rotary_embedding(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["interleaved", "num_heads", "rotary_embedding_dim"])?;
    let x = node.input(0)?;
    node.expect_float(em, x)?;
    let xd = em.dims(x);
    // Work in [B, S, H, D].
    let x4 = match xd.len() {
        4 => em.transpose(x, &[0, 2, 1, 3])?,
        3 => {
            let h = u64::try_from(node.int("num_heads", 0)?).unwrap_or(0);
            if h == 0 || !xd[2].is_multiple_of(h) {
                return invalid(format!(
                    "hidden size {} does not split into {h} heads",
                    xd[2]
                ));
            }
            em.reshape(x, &[xd[0], xd[1], h, xd[2] / h])?
        }
        _ => return invalid("the input must be 3-D or 4-D"),
    };
    let d4 = em.dims(x4);
    let head = d4[3];
    let rd = match node.int("rotary_embedding_dim", 0)? {
        0 => head,
        r if r > 0 && (r as u64) <= head && r % 2 == 0 => r as u64,
        r => {
            return invalid(format!(
                "rotary_embedding_dim {r} does not fit head size {head}"
            ))
        }
    };
    let half = rd / 2;
    let (mut cos, mut sin) = (node.input(1)?, node.input(2)?);
    if let Some(ids) = node.opt_input(3) {
        cos = em.gather(cos, ids, 0)?;
        sin = em.gather(sin, ids, 0)?;
    }
    let cd = em.dims(cos);
    if cd.len() != 3 || cd[2] < half {
        return invalid(format!("cos/sin {cd:?} must be [batch, seq, ≥ {half}]"));
    }
    let cos = em.slice_axis(cos, 2, 0, half)?;
    let sin = em.slice_axis(sin, 2, 0, half)?;
    let cos = em.reshape(cos, &[cd[0], cd[1], 1, half])?;
    let sin = em.reshape(sin, &[cd[0], cd[1], 1, half])?;
    let rot = em.slice_axis(x4, 3, 0, rd)?;
    let interleaved = node.int("interleaved", 0)? != 0;
    let (x1, x2) = if interleaved {
        let mut limit = d4.to_vec();
        limit[3] = rd;
        let x1 = em.slice(rot, &[0, 0, 0, 0], &limit, &[1, 1, 1, 2])?;
        let x2 = em.slice(rot, &[0, 0, 0, 1], &limit, &[1, 1, 1, 2])?;
        (x1, x2)
    } else {
        (
            em.slice_axis(rot, 3, 0, half)?,
            em.slice_axis(rot, 3, half, rd)?,
        )
    };
    let a = em.binary(BinaryOp::Mul, cos, x1)?;
    let b = em.binary(BinaryOp::Mul, sin, x2)?;
    let real = em.binary(BinaryOp::Sub, a, b)?;
    let c = em.binary(BinaryOp::Mul, sin, x1)?;
    let e = em.binary(BinaryOp::Mul, cos, x2)?;
    let imag = em.binary(BinaryOp::Add, c, e)?;
    let rotated = if interleaved {
        let mut pair = em.dims(real).to_vec();
        pair.push(1);
        let r = em.reshape(real, &pair)?;
        let i = em.reshape(imag, &pair)?;
        let both = em.concat(&[r, i], 4)?;
        em.reshape(both, &[d4[0], d4[1], d4[2], rd])?
    } else {
        em.concat(&[real, imag], 3)?
    };
    let out = if rd < head {
        let pass = em.slice_axis(x4, 3, rd, head)?;
        em.concat(&[rotated, pass], 3)?
    } else {
        rotated
    };
    let out = if xd.len() == 4 {
        em.transpose(out, &[0, 2, 1, 3])?
    } else {
        em.reshape(out, &xd)?
    };
    Ok(vec![out])
}
