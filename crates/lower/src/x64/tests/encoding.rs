//! The emitted bytes, disassembled by an independent decoder (iced-x86) and compared with an
//! expected listing: pins the prologue, the ABI checks, the loop shape and the encodings.

use accy_artifact::{Access, CpuFeature, FeatureSet};
use accy_ir::{BinaryOp, DType};
use iced_x86::{Decoder, DecoderOptions, Formatter, Instruction, IntelFormatter};
use smallvec::smallvec;

use crate::compile::Options;
use crate::kernel::{IndexMap, Kernel, KernelBinding, KernelNode, LoopKernel, Node, Store};
use crate::target::Target;
use crate::x64::asm::{x64, Asm};
use crate::x64::{X64Target, X64Tier};

/// `code` as one Intel-syntax instruction per line (no addresses), or the offset of the first
/// byte sequence the decoder cannot read.
pub(crate) fn disassemble(code: &[u8]) -> Result<String, usize> {
    let mut decoder = Decoder::with_ip(64, code, 0, DecoderOptions::NONE);
    let mut formatter = IntelFormatter::new();
    formatter.options_mut().set_branch_leading_zeros(false);
    formatter.options_mut().set_hex_prefix("0x");
    formatter.options_mut().set_hex_suffix("");
    let mut out = String::new();
    let mut instruction = Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut instruction);
        if instruction.is_invalid() {
            return Err(instruction.ip() as usize);
        }
        formatter.format(&instruction, &mut out);
        out.push('\n');
    }
    Ok(out)
}

/// The accy features the instructions of `code` need, by iced-x86's CPUID table; `Err` names
/// an instruction needing something accy does not model (or an undecodable byte).
pub(crate) fn features_used(code: &[u8]) -> Result<FeatureSet, String> {
    use iced_x86::CpuidFeature as C;
    let mut decoder = Decoder::with_ip(64, code, 0, DecoderOptions::NONE);
    let mut used = FeatureSet::EMPTY;
    let mut instruction = Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut instruction);
        if instruction.is_invalid() {
            return Err(format!("invalid bytes at {:#x}", instruction.ip()));
        }
        for f in instruction.cpuid_features() {
            match f {
                // The x86-64 baseline: integer instructions, cmov, SSE and SSE2.
                C::INTEL8086 | C::INTEL186 | C::INTEL386 | C::INTEL486 | C::X64 | C::CMOV => {}
                C::SSE | C::SSE2 => used.insert(CpuFeature::Sse2),
                C::SSE4_1 => used.insert(CpuFeature::Sse41),
                C::AVX => used.insert(CpuFeature::Avx),
                C::AVX2 => used.insert(CpuFeature::Avx2),
                C::FMA => used.insert(CpuFeature::Fma),
                C::BMI1 => used.insert(CpuFeature::Bmi1),
                C::BMI2 => used.insert(CpuFeature::Bmi2),
                C::AVX512F => used.insert(CpuFeature::Avx512f),
                C::AVX512VL => used.insert(CpuFeature::Avx512vl),
                C::AVX512DQ => used.insert(CpuFeature::Avx512dq),
                other => return Err(format!("{instruction} needs {other:?}")),
            }
        }
    }
    Ok(used)
}

/// Asserts that `code`, emitted by `target`, decodes fully and uses only features its spec
/// records.
pub(crate) fn assert_features_within(target: &X64Target, code: &[u8]) {
    let used = features_used(code).unwrap_or_else(|e| panic!("{}: {e}", target.name()));
    let declared = target.spec().features;
    assert!(
        used.is_subset(declared),
        "{} code uses {used} but declares {declared}",
        target.name()
    );
}

