//! [`Builder`]: appends the nodes of an expansion to a kernel's node list, one method per
//! operation, so that each function in this module reads like the arithmetic it performs.
//!
//! A builder works in one float dtype (f32 or f64) and its same-size integer (i32 or i64).
//! Constants are deduplicated per kernel, so expansions that share coefficients or a kernel
//! with several transcendentals keep one node (and, on the vector paths, one register) per
//! distinct constant.

use std::collections::HashMap;

use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};

use crate::kernel::{KernelNode, Node, NodeId};

/// A node id of the node list being built.
pub(crate) type V = NodeId;

/// The facts of one float format the expansions need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Format {
    /// The float dtype.
    pub float: DType,
    /// The integer dtype of the same size.
    pub int: DType,
    /// Stored mantissa bits (23 or 52).
    pub mantissa: u32,
    /// Exponent bias (127 or 1023).
    pub bias: i64,
}

impl Format {
    /// The format of `dtype`, if it is f32 or f64.
    pub(crate) fn of(dtype: DType) -> Option<Format> {
        match dtype {
            DType::F32 => Some(Format {
                float: DType::F32,
                int: DType::I32,
                mantissa: 23,
                bias: 127,
            }),
            DType::F64 => Some(Format {
                float: DType::F64,
                int: DType::I64,
                mantissa: 52,
                bias: 1023,
            }),
            _ => None,
        }
    }

    /// True for f64.
    pub(crate) fn wide(self) -> bool {
        self.float == DType::F64
    }

    /// `1.5 · 2^mantissa`: adding it to a float of magnitude below `2^(mantissa - 1)` rounds
    /// that float to an integer, which the sum's low mantissa bits then hold (two's
    /// complement).
    pub(crate) fn magic(self) -> f64 {
        1.5 * 2f64.powi(self.mantissa as i32)
    }

    /// The bits of `v` rounded to this format.
    pub(crate) fn bits(self, v: f64) -> u64 {
        if self.wide() {
            v.to_bits()
        } else {
            u64::from((v as f32).to_bits())
        }
    }
}

/// Appends expansion nodes to a node list.
pub(crate) struct Builder<'a> {
    nodes: &'a mut Vec<KernelNode>,
    consts: &'a mut HashMap<(DType, u64), NodeId>,
    /// The format the expansion computes in.
    pub fmt: Format,
    /// Whether [`Builder::scale_b`] may be used (the target has the instruction).
    pub has_scale_b: bool,
}

