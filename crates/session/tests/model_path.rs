//! The convenient path: `Model::new(program, weights)`, `model.prepare(variant, capacity)`
//! for other batch sizes sharing the weights and their packed forms, `prepared.run`; results
//! equal the reference interpreter's in exact mode; variants with another interface are
//! refused with both sides named.

mod common;

use accy_ir::interp::eval;
use accy_ir::{BinaryOp, Builder, DType, Tensor, Type};
use accy_session::{Model, ModelContext, ModelFailure, SessionOptions, Status, Weights};
use common::{f32_bytes, mlp, mlp_weights, values};

const DIMS: (u64, u64, u64) = (96, 80, 24);

fn exact_context() -> ModelContext {
    ModelContext::with_options(
        SessionOptions::default()
            .with_reassociate_float_sums(false)
            .with_threads(2),
    )
    .unwrap()
}

fn weights() -> (Weights, Vec<(String, Vec<u8>)>) {
    let (i, h, o) = DIMS;
    let list = mlp_weights(i, h, o);
    let named: Vec<(&str, &[u8])> = list
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    (Weights::new(&named).unwrap(), list)
}

fn weight_tensor(bytes: &[u8], dims: &[u64]) -> Tensor {
    Tensor::f32s(dims, common::f32s(bytes))
}

#[test]
fn plans_for_several_batch_sizes_share_the_weights_and_match_the_interpreter() {
    let (i, h, o) = DIMS;
    let (weights, list) = weights();
    let context = exact_context();
    let model = Model::with_context(&context, &mlp(8, i, h, o), weights.clone()).unwrap();
    let packed = model.weight_bytes();
    assert!(
        packed > weights.given_bytes(),
        "the dot weights were packed"
    );
    assert!(model.definition().weights().shares_memory_with(&weights));
    let args_weights = [
        weight_tensor(&list[0].1, &[i, h]),
        weight_tensor(&list[1].1, &[h]),
        weight_tensor(&list[2].1, &[h, o]),
    ];
    let mut plans = Vec::new();
    for rows in [1, 8, 37, 64] {
        let program = mlp(rows, i, h, o);
        let plan = model.prepare(&program, 2).unwrap();
        assert_eq!(
            model.weight_bytes(),
            packed,
            "batch {rows} packed nothing new"
        );
        assert_eq!(plan.inputs()[0].dims.as_slice(), &[rows, i]);
        let x = values((rows * i) as usize, rows as usize);
        let mut y = vec![0.0f32; (rows * o) as usize];
        plan.run_typed(&[&x], &mut [&mut y]).unwrap();
        let mut args = vec![Tensor::f32s(&[rows, i], x.clone())];
        args.extend(args_weights.iter().cloned());
        let expected = eval(&program, &args).unwrap();
        assert_eq!(
            f32_bytes(&y),
            expected[0].data().to_le_bytes(),
            "batch {rows}: exact mode equals the interpreter"
        );
        plans.push(plan);
    }
    // Every plan keeps working while the others exist (they share nothing writable).
    let x = values((64 * i) as usize, 3);
    let mut y = vec![0.0f32; (64 * o) as usize];
    plans[3].run_typed(&[&x], &mut [&mut y]).unwrap();
    assert!(y.iter().all(|v| v.is_finite()));
    assert_eq!(model.weight_bytes(), packed);
}

#[test]
fn the_models_own_program_is_not_compiled_again() {
    let (i, h, o) = DIMS;
    let (weights, _) = weights();
    let model = Model::with_context(&exact_context(), &mlp(4, i, h, o), weights).unwrap();
    let a = model.prepare(&mlp(4, i, h, o), 1).unwrap();
    let b = model.prepare(model.program(), 3).unwrap();
    assert_eq!((a.capacity(), b.capacity()), (1, 3));
    assert_eq!(a.slot_bytes(), b.slot_bytes());
    assert_eq!(model.definition().kernel_count(), 1);
    // Variants are not added to the definition either: plans own their fragments.
    let _c = model.prepare(&mlp(5, i, h, o), 1).unwrap();
    assert_eq!(model.definition().kernel_count(), 1);
}

