#![no_main]
//! cargo-fuzz target: `caldera::fuzzing::theme` must not panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| caldera::fuzzing::theme(data));
