//! The module cargo built is one Python can import: a shared object exporting the entry point
//! named for `prepbench._native` (the Python tests in tests/end_to_end load it from here).

#[test]
fn the_module_is_built_beside_the_tests_with_its_python_entry_point() {
    let exe = std::env::current_exe().unwrap();
    let module = exe.parent().unwrap().join("lib_native.so");
    let bytes = std::fs::read(&module)
        .unwrap_or_else(|e| panic!("{}: {e} (cargo builds it with this test)", module.display()));
    assert_eq!(
        &bytes[..4],
        b"\x7fELF",
        "{} is not a shared object",
        module.display()
    );
    let entry = b"PyInit__native";
    assert!(
        bytes.windows(entry.len()).any(|w| w == entry),
        "{} does not export PyInit__native",
        module.display()
    );
}
