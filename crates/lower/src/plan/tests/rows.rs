//! Row-blocked planning (`Options::row_blocks`) of regions that must not be chunked as they
//! were: programs the differential test found, with caches so small that every row-local run
//! with a reduction qualifies.

use super::planned_with;
use crate::compile::Options;

fn row_blocked() -> Options {
    Options::default()
        .with_row_blocks(true)
        .with_caches(accy_artifact::Blocking {
            l1d: 64,
            l2: 128,
            llc: 0,
            ..Default::default()
        })
}

/// A scalar constant of the region (`%6`) is used after it: it has no rows to be stored
/// block by block at, so the region is not chunked (it was, and its blocks wrote the
/// constant past its 8 bytes).
#[test]
fn a_region_exporting_a_scalar_is_not_chunked() {
    planned_with(
        "program {
          %0 = weight \"w\" : i32[8,3,2,3]
          %2 = iota axis=1 : i32[2,3,2,3]
          %4 = pow %2, %2 : i32[2,3,2,3]
          %5 = reduce sum %2, axes=[3,1] : i32[2,2]
          %6 = constant 1.0 : f64[]
          %7 = cos %6 : f64[]
          %8 = constant [7.0, 2.0, 3.0] : f64[3]
          %9 = gather %8, %4, axis=0 : f64[2,3,2,3]
          %10 = slice %2, start=[0,0,0,0], limit=[1,3,2,3], stride=[1,1,1,1] : i32[1,3,2,3]
          %11 = concat %10, %2, %0, axis=0 : i32[11,3,2,3]
          output %7
          output %11
          output %5
          output %9
        }",
        &row_blocked(),
    );
}

/// `%3` broadcasts a value of the region (`%2`, whose first axis has the rows' length) along
/// the rows: its axis is not the rows, so the instruction is not row-local (it was taken as
/// one, and each block read the wrong elements).
#[test]
fn a_region_value_broadcast_across_the_rows_is_not_row_local() {
    planned_with(
        "program {
          %0 = weight \"w0\" : f32[7,7]
          %1 = iota axis=0 : f32[7]
          %2 = reduce prod %1, axes=[] : f32[7]
          %3 = broadcast %2, dims=[7,7], axes=[1] : f32[7,7]
          %4 = compare gt %3, %0 : bool[7,7]
          %5 = select %4, %3, %0 : f32[7,7]
          output %5
          output %3
        }",
        &row_blocked(),
    );
}
