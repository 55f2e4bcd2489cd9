#!/usr/bin/env python3
"""Does a store's size move the figures? (issue 41: "keep it so; a regression check is
welcome"). Quick sizes its stores so that an epoch lasts the 1 s floor and cycles them over a
few hundred source images; a larger dataset or a longer floor must give the same throughput,
or quick's figures are figures of its small stores, not of the pipeline.

Three sweeps of CV's stored strategies (`concatenated`, `resized`, `pixel-centered`; 16 shards,
2 threads, cold then warm, 6 trials), on the local disk and under `paper-ceph-hdd`, their
trials run in interleaved blocks (2 trials of each condition, then 2 more, each block in
another order: run one condition after another, the same comparison read 0.95-1.25x in one
run and 0.77-0.99x in the next, as the host drifted):

- `base`: 300 source images, epochs sized to last 1 s (`--min-epoch-s 1`, quick's floor);
- `sources`: 1,200 source images (4x as many distinct records), the same floor;
- `records`: 300 source images, epochs sized to last 4 s (a store with about 4x the records,
  up to the store byte cap).

Each of `sources` and `records` is paired with `base` cell by cell by `prepbench compare`
(ratio with its 95 % interval). A pair holds when its interval lies within +-BAND (10 %),
moves when its interval lies wholly outside it, and is unsettled otherwise. Writes into
--out: each sweep's runs.csv and manifest.json, the two compare CSVs, and README.md with the
verdicts, the store sizes, the machine and the command.

    python3 scripts/store_size.py --prepbench target/release/prepbench --out results/store-size/MACHINE

Scratch data and stores go under --work (kept until the last block, then removed: about 30 GB
on a disk of 2 GB/s, where the 4 s stores grow to the byte cap). Needs a quiet machine: the figures of a
busy one compare load, not store sizes.
"""

import argparse
import csv
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BAND = 0.10
STRATEGIES = "concatenated,resized,pixel-centered"
CONDITIONS = [
    # (name, source samples, floor s, what it changes)
    ("base", 300, 1, "300 source images, 1 s epochs"),
    ("sources", 1200, 1, "1,200 source images (4x distinct records), 1 s epochs"),
    ("records", 300, 4, "300 source images, 4 s epochs (about 4x the records a store)"),
]


def sweep(prepbench, work, out, samples, floor, trials):
    """Runs (or resumes, adding trials) one condition's sweep; its stores are kept in $WORK."""
    command = [prepbench, "--quiet", "sweep", "cv", "--strategies", STRATEGIES,
               "--codecs", "none", "--storage", "local,paper-ceph-hdd", "--shards", "16",
               "--threads", "2", "--cache", "cold", "--trials", str(trials),
               "--samples", str(samples), "--min-epoch-s", str(floor),
               "--data-dir", str(work / "data"), "--store-dir", str(work / f"store-{out.name}"),
               "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    seconds = time.perf_counter() - started
    shown = [os.path.relpath(c) if c == prepbench else c.replace(str(work), "$WORK")
             for c in command]
    return shown, seconds


def store_sizes(out):
    """(storage key, strategy) -> records its store held, from the manifest's sizing."""
    sizing = json.loads((out / "manifest.json").read_text()).get("sizing", {})
    return {(key, name.split("/")[0]): records
            for key, entry in sizing.items() for name, records in entry["stores"].items()}


def compare(prepbench, a, b):
    done = subprocess.run([prepbench, "--quiet", "compare", str(a), str(b), "--csv"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare {a} {b} failed:\n{done.stderr[-3000:]}")
    return done.stdout, list(csv.DictReader(io.StringIO(done.stdout)))


def judge(row):
    lo, hi = float(row["ci95_lo"]), float(row["ci95_hi"])
    if 1 - BAND <= lo and hi <= 1 + BAND:
        return "holds"
    if hi < 1 - BAND or lo > 1 + BAND:
        return "moves"
    return "unsettled"


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepbench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=tempfile.gettempdir())
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--blocks", type=int, default=3,
                    help="the trials are run in this many interleaved blocks")
    args = ap.parse_args()
    prepbench = os.path.abspath(args.prepbench)
    out = Path(args.out)
    if out.exists():
        sys.exit(f"{out} exists: give a new folder (the sweeps would resume into it)")
    out.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="prepbench-store-size-", dir=args.work))
    before = load_average()
    commands, seconds, judged, sizes = {}, {}, {}, {}
    try:
        # The conditions' trials interleaved, in blocks, each block in another order: a host
        # whose speed drifts by 10 % over minutes (this VM's did) would otherwise set the
        # ratios.
        for block in range(args.blocks):
            trials = (block + 1) * args.trials // args.blocks
            turn = block % len(CONDITIONS)
            for name, samples, floor, _ in CONDITIONS[turn:] + CONDITIONS[:turn]:
                command, spent = sweep(prepbench, work, out / name, samples, floor, trials)
                commands[name] = command
                seconds[name] = seconds.get(name, 0) + spent
                print(f"block {block + 1}: {name} to {trials} trials, {spent:.0f} s", flush=True)
        for name, *_ in CONDITIONS:
            sizes[name] = store_sizes(out / name)
        for name, *_ in CONDITIONS[1:]:
            text, rows = compare(prepbench, out / "base", out / name)
            (out / f"compare-base-{name}.csv").write_text(text)
            judged[name] = rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_readme(out, args, commands, seconds, judged, sizes, before)
    print((out / "README.md").read_text())


