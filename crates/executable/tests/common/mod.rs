//! Shared helpers for the integration tests: hand-built artifacts and hand-assembled x86-64
//! kernels following the dispatch ABI (`accy_artifact::abi`).
//!
//! Each kernel's bytes were assembled with `llvm-mc -triple=x86_64 -x86-asm-syntax=intel`
//! from the listing in its doc comment; `DispatchState` offsets are 8 (bindings), 16 (binding
//! lengths), 24 (scalars), 32 (scalar count), 36 (workgroup count), 40 (imports).

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the helpers"
)]

use accy_artifact::{
    Access, Arch, Artifact, Binding, Command, FeatureSet, KernelEntry, Region, Slot, SlotId,
    SlotRole, TargetSpec,
};
use accy_executable::{CpuInfo, GuardedBuffer, LoadError, LoadedArtifact, Tier, Weights};
use accy_ir::{DType, Type};

/// The host's CPU information, unmasked (tests must not depend on the environment's tier).
pub fn host() -> CpuInfo {
    CpuInfo::detect_with_max_tier(Tier::Native)
}

/// An empty artifact for the host's architecture needing no optional feature.
pub fn artifact() -> Artifact {
    Artifact::new(TargetSpec::new(
        Arch::host().expect("tests run on a supported architecture"),
        FeatureSet::EMPTY,
    ))
}

/// Adds a slot holding `count` elements of `dtype` with the element's natural alignment.
pub fn slot(a: &mut Artifact, role: SlotRole, dtype: DType, count: u64) -> SlotId {
    let align = dtype.alignment();
    a.plan
        .add(Slot::typed(role, Type::new(dtype, &[count]), align).expect("slot size"))
        .expect("slot id")
}

/// The whole of slot `s` of `bytes` bytes.
pub fn whole(s: SlotId, bytes: u64) -> Region {
    Region::new(s, 0, bytes)
}

/// Appends `code` as a kernel called `name`; returns its index.
pub fn add_kernel(a: &mut Artifact, name: &str, code: &[u8]) -> u32 {
    let offset = u32::try_from(a.code.len()).expect("small code");
    a.code.extend_from_slice(code);
    a.kernels.push(KernelEntry {
        name: name.into(),
        offset,
        len: u32::try_from(code.len()).expect("small code"),
        worker_scratch: 0,
    });
    u32::try_from(a.kernels.len() - 1).expect("few kernels")
}

/// Appends a dispatch command.
pub fn dispatch(
    a: &mut Artifact,
    kernel: u32,
    bindings: &[(Region, Access)],
    scalars: &[u64],
    workgroups: u32,
) {
    a.launch.push(Command::Dispatch {
        kernel,
        bindings: bindings
            .iter()
            .map(|&(r, acc)| Binding::new(r, acc))
            .collect(),
        scalars: scalars.to_vec(),
        workgroups,
        chained: false,
    });
}

/// A zeroed buffer of `len` bytes aligned to `align`, ending flush against a guard page when
/// `len` is a multiple of `align` (and starting one page after another).
pub fn guarded(len: usize, align: usize) -> GuardedBuffer {
    let b = GuardedBuffer::with_alignment(len, align, 0).expect("guarded buffer");
    assert!(!len.is_multiple_of(align) || b.tail_gap() == 0);
    b
}

/// A guarded buffer holding `bytes`.
pub fn guarded_with(bytes: &[u8], align: usize) -> GuardedBuffer {
    let mut b = guarded(bytes.len(), align);
    b.as_mut_slice().copy_from_slice(bytes);
    b
}

