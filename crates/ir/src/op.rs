//! The operations of the IR and their exact semantics.
//!
//! Every rule here is what the reference interpreter implements and what generated code must
//! reproduce: where hardware differs (x86 `idiv` faults on division by zero, `maxps` is not
//! NaN-propagating), the lowering must produce these results anyway. None of the ops traps.
//!
//! Conventions that hold for every op:
//! - **No implicit broadcasting.** Elementwise ops take operands of identical dims; use
//!   [`Op::Broadcast`] to expand a tensor first.
//! - **Integers wrap.** Integer arithmetic is two's-complement modulo 2^bits (u8 modulo 256).
//! - **Floats are IEEE 754** with round-to-nearest-even, no flush of subnormals. When an op
//!   produces a NaN, which NaN (payload and sign) is unspecified; every consumer must treat
//!   all NaNs alike. Approximated functions (`exp`, `log`, `tanh`, `sigmoid`, `erf`, `sin`,
//!   `cos`, `pow`) are within the ULP bounds `docs/accuracy.md` states and measures
//!   (≤ 1 ULP exp, log, sigmoid; ≤ 2 ULP tanh, erf, pow, sin, cos); the interpreter uses
//!   `accy_math` (the host's math library, `libm` for `erf`, its own `sigmoid`), and
//!   compiled code either calls the same functions (exact mode) or evaluates its own
//!   vectorised expansions within those bounds (default mode).
//! - **Zero-size tensors** are legal operands and results of every op. A zero-size tensor
//!   holds 0 bytes whatever its other dims, but those dims obey the same size rule as any
//!   type's: the product of a type's non-zero dims times the element size must fit `isize`
//!   (so `f32[0,4]` is valid and `f32[0,18446744073709551615]` is not).

use std::fmt;

use crate::{DType, Dim, Dims, Tensor, Type, ValueId};
use smallvec::SmallVec;

/// Axis indices or permutations (at most [`crate::MAX_RANK`] entries).
pub type Axes = SmallVec<[u32; 4]>;

macro_rules! op_names {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The mnemonic the text format uses.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// The variant a mnemonic from `name` stands for.
            pub fn from_name(text: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.name() == text)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

op_names! {
    /// Elementwise functions of one operand. The result has the operand's type.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum UnaryOp {
        /// Numeric. Floats flip the sign bit (so `neg(0.0) = -0.0`, NaN stays NaN); integers
        /// wrap (`neg(i32::MIN) = i32::MIN`, `neg(u8 x) = 256 - x mod 256`).
        Neg = "neg",
        /// Numeric. Floats clear the sign bit; signed integers wrap (`abs(MIN) = MIN`); u8 is
        /// unchanged.
        Abs = "abs",
        /// Float only. IEEE square root, correctly rounded: `sqrt(-0.0) = -0.0`,
        /// `sqrt(x < 0) = NaN`.
        Sqrt = "sqrt",
        /// Float only. `1 / sqrt(x)` computed as a correctly rounded sqrt followed by a
        /// correctly rounded division: `rsqrt(0) = +inf`, `rsqrt(-0.0) = -inf`,
        /// `rsqrt(+inf) = 0`, `rsqrt(x < 0) = NaN`.
        Rsqrt = "rsqrt",
        /// Float only. e^x; `exp(-inf) = 0`, `exp(+inf) = +inf`, overflow gives +inf.
        Exp = "exp",
        /// Float only. Natural logarithm; `log(0) = -inf`, `log(x < 0) = NaN`.
        Log = "log",
        /// Float only. Hyperbolic tangent, in [-1, 1]; `tanh(±inf) = ±1`.
        Tanh = "tanh",
        /// Float only. The logistic function `1 / (1 + exp(-x))`, in [0, 1]; `sigmoid(-inf) = 0`,
        /// `sigmoid(+inf) = 1`. Within 1 ULP, and positive for every x whose true value does
        /// not round to 0 (so `sigmoid(-95.0f32) ≈ 5.5e-42`): the interpreter evaluates f32 in
        /// f64, and f64 as `exp(x) / (1 + exp(x))` for x < 0 (`1 / (1 + exp(-x))` otherwise)
        /// with both roundings of the quotient corrected (`accy_math::sigmoid_f64`).
        Sigmoid = "sigmoid",
        /// Float only. The error function; `erf(±inf) = ±1`.
        Erf = "erf",
        /// Float only. Sine of x radians; `sin(±inf) = NaN`.
        Sin = "sin",
        /// Float only. Cosine of x radians; `cos(±inf) = NaN`.
        Cos = "cos",
        /// Float only. Largest integral value ≤ x (sign of zero and infinities preserved).
        Floor = "floor",
        /// Float only. Smallest integral value ≥ x (`ceil(-0.5) = -0.0`).
        Ceil = "ceil",
        /// Float only. Nearest integral value, ties to even (`round(2.5) = 2`,
        /// `round(-0.5) = -0.0`), as ONNX `Round` and IEEE `roundToIntegralTiesToEven`.
        Round = "round",
        /// Bool: logical not. Integers: bitwise complement (`not(u8 0) = 255`).
        Not = "not",
    }
}

