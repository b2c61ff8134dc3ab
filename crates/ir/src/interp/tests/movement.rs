//! Broadcast, reshape, transpose, slice, concat, pad, reverse and gather.

use super::*;

/// `0, 1, …` as an i32 tensor of `dims`.
fn count(dims: &[u64]) -> Tensor {
    let n = dims.iter().product::<u64>() as i32;
    Tensor::i32s(dims, (0..n).collect())
}

#[test]
fn broadcast_repeats_along_new_and_unit_axes() {
    let x = Tensor::i32s(&[3], vec![1, 2, 3]);
    assert_eq!(
        run(std::slice::from_ref(&x), |b, v| b.broadcast(
            v[0],
            &[2, 3],
            &[1]
        )),
        Tensor::i32s(&[2, 3], vec![1, 2, 3, 1, 2, 3])
    );
    let x = Tensor::i32s(&[2], vec![1, 2]);
    assert_eq!(
        run(&[x], |b, v| b.broadcast(v[0], &[2, 3], &[0])),
        Tensor::i32s(&[2, 3], vec![1, 1, 1, 2, 2, 2])
    );
    let x = Tensor::u8s(&[1, 3], vec![7, 8, 9]);
    assert_eq!(
        run(&[x], |b, v| b.broadcast(v[0], &[2, 3], &[0, 1])),
        Tensor::u8s(&[2, 3], vec![7, 8, 9, 7, 8, 9])
    );
    // Operand axis 1 has dim 1 and maps to result axis 2 of dim 3; result axis 1 is new.
    let x = Tensor::i64s(&[2, 1], vec![5, 6]);
    assert_eq!(
        run(&[x], |b, v| b.broadcast(v[0], &[2, 2, 3], &[0, 2])),
        Tensor::i64s(&[2, 2, 3], vec![5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6])
    );
    let s = Tensor::bools(&[], vec![true]);
    assert_eq!(
        run(std::slice::from_ref(&s), |b, v| b.broadcast(
            v[0],
            &[2, 2],
            &[]
        )),
        Tensor::bools(&[2, 2], vec![true; 4])
    );
    assert_eq!(
        run(std::slice::from_ref(&s), |b, v| b.broadcast(
            v[0],
            &[0, 3],
            &[]
        )),
        Tensor::bools(&[0, 3], vec![])
    );
    assert_eq!(
        run(std::slice::from_ref(&s), |b, v| b.broadcast(v[0], &[], &[])),
        s
    );
    let x = Tensor::f32s(&[1], vec![-0.0]);
    assert_floats(
        &run(&[x], |b, v| b.broadcast(v[0], &[4, 0], &[0])),
        &[4, 0],
        &[],
    );
}

#[test]
fn reshape_keeps_row_major_order() {
    assert_eq!(
        run(&[count(&[2, 3])], |b, v| b.reshape(v[0], &[3, 2])),
        count(&[3, 2])
    );
    assert_eq!(
        run(&[count(&[6])], |b, v| b.reshape(v[0], &[1, 6, 1])),
        count(&[1, 6, 1])
    );
    assert_eq!(
        run(&[count(&[0, 3])], |b, v| b.reshape(v[0], &[5, 0])),
        count(&[5, 0])
    );
    assert_eq!(
        run(&[count(&[])], |b, v| b.reshape(v[0], &[1, 1])),
        count(&[1, 1])
    );
}

#[test]
fn transpose_permutes_axes() {
    assert_eq!(
        run(&[count(&[2, 3])], |b, v| b.transpose(v[0], &[1, 0])),
        Tensor::i32s(&[3, 2], vec![0, 3, 1, 4, 2, 5])
    );
    // result[i, j, k] = x[j, k, i] = 12 j + 4 k + i for x of dims [2, 3, 4].
    let t = run(&[count(&[2, 3, 4])], |b, v| b.transpose(v[0], &[2, 0, 1]));
    let mut expected = Vec::new();
    for i in 0..4 {
        for j in 0..2 {
            for k in 0..3 {
                expected.push(12 * j + 4 * k + i);
            }
        }
    }
    assert_eq!(t, Tensor::i32s(&[4, 2, 3], expected));
    assert_eq!(
        run(&[count(&[2, 3])], |b, v| b.transpose(v[0], &[0, 1])),
        count(&[2, 3])
    );
    assert_eq!(
        run(&[count(&[0, 3])], |b, v| b.transpose(v[0], &[1, 0])),
        count(&[3, 0])
    );
}

