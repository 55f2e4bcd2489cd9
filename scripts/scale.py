#!/usr/bin/env python3
"""Scale, shown rather than assumed (issue 25 item 3): how listing, reading and materializing
grow with the number of files. Standard library only; runs prepbench under `/usr/bin/time -v`
for wall time and peak memory (maximum resident set size).

    python3 scripts/scale.py --prepbench target/release/prepbench --out results/reference/scale-MACHINE

Two trees, made in a scratch folder under --work (removed afterwards):
- ImageNet's layout with empty files (`train/<wnid>/<wnid>_<n>.JPEG`, 1000 classes), at each
  `--listing` size (default 10k, 100k and ImageNet's 1,281,167): `prepbench show --list` on
  sample 0 lists the whole tree (sorted, classes interleaved) and reads one file, so its time
  is listing plus a constant start-up; then `run` reads every file once (`unprocessed`, one
  epoch).
- `--small` files of 4 KiB random bytes in an ImageFolder layout, at each `--reading` size
  (default 10k and 100k): `run` reads them (`unprocessed`) and materializes and reads their
  concatenation into shards (`concatenated`), one epoch each.

Writes scale.csv (one row per command) and scale.md (time per file and peak memory per size,
with the commands) into --out.
"""

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOAD = """name: scale
description: read every file (listing, reading and materializing at scale)
dataset:
  kind: files
  options: {{glob: "{glob}", label: parent}}
  samples: {samples}
steps:
  - name: concatenated
    op: read_file
sweep:
  strategies: [unprocessed, concatenated]
"""


def make_imagenet_tree(root, files):
    classes = 1000
    for c in range(classes):
        wnid = f"n{1_000_000 + c * 1_009:08d}"
        folder = root / "train" / wnid
        folder.mkdir(parents=True)
        for n in range(c, files, classes):
            (folder / f"{wnid}_{n // classes}.JPEG").touch()


def make_small_tree(root, files):
    for n in range(files):
        folder = root / f"class{n % 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{n}.bin").write_bytes(os.urandom(4096))


def timed(command):
    """Wall seconds and peak resident MB of one command (its children included)."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    return wall, peak_kb / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepbench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=tempfile.gettempdir())
    ap.add_argument("--listing", default="10000,100000,1281167")
    ap.add_argument("--reading", default="10000,100000")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="prepbench-scale-", dir=args.work))
    rows = []
    try:
        def record(what, files, command):
            wall, peak = timed(command)
            rows.append({"what": what, "files": files, "wall_s": round(wall, 3),
                         "us_per_file": round(1e6 * wall / files, 2), "peak_mb": round(peak, 1),
                         "command": " ".join(command)})
            print(rows[-1], flush=True)

        for files in [int(n) for n in args.listing.split(",")]:
            tree = work / f"imagenet-{files}"
            started = time.perf_counter()
            make_imagenet_tree(tree, files)
            print(f"made {files} empty files in {time.perf_counter() - started:.1f} s", flush=True)
            yaml = work / f"list-{files}.yaml"
            yaml.write_text(WORKLOAD.format(glob="**/*.JPEG", samples=files))
            record("list (show --list)", files,
                   [args.prepbench, "--quiet", "show", str(yaml), "--dataset", str(tree), "--list"])
            record("read empty files (run unprocessed)", files,
                   [args.prepbench, "--quiet", "run", str(yaml), "--dataset", str(tree),
                    "--strategy", "unprocessed", "--epochs", "1", "--threads", str(args.threads),
                    "--store-dir", str(work / "store"), "--out", str(work / f"out-list-{files}")])
            shutil.rmtree(tree)
        for files in [int(n) for n in args.reading.split(",")]:
            tree = work / f"small-{files}"
            make_small_tree(tree, files)
            yaml = work / f"small-{files}.yaml"
            yaml.write_text(WORKLOAD.format(glob="**/*.bin", samples=files))
            for strategy in ("unprocessed", "concatenated"):
                what = ("read 4 KiB files" if strategy == "unprocessed"
                        else "materialize and read their concatenation")
                record(f"{what} (run {strategy})", files,
                       [args.prepbench, "--quiet", "run", str(yaml), "--dataset", str(tree),
                        "--strategy", strategy, "--epochs", "1", "--threads", str(args.threads),
                        "--store-dir", str(work / "store"),
                        "--out", str(work / f"out-small-{files}-{strategy}")])
            shutil.rmtree(tree)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(out / "scale.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["| what | files | wall s | us per file | peak MB |", "|---|---|---|---|---|"]
    lines += [f"| {r['what']} | {r['files']:,} | {r['wall_s']:.2f} | {r['us_per_file']:.1f} "
              f"| {r['peak_mb']:.1f} |" for r in rows]
    (out / "scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
