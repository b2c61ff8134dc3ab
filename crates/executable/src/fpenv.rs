//! The floating-point environment kernels run with: round to nearest even, no flush of
//! subnormals to zero, no default-NaN mode, no traps — what the op semantics assume; or, for
//! an artifact compiled to flush subnormals, the same with flush-to-zero on.
//!
//! A host thread may have changed its environment (a library that sets flush-to-zero for
//! speed, say); kernels must not see that, or their results would differ from the documented
//! semantics and from the interpreter. So every execution of an artifact's commands enters
//! [`FpEnvGuard`] (in `run::execute`), which sets the documented control bits and puts the
//! caller's back when it ends, and so does every workgroup a worker thread (of the pool or of
//! an embedder's executor) runs. The guard reads the control register once and writes it only
//! when it differs, so on a thread already in the default state it costs one register read
//! (a few nanoseconds).
//!
//! x86-64: MXCSR control bits (rounding, FTZ, DAZ, exception masks); the six sticky status
//! flags are left alone. AArch64: FPCR (rounding, FZ, DN, AHP, trap enables). Other
//! architectures run no generated code, so the guard does nothing there.

/// MXCSR with every exception masked, round to nearest, FTZ and DAZ off.
#[cfg(target_arch = "x86_64")]
const DEFAULT: u32 = 0x1F80;
/// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6) bits.
#[cfg(target_arch = "x86_64")]
const FLUSH: u32 = 0x8040;
/// The MXCSR status flags (sticky exception bits), which the guard neither sets nor restores.
#[cfg(target_arch = "x86_64")]
const STATUS: u32 = 0x3F;

#[cfg(target_arch = "x86_64")]
fn read() -> u32 {
    let mut value: u32 = 0;
    // SAFETY: `stmxcsr` stores the 32-bit MXCSR to the given address, which is a live local.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut value, options(nostack, preserves_flags));
    }
    value
}

#[cfg(target_arch = "x86_64")]
fn write(value: u32) {
    // SAFETY: `ldmxcsr` loads MXCSR from the given address; `value` has no reserved bit set
    // (it is DEFAULT, or a value read from MXCSR itself), so it cannot fault.
    unsafe {
        std::arch::asm!("ldmxcsr [{}]", in(reg) &value, options(nostack, preserves_flags));
    }
}

/// FPCR all zero: round to nearest, FZ/DN/AHP off, no trap enabled.
#[cfg(target_arch = "aarch64")]
const DEFAULT: u32 = 0;
#[cfg(target_arch = "aarch64")]
const STATUS: u32 = 0;
/// FPCR.FZ (bit 24): subnormal inputs and results of single and double precision are zero.
#[cfg(target_arch = "aarch64")]
const FLUSH: u32 = 1 << 24;

#[cfg(target_arch = "aarch64")]
fn read() -> u32 {
    let value: u64;
    // SAFETY: reading FPCR has no side effect.
    unsafe {
        std::arch::asm!("mrs {}, fpcr", out(reg) value, options(nomem, nostack, preserves_flags));
    }
    value as u32
}

#[cfg(target_arch = "aarch64")]
fn write(value: u32) {
    // SAFETY: writes FPCR with a value that is DEFAULT or was read from FPCR.
    unsafe {
        std::arch::asm!("msr fpcr, {}", in(reg) u64::from(value), options(nomem, nostack, preserves_flags));
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const DEFAULT: u32 = 0;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const STATUS: u32 = 0;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const FLUSH: u32 = 0;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn read() -> u32 {
    DEFAULT
}
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn write(_: u32) {}

/// Sets this thread's floating-point control to the documented default (for threads that
/// only ever run kernels, such as pool workers).
pub(crate) fn set_default() {
    if read() & !STATUS != DEFAULT {
        write(DEFAULT);
    }
}

/// While alive, this thread's floating-point control is the documented default; dropping it
/// restores what the thread had. Not `Send`: it must end on the thread it started on.
#[derive(Debug)]
pub struct FpEnvGuard {
    /// The caller's control register, when it had to be changed.
    saved: Option<u32>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl FpEnvGuard {
    /// Enters the default environment on this thread.
    pub fn enter() -> FpEnvGuard {
        FpEnvGuard::enter_flushing(false)
    }

    /// Enters the default environment, or with `flush` the default with subnormals flushed
    /// to zero (`accy_artifact::Artifact::flush_subnormals`), on this thread.
    pub fn enter_flushing(flush: bool) -> FpEnvGuard {
        let wanted = if flush { DEFAULT | FLUSH } else { DEFAULT };
        let current = read();
        let saved = if current & !STATUS != wanted {
            write(wanted | (current & STATUS));
            Some(current)
        } else {
            None
        };
        FpEnvGuard {
            saved,
            _not_send: std::marker::PhantomData,
        }
    }

    /// Whether entering changed the thread's environment (it was not the one entered).
    pub fn changed(&self) -> bool {
        self.saved.is_some()
    }
}

impl Drop for FpEnvGuard {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            // Keep the sticky flags the kernels raised, restore the caller's control bits.
            write((saved & !STATUS) | (read() & STATUS));
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// MXCSR's flush-to-zero and denormals-are-zero bits.
    const FTZ_DAZ: u32 = 0x8040;

    #[test]
    fn the_guard_sets_the_default_and_restores_the_callers_bits() {
        let before = read();
        write(before | FTZ_DAZ);
        {
            let guard = FpEnvGuard::enter();
            assert!(guard.changed());
            assert_eq!(read() & !STATUS, DEFAULT);
            // A subnormal survives arithmetic only without FTZ/DAZ.
            let tiny = std::hint::black_box(1e-40f32);
            assert!(std::hint::black_box(tiny * 1.0) != 0.0);
        }
        assert_eq!(read() & !STATUS, (before | FTZ_DAZ) & !STATUS);
        write(before);
        let guard = FpEnvGuard::enter();
        assert!(!guard.changed() || before & !STATUS != DEFAULT);
    }
}
