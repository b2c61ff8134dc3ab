//! Running emitted x86-64 kernels in this process for the conformance suite: code mapped with
//! `accy_executable::CodeMemory`, each binding in a `GuardedBuffer` whose last byte touches a
//! guard page, the runtime's own import table, and every call's code decoded first to prove it
//! uses only the features its tier declares.

use accy_artifact::abi::DispatchState;
use accy_artifact::FeatureSet;
use accy_executable::{CodeMemory, CpuInfo, GuardedBuffer, Tier, IMPORT_TABLE};

use super::encoding::features_used;
use crate::target::{EmittedCode, Target};
use crate::testing::conformance::{KernelRunner, Launch};
use crate::x64::{X64Target, X64Tier};

/// The features of this host that generated code may use (honouring
/// `ACCY_CPU_FEATURES_MAX`).
pub(crate) fn host_features() -> FeatureSet {
    let info = CpuInfo::detect().unwrap_or_else(|_| CpuInfo::detect_with_max_tier(Tier::Native));
    info.features()
}

/// The target for `tier` if this host can run it.
pub(crate) fn host_target(tier: X64Tier) -> Option<X64Target> {
    X64Target::new_checked(tier, host_features())
}

/// Runs one tier's code on this host.
#[derive(Debug)]
pub(crate) struct HostRunner(pub(crate) X64Target);

impl HostRunner {
    /// The runner for `tier`, if this host can run its code.
    pub(crate) fn for_tier(tier: X64Tier) -> Option<HostRunner> {
        host_target(tier).map(HostRunner)
    }
}

impl KernelRunner for HostRunner {
    fn target(&self) -> &dyn Target {
        &self.0
    }

    fn describe(&self) -> String {
        format!("{} on this host", self.0.name())
    }

    fn run(
        &self,
        code: &EmittedCode,
        index: usize,
        buffers: &mut [Vec<u8>],
        launch: &Launch<'_>,
    ) -> Result<Vec<u32>, String> {
        let used = features_used(&code.code)?;
        let declared = self.0.spec().features;
        if !used.is_subset(declared) {
            return Err(format!("the code uses {used} but declares {declared}"));
        }
        let entry = code.entries.get(index).ok_or("no such kernel")?;
        let mut workers = match launch.worker_scratch {
            Some(kept) => GuardedBuffer::from_bytes(&kept.borrow()),
            None => GuardedBuffer::new(entry.worker_scratch as usize),
        }
        .map_err(|e| e.to_string())?;
        let entry = entry.offset;
        let memory = CodeMemory::from_code(&code.code).map_err(|e| e.to_string())?;
        let entry = memory.entry(entry).map_err(|e| e.to_string())?;
        let mut guarded: Vec<GuardedBuffer> = buffers
            .iter()
            .map(|b| GuardedBuffer::from_bytes(b).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        let real: Vec<u64> = guarded.iter().map(|g| g.len() as u64).collect();
        let lengths = launch.claimed_lengths.unwrap_or(&real);
        let mut pointers: Vec<*mut u8> = guarded.iter_mut().map(|g| g.as_mut_ptr()).collect();
        // A claimed count above the real one gets dangling entries: the kernel's count check
        // refuses the dispatch before reading any.
        pointers.resize(lengths.len().max(pointers.len()), std::ptr::null_mut());
        let state = DispatchState {
            abi_version: launch.abi_version,
            binding_count: lengths.len() as u32,
            bindings: pointers.as_ptr(),
            binding_lengths: lengths.as_ptr(),
            scalars: std::ptr::null(),
            scalar_count: 0,
            workgroup_count: launch.workgroups,
            imports: IMPORT_TABLE.as_ptr(),
            worker_scratch: workers.as_mut_ptr(),
            worker_scratch_stride: workers.len() as u64,
            worker_count: 1,
            reserved: 0,
        };
        let statuses = launch
            .calls()
            .map(|wg| {
                // SAFETY: the code was emitted for the dispatch ABI and for this host's features
                // (the runner exists only for a tier the host runs, and the decode above proved
                // the code uses no other). `state` and every array it points to live until the
                // call returns; each binding pointer addresses at least the claimed length or
                // the kernel refuses the dispatch (a claim longer than the buffer faults at its
                // guard page, which this runner is never asked to do); the import table holds
                // functions of the documented signatures.
                unsafe {
                    entry.call::<extern "C" fn(*const DispatchState, u32, u32) -> u32>((
                        &state, wg, 0,
                    ))
                }
            })
            .collect();
        for (b, g) in buffers.iter_mut().zip(&guarded) {
            b.copy_from_slice(g.as_slice());
        }
        if let Some(kept) = launch.worker_scratch {
            kept.borrow_mut().copy_from_slice(workers.as_slice());
        }
        Ok(statuses)
    }
}
