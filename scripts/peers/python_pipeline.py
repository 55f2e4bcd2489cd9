#!/usr/bin/env python3
"""A team's Python pipeline two ways, on the same files and worker counts: in a DataLoader-style
pool of worker processes (each runs the whole pipeline on a sample, the main process collects
the arrays; a fresh pool per trial, spawned with a memory layout drawn at random and warmed
before its timed epoch, as prepbench draws one per Python worker), and as prepbench's
fully-online strategy (`unprocessed`) with the same functions as `op: python` steps. Both read
cold: every file is evicted from the page cache (posix_fadvise DONTNEED) before each epoch, as
prepbench's `--evict fadvise` does.

Standard library plus NumPy and Pillow, run by the interpreter that has them:

    .venv/bin/python scripts/peers/python_pipeline.py --prepbench target/release/prepbench \
        --out results/peers/python-pipeline/MACHINE

It generates an ImageNet-like dataset with prepbench, scales each photo to `--megapixels`
(0.5 by default; 0 keeps the generated sizes) and lays them out as an ImageFolder, writes the
pipeline module and workload of docs/your-own-pipeline.md next to it, and measures, for each
worker count, `--trials` epochs of each loader, alternating which goes first. Writes runs.csv
(one row per epoch), stages.csv (prepbench's per-stage split: each Python step's own time, inside
its callable and, for the random crop, seeding the generators before it; and the transfer of each
chain of Python steps to and from its worker, on the chain's first step) and summary.md (the
ratios, with 95 % intervals, and the transfer as a share of the steps' own time).
"""

import argparse
import contextlib
import csv
import math
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reading import evict  # noqa: E402 - the peers' eviction, shared

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "your-own-pipeline.md"


def block(marker):
    text = GUIDE.read_text()
    start = text.index(f"<!-- guide:{marker} -->")
    fence = text.index("```", start)
    body = text.index("\n", fence) + 1
    return text[body:text.index("\n```", body) + 1]


_PIPELINE = None


def _init(module_dir):
    global _PIPELINE
    sys.path.insert(0, module_dir)
    import my_pipeline  # noqa: PLC0415 - the user's module, imported in each worker

    _PIPELINE = my_pipeline


def _load(task):
    """One sample through the whole pipeline, as a DataLoader worker's __getitem__ would."""
    import random

    index, path = task
    random.seed(index)
    p = _PIPELINE
    with open(path, "rb") as f:
        data = f.read()
    return p.random_crop(p.normalize(p.resize(p.decode(data))))


WARM_UP = 25  # samples per worker before a pool's timed epoch


@contextlib.contextmanager
def layout_pool(workers, work, warm):
    """A fresh pool of started, warm workers with a memory layout drawn at random.

    Native code (Pillow's JPEG decode among it) runs at very different speeds from one memory
    layout to another, and a process's layout follows from the size of its environment, so a
    pool forked from this script would carry one layout into every trial. Each trial's pool is
    spawned with an environment variable of random length instead, as prepbench gives each of
    its Python workers (`PREPBENCH_LAYOUT_PAD`): both loaders sample layouts, trial by trial."""
    os.environ["PREPBENCH_LAYOUT_PAD"] = "x" * (16 * random.randrange(256))
    try:
        with mp.get_context("spawn").Pool(workers, initializer=_init, initargs=(str(work),)) as pool:
            # Started, and warm: a spawned worker's first samples run slower (imports finishing,
            # its heap growing), which the pool forked from a warm parent never pays.
            pool.map(_load, [(i, warm[i % len(warm)]) for i in range(WARM_UP * workers)], chunksize=1)
            yield pool
    finally:
        del os.environ["PREPBENCH_LAYOUT_PAD"]


def dataloader_epoch(pool, files):
    """Samples/s of one epoch through a persistent pool (arrays pickled back to the main
    process, as a DataLoader's workers send NumPy arrays)."""
    evict(files)
    start = time.perf_counter()
    count = 0
    for array in pool.imap_unordered(_load, list(enumerate(files)), chunksize=1):
        count += 1
        assert array.shape == (224, 224, 3)
    return count / (time.perf_counter() - start)


def t_quantile(n):
    # two-sided 95 %, n - 1 degrees of freedom (small n)
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
    return table.get(n - 1, 1.96)


def ratio_ci(a, b):
    """Ratio of means of b over a with a 95 % interval (delta method on the log ratio)."""
    ma, mb = statistics.mean(a), statistics.mean(b)
    va = statistics.variance(a) / len(a) / ma**2 if len(a) > 1 else 0.0
    vb = statistics.variance(b) / len(b) / mb**2 if len(b) > 1 else 0.0
    half = t_quantile(min(len(a), len(b))) * math.sqrt(va + vb)
    r = mb / ma
    return r, r * math.exp(-half), r * math.exp(half)


