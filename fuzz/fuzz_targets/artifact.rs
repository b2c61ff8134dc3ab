//! Bytes through the artifact reader (as sent, and with the checksum recomputed): an error or
//! a validated artifact that writes back to the same bytes, never a panic. No code is mapped.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    accy_fuzzing::check_artifact(data);
});
