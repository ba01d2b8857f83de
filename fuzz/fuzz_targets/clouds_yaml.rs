#![no_main]
//! cargo-fuzz target: `caldera_fuzz::clouds_yaml` must not panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| caldera_fuzz::clouds_yaml(data));
