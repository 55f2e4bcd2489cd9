#!/usr/bin/env python3
"""prepbench against the loaders users would pick instead, on the same data and threads.

Installs its peers in scripts/.venv-peers (tensorflow-cpu 2.16, tensorflow-io 0.37, Pillow,
NumPy), builds prepbench if needed, generates the CV (ImageNet-style JPEG) and CV2-PNG (Cube++
16-bit PNG) datasets once with prepbench, then runs each strategy on three stacks, alternating
them `--repeats` times:

- prepbench: `prepbench run WORKLOAD --strategy S --cache warm` (throughput_sps of the epoch);
- tf.data: the paper's own stack. `unprocessed` maps read_file -> decode (JPEG, or 16-bit PNG
  scaled to uint8) -> resize (shorter
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

    python3 scripts/peers/run_peers.py --samples 1500 --png-samples 48 --threads 2 --repeats 5
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
PEERS = ["prepbench", "tf.data", "python"]
# The image workloads compared: dataset kind, the folder prepbench generates it in, where its
# files are and how they end, and the image format.
WORKLOADS = {
    "cv": dict(kind="imagenet", folder="imagenet-seed0", under="train", ending=".JPEG",
               image="jpeg"),
    "cv2-png": dict(kind="cubepp-png", folder="cubepp-seed0", under="PNG", ending=".png",
                    image="png"),
}
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


def files_of(data, spec):
    out = []
    for dirpath, _, names in os.walk(os.path.join(data, spec["under"])):
        out.extend(os.path.join(dirpath, n) for n in names if n.endswith(spec["ending"]))
    return sorted(out)


# ---------------------------------------------------------------- prepbench


def prepbench_row(binary, work, workload, strategy, samples, threads, cache):
    """One epoch of `prepbench run` as its runs.csv row (JSON)."""
    import json

    command = [binary, "run", workload, "--strategy", strategy, "--samples", str(samples),
               "--threads", str(threads), "--cache", cache, "--epochs", "1", "--json", "--quiet",
               "--data-dir", os.path.join(work, "data"), "--store-dir", os.path.join(work, "store"),
               "--out", os.path.join(work, "prepbench-out")]
    if cache == "cold":
        command += ["--evict", "fadvise"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_prepbench(binary, work, workload, strategy, samples, args):
    return prepbench_row(binary, work, workload, strategy, samples, args.threads,
                         "warm")["throughput_sps"]


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


def tf_decode(tf, data, image):
    """JPEG to RGB uint8; a 16-bit PNG to RGB uint16 scaled to uint8, as prepbench's decode_png
    with to_uint8."""
    if image == "jpeg":
        return tf.io.decode_jpeg(data, channels=3)
    wide = tf.io.decode_png(data, channels=3, dtype=tf.uint16)
    return tf.cast(tf.round(tf.cast(wide, tf.float32) / 257.0), tf.uint8)


def tf_materialize(tf, files, path, image):
    with tf.io.TFRecordWriter(path) as writer:
        for f in files:
            resized = tf_resize(tf, tf_decode(tf, tf.io.read_file(f), image))
            writer.write(tf.io.serialize_tensor(resized).numpy())


def tf_dataset(tf, strategy, files, records, threads, image):
    if strategy == "unprocessed":
        ds = tf.data.Dataset.from_tensor_slices(files).map(
            lambda f: tf_online_tail(tf, tf_resize(tf, tf_decode(tf, tf.io.read_file(f), image))),
            num_parallel_calls=threads)
    else:
        ds = tf.data.TFRecordDataset(records, num_parallel_reads=threads).map(
            lambda r: tf_online_tail(tf, tf.io.parse_tensor(r, tf.uint8)),
            num_parallel_calls=threads)
    return ds.prefetch(threads * 4).with_options(tf_options(tf, threads))


def run_tf(tf, strategy, files, records, threads, image):
    ds = tf_dataset(tf, strategy, files, records, threads, image)
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
    """prepbench's cold epoch of a stored CV strategy as MB/s of its shards."""
    row = prepbench_row(binary, work, "cv", strategy, args.samples, args.threads, "cold")
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
    parser.add_argument("--samples", type=int, default=1500, help="CV samples")
    parser.add_argument("--png-samples", type=int, default=48,
                        help="CV2-PNG samples (18 MB frames)")
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
    tf = tf_setup(args.threads)
    runs = []
    with pool:
        for workload, spec in WORKLOADS.items():
            samples = args.samples if workload == "cv" else args.png_samples
            data = os.path.join(work, "data", spec["folder"])
            subprocess.check_call([binary, "generate", spec["kind"], "--samples", str(samples),
                                   "--out", data, "--quiet"])
            files = files_of(data, spec)[:samples]
            records = os.path.join(work, f"tf-{workload}-resized.tfrecord")
            if not os.path.exists(records):
                tf_materialize(tf, files, records, spec["image"])
            npys = py_materialize(files, os.path.join(work, f"py-{workload}-resized"))
            warm(files + [records] + npys)
            inputs = {"unprocessed": files, "resized": npys}
            for strategy in STRATEGIES:
                # Materializes and warms prepbench's store.
                run_prepbench(binary, work, workload, strategy, samples, args)
                for repeat in range(args.repeats):
                    for peer in PEERS:
                        if peer == "prepbench":
                            sps = run_prepbench(binary, work, workload, strategy, samples, args)
                        elif peer == "tf.data":
                            sps = run_tf(tf, strategy, files, [records], args.threads,
                                         spec["image"])
                        else:
                            sps = run_py(pool, strategy, inputs[strategy], args.threads)
                        runs.append((workload, strategy, peer, repeat, samples, sps))
                        print(f"{workload:8} {strategy:12} {peer:10} run {repeat}: "
                              f"{sps:8.1f} samples/s", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "runs.csv"), "w") as f:
        f.write("workload,strategy,peer,repeat,threads,samples,throughput_sps\n")
        for workload, strategy, peer, repeat, samples, sps in runs:
            f.write(f"{workload},{strategy},{peer},{repeat},{args.threads},{samples},{sps:.3f}\n")
    values = {}
    for workload, strategy, peer, _, _, sps in runs:
        values.setdefault((workload, strategy, peer), []).append(sps)
    median = {key: statistics.median(v) for key, v in values.items()}

    def cell(key):
        v = values[key]
        return f"{median[key]:.0f} ({min(v):.0f}-{max(v):.0f})"

    lines = [
        f"{args.threads} threads, warm page cache, CV on {args.samples} samples and CV2-PNG on "
        f"{args.png_samples}; medians of {args.repeats} alternating runs in samples/s (range in "
        "brackets); ratios of medians.",
        "",
        "| workload | strategy | prepbench | tf.data | Python loader | prepbench / tf.data | "
        "prepbench / Python |",
        "|---|---|---|---|---|---|---|",
    ]
    for workload in WORKLOADS:
        for s_ in STRATEGIES:
            key = lambda peer: (workload, s_, peer)  # noqa: E731
            p, t, y = (median[key(peer)] for peer in PEERS)
            lines.append(f"| {workload} | {s_} | {cell(key('prepbench'))} | "
                         f"{cell(key('tf.data'))} | {cell(key('python'))} | {p / t:.2f}x | "
                         f"{p / y:.2f}x |")
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
