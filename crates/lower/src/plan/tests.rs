//! Tests of what the planner produces: how many kernels, what they read, where they store,
//! and that each plan still computes the interpreter's results.

use crate::kernel::{Kernel, LoopKernel};
use accy_artifact::{Access, Command, SlotRole};
use accy_ir::{interp, text, DType, Program, ReduceOp, Tensor, TensorData};

/// Loop kernel `i` of `l` (the test fails if it is another form).
fn lk(l: &LoweredProgram, i: usize) -> &LoopKernel {
    l.kernels[i].as_loop().expect("a loop kernel")
}

/// The loop kernels of `l`.
fn loops(l: &LoweredProgram) -> Vec<&LoopKernel> {
    l.kernels.iter().filter_map(Kernel::as_loop).collect()
}

mod chain;
mod dots;
mod facts;
mod fuse;
mod keep;
mod recompute;
mod rows;
mod stream_hint;
mod tiles;

use super::{plan, plan_with, LoweredProgram};
use crate::compile::Options;
use crate::kernel::{IndexMap, Node};
use crate::testing::{run_lowered, same_results, validate_plan};

/// Deterministic arguments with varied values (negative, fractional, zero) per dtype.
fn args_for(program: &Program) -> Vec<Tensor> {
    program
        .params
        .iter()
        .map(|p| {
            let n = p.ty.element_count().unwrap() as usize;
            let data = match p.ty.dtype {
                DType::F32 => TensorData::F32((0..n).map(|i| i as f32 * 0.37 - 1.1).collect()),
                DType::F64 => TensorData::F64((0..n).map(|i| i as f64 * 0.41 - 2.0).collect()),
                DType::I32 => TensorData::I32((0..n).map(|i| i as i32 * 7 - 11).collect()),
                DType::I64 => TensorData::I64((0..n).map(|i| i as i64 * 3 - 5).collect()),
                DType::U8 => TensorData::U8((0..n).map(|i| (i * 13) as u8).collect()),
                DType::Bool => TensorData::Bool((0..n).map(|i| i % 3 == 1).collect()),
                other => panic!("no test data for {other}"),
            };
            Tensor::new(&p.ty.dims, data).unwrap()
        })
        .collect()
}

/// Parses `source`, plans it (with `options`), checks the plan against the interpreter and
/// the artifact validator, and returns both.
fn planned_with(source: &str, options: &Options) -> (Program, LoweredProgram) {
    let program = text::parse(source).unwrap();
    let lowered = plan_with(&program, options).unwrap();
    validate_plan(&lowered).unwrap();
    let args = args_for(&program);
    let expected = interp::eval(&program, &args).unwrap();
    let actual = run_lowered(&lowered, &program, &args).unwrap();
    same_results(&expected, &actual).unwrap();
    (program, lowered)
}

fn planned(source: &str) -> LoweredProgram {
    planned_with(source, &Options::default()).1
}

fn dispatches(l: &LoweredProgram) -> usize {
    l.commands
        .iter()
        .filter(|c| matches!(c, Command::Dispatch { .. }))
        .count()
}

