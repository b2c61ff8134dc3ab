//! `.npy` compatibility with numpy: files numpy wrote (checked in under `tests/fixtures/`,
//! generated once with numpy 2.4) read back as the arrays numpy saved, and unsupported layouts
//! are refused with reasons.

use accy_cli::npy::{self, NpyError};
use accy_ir::{Tensor, TensorData};

mod common;

fn read(name: &str) -> Result<Tensor, NpyError> {
    npy::read(&std::fs::read(common::fixture(name)).unwrap())
}

#[test]
fn numpy_files_of_every_dtype_read_back_exactly() {
    let cases = [
        (
            "f32_2x3.npy",
            Tensor::new(
                &[2, 3],
                TensorData::F32(vec![1.0, -2.5, 0.0, 3.25, 1e-3, -0.0]),
            ),
        ),
        (
            "f64_scalar.npy",
            Tensor::new(&[], TensorData::F64(vec![2.5])),
        ),
        (
            "i32_4.npy",
            Tensor::new(&[4], TensorData::I32(vec![-7, 0, i32::MAX, i32::MIN])),
        ),
        (
            "i64_2x2.npy",
            Tensor::new(&[2, 2], TensorData::I64(vec![1, -2, 1 << 40, i64::MIN])),
        ),
        (
            "u8_3.npy",
            Tensor::new(&[3], TensorData::U8(vec![0, 128, 255])),
        ),
        (
            "bool_2x2.npy",
            Tensor::new(&[2, 2], TensorData::Bool(vec![true, false, false, true])),
        ),
        (
            "f32_v2_header.npy",
            Tensor::new(&[2], TensorData::F32(vec![0.5, -0.25])),
        ),
    ];
    for (name, expected) in cases {
        let expected = expected.unwrap();
        let got = read(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Bitwise equality: -0.0 must stay -0.0.
        assert_eq!(got, expected, "{name}");
        let again = npy::read(&npy::write(&got).unwrap()).unwrap();
        assert_eq!(again, expected, "{name} round trip");
    }
}

#[test]
fn our_files_have_numpys_layout() {
    // The header numpy 2.4 writes is the same dict (plus growth padding), so comparing the
    // data offset alignment and the dict text is enough to know numpy parses ours.
    let t = read("f32_2x3.npy").unwrap();
    let ours = npy::write(&t).unwrap();
    let theirs = std::fs::read(common::fixture("f32_2x3.npy")).unwrap();
    assert_eq!(&ours[..8], &theirs[..8], "magic and version 1.0");
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_eq!(&ours[10..10 + dict.len()], dict.as_bytes());
    assert_eq!(&theirs[10..10 + dict.len()], dict.as_bytes());
    assert_eq!((ours.len() - 24) % 64, 0);
    assert_eq!(ours[ours.len() - 25], b'\n');
    assert_eq!(&ours[ours.len() - 24..], &theirs[theirs.len() - 24..]);
}

#[test]
fn unsupported_numpy_layouts_are_refused() {
    assert_eq!(read("f32_fortran.npy"), Err(NpyError::FortranOrder));
    assert_eq!(
        read("f32_big_endian.npy"),
        Err(NpyError::Dtype(">f4".into()))
    );
    assert_eq!(read("f16_2.npy"), Err(NpyError::Dtype("<f2".into())));
}
