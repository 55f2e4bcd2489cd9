#!/usr/bin/env python3
"""prepbench against the loaders users would pick instead, on the same data and threads.

Installs its peers in scripts/.venv-peers (tensorflow-cpu 2.16, tensorflow-io 0.37, Pillow,
NumPy), builds prepbench if needed, generates the CV dataset once with prepbench, then runs
each strategy on three stacks, alternating them `--repeats` times:

- prepbench: `prepbench run cv --strategy S --cache warm` (throughput_sps of the epoch);
- tf.data: the paper's own stack. `unprocessed` maps read_file -> decode_jpeg -> resize (shorter
  side 256, bilinear, antialiased, rounded back to uint8) -> x / 127.5 - 1 -> random crop
  224x224 over the file list; `resized` reads TFRecord files of serialized uint8 tensors
  (written once, untimed, as PRESTO stored strategies) and maps the last two steps;
- a PyTorch-DataLoader-style Python loader: `multiprocessing.Pool(T).imap` over sample
  indices, Pillow + NumPy in the workers, arrays pickled back to the consumer as DataLoader
  workers do; `resized` reads one .npy per sample (written once, untimed).

Every stack uses T worker threads or processes and consumes every sample (the consumer touches
one value per sample). All files are read warm (read once before the timed runs), so the ratio
is the preprocessing stack's, not the disk's. It writes runs.csv (every run), table.md (medians
and ratios prepbench / peer) and commands.txt under --out, and prints the table.

    python3 scripts/peers/run_peers.py --samples 300 --threads 2 --repeats 5
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PACKAGES = ["tensorflow-cpu==2.16.*", "tensorflow-io==0.37.*", "numpy<2", "pillow"]
STRATEGIES = ["unprocessed", "resized"]
CROP = 224
SHORTER = 256


def in_venv():
    sys.path.insert(0, os.path.dirname(HERE))
    from _venv import enter

    enter(".venv-peers", PACKAGES, __file__)


def prepbench_binary():
    binary = os.path.join(ROOT, "target", "release", "prepbench")
    subprocess.check_call(["cargo", "build", "--release", "-q"], cwd=ROOT)
    return binary


def files_of(data):
    out = []
    for dirpath, _, names in os.walk(os.path.join(data, "train")):
        out.extend(os.path.join(dirpath, n) for n in names if n.endswith(".JPEG"))
    return sorted(out)


# ---------------------------------------------------------------- prepbench


def run_prepbench(binary, work, strategy, args):
    out = subprocess.run(
        [binary, "run", "cv", "--strategy", strategy, "--samples", str(args.samples),
         "--threads", str(args.threads), "--cache", "warm", "--epochs", "1", "--json", "--quiet",
         "--data-dir", os.path.join(work, "data"), "--store-dir", os.path.join(work, "store"),
         "--out", os.path.join(work, "prepbench-out")],
        check=True, capture_output=True, text=True).stdout
    import json

    return json.loads(out.strip().splitlines()[-1])["throughput_sps"]


# ---------------------------------------------------------------- tf.data


def tf_setup(threads):
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    return tf


def tf_resize(tf, image):
    shape = tf.shape(image)
    h, w = tf.cast(shape[0], tf.float32), tf.cast(shape[1], tf.float32)
    scale = SHORTER / tf.minimum(h, w)
    size = tf.cast(tf.round([h * scale, w * scale]), tf.int32)
    resized = tf.image.resize(image, size, method="bilinear", antialias=True)
    return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)


def tf_online_tail(tf, image):
    centred = tf.cast(image, tf.float32) / 127.5 - 1.0
    return tf.image.random_crop(centred, [CROP, CROP, 3])


def tf_options(tf, threads):
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    options.deterministic = False
    return options


def tf_materialize(tf, files, path):
    with tf.io.TFRecordWriter(path) as writer:
        for f in files:
            image = tf_resize(tf, tf.io.decode_jpeg(tf.io.read_file(f), channels=3))
            writer.write(tf.io.serialize_tensor(image).numpy())


def tf_dataset(tf, strategy, files, records, threads):
    if strategy == "unprocessed":
        ds = tf.data.Dataset.from_tensor_slices(files).map(
            lambda f: tf_online_tail(
                tf, tf_resize(tf, tf.io.decode_jpeg(tf.io.read_file(f), channels=3))),
            num_parallel_calls=threads)
    else:
        ds = tf.data.TFRecordDataset(records, num_parallel_reads=threads).map(
            lambda r: tf_online_tail(tf, tf.io.parse_tensor(r, tf.uint8)),
            num_parallel_calls=threads)
    return ds.prefetch(threads * 4).with_options(tf_options(tf, threads))


def run_tf(tf, strategy, files, records, threads):
    ds = tf_dataset(tf, strategy, files, records, threads)
    start = time.perf_counter()
    n = 0
    for sample in ds:
        sample.numpy()[0, 0, 0]
        n += 1
    return n / (time.perf_counter() - start)


# ---------------------------------------------------------------- Python loader


def py_resize(image):
    from PIL import Image

    w, h = image.size
    scale = SHORTER / min(w, h)
    return image.resize((round(w * scale), round(h * scale)), Image.BILINEAR)


def py_tail(array, rng):
    import numpy as np

    centred = array.astype(np.float32) / 127.5 - 1.0
    y = rng.integers(0, centred.shape[0] - CROP + 1)
    x = rng.integers(0, centred.shape[1] - CROP + 1)
    return np.ascontiguousarray(centred[y:y + CROP, x:x + CROP])


def py_item(task):
    """One sample in a worker process, as a DataLoader worker's __getitem__."""
    import numpy as np
    from PIL import Image

    strategy, path, index = task
    rng = np.random.default_rng(index)
    if strategy == "unprocessed":
        with Image.open(path) as image:
            array = np.asarray(py_resize(image.convert("RGB")))
    else:
        array = np.load(path)
    return py_tail(array, rng)