op_names! {
    /// Elementwise functions of two operands of identical type. The result has that type.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum BinaryOp {
        /// Numeric. Integers wrap.
        Add = "add",
        /// Numeric. Integers wrap.
        Sub = "sub",
        /// Numeric. Integers wrap (the low bits of the full product).
        Mul = "mul",
        /// Numeric. Floats: IEEE division (`x / 0 = ±inf`, `0 / 0 = NaN`). Integers truncate
        /// toward zero; **`x / 0 = 0`** and **`MIN / -1 = MIN`** (the wrapped quotient), which
        /// is what AArch64 `sdiv`/`udiv` produce; no case traps.
        Div = "div",
        /// Numeric. Floats: `fmod` — `x - trunc(x / y) * y` computed exactly, sign of `x`;
        /// `rem(x, 0) = NaN`, `rem(±inf, y) = NaN`, `rem(x, ±inf) = x` for finite x.
        /// Integers: the remainder of truncating division, sign of the dividend;
        /// **`x rem 0 = x`** and **`MIN rem -1 = 0`**, so `x == (x / y) * y + x rem y` always
        /// holds with wrapping arithmetic.
        Rem = "rem",
        /// Numeric. Floats: C `pow` (`pow(x, 0) = 1` even for NaN x, `pow(1, y) = 1` even for
        /// NaN y, `pow(x < 0, non-integer) = NaN`). Integers: repeated wrapping multiplication
        /// (`pow(x, 0) = 1`, including `pow(0, 0) = 1`); a negative exponent gives `1` for
        /// base 1, `±1` for base -1 (by the exponent's parity) and `0` for any other base,
        /// including 0 (no division by zero).
        Pow = "pow",
        /// Numeric. Floats: NaN if either operand is NaN, and `max(-0.0, 0.0) = 0.0`
        /// (IEEE 754-2019 `maximum`). Integers: the larger value.
        Max = "max",
        /// Numeric. Floats: NaN if either operand is NaN, and `min(-0.0, 0.0) = -0.0`
        /// (IEEE 754-2019 `minimum`). Integers: the smaller value.
        Min = "min",
        /// Bool (logical) and integers (bitwise).
        And = "and",
        /// Bool (logical) and integers (bitwise).
        Or = "or",
        /// Bool (logical) and integers (bitwise).
        Xor = "xor",
        /// Integers only. `x << y`; an amount outside `0..bits` (negative, or ≥ 32/64/8)
        /// gives 0.
        Shl = "shl",
        /// Integers only. Logical right shift (zeros shifted in, the value taken as unsigned
        /// bits); an amount outside `0..bits` gives 0.
        ShrLogical = "shr_logical",
        /// Integers only. Arithmetic right shift (sign bits shifted in; u8 has no sign so it
        /// equals `shr_logical`); an amount outside `0..bits` gives `-1` for a negative `x`
        /// and `0` otherwise, as if shifting by `bits - 1`.
        ShrArithmetic = "shr_arithmetic",
    }
}

