#!/usr/bin/env python3
"""PyTorch's DataLoader on the paper's CV pipeline, bare, at several `num_workers`: the loader a
PyTorch user trains with, on the same JPEG files prepbench reads, with the steps written as a
PyTorch user would write them (torchvision.io.decode_jpeg, torchvision's bilinear resize of the
shorter side to 256 without antialias, x / 127.5 - 1, a random 224x224 crop).

Strategies: `unprocessed` (every step online, from the JPEG files) and `resized` (decode and
resize done once, stored as one .npy file per sample; centre and crop online). Protocol, per
trial and worker count (worker counts in a seeded random order per trial): a DataLoader with
persistent workers is started and warmed on a few batches (which also give a rough rate); the
files of the cold epoch (the first ones, as many as last about 2.5 x `--min-epoch-s` at the warm-up's rate) are
evicted from the page cache (`drop_caches` as root, else per-file fadvise) and one pass over
them is timed (`cold`); then passes repeat over the now-cached files until the epoch lasts
`--min-epoch-s` (`warm`). The consumer touches every batch, as a training loop does. One row per
epoch in runs.csv; summary.md gives the median and a 95 % interval (t, on log throughput) per
cell and the speedup over one worker.

    python3 scripts/peers/torch_workers.py --data data/imagenet-seed0 --out OUT \
        --workers 1,2,4,8,16 --trials 3
"""

import argparse
import csv
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from torch.utils.data import DataLoader, Dataset, Sampler
from torchvision.io import decode_jpeg
from torchvision.transforms import functional as F

SHORTER, CROP = 256, 224
# Two-sided 97.5 % quantiles of Student's t for 1..10 degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]


def resize_shorter(img):
    """uint8 CHW -> the shorter side at SHORTER, bilinear, no antialias (the paper's tf.image.resize)."""
    h, w = img.shape[-2:]
    if h <= w:
        size = [SHORTER, max(1, round(w * SHORTER / h))]
    else:
        size = [max(1, round(h * SHORTER / w)), SHORTER]
    return F.resize(img, size, interpolation=F.InterpolationMode.BILINEAR, antialias=False)


def center_and_crop(img, index):
    x = img.float() / 127.5 - 1.0
    g = torch.Generator().manual_seed(index)
    h, w = x.shape[-2:]
    top = int(torch.randint(0, h - CROP + 1, (1,), generator=g))
    left = int(torch.randint(0, w - CROP + 1, (1,), generator=g))
    return x[:, top:top + CROP, left:left + CROP]


def decode(path):
    with open(path, "rb") as f:
        data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
    return decode_jpeg(data, mode=torchvision.io.ImageReadMode.RGB)


class Samples(Dataset):
    """One sample per file: the JPEG (`unprocessed`) or its stored resized array (`resized`)."""

    def __init__(self, strategy, paths):
        self.strategy, self.paths = strategy, paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        path = self.paths[index]
        if self.strategy == "unprocessed":
            img = resize_shorter(decode(path))
        else:
            img = torch.from_numpy(np.load(path))
        return center_and_crop(img, index)


class Plan(Sampler):
    """The indices of the next epoch, set before each; read once per epoch in the main process."""

    def __init__(self):
        self.indices = []

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)


def evict(paths):
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "drop_caches"
    except OSError:
        for p in paths:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        return "fadvise"