/// Little-endian bytes of `values`.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The f32 values of little-endian `bytes`.
pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `copy_chunk(state, wg)`: copies bytes `[wg*chunk, min((wg+1)*chunk, len0))` of binding 0
/// to the same offsets of binding 1, one byte at a time, where `chunk = scalars[0]` and
/// `len0 = binding_lengths[0]`; returns 0.
///
/// ```text
///     mov rax, [rdi+8] ; mov r8, [rax] ; mov r9, [rax+8]      ; src, dst
///     mov rax, [rdi+16] ; mov rcx, [rax]                     ; len0
///     mov rax, [rdi+24] ; mov rdx, [rax]                     ; chunk
///     mov eax, esi ; imul rax, rdx ; add rdx, rax            ; start, end
///     cmp rdx, rcx ; cmova rdx, rcx                          ; end = min(end, len0)
/// 1:  cmp rax, rdx ; jae 2f
///     movzx r10d, byte [r8+rax] ; mov [r9+rax], r10b ; inc rax ; jmp 1b
/// 2:  xor eax, eax ; ret
/// ```
pub const COPY_CHUNK: [u8; 63] = [
    0x48, 0x8b, 0x47, 0x08, 0x4c, 0x8b, 0x00, 0x4c, 0x8b, 0x48, 0x08, 0x48, 0x8b, 0x47, 0x10, 0x48,
    0x8b, 0x08, 0x48, 0x8b, 0x47, 0x18, 0x48, 0x8b, 0x10, 0x89, 0xf0, 0x48, 0x0f, 0xaf, 0xc2, 0x48,
    0x01, 0xc2, 0x48, 0x39, 0xca, 0x48, 0x0f, 0x47, 0xd1, 0x48, 0x39, 0xd0, 0x73, 0x0e, 0x45, 0x0f,
    0xb6, 0x14, 0x00, 0x45, 0x88, 0x14, 0x01, 0x48, 0xff, 0xc0, 0xeb, 0xed, 0x31, 0xc0, 0xc3,
];

/// `mov eax, 7 ; ret`: fails every workgroup with status 7.
pub const STATUS_7: [u8; 6] = [0xb8, 0x07, 0x00, 0x00, 0x00, 0xc3];

/// `call_import_f32(state, wg)`: `binding1[wg] = imports[scalars[0] / 8](binding0[wg])` on
/// f32 elements, calling through the import table with a 16-byte aligned stack.
///
/// ```text
///     push rbx ; push r12 ; sub rsp, 8
///     mov rbx, rdi ; mov r12d, esi
///     mov rax, [rbx+8] ; mov rax, [rax] ; movss xmm0, [rax+4*r12]
///     mov rcx, [rbx+24] ; mov rcx, [rcx]                    ; table byte offset
///     mov rax, [rbx+40] ; call [rax+rcx]
///     mov rax, [rbx+8] ; mov rax, [rax+8] ; movss [rax+4*r12], xmm0
///     xor eax, eax ; add rsp, 8 ; pop r12 ; pop rbx ; ret
/// ```
pub const CALL_IMPORT_F32: [u8; 64] = [
    0x53, 0x41, 0x54, 0x48, 0x83, 0xec, 0x08, 0x48, 0x89, 0xfb, 0x41, 0x89, 0xf4, 0x48, 0x8b, 0x43,
    0x08, 0x48, 0x8b, 0x00, 0xf3, 0x42, 0x0f, 0x10, 0x04, 0xa0, 0x48, 0x8b, 0x4b, 0x18, 0x48, 0x8b,
    0x09, 0x48, 0x8b, 0x43, 0x28, 0xff, 0x14, 0x08, 0x48, 0x8b, 0x43, 0x08, 0x48, 0x8b, 0x40, 0x08,
    0xf3, 0x42, 0x0f, 0x11, 0x04, 0xa0, 0x31, 0xc0, 0x48, 0x83, 0xc4, 0x08, 0x41, 0x5c, 0x5b, 0xc3,
];

