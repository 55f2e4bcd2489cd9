//! `op: python`: a team's own Python callables as steps, run in persistent worker processes by
//! the interpreter on PATH (`python3`), through every strategy, with their failures named.
//! These use only the standard library (bytes and str cross without NumPy), so they need no
//! virtualenv; without `python3` they say so and skip.

use super::*;

const MODULE: &str = r#"
import os
import random
import sys
import time


def shout(data):
    return data.upper()


def tag(sample, sample_id, epoch):
    text = sample["data"].decode()
    return {"text": f"{text}|{sample_id}|{epoch}|{random.random():.9f}"}


def boom(data):
    if b"bad" in data:
        raise ValueError("no bad input here")
    return data


def wrong(data):
    return object()


def noisy(data):
    return data + str(random.random()).encode()


def reads_stdin(data):
    return data + sys.stdin.buffer.read(24)


def asks(data):
    input("continue? ")
    return data


def slow(data):
    time.sleep(0.5)
    return data


def same(data):
    return data


def die(data):
    if b"bad" in data:
        os.kill(os.getpid(), 9)
    return data


def start_helper():
    # A helper that outlives its worker, holding every descriptor the worker had.
    helper = os.fork()
    if helper == 0:
        time.sleep(120)
        os._exit(0)
    with open(os.environ["HELPERS"], "a") as f:
        f.write(f"{helper}\n")


def fork_then_die(data):
    if b"bad" in data:
        start_helper()
        os._exit(7)
    return data


def fork_and_go(data):
    if b"bad" in data:
        start_helper()
    return data


def surrogate(data):
    return "not text \udcff"


def empty_string(data):
    return ""
"#;

/// A folder of eight small text files (the fourth holds "bad"), the module `pipe.py` beside the
/// workload, and a workload whose steps are `steps` (YAML list items).
fn setup(work: &Path, steps: &str) -> std::path::PathBuf {
    let data = work.join("texts");
    std::fs::create_dir_all(&data).unwrap();
    for i in 1..=8 {
        let text = if i == 4 {
            "a bad line".to_string()
        } else {
            format!("line {i}")
        };
        std::fs::write(data.join(format!("t{i}.txt")), text).unwrap();
    }
    let code = work.join("code");
    std::fs::create_dir_all(&code).unwrap();
    std::fs::write(code.join("pipe.py"), MODULE).unwrap();
    // One name per definition: a results folder refuses a second definition under one name.
    let id = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        steps.hash(&mut h);
        h.finish() % 100_000
    };
    let yaml = format!(
        "name: texts-{id}\ndataset:\n  kind: files\n  path: {}\n  samples: 8\nsteps:\n  - name: \
         concatenated\n    op: read_file\n{steps}",
        data.display()
    );
    let w = code.join("texts.yaml");
    std::fs::write(&w, yaml).unwrap();
    w
}

/// One Python step `name` calling `pipe:function` on the field `data` (a YAML list item).
fn python_step(name: &str, function: &str) -> String {
    format!("  - name: {name}\n    op: python\n    params: {{function: \"pipe:{function}\", from: data}}\n")
}

fn run_args(work: &Path, workload: &Path, extra: &str) -> Vec<String> {
    common::run_in(
        work,
        workload,
        &format!("--epochs 2 --threads 2 --quiet --evict fadvise {extra}"),
    )
}

/// A step that draws random numbers without `random: true` makes stored and online outputs
/// differ: --verify fails, and says what the likeliest cause is.
#[test]
fn a_random_step_not_marked_random_fails_verify_with_the_likely_cause() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = setup(work.path(), &python_step("noised", "noisy"));
    let mut args = run_args(work.path(), &w, "--verify");
    args.extend(argv!["--strategy noised"]);
    fails_naming(
        &prepbench(&args),
        &["differs from fully-online processing", "`random: true`"],
    );
}

/// The same under each loader in Python: verification there compares each output's hash with
/// the reference's before anything else, and an output that differs fails it as natively.
#[test]
fn a_random_step_not_marked_random_fails_verify_under_every_loader() {
    let Some(native) = common::native_module() else {
        return;
    };
    for (loader, python) in [
        ("torch", common::torch_python()),
        ("tf-data", common::tf_python()),
    ] {
        let Some(python) = python else {
            continue;
        };
        let work = tempfile::tempdir().unwrap();
        let w = setup(work.path(), &python_step("noised", "noisy"));
        let flags = format!("--verify --strategy noised --loader {loader}");
        let args = run_args(work.path(), &w, &flags);
        let out = common::with_package(
            &mut std::process::Command::new(env!("CARGO_BIN_EXE_prepbench")),
            &native,
        )
        .arg("--python")
        .arg(&python)
        .args(&args)
        .output()
        .unwrap();
        // Named as `sweep` names it: the strategy, its codec and the loader.
        let named = format!("strategy `noised (none, {loader} loader)` differs from fully-online");
        fails_naming(&out, &[&named]);
    }
}

