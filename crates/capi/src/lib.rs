//! accy's C ABI: the [`accy_session`] facade for hosts written in C (or any language with a C
//! foreign-function interface), built as `libaccy_capi.a` and `libaccy_capi.so` and declared
//! in `include/accy.h`.
//!
//! The header is generated from this crate by cbindgen and checked in; `tests/header.rs`
//! fails when they differ (regenerate with `cargo xtask capi-header`). Its opening comment
//! (written in `cbindgen.toml`) states the contract every function keeps: status codes, the
//! per-thread error message, NULL and length rules, out-parameters, option structs that grow,
//! ownership, and the thread contract. In short:
//!
//! - Every function that can fail returns an [`AccyStatus`]: 0 or one of the session's stable
//!   codes ([`accy_session::Status`]). A caller must treat a code it does not know as a
//!   failure. The message is separate: [`accy_last_error_message`], per thread.
//! - No panic crosses the boundary: each entry point runs in [`status::guard`], which catches
//!   one and returns a status (`ACCY_STATUS_COMPILE_FAILED` from the calls that compile,
//!   `ACCY_STATUS_LAUNCH_FAILED` from the others).
//! - Sessions, weight sets and scratch are opaque pointers the caller creates and destroys;
//!   programs are generation-checked values ([`AccyProgram`]) that go dead on release.
//! - Models ([`AccyModel`]) share one set of weights among plans for several shapes
//!   ([`AccyPrepared`]), each running up to its capacity of inferences at once.

#![deny(missing_docs)]

// In this order in the header: status codes and messages, sessions, programs, invoking,
// models.
mod args;
mod invoke;
mod model;
mod program;
mod session;
mod status;

pub use invoke::{
    accy_program_invoke, accy_scratch_create, accy_scratch_destroy, AccyBuffer, AccyConstBuffer,
    AccyScratch,
};
pub use model::{
    accy_model_create, accy_model_destroy, accy_model_prepare, accy_model_weight_bytes,
    accy_prepared_destroy, accy_prepared_info, accy_prepared_input, accy_prepared_output,
    accy_prepared_run, accy_prepared_try_run, AccyModel, AccyPrepared,
};
pub use program::{
    accy_program_compile, accy_program_input, accy_program_io_count, accy_program_load_artifact,
    accy_program_output, accy_program_release, accy_weights_create, accy_weights_destroy,
    AccyDescriptor, AccyDtype, AccyProgram, AccyWeight, AccyWeights, ACCY_DTYPE_BOOL,
    ACCY_DTYPE_F32, ACCY_DTYPE_F64, ACCY_DTYPE_I32, ACCY_DTYPE_I64, ACCY_DTYPE_U8, ACCY_MAX_RANK,
};
pub use session::{
    accy_session_create, accy_session_destroy, accy_session_info, AccySession, AccySessionOptions,
};
pub use status::{
    accy_last_error_message, accy_status_name, AccyStatus, ACCY_STATUS_BUSY,
    ACCY_STATUS_COMPILE_FAILED, ACCY_STATUS_INVALID_BUFFER, ACCY_STATUS_INVALID_HANDLE,
    ACCY_STATUS_INVALID_MODEL, ACCY_STATUS_INVALID_PROGRAM, ACCY_STATUS_LAUNCH_FAILED,
    ACCY_STATUS_OK, ACCY_STATUS_OUT_OF_MEMORY, ACCY_STATUS_TOO_MANY_PROGRAMS,
    ACCY_STATUS_UNSUPPORTED_VERSION,
};

/// The version of this ABI. It changes only when an existing function, struct field or
/// constant changes meaning or layout; additions (a function, a status code, a field at the
/// end of a struct that carries its `size`) keep it.
pub const ACCY_ABI_VERSION: u32 = 1;

/// The ABI version of the library actually linked. A caller compares it with the
/// `ACCY_ABI_VERSION` of the header it was compiled against and refuses to go on when they
/// differ. Never fails.
#[no_mangle]
pub extern "C" fn accy_abi_version() -> u32 {
    ACCY_ABI_VERSION
}

/// Test-only: panics inside the library, behind the same guard as every entry point, to prove
/// a panic comes back as `ACCY_STATUS_LAUNCH_FAILED` with an `internal error` message instead
/// of aborting the process. `message` (NULL or NUL-terminated) becomes the panic's text.
/// Exported only with the `test-hooks` feature, and not declared in `accy.h`.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[cfg(feature = "test-hooks")]
#[no_mangle]
pub unsafe extern "C" fn accy_test_panic(message: *const std::ffi::c_char) -> AccyStatus {
    status::guard(accy_session::Status::LaunchFailed, || {
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let text = unsafe { args::c_str(message, "message") }?.unwrap_or("accy_test_panic");
        panic!("{text}");
    })
}
