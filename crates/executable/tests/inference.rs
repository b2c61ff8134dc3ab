//! Prepared model plans (`PreparedPlan`): fragments chained through regions, every
//! `PrepareError` and `RunError`, and a fuzz-style property: random plans over random
//! regions are refused with an error or run in bounds — on slots whose scratch allocations
//! end at guard pages — and give what a byte-level reference of the plan gives.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use accy_artifact::model::{Allocation, Command, Io, ModelPlan, Port, Region, Signature};
use accy_artifact::{Command as Launch, SlotRole};
use accy_executable::{
    BufferKind, Executor, Inline, LoadedArtifact, PlanParts, PrepareError, PreparedPlan, RunError,
    ThreadPool, Weights,
};
use accy_ir::DType;
use common::*;
use proptest::test_runner::{Config, TestRunner};

/// A fragment copying its one `n`-byte input to its one `n`-byte output with a launch-plan
/// copy (no machine code, so on any architecture).
fn copy_fragment(n: u64) -> Arc<LoadedArtifact> {
    let mut a = artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, n);
    let output = slot(&mut a, SlotRole::Output(0), DType::U8, n);
    if n > 0 {
        a.launch.push(Launch::Copy {
            src: whole(input, n),
            dst: whole(output, n),
        });
    }
    Arc::new(load(&a, &host()).unwrap())
}

/// The fragments the tests use: identity copies of 4, 8 and 16 bytes, and on x86-64 a
/// 12-byte copy by the hand-assembled `copy_chunk` kernel in workgroups of 5 bytes (so it
/// goes through the executor).
fn fragments() -> Vec<(u64, Arc<LoadedArtifact>)> {
    let mut list: Vec<(u64, Arc<LoadedArtifact>)> =
        [4, 8, 16].iter().map(|&n| (n, copy_fragment(n))).collect();
    if cfg!(target_arch = "x86_64") {
        list.push((12, Arc::new(load(&copy_artifact(12, 5), &host()).unwrap())));
    }
    list
}

fn parts<'a>(
    plan: &'a ModelPlan,
    weights: &'a Weights,
    names: &'a [Option<&'a str>],
    fragments: &'a [Arc<LoadedArtifact>],
) -> PlanParts<'a> {
    PlanParts {
        plan,
        weights,
        weight_names: names,
        fragments,
    }
}

/// a0 = weight "w" (8 bytes), a1 = scratch; copy(8) a1[0..8] → a1[16..24], then the same
/// fragment copies the weight to a1[32..40]; IO: in a1[0..8], outs a1[16..24], a1[32..40].
fn chained() -> (ModelPlan, Weights, Arc<LoadedArtifact>) {
    let fragment = copy_fragment(8);
    let weights = Weights::new(&[("w", &[9, 8, 7, 6, 5, 4, 3, 2])]).unwrap();
    let plan = ModelPlan {
        allocations: vec![Allocation::immutable(8, 64), Allocation::scratch(64)],
        fragments: vec![fragment.signature()],
        commands: vec![
            Command::Dispatch {
                fragment: 0,
                inputs: vec![Region::new(1, 0, 8)],
                outputs: vec![Region::new(1, 16, 8)],
            },
            Command::Dispatch {
                fragment: 0,
                inputs: vec![Region::new(0, 0, 8)],
                outputs: vec![Region::new(1, 32, 8)],
            },
        ],
        inputs: vec![Io {
            region: Region::new(1, 0, 8),
            bytes: 8,
        }],
        outputs: vec![
            Io {
                region: Region::new(1, 16, 8),
                bytes: 8,
            },
            Io {
                region: Region::new(1, 32, 8),
                bytes: 8,
            },
        ],
    };
    (plan, weights, fragment)
}

/// The [`chained`] plan prepared with `capacity` slots, run inline.
fn prepared_chained(capacity: usize) -> PreparedPlan {
    let (plan, weights, fragment) = chained();
    let names = [Some("w"), None];
    PreparedPlan::new(
        &parts(&plan, &weights, &names, &[fragment]),
        Arc::new(Inline),
        capacity,
    )
    .unwrap()
}