def later_strategies(args, work, out, rows):
    """What the later splits gain on the same pipeline: every strategy of the workload, cold,
    `--strategy-epochs` epochs at `--strategy-threads` threads, against the DataLoader-style
    pool at that worker count (when it was measured)."""
    results = work / "results-strategies"
    subprocess.run([
        args.prepbench, "--python", sys.executable, "run", str(work / "my-photos.yaml"),
        "--threads", str(args.strategy_threads), "--epochs", str(args.strategy_epochs),
        "--evict", "fadvise", "--data-dir", str(work), "--store-dir", str(work / "store"),
        "--out", str(results), "--quiet",
    ], check=True)
    shutil.copy(results / "runs.csv", out / "strategies.csv")
    with open(results / "runs.csv") as f:
        runs = list(csv.DictReader(f))
    pool = [r["samples_per_s"] for r in rows
            if r["workers"] == args.strategy_threads and r["loader"] == "dataloader"]
    lines = [f"Every split at {args.strategy_threads} threads, cold, {args.strategy_epochs} epochs "
             "each (strategies.csv):", "",
             "| strategy | samples/s | / DataLoader-style [95 % CI] | stored MB | offline s |",
             "|---|---|---|---|---|"]
    for strategy in dict.fromkeys(r["strategy"] for r in runs):
        mine = [r for r in runs if r["strategy"] == strategy]
        sps = [float(r["throughput_sps"]) for r in mine]
        ratio = "not measured"
        if pool:
            r, lo, hi = ratio_ci(pool, sps)
            ratio = f"{r:.2f} [{lo:.2f}, {hi:.2f}]"
        lines.append(f"| {strategy} | {statistics.mean(sps):.1f} | {ratio} "
                     f"| {int(mine[0]['storage_bytes']) / 1e6:.1f} | {float(mine[0]['offline_s']):.1f} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepbench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--megapixels", type=float, default=0.5)
    ap.add_argument("--strategy-threads", type=int, default=2,
                    help="threads of the sweep over every split (0: skip it)")
    ap.add_argument("--strategy-epochs", type=int, default=3)
    ap.add_argument("--keep", action="store_true",
                    help="keep the working folder (photos, module, workload) and print it")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="prepbench-python-pipeline-"))
    try:
        generated = work / "generated"
        subprocess.run([args.prepbench, "generate", "imagenet", "--samples", str(args.samples),
                        "--out", str(generated), "--quiet"], check=True)
        photos = work / "my-photos"
        files = []
        for src in sorted(generated.rglob("*.JPEG")):
            dst = photos / src.parent.name / src.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if args.megapixels > 0:
                from PIL import Image  # noqa: PLC0415 - only to scale the photos

                with Image.open(src) as image:
                    scale = math.sqrt(args.megapixels * 1e6 / (image.width * image.height))
                    size = (round(image.width * scale), round(image.height * scale))
                    image.convert("RGB").resize(size, Image.LANCZOS).save(dst, quality=90)
            else:
                shutil.copy(src, dst)
            files.append(str(dst))
        (work / "my_pipeline.py").write_text(block("module"))
        workload = block("workload").replace("samples: 200", f"samples: {len(files)}")
        (work / "my-photos.yaml").write_text(workload)
        rows = []
        for workers in [int(w) for w in args.workers.split(",")]:
            for trial in range(args.trials):
                order = ["dataloader", "prepbench"] if trial % 2 == 0 else ["prepbench", "dataloader"]
                for loader in order:
                    if loader == "dataloader":
                        with layout_pool(workers, work, files) as pool:
                            sps = dataloader_epoch(pool, files)
                    else:
                        results = work / f"results-{workers}-{trial}"
                        subprocess.run([
                            args.prepbench, "--python", sys.executable, "run",
                            str(work / "my-photos.yaml"), "--strategy", "unprocessed",
                            "--threads", str(workers), "--epochs", "1", "--evict", "fadvise",
                            "--data-dir", str(work), "--store-dir", str(work / "store"),
                            "--out", str(results), "--quiet",
                        ], check=True)
                        with open(results / "runs.csv") as f:
                            run = next(csv.DictReader(f))
                        sps = float(run["throughput_sps"])
                        with open(results / "stages.csv") as f:
                            for stage in csv.DictReader(f):
                                stage.update(workers=workers, trial=trial)
                                stage["samples"] = run["samples"]
                                with open(out / "stages.csv", "a", newline="") as g:
                                    w = csv.DictWriter(g, fieldnames=list(stage))
                                    if g.tell() == 0:
                                        w.writeheader()
                                    w.writerow(stage)
                    rows.append({"loader": loader, "workers": workers, "trial": trial,
                                 "samples": len(files), "samples_per_s": round(sps, 2)})
                    print(rows[-1], flush=True)
        with open(out / "runs.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        with open(out / "stages.csv") as f:
            stages = list(csv.DictReader(f))
        lines = [f"{len(files)} photos of {args.megapixels or 'generated'} megapixels, "
                 f"{args.trials} epochs per loader and worker count.", "",
                 "| workers | DataLoader-style samples/s | prepbench samples/s | prepbench / DataLoader [95 % CI] "
                 "| in the steps, ms/sample | transfer, ms/sample | transfer / in the steps |",
                 "|---|---|---|---|---|---|---|"]
        for workers in sorted({r["workers"] for r in rows}):
            a = [r["samples_per_s"] for r in rows if r["workers"] == workers and r["loader"] == "dataloader"]
            b = [r["samples_per_s"] for r in rows if r["workers"] == workers and r["loader"] == "prepbench"]
            r, lo, hi = ratio_ci(a, b)
            mine = [s for s in stages if int(s["workers"]) == workers]
            samples = sum(int(s["samples"]) for s in mine if s["stage"] == "step:concatenated")
            inside = sum(float(s["seconds"]) for s in mine
                         if s["stage"].startswith("step:") and s["stage"] != "step:concatenated")
            transfer = sum(float(s["seconds"]) for s in mine if s["stage"].startswith("transfer:"))
            lines.append(f"| {workers} | {statistics.mean(a):.1f} | {statistics.mean(b):.1f} "
                         f"| {r:.2f} [{lo:.2f}, {hi:.2f}] | {1e3 * inside / samples:.2f} "
                         f"| {1e3 * transfer / samples:.3f} | {100 * transfer / inside:.1f} % |")
        if args.strategy_threads:
            lines += ["", *later_strategies(args, work, out, rows)]
        (out / "summary.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
    finally:
        if args.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