op_names! {
    /// Elementwise comparisons of two operands of identical type; the result is bool with the
    /// operands' dims.
    ///
    /// Floats compare as IEEE values: `-0.0 == 0.0`; any comparison with NaN is false except
    /// `ne`, which is true. Integers compare by value (u8 unsigned). Bools order false < true.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum CompareOp {
        /// Equal.
        Eq = "eq",
        /// Not equal (true when either float operand is NaN).
        Ne = "ne",
        /// Less than.
        Lt = "lt",
        /// Less than or equal.
        Le = "le",
        /// Greater than.
        Gt = "gt",
        /// Greater than or equal.
        Ge = "ge",
    }
}

op_names! {
    /// How [`Op::Reduce`] combines elements, and the identity an empty reduction yields.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum ReduceOp {
        /// Numeric. Identity 0. Integers wrap. Floats: the interpreter adds in row-major order
        /// of the reduced indices; generated code may reassociate, so float sums are compared
        /// with a tolerance that grows with the reduced count (see the differential tests).
        Sum = "sum",
        /// Numeric. Identity 1. Integers wrap. Floats: same ordering rule as `sum`.
        Prod = "prod",
        /// All dtypes. Identity: -inf (floats), MIN (signed), 0 (u8), false (bool). Floats
        /// propagate NaN as [`BinaryOp::Max`] does; order does not change the result.
        Max = "max",
        /// All dtypes. Identity: +inf (floats), MAX (signed), 255 (u8), true (bool). Floats
        /// propagate NaN as [`BinaryOp::Min`] does.
        Min = "min",
    }
}