def py_materialize(files, folder):
    import numpy as np
    from PIL import Image

    os.makedirs(folder, exist_ok=True)
    out = []
    for i, f in enumerate(files):
        with Image.open(f) as image:
            path = os.path.join(folder, f"{i:06d}.npy")
            np.save(path, np.asarray(py_resize(image.convert("RGB"))))
            out.append(path)
    return out


def run_py(pool, strategy, paths, threads):
    tasks = [(strategy, p, i) for i, p in enumerate(paths)]
    start = time.perf_counter()
    n = 0
    for sample in pool.imap(py_item, tasks, chunksize=4):
        sample[0, 0, 0]
        n += 1
    return n / (time.perf_counter() - start)


# ---------------------------------------------------------------- reading cold against dd


def evict(paths):
    """Drops the files from the page cache (fdatasync, then POSIX_FADV_DONTNEED)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def shards_of(work, strategy):
    base = os.path.join(work, "store", "cv", strategy)
    out = []
    for dirpath, _, names in os.walk(base):
        out.extend(os.path.join(dirpath, n) for n in names if n.startswith("shard-"))
    return sorted(out)


def dd_mb_s(paths):
    """Sequential read bandwidth of `dd bs=1M` over the files, one after another, cold."""
    evict(paths)
    total = sum(os.path.getsize(p) for p in paths)
    start = time.perf_counter()
    for p in paths:
        subprocess.run(["dd", f"if={p}", "of=/dev/null", "bs=1M"], check=True,
                       capture_output=True)
    return total / (time.perf_counter() - start) / 1e6


def prepbench_cold_mb_s(binary, work, strategy, args):
    """prepbench's cold epoch of a stored strategy as MB/s of its shards."""
    import json

    out = subprocess.run(
        [binary, "run", "cv", "--strategy", strategy, "--samples", str(args.samples),
         "--threads", str(args.threads), "--cache", "cold", "--evict", "fadvise", "--epochs", "1",
         "--json", "--quiet", "--data-dir", os.path.join(work, "data"),
         "--store-dir", os.path.join(work, "store"), "--out", os.path.join(work, "prepbench-out")],
        check=True, capture_output=True, text=True).stdout
    row = json.loads(out.strip().splitlines()[-1])
    return row["storage_bytes"] / row["online_s"] / 1e6