#[test]
fn slice_takes_strided_ranges() {
    assert_eq!(
        run(&[count(&[10])], |b, v| b.slice(v[0], &[1], &[8], &[3])),
        Tensor::i32s(&[3], vec![1, 4, 7])
    );
    assert_eq!(
        run(&[count(&[10])], |b, v| b.slice(v[0], &[1], &[9], &[4])),
        Tensor::i32s(&[2], vec![1, 5])
    );
    assert_eq!(
        run(&[count(&[3, 4])], |b, v| b.slice(
            v[0],
            &[1, 0],
            &[3, 4],
            &[1, 2]
        )),
        Tensor::i32s(&[2, 2], vec![4, 6, 8, 10])
    );
    assert_eq!(
        run(&[count(&[3, 4])], |b, v| b.slice(
            v[0],
            &[2, 2],
            &[2, 4],
            &[1, 1]
        )),
        Tensor::i32s(&[0, 2], vec![])
    );
    assert_eq!(
        run(&[count(&[3, 4])], |b, v| b.slice(
            v[0],
            &[0, 3],
            &[3, 4],
            &[5, 7]
        )),
        Tensor::i32s(&[1, 1], vec![3])
    );
}

#[test]
fn concat_joins_along_an_axis() {
    let a = Tensor::i32s(&[2, 1], vec![1, 4]);
    let b2 = Tensor::i32s(&[2, 2], vec![2, 3, 5, 6]);
    assert_eq!(
        run(&[a, b2], |b, v| b.concat(&[v[0], v[1]], 1)),
        Tensor::i32s(&[2, 3], vec![1, 2, 3, 4, 5, 6])
    );
    let parts = [
        Tensor::u8s(&[1, 2], vec![1, 2]),
        Tensor::u8s(&[0, 2], vec![]),
        Tensor::u8s(&[2, 2], vec![3, 4, 5, 6]),
    ];
    assert_eq!(
        run(&parts, |b, v| b.concat(&[v[0], v[1], v[2]], 0)),
        Tensor::u8s(&[3, 2], vec![1, 2, 3, 4, 5, 6])
    );
    let x = Tensor::bools(&[2], vec![true, false]);
    assert_eq!(
        run(std::slice::from_ref(&x), |b, v| b.concat(&[v[0]], 0)),
        x
    );
    assert_eq!(
        run(&[x], |b, v| b.concat(&[v[0], v[0], v[0]], 0)),
        Tensor::bools(&[6], vec![true, false, true, false, true, false])
    );
    let empty = Tensor::f64s(&[0, 2], vec![]);
    assert_eq!(
        run(&[empty.clone(), empty], |b, v| b.concat(&[v[0], v[1]], 0)),
        Tensor::f64s(&[0, 2], vec![])
    );
    let rows = Tensor::f64s(&[0, 2], vec![]);
    assert_eq!(
        run(&[rows.clone(), rows], |b, v| b.concat(&[v[0], v[1]], 1)),
        Tensor::f64s(&[0, 4], vec![])
    );
}

/// `x` padded with the scalar `value`.
fn pad(x: Tensor, value: Tensor, low: &[i64], high: &[i64], interior: &[u64]) -> Tensor {
    run(&[x, value], |b, v| b.pad(v[0], v[1], low, high, interior))
}

#[test]
fn pad_adds_edges_and_interior() {
    let x = Tensor::i32s(&[3], vec![1, 2, 3]);
    let p = Tensor::i32s(&[], vec![0]);
    assert_eq!(
        pad(x.clone(), p.clone(), &[1], &[2], &[1]),
        Tensor::i32s(&[8], vec![0, 1, 0, 2, 0, 3, 0, 0])
    );
    assert_eq!(pad(x.clone(), p.clone(), &[0], &[0], &[0]), x);
    let m = Tensor::i32s(&[2, 2], vec![1, 2, 3, 4]);
    assert_eq!(
        pad(m, Tensor::i32s(&[], vec![9]), &[1, 0], &[0, 1], &[0, 1]),
        Tensor::i32s(&[3, 4], vec![9, 9, 9, 9, 1, 9, 2, 9, 3, 9, 4, 9])
    );
    // An empty axis has no gaps: the result is just low + high padding elements.
    assert_eq!(
        pad(Tensor::i32s(&[0], vec![]), p, &[2], &[1], &[5]),
        Tensor::i32s(&[3], vec![0, 0, 0])
    );
}

#[test]
fn pad_with_negative_edges_crops() {
    let x = Tensor::i32s(&[3], vec![1, 2, 3]);
    let p = Tensor::i32s(&[], vec![7]);
    assert_eq!(
        pad(x.clone(), p.clone(), &[-1], &[-1], &[0]),
        Tensor::i32s(&[1], vec![2])
    );
    // [1, 7, 2, 7, 3] without its first two elements.
    assert_eq!(
        pad(x.clone(), p.clone(), &[-2], &[0], &[1]),
        Tensor::i32s(&[3], vec![2, 7, 3])
    );
    // [1, 7, 7, 2, 7, 7, 3] without its first element, plus one at the end.
    assert_eq!(
        pad(x.clone(), p.clone(), &[-1], &[1], &[2]),
        Tensor::i32s(&[7], vec![7, 7, 2, 7, 7, 3, 7])
    );
    // Cropping into the interior padding and off the end.
    assert_eq!(
        pad(x.clone(), p.clone(), &[2], &[-3], &[1]),
        Tensor::i32s(&[4], vec![7, 7, 1, 7])
    );
    assert_eq!(pad(x, p, &[-2], &[-1], &[0]), Tensor::i32s(&[0], vec![]));
}

