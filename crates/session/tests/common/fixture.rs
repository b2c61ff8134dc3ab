//! A small model definition most models tests start from.

use accy_ir::DType;
use accy_session::{
    Allocation, Command, Descriptor, Error, Kernel, ModelContext, ModelDefinition, PreparedModel,
    Region, SessionOptions,
};

use super::{f32_bytes, mul_weight, twice};

/// A descriptor of `n` f32s.
pub fn f32s_of(n: u64) -> Descriptor {
    Descriptor::new(DType::F32, &[n]).unwrap()
}

/// A plan's commands, inputs and outputs.
pub type Plan = (
    Vec<Command>,
    Vec<(Region, Descriptor)>,
    Vec<(Region, Descriptor)>,
);

/// A definition with weight `w` (16 f32: 1, 2, …), scratch `s` (1024 bytes), fragment 0
/// `y = x + x` and fragment 1 `y = x * w`, both over 16 f32.
pub struct Fixture {
    pub context: ModelContext,
    pub definition: ModelDefinition,
    pub w: Region,
    pub s: Allocation,
    pub twice: Kernel,
    pub mul: Kernel,
}

pub fn fixture() -> Fixture {
    let context = ModelContext::with_options(SessionOptions::default().with_threads(1)).unwrap();
    let w_bytes = f32_bytes(&(1..=16).map(|i| i as f32).collect::<Vec<_>>());
    let mut recorder = context.record();
    let w = recorder.weight("w", &w_bytes).unwrap();
    let s = recorder.scratch(1024);
    let twice = recorder.fragment(&twice(16)).unwrap();
    let mul = recorder.fragment(&mul_weight(16)).unwrap();
    let definition = recorder.freeze(&context).unwrap();
    Fixture {
        context,
        definition,
        w: w.region(0, 64),
        s,
        twice,
        mul,
    }
}

impl Fixture {
    /// `s[0..64]` in, `s[64..128]` = twice, `s[128..192]` = that times w, out.
    pub fn chain(&self) -> Plan {
        let (a, b, c) = (
            self.s.region(0, 64),
            self.s.region(64, 64),
            self.s.region(128, 64),
        );
        let commands = vec![
            Command::Dispatch {
                kernel: self.twice,
                inputs: vec![a],
                outputs: vec![b],
            },
            Command::Dispatch {
                kernel: self.mul,
                inputs: vec![b],
                outputs: vec![c],
            },
        ];
        (commands, vec![(a, f32s_of(16))], vec![(c, f32s_of(16))])
    }

    pub fn prepare(
        &self,
        commands: &[Command],
        inputs: &[(Region, Descriptor)],
        outputs: &[(Region, Descriptor)],
    ) -> Result<PreparedModel, Error> {
        self.definition.prepare(commands, inputs, outputs, 2)
    }
}
