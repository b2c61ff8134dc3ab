//! The vector loops' code on the AVX-512 tier and their instruction selection: the zmm
//! forms (`evex_zmm.rs`) decoded by iced-x86, the masked tail, opmasks kept for selects, and
//! selects that are one `minps`/`maxps` on both vector tiers.

use accy_ir::{BinaryOp, DType};

use super::encoding::{add_kernel, assert_features_within, disassemble};
use crate::compile::Options;
use crate::kernel::{Kernel, KernelNode, LoopKernel, Node};
use crate::target::Target;
use crate::x64::{X64Target, X64Tier};

/// An output at least half as large as the last-level cache is written with non-temporal stores
/// (and a closing `sfence`) on both vector tiers, for 4- and 8-byte elements; a smaller one, or
/// one whose rows are too short, with ordinary stores.
#[test]
fn large_outputs_stream_past_the_cache() {
    for tier in [X64Tier::Avx2, X64Tier::Avx512] {
        for (dtype, nt) in [(DType::F32, "vmovntps"), (DType::F64, "vmovntpd")] {
            let mut k = add_kernel();
            k.dims[0] = 1000;
            for b in &mut k.bindings {
                b.dtype = dtype;
                b.elements = 1000;
            }
            for n in &mut k.nodes {
                n.dtype = dtype;
            }
            let bytes = 1000 * dtype.size_bytes();
            let with_llc = |k: &LoopKernel, llc: u64| {
                let options = Options::default().with_caches(accy_artifact::Blocking {
                    llc,
                    ..Options::default().caches
                });
                let target = X64Target::new(tier);
                let code = target
                    .emit(&[Kernel::Loop(k.clone())], &options)
                    .expect("emit");
                let text = disassemble(&code.code).expect("decodes");
                // What `accy inspect` reports agrees with the code.
                assert_eq!(target.streams_stores(k, &options), text.contains("vmovnt"));
                text
            };
            let streamed = with_llc(&k, 2 * bytes);
            assert!(streamed.contains(nt), "{tier:?} {dtype}:\n{streamed}");
            assert!(streamed.contains("sfence"), "{tier:?} {dtype}:\n{streamed}");
            let cached = with_llc(&k, 2 * bytes + 8);
            assert!(!cached.contains("vmovnt"), "{tier:?} {dtype}:\n{cached}");
            assert!(!cached.contains("sfence"), "{tier:?} {dtype}:\n{cached}");
            k.dims[0] = crate::emit::STREAM_MIN_RUN - 1;
            let short = with_llc(&k, 8);
            assert!(!short.contains("vmovnt"), "{tier:?} {dtype}:\n{short}");
        }
    }
}

