#!/usr/bin/env python3
"""The tf-data loader's peer: the paper's CV pipeline written bare in tf.data, as the paper's
code wrote it, over the same input that `prepbench run cv --loader tf-data` reads, so that the
two measure the same thing and their ratio is prepbench's overhead.

With --data (the `unprocessed` strategy): the JPEG files' paths sliced into a dataset, one
`map` with `num_parallel_calls` = --threads (read, `tf.io.decode_jpeg`, the shorter side resized
to 256 by `tf.image.resize` without antialias and cast to uint8, pixel centring to [-1, 1], a
224x224 random crop). With --store (a prepbench store of `resized`): `TFRecordDataset` over its
shards with `num_parallel_reads` = --threads, each record parsed here in TensorFlow ops (this
script's own reading of prepbench's record layout: "PBS1", field count, id, then per field a
16-byte header, its dims, its name and its data, each padded to 8 bytes) into what a training
step takes, the image and its label, then pixel centring and the crop in one `map`. Then `prefetch(AUTOTUNE)`, iterated once from a fresh iterator with
the clock running from `iter()` to the last sample. With --audio (MP3 `unprocessed`): the
paper's MP3 chain, tensorflow-io's `decode_mp3`, mono, int16, `tf.signal.stft` (960, 480,
1024), magnitude, an 80-band mel matrix at 48 kHz, log. The input is in the page cache (read once
before the first epoch). One line per epoch on stdout: `trial epoch samples seconds
samples_per_s`.

    python3 scripts/peers/tfdata_bare.py --data DATA/imagenet-seed0/train --threads 2
    python3 scripts/peers/tfdata_bare.py --store STORES/cv/resized/none-... --threads 2
    python3 scripts/peers/tfdata_bare.py --audio DATA/commonvoice-seed0/clips --threads 2
"""

import argparse
import json
import os
import struct
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402


_DTYPES = {1: tf.uint8, 2: tf.uint16, 3: tf.int16, 4: tf.int32, 5: tf.float32, 6: tf.float64}


def warm(paths):
    """Reads every file once, so that epochs start warm, as the loader's warm epochs do."""
    for p in paths:
        Path(p).read_bytes()


def image_parser(first):
    """A function of a record giving its uint8 image field and its label (the first scalar
    tensor, when there is one), in TensorFlow ops, for records laid out as `first` (bytes of one
    record): the fields' positions and ranks read here once; their offsets in each record
    walked in TensorFlow ops, since earlier fields' lengths vary."""
    if first[:4] != b"PBS1":
        raise SystemExit("not a prepbench record")
    count = struct.unpack_from("<I", first, 4)[0]
    offset, fields = 16, []
    for _ in range(count):
        kind, dtype, ndim, name_len = first[offset:offset + 4]
        length = struct.unpack_from("<Q", first, offset + 8)[0]
        start = offset + 16 + 8 * ndim
        fields.append((first[start:start + name_len].decode(), kind, dtype, ndim, name_len))
        offset = start + (name_len + 7) // 8 * 8 + (length + 7) // 8 * 8
    images = [i for i, f in enumerate(fields) if f[1] == 1 and f[3] == 3]
    if not images:
        raise SystemExit(f"no [h, w, c] tensor among the fields {[f[0] for f in fields]}")
    target = images[0]
    labels = [i for i, f in enumerate(fields) if f[1] == 1 and f[3] == 0]
    wanted = {target, *labels[:1]}

    def parse(record):
        at = tf.constant(16, tf.int64)
        got = {}
        for index, (_, kind, dtype, ndim, name_len) in enumerate(fields):
            if index > max(wanted):
                break
            words = tf.io.decode_raw(tf.strings.substr(record, at, 16 + 8 * ndim), tf.int64)
            data_at = at + 16 + 8 * ndim + (name_len + 7) // 8 * 8
            if index in wanted:
                data = tf.io.decode_raw(tf.strings.substr(record, data_at, words[1]),
                                        _DTYPES[dtype])
                got[index] = tf.reshape(data, words[2:5]) if index == target else data[0]
            at = data_at + (words[1] + 7) // 8 * 8
        return got[target], got.get(labels[0] if labels else -1, tf.constant(-1))

    return parse


def centre_and_crop(image):
    image = tf.cast(image, tf.float32) / 127.5 - 1.0
    return tf.image.random_crop(image, [224, 224, 3])


