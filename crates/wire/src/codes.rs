//! The stable numeric codes of wire format v1 and the fixed sizes of its headers.
//!
//! Every code is written out explicitly rather than derived from enum order or an `ALL` index,
//! so reordering or extending an IR enum can never silently change the meaning of existing
//! files. A code, once assigned, keeps its meaning for the whole major version; code 0 is never
//! assigned in any table, so zero-filled bytes are always refused. `docs/wire-format.md` lists
//! the same tables and a test checks that both agree.

use accy_ir::{BinaryOp, CompareOp, DType, ParamKind, ReduceOp, UnaryOp};

/// Bytes in the file header: magic, major, minor, section count.
pub(crate) const HEADER_LEN: usize = 16;

/// Bytes in a section header: id (u16), flags (u16), payload length (u64).
pub(crate) const SECTION_HEADER_LEN: usize = 12;

/// Section flag bit 0: a decoder that does not know the section must refuse the file.
pub(crate) const SECTION_REQUIRED: u16 = 0x0001;

/// Section ids of version 1.0. Each appears exactly once, in this order.
pub(crate) mod section {
    /// The parameter table.
    pub(crate) const PARAMS: u16 = 0x0001;
    /// The instruction list.
    pub(crate) const INSTRUCTIONS: u16 = 0x0002;
    /// The output list.
    pub(crate) const OUTPUTS: u16 = 0x0003;
}

/// Every section id of this version with its name, in the order sections must appear.
pub(crate) const SECTIONS: [(u16, &str); 3] = [
    (section::PARAMS, "params"),
    (section::INSTRUCTIONS, "instructions"),
    (section::OUTPUTS, "outputs"),
];

/// Opcodes: one per [`accy_ir::Op`] variant.
pub(crate) mod opcode {
    /// `Op::Unary`.
    pub(crate) const UNARY: u8 = 0x01;
    /// `Op::Binary`.
    pub(crate) const BINARY: u8 = 0x02;
    /// `Op::Compare`.
    pub(crate) const COMPARE: u8 = 0x03;
    /// `Op::Select`.
    pub(crate) const SELECT: u8 = 0x04;
    /// `Op::Convert`.
    pub(crate) const CONVERT: u8 = 0x05;
    /// `Op::Constant`.
    pub(crate) const CONSTANT: u8 = 0x06;
    /// `Op::Iota`.
    pub(crate) const IOTA: u8 = 0x07;
    /// `Op::Broadcast`.
    pub(crate) const BROADCAST: u8 = 0x08;
    /// `Op::Reshape`.
    pub(crate) const RESHAPE: u8 = 0x09;
    /// `Op::Transpose`.
    pub(crate) const TRANSPOSE: u8 = 0x0A;
    /// `Op::Slice`.
    pub(crate) const SLICE: u8 = 0x0B;
    /// `Op::Concat`.
    pub(crate) const CONCAT: u8 = 0x0C;
    /// `Op::Pad`.
    pub(crate) const PAD: u8 = 0x0D;
    /// `Op::Reverse`.
    pub(crate) const REVERSE: u8 = 0x0E;
    /// `Op::Reduce`.
    pub(crate) const REDUCE: u8 = 0x0F;
    /// `Op::Dot`.
    pub(crate) const DOT: u8 = 0x10;
    /// `Op::Gather`.
    pub(crate) const GATHER: u8 = 0x11;
    /// Never assigned: what the encoder writes for an op it does not know (possible only if
    /// `accy_ir::Op` grew a variant this crate has not caught up with), so such bytes fail to
    /// decode instead of decoding to something else.
    pub(crate) const INVALID: u8 = 0x00;
}

/// Every opcode with the name the documentation uses for it.
pub(crate) const OPCODES: [(u8, &str); 17] = [
    (opcode::UNARY, "unary"),
    (opcode::BINARY, "binary"),
    (opcode::COMPARE, "compare"),
    (opcode::SELECT, "select"),
    (opcode::CONVERT, "convert"),
    (opcode::CONSTANT, "constant"),
    (opcode::IOTA, "iota"),
    (opcode::BROADCAST, "broadcast"),
    (opcode::RESHAPE, "reshape"),
    (opcode::TRANSPOSE, "transpose"),
    (opcode::SLICE, "slice"),
    (opcode::CONCAT, "concat"),
    (opcode::PAD, "pad"),
    (opcode::REVERSE, "reverse"),
    (opcode::REDUCE, "reduce"),
    (opcode::DOT, "dot"),
    (opcode::GATHER, "gather"),
];

/// Dtype codes reserved for element types the IR does not have yet; a file of this minor
/// version that uses them is invalid, one of a newer minor is unsupported.
pub(crate) const RESERVED_DTYPES: [(u8, &str); 2] = [(0x07, "f16"), (0x08, "bf16")];

/// The wire code of a dtype. Returns 0 (never a valid code) for a dtype this crate does not
/// know yet, so that bytes written for it are refused by every decoder.
pub(crate) fn dtype_code(dtype: DType) -> u8 {
    match dtype {
        DType::F32 => 0x01,
        DType::F64 => 0x02,
        DType::I32 => 0x03,
        DType::I64 => 0x04,
        DType::U8 => 0x05,
        DType::Bool => 0x06,
        _ => 0x00,
    }
}

/// The dtype a wire code stands for.
pub(crate) fn dtype_from_code(code: u8) -> Option<DType> {
    lookup(&DType::ALL, dtype_code, code)
}

/// The wire code of a parameter kind.
pub(crate) fn param_kind_code(kind: ParamKind) -> u8 {
    match kind {
        ParamKind::Input => 0x01,
        ParamKind::Weight => 0x02,
    }
}

