//! The emulator harness itself: it notices wrong code (a negative control), so the
//! conformance suite's passes under it mean something.

mod common;

use accy_artifact::abi::ABI_VERSION;
use accy_ir::{BinaryOp, DType};
use accy_lower::aarch64::A64Target;
use accy_lower::kernel::Node;
use accy_lower::testing::kernels::{elementwise, node};
use accy_lower::{Options, Target};
use common::run_code;

/// The `fadd` of an add kernel is patched into `fsub`, and the result must then differ from
/// the interpreter's: 3 points run the scalar loop only, 4 points the NEON loop only.
#[test]
fn aarch64_harness_catches_a_patched_instruction() {
    // fadd/fsub s0, s0, s1 and fadd/fsub v18.4s, v16.4s, v17.4s.
    for (n, fadd, fsub) in [
        (3u64, 0x1e21_2800u32, 0x1e21_3800u32),
        (4, 0x4e31_d612, 0x4eb1_d612),
    ] {
        let add = node(
            Node::Binary {
                op: BinaryOp::Add,
                lhs: 0,
                rhs: 1,
            },
            DType::F32,
        );
        let k = elementwise("patched", n, &[DType::F32, DType::F32], vec![add]);
        let mut code = A64Target::new()
            .emit(std::slice::from_ref(&k), &Options::default())
            .expect("emit")
            .code;
        let n = n as usize;
        let ones = 1f32.to_le_bytes().repeat(n);
        let mut buffers = vec![ones.clone(), ones.clone(), vec![0; 4 * n]];
        run_code(&code, 0, &mut buffers, 1, ABI_VERSION).expect("run");
        assert_eq!(
            buffers[2],
            2f32.to_le_bytes().repeat(n),
            "1 + 1 from the emitted code"
        );
        let at = code
            .chunks(4)
            .position(|w| w == fadd.to_le_bytes())
            .expect("the fadd");
        code[4 * at..4 * at + 4].copy_from_slice(&fsub.to_le_bytes());
        let mut buffers = vec![ones.clone(), ones, vec![0; 4 * n]];
        run_code(&code, 0, &mut buffers, 1, ABI_VERSION).expect("run");
        assert_eq!(
            buffers[2],
            0f32.to_le_bytes().repeat(n),
            "1 - 1 from the patched code"
        );
    }
}
