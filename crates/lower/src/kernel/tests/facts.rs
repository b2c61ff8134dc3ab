//! Validation rule 9: what `LoopKernel::at_most_zero` may name.

use super::*;

#[test]
fn at_most_zero_names_float_nodes() {
    let mut k = exp_kernel();
    k.at_most_zero = vec![0, 1];
    k.validate().unwrap();
    assert!(k.to_string().contains("at most zero or NaN: %0, %1"));
    k.at_most_zero = vec![9];
    assert_eq!(
        k.validate(),
        Err(KernelError::AtMostZero {
            kernel: "exp".into(),
            node: 9
        })
    );
    // A bool node is no float.
    k.nodes.push(node(
        Node::Compare {
            op: CompareOp::Lt,
            lhs: 0,
            rhs: 0,
        },
        DType::Bool,
    ));
    k.at_most_zero = vec![2];
    assert!(matches!(
        k.validate(),
        Err(KernelError::AtMostZero { node: 2, .. })
    ));
}
