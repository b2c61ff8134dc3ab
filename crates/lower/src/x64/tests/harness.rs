//! Running emitted kernels in-process: code mapped with `accy_executable::CodeMemory`, each
//! binding in its own `GuardedBuffer` whose last byte touches a guard page, called through the
//! dispatch ABI with an import table of the same Rust functions the IR interpreter uses.

use accy_artifact::abi::{DispatchState, ABI_VERSION, KERNEL_OK};
use accy_artifact::{FeatureSet, Import};
use accy_executable::{CodeMemory, CpuInfo, GuardedBuffer, Tier};

use crate::kernel::LoopKernel;
use crate::target::Target;
use crate::x64::{X64Target, X64Tier};

/// The features of this host that generated code may use (honouring
/// `ACCY_CPU_FEATURES_MAX`).
pub(crate) fn host_features() -> FeatureSet {
    let info = CpuInfo::detect().unwrap_or_else(|_| CpuInfo::detect_with_max_tier(Tier::Native));
    info.features()
}

/// The target for `tier` if this host can run it.
pub(crate) fn host_target(tier: X64Tier) -> Option<X64Target> {
    X64Target::new_checked(tier, host_features())
}

macro_rules! unary_imports {
    ($($name:ident: $t:ty => $body:expr;)*) => {
        $(extern "C" fn $name(x: $t) -> $t { let f: fn($t) -> $t = $body; f(x) })*
    };
}

unary_imports! {
    exp_f32: f32 => f32::exp; exp_f64: f64 => f64::exp;
    log_f32: f32 => f32::ln; log_f64: f64 => f64::ln;
    tanh_f32: f32 => f32::tanh; tanh_f64: f64 => f64::tanh;
    sigmoid_f32: f32 => |x| 1.0 / (1.0 + (-x).exp());
    sigmoid_f64: f64 => |x| 1.0 / (1.0 + (-x).exp());
    erf_f32: f32 => libm::erff; erf_f64: f64 => libm::erf;
    sin_f32: f32 => f32::sin; sin_f64: f64 => f64::sin;
    cos_f32: f32 => f32::cos; cos_f64: f64 => f64::cos;
    floor_f32: f32 => f32::floor; floor_f64: f64 => f64::floor;
    ceil_f32: f32 => f32::ceil; ceil_f64: f64 => f64::ceil;
    round_f32: f32 => f32::round_ties_even; round_f64: f64 => f64::round_ties_even;
}

extern "C" fn pow_f32(a: f32, b: f32) -> f32 {
    a.powf(b)
}
extern "C" fn pow_f64(a: f64, b: f64) -> f64 {
    a.powf(b)
}
extern "C" fn rem_f32(a: f32, b: f32) -> f32 {
    a % b
}
extern "C" fn rem_f64(a: f64, b: f64) -> f64 {
    a % b
}

/// The import table, entry `i` being `Import::ALL[i]`'s function.
pub(crate) fn imports() -> [*const (); Import::COUNT] {
    let mut t = [std::ptr::null::<()>(); Import::COUNT];
    for import in Import::ALL {
        let f: *const () = match import {
            Import::ExpF32 => exp_f32 as *const (),
            Import::ExpF64 => exp_f64 as *const (),
            Import::LogF32 => log_f32 as *const (),
            Import::LogF64 => log_f64 as *const (),
            Import::TanhF32 => tanh_f32 as *const (),
            Import::TanhF64 => tanh_f64 as *const (),
            Import::SigmoidF32 => sigmoid_f32 as *const (),
            Import::SigmoidF64 => sigmoid_f64 as *const (),
            Import::ErfF32 => erf_f32 as *const (),
            Import::ErfF64 => erf_f64 as *const (),
            Import::SinF32 => sin_f32 as *const (),
            Import::SinF64 => sin_f64 as *const (),
            Import::CosF32 => cos_f32 as *const (),
            Import::CosF64 => cos_f64 as *const (),
            Import::FloorF32 => floor_f32 as *const (),
            Import::FloorF64 => floor_f64 as *const (),
            Import::CeilF32 => ceil_f32 as *const (),
            Import::CeilF64 => ceil_f64 as *const (),
            Import::RoundF32 => round_f32 as *const (),
            Import::RoundF64 => round_f64 as *const (),
            Import::PowF32 => pow_f32 as *const (),
            Import::PowF64 => pow_f64 as *const (),
            Import::RemF32 => rem_f32 as *const (),
            Import::RemF64 => rem_f64 as *const (),
        };
        t[import.index()] = f;
    }
    t
}

