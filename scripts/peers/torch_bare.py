#!/usr/bin/env python3
"""The torch loader's peer: the same PyTorch DataLoader that `prepbench run --loader torch`
makes, written bare, as a training script would be, over the same files and the same Python
steps (a module's functions, in order, each applied to the field `data`), so that the two
measure the same thing and their ratio is prepbench's overhead.

Per epoch, as the torch loader's: a DataLoader (batch size, num_workers, default collation of
dicts of NumPy arrays, workers not persistent) is iterated once from a fresh iterator, the
clock running from `iter()` to the last batch (with `--persistent`, one DataLoader per trial
whose persistent workers serve its epochs, as `--loader-options persistent=true`); the files are in the page cache (read once
before the first epoch), so the figure is the loader's and the steps' CPU. One line per epoch
on stdout: `trial epoch samples seconds samples_per_s`.

    python3 scripts/peers/torch_bare.py --data PHOTOS --module examples/my-photos/my_pipeline.py \
        --steps decode,resize,normalize,random_crop --workers 8 --trials 3 --epochs 3
"""

import argparse
import importlib.util
import io
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch  # noqa: F401
from torch.utils.data import DataLoader, Dataset


def load(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Files(Dataset):
    """One sample per file: its bytes through the steps, labelled by its folder."""

    def __init__(self, paths, labels, steps):
        self.paths, self.labels, self.steps = paths, labels, steps

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        with open(self.paths[index], "rb") as f:
            data = f.read()
        for step in self.steps:
            data = step(data)
        return {"data": np.asarray(data), "label": np.int32(self.labels[index])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--glob", default="**/*.JPEG")
    parser.add_argument("--module", required=True)
    parser.add_argument("--steps", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=0)
    parser.add_argument("--persistent", action="store_true")
    args = parser.parse_args()
    module = load(args.module)
    steps = [getattr(module, name) for name in args.steps.split(",")]
    paths = sorted(Path(args.data).glob(args.glob))
    if args.samples:
        paths = paths[:args.samples]
    classes = sorted({p.parent.name for p in paths})
    labels = [classes.index(p.parent.name) for p in paths]
    for p in paths:  # warm: in the page cache, as the torch loader's warm epochs are
        p.read_bytes()
    dataset = Files([str(p) for p in paths], labels, steps)
    options = dict(batch_size=args.batch, num_workers=args.workers, shuffle=False)
    if args.persistent:
        options["persistent_workers"] = True
    for trial in range(args.trials):
        kept = DataLoader(dataset, **options) if args.persistent else None
        for epoch in range(args.epochs):
            loader = kept or DataLoader(dataset, **options)
            started = time.perf_counter()
            samples = 0
            for batch in loader:
                samples += len(batch["label"])
            seconds = time.perf_counter() - started
            del loader
            print(f"{trial} {epoch} {samples} {seconds:.6f} {samples / seconds:.3f}", flush=True)
        del kept


if __name__ == "__main__":
    main()
