//! ONNX bytes through the importer: it must never panic, and whatever it accepts must be a
//! verified program whose weights match their parameters, that prints and parses back, and
//! that the interpreter runs on zero-filled inputs (small shapes only).
#![no_main]

use accy_ir::interp::{eval_with_limits, Limits};
use accy_ir::{text, verify, ParamKind, Tensor};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = accy_onnx::read_tensor(data);
    let Ok(model) = accy_onnx::import(data, &accy_onnx::ImportOptions::default()) else {
        return;
    };
    let program = &model.program;
    if let Err(e) = verify(program) {
        panic!("the importer returned an invalid program: {e}");
    }
    for (_, p) in program.weights() {
        let value = model.weights.iter().find(|(n, _)| *n == p.name);
        assert_eq!(value.map(|(_, t)| t.ty()), Some(p.ty.clone()), "weight {}", p.name);
    }
    let printed = text::print(program);
    assert_eq!(text::parse(&printed).as_ref(), Ok(program), "{printed}");
    let limits = Limits { max_elements: 1 << 16 };
    let args: Option<Vec<Tensor>> = program
        .params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Input => p
                .ty
                .element_count()
                .filter(|&n| n <= limits.max_elements)
                .and_then(|_| Tensor::zeros(&p.ty)),
            _ => model.weights.iter().find(|(n, _)| *n == p.name).map(|(_, t)| t.clone()),
        })
        .collect();
    if let Some(args) = args {
        // Errors (the work limit) are fine; a panic is not.
        let _ = eval_with_limits(program, &args, &limits);
    }
});