/// `dump_state(state, wg)`: in workgroup 0 only, writes into binding 0: `abi_version`,
/// `binding_count`, `scalar_count`, `workgroup_count` (u32 each), then one (address, length)
/// u64 pair per binding, then the scalars, then the import table address. Binding 0 must hold
/// `16 + 16 * bindings + 8 * scalars + 8` bytes.
///
/// ```text
///     test esi, esi ; jnz 3f
///     mov r8, [rdi+8] ; mov r9, [rdi+16] ; mov r10, [r8]
///     mov eax, [rdi] ; mov [r10], eax ; mov ecx, [rdi+4] ; mov [r10+4], ecx
///     mov eax, [rdi+32] ; mov [r10+8], eax ; mov eax, [rdi+36] ; mov [r10+12], eax
///     lea r11, [r10+16] ; xor eax, eax
/// 1:  cmp rax, rcx ; jae 2f
///     mov rdx, [r8+8*rax] ; mov [r11], rdx ; mov rdx, [r9+8*rax] ; mov [r11+8], rdx
///     add r11, 16 ; inc rax ; jmp 1b
/// 2:  mov r8, [rdi+24] ; mov ecx, [rdi+32] ; xor eax, eax
/// 4:  cmp rax, rcx ; jae 5f
///     mov rdx, [r8+8*rax] ; mov [r11], rdx ; add r11, 8 ; inc rax ; jmp 4b
/// 5:  mov rdx, [rdi+40] ; mov [r11], rdx
/// 3:  xor eax, eax ; ret
/// ```
pub const DUMP_STATE: [u8; 116] = [
    0x85, 0xf6, 0x75, 0x6d, 0x4c, 0x8b, 0x47, 0x08, 0x4c, 0x8b, 0x4f, 0x10, 0x4d, 0x8b, 0x10, 0x8b,
    0x07, 0x41, 0x89, 0x02, 0x8b, 0x4f, 0x04, 0x41, 0x89, 0x4a, 0x04, 0x8b, 0x47, 0x20, 0x41, 0x89,
    0x42, 0x08, 0x8b, 0x47, 0x24, 0x41, 0x89, 0x42, 0x0c, 0x4d, 0x8d, 0x5a, 0x10, 0x31, 0xc0, 0x48,
    0x39, 0xc8, 0x73, 0x18, 0x49, 0x8b, 0x14, 0xc0, 0x49, 0x89, 0x13, 0x49, 0x8b, 0x14, 0xc1, 0x49,
    0x89, 0x53, 0x08, 0x49, 0x83, 0xc3, 0x10, 0x48, 0xff, 0xc0, 0xeb, 0xe3, 0x4c, 0x8b, 0x47, 0x18,
    0x8b, 0x4f, 0x20, 0x31, 0xc0, 0x48, 0x39, 0xc8, 0x73, 0x10, 0x49, 0x8b, 0x14, 0xc0, 0x49, 0x89,
    0x13, 0x49, 0x83, 0xc3, 0x08, 0x48, 0xff, 0xc0, 0xeb, 0xeb, 0x48, 0x8b, 0x57, 0x28, 0x49, 0x89,
    0x13, 0x31, 0xc0, 0xc3,
];

/// An artifact copying input 0 (`n` bytes) to output 0 with [`COPY_CHUNK`] in workgroups of
/// `chunk` bytes.
pub fn copy_artifact(n: u64, chunk: u64) -> Artifact {
    let mut a = artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, n);
    let output = slot(&mut a, SlotRole::Output(0), DType::U8, n);
    let k = add_kernel(&mut a, "copy_chunk", &COPY_CHUNK);
    let workgroups = u32::try_from(n.div_ceil(chunk).max(1)).expect("few workgroups");
    dispatch(
        &mut a,
        k,
        &[
            (whole(input, n), Access::Read),
            (whole(output, n), Access::Write),
        ],
        &[chunk],
        workgroups,
    );
    a
}

/// Loads an artifact built by these tests.
pub fn load(artifact: &Artifact, cpu: &CpuInfo) -> Result<LoadedArtifact, LoadError> {
    load_with_weights(artifact, cpu, &Weights::empty())
}

/// Loads an artifact built by these tests, with weights.
pub fn load_with_weights(
    artifact: &Artifact,
    cpu: &CpuInfo,
    weights: &Weights,
) -> Result<LoadedArtifact, LoadError> {
    // SAFETY: the artifacts of these tests carry either no kernels or the hand-assembled
    // kernels of this module, each of which (see its listing) reads and writes only within
    // the binding lengths its DispatchState gives, preserves callee-saved registers and
    // returns; the tests that bind them give each binding the length the kernel expects.
    unsafe { LoadedArtifact::load_with_weights(artifact, cpu, weights) }
}