/// `out[i] = a[i] + b[i]` over 5 f32s.
pub(super) fn add_kernel() -> LoopKernel {
    let binding = |access| KernelBinding {
        dtype: DType::F32,
        elements: 5,
        access,
    };
    let load = |binding| KernelNode {
        node: Node::Load {
            binding,
            map: IndexMap::new(0, &[1]),
        },
        dtype: DType::F32,
    };
    LoopKernel {
        name: "add".into(),
        dims: smallvec![5],
        parallel_rank: 1,
        bindings: vec![
            binding(Access::Read),
            binding(Access::Read),
            binding(Access::Write),
        ],
        nodes: vec![
            load(0),
            load(1),
            KernelNode {
                node: Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 0,
                    rhs: 1,
                },
                dtype: DType::F32,
            },
        ],
        result: 2,
        reduction: None,
        store: Store {
            binding: 2,
            map: IndexMap::new(0, &[1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    }
}

/// Compares `text` with the golden file `name` beside this module, or rewrites the file when
/// `ACCY_BLESS=1` (then review the diff).
fn golden(name: &str, text: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/x64/tests/golden")
        .join(name);
    if std::env::var("ACCY_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, text).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == text,
        "{name} changed (rerun with ACCY_BLESS=1 to accept); got:\n{text}"
    );
}

#[test]
fn sse2_add_kernel_listing() {
    let target = X64Target::new(X64Tier::Sse2);
    let code = target
        .emit(&[Kernel::Loop(add_kernel())], &Options::default())
        .expect("emit");
    let text = disassemble(&code.code).expect("decodes");
    // Prologue with the ABI checks, the workgroup share of dim 0, map offsets, the loop with
    // slot-based node code, epilogue.
    golden("sse2_add.txt", &text);
    assert_eq!(code.entries[0].offset, 0);
    assert_eq!(code.entries[0].len as usize, code.code.len());
    assert!(
        text.ends_with("add rsp,0x40\npop r13\npop r12\npop rbx\nret\n"),
        "{text}"
    );
    assert_features_within(&target, &code.code);
    assert_eq!(
        features_used(&code.code),
        Ok(FeatureSet::of(&[CpuFeature::Sse2]))
    );
}

#[test]
fn avx2_add_kernel_uses_a_ymm_loop_and_its_declared_features() {
    let target = X64Target::new(X64Tier::Avx2);
    let code = target
        .emit(
            &[Kernel::Loop(add_kernel()), Kernel::Loop(add_kernel())],
            &Options::default(),
        )
        .expect("emit");
    let text = disassemble(&code.code).expect("decodes");
    for needle in [
        "vmovups ymm5,[rcx+rax*4]",
        "vmovups ymm6,[rcx+rax*4]",
        "vaddps ymm7,ymm5,ymm6",
        "vmovups [rcx+rax*4],ymm7",
        "vzeroupper",
        "addss xmm0,xmm1",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    // Two kernels, back to back, with the same code.
    let (a, b) = (&code.entries[0], &code.entries[1]);
    assert_eq!(b.offset, a.len);
    assert_eq!(a.len, b.len);
    assert_features_within(&target, &code.code);
}

/// dynasm 5.1 encodings the vector code works around, pinned against iced-x86: if dynasm is
/// fixed, these fail and the workarounds in `vector.rs` / `vector_ops.rs` / `tile.rs` (and
/// `vex.rs`'s `vgatherdpd`) can go.
#[test]
fn dynasm_quirks_are_as_worked_around() {
    #[allow(
        unused_imports,
        reason = "dynasm! expansions need both traits in scope"
    )]
    use dynasmrt::{DynasmApi, DynasmLabelApi};
    let mut ops = Asm::new(0);
    let (a, b, c): (u8, u8, u8) = (1, 2, 3);
    x64!(ops
        ; vcmpps Ry(a), Ry(b), Ry(c), 1
        ; vcmppd Ry(a), Ry(b), Ry(c), 0x1D
        ; vbroadcastss Ry(a), DWORD [rsp + 16]
        ; vpsrlq Ry(a), Ry(b), 63
        ; vfmadd231pd Ry(a), Ry(b), Ry(c)
        ; vshufps Ry(a), Ry(b), Ry(c), 0x44
        ; vgatherdpd Ry(a), [rcx + Rx(b) * 8], Ry(c)
        // The forms used instead, encoded as written:
        ; vpbroadcastd Ry(a), DWORD [rsp + 16]
        ; vbroadcastsd Ry(a), QWORD [rsp + 16]
        ; vpsrld Ry(a), Ry(b), 31
        ; vblendvps Ry(a), Ry(b), Ry(c), Ry(4)
        ; vblendvpd Ry(a), Ry(b), Ry(c), Ry(4)
        ; vpcmpgtq Ry(a), Ry(b), Ry(c)
        ; vpsravd Ry(a), Ry(b), Ry(c)
        ; vroundps Ry(a), Ry(b), 9
        ; roundsd xmm0, xmm1, 10
        ; vpcmpeqd Ry(a), Ry(a), Ry(a)
        ; vpslld Ry(a), Ry(a), 31
        ; vpsllq Ry(a), Ry(a), 63
        ; vandnps Ry(a), Ry(b), Ry(c)
        ; vgatherdps Ry(a), [rcx + Ry(b) * 4], Ry(c)
        ; vmovups Rx(a), [rcx + 0x4010]
        ; vinsertf128 Ry(a), Ry(a), [rcx - 0x10], 1
        ; vunpcklps Ry(a), Ry(b), Ry(c)
        ; vunpckhps Ry(a), Ry(b), Ry(c)
        ; vunpcklpd Ry(a), Ry(b), Ry(c)
        ; vunpckhpd Ry(a), Ry(b), Ry(c)
        ; prefetcht1 [rcx + rax * 8 + 0x100]
        ; vminps Ry(a), Ry(b), Ry(c)
        ; vmaxpd Ry(a), Ry(b), Ry(c)
        ; vextractf128 xmm1, Ry(15), 1
        ; vmovhlps xmm1, Rx(15), Rx(14)
        ; vmovshdup xmm1, Rx(15)
        ; vxorps Ry(a), Ry(b), [rsp + 0x140]
        ; vandps Ry(a), Ry(b), [rsp + 0x160]
    );
    ops.extend(crate::x64::micro::vfmadd231pd(a, b, c));
    ops.extend(crate::x64::micro::vfmadd231pd(12, 13, 14));
    ops.extend(crate::x64::vex::vgatherdpd_rcx(a, b, c));
    ops.extend(crate::x64::vex::vgatherdpd_rcx(9, 10, 11));
    let code = ops.finalize().expect("assemble");
    let expected = "\
vcmpltps ymm1,ymm3,ymm2
vcmpge_oqpd ymm1,ymm3,ymm2
vbroadcastss xmm1,[rsp+0x10]
vpsrlq xmm1,xmm2,0x3F
vfmadd231ps ymm1,ymm2,ymm3
vshufps ymm1,ymm3,ymm2,0x44
vgatherdps ymm1,[rcx+ymm2*8],ymm3
vpbroadcastd ymm1,[rsp+0x10]
vbroadcastsd ymm1,[rsp+0x10]
vpsrld ymm1,ymm2,0x1F
vblendvps ymm1,ymm2,ymm3,ymm4
vblendvpd ymm1,ymm2,ymm3,ymm4
vpcmpgtq ymm1,ymm2,ymm3
vpsravd ymm1,ymm2,ymm3
vroundps ymm1,ymm2,9
roundsd xmm0,xmm1,0xA
vpcmpeqd ymm1,ymm1,ymm1
vpslld ymm1,ymm1,0x1F
vpsllq ymm1,ymm1,0x3F
vandnps ymm1,ymm2,ymm3
vgatherdps ymm1,[rcx+ymm2*4],ymm3
vmovups xmm1,[rcx+0x4010]
vinsertf128 ymm1,ymm1,[rcx-0x10],1
vunpcklps ymm1,ymm2,ymm3
vunpckhps ymm1,ymm2,ymm3
vunpcklpd ymm1,ymm2,ymm3
vunpckhpd ymm1,ymm2,ymm3
prefetcht1 [rcx+rax*8+0x100]
vminps ymm1,ymm2,ymm3
vmaxpd ymm1,ymm2,ymm3
vextractf128 xmm1,ymm15,1
vmovhlps xmm1,xmm15,xmm14
vmovshdup xmm1,xmm15
vxorps ymm1,ymm2,[rsp+0x140]
vandps ymm1,ymm2,[rsp+0x160]
vfmadd231pd ymm1,ymm2,ymm3
vfmadd231pd ymm12,ymm13,ymm14
vgatherdpd ymm1,[rcx+xmm2*8],ymm3
vgatherdpd ymm9,[rcx+xmm10*8],ymm11
";
    assert_eq!(disassemble(&code).expect("decodes"), expected);
}

/// Every `vfmadd231` and `vfmadd213` form `vex.rs` writes as bytes (dynasm gets the W = 1
/// ones wrong), for low and high registers, and the forms with a frame operand.
#[test]
fn vex_fma_forms_decode_as_intended() {
    use crate::x64::vex::vfmadd231;
    let mut code = Vec::new();
    for (dst, b, c) in [(1, 2, 3), (12, 13, 14), (0, 9, 5), (8, 0, 15)] {
        for (wide, packed) in [(false, true), (true, true), (false, false), (true, false)] {
            code.extend(vfmadd231(dst, b, c, wide, packed));
        }
    }
    let expected = "\
vfmadd231ps ymm1,ymm2,ymm3
vfmadd231pd ymm1,ymm2,ymm3
vfmadd231ss xmm1,xmm2,xmm3
vfmadd231sd xmm1,xmm2,xmm3
vfmadd231ps ymm12,ymm13,ymm14
vfmadd231pd ymm12,ymm13,ymm14
vfmadd231ss xmm12,xmm13,xmm14
vfmadd231sd xmm12,xmm13,xmm14
vfmadd231ps ymm0,ymm9,ymm5
vfmadd231pd ymm0,ymm9,ymm5
vfmadd231ss xmm0,xmm9,xmm5
vfmadd231sd xmm0,xmm9,xmm5
vfmadd231ps ymm8,ymm0,ymm15
vfmadd231pd ymm8,ymm0,ymm15
vfmadd231ss xmm8,xmm0,xmm15
vfmadd231sd xmm8,xmm0,xmm15
";
    assert_eq!(disassemble(&code).expect("decodes"), expected);
    let mut code = Vec::new();
    for (dst, b, disp, wide) in [
        (1, 2, 0x40, false),
        (12, 13, 0x1_2340, true),
        (0, 9, 0, false),
    ] {
        code.extend(crate::x64::vex::vfmadd231_rsp(dst, b, disp, wide));
    }
    let expected = "\
vfmadd231ps ymm1,ymm2,[rsp+0x40]
vfmadd231pd ymm12,ymm13,[rsp+0x12340]
vfmadd231ps ymm0,ymm9,[rsp]
";
    assert_eq!(disassemble(&code).expect("decodes"), expected);
    let mut code = Vec::new();
    for (dst, b, c, wide) in [(1, 2, 3, false), (12, 13, 14, true), (8, 0, 15, false)] {
        code.extend(crate::x64::vex::vfmadd213(dst, b, c, wide));
    }
    let expected = "\
vfmadd213ps ymm1,ymm2,ymm3
vfmadd213pd ymm12,ymm13,ymm14
vfmadd213ps ymm8,ymm0,ymm15
";
    assert_eq!(disassemble(&code).expect("decodes"), expected);
}

/// Every EVEX form `evex.rs` produces, for registers and lane widths the emitter uses,
/// decoded by iced-x86.
#[test]
fn evex_forms_decode_as_intended() {
    use crate::x64::evex::{
        kandw, kmovw_from_gpr, load_masked, move_merge, store_masked, Lanes, Mem,
    };
    let mem = |scale| Mem {
        base: 1,
        index: 0,
        scale,
    };
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            load_masked(Lanes::Dword, 5, mem(4), 1).to_vec(),
            "vmovups ymm5{k1}{z},[rcx+rax*4]",
        ),
        (
            load_masked(Lanes::Dword, 0, mem(4), 1).to_vec(),
            "vmovups ymm0{k1}{z},[rcx+rax*4]",
        ),
        (
            load_masked(Lanes::Qword, 14, mem(8), 1).to_vec(),
            "vmovupd ymm14{k1}{z},[rcx+rax*8]",
        ),
        (
            store_masked(Lanes::Dword, 13, mem(4), 1).to_vec(),
            "vmovups [rcx+rax*4]{k1},ymm13",
        ),
        (
            store_masked(Lanes::Qword, 7, mem(8), 1).to_vec(),
            "vmovupd [rcx+rax*8]{k1},ymm7",
        ),
        (
            load_masked(
                Lanes::Dword,
                9,
                Mem {
                    base: 12,
                    index: 10,
                    scale: 1,
                },
                3,
            )
            .to_vec(),
            "vmovups ymm9{k3}{z},[r12+r10]",
        ),
        (
            move_merge(Lanes::Dword, 2, 11, 1).to_vec(),
            "vmovaps ymm2{k1},ymm11",
        ),
        (
            move_merge(Lanes::Qword, 2, 0, 1).to_vec(),
            "vmovapd ymm2{k1},ymm0",
        ),
        (kmovw_from_gpr(1, 0).to_vec(), "kmovw k1,eax"),
        (kandw(6, 6, 5).to_vec(), "kandw k6,k6,k5"),
        (kandw(3, 1, 7).to_vec(), "kandw k3,k1,k7"),
    ];
    // The 512-bit forms of the contraction microkernels: registers up to 31, every base
    // that needs care (rsp/r12 need a SIB, rbp/r13 a displacement), disp8 compression by the
    // vector or element size, and embedded broadcasts.
    use crate::x64::evex::{zmm, zop, Rm};
    let m = |base, disp| Rm::Mem {
        base,
        disp,
        broadcast: false,
        element: 4,
    };
    let bc = |base, disp, element| Rm::Mem {
        base,
        disp,
        broadcast: true,
        element,
    };
    let cases: Vec<(Vec<u8>, &str)> = cases
        .into_iter()
        .chain([
            (
                zmm(zop::load(false), 28, None, m(7, 0)).to_vec(),
                "vmovups zmm28,[rdi]",
            ),
            (
                zmm(zop::load(false), 29, None, m(7, 64)).to_vec(),
                "vmovups zmm29,[rdi+0x40]",
            ),
            (
                zmm(zop::load(true), 3, None, m(13, 0)).to_vec(),
                "vmovupd zmm3,[r13]",
            ),
            (
                zmm(zop::store(false), 27, None, m(15, 4100)).to_vec(),
                "vmovups [r15+0x1004],zmm27",
            ),
            (
                zmm(zop::store(true), 0, None, m(12, -128)).to_vec(),
                "vmovupd [r12-0x80],zmm0",
            ),
            (
                zmm(zop::fmadd231(false), 17, Some(28), bc(6, 12, 4)).to_vec(),
                "vfmadd231ps zmm17,zmm28,[rsi+0xC]{1to16}",
            ),
            (
                zmm(zop::fmadd231(true), 9, Some(29), bc(4, 8000, 8)).to_vec(),
                "vfmadd231pd zmm9,zmm29,[rsp+0x1F40]{1to8}",
            ),
            (
                zmm(zop::mul(false), 31, Some(28), bc(6, 0, 4)).to_vec(),
                "vmulps zmm31,zmm28,[rsi]{1to16}",
            ),
            (
                zmm(zop::add(true), 20, Some(20), Rm::Reg(31)).to_vec(),
                "vaddpd zmm20,zmm20,zmm31",
            ),
            (
                zmm(zop::pxor(), 13, Some(13), Rm::Reg(13)).to_vec(),
                "vpxord zmm13,zmm13,zmm13",
            ),
            (
                zmm(zop::pxor(), 26, Some(26), Rm::Reg(26)).to_vec(),
                "vpxord zmm26,zmm26,zmm26",
            ),
        ])
        .collect();
    for (bytes, text) in cases {
        assert_eq!(
            disassemble(&bytes).expect("decodes").trim_end(),
            text,
            "{bytes:02x?}"
        );
    }
}

