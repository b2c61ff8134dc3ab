//! Wire bytes through decode, verify, print, parse and the interpreter.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    accy_fuzzing::check_decode(data);
});