#[test]
fn pad_moves_float_values_bit_for_bit() {
    let x = Tensor::f32s(&[2], vec![-0.0, 1.0]);
    let padded = pad(x, Tensor::f32s(&[], vec![f32::NAN]), &[1], &[0], &[1]);
    assert_floats(&padded, &[4], &[f64::NAN, -0.0, f64::NAN, 1.0]);
    let x = Tensor::bools(&[1, 1], vec![true]);
    assert_eq!(
        pad(
            x,
            Tensor::bools(&[], vec![false]),
            &[0, 1],
            &[1, 0],
            &[3, 3]
        ),
        Tensor::bools(&[2, 2], vec![false, true, false, false])
    );
}

#[test]
fn reverse_flips_the_listed_axes() {
    let x = count(&[2, 3]);
    assert_eq!(
        run(std::slice::from_ref(&x), |b, v| b.reverse(v[0], &[1])),
        Tensor::i32s(&[2, 3], vec![2, 1, 0, 5, 4, 3])
    );
    assert_eq!(
        run(std::slice::from_ref(&x), |b, v| b.reverse(v[0], &[0])),
        Tensor::i32s(&[2, 3], vec![3, 4, 5, 0, 1, 2])
    );
    assert_eq!(
        run(std::slice::from_ref(&x), |b, v| b.reverse(v[0], &[1, 0])),
        Tensor::i32s(&[2, 3], vec![5, 4, 3, 2, 1, 0])
    );
    assert_eq!(
        run(std::slice::from_ref(&x), |b, v| b.reverse(v[0], &[])),
        x
    );
    assert_eq!(
        run(&[count(&[0, 2])], |b, v| b.reverse(v[0], &[0, 1])),
        count(&[0, 2])
    );
}

#[test]
fn gather_clamps_indices() {
    let x = Tensor::f32s(&[4], vec![10.0, 20.0, 30.0, 40.0]);
    let idx = Tensor::i32s(&[6], vec![3, 0, -1, 4, 100, i32::MIN]);
    assert_eq!(
        run(&[x, idx], |b, v| b.gather(v[0], v[1], 0)),
        Tensor::f32s(&[6], vec![40.0, 10.0, 10.0, 40.0, 40.0, 10.0])
    );
    let x = Tensor::i32s(&[2], vec![1, 2]);
    let idx = Tensor::i64s(&[3], vec![i64::MIN, i64::MAX, 1]);
    assert_eq!(
        run(&[x, idx], |b, v| b.gather(v[0], v[1], 0)),
        Tensor::i32s(&[3], vec![1, 2, 2])
    );
}

#[test]
fn gather_places_index_dims_at_the_axis() {
    // result[a, i, j] = x[a, clamp(idx[i, j])].
    let idx = Tensor::i64s(&[2, 2], vec![2, 0, 1, 5]);
    assert_eq!(
        run(&[count(&[2, 3]), idx], |b, v| b.gather(v[0], v[1], 1)),
        Tensor::i32s(&[2, 2, 2], vec![2, 0, 1, 2, 5, 3, 4, 5])
    );
    // u8 indices are unsigned: 255 clamps to the last row.
    let idx = Tensor::u8s(&[2], vec![1, 255]);
    assert_eq!(
        run(&[count(&[3, 2]), idx], |b, v| b.gather(v[0], v[1], 0)),
        Tensor::i32s(&[2, 2], vec![2, 3, 4, 5])
    );
    // A scalar index drops the axis.
    let idx = Tensor::i32s(&[], vec![1]);
    assert_eq!(
        run(&[count(&[2, 3]), idx], |b, v| b.gather(v[0], v[1], 0)),
        Tensor::i32s(&[3], vec![3, 4, 5])
    );
    // result[a, i, c] = x[a, idx[i], c] for x of dims [2, 3, 2].
    let idx = Tensor::i32s(&[2], vec![2, 0]);
    assert_eq!(
        run(&[count(&[2, 3, 2]), idx], |b, v| b.gather(v[0], v[1], 1)),
        Tensor::i32s(&[2, 2, 2], vec![4, 5, 0, 1, 10, 11, 6, 7])
    );
}

#[test]
fn gather_with_empty_operands() {
    let idx = Tensor::i32s(&[0], vec![]);
    assert_eq!(
        run(&[count(&[0, 2]), idx.clone()], |b, v| b
            .gather(v[0], v[1], 0)),
        count(&[0, 2])
    );
    assert_eq!(
        run(&[count(&[3, 2]), idx], |b, v| b.gather(v[0], v[1], 0)),
        count(&[0, 2])
    );
    let idx = Tensor::i32s(&[2], vec![0, 1]);
    assert_eq!(
        run(&[count(&[2, 0]), idx], |b, v| b.gather(v[0], v[1], 0)),
        count(&[2, 0])
    );
}