def write_readme(out, args, commands, seconds, judged, sizes, before):
    lines = ["# Store size and the figures", "",
             f"Made by `python3 scripts/store_size.py --prepbench {args.prepbench} --out "
             f"{args.out} --trials {args.trials} --blocks {args.blocks}` on {platform.node()} ({platform.release()}, "
             f"{os.cpu_count()} CPUs), {time.strftime('%Y-%m-%d')}; load average before "
             f"{before}, after {load_average()}.", "",
             "| condition | what | sweep s |", "|---|---|---|"]
    described = {name: what for name, _, _, what in CONDITIONS}
    lines += [f"| {name} | {described[name]} | {seconds[name]:.0f} |" for name in commands]
    lines += ["", "Records a store held (the manifest's sizing; `cv` is the local disk):", "",
              "| storage | strategy | " + " | ".join(n for n, *_ in CONDITIONS) + " |",
              "|---|---|" + "---|" * len(CONDITIONS)]
    for key, strategy in sorted(sizes["base"]):
        cells = [str(sizes[n].get((key, strategy), "-")) for n, *_ in CONDITIONS]
        lines.append(f"| {key} | {strategy} | " + " | ".join(cells) + " |")
    counts = {}
    for name, rows in judged.items():
        lines += ["", f"## base against {name} ({described[name]})", "",
                  "| storage | strategy | epoch | base samples/s | "
                  f"{name} samples/s | ratio | 95 % CI | within +-{BAND:.0%} |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            verdict = judge(r)
            counts[(name, verdict)] = counts.get((name, verdict), 0) + 1
            lines.append(
                f"| {r['storage']} | {r['strategy']} | {r['cache']} | "
                f"{float(r['a_samples_per_s']):.0f} | {float(r['b_samples_per_s']):.0f} | "
                f"{float(r['ratio']):.3f} | [{float(r['ci95_lo']):.3f}, "
                f"{float(r['ci95_hi']):.3f}] | {verdict} |")
    lines += ["", "Verdicts: " + "; ".join(
        f"{name}: " + ", ".join(f"{counts.get((name, v), 0)} {v}"
                                for v in ("holds", "unsettled", "moves"))
        for name in judged) + ".", "",
        "A pair holds when its interval lies within the band, moves when it lies wholly "
        "outside, and is unsettled otherwise: the interval is as wide as the trials vary on "
        "the host (each run's foreign load and steal are in its runs.csv).", "",
        "Commands:", ""]
    steps = ", ".join(str((b + 1) * args.trials // args.blocks) for b in range(args.blocks))
    lines += [f"- {name}: `{' '.join(command)}` (run {args.blocks} times, with `--trials` "
              f"{steps})" for name, command in commands.items()]
    (out / "README.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