def from_store(path, threads):
    """The store's dataset: TFRecordDataset over its shards, parsed and processed in one map,
    (image, label) pairs."""
    with open(os.path.join(path, "store.json")) as f:
        manifest = json.load(f)
    codec = str(manifest.get("codec", "none")).split(":")[0]
    compression = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}[codec]
    files = [os.path.join(path, shard["file"]) for shard in manifest["shards"]]
    warm(files)
    first = next(iter(tf.data.TFRecordDataset(files[:1], compression))).numpy()
    parse = image_parser(first)
    return lambda: (tf.data.TFRecordDataset(files, compression, num_parallel_reads=threads)
                    .map(lambda r: (lambda image, label: (centre_and_crop(image), label))(
                        *parse(r)), num_parallel_calls=threads)
                    .prefetch(tf.data.AUTOTUNE))


def from_files(args):
    """The files' dataset: their paths sliced, read and processed in one map."""
    paths = sorted(str(p) for p in Path(args.data).glob(args.glob))
    if args.samples:
        paths = paths[:args.samples]
    warm(paths)

    def sample(path):
        image = tf.io.decode_jpeg(
            tf.io.read_file(path), channels=3, dct_method="INTEGER_ACCURATE"
        )
        shape = tf.shape(image)
        h, w = shape[0], shape[1]
        nh = tf.where(h <= w, 256, tf.maximum(h * 256 // w, 1))
        nw = tf.where(h <= w, tf.maximum(w * 256 // h, 1), 256)
        image = tf.cast(tf.image.resize(image, tf.stack([nh, nw]), antialias=False), tf.uint8)
        return centre_and_crop(image)

    return lambda: (tf.data.Dataset.from_tensor_slices(paths)
                    .map(sample, num_parallel_calls=args.threads)
                    .prefetch(tf.data.AUTOTUNE))


def from_mp3s(args):
    """The MP3 files' dataset: their paths sliced, read, decoded and made log-mel in one map."""
    import tensorflow_io as tfio

    paths = sorted(str(p) for p in Path(args.audio).glob("*.mp3"))
    if args.samples:
        paths = paths[:args.samples]
    warm(paths)
    mel = tf.signal.linear_to_mel_weight_matrix(80, 513, 48000, 125.0, 3800.0)

    def sample(path):
        pcm = tf.reduce_mean(tfio.audio.decode_mp3(tf.io.read_file(path)), axis=1)
        pcm = tf.cast(tf.clip_by_value(tf.round(pcm * 32768.0), -32768.0, 32767.0), tf.int16)
        spectrum = tf.signal.stft(tf.cast(pcm, tf.float32) / 32768.0, 960, 480, 1024)
        return tf.math.log(tf.matmul(tf.abs(spectrum), mel) + 1e-8)

    return lambda: (tf.data.Dataset.from_tensor_slices(paths)
                    .map(sample, num_parallel_calls=args.threads)
                    .prefetch(tf.data.AUTOTUNE))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--data", help="a folder of JPEG files (the unprocessed strategy)")
    given.add_argument("--store", help="a prepbench store of the resized strategy")
    given.add_argument("--audio", help="a folder of MP3 files (MP3's unprocessed strategy)")
    parser.add_argument("--glob", default="**/*.JPEG")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=0)
    parser.add_argument("--no-autotune", action="store_true",
                        help="tf.data's autotuning off (as `--loader-options autotune=false`)")
    parser.add_argument("--first-trial", type=int, default=0,
                        help="the number of the first trial printed (trials interleaved with "
                             "another program's, one process each)")
    args = parser.parse_args()
    if args.store:
        make = from_store(args.store, args.threads)
    elif args.audio:
        make = from_mp3s(args)
    else:
        make = from_files(args)
    for trial in range(args.trials):
        for epoch in range(args.epochs):
            data = make()
            if args.no_autotune:
                options = tf.data.Options()
                options.autotune.enabled = False
                data = data.with_options(options)
            started = time.perf_counter()
            samples = 0
            for _ in data:
                samples += 1
            seconds = time.perf_counter() - started
            print(f"{args.first_trial + trial} {epoch} {samples} {seconds:.6f} {samples / seconds:.3f}", flush=True)


if __name__ == "__main__":
    main()