/// Emits `kernel` for `target`, runs it over `workgroups` workgroups (one call each, in
/// order) on guarded copies of `buffers`, copies the buffers back and returns the statuses.
pub(crate) fn run_x64(
    target: &X64Target,
    kernel: &LoopKernel,
    buffers: &mut [Vec<u8>],
    workgroups: u32,
) -> Vec<u32> {
    let code = target.emit(std::slice::from_ref(kernel)).expect("emit");
    super::encoding::assert_features_within(target, &code.code);
    run_code(
        &code.code,
        code.entries[0].offset,
        buffers,
        workgroups,
        ABI_VERSION,
    )
}

/// Runs the code at `offset` as a kernel on guarded copies of `buffers` (see [`run_x64`]).
pub(crate) fn run_code(
    code: &[u8],
    offset: u32,
    buffers: &mut [Vec<u8>],
    workgroups: u32,
    abi_version: u32,
) -> Vec<u32> {
    let memory = CodeMemory::from_code(code).expect("map code");
    let entry = memory.entry(offset).expect("entry");
    let mut guarded: Vec<GuardedBuffer> = buffers
        .iter()
        .map(|b| GuardedBuffer::from_bytes(b).expect("guarded buffer"))
        .collect();
    for g in &guarded {
        assert_eq!(g.tail_gap(), 0, "buffers must end at the guard page");
    }
    let pointers: Vec<*mut u8> = guarded.iter_mut().map(|g| g.as_mut_ptr()).collect();
    let lengths: Vec<u64> = guarded.iter().map(|g| g.len() as u64).collect();
    let table = imports();
    let state = DispatchState {
        abi_version,
        binding_count: pointers.len() as u32,
        bindings: pointers.as_ptr(),
        binding_lengths: lengths.as_ptr(),
        scalars: std::ptr::null(),
        scalar_count: 0,
        workgroup_count: workgroups,
        imports: table.as_ptr(),
    };
    let statuses = (0..workgroups.max(1))
        .map(|wg| {
            // SAFETY: the code was emitted for the dispatch ABI and this host's features (the
            // caller built the target with `new_checked`); `state` and every array it points
            // to (pointers, lengths, import table) live until the call returns, each binding
            // pointer addresses exactly `lengths[i]` bytes, and the import table holds
            // functions of the documented signatures.
            unsafe { entry.call::<extern "C" fn(*const DispatchState, u32) -> u32>((&state, wg)) }
        })
        .collect();
    for (b, g) in buffers.iter_mut().zip(&guarded) {
        b.copy_from_slice(g.as_slice());
    }
    statuses
}

/// Every tier this host can run, with its target.
pub(crate) fn host_tiers() -> Vec<X64Target> {
    X64Tier::ALL.into_iter().filter_map(host_target).collect()
}

/// Runs `kernel` with the reference interpreter and with `target` (over `workgroups`
/// workgroups) on copies of `buffers`, and asserts every binding ends up identical (floats
/// bit for bit, except that any NaN equals any NaN, as the IR leaves NaN payloads open).
pub(crate) fn check(target: &X64Target, kernel: &LoopKernel, buffers: &[Vec<u8>], workgroups: u32) {
    let mut expected = buffers.to_vec();
    {
        let mut views: Vec<&mut [u8]> = expected.iter_mut().map(|b| b.as_mut_slice()).collect();
        crate::kernel::run_kernel(kernel, &mut views).expect("reference run");
    }
    let mut actual = buffers.to_vec();
    let statuses = run_x64(target, kernel, &mut actual, workgroups);
    assert!(
        statuses.iter().all(|&s| s == KERNEL_OK),
        "{}: statuses {statuses:?}",
        target.name()
    );
    let bounds = reassociation_bounds(target, kernel, buffers);
    for (i, (e, a)) in expected.iter().zip(&actual).enumerate() {
        let dtype = kernel.bindings[i].dtype;
        let size = dtype.size_bytes() as usize;
        for (j, (ee, aa)) in e.chunks(size).zip(a.chunks(size)).enumerate() {
            if ee == aa || (is_nan(dtype, ee) && is_nan(dtype, aa)) {
                continue;
            }
            let stored = i == kernel.store.binding as usize;
            if let (true, Some(bounds)) = (stored, &bounds) {
                if within(dtype, ee, aa, bounds[j]) {
                    continue;
                }
            }
            panic!(
                "{}: binding {i} element {j}: expected {ee:02x?}, got {aa:02x?}\nkernel: {kernel:#?}\ninputs: {:02x?}",
                target.name(),
                binding_inputs(kernel, buffers, j),
            );
        }
    }
}