/// A blocked transpose read through tiles streams its output when it is as large as the
/// last-level cache, on both vector tiers and both lane widths: each store checks its address,
/// non-temporal as one whole vector or as pieces (32-byte halves of a zmm vector, 16-byte
/// ones), else ordinary (with the prefetch of its line a few blocks on), and the kernel ends
/// with `sfence`. The AVX-512 tier reads the tiles as zmm columns.
#[test]
fn tiled_transposes_stream_each_aligned_store() {
    let ymm_stores = [
        "test dl,0x1F",
        "jne",
        "vmovntps [rdx],ymm",
        "jmp",
        "test dl,0xF",
        "jne",
        "vmovntps [rdx],xmm",
        "vextractf128 xmm",
        "vmovntps [rdx+0x10],xmm",
        "jmp",
        "vmovups [rdx],ymm",
        "prefetcht1 [rdx+",
    ];
    let zmm_stores = [
        "test dl,0x3F",
        "jne",
        "vmovntps [rdx],zmm",
        "jmp",
        "test dl,0x1F",
        "jne",
        "vmovntps [rdx],ymm",
        "vextractf64x4 ymm",
        "vmovntps [rdx+0x20],ymm",
        "jmp",
        "test dl,0xF",
        "jne",
        "vmovntps [rdx],xmm",
        "vextractf32x4 xmm",
        "vmovntps [rdx+0x10],xmm",
        "vextractf32x4 xmm",
        "vmovntps [rdx+0x20],xmm",
        "vextractf32x4 xmm",
        "vmovntps [rdx+0x30],xmm",
        "jmp",
        "vmovups [rdx],zmm",
        "prefetcht1 [rdx+",
    ];
    for tier in [X64Tier::Avx2, X64Tier::Avx512] {
        for dtype in [DType::F32, DType::F64] {
            let (n, m) = (64u64, 512u64);
            let block = crate::TransposeBlock {
                line_bytes: 128,
                run: 256,
                along_rows: true,
            };
            let k = crate::testing::kernels::blocked_transpose(n, m, dtype, block);
            assert!(crate::x64::vector_plan::vector_tiles(&k), "{dtype} tiled");
            let bytes = n * m * dtype.size_bytes();
            let options = Options::default().with_caches(accy_artifact::Blocking {
                llc: bytes,
                ..Options::default().caches
            });
            let target = X64Target::new(tier);
            assert!(target.streams_stores(&k, &options), "{tier:?} {dtype}");
            let code = target
                .emit(&[Kernel::Loop(k.clone())], &options)
                .expect("emit");
            let text = disassemble(&code.code).expect("decodes");
            let (expected, column): (&[&str], &str) = match tier {
                X64Tier::Avx512 => (&zmm_stores, " zmm"),
                _ => (&ymm_stores, " ymm"),
            };
            let lines: Vec<&str> = text.lines().collect();
            let found = lines.windows(expected.len()).any(|w| {
                w.iter()
                    .zip(expected)
                    .all(|(line, form)| line.trim_start().starts_with(form))
            });
            assert!(found, "{tier:?} {dtype}:\n{text}");
            assert!(text.contains("sfence"), "{tier:?} {dtype}:\n{text}");
            // The loop reads its columns from the tiles in the frame through a pointer.
            let reads_column = lines.iter().any(|l| {
                let l = l.trim_start();
                l.starts_with("vmovup")
                    && l.contains(column)
                    && l.contains(",[r")
                    && !l.contains("+rax*")
            });
            assert!(reads_column, "{tier:?} {dtype}:\n{text}");
            assert_features_within(&target, &code.code);
        }
    }
}

/// On AVX-512 a tiled transpose reads zmm tiles when its runs are whole zmm vectors, and ymm
/// tiles (not gathers) when they are whole ymm vectors only.
#[test]
fn avx512_tiles_are_zmm_when_runs_are_whole_zmm_vectors() {
    for (dtype, run, zmm) in [
        (DType::F32, 256, true),
        (DType::F32, 8, false),
        (DType::F64, 256, true),
        (DType::F64, 4, false),
    ] {
        let block = crate::TransposeBlock {
            line_bytes: 128,
            run,
            along_rows: true,
        };
        let k = crate::testing::kernels::blocked_transpose(64, 512, dtype, block);
        let live = k.live_nodes();
        let plan = crate::x64::vector_plan::plan(&k, &live, true, true).expect("a vector plan");
        assert!(plan.tiles(), "{dtype} run {run}: {:?}", k.dims);
        assert_eq!(plan.zmm, zmm, "{dtype} run {run}: {:?}", k.dims);
    }
}

