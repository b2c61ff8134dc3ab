use std::os::unix::process::ExitStatusExt;

use super::*;
use crate::test_support::{child_mode, enter_child, mapping_perms, run_child};

#[test]
fn in_bounds_access_works_and_starts_zeroed() {
    let mut b = GuardedBuffer::new(1000).unwrap();
    assert_eq!(b.len(), 1000);
    assert!(b.as_slice().iter().all(|&x| x == 0));
    for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
        *x = i as u8;
    }
    assert_eq!(b.as_slice()[999], (999 % 256) as u8);
    assert_eq!(b.tail_gap(), 0);
    assert_eq!(b.alignment(), 1);
    // 1000 = 8 * 125, and the end is page aligned, so the start is 8-aligned.
    assert_eq!(b.as_ptr() as usize % 8, 0);
    assert_eq!(b.head_gap() + 1000, sys::page_size());
}

#[test]
fn neighbouring_pages_are_inaccessible() {
    let b = GuardedBuffer::new(100).unwrap();
    let start = b.as_ptr() as usize;
    let end = start + b.len();
    assert_eq!(mapping_perms(start).as_deref(), Some("rw-p"));
    assert_eq!(mapping_perms(end - 1).as_deref(), Some("rw-p"));
    assert_eq!(mapping_perms(end).as_deref(), Some("---p"));
    let before_first_page = start - b.head_gap() - 1;
    assert_eq!(mapping_perms(before_first_page).as_deref(), Some("---p"));
}

#[test]
fn alignment_and_offset_are_honoured() {
    for (len, align, offset) in [
        (64, 64, 0),
        (100, 64, 0),
        (100, 64, 4),
        (7, 4, 1),
        (4096, 32, 31),
        (0, 16, 0),
    ] {
        let b = GuardedBuffer::with_alignment(len, align, offset).unwrap();
        assert_eq!(
            b.as_ptr() as usize % align,
            offset,
            "{len} {align} {offset}"
        );
        assert_eq!(b.align_offset(), offset);
        assert_eq!(
            b.tail_gap(),
            (align - (len + offset) % align) % align,
            "{len} {align} {offset}"
        );
        assert!(b.tail_gap() < align);
        let end = b.as_ptr() as usize + len + b.tail_gap();
        assert_eq!(mapping_perms(end).as_deref(), Some("---p"));
    }
}

#[test]
fn empty_buffers_and_copies() {
    let e = GuardedBuffer::new(0).unwrap();
    assert!(e.is_empty() && e.as_slice().is_empty());
    assert_eq!(mapping_perms(e.as_ptr() as usize).as_deref(), Some("---p"));
    let c = GuardedBuffer::from_bytes(b"hello").unwrap();
    assert_eq!(c.as_slice(), b"hello");
}

#[test]
fn bad_requests_are_errors() {
    let page = sys::page_size();
    for (align, offset) in [(3, 0), (0, 0), (64, 64), (page * 2, 0)] {
        assert_eq!(
            GuardedBuffer::with_alignment(8, align, offset).unwrap_err(),
            GuardError::BadPlacement {
                align,
                offset,
                page_size: page
            }
        );
    }
    assert_eq!(
        GuardedBuffer::new(usize::MAX - 5).unwrap_err(),
        GuardError::OutOfMemory {
            bytes: usize::MAX - 5
        }
    );
    assert_eq!(
        GuardedBuffer::new(1 << 62).unwrap_err(),
        GuardError::OutOfMemory { bytes: 1 << 62 }
    );
}

#[test]
fn buffers_move_across_threads() {
    let mut b = GuardedBuffer::new(16).unwrap();
    b.as_mut_slice()[15] = 7;
    let b = std::thread::spawn(move || {
        assert_eq!(b.as_slice()[15], 7);
        b
    })
    .join()
    .unwrap();
    assert_eq!(b.len(), 16);
}

/// Touches memory just outside a guarded buffer in a child process, which must die of
/// `SIGSEGV`; `last_byte` is the control and must exit normally.
#[test]
fn touching_outside_the_buffer_faults() {
    const PATH: &str = "guard::tests::touching_outside_the_buffer_faults";
    if let Some(mode) = child_mode() {
        enter_child(&mode);
        let mut b = GuardedBuffer::with_alignment(256, 64, 0).unwrap();
        assert_eq!(b.tail_gap(), 0);
        let len = b.len();
        let p = b.as_mut_ptr();
        let before_first_page = b.head_gap() + 1;
        // SAFETY: none of these are sound accesses except `last_byte`: the point of this
        // child process is to be killed by the fault they cause. `wrapping_*` keeps the
        // pointer arithmetic itself defined.
        unsafe {
            match mode.as_str() {
                "last_byte" => std::ptr::write_volatile(p.add(len - 1), 1),
                "read_after" => {
                    let _: u8 = std::ptr::read_volatile(p.wrapping_add(len));
                }
                "write_after" => std::ptr::write_volatile(p.wrapping_add(len), 1),
                "read_before" => {
                    let _: u8 = std::ptr::read_volatile(p.wrapping_sub(before_first_page));
                }
                other => panic!("unknown mode {other}"),
            }
        }
        return;
    }
    let control = run_child(PATH, "last_byte");
    assert!(
        control.status.success(),
        "control child failed: {:?}",
        control.status
    );
    for mode in ["read_after", "write_after", "read_before"] {
        let out = run_child(PATH, mode);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSEGV),
            "{mode}: {:?}",
            out.status
        );
    }
}
