//! The on-line form of a streaming transpose (`x64/on_line.rs`): which kernels get one, and
//! the entry's branch to it. (That both functions compute the transpose is the conformance
//! suite's: its streaming group runs blocked transposes with the output on a page and off a
//! line.)

use accy_artifact::abi::DispatchState;
use accy_artifact::Blocking;
use accy_ir::DType;
use iced_x86::{Decoder, DecoderOptions, Mnemonic};

use super::encoding::disassemble;
use crate::compile::Options;
use crate::kernel::{Kernel, LoopKernel};
use crate::target::Target;
use crate::testing::kernels::transpose_along_rows;
use crate::x64::{X64Target, X64Tier};

fn transpose(dtype: DType) -> LoopKernel {
    transpose_along_rows(64, 512, dtype, 256)
}

/// Where the first `je` of `code` goes, and where the instruction after its first `ret`
/// starts.
fn entry_jump_and_second_function(code: &[u8]) -> (u64, u64) {
    let decoder = Decoder::with_ip(64, code, 0, DecoderOptions::NONE);
    let (mut jump, mut second) = (None, None);
    for instruction in decoder {
        match instruction.mnemonic() {
            Mnemonic::Je => {
                jump.get_or_insert(instruction.near_branch_target());
            }
            Mnemonic::Ret => {
                second.get_or_insert(instruction.next_ip());
            }
            _ => {}
        }
    }
    (jump.expect("a je"), second.expect("a ret"))
}

/// Options whose last-level cache is `llc` bytes.
fn with_llc(llc: u64) -> Options {
    Options::default().with_caches(Blocking {
        llc,
        ..Options::default().caches
    })
}

#[test]
fn streaming_tiled_transposes_get_sub_stripes_for_outputs_on_a_line() {
    let streaming = with_llc(64);
    let cached = with_llc(1 << 30);
    for tier in [X64Tier::Avx2, X64Tier::Avx512] {
        let target = X64Target::new(tier);
        for dtype in [DType::F32, DType::F64] {
            let k = transpose(dtype);
            let dims = target.on_line_dims(&k, &streaming).expect("a form");
            assert_eq!(dims.len(), k.dims.len() + 1, "{tier:?} {dtype}");
            assert_eq!(*dims.last().unwrap(), 32, "{tier:?} {dtype}");
            assert_eq!(target.on_line_dims(&k, &cached), None, "{tier:?} {dtype}");
            let code = |options: &Options| {
                let code = target.emit(&[Kernel::Loop(k.clone())], options);
                disassemble(&code.expect("emits").code).expect("decodes")
            };
            let (two, one) = (code(&streaming), code(&cached));
            let lines: Vec<&str> = two.lines().map(str::trim_start).collect();
            assert!(lines[0].starts_with("cmp dword ptr [rdi],"), "{two}");
            // The store binding (the last of three) at its place in the bindings array.
            let store = 2 * DispatchState::BINDING_STRIDE;
            let address = format!("mov rax,[rax+0x{store:X}]");
            let branch = lines
                .windows(3)
                .position(|w| w[0] == address && w[1] == "test al,0x3F" && w[2].starts_with("je "));
            assert_eq!(branch, Some(5), "{tier:?} {dtype}:\n{two}");
            let returns = lines.iter().filter(|l| **l == "ret").count();
            assert_eq!(returns, 2, "{tier:?} {dtype}: two functions");
            let bytes = target.emit(&[Kernel::Loop(k.clone())], &streaming);
            let (jump, second) = entry_jump_and_second_function(&bytes.expect("emits").code);
            assert_eq!(jump, second, "{tier:?} {dtype}: the jump lands on the form");
            assert!(!one.contains("test al,0x3F"), "{tier:?} {dtype}");
        }
    }
    // The SSE2 tier has no tiles; a transpose in runs of 32 rows has none to cut (and
    // streams nothing: its runs are shorter than `STREAM_MIN_RUN`).
    let sse2 = X64Target::new(X64Tier::Sse2);
    assert_eq!(sse2.on_line_dims(&transpose(DType::F32), &streaming), None);
    let short = transpose_along_rows(64, 64, DType::F32, 32);
    let avx512 = X64Target::new(X64Tier::Avx512);
    assert_eq!(avx512.on_line_dims(&short, &streaming), None);
}