#[test]
fn avx512_tier_runs_zmm_vector_loops_ending_with_a_masked_iteration() {
    let target = X64Target::new(X64Tier::Avx512);
    let code = target
        .emit(&[Kernel::Loop(add_kernel())], &Options::default())
        .expect("emit");
    let text = disassemble(&code.code).expect("decodes");
    for needle in [
        "vaddps zmm7,zmm5,zmm6",
        "kmovw k1,eax",
        "vmovups zmm5{k1}{z},[rcx+rax*4]",
        "vmovups [rcx+rax*4]{k1},zmm7",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    // No scalar tail: the only scalar float op left would be the tail's addss.
    assert!(!text.contains("addss"), "{text}");
    assert_features_within(&target, &code.code);
}

/// Every zmm form of the loop kernels' vector path, decoded: operand order, masks, zeroing,
/// immediates, extended registers (bit 3 and bit 4 of each field) and memory forms.
#[test]
fn zmm_loop_forms_decode_as_intended() {
    use crate::x64::evex_zmm::{zv, Zins, Zrm};
    let elem = Zrm::Mem {
        base: 1,
        index: Some((0, 4)),
        disp: 0,
    };
    let wide_elem = Zrm::Mem {
        base: 13,
        index: Some((9, 8)),
        disp: 0,
    };
    let cases: Vec<(Zins, &str)> = vec![
        (
            Zins::new(zv::load(false), 5, 0, elem),
            "vmovups zmm5,[rcx+rax*4]",
        ),
        (
            Zins::new(zv::load(true), 21, 0, wide_elem).mask(1, true),
            "vmovupd zmm21{k1}{z},[r13+r9*8]",
        ),
        (
            Zins::new(zv::store(false), 31, 0, elem).mask(1, false),
            "vmovups [rcx+rax*4]{k1},zmm31",
        ),
        (
            Zins::new(zv::store(true), 8, 0, Zrm::rsp(0x140)),
            "vmovupd [rsp+0x140],zmm8",
        ),
        (
            Zins::new(zv::load(false), 0, 0, Zrm::rsp(0)),
            "vmovups zmm0,[rsp]",
        ),
        (
            Zins::new(zv::store_nt(false), 6, 0, elem),
            "vmovntps [rcx+rax*4],zmm6",
        ),
        (
            Zins::new(zv::store_nt(true), 17, 0, wide_elem),
            "vmovntpd [r13+r9*8],zmm17",
        ),
        (Zins::rrr(zv::mov(false), 16, 0, 7), "vmovaps zmm16,zmm7"),
        (
            Zins::rrr(zv::mov(true), 2, 0, 30).mask(1, false),
            "vmovapd zmm2{k1},zmm30",
        ),
        (Zins::rrr(zv::add(false), 7, 5, 6), "vaddps zmm7,zmm5,zmm6"),
        (
            Zins::new(zv::add(true), 9, 17, Zrm::rsp(64)),
            "vaddpd zmm9,zmm17,[rsp+0x40]",
        ),
        (
            Zins::rrr(zv::mul(false), 24, 25, 26),
            "vmulps zmm24,zmm25,zmm26",
        ),
        (
            Zins::rrr(zv::sub(true), 1, 12, 19),
            "vsubpd zmm1,zmm12,zmm19",
        ),
        (
            Zins::rrr(zv::div(false), 6, 17, 7),
            "vdivps zmm6,zmm17,zmm7",
        ),
        (Zins::rrr(zv::min(false), 3, 5, 6), "vminps zmm3,zmm5,zmm6"),
        (Zins::rrr(zv::max(true), 4, 6, 5), "vmaxpd zmm4,zmm6,zmm5"),
        (Zins::rrr(zv::sqrt(false), 11, 0, 20), "vsqrtps zmm11,zmm20"),
        (
            Zins::rrr(zv::cmp(false), 2, 5, 14).imm(0x11),
            "vcmplt_oqps k2,zmm5,zmm14",
        ),
        (
            Zins::rrr(zv::cmp(true), 2, 22, 3).imm(3),
            "vcmpunordpd k2,zmm22,zmm3",
        ),
        (Zins::rrr(zv::CVTDQ2PS, 5, 0, 18), "vcvtdq2ps zmm5,zmm18"),
        (Zins::rrr(zv::CVTTPS2DQ, 3, 0, 27), "vcvttps2dq zmm3,zmm27"),
        (Zins::rrr(zv::PAND, 8, 9, 10), "vpandd zmm8,zmm9,zmm10"),
        (Zins::rrr(zv::PANDN, 6, 3, 23), "vpandnd zmm6,zmm3,zmm23"),
        (Zins::rrr(zv::POR, 29, 3, 4), "vpord zmm29,zmm3,zmm4"),
        (Zins::rrr(zv::PXOR, 3, 3, 3), "vpxord zmm3,zmm3,zmm3"),
        (
            Zins::rrr(zv::padd(false), 6, 7, 10),
            "vpaddd zmm6,zmm7,zmm10",
        ),
        (
            Zins::rrr(zv::padd(true), 6, 7, 10),
            "vpaddq zmm6,zmm7,zmm10",
        ),
        (
            Zins::rrr(zv::psub(false), 5, 3, 16),
            "vpsubd zmm5,zmm3,zmm16",
        ),
        (
            Zins::rrr(zv::psub(true), 5, 3, 16),
            "vpsubq zmm5,zmm3,zmm16",
        ),
        (
            Zins::rrr(zv::PMULLD, 12, 13, 14),
            "vpmulld zmm12,zmm13,zmm14",
        ),
        (
            Zins::rrr(zv::pmaxs(false), 5, 6, 7),
            "vpmaxsd zmm5,zmm6,zmm7",
        ),
        (
            Zins::rrr(zv::pmaxs(true), 5, 6, 7),
            "vpmaxsq zmm5,zmm6,zmm7",
        ),
        (
            Zins::rrr(zv::pmins(false), 5, 6, 7),
            "vpminsd zmm5,zmm6,zmm7",
        ),
        (
            Zins::rrr(zv::pmins(true), 5, 6, 7),
            "vpminsq zmm5,zmm6,zmm7",
        ),
        (
            Zins::rrr(zv::psllv(false), 10, 7, 1),
            "vpsllvd zmm10,zmm7,zmm1",
        ),
        (
            Zins::rrr(zv::psllv(true), 10, 7, 1),
            "vpsllvq zmm10,zmm7,zmm1",
        ),
        (
            Zins::rrr(zv::psrlv(false), 10, 7, 1),
            "vpsrlvd zmm10,zmm7,zmm1",
        ),
        (
            Zins::rrr(zv::psrlv(true), 10, 7, 1),
            "vpsrlvq zmm10,zmm7,zmm1",
        ),
        (
            Zins::rrr(zv::psrav(false), 10, 7, 1),
            "vpsravd zmm10,zmm7,zmm1",
        ),
        (
            Zins::rrr(zv::psrav(true), 10, 7, 1),
            "vpsravq zmm10,zmm7,zmm1",
        ),
        (
            Zins::rrr(zv::pshift_imm(false), zv::SHIFT_LEFT, 3, 3).imm(31),
            "vpslld zmm3,zmm3,0x1F",
        ),
        (
            Zins::rrr(zv::pshift_imm(true), zv::SHIFT_LEFT, 19, 4).imm(63),
            "vpsllq zmm19,zmm4,0x3F",
        ),
        (
            Zins::rrr(zv::pshift_imm(false), zv::SHIFT_RIGHT, 8, 25).imm(31),
            "vpsrld zmm8,zmm25,0x1F",
        ),
        (
            Zins::rrr(zv::pshift_imm(true), zv::SHIFT_RIGHT, 8, 25).imm(63),
            "vpsrlq zmm8,zmm25,0x3F",
        ),
        (Zins::rrr(zv::pabs(false), 9, 0, 17), "vpabsd zmm9,zmm17"),
        (Zins::rrr(zv::pabs(true), 9, 0, 17), "vpabsq zmm9,zmm17"),
        (
            Zins::rrr(zv::fmadd231(false), 8, 21, 7),
            "vfmadd231ps zmm8,zmm21,zmm7",
        ),
        (
            Zins::new(zv::fmadd231(true), 3, 18, Zrm::rsp(0x1c0)),
            "vfmadd231pd zmm3,zmm18,[rsp+0x1C0]",
        ),
        (
            Zins::new(zv::broadcast(false), 30, 0, Zrm::rsp(0x44)),
            "vbroadcastss zmm30,[rsp+0x44]",
        ),
        (
            Zins::new(zv::broadcast(true), 7, 0, Zrm::rsp(8)),
            "vbroadcastsd zmm7,[rsp+8]",
        ),
        (
            Zins::rrr(zv::scalef(false), 5, 6, 7),
            "vscalefps zmm5,zmm6,zmm7",
        ),
        (
            Zins::rrr(zv::scalef(true), 20, 3, 31).ymm(),
            "vscalefpd ymm20,ymm3,ymm31",
        ),
        (
            Zins::rrr(zv::scalef_scalar(false), 0, 0, 1).scalar(),
            "vscalefss xmm0,xmm0,xmm1",
        ),
        (
            Zins::rrr(zv::scalef_scalar(true), 2, 9, 14).scalar(),
            "vscalefsd xmm2,xmm9,xmm14",
        ),
        (
            Zins::rrr(zv::fmadd213(false), 9, 5, 19),
            "vfmadd213ps zmm9,zmm5,zmm19",
        ),
        (
            Zins::rrr(zv::fmadd213(true), 30, 2, 14),
            "vfmadd213pd zmm30,zmm2,zmm14",
        ),
        (
            Zins::rrr(zv::ptestm(false), 2, 8, 8),
            "vptestmd k2,zmm8,zmm8",
        ),
        (
            Zins::rrr(zv::ptestm(true), 2, 24, 24),
            "vptestmq k2,zmm24,zmm24",
        ),
        (
            Zins::rrr(zv::pblendm(false), 9, 7, 5).mask(2, false),
            "vpblendmd zmm9{k2},zmm7,zmm5",
        ),
        (
            Zins::rrr(zv::pblendm(true), 20, 30, 6).mask(2, false),
            "vpblendmq zmm20{k2},zmm30,zmm6",
        ),
        (
            Zins::rrr(zv::por(false), 9, 3, 4).mask(7, false),
            "vpord zmm9{k7},zmm3,zmm4",
        ),
        (
            Zins::rrr(zv::por(true), 21, 3, 4).mask(7, false),
            "vporq zmm21{k7},zmm3,zmm4",
        ),
        (
            Zins::rrr(zv::pternlog(false), 8, 8, 8)
                .imm(0xFF)
                .mask(2, true),
            "vpternlogd zmm8{k2}{z},zmm8,zmm8,0xFF",
        ),
        (
            Zins::rrr(zv::pternlog(true), 17, 17, 17)
                .imm(0xFF)
                .mask(2, true),
            "vpternlogq zmm17{k2}{z},zmm17,zmm17,0xFF",
        ),
        (
            Zins::rrr(zv::pcmp(false), 2, 5, 6).imm(6),
            "vpcmpnled k2,zmm5,zmm6",
        ),
        (
            Zins::rrr(zv::pcmp(true), 2, 5, 26).imm(1),
            "vpcmpltq k2,zmm5,zmm26",
        ),
        (
            Zins::rrr(zv::rndscale(false), 5, 0, 6).imm(9),
            "vrndscaleps zmm5,zmm6,9",
        ),
        (
            Zins::rrr(zv::rndscale(true), 28, 0, 6).imm(10),
            "vrndscalepd zmm28,zmm6,0xA",
        ),
        (
            Zins::rrr(zv::EXTRACTF64X4, 15, 0, 1).imm(1),
            "vextractf64x4 ymm1,zmm15,1",
        ),
        (
            Zins::rrr(zv::pbroadcast_gpr(false), 4, 0, 0),
            "vpbroadcastd zmm4,eax",
        ),
        (
            Zins::rrr(zv::pbroadcast_gpr(true), 22, 0, 0),
            "vpbroadcastq zmm22,rax",
        ),
        (
            Zins::new(zv::pbroadcast_mem(false), 18, 0, Zrm::rsp(0x150)),
            "vpbroadcastd zmm18,[rsp+0x150]",
        ),
        (
            Zins::new(zv::pbroadcast_mem(true), 7, 0, Zrm::rsp(8)),
            "vpbroadcastq zmm7,[rsp+8]",
        ),
    ];
    let bytes = super::encoding::assert_zmm_forms(&cases);
    let target = X64Target::new(X64Tier::Avx512);
    assert_features_within(&target, &bytes);
}

/// `%2 = compare(a, b); %3 = select(%2, a, b); %4 = select(%2, b, a); %5 = combine(%3, %4)`
/// over two f32 inputs.
fn two_selects_kernel(compare: accy_ir::CompareOp, combine: BinaryOp) -> LoopKernel {
    let node = |node, dtype| KernelNode { node, dtype };
    let select = |on_true, on_false| {
        node(
            Node::Select {
                cond: 2,
                on_true,
                on_false,
            },
            DType::F32,
        )
    };
    let mut k = add_kernel();
    k.nodes.truncate(2);
    k.nodes.extend([
        node(
            Node::Compare {
                op: compare,
                lhs: 0,
                rhs: 1,
            },
            DType::Bool,
        ),
        select(0, 1),
        select(1, 0),
        node(
            Node::Binary {
                op: combine,
                lhs: 3,
                rhs: 4,
            },
            DType::F32,
        ),
    ]);
    k.result = 5;
    k
}

/// A compare read only by selects stays in an opmask on the AVX-512 tier: the selects blend
/// under it, with no mask lanes made and tested again; a compare that is also stored gets
/// its lanes.
#[test]
fn avx512_selects_blend_under_their_compares_opmask() {
    use accy_ir::CompareOp;
    // `<=` so that the selects are not min/max, which need no mask at all.
    let mut k = two_selects_kernel(CompareOp::Le, BinaryOp::Add);
    let target = X64Target::new(X64Tier::Avx512);
    let emit = |k: &LoopKernel| {
        let code = target
            .emit(&[Kernel::Loop(k.clone())], &Options::default())
            .expect("emit");
        assert_features_within(&target, &code.code);
        disassemble(&code.code).expect("decodes")
    };
    let text = emit(&k);
    assert!(text.contains("vcmple_oqps k2,"), "{text}");
    assert_eq!(
        text.matches("{k2},").count(),
        4,
        "two selects, vector loop and tail:\n{text}"
    );
    assert!(
        !text.contains("vptestm") && !text.contains("vpternlog"),
        "{text}"
    );
    // Also stored (as the result's operand through a convert): lanes, then a test per select.
    k.nodes[5] = KernelNode {
        node: Node::Convert { x: 2 },
        dtype: DType::F32,
    };
    let text = emit(&k);
    assert!(
        text.contains("vcmple_oqps k7,") && text.contains("vpternlogd"),
        "{text}"
    );
    assert_eq!(
        text.matches("vptestmd k7,").count(),
        0,
        "dead selects:\n{text}"
    );
}

/// `select(a < b, a, b)` is `minps(a, b)` and `select(a < b, b, a)` is `maxps(b, a)` on both
/// vector tiers, with the compare, read by nothing else, left out.
#[test]
fn min_max_selects_are_one_instruction_and_drop_their_compare() {
    use accy_ir::CompareOp;
    let k = two_selects_kernel(CompareOp::Lt, BinaryOp::Sub);
    for (tier, reg) in [(X64Tier::Avx2, "ymm"), (X64Tier::Avx512, "zmm")] {
        let target = X64Target::new(tier);
        let code = target
            .emit(&[Kernel::Loop(k.clone())], &Options::default())
            .expect("emit");
        let text = disassemble(&code.code).expect("decodes");
        // Loads: a in register 5, b in 6; min(a, b) into 7, max(b, a) into 8.
        for needle in [
            format!("vminps {reg}7,{reg}5,{reg}6"),
            format!("vmaxps {reg}8,{reg}6,{reg}5"),
        ] {
            assert!(
                text.contains(&needle),
                "{tier:?}: missing {needle}:\n{text}"
            );
        }
        assert!(
            !text.contains(&format!("vcmpltps {reg}")),
            "{tier:?}:\n{text}"
        );
        assert!(
            !text.contains("vcmplt_oqps") && !text.contains("blend"),
            "{tier:?}:\n{text}"
        );
    }
}