/// One SSA instruction's operation and operands. Each instruction defines exactly one value,
/// whose type the enclosing [`crate::Instruction`] declares; the verifier checks that type
/// against the rules documented on each variant (implemented in [`crate::infer_type`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// `op(x)` elementwise; see [`UnaryOp`] for the dtypes each function accepts.
    Unary {
        /// The function.
        op: UnaryOp,
        /// Operand.
        x: ValueId,
    },
    /// `op(lhs, rhs)` elementwise; operands must have identical types.
    Binary {
        /// The function.
        op: BinaryOp,
        /// Left operand.
        lhs: ValueId,
        /// Right operand.
        rhs: ValueId,
    },
    /// Elementwise comparison of operands of identical type; the result is bool.
    Compare {
        /// The relation.
        op: CompareOp,
        /// Left operand.
        lhs: ValueId,
        /// Right operand.
        rhs: ValueId,
    },
    /// `cond ? on_true : on_false` elementwise. `cond` is bool with the same dims as the two
    /// branches, which have identical types; the result has the branches' type.
    Select {
        /// Bool condition.
        cond: ValueId,
        /// Taken where `cond` is true.
        on_true: ValueId,
        /// Taken where `cond` is false.
        on_false: ValueId,
    },
    /// Elementwise conversion to `to`, with Rust `as` semantics throughout:
    /// float → integer truncates toward zero and saturates to the target's range, NaN → 0;
    /// integer → float and f64 → f32 round to nearest even (overflow to f32 gives ±inf);
    /// integer → integer keeps the low bits (wraps), sign-extending from signed sources;
    /// anything → bool is `x != 0` (so NaN → true, -0.0 → false); bool → anything is 0 or 1.
    Convert {
        /// Operand.
        x: ValueId,
        /// Target dtype; dims are unchanged.
        to: DType,
    },
    /// A literal tensor embedded in the program; the result has the tensor's type.
    Constant(Tensor),
    /// A tensor of the given type whose element at index `(i0, …, in)` is `i_axis` converted
    /// to the dtype (as by `convert` from i64). Numeric dtypes only; `axis < rank`.
    Iota {
        /// The result type.
        ty: Type,
        /// The axis whose index is the value.
        axis: u32,
    },
    /// Expands `x` to `dims`. Operand axis `i` maps to result axis `axes[i]`; `axes` is
    /// strictly increasing, has one entry per operand axis, and each mapped operand dim equals
    /// the result dim or is 1 (then it is repeated). Result axes not named in `axes` repeat the
    /// operand. `result[j] = x[k]` with `k_i = j_{axes[i]}` (or 0 where the operand dim is 1).
    Broadcast {
        /// Operand.
        x: ValueId,
        /// Result dims.
        dims: Dims,
        /// For each operand axis, the result axis it becomes.
        axes: Axes,
    },
    /// The same elements in row-major order under new dims with the same element count.
    Reshape {
        /// Operand.
        x: ValueId,
        /// Result dims.
        dims: Dims,
    },
    /// Permutes axes: result axis `i` is operand axis `perm[i]`, so
    /// `result.dims[i] = x.dims[perm[i]]`. `perm` is a permutation of `0..rank`.
    Transpose {
        /// Operand.
        x: ValueId,
        /// The permutation.
        perm: Axes,
    },
    /// Strided sub-range per axis: `result[j] = x[start + j * stride]` elementwise over axes,
    /// with `start ≤ limit ≤ dim`, `stride ≥ 1`, and result dim `ceil((limit - start) / stride)`.
    Slice {
        /// Operand.
        x: ValueId,
        /// First index per axis.
        start: Dims,
        /// One past the last index per axis.
        limit: Dims,
        /// Step per axis (≥ 1).
        stride: Dims,
    },
    /// Joins one or more operands of the same dtype and rank along `axis`; all other dims must
    /// be equal. The result's `axis` dim is the sum of the operands'.
    Concat {
        /// Operands, in order along `axis` (at least one).
        xs: SmallVec<[ValueId; 4]>,
        /// The joining axis.
        axis: u32,
    },
    /// Pads `x` with the rank-0 `value` (same dtype): per axis, `low` elements before,
    /// `high` after and `interior` between adjacent elements. Negative `low`/`high` remove
    /// elements from that edge instead. The result dim is
    /// `low + high + dim + max(dim - 1, 0) * interior` and must not be negative.
    Pad {
        /// Operand.
        x: ValueId,
        /// Rank-0 padding value of `x`'s dtype.
        value: ValueId,
        /// Elements added (or, when negative, removed) before each axis.
        low: SmallVec<[i64; 4]>,
        /// Elements added (or, when negative, removed) after each axis.
        high: SmallVec<[i64; 4]>,
        /// Elements inserted between neighbours along each axis.
        interior: Dims,
    },
    /// Reverses the order of elements along each axis in `axes` (distinct, each `< rank`).
    Reverse {
        /// Operand.
        x: ValueId,
        /// Axes to reverse.
        axes: Axes,
    },
    /// Combines elements over `axes` (distinct, each `< rank`, in any order; empty is the
    /// identity map) with `op`; the result drops those axes and keeps the others in order.
    /// Reducing zero elements gives the op's identity (see [`ReduceOp`]).
    Reduce {
        /// How elements combine.
        op: ReduceOp,
        /// Operand.
        x: ValueId,
        /// Axes reduced away.
        axes: Axes,
    },
    /// Batched tensor contraction (XLA `DotGeneral`). Operands share a numeric dtype.
    /// `lhs_batch[i]` pairs with `rhs_batch[i]` (equal dims), `lhs_contract[i]` with
    /// `rhs_contract[i]` (equal dims); all listed axes are distinct within each operand.
    /// Result dims: the batch dims (in `lhs_batch` order), then lhs's remaining axes in order,
    /// then rhs's remaining axes in order. Each element is the sum over all contracting index
    /// tuples (row-major order) of `lhs * rhs`, in the operand dtype: integers wrap, floats
    /// accumulate in that dtype (an empty contraction gives 0), compared with a tolerance.
    Dot {
        /// Left operand.
        lhs: ValueId,
        /// Right operand.
        rhs: ValueId,
        /// Batch axes of `lhs`.
        lhs_batch: Axes,
        /// Batch axes of `rhs`, paired with `lhs_batch`.
        rhs_batch: Axes,
        /// Contracting axes of `lhs`.
        lhs_contract: Axes,
        /// Contracting axes of `rhs`, paired with `lhs_contract`.
        rhs_contract: Axes,
    },
    /// Picks slices of `x` along `axis` by the integer (i32, i64 or u8) `indices`:
    /// result dims are `x.dims[..axis] ++ indices.dims ++ x.dims[axis+1..]` and
    /// `result[a.., i.., b..] = x[a.., clamp(indices[i..], 0, dim - 1), b..]`: an index below
    /// 0 reads element 0 and one past the end reads the last, as XLA clamps (no fault, no
    /// wrap-around). If `x.dims[axis]` is 0, `indices` must have no elements.
    Gather {
        /// The tensor read from.
        x: ValueId,
        /// Integer indices into `axis`.
        indices: ValueId,
        /// The axis indexed.
        axis: u32,
    },
}