#[test]
fn a_prepared_plan_runs_its_commands_on_every_slot() {
    let prepared = prepared_chained(3);
    assert_eq!(prepared.capacity(), 3);
    assert_eq!(prepared.input_sizes().collect::<Vec<_>>(), vec![8]);
    assert_eq!(prepared.output_sizes().collect::<Vec<_>>(), vec![8, 8]);
    // The plan uses 40 bytes of its scratch allocation (no fragment scratch, no workers).
    assert_eq!(prepared.slot_bytes(), 40);
    let shared = Arc::new(prepared);
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let prepared = Arc::clone(&shared);
            s.spawn(move || {
                for i in 0..200u8 {
                    let input = [t, i, 1, 2, 3, 4, 5, 6];
                    let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
                    prepared.run(&[&input], &mut [&mut a, &mut b]).unwrap();
                    assert_eq!(a, input);
                    assert_eq!(b, [9, 8, 7, 6, 5, 4, 3, 2]);
                }
            });
        }
    });
    assert_eq!(shared.idle_slots(), 3);
    assert!(
        shared.to_string().contains("3 slots of 40 bytes"),
        "{shared}"
    );
}

#[test]
fn runs_check_buffer_counts_and_sizes_first() {
    let prepared = prepared_chained(1);
    let input = [0u8; 8];
    let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
    assert_eq!(
        prepared.run(&[], &mut [&mut a, &mut b]).unwrap_err(),
        RunError::Count {
            kind: BufferKind::Input,
            expected: 1,
            actual: 0
        }
    );
    assert_eq!(
        prepared.try_run(&[&input], &mut [&mut a]).unwrap_err(),
        RunError::Count {
            kind: BufferKind::Output,
            expected: 2,
            actual: 1
        }
    );
    assert_eq!(
        prepared
            .run(&[&input[..7]], &mut [&mut a, &mut b])
            .unwrap_err(),
        RunError::Size {
            kind: BufferKind::Input,
            index: 0,
            expected: 8,
            actual: 7
        }
    );
    let mut long = [0u8; 9];
    assert_eq!(
        prepared
            .run(&[&input], &mut [&mut a, &mut long])
            .unwrap_err(),
        RunError::Size {
            kind: BufferKind::Output,
            index: 1,
            expected: 8,
            actual: 9
        }
    );
}

#[test]
fn plans_that_do_not_match_their_weights_or_fragments_are_refused() {
    let (plan, weights, fragment) = chained();
    let fragments = [Arc::clone(&fragment)];
    let try_prepare = |plan: &ModelPlan, names: &[Option<&str>], fragments: &[_], capacity| {
        PreparedPlan::new(
            &parts(plan, &weights, names, fragments),
            Arc::new(Inline),
            capacity,
        )
        .unwrap_err()
    };
    let names = [Some("w"), None];
    assert_eq!(
        try_prepare(&plan, &names, &fragments, 0),
        PrepareError::NoSlots
    );
    assert_eq!(
        try_prepare(&plan, &names[..1], &fragments, 1),
        PrepareError::WeightNames {
            allocations: 2,
            names: 1
        }
    );
    for names in [[None, None], [Some("v"), None], [Some("w"), Some("w")]] {
        assert!(matches!(
            try_prepare(&plan, &names, &fragments, 1),
            PrepareError::UnboundWeight { .. }
        ));
    }
    let mut wrong = plan.clone();
    wrong.allocations[0].bytes = 4;
    wrong.commands.truncate(1);
    assert!(matches!(
        try_prepare(&wrong, &names, &fragments, 1),
        PrepareError::WeightMismatch {
            bytes: 4,
            weight_bytes: 8,
            ..
        }
    ));
    let mut wrong = plan.clone();
    wrong.allocations[0].alignment = 1 << 20;
    assert!(matches!(
        try_prepare(&wrong, &names, &fragments, 1),
        PrepareError::WeightMismatch { .. }
    ));
    assert_eq!(
        try_prepare(&plan, &names, &[], 1),
        PrepareError::FragmentCount { plan: 1, loaded: 0 }
    );
    let other = [copy_fragment(4)];
    assert!(matches!(
        try_prepare(&plan, &names, &other, 1),
        PrepareError::SignatureMismatch { fragment: 0, .. }
    ));
    // A rule of the plan itself comes through as `Invalid`.
    let mut wrong = plan.clone();
    wrong.inputs[0].region.allocation = 0;
    assert!(matches!(
        try_prepare(&wrong, &names, &fragments, 1),
        PrepareError::Invalid(_)
    ));
}

