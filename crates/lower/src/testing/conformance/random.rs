//! Random cases: kernels from the shared generator (`crate::testing::kernels::random_kernel`)
//! and arbitrary 64-bit immediates. Seeds come from `ACCY_CONFORMANCE_SEED` when it is set,
//! else from the clock; every failure names the seed that reproduces it.

use accy_ir::DType;

use super::Conformance;
use crate::kernel::Node;
use crate::testing::kernels::{data, elementwise, node, random_kernel};

/// The run's base seed.
fn base_seed() -> u64 {
    std::env::var("ACCY_CONFORMANCE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        })
}

/// splitmix64: well-spread seeds from consecutive numbers.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn reproduce(base: u64, e: String) -> String {
    format!("{e}\n(reproduce with ACCY_CONFORMANCE_SEED={base})")
}

pub(super) fn random(s: &mut Conformance<'_>, cases: u32) -> Result<(), String> {
    let base = base_seed();
    for i in 0..u64::from(cases) {
        let seed = mix(base.wrapping_add(i));
        let Some((kernel, workgroups)) = random_kernel(seed) else {
            continue;
        };
        let buffers: Vec<Vec<u8>> = kernel
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| data(b.dtype, b.elements as usize, seed ^ i as u64))
            .collect();
        s.check(&kernel, &buffers, workgroups)
            .map_err(|e| reproduce(base, format!("seed {seed:#x}: {e}")))?;
    }
    Ok(())
}

pub(super) fn immediates(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    // Arbitrary 64-bit constants and index scales/offsets: every sequence that materialises
    // an immediate and the add/multiply-by-immediate paths, in ranges where the index
    // arithmetic cannot overflow (which validation rejects).
    let base = base_seed();
    for i in 0..300u64 {
        let r = |k: u64| mix(base.wrapping_add(i * 5 + k));
        let bits = r(0);
        let shift = (r(1) % 64) as u32;
        // Sparse patterns too, so all-zero and all-one halfwords are common.
        let sparse = (bits & (u64::MAX >> shift))
            | if shift.is_multiple_of(2) {
                0
            } else {
                u64::MAX << (64 - shift.max(1))
            };
        for v in [bits, sparse] {
            let k = elementwise(
                "const",
                2,
                &[],
                vec![node(Node::Const { bits: v }, DType::I64)],
            );
            s.check(&k, &[vec![0xA5; 16]], 1)
                .map_err(|e| reproduce(base, e))?;
        }
        let scale = (r(2) % (1 << 61)) as i64 - (1 << 60);
        let offset = (r(3) % (1 << 63)) as i64 - (1 << 62);
        let index = node(
            Node::Index {
                dim: Some(0),
                scale,
                offset,
            },
            DType::I64,
        );
        let k = elementwise("index", 5, &[], vec![index]);
        s.check(&k, &[vec![0xA5; 40]], 2)
            .map_err(|e| reproduce(base, e))?;
    }
    Ok(())
}
