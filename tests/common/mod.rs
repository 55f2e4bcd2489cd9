//! Helpers shared by the end-to-end tests: running the binary, a generated dataset shared per
//! test process, reading the CSV files it writes.

#![allow(dead_code)]

/// The value of a `Result<T, String>` saying what a test needs, or the test returns early,
/// printing `skipped: <reason>`.
#[allow(unused_macros)]
macro_rules! or_skip {
    ($needed:expr) => {
        match $needed {
            Ok(value) => value,
            Err(reason) => {
                eprintln!("skipped: {reason}");
                return;
            }
        }
    };
}

/// Command-line arguments: each string literal is split into words at white space (so a
/// command line reads as one line), any other expression is one argument as it is.
#[allow(unused_macros)]
macro_rules! argv {
    (@push $args:ident;) => {};
    (@push $args:ident; $words:literal $(, $($rest:tt)*)?) => {
        $args.extend($words.split_whitespace().map(String::from));
        argv!(@push $args; $($($rest)*)?);
    };
    (@push $args:ident; $arg:expr $(, $($rest:tt)*)?) => {
        $args.push(String::from($arg));
        argv!(@push $args; $($($rest)*)?);
    };
    ($($all:tt)*) => {{
        let mut args: Vec<String> = Vec::new();
        argv!(@push args; $($all)*);
        args
    }};
}

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub const SAMPLES: &str = "40";

pub fn prepbench<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prepbench"))
        .args(args)
        .env("PREPBENCH_CACHE_DIR", calibration_cache())
        // Tests run side by side: a run is never measured again for the others' load.
        .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
        .output()
        .expect("prepbench runs")
}

/// `prepbench ARGS`, which must succeed (the failure shows its stderr).
pub fn prepbench_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    let out = prepbench(args);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

/// A folder for the whole test process under the tests' own scratch folder (target/tmp), not
/// /tmp: a static is never dropped, so it is left behind, where `cargo clean` removes it.
pub fn process_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Where the tests' machine calibration is cached (one per test process, not the user's).
pub fn calibration_cache() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE.get_or_init(|| process_dir("calibration-")).path()
}

/// The stderr of a run that must fail, naming every one of `needles`, without a panic.
pub fn fails_naming(out: &Output, needles: &[&str]) -> String {
    let err = stderr(out);
    assert!(!out.status.success(), "it should have failed: {err}");
    for needle in needles {
        assert!(err.contains(needle), "no {needle:?} in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    err
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One generated ImageNet-style dataset shared by the tests (generated once per process).
pub fn data_dir() -> &'static Path {
    static DATA: OnceLock<tempfile::TempDir> = OnceLock::new();
    DATA.get_or_init(|| {
        let dir = process_dir("data-");
        prepbench_ok(&[
            "generate",
            "imagenet",
            "--samples",
            SAMPLES,
            "--out",
            &dir.path().join("imagenet-seed0").display().to_string(),
            "--quiet",
        ]);
        dir
    })
    .path()
}

/// A table of a results folder read through prepbench's typed reader (so every row is checked
/// against its row type), its fields as text for the tests' checks: numbers as numbers print,
/// an absent value empty.
pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    /// The table at `path`, typed by its file name (runs.csv, stages.csv, ...).
    pub fn read(path: &Path) -> Csv {
        use harness::results::*;
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match name.as_str() {
            RUNS => Csv::typed::<RunRow>(path),
            OFFLINE => Csv::typed::<OfflineRow>(path),
            STAGES => Csv::typed::<StageRow>(path),
            SAMPLES => Csv::typed::<SampleRow>(path),
            ERRORS => Csv::typed::<ErrorRow>(path),
            RANKS => Csv::typed::<RankRow>(path),
            other => panic!("{other} is not a table of a results folder"),
        }
    }

    fn typed<R: serde::de::DeserializeOwned + serde::Serialize>(path: &Path) -> Csv {
        let rows: Vec<R> = harness::results::table::read_rows(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let header: Vec<String> = harness::results::table::columns::<R>()
            .iter()
            .map(|c| c.to_string())
            .collect();
        let rows = rows
            .iter()
            .map(|row| {
                let value = serde_json::to_value(row).unwrap();
                header
                    .iter()
                    .map(|c| match &value[c] {
                        serde_json::Value::Null => String::new(),
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect()
            })
            .collect();
        Csv { header, rows }
    }

    pub fn col(&self, row: &[String], name: &str) -> String {
        let i = self
            .header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}"));
        row[i].clone()
    }

    pub fn num(&self, row: &[String], name: &str) -> f64 {
        self.col(row, name).parse().unwrap()
    }
}

pub fn find_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(find_files(&path, name));
        } else if path.file_name().is_some_and(|n| n == name) {
            found.push(path);
        }
    }
    found
}

