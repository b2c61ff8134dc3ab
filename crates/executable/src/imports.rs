//! The runtime side of the import table (`accy_artifact::imports`): one `extern "C"` function
//! per [`Import`], and [`IMPORT_TABLE`], their addresses in index order.
//!
//! Each function calls the `accy_math` function the reference interpreter (`accy_ir::interp`)
//! evaluates for the matching op (for `fma`, the one the kernel interpreter evaluates an `Fma`
//! node with) — one definition shared by both — so generated code that
//! calls an import gets the interpreter's result bit for bit (the tests check this on a sweep
//! of special and ordinary values).
//!
//! The table is a `static` built at compile time: no lazy initialisation and no mutable
//! state, so every thread and every dispatch sees the same immutable addresses.

use accy_artifact::Import;
use accy_math::Float;

/// Defines one `extern "C"` function per import, each calling the `accy_math` function the
/// interpreter uses for the matching op.
macro_rules! imports {
    ($($name:ident($($arg:ident),+): $t:ty => $f:ident;)*) => {
        $(extern "C" fn $name($($arg: $t),+) -> $t {
            <$t as Float>::$f($($arg),+)
        })*
    };
}

imports! {
    exp_f32(x): f32 => exp; exp_f64(x): f64 => exp;
    log_f32(x): f32 => log; log_f64(x): f64 => log;
    tanh_f32(x): f32 => tanh; tanh_f64(x): f64 => tanh;
    sigmoid_f32(x): f32 => sigmoid; sigmoid_f64(x): f64 => sigmoid;
    erf_f32(x): f32 => erf; erf_f64(x): f64 => erf;
    sin_f32(x): f32 => sin; sin_f64(x): f64 => sin;
    cos_f32(x): f32 => cos; cos_f64(x): f64 => cos;
    floor_f32(x): f32 => floor; floor_f64(x): f64 => floor;
    ceil_f32(x): f32 => ceil; ceil_f64(x): f64 => ceil;
    round_f32(x): f32 => round; round_f64(x): f64 => round;
    pow_f32(a, b): f32 => pow; pow_f64(a, b): f64 => pow;
    rem_f32(a, b): f32 => rem; rem_f64(a, b): f64 => rem;
    fma_f32(a, b, c): f32 => fma; fma_f64(a, b, c): f64 => fma;
}

/// The implementation of one import as a typed function pointer, for callers in Rust (tests,
/// a debugger) that want to call an import without going through raw table addresses.
#[derive(Clone, Copy, Debug)]
pub enum ImportFn {
    /// `f32 f(f32)`.
    UnaryF32(extern "C" fn(f32) -> f32),
    /// `f64 f(f64)`.
    UnaryF64(extern "C" fn(f64) -> f64),
    /// `f32 f(f32, f32)`.
    BinaryF32(extern "C" fn(f32, f32) -> f32),
    /// `f64 f(f64, f64)`.
    BinaryF64(extern "C" fn(f64, f64) -> f64),
    /// `f32 f(f32, f32, f32)`.
    TernaryF32(extern "C" fn(f32, f32, f32) -> f32),
    /// `f64 f(f64, f64, f64)`.
    TernaryF64(extern "C" fn(f64, f64, f64) -> f64),
}

impl ImportFn {
    /// The function implementing `import`, with the signature its documentation gives. The
    /// match is exhaustive, so an import added to `accy-artifact` without an implementation
    /// here does not compile.
    pub const fn of(import: Import) -> ImportFn {
        use ImportFn::{BinaryF32, BinaryF64, TernaryF32, TernaryF64, UnaryF32, UnaryF64};
        match import {
            Import::ExpF32 => UnaryF32(exp_f32),
            Import::ExpF64 => UnaryF64(exp_f64),
            Import::LogF32 => UnaryF32(log_f32),
            Import::LogF64 => UnaryF64(log_f64),
            Import::TanhF32 => UnaryF32(tanh_f32),
            Import::TanhF64 => UnaryF64(tanh_f64),
            Import::SigmoidF32 => UnaryF32(sigmoid_f32),
            Import::SigmoidF64 => UnaryF64(sigmoid_f64),
            Import::ErfF32 => UnaryF32(erf_f32),
            Import::ErfF64 => UnaryF64(erf_f64),
            Import::SinF32 => UnaryF32(sin_f32),
            Import::SinF64 => UnaryF64(sin_f64),
            Import::CosF32 => UnaryF32(cos_f32),
            Import::CosF64 => UnaryF64(cos_f64),
            Import::FloorF32 => UnaryF32(floor_f32),
            Import::FloorF64 => UnaryF64(floor_f64),
            Import::CeilF32 => UnaryF32(ceil_f32),
            Import::CeilF64 => UnaryF64(ceil_f64),
            Import::RoundF32 => UnaryF32(round_f32),
            Import::RoundF64 => UnaryF64(round_f64),
            Import::PowF32 => BinaryF32(pow_f32),
            Import::PowF64 => BinaryF64(pow_f64),
            Import::RemF32 => BinaryF32(rem_f32),
            Import::RemF64 => BinaryF64(rem_f64),
            Import::FmaF32 => TernaryF32(fma_f32),
            Import::FmaF64 => TernaryF64(fma_f64),
        }
    }

    /// The function's address, as stored in the table.
    pub const fn address(self) -> *const () {
        match self {
            ImportFn::UnaryF32(f) => f as *const (),
            ImportFn::UnaryF64(f) => f as *const (),
            ImportFn::BinaryF32(f) => f as *const (),
            ImportFn::BinaryF64(f) => f as *const (),
            ImportFn::TernaryF32(f) => f as *const (),
            ImportFn::TernaryF64(f) => f as *const (),
        }
    }
}

/// The import table generated code reads through `DispatchState::imports`: entry `i` is the
/// address of the function implementing the [`Import`] whose `index()` is `i`.
///
/// Immutable and `Sync`; [`IMPORT_TABLE`] is the one instance.
#[derive(Debug)]
#[repr(transparent)]
pub struct ImportTable([*const (); Import::COUNT]);

// SAFETY: the table is never mutated (it is only ever a `static`), and its entries are
// addresses of plain functions, which any thread may call.
unsafe impl Sync for ImportTable {}

impl ImportTable {
    /// The table in index order, built at compile time.
    const fn build() -> ImportTable {
        let mut entries = [std::ptr::null::<()>(); Import::COUNT];
        let mut i = 0;
        while i < Import::COUNT {
            let import = Import::ALL[i];
            entries[import.index()] = ImportFn::of(import).address();
            i += 1;
        }
        ImportTable(entries)
    }

    /// The table's first entry: the value for `DispatchState::imports`. Valid for the whole
    /// program run (the table is a `static`).
    pub fn as_ptr(&'static self) -> *const *const () {
        self.0.as_ptr()
    }

    /// The address stored for `import`.
    pub fn get(&self, import: Import) -> *const () {
        self.0[import.index()]
    }

    /// Every entry, in index order.
    pub fn entries(&self) -> &[*const (); Import::COUNT] {
        &self.0
    }
}

/// The runtime's one import table, shared by every dispatch of every artifact.
pub static IMPORT_TABLE: ImportTable = ImportTable::build();

#[cfg(test)]
mod tests;
