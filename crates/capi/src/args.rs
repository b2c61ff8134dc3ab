//! Turning C arguments into Rust values: the null and length rules of the ABI in one place.

use std::ffi::{c_char, CStr};
use std::fmt::Display;

use accy_session::Status;

use crate::status::{guard, AccyStatus, Failure};

/// The slice a C caller passes as a pointer and a count of `T`s: NULL with count 0 is the empty
/// slice; NULL with a nonzero count, a misaligned pointer, or more bytes than an allocation can
/// have are argument failures naming `what`.
///
/// # Safety
/// If `ptr` is not NULL and `count` is not 0, `ptr` must point to `count` initialised `T`s
/// that nobody writes while `'a` lasts.
pub(crate) unsafe fn slice<'a, T>(
    ptr: *const T,
    count: usize,
    what: impl Display,
) -> Result<&'a [T], Failure> {
    if count == 0 {
        return Ok(&[]);
    }
    check(ptr, count, what)?;
    // SAFETY: `ptr` is non-null and aligned and the total size fits `isize` (checked above);
    // the caller promises `count` initialised `T`s there, unwritten for `'a`.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) })
}

/// Like [`slice`], for memory the callee writes.
///
/// # Safety
/// If `ptr` is not NULL and `count` is not 0, `ptr` must point to `count` writable bytes that
/// nothing else reads or writes while `'a` lasts.
pub(crate) unsafe fn slice_mut<'a>(
    ptr: *mut u8,
    count: usize,
    what: impl Display,
) -> Result<&'a mut [u8], Failure> {
    if count == 0 {
        return Ok(&mut []);
    }
    check(ptr.cast_const(), count, what)?;
    // SAFETY: `ptr` is non-null and the length fits `isize` (checked above); the caller
    // promises `count` writable bytes there, used by nothing else for `'a`.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, count) })
}

/// The checks [`slice`] and [`slice_mut`] make before building a slice of `count > 0` items.
fn check<T>(ptr: *const T, count: usize, what: impl Display) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(Failure::argument(format_args!(
            "{what} is NULL but its length is {count}"
        )));
    }
    if !ptr.is_aligned() {
        return Err(Failure::argument(format_args!(
            "{what} ({ptr:p}) is not aligned to {} bytes",
            align_of::<T>()
        )));
    }
    if count
        .checked_mul(size_of::<T>())
        .and_then(|bytes| {
            (ptr as usize)
                .checked_add(bytes)
                .filter(|_| bytes <= isize::MAX as usize)
        })
        .is_none()
    {
        return Err(Failure::argument(format_args!(
            "{what} ({ptr:p}) has a length of {count}, past the end of the address space"
        )));
    }
    Ok(())
}

/// Clears an out-parameter on entry (writes `empty` when `out` is not NULL), so that a caller
/// who ignores a failure reads a value that names nothing rather than stale memory.
///
/// # Safety
/// If `out` is not NULL it must be valid and aligned for writing a `T`.
pub(crate) unsafe fn clear<T>(out: *mut T, empty: T) {
    if !out.is_null() {
        // SAFETY: the caller promises a non-null `out` is valid and aligned for a write.
        unsafe { out.write(empty) }
    }
}

/// The body of every create function: clears `*out`, refuses a NULL `out`, makes the object
/// and hands it to the caller as an owning pointer, which [`free`] takes back.
///
/// # Safety
/// `out` is NULL or valid and aligned for writing a pointer.
pub(crate) unsafe fn create<T>(
    out: *mut *mut T,
    what: &str,
    make: impl FnOnce() -> Result<T, Failure>,
) -> Result<(), Failure> {
    // SAFETY: the caller promises `out` is NULL or writable.
    unsafe { clear(out, std::ptr::null_mut()) };
    required(out, what)?;
    let object = Box::new(make()?);
    // SAFETY: checked non-null above; the caller promises it is writable.
    unsafe { out.write(Box::into_raw(object)) };
    Ok(())
}