#[test]
fn variants_with_another_interface_are_refused_naming_both_sides() {
    let (i, h, o) = DIMS;
    let (weights, _) = weights();
    let model = Model::with_context(&exact_context(), &mlp(4, i, h, o), weights).unwrap();
    let failure = |e: accy_session::Error| {
        assert_eq!(Status::from(&e), Status::InvalidModel, "{e}");
        e.cause()
            .unwrap()
            .downcast_ref::<ModelFailure>()
            .unwrap()
            .clone()
    };
    // Another hidden width: w1 has another type.
    let e = failure(model.prepare(&mlp(4, i, h + 1, o), 1).unwrap_err());
    assert_eq!(
        e,
        ModelFailure::VariantWeight {
            name: "w1".into(),
            model: Some(Type::new(DType::F32, &[i, h])),
            variant: Some(Type::new(DType::F32, &[i, h + 1]))
        }
    );
    assert!(
        e.to_string()
            .contains("f32[96,81] in the variant, but f32[96,80]"),
        "{e}"
    );
    // An extra input (of a program with the model's weights).
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4, i])).unwrap();
    let z = b.input("z", Type::new(DType::F32, &[4, i])).unwrap();
    for (name, dims) in [("w1", vec![i, h]), ("b1", vec![h]), ("w2", vec![h, o])] {
        b.weight(name, Type::new(DType::F32, &dims)).unwrap();
    }
    let y = b.binary(BinaryOp::Add, x, z).unwrap();
    b.output(y).unwrap();
    assert_eq!(
        failure(model.prepare(&b.finish().unwrap(), 1).unwrap_err()),
        ModelFailure::VariantCount {
            what: "input",
            model: 1,
            variant: 2
        }
    );
    // Another input dtype.
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F64, &[4, i])).unwrap();
    b.output(x).unwrap();
    let f64_input = b.finish().unwrap();
    assert_eq!(
        failure(model.prepare(&f64_input, 1).unwrap_err()),
        ModelFailure::VariantDtype {
            what: "input",
            index: 0,
            model: DType::F32,
            variant: DType::F64
        }
    );
    // A program without the model's weights is another network.
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4, i])).unwrap();
    let y = b.unary(accy_ir::UnaryOp::Neg, x).unwrap();
    b.output(y).unwrap();
    let e = failure(model.prepare(&b.finish().unwrap(), 1).unwrap_err());
    assert_eq!(
        e,
        ModelFailure::VariantWeight {
            name: "w1".into(),
            model: Some(Type::new(DType::F32, &[i, h])),
            variant: None
        }
    );
    assert!(e.to_string().contains("absent in the variant"), "{e}");
}

#[test]
fn a_model_needs_its_weights() {
    let (i, h, o) = DIMS;
    let e = Model::with_context(&exact_context(), &mlp(4, i, h, o), Weights::empty()).unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer, "{e}");
    assert!(e.to_string().contains("\"w1\""), "{e}");
}

#[test]
fn a_models_weights_are_on_read_only_pages() {
    let (i, h, o) = DIMS;
    let (weights, _) = weights();
    let model = Model::with_context(&exact_context(), &mlp(4, i, h, o), weights).unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let perms = |address: usize| {
        maps.lines()
            .find_map(|line| {
                let (range, rest) = line.split_once(' ')?;
                let (start, end) = range.split_once('-')?;
                let start = usize::from_str_radix(start, 16).ok()?;
                let end = usize::from_str_radix(end, 16).ok()?;
                (start..end)
                    .contains(&address)
                    .then(|| rest[..4].to_owned())
            })
            .unwrap_or_default()
    };
    for name in ["w1", "b1", "w2"] {
        let w = model.definition().weights().get(name).unwrap();
        assert_eq!(perms(w.as_ptr() as usize), "r--p", "weight {name}");
    }
}
