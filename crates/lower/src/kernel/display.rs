//! Kernels print themselves, as cranelift prints its IR: one header line with the iteration space,
//! one line per binding, one per node, the store, a kept value's store if the kernel has one
//! ([`super::Keep`]), the nodes known to be at most zero, a prefetch hint if the kernel has one and
//! a line per binding that lives in worker scratch. `accy inspect` shows this text.
//!
//! ```text
//! kernel `k0`: dims [64, 1000], 1 parallel + 1 reduced
//!   b0: r f32 x 64000
//!   b1: w f32 x 64
//!   %0 = load b0[0 + 1000*i0 + i1] : f32
//!   store max over reduction dims, %0 at b1[0 + i0]
//! ```

use std::fmt;

use super::{ContractionKernel, IndexMap, Kernel, LoopKernel, Node, Operand};

impl fmt::Display for IndexMap {
    /// `3 + 1000*i0 + i1`: the offset, then each non-zero stride's term.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.offset)?;
        for (d, &stride) in self.strides.iter().enumerate() {
            match stride {
                0 => {}
                1 => write!(f, " + i{d}")?,
                -1 => write!(f, " - i{d}")?,
                s if s < 0 => write!(f, " - {}*i{d}", s.unsigned_abs())?,
                s => write!(f, " + {s}*i{d}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Node {
    /// `load b0[0 + i0]`, `add %1, %2`, `gather b1[0 + clamp(%3, 0, 6) * 1]`, ….
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Load { binding, map } => write!(f, "load b{binding}[{map}]"),
            Node::Gather {
                binding,
                map,
                index,
                axis_len,
                axis_stride,
            } => write!(
                f,
                "gather b{binding}[{map} + clamp(%{index}, 0, {}) * {axis_stride}]",
                axis_len.saturating_sub(1)
            ),
            Node::Const { bits } => write!(f, "const {bits:#x}"),
            Node::Index { dim, scale, offset } => match dim {
                Some(d) => write!(f, "index {offset} + {scale}*i{d}"),
                None => write!(f, "index {offset}"),
            },
            Node::Unary { op, x } => write!(f, "{op} %{x}"),
            Node::Binary { op, lhs, rhs } => write!(f, "{op} %{lhs}, %{rhs}"),
            Node::Compare { op, lhs, rhs } => write!(f, "compare {op} %{lhs}, %{rhs}"),
            Node::Select {
                cond,
                on_true,
                on_false,
            } => write!(f, "select %{cond}, %{on_true}, %{on_false}"),
            Node::Convert { x } => write!(f, "convert %{x}"),
            Node::Acc => f.write_str("acc"),
            Node::Fma { a, b, c } => write!(f, "fma %{a}, %{b}, %{c}"),
            Node::ScaleB { x, n } => write!(f, "scaleb %{x}, %{n}"),
            Node::Bitcast { x } => write!(f, "bitcast %{x}"),
        }
    }
}

impl fmt::Display for LoopKernel {
    /// The whole kernel, one item per line (see the module documentation).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.dims.iter().map(u64::to_string).collect();
        write!(
            f,
            "kernel `{}`: dims [{}], {} parallel",
            self.name,
            dims.join(", "),
            self.parallel_rank
        )?;
        let reduced = self.reduction_dims().len();
        if reduced > 0 || self.reduction.is_some() {
            write!(f, " + {reduced} reduced")?;
        }
        writeln!(f)?;
        for (b, binding) in self.bindings.iter().enumerate() {
            writeln!(
                f,
                "  b{b}: {} {} x {}",
                binding.access, binding.dtype, binding.elements
            )?;
        }
        for (n, node) in self.nodes.iter().enumerate() {
            writeln!(f, "  %{n} = {} : {}", node.node, node.dtype)?;
        }
        let combine = self
            .reduction
            .map(|r| format!("{r} over reduction dims, "))
            .unwrap_or_default();
        writeln!(
            f,
            "  store {combine}%{} at b{}[{}]",
            self.result, self.store.binding, self.store.map
        )?;
        if let Some(k) = &self.keep {
            writeln!(
                f,
                "  keep %{} at b{}[{}] at every point",
                k.node, k.binding, k.map
            )?;
        }
        if !self.at_most_zero.is_empty() {
            let nodes: Vec<String> = self.at_most_zero.iter().map(|n| format!("%{n}")).collect();
            writeln!(f, "  at most zero or NaN: {}", nodes.join(", "))?;
        }
        if let Some(p) = self.prefetch {
            writeln!(
                f,
                "  prefetch b{} {} elements ahead of each vector load",
                p.binding, p.ahead
            )?;
        }
        for r in &self.row_scratch {
            writeln!(
                f,
                "  b{} in worker scratch: one workgroup's rows at +{}, {} bytes a row, {} bytes",
                r.binding, r.offset, r.row_bytes, r.bytes
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::Loop(k) => fmt::Display::fmt(k, f),
            Kernel::Contraction(k) => fmt::Display::fmt(k, f),
        }
    }
}

/// `b1[0 + 784*i1 + i2]`, or `b1 panels of 16 at 0 (batch stride 0)`.
fn operand(f: &mut fmt::Formatter<'_>, o: &Operand) -> fmt::Result {
    match o.panels {
        None => write!(f, "b{}[{}]", o.binding, o.map),
        Some(w) => write!(
            f,
            "b{} panels of {w} at {} (batch stride {})",
            o.binding,
            o.map.offset,
            o.map.strides.first().copied().unwrap_or(0)
        ),
    }
}

impl fmt::Display for ContractionKernel {
    /// Like a loop kernel: a header with the product's shape and tile, the bindings, the
    /// operands (maps over `(i0, i1, i2)` = `(b, m, k)` and `(b, k, n)`), the epilogue nodes
    /// and the store (over `(b, m, n)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel `{}`: contraction {} x [{}x{}] (k {}) {}, tile {}x{}, ",
            self.name, self.batch, self.m, self.n, self.k, self.dtype, self.tile_m, self.tile_n,
        )?;
        if self.tile_k < self.k {
            write!(f, "k blocks of {} outermost", self.tile_k)?;
        } else {
            f.write_str("k in one block")?;
        }
        if self.copy_a {
            f.write_str(", A's row panels copied")?;
        }
        writeln!(f, ", {} workgroups", self.workgroups())?;
        for (b, binding) in self.bindings.iter().enumerate() {
            writeln!(
                f,
                "  b{b}: {} {} x {}",
                binding.access, binding.dtype, binding.elements
            )?;
        }
        f.write_str("  lhs ")?;
        operand(f, &self.lhs)?;
        f.write_str("\n  rhs ")?;
        operand(f, &self.rhs)?;
        writeln!(f)?;
        for (n, node) in self.epilogue.iter().enumerate() {
            writeln!(f, "  %{n} = {} : {}", node.node, node.dtype)?;
        }
        writeln!(
            f,
            "  store %{} at b{}[{}]",
            self.result, self.store.binding, self.store.map
        )
    }
}

