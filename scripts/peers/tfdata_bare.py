#!/usr/bin/env python3
"""The tf-data loader's peer: the paper's CV pipeline written bare in tf.data, as the paper's
code wrote it, over the same JPEG files that `prepbench run cv --loader tf-data --strategy
unprocessed` reads, so that the two measure the same thing and their ratio is prepbench's
overhead.

Per epoch: the files' paths sliced into a dataset, one `map` with `num_parallel_calls` =
--threads (read, `tf.io.decode_jpeg`, the shorter side resized to 256 by `tf.image.resize`
without antialias and cast to uint8, pixel centring to [-1, 1], a 224x224 random crop), then
`prefetch(AUTOTUNE)`, iterated once from a fresh iterator with the clock running from `iter()`
to the last sample; the files are in the page cache (read once before the first epoch). One
line per epoch on stdout: `trial epoch samples seconds samples_per_s`.

    python3 scripts/peers/tfdata_bare.py --data DATA/imagenet-seed0/train --threads 2
"""

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--glob", default="**/*.JPEG")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=0)
    args = parser.parse_args()
    paths = sorted(str(p) for p in Path(args.data).glob(args.glob))
    if args.samples:
        paths = paths[:args.samples]
    for p in paths:  # warm, as the loader's warm epochs are
        Path(p).read_bytes()

    def sample(path):
        image = tf.io.decode_jpeg(
            tf.io.read_file(path), channels=3, dct_method="INTEGER_ACCURATE"
        )
        shape = tf.shape(image)
        h, w = shape[0], shape[1]
        nh = tf.where(h <= w, 256, tf.maximum(h * 256 // w, 1))
        nw = tf.where(h <= w, tf.maximum(w * 256 // h, 1), 256)
        image = tf.cast(tf.image.resize(image, tf.stack([nh, nw]), antialias=False), tf.uint8)
        image = tf.cast(image, tf.float32) / 127.5 - 1.0
        return tf.image.random_crop(image, [224, 224, 3])

    for trial in range(args.trials):
        for epoch in range(args.epochs):
            data = (tf.data.Dataset.from_tensor_slices(paths)
                    .map(sample, num_parallel_calls=args.threads)
                    .prefetch(tf.data.AUTOTUNE))
            started = time.perf_counter()
            samples = 0
            for _ in data:
                samples += 1
            seconds = time.perf_counter() - started
            print(f"{trial} {epoch} {samples} {seconds:.6f} {samples / seconds:.3f}", flush=True)


if __name__ == "__main__":
    main()