/// The zmm forms of the AVX-512 f32 tile fill (`tile.rs`): whole-row loads into zmm16–31, the
/// unpacks between the two register banks, and `vshuff32x4`'s operand order and immediate.
#[test]
fn zmm_tile_fill_forms_decode_as_intended() {
    use crate::x64::evex_zmm::{zv, Zins, Zrm};
    let cases = [
        (
            Zins::rrr(zv::SHUFF32X4, 4, 16, 29).imm(0x88),
            "vshuff32x4 zmm4,zmm16,zmm29,0x88",
        ),
        (
            Zins::rrr(zv::unpckl(false), 0, 30, 31),
            "vunpcklps zmm0,zmm30,zmm31",
        ),
        (
            Zins::rrr(zv::unpckh(true), 27, 9, 11),
            "vunpckhpd zmm27,zmm9,zmm11",
        ),
        (
            Zins::new(zv::load(false), 31, 0, Zrm::at(1, 0x3C000)),
            "vmovups zmm31,[rcx+0x3C000]",
        ),
    ];
    assert_zmm_forms(&cases);
}

/// Asserts that each of `cases` encodes to its listing; returns their bytes.
pub(crate) fn assert_zmm_forms(cases: &[(crate::x64::evex_zmm::Zins, &str)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut expected = String::new();
    for &(ins, text) in cases {
        crate::x64::evex_zmm::emit(&mut bytes, ins);
        expected.push_str(text);
        expected.push('\n');
    }
    assert_eq!(disassemble(&bytes).expect("decodes"), expected);
    bytes
}