/// The parameter kind a wire code stands for.
pub(crate) fn param_kind_from_code(code: u8) -> Option<ParamKind> {
    lookup(
        &[ParamKind::Input, ParamKind::Weight],
        param_kind_code,
        code,
    )
}

/// The wire code of a unary function.
pub(crate) fn unary_code(op: UnaryOp) -> u8 {
    match op {
        UnaryOp::Neg => 0x01,
        UnaryOp::Abs => 0x02,
        UnaryOp::Sqrt => 0x03,
        UnaryOp::Rsqrt => 0x04,
        UnaryOp::Exp => 0x05,
        UnaryOp::Log => 0x06,
        UnaryOp::Tanh => 0x07,
        UnaryOp::Sigmoid => 0x08,
        UnaryOp::Erf => 0x09,
        UnaryOp::Sin => 0x0A,
        UnaryOp::Cos => 0x0B,
        UnaryOp::Floor => 0x0C,
        UnaryOp::Ceil => 0x0D,
        UnaryOp::Round => 0x0E,
        UnaryOp::Not => 0x0F,
    }
}

/// The unary function a wire code stands for.
pub(crate) fn unary_from_code(code: u8) -> Option<UnaryOp> {
    lookup(UnaryOp::ALL, unary_code, code)
}

/// The wire code of a binary function.
pub(crate) fn binary_code(op: BinaryOp) -> u8 {
    match op {
        BinaryOp::Add => 0x01,
        BinaryOp::Sub => 0x02,
        BinaryOp::Mul => 0x03,
        BinaryOp::Div => 0x04,
        BinaryOp::Rem => 0x05,
        BinaryOp::Pow => 0x06,
        BinaryOp::Max => 0x07,
        BinaryOp::Min => 0x08,
        BinaryOp::And => 0x09,
        BinaryOp::Or => 0x0A,
        BinaryOp::Xor => 0x0B,
        BinaryOp::Shl => 0x0C,
        BinaryOp::ShrLogical => 0x0D,
        BinaryOp::ShrArithmetic => 0x0E,
    }
}

/// The binary function a wire code stands for.
pub(crate) fn binary_from_code(code: u8) -> Option<BinaryOp> {
    lookup(BinaryOp::ALL, binary_code, code)
}

/// The wire code of a comparison.
pub(crate) fn compare_code(op: CompareOp) -> u8 {
    match op {
        CompareOp::Eq => 0x01,
        CompareOp::Ne => 0x02,
        CompareOp::Lt => 0x03,
        CompareOp::Le => 0x04,
        CompareOp::Gt => 0x05,
        CompareOp::Ge => 0x06,
    }
}

/// The comparison a wire code stands for.
pub(crate) fn compare_from_code(code: u8) -> Option<CompareOp> {
    lookup(CompareOp::ALL, compare_code, code)
}

/// The wire code of a reduction.
pub(crate) fn reduce_code(op: ReduceOp) -> u8 {
    match op {
        ReduceOp::Sum => 0x01,
        ReduceOp::Prod => 0x02,
        ReduceOp::Max => 0x03,
        ReduceOp::Min => 0x04,
    }
}

/// The reduction a wire code stands for.
pub(crate) fn reduce_from_code(code: u8) -> Option<ReduceOp> {
    lookup(ReduceOp::ALL, reduce_code, code)
}

/// Decoding goes through the same function as encoding, so the two directions cannot
/// disagree; code 0 is refused even if a wildcard arm produced it.
fn lookup<T: Copy>(all: &[T], code_of: fn(T) -> u8, code: u8) -> Option<T> {
    if code == 0 {
        return None;
    }
    all.iter().copied().find(|&v| code_of(v) == code)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::fmt::Debug;

    use super::*;

    /// Every variant has a nonzero code no other variant shares, and decoding the code gives
    /// the variant back.
    fn check_table<T: Copy + PartialEq + Debug>(
        all: &[T],
        code_of: fn(T) -> u8,
        from: fn(u8) -> Option<T>,
    ) {
        let mut seen = HashSet::new();
        for &v in all {
            let c = code_of(v);
            assert_ne!(c, 0, "{v:?} has the reserved code 0");
            assert!(seen.insert(c), "code {c:#04x} of {v:?} is used twice");
            assert_eq!(from(c), Some(v));
        }
        assert_eq!(from(0), None);
        let unassigned = (1..=255u8).find(|c| !seen.contains(c));
        if let Some(c) = unassigned {
            assert_eq!(from(c), None);
        }
    }

    #[test]
    fn every_variant_has_a_unique_code() {
        check_table(&DType::ALL, dtype_code, dtype_from_code);
        check_table(
            &[ParamKind::Input, ParamKind::Weight],
            param_kind_code,
            param_kind_from_code,
        );
        check_table(UnaryOp::ALL, unary_code, unary_from_code);
        check_table(BinaryOp::ALL, binary_code, binary_from_code);
        check_table(CompareOp::ALL, compare_code, compare_from_code);
        check_table(ReduceOp::ALL, reduce_code, reduce_from_code);
    }

    #[test]
    fn reserved_dtype_codes_are_not_assigned() {
        for (code, _) in RESERVED_DTYPES {
            assert_eq!(dtype_from_code(code), None);
            assert!(DType::ALL.iter().all(|&d| dtype_code(d) != code));
        }
    }

    #[test]
    fn opcodes_and_sections_are_unique_and_nonzero() {
        let codes: HashSet<u8> = OPCODES.iter().map(|&(c, _)| c).collect();
        assert_eq!(codes.len(), OPCODES.len());
        assert!(!codes.contains(&opcode::INVALID));
        let ids: HashSet<u16> = SECTIONS.iter().map(|&(id, _)| id).collect();
        assert_eq!(ids.len(), SECTIONS.len());
        assert!(!ids.contains(&0));
        assert!(SECTIONS.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
