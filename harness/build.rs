//! Records the git commit and the compiler version in the binary for results manifests.

use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = output("git", &["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = output("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    let commit = if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = output(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PREPBENCH_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=PREPBENCH_RUSTC={rustc_version}");
    // Re-run when HEAD moves or the index changes (new commit, checkout, staged edits), and
    // when a source the binary is built from or runs changes (an unstaged edit makes the build
    // dirty; without these, a binary built from edited sources kept the clean commit's name).
    for path in [
        "../.git/HEAD",
        "../.git/index",
        "../Cargo.toml",
        "../Cargo.lock",
        "src",
        "../workloads",
        "../datasets",
        "../python/native/src",
    ] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    // The Python package the loaders run, file by file (its folder also holds the
    // interpreter's __pycache__, rewritten by every import).
    let package = std::fs::read_dir("../python/prepbench")
        .into_iter()
        .flatten();
    for file in package.flatten().map(|e| e.path()) {
        if file.extension().is_some_and(|x| x == "py") {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