#[cfg(test)]
mod tests {
    use accy_ir::{BinaryOp, DType, ReduceOp};

    use crate::testing::kernels::{binary_2d, reduce_2d};

    #[test]
    fn kernels_print_their_space_bindings_nodes_and_store() {
        let k = reduce_2d(ReduceOp::Max, DType::F32, 64, 1000);
        assert_eq!(
            k.to_string(),
            "kernel `reduce_max_f32_64x1000`: dims [64, 1000], 1 parallel + 1 reduced\n\
             \x20 b0: r f32 x 64000\n\
             \x20 b1: w f32 x 64\n\
             \x20 %0 = load b0[0 + 1000*i0 + i1] : f32\n\
             \x20 store max over reduction dims, %0 at b1[0 + i0]\n"
        );
        let k = binary_2d(
            [3, 4],
            DType::I32,
            (12, 11, [-4, -1]),
            (4, 0, [0, 1]),
            BinaryOp::Sub,
        );
        let text = k.to_string();
        assert!(
            text.contains("%0 = load b0[11 - 4*i0 - i1] : i32"),
            "{text}"
        );
        assert!(text.contains("%2 = sub %0, %1 : i32"), "{text}");
        assert!(text.contains("store %2 at b2[0 + 4*i0 + i1]"), "{text}");
    }
}
