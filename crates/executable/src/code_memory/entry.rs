//! Callable entry points that borrow their [`CodeMemory`](super::CodeMemory).
//!
//! A [`CodeEntry`] is a checked offset into published code plus a lifetime tying it to the
//! memory, so the code cannot be unmapped while an entry exists. The function pointer needed
//! to call it is made inside [`CodeEntry::call`] and never escapes, which is what keeps the
//! lifetime meaningful (contrast a raw pointer `transmute`d by the caller).

/// A validated entry point into published code; borrowing it keeps the code mapped.
///
/// Obtained from [`CodeMemory::entry`](super::CodeMemory::entry), which checked that the
/// offset lies inside the code and is instruction aligned. `Send + Sync` and `Copy`, like the
/// shared reference it is built from: any number of threads may call the same entry at once,
/// provided the code itself is reentrant.
#[derive(Clone, Copy, Debug)]
pub struct CodeEntry<'a> {
    /// The code from the entry point to the end of the code (non-empty).
    tail: &'a [u8],
    offset: u32,
}

impl<'a> CodeEntry<'a> {
    /// `tail` is the published code from `offset` on; the caller has validated both.
    pub(super) fn new(tail: &'a [u8], offset: u32) -> CodeEntry<'a> {
        CodeEntry { tail, offset }
    }

    /// The entry's byte offset from the start of the code.
    pub fn offset(&self) -> u32 {
        self.offset
    }

    /// The entry's address, for diagnostics and profiler maps; calling through it is only
    /// sound while the [`CodeMemory`](super::CodeMemory) lives — use [`call`](Self::call).
    pub fn as_ptr(&self) -> *const u8 {
        self.tail.as_ptr()
    }

    /// Calls the code at this entry as a function of type `F` with `args` (a tuple, `()` for
    /// none) and returns its result.
    ///
    /// ```
    /// # #[cfg(target_arch = "x86_64")] {
    /// use accy_executable::CodeMemory;
    /// // lea eax, [rdi + rsi] ; ret
    /// let code = CodeMemory::from_code(&[0x8D, 0x04, 0x37, 0xC3]).unwrap();
    /// let add = code.entry(0).unwrap();
    /// // SAFETY: the bytes above are a complete System V function (i32, i32) -> i32.
    /// let sum = unsafe { add.call::<extern "C" fn(i32, i32) -> i32>((2, 40)) };
    /// assert_eq!(sum, 42);
    /// # }
    /// ```
    ///
    /// # Safety
    /// The bytes at this entry must be machine code for the host that implements a function
    /// with exactly the signature `F` under the C calling convention: it must take and return
    /// those types, preserve callee-saved registers and the stack, return normally, and touch
    /// only memory that the arguments make valid for it to touch, for as long as it runs. The
    /// arguments must satisfy whatever the code assumes of them (for example that a pointer
    /// and length describe a live buffer).
    pub unsafe fn call<F: EntryFn>(&self, args: F::Args) -> F::Output {
        // SAFETY: `as_ptr` is inside published, executable code that `self` keeps mapped for
        // the whole call; the caller guarantees it implements `F`.
        unsafe { F::call_at(self.as_ptr(), args) }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Function-pointer types that [`CodeEntry::call`] can call: `extern "C" fn(A, B, …) -> R`
/// with up to six arguments. Sealed: the set is fixed by this crate.
pub trait EntryFn: Copy + sealed::Sealed {
    /// The arguments, as a tuple (`()`, `(A,)`, `(A, B)`, …).
    type Args;
    /// The return type.
    type Output;

    /// Calls the code at `ptr` as `Self`.
    ///
    /// # Safety
    /// `ptr` must point at live, executable code implementing `Self` (see
    /// [`CodeEntry::call`]).
    #[doc(hidden)]
    unsafe fn call_at(ptr: *const u8, args: Self::Args) -> Self::Output;
}

macro_rules! impl_entry_fn {
    ($($arg:ident),*) => {
        impl<R, $($arg),*> sealed::Sealed for extern "C" fn($($arg),*) -> R {}

        impl<R, $($arg),*> EntryFn for extern "C" fn($($arg),*) -> R {
            type Args = ($($arg,)*);
            type Output = R;

            #[allow(non_snake_case, reason = "argument values are named after their types")]
            unsafe fn call_at(ptr: *const u8, args: Self::Args) -> R {
                // SAFETY: a function pointer and a data pointer have the same size and
                // representation on every supported target, and the caller guarantees `ptr`
                // is executable code implementing `Self`.
                let function = unsafe { std::mem::transmute::<*const u8, Self>(ptr) };
                let ($($arg,)*) = args;
                function($($arg),*)
            }
        }
    };
}

impl_entry_fn!();
impl_entry_fn!(A);
impl_entry_fn!(A, B);
impl_entry_fn!(A, B, C);
impl_entry_fn!(A, B, C, D);
impl_entry_fn!(A, B, C, D, E);
impl_entry_fn!(A, B, C, D, E, G);
