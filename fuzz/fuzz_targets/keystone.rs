#![no_main]
//! cargo-fuzz target: `caldera_fuzz::keystone` must not panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| caldera_fuzz::keystone(data));
