//! `compile` end to end with a stand-in backend: the artifact it assembles validates, and
//! each failure surfaces as the right `CompileError`.

use accy_artifact::{Arch, Blocking, Command, FeatureSet, KernelEntry, TargetSpec};
use accy_ir::text;
use accy_lower::kernel::Kernel;
use accy_lower::{compile, CompileError, EmitError, EmittedCode, Options, Target};

/// A backend whose "code" for each kernel is one `ret`, padded to the code alignment.
#[derive(Debug)]
struct Stub {
    fail: bool,
    drop_one: bool,
}

impl Target for Stub {
    fn name(&self) -> &'static str {
        "stub"
    }

    fn spec(&self) -> TargetSpec {
        TargetSpec::new(Arch::X86_64, FeatureSet::default())
    }

    fn micro_tile(&self, _: accy_ir::DType) -> (u64, u64) {
        (4, 8)
    }

    fn emit(&self, kernels: &[Kernel], _: &Options) -> Result<EmittedCode, EmitError> {
        if self.fail {
            return Err(EmitError::Assembler {
                kernel: kernels
                    .first()
                    .map_or(String::new(), |k| k.name().to_owned()),
                message: "refused".into(),
            });
        }
        let mut code = EmittedCode {
            code: Vec::new(),
            entries: Vec::new(),
        };
        for k in kernels.iter().skip(usize::from(self.drop_one)) {
            let offset = code.code.len() as u32;
            code.code.push(0xc3);
            code.code.resize(code.code.len().next_multiple_of(16), 0xcc);
            code.entries.push(KernelEntry {
                name: k.name().to_owned(),
                offset,
                len: 1,
                worker_scratch: 0,
            });
        }
        Ok(code)
    }
}

const SOFTMAX: &str = "program {
  %x = input \"x\" : f32[3,5]
  %m = reduce max %x, axes=[1] : f32[3]
  %mb = broadcast %m, dims=[3,5], axes=[0] : f32[3,5]
  %d = sub %x, %mb : f32[3,5]
  %e = exp %d : f32[3,5]
  %s = reduce sum %e, axes=[1] : f32[3]
  %sb = broadcast %s, dims=[3,5], axes=[0] : f32[3,5]
  %y = div %e, %sb : f32[3,5]
  output %y
}";

fn stub() -> Stub {
    Stub {
        fail: false,
        drop_one: false,
    }
}

#[test]
fn compiles_to_a_valid_artifact() {
    let program = text::parse(SOFTMAX).unwrap();
    let artifact = compile(&program, &stub(), &Options::default()).unwrap();
    let summary = artifact.validate().unwrap();
    assert_eq!(summary.inputs.len(), 1);
    assert_eq!(summary.outputs.len(), 1);
    // max, exp (shared by the sum and the division) stored while it is summed, division.
    assert_eq!(artifact.kernels.len(), 3);
    assert_eq!(artifact.launch.commands.len(), 3);
    assert!(stores_a_kept_value(&artifact));
}

/// Whether a dispatch of `artifact` writes two regions: a reduction storing the value it
/// reduces as well (`accy_lower::kernel::Keep`).
fn stores_a_kept_value(artifact: &accy_artifact::Artifact) -> bool {
    artifact.launch.commands.iter().any(|c| match c {
        Command::Dispatch { bindings, .. } => {
            bindings.iter().filter(|b| b.access.writes()).count() == 2
        }
        _ => false,
    })
}

/// The planner's recompute rule follows the target compiled for (`Options::scale_b`, which
/// `compile` sets from the target): with an L2 too small to keep the softmax's `exp`, AVX-512
/// recomputes it in both consumers, AVX2 and NEON store it once, while it is summed (3
/// kernels either way).
#[test]
fn a_shared_exp_is_recomputed_only_for_targets_that_scale_in_one_instruction() {
    let program = text::parse(SOFTMAX).unwrap();
    let options = Options::default().with_caches(Blocking {
        l1d: 0,
        l2: 16,
        llc: 0,
        ..Default::default()
    });
    let built = accy_lower::target::names();
    for (name, stored) in [
        ("x64-avx512", false),
        ("x64-avx2", true),
        ("aarch64-neon", true),
    ] {
        if !built.contains(&name) {
            #[allow(clippy::print_stderr, reason = "tell the log the target was skipped")]
            {
                eprintln!("skipped {name}: its backend is not built in");
            }
            continue;
        }
        let target = accy_lower::lookup_name(name, None).unwrap();
        let artifact = compile(&program, target.as_ref(), &options).unwrap();
        assert_eq!(artifact.kernels.len(), 3, "{name}");
        assert_eq!(stores_a_kept_value(&artifact), stored, "{name}");
    }
}

#[test]
fn invalid_programs_are_refused_before_planning() {
    let mut program = text::parse(SOFTMAX).unwrap();
    program.instructions[0].ty.dims[0] = 4;
    assert!(matches!(
        compile(&program, &stub(), &Options::default()),
        Err(CompileError::Invalid(_))
    ));
}

#[test]
fn backend_failures_are_reported() {
    let program = text::parse(SOFTMAX).unwrap();
    let failing = Stub {
        fail: true,
        drop_one: false,
    };
    assert!(matches!(
        compile(&program, &failing, &Options::default()),
        Err(CompileError::Emit(EmitError::Assembler { .. }))
    ));
    let short = Stub {
        fail: false,
        drop_one: true,
    };
    assert!(matches!(
        compile(&program, &short, &Options::default()),
        Err(CompileError::Internal { .. })
    ));
}