impl<'a> Builder<'a> {
    /// A builder appending to `nodes` in `fmt`, sharing `consts` (the constants already in
    /// `nodes`, by dtype and bits) with every other builder of the same list; `has_scale_b`
    /// when the target computes [`Node::ScaleB`] in one instruction.
    pub(crate) fn new(
        nodes: &'a mut Vec<KernelNode>,
        consts: &'a mut HashMap<(DType, u64), NodeId>,
        fmt: Format,
        has_scale_b: bool,
    ) -> Builder<'a> {
        Builder {
            nodes,
            consts,
            fmt,
            has_scale_b,
        }
    }

    fn push(&mut self, node: Node, dtype: DType) -> V {
        self.nodes.push(KernelNode { node, dtype });
        (self.nodes.len() - 1) as V
    }

    fn dtype(&self, v: V) -> DType {
        self.nodes
            .get(v as usize)
            .map_or(self.fmt.float, |n| n.dtype)
    }

    fn konst(&mut self, dtype: DType, bits: u64) -> V {
        if let Some(&v) = self.consts.get(&(dtype, bits)) {
            return v;
        }
        let v = self.push(Node::Const { bits }, dtype);
        self.consts.insert((dtype, bits), v);
        v
    }

    /// The float constant `v` (rounded to the format).
    pub(crate) fn f(&mut self, v: f64) -> V {
        let bits = self.fmt.bits(v);
        self.konst(self.fmt.float, bits)
    }

    /// The integer constant `v` (wrapped to the format's integer width).
    pub(crate) fn i(&mut self, v: i64) -> V {
        let bits = if self.fmt.wide() {
            v as u64
        } else {
            u64::from(v as i32 as u32)
        };
        self.konst(self.fmt.int, bits)
    }

    fn binary(&mut self, op: BinaryOp, a: V, b: V) -> V {
        let dtype = self.dtype(a);
        self.push(Node::Binary { op, lhs: a, rhs: b }, dtype)
    }

    fn unary(&mut self, op: UnaryOp, x: V) -> V {
        let dtype = self.dtype(x);
        self.push(Node::Unary { op, x }, dtype)
    }

    /// `a + b` (floats or integers).
    pub(crate) fn add(&mut self, a: V, b: V) -> V {
        self.binary(BinaryOp::Add, a, b)
    }

    /// `a - b`.
    pub(crate) fn sub(&mut self, a: V, b: V) -> V {
        self.binary(BinaryOp::Sub, a, b)
    }

    /// `a · b`.
    pub(crate) fn mul(&mut self, a: V, b: V) -> V {
        self.binary(BinaryOp::Mul, a, b)
    }

    /// `a / b`.
    pub(crate) fn div(&mut self, a: V, b: V) -> V {
        self.binary(BinaryOp::Div, a, b)
    }

    /// `a · b + c`, rounded once.
    pub(crate) fn fma(&mut self, a: V, b: V, c: V) -> V {
        let dtype = self.dtype(a);
        self.push(Node::Fma { a, b, c }, dtype)
    }

    /// `x · 2^⌊n⌋` rounded once; only when [`Builder::has_scale_b`].
    pub(crate) fn scale_b(&mut self, x: V, n: V) -> V {
        let dtype = self.dtype(x);
        self.push(Node::ScaleB { x, n }, dtype)
    }

    /// `-x`.
    pub(crate) fn neg(&mut self, x: V) -> V {
        self.unary(UnaryOp::Neg, x)
    }

    /// `√x`, correctly rounded.
    pub(crate) fn sqrt(&mut self, x: V) -> V {
        self.unary(UnaryOp::Sqrt, x)
    }

    /// `|x|`.
    pub(crate) fn abs(&mut self, x: V) -> V {
        self.unary(UnaryOp::Abs, x)
    }

    /// Integer `a & b`.
    pub(crate) fn and(&mut self, a: V, b: V) -> V {
        self.binary(BinaryOp::And, a, b)
    }

    /// Integer `a | b`.
    pub(crate) fn or(&mut self, a: V, b: V) -> V {
        self.binary(BinaryOp::Or, a, b)
    }

    /// Integer `a ^ b`.
    pub(crate) fn xor(&mut self, a: V, b: V) -> V {
        self.binary(BinaryOp::Xor, a, b)
    }

    /// Integer `a << amount` (a constant below the width).
    pub(crate) fn shl(&mut self, a: V, amount: i64) -> V {
        let n = self.i(amount);
        self.binary(BinaryOp::Shl, a, n)
    }

    /// Integer `a >> amount`, zeros shifted in (a constant below the width).
    pub(crate) fn shr(&mut self, a: V, amount: i64) -> V {
        let n = self.i(amount);
        self.binary(BinaryOp::ShrLogical, a, n)
    }

    fn compare(&mut self, op: CompareOp, a: V, b: V) -> V {
        self.push(Node::Compare { op, lhs: a, rhs: b }, DType::Bool)
    }

    /// `a < b` (false when either is NaN).
    pub(crate) fn lt(&mut self, a: V, b: V) -> V {
        self.compare(CompareOp::Lt, a, b)
    }

    /// `a <= b` (false when either is NaN).
    pub(crate) fn le(&mut self, a: V, b: V) -> V {
        self.compare(CompareOp::Le, a, b)
    }

    /// `a == b` (false when either is NaN).
    pub(crate) fn eq(&mut self, a: V, b: V) -> V {
        self.compare(CompareOp::Eq, a, b)
    }

    /// `a != b` (true when either is NaN).
    pub(crate) fn ne(&mut self, a: V, b: V) -> V {
        self.compare(CompareOp::Ne, a, b)
    }

    /// `c ? t : f`.
    pub(crate) fn select(&mut self, c: V, t: V, f: V) -> V {
        let dtype = self.dtype(t);
        self.push(
            Node::Select {
                cond: c,
                on_true: t,
                on_false: f,
            },
            dtype,
        )
    }

    /// The bits of float `x` as an integer.
    pub(crate) fn bits(&mut self, x: V) -> V {
        let int = self.fmt.int;
        self.push(Node::Bitcast { x }, int)
    }

    /// The float whose bits are integer `i`.
    pub(crate) fn float(&mut self, i: V) -> V {
        let float = self.fmt.float;
        self.push(Node::Bitcast { x: i }, float)
    }

    /// `m` (+0 or more, or NaN) with the sign bit of `x`: how an odd function computed on
    /// `|x|` gets its sign, two integer operations on the bits.
    pub(crate) fn with_sign_of(&mut self, m: V, x: V) -> V {
        let sign_bit = self.i(if self.fmt.wide() {
            i64::MIN
        } else {
            i64::from(i32::MIN)
        });
        let x_bits = self.bits(x);
        let sign = self.and(x_bits, sign_bit);
        let m_bits = self.bits(m);
        let signed = self.or(m_bits, sign);
        self.float(signed)
    }

    /// `Σ c[k] x^k` by Horner's rule, one fused multiply-add per coefficient after the first.
    pub(crate) fn poly(&mut self, x: V, c: &[f64]) -> V {
        let mut coefficients = c.iter().rev();
        let top = coefficients.next().copied().unwrap_or(0.0);
        let mut acc = self.f(top);
        for &ck in coefficients {
            let ck = self.f(ck);
            acc = self.fma(acc, x, ck);
        }
        acc
    }

    /// The format's constants for f32 and f64, picked by [`Format::wide`].
    pub(crate) fn pick<T>(&self, f32: T, f64: T) -> T {
        if self.fmt.wide() {
            f64
        } else {
            f32
        }
    }
}