/// `prepbench run WORKLOAD --json` with small settings (2 threads, 2 shards, one epoch,
/// verified) on the data under `data`, its store and results in `work`; returns the JSON rows.
pub fn run_json<S: AsRef<str>>(
    work: &Path,
    data: &Path,
    workload: &str,
    extra: &[S],
) -> Vec<serde_json::Value> {
    let name = Path::new(workload).file_stem().map_or_else(
        || workload.to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut args = argv![
        "run",
        workload,
        "--threads 2 --shards 2 --epochs 1 --verify --json --evict fadvise --quiet --data-dir",
        data.to_str().unwrap(),
        "--store-dir",
        work.join("store").to_str().unwrap(),
        "--out",
        work.join(name).to_str().unwrap()
    ];
    args.extend(extra.iter().map(|a| a.as_ref().to_string()));
    let run = prepbench(&args);
    assert!(run.status.success(), "{workload}: {}", stderr(&run));
    String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Installs Debian packages with apt-get (root only); why not otherwise.
pub fn apt_install(packages: &[&str]) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!(
            "{} not installed, and installing it needs root",
            packages.join(" ")
        ));
    }
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .map_err(|e| format!("apt-get: {e}"))
            .and_then(|o| {
                if o.status.success() {
                    Ok(())
                } else {
                    Err(String::from_utf8_lossy(&o.stderr).into_owned())
                }
            })
    };
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend_from_slice(packages);
    apt(&["update", "-qq"])
        .and_then(|_| apt(&install))
        .map_err(|e| format!("installing {} failed: {e}", packages.join(" ")))
}

/// Whether `program --version` runs.
pub fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Open MPI's mpirun from the distribution's packages: on the PATH, or installed now when
/// running as root; otherwise why not.
pub fn mpirun() -> Result<&'static str, String> {
    static FOUND: OnceLock<Result<&'static str, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            if !runs("mpirun") {
                apt_install(&["openmpi-bin"])?;
            }
            if runs("mpirun") {
                Ok("mpirun")
            } else {
                Err("openmpi-bin is installed but mpirun does not run".into())
            }
        })
        .clone()
}

/// `python3 -m venv VENV`, then `packages` installed into it by pip.
fn make_venv(venv: &Path, packages: &[&str]) -> Result<(), String> {
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(venv)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !made.status.success() {
        return Err(format!("python3 -m venv failed: {}", stderr(&made)));
    }
    let pip = Command::new(venv.join("bin").join("pip"))
        .args(["install", "-q"])
        .args(packages)
        .output()
        .map_err(|e| format!("pip: {e}"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install {} failed: {}",
            packages.join(" "),
            stderr(&pip)
        ));
    }
    Ok(())
}

/// The virtual environment with NumPy and Pillow for Python steps (see [`shared_venv`]).
#[allow(dead_code)]
pub fn numpy_venv() -> Result<&'static Path, String> {
    static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    VENV.get_or_init(|| shared_venv("steps", "numpy, PIL", &["numpy", "Pillow"]))
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

/// The interpreter of [`numpy_venv`], or `None` after saying on stderr why the test skips.
#[allow(dead_code)]
pub fn numpy_python() -> Option<String> {
    match numpy_venv() {
        Ok(venv) => Some(venv.join("bin/python").display().to_string()),
        Err(why) => {
            eprintln!("skipped: no virtualenv with NumPy and Pillow ({why})");
            None
        }
    }
}

/// Whether `python3` runs here; a test that needs it skips, saying why, when it does not.
pub fn have_python3() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no python3 on PATH");
    }
    ok
}

/// `run WORKLOAD FLAGS --store-dir WORK/store --out WORK/out`: a run whose store and results
/// stay in `work`.
pub fn run_in(work: &Path, workload: &Path, flags: &str) -> Vec<String> {
    let mut args = vec!["run".to_string(), workload.display().to_string()];
    args.extend(flags.split_whitespace().map(String::from));
    for (flag, dir) in [("--store-dir", "store"), ("--out", "out")] {
        args.push(flag.into());
        args.push(work.join(dir).display().to_string());
    }
    args
}