fn loads(l: &LoweredProgram, kernel: usize) -> Vec<IndexMap> {
    lk(l, kernel)
        .nodes
        .iter()
        .filter_map(|n| match &n.node {
            Node::Load { map, .. } => Some(map.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn elementwise_chain_with_broadcast_is_one_kernel_into_the_output() {
    let l = planned(
        "program {
          %x = input \"x\" : f32[3,4]
          %b = input \"b\" : f32[4]
          %bb = broadcast %b, dims=[3,4], axes=[1] : f32[3,4]
          %s = add %x, %bb : f32[3,4]
          %e = exp %s : f32[3,4]
          output %e
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    assert_eq!(l.commands.len(), 1);
    let Command::Dispatch { bindings, .. } = &l.commands[0] else {
        panic!("not a dispatch");
    };
    let out = l.plan.output_slots()[0];
    assert_eq!(bindings.last().unwrap().region.slot, out);
    assert_eq!(bindings.last().unwrap().access, Access::Write);
    assert!(l.plan.slots.iter().all(|s| s.role != SlotRole::Scratch));
    // The broadcast is a zero stride on the row dim of b's load.
    assert!(loads(&l, 0).contains(&IndexMap::new(0, &[0, 1])));
}

#[test]
fn reduction_fuses_its_producer() {
    let l = planned(
        "program {
          %x = input \"x\" : f32[5,6]
          %sq = mul %x, %x : f32[5,6]
          %r = reduce sum %sq, axes=[1] : f32[5]
          output %r
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    let k = lk(&l, 0);
    assert_eq!(k.reduction, Some(ReduceOp::Sum));
    assert_eq!((&k.dims[..], k.parallel_rank), (&[5, 6][..], 1));
    // One load of x, shared by both operands of the multiply.
    assert_eq!(loads(&l, 0).len(), 1);
}

#[test]
fn movement_folds_into_load_maps() {
    let l = planned(
        "program {
          %x = input \"x\" : f32[4,6]
          %y = input \"y\" : f32[3,4]
          %t = transpose %x, perm=[1,0] : f32[6,4]
          %s = slice %t, start=[1,0], limit=[6,4], stride=[2,1] : f32[3,4]
          %r = reverse %s, axes=[0,1] : f32[3,4]
          %a = add %r, %y : f32[3,4]
          output %a
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    // r[i, j] = x[3 - j, 1 + 2 (2 - i)] = x at 6 (3 - j) + 5 - 2i.
    assert!(loads(&l, 0).contains(&IndexMap::new(23, &[-2, -6])));
}

#[test]
fn iota_through_movement_becomes_an_index_node() {
    let l = planned(
        "program {
          %x = input \"x\" : i32[4,5]
          %i = iota axis=1 : i32[4,5]
          %r = reverse %i, axes=[1] : i32[4,5]
          %a = add %r, %x : i32[4,5]
          output %a
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    assert!(lk(&l, 0).nodes.iter().any(|n| n.node
        == Node::Index {
            dim: Some(1),
            scale: -1,
            offset: 4
        }));
}

#[test]
fn dot_axes_no_stride_groups_are_copied_dense_first() {
    // Batch and free axes interleaved: a's rows (axes 1 and 3) and b's columns are not one
    // stride each, so both are copied in group order first.
    let l = planned(
        "program {
          %a = input \"a\" : f32[2,1,2,3,2,2]
          %b = input \"b\" : f32[2,2,3,1,2,2]
          %c = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[3,0], rhs_contract=[2,4] : f32[1,2,2,2,2,2,1,2]
          output %c
        }",
    );
    assert!(loops(&l)
        .into_iter()
        .all(|k| k.dims.len() <= accy_ir::MAX_RANK));
    let c = l
        .kernels
        .last()
        .and_then(Kernel::as_contraction)
        .expect("a contraction");
    assert_eq!((c.batch, c.m, c.n, c.k), (1, 8, 8, 6));
}

#[test]
fn shared_expressions_are_computed_once() {
    let l = planned(
        "program {
          %x = input \"x\" : f32[8]
          %e = exp %x : f32[8]
          %a = add %e, %e : f32[8]
          %m = mul %e, %x : f32[8]
          output %a
          output %m
        }",
    );
    // exp into scratch, then one kernel per output.
    assert_eq!(l.kernels.len(), 3);
    let exps = l
        .kernels
        .iter()
        .filter_map(Kernel::as_loop)
        .flat_map(|k| &k.nodes)
        .filter(|n| matches!(n.node, Node::Unary { .. }))
        .count();
    assert_eq!(exps, 1);
}

#[test]
fn outputs_of_params_repeats_and_views() {
    let l = planned(
        "program {
          %x = input \"x\" : i64[2,3]
          %w = weight \"w\" : i64[2,3]
          %s = sub %x, %w : i64[2,3]
          %t = transpose %x, perm=[1,0] : i64[3,2]
          %r = reshape %x, dims=[3,2] : i64[3,2]
          output %x
          output %s
          output %s
          output %t
          output %r
        }",
    );
    // x: copy; s: one kernel into output 1, copied to output 2; t: a copy kernel; r: a copy.
    assert_eq!(dispatches(&l), 2);
    let copies = l
        .commands
        .iter()
        .filter(|c| matches!(c, Command::Copy { .. }))
        .count();
    assert_eq!(copies, 3);
}

#[test]
fn donation_never_writes_the_input() {
    let (program, l) = planned_with(
        "program {
          %state = input \"state\" : i64[4]
          %step = input \"step\" : i64[4]
          %next = add %state, %step : i64[4]
          %wrapped = rem %next, %step : i64[4]
          output %next donates 0
          output %wrapped
        }",
        &Options::default(),
    );
    assert_eq!(program.outputs[0].donates, Some(0));
    let summary = validate_plan(&l).unwrap();
    for input in &summary.inputs {
        assert!(!summary.usage[input.index()].written);
    }
}

#[test]
fn scratch_is_reused_once_dead() {
    // A chain of reductions each producing a scratch value read only by the next step.
    let l = planned(
        "program {
          %x = input \"x\" : f32[6,6]
          %r1 = reduce max %x, axes=[1] : f32[6]
          %b1 = broadcast %r1, dims=[6,6], axes=[0] : f32[6,6]
          %d1 = sub %x, %b1 : f32[6,6]
          %r2 = reduce sum %d1, axes=[1] : f32[6]
          %b2 = broadcast %r2, dims=[6,6], axes=[0] : f32[6,6]
          %d2 = sub %x, %b2 : f32[6,6]
          %r3 = reduce max %d2, axes=[1] : f32[6]
          %b3 = broadcast %r3, dims=[6,6], axes=[0] : f32[6,6]
          %d3 = sub %x, %b3 : f32[6,6]
          %r4 = reduce sum %d3, axes=[1] : f32[6]
          output %r4
        }",
    );
    assert_eq!(l.kernels.len(), 4);
    let scratch = l
        .plan
        .slots
        .iter()
        .filter(|s| s.role == SlotRole::Scratch)
        .count();
    assert_eq!(scratch, 2);
}

#[test]
fn pad_is_a_fill_then_a_strided_store() {
    let l = planned(
        "program {
          %x = input \"x\" : f32[3,4]
          %v = constant 0.5 : f32[]
          %p = pad %x, %v, low=[1,-1], high=[2,0], interior=[1,0] : f32[8,3]
          output %p
        }",
    );
    assert!(matches!(
        l.commands[0],
        Command::Fill {
            pattern: 0x3f00_0000,
            width: 4,
            ..
        }
    ));
    assert_eq!(dispatches(&l), 1);
    assert_eq!(lk(&l, 0).store.map, IndexMap::new(3, &[6, 1]));
}

#[test]
fn concat_stores_each_operand_at_its_offset() {
    let l = planned(
        "program {
          %x = input \"x\" : u8[2,3]
          %y = input \"y\" : u8[2,0]
          %z = input \"z\" : u8[2,2]
          %n = not %z : u8[2,2]
          %c = concat %x, %y, %n, axis=1 : u8[2,5]
          output %c
        }",
    );
    assert_eq!(l.kernels.len(), 2);
    assert_eq!(lk(&l, 1).store.map, IndexMap::new(3, &[5, 1]));
}

#[test]
fn empty_values_produce_no_work() {
    let l = planned(
        "program {
          %x = input \"x\" : f32[0,3]
          %e = exp %x : f32[0,3]
          %r = reduce sum %x, axes=[0] : f32[3]
          output %e
          output %r
        }",
    );
    // Only the reduction over an empty axis stores (its identity).
    assert_eq!(l.kernels.len(), 1);
    assert_eq!(lk(&l, 0).nodes.len(), 1);
}