/// The body of every destroy function: frees what [`create`] handed out; NULL does nothing.
///
/// # Safety
/// `object` is NULL or came from [`create`] for a `T`, is freed once, and no call is using it.
pub(crate) unsafe fn free<T>(object: *mut T) {
    if !object.is_null() {
        // SAFETY: the caller promises it came from `Box::into_raw` in `create` and that
        // nothing else uses it now.
        drop(unsafe { Box::from_raw(object) });
    }
}

/// The whole of every destroy function: [`free`] behind the panic guard, then
/// `ACCY_STATUS_OK`.
///
/// # Safety
/// As [`free`].
pub(crate) unsafe fn destroy<T>(object: *mut T) -> AccyStatus {
    guard(Status::LaunchFailed, || {
        // SAFETY: the caller keeps `free`'s contract.
        unsafe { free(object) };
        Ok(())
    })
}

/// Writes each value to its out-parameter, skipping the NULL ones (those the caller did not
/// want).
///
/// # Safety
/// Each pointer is NULL or valid and aligned for writing a `T`.
pub(crate) unsafe fn write_optional<T: Copy>(outs: &[(*mut T, T)]) {
    for &(out, value) in outs {
        if !out.is_null() {
            // SAFETY: non-null, and the caller promises it is writable.
            unsafe { out.write(value) };
        }
    }
}

/// Refuses a NULL out-parameter.
pub(crate) fn required<T>(out: *mut T, what: impl Display) -> Result<(), Failure> {
    if out.is_null() {
        Err(Failure::argument(format_args!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// The UTF-8 text of an optional NUL-terminated C string: `None` for NULL.
///
/// # Safety
/// If `ptr` is not NULL it must point to a NUL-terminated string that nobody writes during
/// the call.
pub(crate) unsafe fn c_str<'a>(
    ptr: *const c_char,
    what: impl Display,
) -> Result<Option<&'a str>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string, unwritten meanwhile.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str().map(Some).map_err(|e| {
        Failure::argument(format_args!(
            "{what} is not UTF-8 ({e}): {}",
            text.to_string_lossy()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_is_empty_only_with_length_zero() {
        // SAFETY: NULL with count 0 is never dereferenced.
        let empty = unsafe { slice::<u8>(std::ptr::null(), 0, "bytes") }.unwrap();
        assert!(empty.is_empty());
        // SAFETY: NULL with a nonzero count is refused before any dereference.
        let e = unsafe { slice::<u8>(std::ptr::null(), 3, "bytes") }.unwrap_err();
        assert_eq!(
            format!("{e:?}"),
            format!(
                "{:?}",
                Failure::argument("bytes is NULL but its length is 3")
            )
        );
        // SAFETY: as above.
        assert!(unsafe { slice_mut(std::ptr::null_mut(), 1, "out") }.is_err());
        let words = [0u32; 2];
        let odd = words.as_ptr().cast::<u8>().wrapping_add(1).cast::<u32>();
        // SAFETY: a misaligned pointer is refused before any dereference.
        assert!(unsafe { slice(odd, 1, "words") }.is_err());
        // SAFETY: a length whose byte count overflows is refused before any dereference.
        assert!(unsafe { slice(words.as_ptr(), usize::MAX / 2, "words") }.is_err());
        // SAFETY: a range that wraps around the address space is refused before any use.
        assert!(unsafe { slice(usize::MAX as *const u8, 2, "end") }.is_err());
        // SAFETY: `words` holds two u32s.
        let both = unsafe { slice(words.as_ptr(), 2, "words") };
        assert_eq!(both.unwrap(), &[0, 0]);
    }

    #[test]
    fn c_strings_must_be_utf8() {
        // SAFETY: NULL is not dereferenced; the literals are NUL-terminated.
        unsafe {
            assert_eq!(c_str(std::ptr::null(), "t").unwrap(), None);
            assert_eq!(c_str(c"x64".as_ptr(), "t").unwrap(), Some("x64"));
            assert!(c_str(c"\xff".as_ptr(), "t").is_err());
        }
    }
}
