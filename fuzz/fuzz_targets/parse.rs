//! Text through parse, verify, print, parse, the wire round trip and the interpreter.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(source) = std::str::from_utf8(data) {
        accy_fuzzing::check_parse(source);
    }
});