def read_table(binary, work, args):
    """prepbench reading the fully materialized, uncompressed `pixel-centered` shards cold
    (random crop the only online step) against `dd` on the same files, alternating."""
    strategy = "pixel-centered"
    prepbench_cold_mb_s(binary, work, strategy, args)  # materializes
    shards = shards_of(work, strategy)
    ours, dd = [], []
    for _ in range(args.repeats):
        ours.append(prepbench_cold_mb_s(binary, work, strategy, args))
        dd.append(dd_mb_s(shards))
        print(f"read {strategy}: prepbench {ours[-1]:.0f} MB/s, dd {dd[-1]:.0f} MB/s", flush=True)
    p, d = statistics.median(ours), statistics.median(dd)
    return [
        "",
        f"Reading `{strategy}` cold (uncompressed shards, {len(shards)} files, evicted with "
        f"POSIX_FADV_DONTNEED before each run), medians of {args.repeats} alternating runs:",
        "",
        "| reader | MB/s | range |",
        "|---|---|---|",
        f"| prepbench ({args.threads} threads, random crop online) | {p:.0f} | "
        f"{min(ours):.0f}-{max(ours):.0f} |",
        f"| dd bs=1M, one file after another | {d:.0f} | {min(dd):.0f}-{max(dd):.0f} |",
        f"| prepbench / dd | {p / d:.2f}x | |",
    ]


# ---------------------------------------------------------------- main


def warm(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "peers"))
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "peers", "local"))
    args = parser.parse_args()
    import multiprocessing

    import numpy as np
    import PIL

    # Fork the Python loader's workers before TensorFlow starts its threads.
    pool = multiprocessing.get_context("fork").Pool(args.threads)
    binary = prepbench_binary()
    work = os.path.abspath(args.work)
    data = os.path.join(work, "data", "imagenet-seed0")
    subprocess.check_call([binary, "generate", "imagenet", "--samples", str(args.samples),
                           "--out", data, "--quiet"])
    files = files_of(data)[: args.samples]
    tf = tf_setup(args.threads)
    records = os.path.join(work, "tf-resized.tfrecord")
    if not os.path.exists(records):
        tf_materialize(tf, files, records)
    npys = py_materialize(files, os.path.join(work, "py-resized"))
    warm(files + [records] + npys)
    inputs = {"unprocessed": files, "resized": npys}
    runs = []
    with pool:
        for strategy in STRATEGIES:
            run_prepbench(binary, work, strategy, args)  # materializes and warms its store
            for repeat in range(args.repeats):
                for peer in ["prepbench", "tf.data", "python"]:
                    if peer == "prepbench":
                        sps = run_prepbench(binary, work, strategy, args)
                    elif peer == "tf.data":
                        sps = run_tf(tf, strategy, files, [records], args.threads)
                    else:
                        sps = run_py(pool, strategy, inputs[strategy], args.threads)
                    runs.append((strategy, peer, repeat, sps))
                    print(f"{strategy:12} {peer:10} run {repeat}: {sps:8.1f} samples/s", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "runs.csv"), "w") as f:
        f.write("workload,strategy,peer,repeat,threads,samples,throughput_sps\n")
        for strategy, peer, repeat, sps in runs:
            f.write(f"cv,{strategy},{peer},{repeat},{args.threads},{args.samples},{sps:.3f}\n")
    values = {(s, p): [v for s2, p2, _, v in runs if (s2, p2) == (s, p)]
              for s in STRATEGIES for p in ["prepbench", "tf.data", "python"]}
    median = {key: statistics.median(v) for key, v in values.items()}

    def cell(key):
        v = values[key]
        return f"{median[key]:.0f} ({min(v):.0f}-{max(v):.0f})"

    lines = [
        f"CV, {args.samples} samples, {args.threads} threads, warm page cache, medians of "
        f"{args.repeats} alternating runs in samples/s (range in brackets); ratios of medians.",
        "",
        "| strategy | prepbench | tf.data | Python loader | prepbench / tf.data | prepbench / Python |",
        "|---|---|---|---|---|---|",
    ]
    for s in STRATEGIES:
        p, t, y = median[(s, "prepbench")], median[(s, "tf.data")], median[(s, "python")]
        lines.append(f"| {s} | {cell((s, 'prepbench'))} | {cell((s, 'tf.data'))} | "
                     f"{cell((s, 'python'))} | {p / t:.2f}x | {p / y:.2f}x |")
    lines += read_table(binary, work, args)
    lines += [
        "",
        f"tensorflow {tf.__version__}, Pillow {PIL.__version__}, NumPy {np.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} logical cores.",
    ]
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "commands.txt"), "w") as f:
        # As a user types it (the script enters its own virtual environment).
        f.write(" ".join(["python3", "scripts/peers/run_peers.py", *sys.argv[1:]]) + "\n")
    print(table)


if __name__ == "__main__":
    in_venv()
    main()