impl Op {
    /// The text-format mnemonic of this op (`add`, `broadcast`, `reduce`, …).
    pub fn mnemonic(&self) -> &'static str {
        match self {
            Op::Unary { op, .. } => op.name(),
            Op::Binary { op, .. } => op.name(),
            Op::Compare { .. } => "compare",
            Op::Select { .. } => "select",
            Op::Convert { .. } => "convert",
            Op::Constant(_) => "constant",
            Op::Iota { .. } => "iota",
            Op::Broadcast { .. } => "broadcast",
            Op::Reshape { .. } => "reshape",
            Op::Transpose { .. } => "transpose",
            Op::Slice { .. } => "slice",
            Op::Concat { .. } => "concat",
            Op::Pad { .. } => "pad",
            Op::Reverse { .. } => "reverse",
            Op::Reduce { .. } => "reduce",
            Op::Dot { .. } => "dot",
            Op::Gather { .. } => "gather",
        }
    }

    /// The values this op reads, in operand order.
    pub fn operands(&self) -> SmallVec<[ValueId; 4]> {
        match self {
            Op::Unary { x, .. }
            | Op::Convert { x, .. }
            | Op::Broadcast { x, .. }
            | Op::Reshape { x, .. }
            | Op::Transpose { x, .. }
            | Op::Slice { x, .. }
            | Op::Reverse { x, .. }
            | Op::Reduce { x, .. } => smallvec::smallvec![*x],
            Op::Binary { lhs, rhs, .. }
            | Op::Compare { lhs, rhs, .. }
            | Op::Dot { lhs, rhs, .. } => {
                smallvec::smallvec![*lhs, *rhs]
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => smallvec::smallvec![*cond, *on_true, *on_false],
            Op::Constant(_) | Op::Iota { .. } => SmallVec::new(),
            Op::Concat { xs, .. } => xs.clone(),
            Op::Pad { x, value, .. } => smallvec::smallvec![*x, *value],
            Op::Gather { x, indices, .. } => smallvec::smallvec![*x, *indices],
        }
    }
}

/// Dims given as a plain slice, for constructing ops in tests and builders.
pub fn dims(d: &[Dim]) -> Dims {
    Dims::from_slice(d)
}

/// Axes given as a plain slice, for constructing ops in tests and builders.
pub fn axes(a: &[u32]) -> Axes {
    Axes::from_slice(a)
}