/// A step that reads stdin (a read, `input()`, a `breakpoint()` left in) reads nothing: it
/// never eats the worker's requests and never waits for a terminal.
#[test]
fn a_step_that_reads_stdin_reads_nothing_and_never_hangs() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = setup(work.path(), &python_step("read", "reads_stdin"));
    prepbench_ok(&run_args(work.path(), &w, "--verify"));
    let w = setup(work.path(), &python_step("asked", "asks"));
    fails_naming(
        &prepbench(&run_args(work.path(), &w, "")),
        &["EOFError", "asked"],
    );
}

/// A step that forks a helper which outlives its worker (holding the worker's pipes) makes
/// no wait: the worker's end is seen at once, and the helper ends with the worker's process
/// group, whether the worker died or the run ended normally.
#[test]
fn helpers_a_step_forks_neither_hold_the_run_nor_outlive_it() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let helpers = work.path().join("helpers.txt");
    for (function, ok) in [("fork_then_die", false), ("fork_and_go", true)] {
        let w = setup(work.path(), &python_step("forked", function));
        let began = std::time::Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_prepbench"))
            .args(run_args(work.path(), &w, "--strategy unprocessed"))
            .env("HELPERS", &helpers)
            .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
            .output()
            .unwrap();
        assert!(
            began.elapsed().as_secs() < 60,
            "{function}: waited for the helper"
        );
        assert_eq!(out.status.success(), ok, "{function}: {}", stderr(&out));
        if !ok {
            assert!(
                stderr(&out).contains("exited with status 7"),
                "{}",
                stderr(&out)
            );
        }
        let pids = std::fs::read_to_string(&helpers).unwrap_or_default();
        assert!(!pids.trim().is_empty(), "{function} started no helper");
        std::thread::sleep(std::time::Duration::from_millis(300));
        for pid in pids.lines() {
            let alive = std::path::Path::new(&format!("/proc/{pid}")).exists()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z ");
            assert!(!alive, "{function}: helper {pid} outlived the run");
        }
        std::fs::remove_file(&helpers).unwrap();
    }
}

/// What a step returns that cannot cross out of Python (a str with a lone surrogate) fails its
/// sample in words, as the step's failure, and `skip` goes on; an empty string crosses.
#[test]
fn a_value_that_cannot_cross_fails_its_sample_not_the_worker() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = setup(work.path(), &python_step("texted", "surrogate"));
    fails_naming(
        &prepbench(&run_args(work.path(), &w, "--strategy unprocessed")),
        &["step `texted`", "not valid Unicode", "return bytes"],
    );
    let w = setup(work.path(), &python_step("emptied", "empty_string"));
    prepbench_ok(&run_args(work.path(), &w, "--verify"));
}

/// A Python older than the driver needs is refused by validate and run in words, naming the
/// version, instead of failing every sample with an error blamed on the user's step.
#[test]
fn a_python_too_old_for_the_driver_is_refused_naming_its_version() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = setup(work.path(), &python_step("same", "same"));
    // A Python 3.11 that says it is 3.6 (no 3.6 is installed here).
    let old = work.path().join("python3.6");
    std::fs::write(
        &old,
        "#!/usr/bin/env python3\nimport sys\nsys.version_info = (3, 6, 15, 'final', 0)\n\
         code = sys.argv[2]\nsys.argv = ['-c'] + sys.argv[3:]\nexec(compile(code, '<string>', \
         'exec'))\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
    let python = old.to_str().unwrap();
    fails_naming(
        &prepbench(&argv!["validate", w.to_str().unwrap(), "--python", python]),
        &["texts.yaml", "Python 3.6 is older than the 3.7"],
    );
    let mut args = run_args(work.path(), &w, "--strategy unprocessed");
    args.extend(argv!["--python", python]);
    fails_naming(&prepbench(&args), &["Python 3.6 is older than the 3.7"]);
}