/// Draws small numbers from a tape of random words (proptest shrinks the tape).
struct Tape<'a> {
    words: &'a [u32],
    at: usize,
}

impl Tape<'_> {
    /// A number below `n` (0 when the tape runs out).
    fn below(&mut self, n: u64) -> u64 {
        let w = self.words.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        u64::from(w) % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A random plan over `fragment_sizes`: a few weights and scratch allocations, fills and
/// dispatches over regions that are usually, but not always, valid, and random IO.
fn random_plan(tape: &mut Tape<'_>, fragment_sizes: &[u64]) -> (ModelPlan, Vec<Vec<u8>>) {
    let mut plan = ModelPlan::default();
    let mut weights = Vec::new();
    for _ in 0..1 + tape.below(4) {
        if tape.chance(20) {
            let bytes = tape.below(40);
            weights.push((0..bytes).map(|i| (i * 7 + 3) as u8).collect());
            plan.allocations.push(Allocation::immutable(bytes, 64));
        } else {
            // Byte-aligned scratch: its guarded buffer then ends exactly at the guard page.
            let mut a = Allocation::scratch(tape.below(96));
            a.alignment = 1;
            plan.allocations.push(a);
        }
    }
    let count = plan.allocations.len() as u64;
    let region = |tape: &mut Tape<'_>, bytes: Option<u64>| {
        let allocation = if tape.chance(2) {
            count + tape.below(3)
        } else {
            tape.below(count)
        } as u32;
        let size = plan
            .allocations
            .get(allocation as usize)
            .map_or(64, |a| a.bytes);
        let bytes = match bytes {
            Some(b) if !tape.chance(4) => b,
            _ => tape.below(24),
        };
        let offset = if tape.chance(2) {
            u64::MAX - tape.below(8)
        } else {
            tape.below(size.saturating_sub(bytes) + 2)
        };
        Region::new(allocation, offset, bytes)
    };
    for fragment in fragment_sizes {
        plan.fragments.push(Signature {
            inputs: vec![Port {
                bytes: *fragment,
                alignment: 1,
            }],
            outputs: vec![Port {
                bytes: *fragment,
                alignment: 1,
            }],
        });
    }
    for _ in 0..tape.below(6) {
        if tape.chance(25) {
            let region = region(tape, None);
            plan.commands.push(Command::Fill {
                region,
                value: tape.below(256) as u8,
            });
        } else {
            let fragment = if tape.chance(3) {
                fragment_sizes.len() as u32
            } else {
                tape.below(fragment_sizes.len() as u64) as u32
            };
            let n = fragment_sizes.get(fragment as usize).copied();
            // Usually one binding each, as the fragments have; sometimes none or two.
            let count = |tape: &mut Tape<'_>| if tape.chance(95) { 1 } else { tape.below(3) };
            let inputs = (0..count(tape)).map(|_| region(tape, n)).collect();
            let outputs = (0..count(tape)).map(|_| region(tape, n)).collect();
            plan.commands.push(Command::Dispatch {
                fragment,
                inputs,
                outputs,
            });
        }
    }
    for which in 0..2 {
        for _ in 0..tape.below(3) {
            let bytes = 1 + tape.below(16);
            let region = region(tape, Some(bytes));
            let bytes = region.bytes.saturating_sub(tape.below(3)) + u64::from(tape.chance(2));
            let io = Io { region, bytes };
            if which == 0 {
                plan.inputs.push(io);
            } else {
                plan.outputs.push(io);
            }
        }
    }
    (plan, weights)
}

