//! The program's outputs: each output slot receives its value, unless planning already
//! stored it there (a value materialized while planning goes straight into the first output
//! slot that returns it, `Planner::destination`).

use super::expr::ExprKind;
use super::{elements, views, Pending, Planner};
use crate::error::CompileError;

impl Planner<'_> {
    /// Stores every output's value into its slot, unless planning already did.
    pub(super) fn outputs(&mut self) -> Result<(), CompileError> {
        let program = self.program;
        for (i, out) in program.outputs.iter().enumerate() {
            if self.output_done.get(i).copied().unwrap_or(true) {
                continue;
            }
            self.output_done[i] = true;
            let dst = self
                .output_bufs
                .get(i)
                .copied()
                .ok_or_else(|| CompileError::internal("output buffer missing"))?;
            let ty = self.ty(out.value)?;
            if elements(ty)? == 0 {
                continue;
            }
            let e = self.val(out.value)?;
            let expr = self.exprs.get(e)?.clone();
            if let ExprKind::Load { binding: buf, map } = &expr.kind {
                if *map == views::row_major(&ty.dims, map.offset)? {
                    let offset = u64::try_from(map.offset)
                        .map_err(|_| CompileError::internal("negative view offset"))?;
                    let size = ty.dtype.size_bytes();
                    self.push(Pending::Copy {
                        src: *buf,
                        src_offset: offset.saturating_mul(size),
                        dst,
                        len: elements(ty)?.saturating_mul(size),
                    })?;
                    continue;
                }
            }
            self.store_all(&ty.dims, e, dst)?;
        }
        Ok(())
    }
}