/// The input elements at index `j` of every readable binding, for failure messages.
fn binding_inputs(kernel: &LoopKernel, buffers: &[Vec<u8>], j: usize) -> Vec<Vec<u8>> {
    kernel
        .bindings
        .iter()
        .zip(buffers)
        .map(|(b, buf)| {
            let size = b.dtype.size_bytes() as usize;
            buf.get(j * size..(j + 1) * size).unwrap_or(&[]).to_vec()
        })
        .collect()
}

fn is_nan(dtype: accy_ir::DType, bytes: &[u8]) -> bool {
    match dtype {
        accy_ir::DType::F32 => bytes
            .try_into()
            .is_ok_and(|b: [u8; 4]| f32::from_le_bytes(b).is_nan()),
        accy_ir::DType::F64 => bytes
            .try_into()
            .is_ok_and(|b: [u8; 8]| f64::from_le_bytes(b).is_nan()),
        _ => false,
    }
}

/// For a float sum the target reassociates (the AVX2 vector reduction), the allowed error of
/// each stored element: `2 · count · ε · Σ|terms|`, with `Σ|terms|` from the reference
/// interpreter run on the same kernel with `abs` applied to the reduced value. `None` when
/// the target must match exactly.
fn reassociation_bounds(
    target: &X64Target,
    kernel: &LoopKernel,
    buffers: &[Vec<u8>],
) -> Option<Vec<f64>> {
    use accy_ir::{DType, ReduceOp, UnaryOp};
    let dtype = kernel.nodes.get(kernel.result as usize)?.dtype;
    let reassociates = target.tier() != X64Tier::Sse2
        && kernel.reduction == Some(ReduceOp::Sum)
        && dtype.is_float()
        && crate::x64::vector::vector_lanes(kernel).is_some();
    if !reassociates {
        return None;
    }
    let mut abs = kernel.clone();
    abs.nodes.push(crate::kernel::KernelNode {
        node: crate::kernel::Node::Unary {
            op: UnaryOp::Abs,
            x: kernel.result,
        },
        dtype,
    });
    abs.result = abs.nodes.len() as u32 - 1;
    let mut sums = buffers.to_vec();
    let mut views: Vec<&mut [u8]> = sums.iter_mut().map(|b| b.as_mut_slice()).collect();
    crate::kernel::run_kernel(&abs, &mut views).expect("reference run of |terms|");
    let count = abs.reduction_dims().iter().product::<u64>() as f64;
    let (eps, size) = match dtype {
        DType::F32 => (f64::from(f32::EPSILON), 4),
        _ => (f64::EPSILON, 8),
    };
    let store = &sums[kernel.store.binding as usize];
    Some(
        store
            .chunks(size)
            .map(|c| 2.0 * count * eps * float_value(c))
            .collect(),
    )
}

/// The float in little-endian `bytes` (4 or 8 of them) as an f64.
fn float_value(bytes: &[u8]) -> f64 {
    match bytes.len() {
        4 => f64::from(f32::from_le_bytes(bytes.try_into().unwrap_or_default())),
        _ => f64::from_le_bytes(bytes.try_into().unwrap_or_default()),
    }
}

/// Whether `actual` is within `bound` of `expected`; any order may overflow differently when
/// `Σ|terms|` itself overflows, so a non-finite bound accepts anything.
fn within(dtype: accy_ir::DType, expected: &[u8], actual: &[u8], bound: f64) -> bool {
    if !dtype.is_float() {
        return false;
    }
    if !bound.is_finite() {
        return true;
    }
    (float_value(expected) - float_value(actual)).abs() <= bound
}
