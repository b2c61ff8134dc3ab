//! Encoding tables for the AArch64 backend: representative kernels are emitted and
//! disassembled by an independent decoder (yaxpeax-arm), and the listing is compared with a
//! checked-in golden file under `tests/golden/`. Pins the prologue and epilogue, the ABI
//! checks, the loop shape, the import call sequence and the instruction choices; runs on any
//! host. After an intended change, `ACCY_BLESS=1 cargo test -p accy-a64-emu-tests --test
//! aarch64_encoding` rewrites the files (review the diff).

use accy_artifact::Access;
use accy_ir::{BinaryOp, DType, ReduceOp, UnaryOp};
use accy_lower::aarch64::A64Target;
use accy_lower::kernel::{IndexMap, KernelBinding, KernelNode, LoopKernel, Node, NodeId, Store};
use accy_lower::Target;
use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::InstDecoder;

/// `code` as one instruction per line, each with its byte offset and word, or the offset of
/// the first word the decoder rejects.
fn disassemble(code: &[u8]) -> Result<String, usize> {
    let decoder = InstDecoder::default();
    let mut out = String::new();
    for (i, word) in code.chunks(4).enumerate() {
        let mut reader = U8Reader::new(word);
        let inst = decoder.decode(&mut reader).map_err(|_| 4 * i)?;
        let w = u32::from_le_bytes(word.try_into().map_err(|_| 4 * i)?);
        out.push_str(&format!("{:04x}  {w:08x}  {inst}\n", 4 * i));
    }
    Ok(out)
}

fn kernel(
    name: &str,
    dims: &[u64],
    parallel_rank: u32,
    inputs: &[DType],
    nodes: Vec<KernelNode>,
    reduction: Option<ReduceOp>,
) -> LoopKernel {
    let result = nodes.len() as NodeId - 1;
    let out = nodes[result as usize].dtype;
    let elements: u64 = dims.iter().product();
    let parallel = &dims[..parallel_rank as usize];
    let mut bindings: Vec<KernelBinding> = inputs
        .iter()
        .map(|&dtype| KernelBinding {
            dtype,
            elements,
            access: Access::Read,
        })
        .collect();
    bindings.push(KernelBinding {
        dtype: out,
        elements: parallel.iter().product(),
        access: Access::Write,
    });
    LoopKernel {
        name: name.into(),
        dims: dims.iter().copied().collect(),
        parallel_rank,
        bindings,
        nodes,
        result,
        reduction,
        store: Store {
            binding: inputs.len() as u32,
            map: IndexMap::row_major(parallel).expect("map"),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    }
}

fn load(binding: u32, dtype: DType, map: IndexMap) -> KernelNode {
    KernelNode {
        node: Node::Load { binding, map },
        dtype,
    }
}

/// The representative kernels, by golden file name.
fn kernels() -> Vec<(&'static str, LoopKernel)> {
    let row = || IndexMap::new(0, &[1]);
    vec![
        (
            "aarch64_add_f32",
            kernel(
                "add_f32",
                &[64],
                1,
                &[DType::F32, DType::F32],
                vec![
                    load(0, DType::F32, row()),
                    load(1, DType::F32, row()),
                    KernelNode {
                        node: Node::Binary {
                            op: BinaryOp::Add,
                            lhs: 0,
                            rhs: 1,
                        },
                        dtype: DType::F32,
                    },
                ],
                None,
            ),
        ),
        (
            "aarch64_exp_f64",
            kernel(
                "exp_f64",
                &[10],
                1,
                &[DType::F64],
                vec![
                    load(0, DType::F64, row()),
                    KernelNode {
                        node: Node::Unary {
                            op: UnaryOp::Exp,
                            x: 0,
                        },
                        dtype: DType::F64,
                    },
                ],
                None,
            ),
        ),
        (
            "aarch64_sum_rows_i32",
            kernel(
                "sum_rows_i32",
                &[5, 100_000],
                1,
                &[DType::I32],
                vec![load(0, DType::I32, IndexMap::new(0, &[100_000, 1]))],
                Some(ReduceOp::Sum),
            ),
        ),
        (
            "aarch64_convert_f32_u8",
            kernel(
                "convert_f32_u8",
                &[16],
                1,
                &[DType::F32],
                vec![
                    load(0, DType::F32, row()),
                    KernelNode {
                        node: Node::Convert { x: 0 },
                        dtype: DType::U8,
                    },
                ],
                None,
            ),
        ),
    ]
}

#[test]
fn aarch64_encoding_tables() {
    let bless = std::env::var_os("ACCY_BLESS").is_some();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let target = A64Target::new();
    for (file, k) in kernels() {
        k.validate().expect("valid kernel");
        let code = target
            .emit(
                &[accy_lower::kernel::Kernel::Loop(k.clone())],
                &accy_lower::Options::default(),
            )
            .expect("emit");
        assert_eq!(code.code.len() % 4, 0);
        let listing = disassemble(&code.code)
            .unwrap_or_else(|at| panic!("{file}: undecodable word at {at:#x}"));
        let path = dir.join(format!("{file}.txt"));
        if bless {
            std::fs::write(&path, &listing).expect("write golden file");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (run with ACCY_BLESS=1 to create)", path.display())
        });
        assert_eq!(
            listing, want,
            "{file}: listing changed (ACCY_BLESS=1 rewrites it)"
        );
    }
}

/// The decoder itself is checked on known words (from the ARM reference manual encodings),
/// so a golden file cannot silently pin a decoder bug.
#[test]
fn aarch64_decoder_reads_known_words() {
    let words: [(u32, &str); 3] = [
        (0xd65f_03c0, "ret"),
        (0x1e21_2800, "fadd s0, s0, s1"),
        (0x8b01_0000, "add x0, x0, x1"),
    ];
    for (w, text) in words {
        let listing = disassemble(&w.to_le_bytes()).expect("decodes");
        assert!(listing.trim_end().ends_with(text), "{w:08x}: {listing}");
    }
}

/// A second, independent decoder when the machine has one: LLVM's `llvm-mc` must read every
/// word of every representative kernel as a valid instruction too (the golden listings come
/// from yaxpeax-arm). Skipped, saying so, where llvm-mc is not installed.
#[test]
fn aarch64_llvm_mc_agrees_every_word_is_valid() {
    let target = A64Target::new();
    for (file, k) in kernels() {
        let code = target
            .emit(
                &[accy_lower::kernel::Kernel::Loop(k.clone())],
                &accy_lower::Options::default(),
            )
            .expect("emit")
            .code;
        let hex: Vec<String> = code.iter().map(|b| format!("0x{b:02x}")).collect();
        let child = std::process::Command::new("llvm-mc")
            .args(["-triple=aarch64", "-disassemble"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            #[allow(
                clippy::print_stderr,
                reason = "tell the log the cross-check was skipped"
            )]
            {
                eprintln!("skipping the llvm-mc cross-check: llvm-mc is not installed");
            }
            return;
        };
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(hex.join(" ").as_bytes()).expect("write");
        }
        let out = child.wait_with_output().expect("llvm-mc");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("invalid"), "{file}: llvm-mc: {stderr}");
        let instructions = stdout
            .lines()
            .filter(|l| {
                let t = l.trim();
                !t.is_empty() && !t.starts_with('.')
            })
            .count();
        assert_eq!(
            instructions,
            code.len() / 4,
            "{file}: llvm-mc output:\n{stdout}"
        );
    }
}
