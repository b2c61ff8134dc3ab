//! The calling convention: a kernel called from a trampoline that fills every callee-saved
//! register with a pattern must hand all of them (and the stack pointer) back unchanged, on
//! every tier, including kernels that call imports and run vector loops.

use accy_artifact::abi::{DispatchState, ABI_VERSION, KERNEL_OK};
use accy_artifact::Access;
use accy_executable::{CodeMemory, GuardedBuffer};
use accy_ir::{BinaryOp, DType, UnaryOp};
use smallvec::smallvec;

use accy_executable::IMPORT_TABLE;

use super::host::host_target;
use crate::compile::Options;
use crate::kernel::{IndexMap, Kernel, KernelBinding, KernelNode, LoopKernel, Node, Store};
use crate::target::Target;
use crate::x64::asm::{x64, Asm};
use crate::x64::X64Tier;

/// Patterns for rbx, rbp, r12, r13, r14, r15.
const PATTERNS: [u64; 6] = [
    0x0123_4567_89ab_cdef,
    0x1122_3344_5566_7788,
    0xdead_beef_0bad_f00d,
    0x0f0e_0d0c_0b0a_0908,
    0x8000_0000_0000_0001,
    0x7fff_ffff_ffff_fffe,
];

/// `extern "C" fn(kernel, state, workgroup, out: *mut [u64; 8]) -> u32`: loads the patterns,
/// calls `kernel(state, workgroup)`, then writes rbx, rbp, r12–r15 and rsp before and after
/// the call to `out`.
fn trampoline() -> Vec<u8> {
    #[allow(
        unused_imports,
        reason = "dynasm! expansions need both traits in scope"
    )]
    use dynasmrt::{DynasmApi, DynasmLabelApi};
    let mut ops = Asm::new(0);
    let p = PATTERNS.map(|v| v as i64);
    x64!(ops
        ; push rbx ; push rbp ; push r12 ; push r13 ; push r14 ; push r15
        ; sub rsp, 8
        ; mov [rsp], rcx
        ; mov [rcx + 48], rsp
        ; mov rax, rdi ; mov rdi, rsi ; mov esi, edx ; xor edx, edx
        ; mov rbx, QWORD p[0] ; mov rbp, QWORD p[1] ; mov r12, QWORD p[2]
        ; mov r13, QWORD p[3] ; mov r14, QWORD p[4] ; mov r15, QWORD p[5]
        ; call rax
        ; mov rcx, [rsp]
        ; mov [rcx], rbx ; mov [rcx + 8], rbp ; mov [rcx + 16], r12
        ; mov [rcx + 24], r13 ; mov [rcx + 32], r14 ; mov [rcx + 40], r15
        ; mov [rcx + 56], rsp
        ; add rsp, 8
        ; pop r15 ; pop r14 ; pop r13 ; pop r12 ; pop rbp ; pop rbx
        ; ret
    );
    ops.finalize().expect("assemble trampoline")
}

/// `out[i, j] = exp(x[i, j]) + x[i, j]`: import calls in scalar code, a vector loop on AVX2.
fn kernel() -> LoopKernel {
    let load = KernelNode {
        node: Node::Load {
            binding: 0,
            map: IndexMap::new(0, &[9, 1]),
        },
        dtype: DType::F32,
    };
    LoopKernel {
        name: "exp_plus".into(),
        dims: smallvec![3, 9],
        parallel_rank: 2,
        bindings: vec![
            KernelBinding {
                dtype: DType::F32,
                elements: 27,
                access: Access::Read,
            },
            KernelBinding {
                dtype: DType::F32,
                elements: 27,
                access: Access::Write,
            },
        ],
        nodes: vec![
            load,
            KernelNode {
                node: Node::Unary {
                    op: UnaryOp::Exp,
                    x: 0,
                },
                dtype: DType::F32,
            },
            KernelNode {
                node: Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 1,
                    rhs: 0,
                },
                dtype: DType::F32,
            },
        ],
        result: 2,
        reduction: None,
        store: Store {
            binding: 1,
            map: IndexMap::new(0, &[9, 1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    }
}

#[test]
fn callee_saved_registers_and_stack_survive_every_tier() {
    let tramp = CodeMemory::from_code(&trampoline()).expect("map trampoline");
    let call = tramp.entry(0).expect("entry");
    let k = kernel();
    k.validate().expect("valid");
    for target in X64Tier::ALL.into_iter().filter_map(host_target) {
        let code = target
            .emit(&[Kernel::Loop(k.clone())], &Options::default())
            .expect("emit");
        let memory = CodeMemory::from_code(&code.code).expect("map kernel");
        let input: Vec<u8> = (0..27)
            .flat_map(|i| (i as f32 / 4.0 - 3.0).to_le_bytes())
            .collect();
        let mut x = GuardedBuffer::from_bytes(&input).expect("buffer");
        let mut out = GuardedBuffer::new(27 * 4).expect("buffer");
        let pointers = [x.as_mut_ptr(), out.as_mut_ptr()];
        let lengths = [27 * 4u64, 27 * 4];
        let state = DispatchState {
            abi_version: ABI_VERSION,
            binding_count: 2,
            bindings: pointers.as_ptr(),
            binding_lengths: lengths.as_ptr(),
            scalars: std::ptr::null(),
            scalar_count: 0,
            workgroup_count: 1,
            imports: IMPORT_TABLE.as_ptr(),
            worker_scratch: std::ptr::null_mut(),
            worker_scratch_stride: 0,
            worker_count: 1,
            reserved: 0,
        };
        let mut saved = [0u64; 8];
        // SAFETY: the trampoline is a complete function of this signature that calls its
        // first argument as a kernel with the next two; the kernel follows the dispatch ABI,
        // and `state` (with the arrays and guarded buffers it points to) and `saved` outlive
        // the call.
        let status = unsafe {
            call.call::<extern "C" fn(*const u8, *const DispatchState, u32, *mut u64) -> u32>((
                memory.as_ptr(),
                &state,
                0,
                saved.as_mut_ptr(),
            ))
        };
        assert_eq!(status, KERNEL_OK, "{}", target.name());
        assert_eq!(
            saved[..6],
            PATTERNS,
            "{}: callee-saved registers",
            target.name()
        );
        assert_eq!(saved[6], saved[7], "{}: stack pointer", target.name());
        let first = f32::from_le_bytes(out.as_slice()[..4].try_into().expect("4 bytes"));
        assert_eq!(first, (-3f32).exp() - 3.0, "{}", target.name());
    }
}
