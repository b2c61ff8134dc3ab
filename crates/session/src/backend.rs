//! Choosing the code generator for the host CPU.

use std::sync::Arc;

use accy_artifact::Arch;
use accy_executable::CpuInfo;
use accy_lower::Target;

use crate::Error;

/// Why no code generator serves this host.
#[derive(Debug, thiserror::Error)]
#[error("accy has no code generator for this host's architecture ({0})")]
struct NoBackend(&'static str);

/// The best code generator for `cpu`'s architecture and (possibly masked) features.
pub(crate) fn host_target(cpu: &CpuInfo, reassociate: bool) -> Result<Box<dyn Target>, Error> {
    match cpu.arch() {
        Some(Arch::X86_64) => Ok(Box::new(
            accy_lower::x64::X64Target::for_host(cpu.features())
                .with_float_reassociation(reassociate),
        )),
        // Taken only on aarch64 hosts. CI runs on x86-64 and tests this backend's code under
        // emulation (crates/a64-emu-tests); the native aarch64 run path is not built there.
        Some(Arch::Aarch64) => Ok(Box::new(
            accy_lower::aarch64::A64Target::for_host(cpu.features())
                .with_float_reassociation(reassociate),
        )),
        _ => Err(Error::CompileFailed(Arc::new(NoBackend(
            std::env::consts::ARCH,
        )))),
    }
}
