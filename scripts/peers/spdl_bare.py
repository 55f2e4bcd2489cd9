#!/usr/bin/env python3
"""SPDL beside the torch loader: the same files and the same Python steps as
`scripts/peers/torch_bare.py`, in an SPDL pipeline (threads, not processes: SPDL's bet is that
decoding and resizing release the GIL), under the same protocol, so that its figures sit beside
the DataLoader's and prepbench's in one run.

Per epoch: a fresh pipeline (source: the files in order; one stage reading each file and
running the steps with `concurrency` = --workers; batches of --batch; default collation into a
dict of stacked arrays), built with --workers threads and iterated once, the clock running
from the pipeline's start to its last batch. The files are in the page cache (read once before
the first epoch). `--decode spdl` decodes and resizes with SPDL's own FFmpeg-based
`spdl.io.load_image` (the shorter side to 256, bilinear) instead of the module's first two
steps, as an SPDL user would. One line per epoch on stdout:
`trial epoch samples seconds samples_per_s`.

    python3 scripts/peers/spdl_bare.py --data PHOTOS --module examples/my-photos/my_pipeline.py \
        --steps decode,resize,normalize,random_crop --workers 2 --trials 3 --epochs 3
"""

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np


def load(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


#: FFmpeg's scale filter: the shorter side to 256, the other kept in proportion, bilinear.
SHORTER_256 = ("scale=w='if(lte(iw,ih),256,-2)':h='if(lte(iw,ih),-2,256)':flags=bilinear,"
               "format=rgb24")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--glob", default="**/*.JPEG")
    parser.add_argument("--module", required=True)
    parser.add_argument("--steps", required=True)
    parser.add_argument("--decode", choices=["module", "spdl"], default="module")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=0)
    args = parser.parse_args()
    import spdl.io
    from spdl.pipeline import PipelineBuilder

    module = load(args.module)
    steps = [getattr(module, name) for name in args.steps.split(",")]
    if args.decode == "spdl":
        steps = steps[2:]  # decode and resize are SPDL's
    paths = sorted(Path(args.data).glob(args.glob))
    if args.samples:
        paths = paths[:args.samples]
    classes = sorted({p.parent.name for p in paths})
    labels = [classes.index(p.parent.name) for p in paths]
    for p in paths:  # warm: in the page cache, as the torch loader's warm epochs are
        p.read_bytes()
    items = list(zip([str(p) for p in paths], labels))

    def sample(item):
        path, label = item
        if args.decode == "spdl":
            data = spdl.io.to_numpy(spdl.io.load_image(path, filter_desc=SHORTER_256))
        else:
            with open(path, "rb") as f:
                data = f.read()
        for step in steps:
            data = step(data)
        return {"data": np.asarray(data), "label": np.int32(label)}

    def collate(batch):
        return {key: np.stack([s[key] for s in batch]) for key in batch[0]}

    # SPDL's pipeline logs a stage's exception and drops the item: one sample first, untimed,
    # so that a step or a decoder that cannot run (SPDL without its FFmpeg libraries) stops
    # here with its own error, and an epoch short of samples fails below.
    if items:
        sample(items[0])

    for trial in range(args.trials):
        for epoch in range(args.epochs):
            pipeline = (
                PipelineBuilder()
                .add_source(items)
                .pipe(sample, concurrency=args.workers, output_order="input")
                .aggregate(args.batch)
                .pipe(collate)
                .add_sink(3)
                .build(num_threads=args.workers)
            )
            started = time.perf_counter()
            samples = 0
            with pipeline.auto_stop():
                for batch in pipeline:
                    samples += len(batch["label"])
            seconds = time.perf_counter() - started
            if samples != len(items):
                sys.exit(f"spdl_bare.py: trial {trial} epoch {epoch} delivered {samples} of "
                         f"{len(items)} samples (the pipeline dropped the rest: its log says why)")
            print(f"{trial} {epoch} {samples} {seconds:.6f} {samples / seconds:.3f}", flush=True)


if __name__ == "__main__":
    main()