/// The Python package's native module (`prepbench._native`) as `cargo test --workspace` built
/// it beside the test binaries, for `PREPBENCH_NATIVE`; `None` after saying on stderr why the
/// test skips (it is built only when the workspace is: `cargo test -p harness` alone does not).
#[allow(dead_code)]
pub fn native_module() -> Option<PathBuf> {
    let exe = std::env::current_exe().unwrap();
    let beside = exe.parent().unwrap();
    let found = [
        beside.join("lib_native.so"),
        beside.join("../lib_native.so"),
    ]
    .into_iter()
    .find(|p| p.is_file());
    if found.is_none() {
        eprintln!(
            "skipped: no lib_native.so beside {} (the workspace's test command builds it: cargo \
             test --workspace --release)",
            beside.display()
        );
    }
    found
}

/// The packages the PyTorch tests need, as Debian packages them for its Python 3.11: PyTorch
/// 1.13 (CPU only; PyPI's 2.x brings 3 GB of CUDA libraries) and torchvision, NumPy, Pillow,
/// soundfile (audio) and h5py (NILM's hours).
#[allow(dead_code)]
pub const TORCH_PACKAGES: [&str; 6] = [
    "python3-torch",
    "python3-torchvision",
    "python3-numpy",
    "python3-pil",
    "python3-soundfile",
    "python3-h5py",
];

/// Where what the tests make once and reuse across checkouts and runs is kept, outside the
/// clone: `$PREPBENCH_TEST_VENVS`, else `~/.cache/prepbench-tests` (the virtual environments
/// of [`shared_venv`], the cluster tests' feature build). A clean clone's CI run then pays for
/// a pip install or a build of `aws-lc-sys` once per machine, not once per run.
#[allow(dead_code)]
pub fn shared_root() -> Result<PathBuf, String> {
    (std::env::var_os("PREPBENCH_TEST_VENVS").map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/prepbench-tests")))
        .ok_or_else(|| "neither PREPBENCH_TEST_VENVS nor HOME is set".to_string())
}

/// A virtual environment kept outside the clone and shared by every checkout and run on this
/// machine, keyed by its requirements: `$PREPBENCH_TEST_VENVS/NAME-KEY` (default
/// `~/.cache/prepbench-tests`), with `packages` installed by pip, made once and reused while
/// `import_check` imports (one left half-made is made again); an error saying why when it
/// cannot be made (the caller skips, saying so).
#[allow(dead_code)]
pub fn shared_venv(name: &str, import_check: &str, packages: &[&str]) -> Result<PathBuf, String> {
    use std::hash::{Hash, Hasher};
    let root = shared_root()?;
    let mut key = std::hash::DefaultHasher::new();
    (packages, import_check).hash(&mut key);
    let venv = root.join(format!("{name}-{:016x}", key.finish()));
    let imports = |venv: &Path| {
        Command::new(venv.join("bin/python"))
            .args(["-c", &format!("import {import_check}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if imports(&venv) {
        return Ok(venv);
    }
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    // One left half-made by an interrupted run is made again.
    let _ = std::fs::remove_dir_all(&venv);
    eprintln!(
        "installing {} into {} (once)",
        packages.join(" "),
        venv.display()
    );
    make_venv(&venv, packages)?;
    if !imports(&venv) {
        return Err(format!(
            "{} installed, but cannot import {import_check}",
            packages.join(" ")
        ));
    }
    Ok(venv)
}

/// What the tf-data loader's tests install: the paper peers' TensorFlow, with tensorflow-io
/// (its audio decoders); TensorFlow brings h5py (NILM's HDF5 parse under tf-data).
pub const TF_PACKAGES: [&str; 3] = ["tensorflow-cpu==2.16.2", "tensorflow-io==0.37.1", "pillow"];

/// An interpreter with TensorFlow: `$PREPBENCH_TF_PYTHON`, else the shared virtualenv of
/// [`TF_PACKAGES`] ([`shared_venv`]); `None` after saying why the test skips.
#[allow(dead_code)]
pub fn tf_python() -> Option<String> {
    static FOUND: OnceLock<Result<String, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        if let Ok(python) = std::env::var("PREPBENCH_TF_PYTHON") {
            return Ok(python);
        }
        shared_venv("tf", "tensorflow, tensorflow_io, numpy, PIL", &TF_PACKAGES)
            .map(|venv| venv.join("bin/python").display().to_string())
    });
    match found {
        Ok(python) => Some(python.clone()),
        Err(why) => {
            eprintln!("skipped: no Python with TensorFlow ({why})");
            None
        }
    }
}

/// An interpreter with PyTorch, torchvision, NumPy, Pillow, soundfile and h5py:
/// `$PREPBENCH_TORCH_PYTHON` when set, else Debian's `/usr/bin/python3` with [`TORCH_PACKAGES`] (installed by apt when missing
/// and running as root: kept outside the clone and reused by every later run); `None` after
/// saying on stderr why the test skips.
#[allow(dead_code)]
pub fn torch_python() -> Option<String> {
    static FOUND: OnceLock<Result<String, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let imports = |python: &str| {
            Command::new(python)
                .args(["-c", "import torch, torchvision, numpy, PIL, soundfile, h5py"])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if let Ok(python) = std::env::var("PREPBENCH_TORCH_PYTHON") {
            return if imports(&python) {
                Ok(python)
            } else {
                Err(format!(
                    "PREPBENCH_TORCH_PYTHON={python} cannot import torch, torchvision, numpy, PIL, soundfile, h5py"
                ))
            };
        }
        let python = "/usr/bin/python3".to_string();
        if !imports(&python) {
            apt_install(&TORCH_PACKAGES)?;
        }
        if imports(&python) {
            Ok(python)
        } else {
            Err(format!(
                "{} installed, but {python} cannot import them",
                TORCH_PACKAGES.join(" ")
            ))
        }
    });
    match found {
        Ok(python) => Some(python.clone()),
        Err(why) => {
            eprintln!("skipped: no Python with PyTorch ({why})");
            None
        }
    }
}

/// An `ImageFolder` of `n` of the shared generated JPEGs at `photos`, in two classes.
#[allow(dead_code)]
pub fn photo_folder(photos: &Path, n: usize) {
    let mut jpegs = Vec::new();
    let mut dirs = vec![data_dir().to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "JPEG") {
                jpegs.push(path);
            }
        }
    }
    jpegs.sort();
    assert!(jpegs.len() >= n, "{} shared JPEGs", jpegs.len());
    for (i, jpeg) in jpegs.iter().take(n).enumerate() {
        let class = if i % 2 == 0 { "cats" } else { "dogs" };
        let to = photos.join(class).join(format!("IMG_{:04}.JPEG", i + 1));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(jpeg, &to).unwrap();
    }
}

