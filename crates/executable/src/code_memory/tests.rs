use std::sync::{Arc, Mutex};

use super::*;
use crate::test_support::{child_mode, enter_child, mapping_perms, run_child};

/// `mov eax, 42 ; ret` followed by `lea eax, [rdi + rsi] ; ret` (at offset 6).
const X64_CODE: [u8; 10] = [0xB8, 0x2A, 0x00, 0x00, 0x00, 0xC3, 0x8D, 0x04, 0x37, 0xC3];

#[cfg(target_arch = "x86_64")]
#[test]
fn runs_hand_written_x86_64_functions() {
    let code = CodeMemory::from_code(&X64_CODE).unwrap();
    assert_eq!(code.code(), &X64_CODE);
    let forty_two = code.entry(0).unwrap();
    let add = code.entry(6).unwrap();
    assert_eq!(add.offset(), 6);
    // SAFETY: offset 0 is `mov eax, 42 ; ret`, a complete `extern "C" fn() -> i32`.
    assert_eq!(unsafe { forty_two.call::<extern "C" fn() -> i32>(()) }, 42);
    // SAFETY: offset 6 is `lea eax, [rdi + rsi] ; ret`, an `extern "C" fn(i32, i32) -> i32`.
    let sum = |a, b| unsafe { add.call::<extern "C" fn(i32, i32) -> i32>((a, b)) };
    assert_eq!(sum(2, 40), 42);
    assert_eq!(sum(-5, 3), -2);
    assert_eq!(sum(i32::MAX, 1), i32::MIN);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn entries_are_callable_from_many_threads() {
    let code = CodeMemory::from_code(&X64_CODE).unwrap();
    let add = code.entry(6).unwrap();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|t| {
                s.spawn(move || {
                    (0..1000)
                        // SAFETY: offset 6 is an `extern "C" fn(i32, i32) -> i32` (see above).
                        .map(|i| unsafe { add.call::<extern "C" fn(i32, i32) -> i32>((i, t)) })
                        .sum::<i32>()
                })
            })
            .collect();
        for (t, w) in workers.into_iter().enumerate() {
            assert_eq!(w.join().unwrap(), 499_500 + 1000 * t as i32);
        }
    });
}

#[test]
fn writable_is_rw_and_published_is_rx_never_both() {
    let mut w = WritableCode::new(X64_CODE.len()).unwrap();
    let addr = w.mapping.region.base().as_ptr() as usize;
    assert_eq!(mapping_perms(addr).as_deref(), Some("rw-p"));
    w.as_mut_slice().copy_from_slice(&X64_CODE);
    let code = w.publish().unwrap();
    assert_eq!(code.as_ptr() as usize, addr);
    assert_eq!(mapping_perms(addr).as_deref(), Some("r-xp"));
    // The last byte of the mapping is covered by the same protection.
    assert_eq!(
        mapping_perms(addr + code.mapped_len() - 1).as_deref(),
        Some("r-xp")
    );
}

#[test]
fn padding_after_the_code_traps() {
    let code = CodeMemory::from_code(&X64_CODE).unwrap();
    assert_eq!(code.mapped_len() % sys::page_size(), 0);
    assert!(code.mapped_len() >= X64_CODE.len());
    // SAFETY: the mapping is `mapped_len` readable bytes that live as long as `code`.
    let whole = unsafe { std::slice::from_raw_parts(code.as_ptr(), code.mapped_len()) };
    assert!(whole[X64_CODE.len()..].iter().all(|&b| b == TRAP_FILL));
}

#[test]
fn entry_offsets_are_checked() {
    let code = CodeMemory::from_code(&X64_CODE).unwrap();
    for offset in [X64_CODE.len() as u32, 4096, u32::MAX] {
        assert_eq!(
            code.entry(offset).unwrap_err(),
            CodeMemoryError::OffsetOutOfRange {
                offset,
                code_len: X64_CODE.len()
            }
        );
    }
    let last = code.entry(X64_CODE.len() as u32 - 1).unwrap();
    assert_eq!(
        last.as_ptr() as usize,
        code.as_ptr() as usize + X64_CODE.len() - 1
    );
}

#[test]
fn entry_offset_alignment_rule() {
    assert_eq!(check_entry_offset(8, 16, 4), Ok(8));
    assert_eq!(
        check_entry_offset(6, 16, 4),
        Err(CodeMemoryError::MisalignedEntry {
            offset: 6,
            alignment: 4
        })
    );
    assert_eq!(
        check_entry_offset(16, 16, 4),
        Err(CodeMemoryError::OffsetOutOfRange {
            offset: 16,
            code_len: 16
        })
    );
    assert_eq!(check_entry_offset(7, 16, 1), Ok(7));
}

