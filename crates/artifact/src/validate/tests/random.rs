//! Random artifacts: validation never panics, and success implies the promised bounds.

use super::*;
use proptest::prelude::*;

// Mostly small, plausible numbers so a useful share of samples is valid, with occasional
// extreme values (overflowing lengths, bad widths, zero workgroups) mixed in.
fn arb_region() -> impl Strategy<Value = Region> {
    (
        0u32..4,
        0u64..6,
        prop_oneof![20 => 0u64..6, 1 => Just(u64::MAX)],
    )
        .prop_map(|(s, o, l)| r(SlotId(s), o, l))
}

fn arb_access() -> impl Strategy<Value = Access> {
    prop_oneof![
        Just(Access::Read),
        Just(Access::Write),
        Just(Access::ReadWrite)
    ]
}

fn arb_command() -> impl Strategy<Value = Command> {
    let width = prop_oneof![4 => prop::sample::select(vec![1u8, 2, 4]), 1 => 0u8..9];
    let pattern = prop_oneof![4 => 0u32..0x100, 1 => any::<u32>()];
    prop_oneof![
        (arb_region(), pattern, width).prop_map(|(dst, pattern, width)| fill(dst, pattern, width)),
        (arb_region(), arb_region(), prop::bool::weighted(0.8)).prop_map(|(src, mut dst, same)| {
            if same {
                dst.len = src.len;
            }
            Command::Copy { src, dst }
        }),
        (
            prop_oneof![8 => 0u32..2, 1 => 2u32..4],
            prop::collection::vec((arb_region(), arb_access()), 0..4),
            prop_oneof![8 => 1u32..3, 1 => Just(0u32)],
        )
            .prop_map(|(k, b, wg): (u32, Vec<(Region, Access)>, u32)| dispatch(k, &b, wg)),
    ]
}

fn arb_role() -> impl Strategy<Value = SlotRole> {
    prop_oneof![
        2 => (0u32..2).prop_map(SlotRole::Input),
        1 => (0u32..2).prop_map(SlotRole::Output),
        1 => (0u64..3).prop_map(|k| SlotRole::Constant { offset: 4 * k }),
        3 => Just(SlotRole::Scratch),
    ]
}

fn arb_artifact() -> impl Strategy<Value = Artifact> {
    (
        prop::collection::vec(
            (
                arb_role(),
                prop_oneof![1 => 0u64..2, 4 => 2u64..5],
                prop_oneof![25 => Just(1u64), 25 => Just(4), 1 => Just(3)],
            ),
            4..7,
        ),
        prop::collection::vec(arb_command(), 0..5),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(slots, commands, renumber)| {
            let mut a = valid();
            a.plan.slots.clear();
            a.constants = vec![0; 24];
            let (mut inputs, mut outputs) = (0..u32::MAX, 0..u32::MAX);
            for (mut role, n, alignment) in slots {
                // Usually number inputs and outputs densely, so samples get past that rule.
                match &mut role {
                    SlotRole::Input(i) if renumber => *i = inputs.next().unwrap(),
                    SlotRole::Output(o) if renumber => *o = outputs.next().unwrap(),
                    _ => {}
                }
                let ty = Type::new(DType::F32, &[n]);
                a.plan.add(Slot::typed(role, ty, alignment).unwrap());
            }
            a.launch.commands = commands;
            a
        })
}

proptest! {
    #[test]
    fn validate_never_panics_and_success_means_in_bounds(a in arb_artifact()) {
        if let Ok(summary) = a.validate() {
            for c in &a.launch.commands {
                for (_, region, access) in c.accesses() {
                    let slot = a.plan.slot(region.slot).unwrap();
                    prop_assert!(region.end().unwrap() <= slot.byte_size);
                    prop_assert!(!(access.writes() && slot.role.kind().is_read_only()));
                }
                match c {
                    Command::Fill { dst, pattern, width } => {
                        prop_assert!(matches!(width, 1 | 2 | 4));
                        prop_assert!(u64::from(*pattern) < 1 << (8 * u32::from(*width)));
                        prop_assert!(dst.offset % u64::from(*width) == 0);
                        prop_assert!(dst.len % u64::from(*width) == 0);
                    }
                    Command::Copy { src, dst } => {
                        prop_assert_eq!(src.len, dst.len);
                        prop_assert!(!src.overlaps(dst));
                    }
                    Command::Dispatch { kernel, workgroups, .. } => {
                        prop_assert!((*kernel as usize) < a.kernels.len());
                        prop_assert!(*workgroups > 0);
                    }
                }
            }
            // The usage summary agrees with a direct recount of every access.
            for (id, slot) in a.plan.iter() {
                let u = summary.usage(id).unwrap();
                let uses: Vec<_> = a
                    .launch
                    .commands
                    .iter()
                    .flat_map(|c| c.accesses())
                    .filter(|(_, region, _)| region.slot == id)
                    .collect();
                let extent = uses.iter().map(|(_, r, _)| r.end().unwrap()).max().unwrap_or(0);
                prop_assert_eq!(u.extent, extent, "{}", id);
                prop_assert!(u.extent <= slot.byte_size);
                prop_assert_eq!(u.read, uses.iter().any(|(_, _, acc)| acc.reads()));
                prop_assert_eq!(u.written, uses.iter().any(|(_, _, acc)| acc.writes()));
                prop_assert_eq!((u.byte_size, u.alignment), (slot.byte_size, slot.alignment));
            }
        }
    }
}

#[test]
fn generator_produces_both_valid_and_invalid_artifacts() {
    // Guards the property above against vacuity: if nearly every sample were rejected, it
    // would prove nothing about accepted artifacts.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = arb_artifact();
    let samples = 400;
    let valid = (0..samples)
        .filter(|_| {
            let a = strategy.new_tree(&mut runner).unwrap().current();
            a.validate().is_ok()
        })
        .count();
    assert!(
        valid >= samples / 20 && valid <= samples - samples / 20,
        "{valid} of {samples} random artifacts valid"
    );
}
