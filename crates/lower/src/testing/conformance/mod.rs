//! The kernel conformance suite: one set of cases every backend runs, wherever its code runs.
//!
//! A [`KernelRunner`] says how to run emitted code — in this process on guarded buffers
//! (x86-64 hosts), or under an emulator (AArch64 on any host) — and the suite does the rest:
//! it builds each case's kernel, emits it with the runner's target, runs it, and compares every
//! binding with the reference kernel interpreter ([`crate::kernel::run_kernel`]): bit for bit,
//! except that any NaN equals any NaN (the IR leaves payloads open) and that in default mode
//! ([`Options::reassociate`]) a float sum may differ by at most `2 · n · ε · Σ|terms|`.
//!
//! Cases are grouped ([`GROUPS`]); [`conformance_tests!`](crate::conformance_tests) declares one
//! `#[test]` per group for a runner, so registering a backend (or a new kernel variant) once
//! tests it everywhere. Each group returns how many kernels it checked, which the test prints
//! and compares with the group's floor, so a group that silently checks nothing fails.

mod abi;
mod chains;
mod compare;
mod contraction;
mod extremes;
mod gelu;
mod kept;
mod loops;
pub(crate) mod math;
mod nodes;
mod random;
mod softmax;
mod streaming;

use accy_artifact::abi::ABI_VERSION;

use crate::compile::Options;
use crate::kernel::{Kernel, LoopKernel};
use crate::target::{EmittedCode, Target};
pub use compare::compare_with_reference;

/// How one call of a kernel is made, beyond its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch<'a> {
    /// Workgroups to run, one call each, in order (at least one call is made even for 0, to
    /// see the kernel refuse it).
    pub workgroups: u32,
    /// Run only this one of the `workgroups` (one call), as a chained dispatch's workgroup
    /// is run (see `accy_artifact::launch`).
    pub only: Option<u32>,
    /// The ABI version the dispatch state claims.
    pub abi_version: u32,
    /// The binding lengths the dispatch state claims instead of the buffers' real ones (their
    /// count may differ too), to test a kernel's own binding checks and the guard pages.
    pub claimed_lengths: Option<&'a [u64]>,
    /// Worker 0's scratch, kept from one launch to the next (a chain's links of one workgroup
    /// find what the previous links left there, as the runtime promises): the runner gives
    /// the calls a copy of these bytes (against a guard page) and writes the copy back after.
    /// `None`: fresh scratch of the size the kernel's entry declares.
    pub worker_scratch: Option<&'a std::cell::RefCell<Vec<u8>>>,
}

impl Launch<'_> {
    /// An ordinary launch over `workgroups` workgroups.
    pub fn new(workgroups: u32) -> Launch<'static> {
        Launch {
            workgroups,
            only: None,
            abi_version: ABI_VERSION,
            claimed_lengths: None,
            worker_scratch: None,
        }
    }

    /// The workgroup indices to call, in order: `only`, or all of them (one call even for 0
    /// workgroups).
    pub fn calls(&self) -> std::ops::Range<u32> {
        match self.only {
            Some(wg) => wg..wg.saturating_add(1),
            None => 0..self.workgroups.max(1),
        }
    }
}

/// Where conformance cases run a backend's code.
pub trait KernelRunner {
    /// The backend whose code this runner runs.
    fn target(&self) -> &dyn Target;

    /// A name for reports: the target and where it runs (`x64-avx2 on this host`).
    fn describe(&self) -> String;

    /// Whether a fault in the code under test comes back as an error from [`KernelRunner::run`]
    /// (an emulator) instead of killing the process (code running natively); the guard-page
    /// cases run only where it does.
    fn catches_faults(&self) -> bool {
        false
    }

    /// Runs kernel `index` of `code` with `buffers` as its bindings (each placed so that an
    /// access past its end faults), as `launch` says; copies the buffers back and returns one
    /// status per call. An error is a fault, a hang or an ABI violation the runner detected
    /// (registers not preserved, stack pointer moved).
    fn run(
        &self,
        code: &EmittedCode,
        index: usize,
        buffers: &mut [Vec<u8>],
        launch: &Launch<'_>,
    ) -> Result<Vec<u32>, String>;
}

/// One runner under test with the numeric mode its kernels are compiled in.
#[allow(
    missing_debug_implementations,
    reason = "holds a trait object with no Debug bound"
)]
pub struct Conformance<'r> {
    runner: &'r dyn KernelRunner,
    options: Options,
    checked: usize,
}