/// `--python` naming something that is not Python: one that never answers is ended after
/// PREPBENCH_PYTHON_START_S, one that prints a line and exits is not taken for Python.
#[test]
fn a_python_that_is_not_python_is_refused_not_waited_for() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = setup(work.path(), &python_step("shouted", "shout"));
    let script = |name: &str, body: &str| {
        let path = work.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    };
    let silent = script("silent", "sleep 600");
    let chatty = script("chatty", "echo Python 3.11.2");
    for (python, needle) in [
        (silent, "did not answer within 2 s"),
        (chatty, "exited without running"),
    ] {
        let started = std::time::Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_prepbench"))
            .args(["--python", &python, "validate", w.to_str().unwrap()])
            .env("PREPBENCH_PYTHON_START_S", "2")
            .output()
            .unwrap();
        fails_naming(&out, &[needle]);
        assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    }
}

/// prepbench killed with SIGKILL leaves no Python worker behind: each ends within seconds.
#[test]
fn python_workers_end_when_prepbench_is_killed() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = setup(work.path(), &python_step("slowed", "slow"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_prepbench"))
        .args(common::run_in(
            work.path(),
            &w,
            "--strategy unprocessed --epochs 3 --threads 2 --quiet --evict fadvise",
        ))
        .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let marker = work.path().join("code").display().to_string();
    let workers = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok().map(|c| (e, c)))
            .filter(|(_, c)| String::from_utf8_lossy(c).contains(&marker))
            .map(|(e, _)| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let began = std::time::Instant::now();
    while workers().is_empty() && began.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!workers().is_empty(), "no worker started");
    child.kill().unwrap();
    let _ = child.wait();
    let began = std::time::Instant::now();
    while !workers().is_empty() && began.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(workers().is_empty(), "left running: {:?}", workers());
}

#[test]
fn python_steps_run_through_every_strategy_and_verify() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = setup(
        work.path(),
        "  - name: shouted\n    op: python\n    params: {function: \"pipe:shout\", from: data}\n  \
         - name: tagged\n    op: python\n    random: true\n    params: {function: \"pipe:tag\"}\n",
    );
    prepbench_ok(&["validate", w.to_str().unwrap()]);
    let out = prepbench_ok(&run_args(work.path(), &w, "--verify"));
    assert!(!stderr(&out).contains("error"), "{}", stderr(&out));
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    let strategies: Vec<String> = runs.rows.iter().map(|r| runs.col(r, "strategy")).collect();
    for s in ["unprocessed", "concatenated", "shouted"] {
        assert!(strategies.iter().any(|x| x == s), "{strategies:?}");
    }
    assert!(
        !strategies.iter().any(|x| x == "tagged"),
        "a random step stays online"
    );
    for row in &runs.rows {
        assert_eq!(runs.num(row, "samples"), 8.0);
    }
    // Each Python step's time is split: inside its callable, and moving samples to and from it.
    let stages = std::fs::read_to_string(work.path().join("out/stages.csv")).unwrap();
    for stage in [
        "step:tagged",
        "transfer:tagged",
        "step:shouted",
        "transfer:shouted",
    ] {
        assert!(stages.contains(stage), "no {stage} in stages.csv");
    }
    // The random step's output depends on the sample and the epoch, as seeded by prepbench.
    let shown = prepbench_ok(&["show", w.to_str().unwrap(), "--list", "--sample", "2"]);
    let text = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(text.contains("text"), "{text}");
    // Python wrote nothing beside the module (no __pycache__): prepbench writes only its own.
    let beside: Vec<_> = std::fs::read_dir(work.path().join("code"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!beside.iter().any(|n| n.contains("pycache")), "{beside:?}");
    // Editing the module makes the stored split stale: it is made again, not reused.
    let module = work.path().join("code/pipe.py");
    let edited = std::fs::read_to_string(&module)
        .unwrap()
        .replace("data.upper()", "data.upper() + b\"!\"");
    std::fs::write(&module, edited).unwrap();
    let again = prepbench_ok(&run_args(work.path(), &w, "--strategy shouted --verify"));
    assert!(!stderr(&again).contains("error"), "{}", stderr(&again));
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    let last = runs.rows.last().unwrap();
    assert_eq!(runs.col(last, "strategy"), "shouted");
    assert_eq!(
        runs.col(last, "offline_reused"),
        "false",
        "the edited module's split is made again"
    );
}

