//! The AVX-512 bit select (`x64/bit_select.rs`): which ORs it takes, and that the expansions
//! ending in one (tanh, erf) emit a `vpternlogd` for it (`A | (B & C)` or, where the
//! destination took over an AND operand's register, `B | (A & C)`). That it computes the same
//! bits is the conformance suite's: its `fma_bitcast` group runs bit-select shapes, and its
//! `math` group tanh, erf and pow, on every backend.

use accy_ir::{BinaryOp, DType, UnaryOp};

use super::encoding::disassemble;
use crate::compile::Options;
use crate::kernel::{Kernel, LoopKernel, Node};
use crate::target::Target;
use crate::testing::kernels::{elementwise, expanded_for, node};
use crate::x64::bit_select::or_and_selects;
use crate::x64::{X64Target, X64Tier};

fn binary(op: BinaryOp, lhs: u32, rhs: u32) -> Node {
    Node::Binary { op, lhs, rhs }
}

/// `or(%0, and(%1, %1))` over two i32 inputs (`%2` the AND, `%3` the OR), with `extra`
/// nodes after it.
fn or_of_and(extra: Vec<Node>) -> LoopKernel {
    let mut nodes = vec![
        node(binary(BinaryOp::And, 1, 1), DType::I32),
        node(binary(BinaryOp::Or, 0, 2), DType::I32),
    ];
    nodes.extend(extra.into_iter().map(|n| node(n, DType::I32)));
    elementwise("or_and", 64, &[DType::I32, DType::I32], nodes)
}

#[test]
fn an_or_absorbs_an_and_that_only_it_reads() {
    let k = or_of_and(Vec::new());
    let live = vec![true; k.nodes.len()];
    let uniform = vec![false; k.nodes.len()];
    let (or_and, absorbed) = or_and_selects(&k, &live, &uniform);
    let sel = or_and[3].expect("the OR is a bit select");
    assert_eq!((sel.keep, sel.and, sel.lhs, sel.rhs), (0, 2, 1, 1));
    assert_eq!(absorbed, [false, false, true, false]);
    // The AND read once more (by an XOR that is the result) stays an AND.
    let k = or_of_and(vec![binary(BinaryOp::Xor, 2, 3)]);
    let live = vec![true; k.nodes.len()];
    let uniform = vec![false; k.nodes.len()];
    let (or_and, absorbed) = or_and_selects(&k, &live, &uniform);
    assert!(or_and.iter().all(Option::is_none));
    assert!(absorbed.iter().all(|&a| !a));
    // Nor when the AND does not vary while the OR does.
    let k = or_of_and(Vec::new());
    let (or_and, _) = or_and_selects(&k, &live[..4], &[false, true, true, false]);
    assert!(or_and.iter().all(Option::is_none));
}

#[test]
fn tanh_and_erf_give_their_sign_bit_in_one_ternary_logic_op() {
    for op in [UnaryOp::Tanh, UnaryOp::Erf] {
        for dtype in [DType::F32, DType::F64] {
            let k = elementwise(
                "f",
                100,
                &[dtype],
                vec![node(Node::Unary { op, x: 0 }, dtype)],
            );
            let code = |tier| {
                let k = expanded_for(k.clone(), tier == X64Tier::Avx512).expect("expands");
                let code = X64Target::new(tier)
                    .emit(&[Kernel::Loop(k)], &Options::default())
                    .expect("emit");
                disassemble(&code.code).expect("decodes")
            };
            let zmm = code(X64Tier::Avx512);
            assert!(
                zmm.lines().any(|l| l.contains("vpternlogd zmm")
                    && (l.ends_with(",0xF8") || l.ends_with(",0xEC"))),
                "{op} {dtype}:\n{zmm}"
            );
            // AVX2 has no such instruction: an AND and an OR there.
            let ymm = code(X64Tier::Avx2);
            assert!(!ymm.contains("vpternlog"), "{op} {dtype}:\n{ymm}");
        }
    }
}

/// A kept value and an AND operand that are constants (hoisted out of the loop) still make
/// one `vpternlogd`.
#[test]
fn constant_operands_still_select_bits_in_one_op() {
    let k = elementwise(
        "bit_select_uniform",
        203,
        &[DType::I32],
        vec![
            node(Node::Const { bits: 0x5a5a }, DType::I32),
            node(Node::Const { bits: 0x0ff0_f00f }, DType::I32),
            node(binary(BinaryOp::And, 0, 2), DType::I32),
            node(binary(BinaryOp::Or, 1, 3), DType::I32),
        ],
    );
    let code = X64Target::new(X64Tier::Avx512)
        .emit(&[Kernel::Loop(k)], &Options::default())
        .expect("emit");
    let text = disassemble(&code.code).expect("decodes");
    assert!(text.contains("vpternlogd zmm"), "{text}");
}
