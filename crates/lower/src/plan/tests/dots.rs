//! Products: which dots become contractions, what their operands are copied or packed into,
//! and when an elementwise reader becomes a product's epilogue.

use super::*;

#[test]
fn float_dots_are_contractions_and_integer_dots_sum_reductions() {
    let l = planned(
        "program {
          %a = input \"a\" : f32[3,4]
          %b = input \"b\" : f32[4,5]
          %c = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[3,5]
          output %c
        }",
    );
    // 5 columns are not whole 16-wide panels: B is packed (one edge-panel copy), then the
    // contraction reads the panels.
    let c = l
        .kernels
        .last()
        .and_then(Kernel::as_contraction)
        .expect("a contraction");
    assert_eq!((c.batch, c.m, c.n, c.k), (1, 3, 5, 4));
    assert_eq!(c.lhs.map, IndexMap::new(0, &[0, 4, 1]));
    assert_eq!(c.rhs.panels, Some(16));
    assert_eq!(c.store.map, IndexMap::new(0, &[15, 5, 1]));
    assert_eq!(l.kernels.len(), 2);

    // 32 columns are whole panels and B is small: read in place, nothing copied.
    let l = planned(
        "program {
          %a = input \"a\" : f64[7,4]
          %b = input \"b\" : f64[4,32]
          %c = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f64[7,32]
          output %c
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    let c = l.kernels[0].as_contraction().expect("a contraction");
    assert_eq!(
        (c.rhs.panels, &c.rhs.map),
        (None, &IndexMap::new(0, &[0, 32, 1]))
    );

    let l = planned(
        "program {
          %a = input \"a\" : i32[3,4]
          %b = input \"b\" : i32[4,5]
          %c = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : i32[3,5]
          output %c
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    let k = lk(&l, 0);
    assert_eq!(k.reduction, Some(ReduceOp::Sum));
    assert_eq!((&k.dims[..], k.parallel_rank), (&[3, 5, 4][..], 2));
    assert_eq!(
        loads(&l, 0),
        vec![IndexMap::new(0, &[4, 0, 1]), IndexMap::new(0, &[0, 1, 5])]
    );
}

#[test]
fn dot_operand_expressions_are_materialized_first() {
    let l = planned(
        "program {
          %a = input \"a\" : f32[3,4]
          %b = input \"b\" : f32[4,32]
          %e = exp %a : f32[3,4]
          %c = dot %e, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[3,32]
          output %c
        }",
    );
    assert_eq!(l.kernels.len(), 2);
    assert!(lk(&l, 0)
        .nodes
        .iter()
        .any(|n| matches!(n.node, Node::Unary { .. })));
    assert!(l.kernels[1].as_contraction().is_some());
}

#[test]
fn an_elementwise_reader_of_a_product_becomes_its_epilogue() {
    // relu(x·W + b): one contraction whose epilogue adds the bias and clamps.
    let l = planned(
        "program {
          %x = input \"x\" : f32[8,64]
          %w = input \"w\" : f32[64,32]
          %b = input \"b\" : f32[32]
          %y = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[8,32]
          %bb = broadcast %b, dims=[8,32], axes=[1] : f32[8,32]
          %z = add %y, %bb : f32[8,32]
          %zero = constant 0.0 : f32[]
          %zb = broadcast %zero, dims=[8,32], axes=[] : f32[8,32]
          %r = max %z, %zb : f32[8,32]
          output %r
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    let c = l.kernels[0].as_contraction().expect("a contraction");
    assert!(matches!(c.epilogue[0].node, Node::Acc));
    assert!(c.epilogue.iter().any(
        |n| matches!(n.node, Node::Load { ref map, .. } if *map == IndexMap::new(0, &[0, 0, 1]))
    ));
    assert!(c.epilogue.iter().any(|n| matches!(
        n.node,
        Node::Binary {
            op: accy_ir::BinaryOp::Max,
            ..
        }
    )));
    assert_eq!(c.store.map, IndexMap::new(0, &[0, 32, 1]));

    // The product used twice is stored once and read by each user.
    let l = planned(
        "program {
          %x = input \"x\" : f32[8,64]
          %w = input \"w\" : f32[64,32]
          %y = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[8,32]
          %a = exp %y : f32[8,32]
          %b = neg %y : f32[8,32]
          output %a
          output %b
        }",
    );
    let contractions: Vec<_> = l
        .kernels
        .iter()
        .filter_map(Kernel::as_contraction)
        .collect();
    assert_eq!(contractions.len(), 1);
    assert!(contractions[0].plain());
    assert_eq!(l.kernels.len(), 3);

    // A transposed store of the epilogue is a stride, not a copy.
    let l = planned(
        "program {
          %x = input \"x\" : f32[8,64]
          %w = input \"w\" : f32[64,32]
          %y = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[8,32]
          %s = mul %y, %y : f32[8,32]
          %t = transpose %s, perm=[1,0] : f32[32,8]
          output %t
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    let c = l.kernels[0].as_contraction().expect("a contraction");
    assert_eq!(c.store.map, IndexMap::new(0, &[0, 1, 8]));
}

#[test]
fn weight_operands_are_packed_once_at_setup() {
    // Two products with the same weight: one derived slot, packed by setup commands, read by
    // both contractions; no run command packs anything.
    let l = planned(
        "program {
          %x = input \"x\" : f32[64,256]
          %y = input \"y\" : f32[3,256]
          %w = weight \"w\" : f32[256,100]
          %a = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[64,100]
          %b = dot %y, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[3,100]
          output %a
          output %b
        }",
    );
    let derived: Vec<_> = l.plan.derived_slots().collect();
    assert_eq!(derived.len(), 1, "{:?}", l.plan);
    let (slot, source, layout) = derived[0];
    assert_eq!(*source, accy_artifact::DerivedSource::Weight("w".into()));
    assert!(layout.contains("panels"), "{layout}");
    assert!(!l.setup.is_empty());
    let writes_derived = |c: &Command| c.accesses().any(|(_, r, a)| a.writes() && r.slot == slot);
    assert!(l.setup.iter().all(writes_derived));
    assert!(!l.commands.iter().any(writes_derived));
    let contractions: Vec<_> = l
        .kernels
        .iter()
        .filter_map(Kernel::as_contraction)
        .collect();
    assert_eq!(contractions.len(), 2);
    assert!(contractions.iter().all(|c| c.rhs.panels.is_some()));
    // Only the two contractions run; the packing kernels are setup's.
    let run_dispatches = l
        .commands
        .iter()
        .filter(|c| matches!(c, Command::Dispatch { .. }))
        .count();
    assert_eq!(run_dispatches, 2);
}
