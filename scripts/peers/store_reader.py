#!/usr/bin/env python3
"""The Python package's store reader (`prepbench.open_store`) against its targets, on the
same shards: per-record cost on tiny records (warm; beside tf.data's TFRecordDataset on the
same files when TensorFlow is installed, yielding bytes only), a large-record store read
cold against `dd` of its shard files (both after `drop_caches`, so this needs root), and
(`--shuffled N`) a GZIP store of N records of 0.32 MB read by number in shuffled order with a
cache far smaller than the store, as a map-style DataLoader reads it, from the codec's
restarts and, on the same shard files, with the restarts left out of a copy of `store.json`
(one stretch a shard: how prepbench read a compressed store before it wrote restarts).

Stores: prepbench's `decoded` strategy of the paper's synthetic float32 arrays (finding 5), at
0.01 MB per record (`--tiny` records) and 2.56 MB (`--large` records), one codec `none`, made
with the binary under test. One row per measurement in OUT/store_reader.csv; medians in
OUT/store_reader.md.

    sudo PYTHONPATH=python PREPBENCH_NATIVE=target/release/lib_native.so \\
        scripts/.venv-peers/bin/python scripts/peers/store_reader.py --out results/local/reader
"""

import argparse
import csv
import glob
import os
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def make_store(binary, work, mb, samples, codec="none", shards=16):
    base = (ROOT / "workloads/defs/synthetic-reading.yaml").read_text()
    base = base[: base.index("  dataset_options:")]
    base = base.replace("options: {dtype: float32}", f"options: {{dtype: float32, mb_per_sample: {mb}}}")
    yaml = work / f"synthetic-{mb}.yaml"
    yaml.write_text(base)
    subprocess.run([binary, "run", str(yaml), "--strategy", "decoded", "--samples", str(samples),
                    "--codec", codec, "--shards", str(shards),
                    "--epochs", "1", "--threads", "2", "--quiet", "--data-dir", str(work / "data"),
                    "--store-dir", str(work / "stores"), "--out", str(work / "out")], check=True)
    prefix = codec.replace(":", "")
    found = glob.glob(str(work / "stores" / "synthetic-reading" / "decoded" / f"{prefix}*-{samples}n-*"))
    assert len(found) == 1, found
    return found[0]


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def per_record(store, repeats):
    """Microseconds per record, in order and by number (scattered), warm."""
    import prepbench

    s = prepbench.open_store(store)
    n = len(s)
    for _ in s:  # warm the page cache
        pass
    order = [(i * 7919) % n for i in range(n)]
    rows = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in s:
            pass
        rows.append(("in order", (time.perf_counter() - t) / n * 1e6))
        t = time.perf_counter()
        for i in order:
            s[i]
        rows.append(("by number", (time.perf_counter() - t) / n * 1e6))
    return rows


def tfdata_per_record(store, repeats):
    try:
        import tensorflow as tf
    except ImportError:
        return []
    files = sorted(glob.glob(os.path.join(store, "shard-*.tfrecord")))
    rows = []
    for _ in range(repeats):
        t = time.perf_counter()
        n = 0
        for record in tf.data.TFRecordDataset(files):
            n += 1
        rows.append(("tf.data TFRecordDataset", (time.perf_counter() - t) / n * 1e6))
    return rows


def cold(store, repeats):
    """Seconds to read every record cold with the reader, and to `dd` the shard files cold."""
    import prepbench

    files = sorted(glob.glob(os.path.join(store, "shard-*.tfrecord")))
    size = sum(os.path.getsize(f) for f in files)
    rows = []
    for _ in range(repeats):
        drop_caches()
        t = time.perf_counter()
        n = sum(1 for _ in prepbench.open_store(store))
        rows.append(("reader, in order", size / (time.perf_counter() - t) / 1e6))
        drop_caches()
        t = time.perf_counter()
        for f in files:
            subprocess.run(["dd", f"if={f}", "of=/dev/null", "bs=1M", "status=none"], check=True)
        rows.append(("dd bs=1M", size / (time.perf_counter() - t) / 1e6))
    return rows, size, n


def shuffled(store, work, repeats, cache_mb=16):
    """Microseconds per record read by number in shuffled order (warm), with restarts and with
    one stretch a shard (a copy of the store: its shards hard-linked, `store.json` without
    restarts), and in order."""
    import json
    import random

    import prepbench

    bare = work / "one-stretch-a-shard"
    if bare.exists():
        for f in bare.iterdir():
            f.unlink()
    bare.mkdir()
    for f in os.listdir(store):
        if f != "store.json":
            os.link(os.path.join(store, f), bare / f)
    manifest = json.loads(Path(store, "store.json").read_text())
    restarts = sum(len(s.pop("restarts", [])) for s in manifest["shards"])
    (bare / "store.json").write_text(json.dumps(manifest))
    n = len(prepbench.open_store(store))
    rows = []
    for repeat in range(repeats):
        order = list(range(n))
        random.Random(repeat).shuffle(order)
        for what, path in ((f"by number, shuffled, from restarts ({restarts})", store),
                           ("by number, shuffled, one stretch a shard", str(bare))):
            s = prepbench.open_store(path, cache_bytes=cache_mb << 20)
            t = time.perf_counter()
            for i in order:
                s[i]
            rows.append((what, (time.perf_counter() - t) / n * 1e6))
        t = time.perf_counter()
        for _ in prepbench.open_store(store):
            pass
        rows.append(("in order", (time.perf_counter() - t) / n * 1e6))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "target/release/prepbench"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", default="/tmp/prepbench-reader")
    parser.add_argument("--tiny", type=int, default=20000)
    parser.add_argument("--large", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shuffled", type=int, default=0,
                        help="records of the shuffled GZIP store (0: not measured)")
    parser.add_argument("--cache-mb", type=int, default=16)
    args = parser.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    rows, size, n = [], 0, 0
    if args.tiny:  # 0: not measured, as --large 0
        tiny = make_store(args.binary, work, 0.01, args.tiny)
        rows += [("tiny", "us per record", *r) for r in per_record(tiny, args.repeats)]
        rows += [("tiny", "us per record", *r) for r in tfdata_per_record(tiny, args.repeats)]
    if args.large:
        large = make_store(args.binary, work, 2.56, args.large)
        cold_rows, size, n = cold(large, args.repeats)
        rows += [("large", "MB/s cold", *r) for r in cold_rows]
    if args.shuffled:
        gzipped = make_store(args.binary, work, 0.32, args.shuffled, "gzip", 4)
        rows += [("shuffled gzip", "us per record", *r)
                 for r in shuffled(gzipped, work, args.repeats, args.cache_mb)]
    with open(out / "store_reader.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["store", "unit", "what", "value"])
        w.writerows(rows)
    lines = [f"Tiny: {args.tiny} records of 0.01 MB; large: {n} records, {size / 1e6:.0f} MB; "
             f"shuffled gzip: {args.shuffled} records of 0.32 MB in 4 shards, a "
             f"{args.cache_mb} MiB cache. Medians of {args.repeats}.", "", "| store | what | median | unit |", "|---|---|---|---|"]
    for (store, unit, what) in dict.fromkeys((r[0], r[1], r[2]) for r in rows):
        values = [r[3] for r in rows if r[:3] == (store, unit, what)]
        lines.append(f"| {store} | {what} | {statistics.median(values):.1f} | {unit} |")
    (out / "store_reader.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
