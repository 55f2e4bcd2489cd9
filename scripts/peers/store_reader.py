#!/usr/bin/env python3
"""The Python package's store reader (`prepbench.open_store`) against its targets, on the
same shards: per-record cost on tiny records (warm; beside tf.data's TFRecordDataset on the
same files when TensorFlow is installed, yielding bytes only), and a large-record store read
cold against `dd` of its shard files (both after `drop_caches`, so this needs root).

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


def make_store(binary, work, mb, samples):
    base = (ROOT / "workloads/defs/synthetic-reading.yaml").read_text()
    base = base[: base.index("  dataset_options:")]
    base = base.replace("options: {dtype: float32}", f"options: {{dtype: float32, mb_per_sample: {mb}}}")
    yaml = work / f"synthetic-{mb}.yaml"
    yaml.write_text(base)
    subprocess.run([binary, "run", str(yaml), "--strategy", "decoded", "--samples", str(samples),
                    "--epochs", "1", "--threads", "2", "--quiet", "--data-dir", str(work / "data"),
                    "--store-dir", str(work / "stores"), "--out", str(work / "out")], check=True)
    found = glob.glob(str(work / "stores" / "synthetic-reading" / "decoded" / f"none-*-{samples}n-*"))
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "target/release/prepbench"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", default="/tmp/prepbench-reader")
    parser.add_argument("--tiny", type=int, default=20000)
    parser.add_argument("--large", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    tiny = make_store(args.binary, work, 0.01, args.tiny)
    large = make_store(args.binary, work, 2.56, args.large)
    rows = [("tiny", "us per record", *r) for r in per_record(tiny, args.repeats)]
    rows += [("tiny", "us per record", *r) for r in tfdata_per_record(tiny, args.repeats)]
    cold_rows, size, n = cold(large, args.repeats)
    rows += [("large", "MB/s cold", *r) for r in cold_rows]
    with open(out / "store_reader.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["store", "unit", "what", "value"])
        w.writerows(rows)
    lines = [f"Tiny: {args.tiny} records of 0.01 MB; large: {n} records, {size / 1e6:.0f} MB. "
             f"Medians of {args.repeats}.", "", "| store | what | median | unit |", "|---|---|---|---|"]
    for (store, unit, what) in dict.fromkeys((r[0], r[1], r[2]) for r in rows):
        values = [r[3] for r in rows if r[:3] == (store, unit, what)]
        lines.append(f"| {store} | {what} | {statistics.median(values):.1f} | {unit} |")
    (out / "store_reader.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