#[test]
fn a_python_step_that_raises_returns_junk_or_dies_names_the_step_and_sample() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    // A pass-through Python step first: the two run as one chain, and the failure still
    // names the step it happened in.
    let step = |function: &str| {
        format!(
            "  - name: passed\n    op: python\n    params: {{function: \"pipe:same\", from: \
             data}}\n  - name: checked\n    op: python\n    params: {{function: \
             \"pipe:{function}\", from: data}}\n"
        )
    };
    // An exception: the step, the sample (id 3: t4.txt), its file, the exception.
    let w = setup(work.path(), &step("boom"));
    let err = fails_naming(
        &prepbench(&run_args(work.path(), &w, "--strategy unprocessed")),
        &[
            "step `checked`",
            "sample 3",
            "t4.txt",
            "ValueError: no bad input here",
        ],
    );
    assert!(
        !err.contains("Traceback"),
        "the traceback goes to errors.csv: {err}"
    );
    // Skipped, the traceback is in errors.csv and the other seven samples are measured.
    let out = prepbench_ok(&run_args(
        work.path(),
        &w,
        "--strategy unprocessed --on-error skip",
    ));
    let errors = Csv::read(&work.path().join("out/errors.csv"));
    assert!(!errors.rows.is_empty(), "{}", stderr(&out));
    let detail = errors.col(&errors.rows[0], "detail");
    assert!(
        detail.contains("Traceback") && detail.contains("raise ValueError"),
        "{detail}"
    );
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    assert_eq!(runs.num(&runs.rows[0], "samples"), 7.0);
    // A value that cannot cross.
    let w = setup(work.path(), &step("wrong"));
    fails_naming(
        &prepbench(&run_args(work.path(), &w, "--strategy unprocessed")),
        &[
            "step `checked`",
            "the returned value is object",
            "fields cross as",
        ],
    );
    // A worker killed mid-epoch: an error naming the step and the sample, never a hang; skipped,
    // a new worker takes the remaining samples.
    let w = setup(work.path(), &step("die"));
    fails_naming(
        &prepbench(&run_args(work.path(), &w, "--strategy unprocessed")),
        &["step `checked`", "sample 3", "t4.txt", "killed (SIGKILL"],
    );
    std::fs::remove_dir_all(work.path().join("out")).unwrap();
    prepbench_ok(&run_args(
        work.path(),
        &w,
        "--strategy unprocessed --on-error skip",
    ));
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    for row in &runs.rows {
        assert_eq!(runs.num(row, "samples"), 7.0);
    }
    // A callable that is not there: validate says so, at the step's line, before any run.
    let w = setup(work.path(), &step("nope"));
    fails_naming(
        &prepbench(&["validate", w.to_str().unwrap()]),
        &["texts.yaml:", "step `checked`", "AttributeError", "nope"],
    );
    // An interpreter that is not there: named, with the way to set another.
    let mut args = argv!["--python /no/such/python"];
    args.extend(run_args(work.path(), &w, "--strategy unprocessed"));
    fails_naming(&prepbench(&args), &["/no/such/python", "--python"]);
}

const ARRAYS: &str = r#"
import numpy as np


def to_array(data):
    return np.frombuffer(data, dtype=np.uint8).reshape(1, -1)


