//! Decoding allocates in proportion to the input: a header that claims billions of items
//! fails before allocating them. A counting global allocator tracks the peak of live heap
//! bytes while `decode` runs.
//!
//! Everything runs in the single test of this binary, so no other test thread allocates
//! while a measurement is taken.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use accy_ir::{Builder, DType, Tensor, Type, UnaryOp};
use accy_wire::{decode, encode, DecodeError};
use common::{assemble, split};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::SeqCst) + bytes;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so this
// allocator upholds `GlobalAlloc`'s contract exactly as `System` does; the counters only
// observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller guarantees `layout` has nonzero size, as `System.alloc` requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` was allocated by this allocator (hence by
        // `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `ptr`/`layout` describe a live allocation of ours and
        // `new_size` is valid for `layout`'s alignment, as `System.realloc` requires.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Decodes `bytes` and returns the result with the peak of heap bytes allocated meanwhile
/// (on top of what was live before). The result is dropped inside the measurement window
/// only after the peak is read, so it counts.
fn measure(bytes: &[u8]) -> (Result<accy_ir::Program, DecodeError>, usize) {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let result = decode(bytes);
    let peak = PEAK.load(Ordering::SeqCst) - base;
    (result, peak)
}

const LIMIT: usize = 64 * 1024;

fn u64le(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// Section `index` of the worked example replaced by `payload` (with an honest length).
fn with_payload(index: usize, payload: Vec<u8>) -> Vec<u8> {
    let mut s = split(&encode(&common::doc_example()));
    s[index].payload = payload;
    assemble(1, 0, &s)
}

/// An instructions payload holding one instruction: `opcode`, result type f32[] and `body`.
fn one_instruction(opcode: u8, body: &[u8]) -> Vec<u8> {
    let mut p = u64le(1);
    p.push(opcode);
    p.push(0x01);
    p.extend(u64le(0));
    p.extend(body);
    p
}

/// Inputs that claim far more than they hold, each with a phrase its error must contain.
fn hostile_inputs() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let few = [7u8; 24];
    let claim = |count: u64| {
        let mut p = u64le(count);
        p.extend(few);
        p
    };
    let mut name_len = u64le(1);
    name_len.push(0x01);
    name_len.extend(u64le(1 << 40));
    name_len.extend(few);
    let mut huge_rank = u64le(1);
    huge_rank.push(0x01);
    huge_rank.extend(u64le(1));
    huge_rank.extend([b'x', 0x01]);
    huge_rank.extend(u64le(1 << 32));
    huge_rank.extend(few);
    let mut concat = u64le(1 << 32);
    concat.extend(few);
    let mut constant = vec![0x02];
    constant.extend(u64le(2));
    constant.extend(u64le(1 << 31));
    constant.extend(u64le(1 << 31));
    constant.extend(few);
    let mut overflow = vec![0x02];
    overflow.extend(u64le(2));
    overflow.extend(u64le(u64::MAX));
    overflow.extend(u64le(3));
    let mut section_count = encode(&common::doc_example());
    section_count[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut section_len = encode(&common::doc_example());
    section_len[0x14..0x1c].copy_from_slice(&(1u64 << 62).to_le_bytes());
    vec![
        (
            "2^32 params",
            with_payload(0, claim(1 << 32)),
            "parameter count 4294967296",
        ),
        (
            "u64::MAX params",
            with_payload(0, claim(u64::MAX)),
            "parameter count",
        ),
        (
            "2^32 instructions",
            with_payload(1, claim(1 << 32)),
            "instruction count",
        ),
        (
            "2^32 outputs",
            with_payload(2, claim(1 << 32)),
            "output count",
        ),
        (
            "name of 2^40 bytes",
            with_payload(0, name_len),
            "name length",
        ),
        (
            "dims count 2^32",
            with_payload(0, huge_rank),
            "at most MAX_RANK",
        ),
        (
            "concat of 2^32 operands",
            with_payload(1, one_instruction(0x0C, &concat)),
            "concat operand count",
        ),
        (
            "constant f64[2^31, 2^31]",
            with_payload(1, one_instruction(0x06, &constant)),
            "needs more payload bytes",
        ),
        (
            "constant dims overflow",
            with_payload(1, one_instruction(0x06, &overflow)),
            "needs more payload bytes",
        ),
        (
            "u32::MAX sections",
            section_count,
            "section count 4294967295",
        ),
        (
            "section of 2^62 bytes",
            section_len,
            "claims 4611686018427387904 bytes",
        ),
    ]
}

#[test]
fn decoding_allocates_in_proportion_to_the_input() {
    for (what, bytes, why) in hostile_inputs() {
        let (result, peak) = measure(&bytes);
        assert!(
            matches!(&result, Err(DecodeError::InvalidProgram { reason, .. }) if reason.contains(why)),
            "{what}: {result:?}"
        );
        assert!(peak < LIMIT, "{what}: decoding allocated {peak} bytes");
    }

    // Valid programs: the golden reference, many small instructions (the worst ratio of
    // in-memory to encoded size), and one large constant.
    let mut b = Builder::new();
    let mut v = b.input("x", Type::new(DType::F32, &[])).unwrap();
    for _ in 0..2000 {
        v = b.unary(UnaryOp::Neg, v).unwrap();
    }
    b.output(v).unwrap();
    let chain = b.finish().unwrap();
    let mut b = Builder::new();
    let c = b
        .constant(Tensor::f32s(&[1 << 18], vec![1.5; 1 << 18]))
        .unwrap();
    b.output(c).unwrap();
    let big = b.finish().unwrap();
    for program in [common::reference_program(), chain, big] {
        let bytes = encode(&program);
        let (result, peak) = measure(&bytes);
        assert_eq!(result.as_ref(), Ok(&program));
        drop(result);
        assert!(
            peak <= 16 * bytes.len() + 4096,
            "decoding {} bytes allocated {peak} bytes",
            bytes.len()
        );
    }
}
