//! The comparison every conformance case ends with: a kernel's bindings after a run against
//! the reference interpreter's, under the numeric rules of the mode.

use accy_ir::{DType, ReduceOp, UnaryOp};

use crate::kernel::{run_kernel, KernelNode, LoopKernel, Node};

/// Runs `kernel` with the reference interpreter on a copy of `inputs` and compares every
/// binding with `actual` (the same bindings after the code under test ran on `inputs`).
///
/// Floats compare bit for bit, except that any NaN equals any NaN. With `reassociate` (default
/// mode), a float `sum` reduction's stored value may also differ by `2 · n · ε · Σ|terms|`
/// (n the reduced count, `Σ|terms|` the interpreter's sum of absolute values), the bound
/// `accy_ir::ReduceOp` documents for reassociated sums; a non-finite bound accepts anything.
/// Returns a message naming the first difference.
pub fn compare_with_reference(
    kernel: &LoopKernel,
    inputs: &[Vec<u8>],
    actual: &[Vec<u8>],
    reassociate: bool,
) -> Result<(), String> {
    let mut expected = inputs.to_vec();
    {
        let mut views: Vec<&mut [u8]> = expected.iter_mut().map(Vec::as_mut_slice).collect();
        run_kernel(kernel, &mut views).map_err(|e| format!("reference run: {e}"))?;
    }
    let bounds = if reassociate {
        sum_bounds(kernel, inputs)?
    } else {
        None
    };
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        let dtype = kernel
            .bindings
            .get(i)
            .map(|b| b.dtype)
            .ok_or("more buffers than bindings")?;
        let size = dtype.size_bytes() as usize;
        if e.len() != a.len() {
            return Err(format!(
                "binding {i}: {} bytes, expected {}",
                a.len(),
                e.len()
            ));
        }
        for (j, (ee, aa)) in e.chunks(size).zip(a.chunks(size)).enumerate() {
            if ee == aa || (is_nan(dtype, ee) && is_nan(dtype, aa)) {
                continue;
            }
            let stored = i == kernel.store.binding as usize;
            if let (true, Some(bounds)) = (stored, &bounds) {
                if bounds.get(j).is_some_and(|&b| within(ee, aa, b)) {
                    continue;
                }
            }
            let inputs_at: Vec<&[u8]> = kernel
                .bindings
                .iter()
                .zip(inputs)
                .map(|(b, buf)| {
                    let size = b.dtype.size_bytes() as usize;
                    buf.get(j * size..(j + 1) * size).unwrap_or(&[])
                })
                .collect();
            return Err(format!(
                "binding {i} element {j}: expected {ee:02x?}, got {aa:02x?} \
                 (inputs at that index: {inputs_at:02x?})"
            ));
        }
    }
    Ok(())
}

/// Each stored element's allowed error for a float sum reduction, or `None` when the kernel
/// has none (then results must match exactly).
fn sum_bounds(kernel: &LoopKernel, inputs: &[Vec<u8>]) -> Result<Option<Vec<f64>>, String> {
    let Some(dtype) = kernel.nodes.get(kernel.result as usize).map(|n| n.dtype) else {
        return Ok(None);
    };
    if kernel.reduction != Some(ReduceOp::Sum) || !dtype.is_float() {
        return Ok(None);
    }
    let mut abs = kernel.clone();
    abs.nodes.push(KernelNode {
        node: Node::Unary {
            op: UnaryOp::Abs,
            x: kernel.result,
        },
        dtype,
    });
    abs.result = abs.nodes.len() as u32 - 1;
    let mut sums = inputs.to_vec();
    let mut views: Vec<&mut [u8]> = sums.iter_mut().map(Vec::as_mut_slice).collect();
    run_kernel(&abs, &mut views).map_err(|e| format!("reference run of |terms|: {e}"))?;
    let count = abs.reduction_dims().iter().product::<u64>() as f64;
    let (eps, size) = match dtype {
        DType::F32 => (f64::from(f32::EPSILON), 4),
        _ => (f64::EPSILON, 8),
    };
    let store = sums
        .get(kernel.store.binding as usize)
        .ok_or("store binding missing")?;
    Ok(Some(
        store
            .chunks(size)
            .map(|c| 2.0 * count * eps * float_value(c))
            .collect(),
    ))
}

/// Whether the float bit patterns `expected` and `actual` lie within `bound` of each other.
fn within(expected: &[u8], actual: &[u8], bound: f64) -> bool {
    !bound.is_finite() || (float_value(expected) - float_value(actual)).abs() <= bound
}

fn is_nan(dtype: DType, bytes: &[u8]) -> bool {
    dtype.is_float() && float_value(bytes).is_nan()
}

/// The float in little-endian `bytes` (4 or 8 of them) as an f64.
fn float_value(bytes: &[u8]) -> f64 {
    match bytes.len() {
        4 => f64::from(f32::from_le_bytes(bytes.try_into().unwrap_or_default())),
        _ => f64::from_le_bytes(bytes.try_into().unwrap_or_default()),
    }
}