#[test]
fn unfused_plans_compute_the_same() {
    let source = "program {
          %x = input \"x\" : f32[3,4]
          %b = input \"b\" : f32[4]
          %bb = broadcast %b, dims=[3,4], axes=[1] : f32[3,4]
          %s = add %x, %bb : f32[3,4]
          %e = exp %s : f32[3,4]
          output %e
        }";
    let (_, l) = planned_with(source, &Options::default().with_fuse(false));
    assert_eq!(l.kernels.len(), 2);
}

#[test]
fn plan_refuses_nothing_it_verified() {
    let program = text::parse(
        "program {
          %x = input \"x\" : bool[2]
          %n = not %x : bool[2]
          output %n
        }",
    )
    .unwrap();
    assert!(plan(&program).is_ok());
}

#[test]
fn gather_from_a_uniform_tensor_needs_no_memory() {
    // Found by the differential test: a splat constant is an inline constant, not a buffer.
    let l = planned(
        "program {
          %i = input \"i\" : i32[7,1,3]
          %c = constant [[false, false]] : bool[1,2]
          %g = gather %c, %i, axis=1 : bool[1,7,1,3]
          output %g
        }",
    );
    // The result is the constant everywhere: a fill, no kernel.
    assert!(l.kernels.is_empty());
    assert!(matches!(
        l.commands[..],
        [Command::Fill {
            pattern: 0,
            width: 1,
            ..
        }]
    ));
}

