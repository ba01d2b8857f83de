#![no_main]
//! cargo-fuzz target: `caldera::fuzzing::heat` must not panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| caldera::fuzzing::heat(data));
