//! `decode(encode(p)) == p` for random valid programs from the shared generator.

use accy_ir::gen::{arb_program, arb_program_with, GenConfig};
use accy_ir::verify;
use accy_wire::{decode, encode};
use proptest::prelude::*;

proptest! {
    #[test]
    fn random_programs_round_trip(program in arb_program()) {
        let bytes = encode(&program);
        let decoded = decode(&bytes).unwrap();
        prop_assert_eq!(&decoded, &program);
        prop_assert!(verify(&decoded).is_ok());
        prop_assert_eq!(encode(&decoded), bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Larger programs of the highest rank, so dims and axes lists spill past their inline
    /// capacity and constants are big.
    #[test]
    fn large_high_rank_programs_round_trip(program in arb_program_with(GenConfig {
        max_instructions: 40,
        max_rank: accy_ir::MAX_RANK,
        max_elements: 4096,
        max_params: 8,
        ..GenConfig::default()
    })) {
        let bytes = encode(&program);
        prop_assert_eq!(decode(&bytes).unwrap(), program);
    }
}
