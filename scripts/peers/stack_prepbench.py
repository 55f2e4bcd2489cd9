"""prepbench as a peer: one `prepbench run` per measurement, its row read back.
"""
import os
import subprocess


def prepbench_row(binary, work, workload, strategy, samples, threads, cache, extra=(),
                  out="prepbench-out"):
    """One epoch of `prepbench run` as its runs.csv row (JSON), results under work/out."""
    import json

    command = [binary, "run", workload, "--strategy", strategy, "--samples", str(samples),
               "--threads", str(threads), "--cache", cache, "--epochs", "1", "--json", "--quiet",
               "--data-dir", os.path.join(work, "data"), "--store-dir", os.path.join(work, "store"),
               "--out", os.path.join(work, out), *extra]
    if cache == "cold":
        command += ["--evict", "fadvise"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_prepbench(binary, work, workload, strategy, samples, threads):
    return prepbench_row(binary, work, workload, strategy, samples, threads,
                         "warm")["throughput_sps"]


def photos_workload(binary, work):
    """The CV workload reading a flat folder of .jpg photographs (the `files` kind): its YAML
    path. Steps and strategies are the reference `cv` workload's."""
    cv = subprocess.run([binary, "workload", "show", "cv"], check=True, capture_output=True,
                        text=True).stdout
    start, end = cv.index("dataset:"), cv.index("steps:")
    yaml = os.path.join(work, "cv-photos.yaml")
    os.makedirs(work, exist_ok=True)
    with open(yaml, "w") as f:
        f.write(cv[:start].replace("name: cv\n", "name: cv-photos\n").replace("paper: cv\n", "")
                + "dataset:\n  kind: files\n  options: {glob: \"*.jpg\"}\n" + cv[end:])
    return yaml


def decode_roofline(work, strategy_runs, threads):
    """The decoder's limit for the strategies that decode online: `threads` workers each
    decoding at prepbench's measured rate (step:decoded seconds per sample, summed over workers,
    from stages.csv of the timed runs). Samples/s."""
    import csv

    ids = {row["run_id"] for row in strategy_runs}
    with open(os.path.join(work, "prepbench-out", "stages.csv")) as f:
        decode = [float(r["seconds"]) for r in csv.DictReader(f)
                  if r["run_id"] in ids and r["stage"] == "step:decoded"]
    samples = sum(row["samples"] for row in strategy_runs)
    return threads * samples / sum(decode) if decode else None