#[test]
fn empty_and_oversized_code_are_errors() {
    assert_eq!(
        CodeMemory::from_code(&[]).unwrap_err(),
        CodeMemoryError::Empty
    );
    assert_eq!(WritableCode::new(0).unwrap_err(), CodeMemoryError::Empty);
    // Overflows when rounded up to pages.
    assert_eq!(
        WritableCode::new(usize::MAX - 1).unwrap_err(),
        CodeMemoryError::OutOfMemory {
            bytes: usize::MAX - 1
        }
    );
    // Larger than any user address space: the kernel refuses it before touching memory.
    assert_eq!(
        WritableCode::new(1 << 62).unwrap_err(),
        CodeMemoryError::OutOfMemory { bytes: 1 << 62 }
    );
}

#[test]
fn errors_carry_the_numbers() {
    let e = CodeMemoryError::Protect {
        to: Protection::ReadExecute,
        bytes: 8192,
        errno: Errno(libc::EACCES),
    };
    let text = e.to_string();
    assert!(
        text.contains("8192") && text.contains("read+execute") && text.contains("os error 13"),
        "{text}"
    );
    let e = CodeMemoryError::OffsetOutOfRange {
        offset: 99,
        code_len: 10,
    };
    assert_eq!(
        e.to_string(),
        "entry offset 99 is outside the code (10 bytes)"
    );
}

/// A provider that records each protocol step, and can be told to fail one.
#[derive(Debug, Default)]
struct Recording {
    events: Arc<Mutex<Vec<&'static str>>>,
    fail_exec: bool,
    page_size: Option<usize>,
}

impl Recording {
    fn log(&self, e: &'static str) {
        self.events.lock().unwrap().push(e);
    }
}

// SAFETY: delegates mapping and protection to `MmapProvider`, which upholds the contract;
// the only deviation (`fail_exec`) returns an error and leaves the region non-executable.
unsafe impl CodeMemoryProvider for Recording {
    fn page_size(&self) -> usize {
        self.page_size.unwrap_or_else(|| MmapProvider.page_size())
    }
    fn map_writable(&self, len: usize) -> Result<MappedRegion, CodeMemoryError> {
        self.log("map");
        MmapProvider.map_writable(len)
    }
    unsafe fn make_executable(&self, region: MappedRegion) -> Result<(), CodeMemoryError> {
        self.log("exec");
        if self.fail_exec {
            return Err(CodeMemoryError::Protect {
                to: Protection::ReadExecute,
                bytes: region.len(),
                errno: Errno(libc::EACCES),
            });
        }
        // SAFETY: forwarded from our caller.
        unsafe { MmapProvider.make_executable(region) }
    }
    fn sync_icache(&self, code: &[u8]) {
        assert_eq!(
            code, &X64_CODE,
            "icache sync must see exactly the written code"
        );
        self.log("sync");
    }
    fn pipeline_barrier(&self) -> Result<(), CodeMemoryError> {
        self.log("barrier");
        Ok(())
    }
    unsafe fn unmap(&self, region: MappedRegion) {
        self.log("unmap");
        // SAFETY: forwarded from our caller.
        unsafe { MmapProvider.unmap(region) }
    }
}

#[test]
fn protocol_runs_in_order_and_unmaps_once() {
    let provider = Recording::default();
    let events = Arc::clone(&provider.events);
    let code = CodeMemory::from_code_with(provider, &X64_CODE).unwrap();
    assert_eq!(*events.lock().unwrap(), ["map", "sync", "exec", "barrier"]);
    drop(code);
    assert_eq!(
        *events.lock().unwrap(),
        ["map", "sync", "exec", "barrier", "unmap"]
    );
}

#[test]
fn failed_publish_unmaps_and_reports() {
    let provider = Recording {
        fail_exec: true,
        ..Recording::default()
    };
    let events = Arc::clone(&provider.events);
    let err = CodeMemory::from_code_with(provider, &X64_CODE).unwrap_err();
    assert!(
        matches!(
            err,
            CodeMemoryError::Protect {
                errno: Errno(libc::EACCES),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(*events.lock().unwrap(), ["map", "sync", "exec", "unmap"]);
}

#[test]
fn broken_provider_page_size_is_refused() {
    let provider = Recording {
        page_size: Some(3000),
        ..Recording::default()
    };
    let events = Arc::clone(&provider.events);
    assert!(matches!(
        CodeMemory::from_code_with(provider, &X64_CODE),
        Err(CodeMemoryError::ProviderContract { .. })
    ));
    assert!(events.lock().unwrap().is_empty(), "nothing may be mapped");
}

#[test]
fn dropping_unmaps() {
    // Checked in a single-threaded child process: in this one, another test could map new
    // memory at the freed address between the drop and the check.
    const PATH: &str = "code_memory::tests::dropping_unmaps";
    if let Some(mode) = child_mode() {
        enter_child(&mode);
        let code = CodeMemory::from_code(&X64_CODE).unwrap();
        let (addr, len) = (code.as_ptr() as usize, code.mapped_len());
        assert_eq!(mapping_perms(addr).as_deref(), Some("r-xp"));
        drop(code);
        for probe in [addr, addr + len - 1] {
            assert_eq!(
                mapping_perms(probe),
                None,
                "{probe:#x} still mapped after drop"
            );
        }
        return;
    }
    let out = run_child(PATH, "drop");
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
