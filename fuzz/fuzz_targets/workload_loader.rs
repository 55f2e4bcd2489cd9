//! Workload YAML through the strict loader: a workload or an error naming the file, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match workloads::Workload::from_yaml(text, "fuzz.yaml") {
        Ok(workload) => {
            // Every strategy it derives can be asked for by name.
            for s in workload.strategies() {
                assert!(workload.strategy(&s.name).is_ok());
            }
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz.yaml")),
    }
});