def materialize_resized(paths, folder, workers):
    """Decode and resize once, one .npy per sample (the `resized` strategy's store)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = [folder / f"{i:06d}.npy" for i in range(len(paths))]
    if all(p.exists() for p in out):
        return out, 0.0

    class Offline(Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, i):
            np.save(out[i], resize_shorter(decode(paths[i])).numpy())
            return i

    start = time.perf_counter()
    for _ in DataLoader(Offline(), batch_size=None, num_workers=workers):
        pass
    return out, time.perf_counter() - start


def epoch(loader, plan, indices):
    plan.indices = indices
    start = time.perf_counter()
    n = 0
    for batch in loader:
        batch.view(-1)[0].item()
        n += batch.shape[0] if batch.dim() == 4 else 1
    return n, time.perf_counter() - start


def warm_up(loader, plan, n_files, batch, workers):
    """Starts the workers and returns a rough warm rate, samples/s, from the batches after the
    first (which waits for every worker to start)."""
    plan.indices = [i % n_files for i in range(2 * batch * max(2, workers))]
    first, n = None, 0
    for b in loader:
        b.view(-1)[0].item()
        if first is None:
            first = time.perf_counter()
        else:
            n += b.shape[0]
    return n / max(time.perf_counter() - first, 1e-6)


def interval(values):
    logs = [math.log(v) for v in values]
    if len(logs) < 2:
        return None
    m, sd = statistics.mean(logs), statistics.stdev(logs)
    half = T975[min(len(logs) - 2, len(T975) - 1)] * sd / math.sqrt(len(logs))
    return math.exp(m - half), math.exp(m + half)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a folder of JPEG files (searched recursively)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", help="where the `resized` arrays go (default: OUT/../torch-work)")
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--strategies", default="unprocessed,resized")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--prefetch-factor", type=int, default=2)
    parser.add_argument("--min-epoch-s", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.set_num_threads(1)
    paths = sorted(p for p in Path(args.data).rglob("*") if p.suffix.lower() in (".jpeg", ".jpg"))
    if not paths:
        sys.exit(f"{args.data}: no JPEG files")
    workers = [int(w) for w in args.workers.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work) if args.work else out.parent / "torch-work"
    files = {}
    for strategy in args.strategies.split(","):
        if strategy == "unprocessed":
            files[strategy] = paths
        elif strategy == "resized":
            files[strategy], offline_s = materialize_resized(paths, work / "resized", max(workers))
            print(f"resized: {len(paths)} arrays in {offline_s:.1f} s", flush=True)
        else:
            sys.exit(f"unknown strategy {strategy}: unprocessed or resized")

    rng = random.Random(args.seed)
    rows = []
    with open(out / "runs.csv", "w", newline="") as f:
        table = csv.writer(f)
        table.writerow(["loader", "strategy", "workers", "batch_size", "prefetch_factor", "trial",
                        "cache", "evict_method", "passes", "samples", "epoch_s", "throughput_sps"])
        for trial in range(args.trials):
            order = [(s, w) for s in files for w in workers]
            rng.shuffle(order)
            for strategy, w in order:
                plan = Plan()
                loader = DataLoader(Samples(strategy, files[strategy]), sampler=plan,
                                    batch_size=args.batch_size, num_workers=w,
                                    persistent_workers=True, prefetch_factor=args.prefetch_factor)
                rate = warm_up(loader, plan, len(files[strategy]), args.batch_size, w)
                # A cold pass over as many files as last about 2.5 x the floor at the warm-up's rate (all of them at
                # most), each sample read once; the warm epoch repeats passes over them.
                n_files = min(len(files[strategy]),
                              max(args.batch_size, math.ceil(2.5 * args.min_epoch_s * rate)))
                method = evict(files[strategy][:n_files])
                n, s = epoch(loader, plan, list(range(n_files)))
                row = ["torch", strategy, w, args.batch_size, args.prefetch_factor, trial, "cold",
                       method, 1, n, round(s, 6), round(n / s, 3)]
                table.writerow(row)
                rows.append(row)
                passes = max(1, math.ceil(args.min_epoch_s * 1.5 * max(rate, n / s) / n_files))
                n, s = epoch(loader, plan, list(range(n_files)) * passes)
                row = ["torch", strategy, w, args.batch_size, args.prefetch_factor, trial, "warm",
                       "none", passes, n, round(s, 6), round(n / s, 3)]
                table.writerow(row)
                rows.append(row)
                f.flush()
                print(f"trial {trial} {strategy:12} {w:2} workers: cold {rows[-2][-1]:8.1f} "
                      f"warm {rows[-1][-1]:8.1f} samples/s", flush=True)
                del loader

    lines = ["# PyTorch DataLoader, CV pipeline, num_workers scaling",
             "",
             f"torch {torch.__version__}, torchvision {torchvision.__version__}, {os.cpu_count()} "
             f"CPUs, {len(paths)} files from {args.data}, batch {args.batch_size}, "
             f"prefetch_factor {args.prefetch_factor}, {args.trials} trials; median samples/s "
             "[95 % CI on log throughput]; epochs under 1 s marked *.",
             "",
             "| strategy | cache | workers | samples/s [95 % CI] | epoch s (median) | x 1 worker |",
             "|---|---|---|---|---|---|"]
    for strategy in files:
        for cache in ("cold", "warm"):
            base = None
            for w in workers:
                cell = [r for r in rows if r[1] == strategy and r[2] == w and r[6] == cache]
                sps = [r[-1] for r in cell]
                med = statistics.median(sps)
                base = base or med
                ci = interval(sps)
                ci_text = f" [{ci[0]:.0f}, {ci[1]:.0f}]" if ci else ""
                epoch_s = statistics.median(r[-2] for r in cell)
                short = "*" if epoch_s < 1.0 else ""
                lines.append(f"| {strategy} | {cache} | {w} | {med:.0f}{ci_text} | "
                             f"{epoch_s:.2f}{short} | {med / base:.2f} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
