//! Deterministic random tensors for parameters the user did not supply.
//!
//! `accy run` and `accy bench` fill every input and weight without a value from here, and tests
//! call the same functions to reproduce those values for the reference interpreter. The values
//! depend only on the seed, the parameter's position in the program and its type, so a run is
//! repeatable and unaffected by which other parameters were given.
//!
//! Ranges, chosen so typical programs stay finite: floats uniform in `[-1, 1)`; i32 and i64
//! uniform in `[-100, 100]`; u8 over all of `0..=255`; bool true with probability ½.

use accy_ir::{DType, Program, Tensor, TensorData, Type};

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough for test data.
#[derive(Clone, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[-100, 100]`.
    fn small_int(&mut self) -> i64 {
        (self.next() % 201) as i64 - 100
    }
}

/// A random tensor of type `ty` for parameter number `param` (its position among all of the
/// program's parameters, inputs and weights together) under `seed`. `None` if the type has
/// more elements than this machine can hold or a dtype this module does not know.
pub fn tensor(ty: &Type, seed: u64, param: usize) -> Option<Tensor> {
    let mut bytes = vec![0; usize::try_from(ty.byte_size()?).ok()?];
    fill(ty, seed, param, &mut bytes)?;
    Tensor::new(&ty.dims, TensorData::from_le_bytes(ty.dtype, &bytes)?).ok()
}

/// Writes the values [`tensor`] gives into `out`, little-endian, without allocating. `None`
/// (and `out` unchanged) if `out` is not exactly `ty`'s byte size or the dtype is one this
/// module does not know.
pub fn fill(ty: &Type, seed: u64, param: usize, out: &mut [u8]) -> Option<()> {
    if u64::try_from(out.len()).ok() != ty.byte_size() {
        return None;
    }
    // Each parameter gets its own stream: mixing the index in through one SplitMix step keeps
    // streams of neighbouring parameters (and seeds) unrelated.
    let mut rng = SplitMix64(SplitMix64(seed ^ (param as u64).rotate_left(32)).next());
    match ty.dtype {
        DType::F32 => fill_with(out, || ((rng.unit() * 2.0 - 1.0) as f32).to_le_bytes()),
        DType::F64 => fill_with(out, || (rng.unit() * 2.0 - 1.0).to_le_bytes()),
        DType::I32 => fill_with(out, || (rng.small_int() as i32).to_le_bytes()),
        DType::I64 => fill_with(out, || rng.small_int().to_le_bytes()),
        DType::U8 => fill_with(out, || [rng.next() as u8]),
        DType::Bool => fill_with(out, || [u8::from(rng.next() >> 63 == 1)]),
        _ => return None,
    }
    Some(())
}

/// Fills `out` with consecutive `N`-byte values from `next`.
fn fill_with<const N: usize>(out: &mut [u8], mut next: impl FnMut() -> [u8; N]) {
    for element in out.chunks_exact_mut(N) {
        element.copy_from_slice(&next());
    }
}

/// Random values for every parameter of `program`, in parameter order (the order
/// `accy_ir::interp::eval` takes its arguments). `None` if a parameter is too large.
pub fn params(program: &Program, seed: u64) -> Option<Vec<Tensor>> {
    program
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| tensor(&p.ty, seed, i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_deterministic_in_range_and_differ_by_seed_and_param() {
        let ty = Type::new(DType::F32, &[1000]);
        let a = tensor(&ty, 7, 0).unwrap();
        assert_eq!(a, tensor(&ty, 7, 0).unwrap());
        assert_ne!(a, tensor(&ty, 8, 0).unwrap());
        assert_ne!(a, tensor(&ty, 7, 1).unwrap());
        let TensorData::F32(v) = a.data() else {
            panic!("dtype")
        };
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        assert!(v.iter().any(|&x| x < -0.9) && v.iter().any(|&x| x > 0.9));
        let ints = tensor(&Type::new(DType::I64, &[500]), 1, 2).unwrap();
        let TensorData::I64(v) = ints.data() else {
            panic!("dtype")
        };
        assert!(v.iter().all(|x| (-100..=100).contains(x)));
        let bools = tensor(&Type::new(DType::Bool, &[200]), 1, 3).unwrap();
        let TensorData::Bool(v) = bools.data() else {
            panic!("dtype")
        };
        let trues = v.iter().filter(|&&b| b).count();
        assert!((60..140).contains(&trues), "{trues}");
    }

    #[test]
    fn fill_writes_the_tensor_values_in_place() {
        for dtype in DType::ALL {
            let ty = Type::new(dtype, &[3, 5]);
            let mut bytes = vec![0xaa; 15 * dtype.size_bytes() as usize];
            fill(&ty, 9, 4, &mut bytes).unwrap();
            let expected = tensor(&ty, 9, 4).unwrap();
            assert_eq!(bytes, expected.data().to_le_bytes(), "{dtype}");
            assert_eq!(fill(&ty, 9, 4, &mut bytes[1..]), None);
        }
    }
}