/// `command` run with the Python package from the tree (`python/`) and the native module
/// `native` ([`native_module`]), writing no bytecode into the tree, its temporary files in
/// the build's own folder ([`python_tmp`]), and its machine calibration in the tests' cache
/// ([`calibration_cache`]), not the user's: one measured while tests ran sized the stores of
/// a reproduction run after them.
#[allow(dead_code)]
pub fn with_package<'c>(command: &'c mut Command, native: &Path) -> &'c mut Command {
    command
        .env("TMPDIR", python_tmp())
        .env("PREPBENCH_CACHE_DIR", calibration_cache())
        .env("PREPBENCH_NATIVE", native)
        .env(
            "PYTHONPATH",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../python"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // Tests run side by side: a loader's sizing epochs are never taken at what they would
        // have lasted without the others' load (`parts::quiet_seconds`). Likely so scaled, in one
        // CI run a probe of CV's raw files through a 2 MB/s profile sized a part of 108 files,
        // whose epoch then lasted 6.3 s against a 1 s floor (it passed alone, in 33 s).
        .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
}

/// The temporary folder of the Python processes the tests start, under the build's folder:
/// a DataLoader's workers leave `pymp-*` folders behind when they are stopped (two of three
/// full runs left some in the system's /tmp), and TensorFlow writes its own.
#[allow(dead_code)]
pub fn python_tmp() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-tmp");
    std::fs::create_dir_all(&dir).expect("the build's temporary folder is writable");
    dir
}

/// The native module and an interpreter with PyTorch ([`native_module`], [`torch_python`]);
/// `None` after saying why the test skips.
#[allow(dead_code)]
pub fn torch_with_package() -> Option<(PathBuf, String)> {
    Some((native_module()?, torch_python()?))
}

/// The names of what `dir` holds (a temporary folder a command must leave as it found it).
#[allow(dead_code)]
pub fn entries(dir: &Path) -> Vec<std::ffi::OsString> {
    let read = std::fs::read_dir(dir).unwrap();
    read.flatten().map(|e| e.file_name()).collect()
}
