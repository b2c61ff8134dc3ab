//! The C ABI called from Rust, for what the C test does not reach easily: dtype codes against
//! the wire format, many threads invoking one program through the ABI at once with their own
//! scratch and messages, and a descriptor struct from a newer (larger) header.

use std::ffi::CStr;
use std::ptr;

use accy_capi::*;
use accy_ir::{Builder, DType, Type};

fn message() -> String {
    // SAFETY: the message is NUL-terminated and valid until this thread's next accy call; it
    // is copied at once.
    unsafe { CStr::from_ptr(accy_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// `input x : dtype[3]`, returned as is.
fn identity(dtype: DType) -> Vec<u8> {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(dtype, &[3])).unwrap();
    b.output(x).unwrap();
    accy_wire::encode(&b.finish().unwrap())
}

fn session(threads: usize) -> *mut AccySession {
    let options = AccySessionOptions {
        size: size_of::<AccySessionOptions>(),
        threads,
        exact: 0,
        target: ptr::null(),
        flush_subnormals: 0,
    };
    let mut session = ptr::null_mut();
    // SAFETY: `options` is a whole struct and `session` a writable pointer.
    let status = unsafe { accy_session_create(&options, &mut session) };
    assert_eq!(status, ACCY_STATUS_OK, "{}", message());
    session
}

fn compile(session: *const AccySession, bytes: &[u8]) -> AccyProgram {
    let mut program = AccyProgram { id: 0 };
    // SAFETY: `session` is live, `bytes` readable for its length, `program` writable.
    let status = unsafe {
        accy_program_compile(
            session,
            bytes.as_ptr(),
            bytes.len(),
            ptr::null(),
            &mut program,
        )
    };
    assert_eq!(status, ACCY_STATUS_OK, "{}", message());
    program
}

/// Invokes `program` of session `s` on one input of three 4-byte values (i32 or f32) with its
/// own scratch; returns the status and the three output values.
fn invoke3<T: Copy + Default>(
    s: *const AccySession,
    program: AccyProgram,
    x: [T; 3],
) -> (u32, [T; 3]) {
    assert_eq!(size_of::<T>(), 4);
    let mut scratch = ptr::null_mut();
    // SAFETY: `scratch` is writable.
    assert_eq!(unsafe { accy_scratch_create(&mut scratch) }, 0);
    let mut y = [T::default(); 3];
    let input = AccyConstBuffer {
        data: x.as_ptr().cast(),
        byte_size: 12,
    };
    let output = AccyBuffer {
        data: y.as_mut_ptr().cast(),
        byte_size: 12,
    };
    // SAFETY: the session and scratch are live and each buffer holds its byte_size bytes.
    let status = unsafe { accy_program_invoke(s, program, scratch, &input, 1, &output, 1) };
    // SAFETY: created above, used by no call now.
    unsafe { accy_scratch_destroy(scratch) };
    (status, y)
}

/// A descriptor of `size` bytes with every other field `fill`.
fn descriptor(size: usize, fill: u32) -> AccyDescriptor {
    AccyDescriptor {
        size,
        dtype: fill,
        rank: fill,
        dims: [fill.into(); ACCY_MAX_RANK],
        byte_size: fill as usize,
        alignment: fill as usize,
    }
}

#[test]
fn dtype_codes_are_the_wire_formats() {
    let s = session(1);
    let cases = [
        (DType::F32, ACCY_DTYPE_F32),
        (DType::F64, ACCY_DTYPE_F64),
        (DType::I32, ACCY_DTYPE_I32),
        (DType::I64, ACCY_DTYPE_I64),
        (DType::U8, ACCY_DTYPE_U8),
        (DType::Bool, ACCY_DTYPE_BOOL),
    ];
    let reference = identity(DType::F32);
    for (dtype, code) in cases {
        let bytes = identity(dtype);
        // The programs differ only in their dtype bytes, which hold the wire code.
        let differing: Vec<u8> = bytes
            .iter()
            .zip(&reference)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| *a)
            .collect();
        assert!(differing.iter().all(|&b| u32::from(b) == code), "{dtype}");
        assert_eq!(differing.is_empty(), dtype == DType::F32);
        let program = compile(s, &bytes);
        let mut d = descriptor(size_of::<AccyDescriptor>(), 0);
        // SAFETY: `s` is live and `d` a whole descriptor.
        assert_eq!(unsafe { accy_program_input(s, program, 0, &mut d) }, 0);
        let size = dtype.size_bytes() as usize;
        assert_eq!(
            (d.dtype, d.rank, d.dims[0], d.byte_size),
            (code, 1, 3, 3 * size)
        );
        assert_eq!(d.alignment, size);
    }
    assert_eq!(ACCY_MAX_RANK, accy_ir::MAX_RANK);
    // SAFETY: `s` came from accy_session_create and is not used again.
    assert_eq!(unsafe { accy_session_destroy(s) }, ACCY_STATUS_OK);
}

#[test]
fn a_newer_headers_larger_descriptor_keeps_its_unknown_tail() {
    #[repr(C)]
    struct Newer {
        known: AccyDescriptor,
        later: u64,
    }
    let s = session(1);
    let program = compile(s, &identity(DType::I64));
    let mut newer = Newer {
        known: descriptor(size_of::<Newer>(), 9),
        later: 0x5555,
    };
    let whole = ptr::addr_of_mut!(newer).cast::<AccyDescriptor>();
    // SAFETY: `whole` points to all `size` writable bytes of `newer`, a descriptor first.
    let status = unsafe { accy_program_output(s, program, 0, whole) };
    assert_eq!(status, 0);
    assert_eq!(newer.known.size, size_of::<Newer>());
    assert_eq!(newer.known.dims, [3, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(newer.known.byte_size, 24);
    assert_eq!(newer.later, 0x5555);
    // SAFETY: as above.
    unsafe { accy_session_destroy(s) };
}

#[test]
fn threads_invoke_one_program_each_with_its_scratch_and_message() {
    let s = session(2) as usize;
    let program = compile(s as *const AccySession, &identity(DType::I32));
    let workers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let s = s as *const AccySession;
                let mut scratch = ptr::null_mut();
                // SAFETY: `scratch` is writable.
                assert_eq!(unsafe { accy_scratch_create(&mut scratch) }, 0);
                for round in 0..200i32 {
                    let x = [t, round, -round];
                    let mut y = [0i32; 3];
                    let input = AccyConstBuffer {
                        data: x.as_ptr().cast(),
                        byte_size: 12,
                    };
                    let output = AccyBuffer {
                        data: y.as_mut_ptr().cast(),
                        byte_size: if round % 2 == 0 { 12 } else { 8 },
                    };
                    // SAFETY: the session and scratch are live, the scratch is this thread's
                    // own, and each buffer holds its byte_size bytes (the short output is
                    // refused before anything is written).
                    let status =
                        unsafe { accy_program_invoke(s, program, scratch, &input, 1, &output, 1) };
                    if round % 2 == 0 {
                        assert_eq!((status, y), (ACCY_STATUS_OK, x));
                        assert_eq!(message(), "");
                    } else {
                        // Another thread's success or failure never touches this message.
                        assert_eq!(status, ACCY_STATUS_INVALID_BUFFER);
                        assert!(message().contains("output 0"), "{}", message());
                    }
                }
                // SAFETY: created above and used by no call now.
                unsafe { accy_scratch_destroy(scratch) };
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // SAFETY: every thread using the session has finished.
    unsafe { accy_session_destroy(s as *mut AccySession) };
}

#[test]
fn an_artifact_loads_without_compiling_and_bad_bytes_get_their_codes() {
    use accy_session::{Session, SessionOptions};
    let wire = identity(DType::I32);
    let artifact = Session::with_options(SessionOptions::default().with_threads(1))
        .unwrap()
        .compile_artifact(&wire)
        .unwrap();
    let s = session(1);
    let load = |bytes: &[u8]| {
        let mut program = AccyProgram { id: 7 };
        // SAFETY: the session is live, `bytes` readable for its length, `program` writable;
        // the bytes are an artifact this accy just compiled, or a damaged copy that the
        // loader refuses before mapping anything.
        let status = unsafe {
            accy_program_load_artifact(s, bytes.as_ptr(), bytes.len(), ptr::null(), &mut program)
        };
        (status, program)
    };
    let (status, program) = load(&artifact);
    assert_eq!(status, ACCY_STATUS_OK, "{}", message());
    let x = [5i32, -6, 7];
    assert_eq!(invoke3(s, program, x), (ACCY_STATUS_OK, x), "{}", message());

    let mut flipped = artifact.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let (status, program) = load(&flipped);
    assert_eq!((status, program.id), (ACCY_STATUS_INVALID_PROGRAM, 0));
    let (status, _) = load(&artifact[..artifact.len() / 2]);
    assert_eq!(status, ACCY_STATUS_INVALID_PROGRAM);
    let (status, _) = load(&wire);
    assert_eq!(
        status, ACCY_STATUS_INVALID_PROGRAM,
        "wire bytes are no artifact"
    );
    // SAFETY: created above and used by no call now.
    unsafe { accy_session_destroy(s) };
}

/// `x * x` over f32[3].
fn square() -> Vec<u8> {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[3])).unwrap();
    let y = b.binary(accy_ir::BinaryOp::Mul, x, x).unwrap();
    b.output(y).unwrap();
    accy_wire::encode(&b.finish().unwrap())
}

/// `flush_subnormals` (the struct's second version) flushes; a first-version caller's smaller
/// struct is read without it (subnormals kept); a struct smaller than the first version is
/// refused.
#[test]
fn session_options_flush_subnormals_and_first_version_callers() {
    let x = [1e-20f32, -3e-20, 2.0];
    let square_of = |size: usize, flush: u32| -> Option<[f32; 3]> {
        let options = AccySessionOptions {
            size,
            threads: 1,
            exact: 0,
            target: ptr::null(),
            flush_subnormals: flush,
        };
        let mut s = ptr::null_mut();
        // SAFETY: `options` is a whole struct (at least `size` readable bytes) and `s` is
        // writable.
        if unsafe { accy_session_create(&options, &mut s) } != ACCY_STATUS_OK {
            return None;
        }
        let program = compile(s, &square());
        let (status, y) = invoke3(s, program, x);
        assert_eq!(status, ACCY_STATUS_OK, "{}", message());
        // SAFETY: created above, used by no call now.
        unsafe { accy_session_destroy(s) };
        Some(y)
    };
    let whole = size_of::<AccySessionOptions>();
    let first = std::mem::offset_of!(AccySessionOptions, target) + size_of::<usize>();
    let kept = square_of(whole, 0).unwrap();
    assert!(kept[0].is_subnormal() && kept[1].is_subnormal() && kept[2] == 4.0);
    assert_eq!(square_of(whole, 1).unwrap(), [0.0, 0.0, 4.0]);
    // A first-version struct: the flag lies past its size, so it is not read.
    assert_eq!(square_of(first, 1).unwrap(), kept);
    assert!(square_of(first - 8, 0).is_none());
    assert!(message().contains("first version"), "{}", message());
}
