//! Buffers are described from the artifact alone: a program compiled, its `Program` dropped,
//! and the loaded artifact's descriptors equal what a session reports for the same program.

use accy_executable::{CpuInfo, LoadedArtifact};
use accy_ir::{Builder, DType, Program, ReduceOp, Type, UnaryOp};
use accy_lower::{compile, lookup_host, Options};
use accy_session::{Descriptor, Session};

fn program() -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[3, 5])).unwrap();
    let i = b.input("i", Type::new(DType::I64, &[7])).unwrap();
    let u = b.input("u", Type::new(DType::U8, &[0, 2])).unwrap();
    let y = b.unary(UnaryOp::Neg, x).unwrap();
    let s = b.reduce(ReduceOp::Sum, y, &[1]).unwrap();
    b.output(s).unwrap();
    b.output(i).unwrap();
    b.output(u).unwrap();
    b.finish().unwrap()
}

#[test]
fn descriptors_come_from_the_artifact_alone() {
    let session = Session::new().unwrap();
    let handle = session.compile(&accy_wire::encode(&program())).unwrap();

    let cpu = CpuInfo::detect().unwrap();
    let target = lookup_host(cpu.arch(), cpu.features()).unwrap();
    let artifact = {
        let program = program();
        compile(&program, target.as_ref(), &Options::default()).unwrap()
        // The program is dropped here: only the artifact is left.
    };
    // SAFETY: the artifact is exactly what `accy_lower::compile` produced, whose kernels keep
    // the dispatch ABI for its launch plan.
    let loaded = unsafe { LoadedArtifact::load(&artifact, &cpu) }.unwrap();
    let (inputs, outputs) = Descriptor::of_artifact(&loaded).unwrap();
    assert_eq!(inputs, session.inputs(handle).unwrap());
    assert_eq!(outputs, session.outputs(handle).unwrap());
    let shapes: Vec<(DType, Vec<u64>, usize, usize)> = inputs
        .iter()
        .chain(&outputs)
        .map(|d| (d.dtype, d.dims.to_vec(), d.byte_size, d.alignment))
        .collect();
    assert_eq!(
        shapes,
        [
            (DType::F32, vec![3, 5], 60, 4),
            (DType::I64, vec![7], 56, 8),
            (DType::U8, vec![0, 2], 0, 1),
            (DType::F32, vec![3], 12, 4),
            (DType::I64, vec![7], 56, 8),
            (DType::U8, vec![0, 2], 0, 1),
        ]
    );
}
