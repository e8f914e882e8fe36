#![no_main]

#[allow(dead_code)]
#[path = "../../tests/fuzz/targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (targets::by_name("bd-sync").run)(data);
});