def reshape(x):
    assert x.dtype == np.uint8 and x.ndim == 2, (x.dtype, x.shape)
    x[0, 0] = 7  # the array handed over is writable
    return {
        "f": x.astype(np.float32) * 2,
        "n": np.int64(x.shape[1]),
        "flags": np.array([True, False]),
        "wide": np.arange(3, dtype=np.int64),
        "d": x.astype(np.float64),
        # Layouts the driver converts: big-endian, Fortran order, float16 and int8 (widened),
        # and an array with no elements.
        "be": np.arange(3, dtype=">i4"),
        "fortran": np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
        "half": np.array([1.5, -2.0], dtype=np.float16),
        "small": np.array([-3, 4], dtype=np.int8),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


def too_big(x):
    return np.array([2 ** 40])


GLOBAL = np.zeros(3, dtype=np.int32)


def pair(data):
    a = np.frombuffer(data, dtype=np.uint8).astype(np.int32)
    return {"x": a, "y": a, "g": GLOBAL}


def bump(x):
    x += 1  # in place: only this field's array may change
    return x


def view(y):
    return y[::2]  # a view of an array the step was given


def keep_in_place(sample):
    sample["g"] += sample["x"][:3]  # a module-level array, mutated by a later step
    return sample


TABLE = np.arange(4, dtype=np.int32)


def table(g):
    return TABLE  # one value, held by the module
"#;

#[test]
fn numpy_arrays_cross_with_their_dtype_and_shape() {
    let Some(python) = numpy_python() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let w = setup(
        work.path(),
        "  - name: arrayed\n    op: python\n    params: {function: \"arrays:to_array\", from: \
         data, to: x}\n  - name: reshaped\n    op: python\n    params: {function: \
         \"arrays:reshape\", from: x}\n",
    );
    std::fs::write(work.path().join("code/arrays.py"), ARRAYS).unwrap();
    let with_python = |args: &[&str]| {
        let mut all = argv!["--python", &python];
        all.extend(args.iter().map(|a| a.to_string()));
        all
    };
    let shown = prepbench_ok(&with_python(&[
        "show",
        w.to_str().unwrap(),
        "--list",
        "--sample",
        "0",
    ]));
    let text = String::from_utf8_lossy(&shown.stdout).into_owned();
    // t1.txt is "line 1": six bytes.
    for (field, dtype, shape) in [
        ("f", "float32", "[1, 6]"),
        ("d", "float64", "[1, 6]"),
        ("n", "int32", "| [] |"),
        ("flags", "uint8", "[2]"),
        ("wide", "int32", "[3]"),
        ("be", "int32", "[3]"),
        ("fortran", "int16", "[2, 3]"),
        ("half", "float32", "[2]"),
        ("small", "int16", "[2]"),
        ("empty", "float32", "[0, 3]"),
    ] {
        let line = text
            .lines()
            .skip_while(|l| !l.starts_with("| reshaped"))
            .find(|l| l.contains(&format!("| {field} |")))
            .unwrap_or_else(|| panic!("no field {field} in {text}"));
        assert!(
            line.contains(dtype) && line.contains(shape),
            "{field}: {line}"
        );
    }
    // Their values arrive as they were (every field written as .npy; the empty one drawn as no
    // PNG, and not stopping the others), read back by NumPy.
    let shown = work.path().join("shown");
    prepbench_ok(&with_python(&[
        "show",
        w.to_str().unwrap(),
        "--sample",
        "0",
        "--out",
        shown.to_str().unwrap(),
    ]));
    let check = std::process::Command::new(&python)
        .arg("-c")
        .arg(
            "import numpy as np, sys\n\
             d = sys.argv[1]\n\
             load = lambda n: np.load(f'{d}/{n}.npy')\n\
             assert load('be').tolist() == [0, 1, 2]\n\
             assert load('fortran').tolist() == [[0, 1, 2], [3, 4, 5]]\n\
             assert load('half').tolist() == [1.5, -2.0]\n\
             assert load('small').tolist() == [-3, 4]\n\
             assert load('empty').shape == (0, 3)\n",
        )
        .arg(&shown)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let mut args = with_python(&[]);
    args.extend(run_args(work.path(), &w, "--verify"));
    prepbench_ok(&args);
    // Consecutive Python steps run as one chain in one worker: what a step gets is what it
    // would get had the sample crossed to prepbench between them (its own writable array),
    // so that every split gives the same samples (`--verify`) even when steps share arrays,
    // mutate their input in place, return views or a module's array.
    let step = |name: &str, function: &str, from: &str| {
        format!(
            "  - name: {name}\n    op: python\n    params: {{function: \"arrays:{function}\"{from}}}\n"
        )
    };
    let w = setup(
        work.path(),
        &[
            step("paired", "pair", ", from: data"),
            step("bumped", "bump", ", from: x"),
            step("viewed", "view", ", from: y"),
            step("summed", "keep_in_place", ""),
            step("tabled", "table", ", from: g, to: t"),
            step("bumped_table", "bump", ", from: t"),
        ]
        .concat(),
    );
    std::fs::write(work.path().join("code/arrays.py"), ARRAYS).unwrap();
    let mut args = with_python(&[]);
    args.extend(run_args(work.path(), &w, "--verify"));
    prepbench_ok(&args);
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    for strategy in [
        "unprocessed",
        "concatenated",
        "paired",
        "bumped",
        "viewed",
        "summed",
        "tabled",
        "bumped_table",
    ] {
        assert!(
            runs.rows
                .iter()
                .any(|r| runs.col(r, "strategy") == strategy),
            "{strategy} was run and verified"
        );
    }
    // An int64 beyond int32 is refused, not wrapped.
    let w = setup(
        work.path(),
        "  - name: arrayed\n    op: python\n    params: {function: \"arrays:too_big\", from: \
         data}\n",
    );
    std::fs::write(work.path().join("code/arrays.py"), ARRAYS).unwrap();
    let mut args = with_python(&[]);
    args.extend(run_args(work.path(), &w, "--strategy unprocessed"));
    fails_naming(
        &prepbench(&args),
        &["step `arrayed`", "int64 values do not fit int32"],
    );
}

/// The paper's NILM aggregation in NumPy (examples/paper-python) gives prepbench's own
/// `nilm_features` output on the same window, and its every split verifies.
#[test]
fn the_numpy_nilm_variant_matches_the_rust_features() {
    let Some(python) = numpy_python() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/paper-python");
    std::fs::copy(examples.join("nilm.py"), work.path().join("nilm.py")).unwrap();
    // One generated hour (360 windows) for both workloads.
    let variant = std::fs::read_to_string(examples.join("nilm-python.yaml"))
        .unwrap()
        .replace("samples: 1440", "samples: 360");
    std::fs::write(work.path().join("nilm-python.yaml"), variant).unwrap();
    let reference = String::from_utf8(prepbench_ok(&["workload", "show", "nilm"]).stdout)
        .unwrap()
        .replace("samples: 1440", "samples: 360");
    std::fs::write(work.path().join("nilm.yaml"), reference).unwrap();
    let data = work.path().join("data").display().to_string();
    let at = |name: &str| work.path().join(name).display().to_string();
    prepbench_ok(&argv![
        "--python",
        &python,
        "run",
        &at("nilm-python.yaml"),
        "--strategy decoded,aggregated --verify --epochs 1 --quiet --evict fadvise --data-dir",
        &data,
        "--store-dir",
        &at("store"),
        "--out",
        &at("out")
    ]);
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    assert_eq!(runs.rows.len(), 2, "decoded and aggregated, one epoch each");
    assert!(runs.rows.iter().all(|r| runs.col(r, "verified") == "pass"));
    for (workload, npy) in [("nilm.yaml", "rust.npy"), ("nilm-python.yaml", "numpy.npy")] {
        prepbench_ok(&argv![
            "--python",
            &python,
            "show",
            &at(workload),
            "--after aggregated --part 7 --field features --quiet --data-dir",
            &data,
            "--out",
            &at(npy)
        ]);
    }
    let compared = Command::new(&python)
        .args([
            "-c",
            "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); \
             assert a.shape == b.shape == (3, 500), (a.shape, b.shape); \
             assert np.allclose(a, b, rtol=1e-9, atol=1e-9), np.abs(a - b).max(); print('same')",
            &at("rust.npy"),
            &at("numpy.npy"),
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&compared.stdout).contains("same"),
        "{}",
        stderr(&compared)
    );
}

/// A module that starts prepbench when it is imported (no `if __name__ == "__main__":` guard)
/// does not recurse when a worker imports it: the prepbench it starts there refuses at once,
/// saying why, and writes nothing.
#[test]
fn prepbench_started_inside_a_worker_refuses_instead_of_recursing() {
    if !common::have_python3() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let workload = setup(
        work.path(),
        "  - name: same\n    op: python\n    params: {function: \"recurse:same\", from: data}\n",
    );
    let nested = work.path().join("nested");
    let report = work.path().join("nested-exit.txt");
    let module = format!(
        "import subprocess\nr = subprocess.run([{bin:?}, \"run\", \"cv\", \"--samples\", \"2\", \
         \"--out\", {out:?}], capture_output=True)\nopen({report:?}, \"w\").write(\
         str(r.returncode) + \"\\n\" + r.stderr.decode())\n\n\ndef same(data):\n    return data\n",
        bin = env!("CARGO_BIN_EXE_prepbench"),
        out = nested.display().to_string(),
        report = report.display().to_string(),
    );
    std::fs::write(workload.parent().unwrap().join("recurse.py"), module).unwrap();
    let out = prepbench(&["validate", workload.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = std::fs::read_to_string(&report).unwrap();
    assert!(said.starts_with("2\n"), "{said}");
    assert!(
        said.contains("PREPBENCH_WORKER") && said.contains("__name__"),
        "{said}"
    );
    assert!(
        !nested.exists(),
        "the nested prepbench wrote {}",
        nested.display()
    );
}