/// What the plan computes, byte by byte, on fresh (zeroed) scratch: every fragment is an
/// identity copy.
fn reference(plan: &ModelPlan, weights: &[Vec<u8>], inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut weights = weights.iter();
    let mut memory: Vec<Vec<u8>> = plan
        .allocations
        .iter()
        .map(|a| match a.kind {
            accy_artifact::model::AllocationKind::Immutable => weights.next().unwrap().clone(),
            accy_artifact::model::AllocationKind::Scratch => vec![0; a.bytes as usize],
        })
        .collect();
    let range = |r: &Region, len: u64| r.offset as usize..(r.offset + len) as usize;
    for (io, bytes) in plan.inputs.iter().zip(inputs) {
        memory[io.region.allocation as usize][range(&io.region, io.bytes)].copy_from_slice(bytes);
    }
    for command in &plan.commands {
        match command {
            Command::Fill { region, value } => {
                memory[region.allocation as usize][range(region, region.bytes)].fill(*value);
            }
            Command::Dispatch {
                inputs, outputs, ..
            } => {
                let data = memory[inputs[0].allocation as usize]
                    [range(&inputs[0], inputs[0].bytes)]
                .to_vec();
                memory[outputs[0].allocation as usize][range(&outputs[0], outputs[0].bytes)]
                    .copy_from_slice(&data);
            }
        }
    }
    plan.outputs
        .iter()
        .map(|io| memory[io.region.allocation as usize][range(&io.region, io.bytes)].to_vec())
        .collect()
}

#[test]
fn random_plans_are_refused_or_run_in_bounds_on_guarded_slots() {
    let fragments = fragments();
    let sizes: Vec<u64> = fragments.iter().map(|(n, _)| *n).collect();
    let loaded: Vec<Arc<LoadedArtifact>> = fragments.iter().map(|(_, f)| Arc::clone(f)).collect();
    let pool: Arc<dyn Executor> = Arc::new(ThreadPool::new(2).unwrap());
    let (accepted, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let tapes = proptest::collection::vec(proptest::prelude::any::<u32>(), 120);
    runner
        .run(&tapes, |words| {
            let mut tape = Tape {
                words: &words,
                at: 0,
            };
            let (plan, weight_bytes) = random_plan(&mut tape, &sizes);
            let names: Vec<String> = (0..weight_bytes.len()).map(|i| format!("w{i}")).collect();
            let named: Vec<(&str, &[u8])> = names
                .iter()
                .zip(&weight_bytes)
                .map(|(n, b)| (n.as_str(), b.as_slice()))
                .collect();
            let weights = Weights::new(&named).unwrap();
            let mut next = names.iter();
            let weight_names: Vec<Option<&str>> = plan
                .allocations
                .iter()
                .map(|a| match a.kind {
                    accy_artifact::model::AllocationKind::Immutable => {
                        next.next().map(String::as_str)
                    }
                    accy_artifact::model::AllocationKind::Scratch => None,
                })
                .collect();
            let parts = parts(&plan, &weights, &weight_names, &loaded);
            let prepared = match PreparedPlan::new_guarded(&parts, Arc::clone(&pool), 1) {
                Ok(prepared) => prepared,
                Err(PrepareError::Invalid(e)) => {
                    // Refused by a rule: the error renders, and the unguarded path agrees.
                    assert!(!e.to_string().is_empty());
                    assert!(matches!(
                        PreparedPlan::new(&parts, Arc::clone(&pool), 1),
                        Err(PrepareError::Invalid(same)) if same == e
                    ));
                    refused.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(other) => panic!("a valid plan failed to prepare: {other}\n{plan:?}"),
            };
            let inputs: Vec<Vec<u8>> = prepared
                .input_sizes()
                .enumerate()
                .map(|(i, n)| (0..n).map(|j| (i * 31 + j * 5 + 1) as u8).collect())
                .collect();
            let mut outputs: Vec<Vec<u8>> =
                prepared.output_sizes().map(|n| vec![0xEE; n]).collect();
            let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
            prepared.run(&ins, &mut outs).unwrap();
            assert_eq!(
                outputs,
                reference(&plan, &weight_bytes, &inputs),
                "{plan:?}"
            );
            accepted.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    let (accepted, refused) = (accepted.into_inner(), refused.into_inner());
    // The generator must exercise both outcomes, or the property says little.
    #[allow(
        clippy::print_stdout,
        reason = "the statistics show what the property covered"
    )]
    {
        println!("random plans: {accepted} ran, {refused} refused");
    }
    assert!(
        accepted * 10 >= cases as usize && refused * 10 >= cases as usize,
        "{accepted} plans ran and {refused} were refused of {cases}"
    );
}