impl<'r> Conformance<'r> {
    /// The suite for `runner`, compiling in the mode `options` gives.
    pub fn new(runner: &'r dyn KernelRunner, options: Options) -> Conformance<'r> {
        Conformance {
            runner,
            options,
            checked: 0,
        }
    }

    /// The runner.
    pub fn runner(&self) -> &dyn KernelRunner {
        self.runner
    }

    /// The compile options the cases use.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Kernels checked so far.
    pub fn checked(&self) -> usize {
        self.checked
    }

    /// Emits `kernel` with the runner's target.
    pub fn emit(&self, kernel: &LoopKernel) -> Result<EmittedCode, String> {
        self.emit_kernel(&Kernel::Loop(kernel.clone()))
    }

    /// Emits `kernel` (either form) with the runner's target.
    pub fn emit_kernel(&self, kernel: &Kernel) -> Result<EmittedCode, String> {
        self.runner
            .target()
            .emit(std::slice::from_ref(kernel), &self.options)
            .map_err(|e| format!("{}: emit: {e}", kernel.name()))
    }

    /// Checks `kernel` (which must validate) on `buffers` over `workgroups` workgroups against
    /// the reference interpreter, and counts it.
    pub fn check(
        &mut self,
        kernel: &LoopKernel,
        buffers: &[Vec<u8>],
        workgroups: u32,
    ) -> Result<(), String> {
        kernel
            .validate()
            .map_err(|e| format!("{}: invalid case: {e}", kernel.name))?;
        let code = self.emit(kernel)?;
        let mut actual = buffers.to_vec();
        let statuses = self
            .runner
            .run(&code, 0, &mut actual, &Launch::new(workgroups))
            .map_err(|e| format!("{}: {e}\nkernel: {kernel:#?}", kernel.name))?;
        if statuses.iter().any(|&s| s != accy_artifact::abi::KERNEL_OK) {
            return Err(format!("{}: statuses {statuses:?}", kernel.name));
        }
        compare_with_reference(kernel, buffers, &actual, self.options.reassociate)
            .map_err(|e| format!("{}: {e}\nkernel: {kernel:#?}", kernel.name))?;
        self.checked += 1;
        Ok(())
    }

    /// [`Conformance::check`] if `kernel` validates; returns whether it did (cases built from
    /// cross products skip combinations the validator refuses, e.g. `sqrt` on i32).
    pub fn check_if_valid(
        &mut self,
        kernel: &LoopKernel,
        buffers: &[Vec<u8>],
        workgroups: u32,
    ) -> Result<bool, String> {
        if kernel.validate().is_err() {
            return Ok(false);
        }
        self.check(kernel, buffers, workgroups).map(|()| true)
    }
}

/// One group of cases: its name, the fewest kernels it may check, and the function running it
/// (`random` is the number of random kernels the `random` group draws).
#[derive(Debug)]
pub struct Group {
    /// The group's name (also its test's name).
    pub name: &'static str,
    /// The fewest kernels a run of the group checks; fewer fails the test.
    pub floor: usize,
    /// Runs the group.
    pub run: fn(&mut Conformance<'_>, u32) -> Result<(), String>,
}

/// Every group, in the order a full run takes them.
pub const GROUPS: &[Group] = &[
    Group {
        name: "unary",
        floor: 38,
        run: nodes::unary,
    },
    Group {
        name: "binary",
        floor: 61,
        run: nodes::binary,
    },
    Group {
        name: "compare_select",
        floor: 78,
        run: nodes::compare_select,
    },
    Group {
        name: "convert",
        floor: 36,
        run: nodes::convert,
    },
    Group {
        name: "const_index",
        floor: 291,
        run: nodes::const_index,
    },
    Group {
        name: "gather",
        floor: 36,
        run: nodes::gather,
    },
    Group {
        name: "fma_bitcast",
        floor: 40,
        run: nodes::fma_bitcast,
    },
    Group {
        name: "math",
        floor: 31,
        run: math::math,
    },
    Group {
        name: "reductions",
        floor: 167,
        run: loops::reductions,
    },
    Group {
        name: "maps",
        floor: 36,
        run: loops::maps,
    },
    Group {
        name: "vector_lengths",
        floor: 440,
        run: loops::vector_lengths,
    },
    Group {
        name: "workgroups",
        floor: 12,
        run: loops::workgroups,
    },
    Group {
        name: "wide_strides",
        floor: 4,
        run: loops::wide_strides,
    },
    Group {
        name: "in_place",
        floor: 2,
        run: loops::in_place,
    },
    Group {
        name: "uniform_values",
        floor: 2,
        run: loops::uniform_values,
    },
    Group {
        name: "many_values",
        floor: 2,
        run: loops::many_values,
    },
    Group {
        name: "streaming_stores",
        floor: 320,
        run: streaming::streaming_stores,
    },
    Group {
        name: "chains",
        floor: 6,
        run: chains::chains,
    },
    Group {
        name: "abi",
        floor: 7,
        run: abi::abi,
    },
    Group {
        name: "immediates",
        floor: 900,
        run: random::immediates,
    },
    Group {
        name: "contraction",
        floor: 1,
        run: contraction::contraction,
    },
    Group {
        name: "random",
        floor: 100,
        run: random::random,
    },
];

/// Runs the group called `name` for `runner` in the mode `options` gives; returns the report
/// line (`x64-avx2 on this host, default mode, unary: 38 kernels`) or the first failure.
pub fn run_group(
    runner: &dyn KernelRunner,
    options: Options,
    name: &str,
    random: u32,
) -> Result<String, String> {
    let group = GROUPS
        .iter()
        .find(|g| g.name == name)
        .ok_or_else(|| format!("no conformance group `{name}`"))?;
    let mut suite = Conformance::new(runner, options);
    (group.run)(&mut suite, random)?;
    let mode = if suite.options.reassociate {
        "default mode"
    } else {
        "exact mode"
    };
    let line = format!(
        "{}, {mode}, {}: {} kernels",
        runner.describe(),
        group.name,
        suite.checked
    );
    let floor = if group.name == "random" {
        // A random case may not validate; most do (the generator test checks the rate).
        (random as usize / 2).min(group.floor)
    } else {
        group.floor
    };
    if suite.checked < floor {
        return Err(format!("{line}, fewer than the group's floor of {floor}"));
    }
    Ok(line)
}

/// Declares one `#[test]` per conformance group for a runner, in a module `$module`.
///
/// `$runner` is an expression giving `Option<R>` for some `R: KernelRunner` (`None` when this
/// machine cannot run the target: each test then prints that it is skipped and passes,
/// visibly); `$options` the compile options; `$random` the number of random kernels.
#[macro_export]
macro_rules! conformance_tests {
    ($module:ident, $runner:expr, $options:expr, $random:expr) => {
        mod $module {
            #[allow(
                unused_imports,
                reason = "the runner expression may name the parent's items"
            )]
            use super::*;

            fn group(name: &str) {
                let Some(runner) = $runner else {
                    println!(
                        "conformance {}/{name}: skipped, this machine cannot run the target",
                        stringify!($module)
                    );
                    return;
                };
                match $crate::testing::conformance::run_group(&runner, $options, name, $random) {
                    Ok(line) => println!("conformance {line}"),
                    Err(e) => panic!("conformance {}/{name}: {e}", stringify!($module)),
                }
            }

            #[test]
            fn unary() {
                group("unary")
            }
            #[test]
            fn binary() {
                group("binary")
            }
            #[test]
            fn compare_select() {
                group("compare_select")
            }
            #[test]
            fn convert() {
                group("convert")
            }
            #[test]
            fn const_index() {
                group("const_index")
            }
            #[test]
            fn gather() {
                group("gather")
            }
            #[test]
            fn fma_bitcast() {
                group("fma_bitcast")
            }
            #[test]
            fn math() {
                group("math")
            }
            #[test]
            fn reductions() {
                group("reductions")
            }
            #[test]
            fn maps() {
                group("maps")
            }
            #[test]
            fn vector_lengths() {
                group("vector_lengths")
            }
            #[test]
            fn workgroups() {
                group("workgroups")
            }
            #[test]
            fn wide_strides() {
                group("wide_strides")
            }
            #[test]
            fn in_place() {
                group("in_place")
            }
            #[test]
            fn uniform_values() {
                group("uniform_values")
            }
            #[test]
            fn many_values() {
                group("many_values")
            }
            #[test]
            fn streaming_stores() {
                group("streaming_stores")
            }
            #[test]
            fn chains() {
                group("chains")
            }
            #[test]
            fn abi() {
                group("abi")
            }
            #[test]
            fn immediates() {
                group("immediates")
            }
            #[test]
            fn contraction() {
                group("contraction")
            }
            #[test]
            fn random() {
                group("random")
            }
            #[test]
            fn every_group_has_a_test() {
                let names: Vec<&str> = $crate::testing::conformance::GROUPS
                    .iter()
                    .map(|g| g.name)
                    .collect();
                assert_eq!(
                    names,
                    [
                        "unary",
                        "binary",
                        "compare_select",
                        "convert",
                        "const_index",
                        "gather",
                        "fma_bitcast",
                        "math",
                        "reductions",
                        "maps",
                        "vector_lengths",
                        "workgroups",
                        "wide_strides",
                        "in_place",
                        "uniform_values",
                        "many_values",
                        "streaming_stores",
                        "chains",
                        "abi",
                        "immediates",
                        "contraction",
                        "random"
                    ]
                );
            }
        }
    };
}