#[test]
fn gather_reads_a_buffer_through_a_fused_index() {
    let l = planned(
        "program {
          %x = input \"x\" : f64[5,3]
          %i = input \"i\" : i64[4]
          %n = neg %i : i64[4]
          %g = gather %x, %n, axis=0 : f64[4,3]
          output %g
        }",
    );
    assert_eq!(l.kernels.len(), 1);
    assert!(lk(&l, 0).nodes.iter().any(|n| matches!(
        n.node,
        Node::Gather {
            axis_len: 5,
            axis_stride: 3,
            ..
        }
    )));
}

#[test]
fn long_chains_are_split_into_bounded_kernels() {
    let mut source = String::from("program {\n  %v0 = input \"x\" : i32[4]\n");
    for i in 1..=200 {
        source.push_str(&format!("  %v{i} = add %v{}, %v0 : i32[4]\n", i - 1));
    }
    source.push_str("  output %v200\n}");
    let l = planned(&source);
    assert!(l.kernels.len() > 1);
    assert!(l
        .kernels
        .iter()
        .filter_map(Kernel::as_loop)
        .all(|k| k.nodes.len() <= 2 * super::MAX_FUSED_NODES));
}

#[test]
fn each_kernel_names_the_instructions_it_fused() {
    let l = planned(
        "program {
          %x = input \"x\" : f32[8,64]
          %w = input \"w\" : f32[64,32]
          %b = input \"b\" : f32[32]
          %y = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[8,32]
          %bb = broadcast %b, dims=[8,32], axes=[1] : f32[8,32]
          %z = add %y, %bb : f32[8,32]
          %e = exp %z : f32[8,32]
          %s = reduce sum %e, axes=[1] : f32[8]
          output %s
        }",
    );
    assert_eq!(l.sources.len(), l.kernels.len());
    // Instruction 0 is the dot; the reduction (4) fuses the broadcast, add and exp (1-3),
    // reading the product (a reduction is no epilogue).
    let contraction = l
        .kernels
        .iter()
        .position(|k| k.as_contraction().is_some())
        .unwrap();
    assert_eq!(l.sources[contraction], vec![0]);
    assert_eq!(l.sources.last().unwrap(), &vec![1, 2, 3, 4]);
}
