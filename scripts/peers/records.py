"""Finding 5's cost per record: prepbench and tf.data's TFRecordDataset on the same shards.
"""
import glob
import os
import statistics
import subprocess
import time

from pipelines import ROOT
from reading import evict, warm
from stack_tfdata import tf_options



# The paper's twelve synthetic sample sizes (finding 5), MB per sample.
RECORD_SIZES = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48]


def records_table(binary, work, args):
    """Finding 5's per-record cost: the same TFRecord shards (prepbench's `decoded` store of the
    synthetic arrays, one size at a time) read by prepbench and by tf.data's TFRecordDataset,
    cold (evicted) and warm, `--repeats` times each. prepbench reads, unframes (CRC-32C) and
    decodes every record into a tensor; TFRecordDataset reads and unframes it and yields its
    bytes (the consumer touches them). Rows: records.csv; medians: records.md."""
    import json

    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    with open(os.path.join(ROOT, "workloads", "defs", "synthetic-reading.yaml")) as f:
        base = f.read()
    base = base[: base.index("  dataset_options:")]
    rows = []
    for size in RECORD_SIZES:
        folder = os.path.join(work, f"records-{size}")
        subprocess.run(["rm", "-rf", folder], check=True)
        os.makedirs(folder)
        yaml = os.path.join(folder, "synthetic.yaml")
        with open(yaml, "w") as f:
            f.write(base.replace("options: {dtype: float32}",
                                 f"options: {{dtype: float32, mb_per_sample: {size}}}"))
        samples = max(args.threads * 2, round(args.records_mb / size))

        def prepbench(cache):
            command = [binary, "run", yaml, "--strategy", "decoded", "--samples", str(samples),
                       "--threads", str(args.threads), "--cache", cache, "--epochs", "1",
                       "--shards", "16", "--json", "--quiet",
                       "--data-dir", os.path.join(folder, "data"),
                       "--store-dir", os.path.join(folder, "store"),
                       "--out", os.path.join(folder, "out")]
            if cache == "cold":
                command += ["--evict", "fadvise"]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            return row["samples"], row["storage_bytes"], row["online_s"]

        prepbench("warm")  # generates, materializes, untimed
        shards = sorted(glob.glob(os.path.join(folder, "store", "**", "*.tfrecord"),
                                  recursive=True))
        total = sum(os.path.getsize(p) for p in shards)

        def tfdata(cache):
            if cache == "cold":
                evict(shards)
            else:
                warm(shards)
            ds = tf.data.TFRecordDataset(shards, num_parallel_reads=args.threads)
            ds = ds.prefetch(args.threads * 4).with_options(tf_options(tf, args.threads))
            start = time.perf_counter()
            n = 0
            for record in ds:
                record.numpy()[:1]
                n += 1
            return n, total, time.perf_counter() - start

        for repeat in range(args.repeats):
            for cache in ("cold", "warm"):
                for reader in ("prepbench", "tf.data TFRecordDataset"):
                    n, nbytes, seconds = (prepbench(cache) if reader == "prepbench"
                                          else tfdata(cache))
                    rows.append({
                        "mb_per_sample": size, "reader": reader, "cache": cache,
                        "repeat": repeat, "records": n, "bytes": nbytes,
                        "seconds": round(seconds, 6),
                        "mb_s": round(nbytes / 1e6 / seconds, 3),
                        "us_per_record": round(1e6 * seconds / max(n, 1), 3),
                    })
                    print(rows[-1], flush=True)
        subprocess.run(["rm", "-rf", folder], check=True)
    os.makedirs(args.out, exist_ok=True)
    import csv

    with open(os.path.join(args.out, "records.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    lines = [
        f"Finding 5's reading cost per record: the same TFRecord shards ({args.records_mb:.0f} MB"
        f" per size, 16 shards), {args.threads} threads, medians of {args.repeats}. prepbench"
        " reads, unframes and decodes each record into a tensor; tf.data's TFRecordDataset reads"
        " and unframes it.",
        "",
        "| MB per sample | cache | prepbench MB/s | tf.data MB/s | prepbench us/record |"
        " tf.data us/record | prepbench / tf.data |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in RECORD_SIZES:
        for cache in ("cold", "warm"):
            def med(reader, key):
                return statistics.median(r[key] for r in rows if r["mb_per_sample"] == size
                                         and r["cache"] == cache and r["reader"] == reader)
            ours, theirs = med("prepbench", "mb_s"), med("tf.data TFRecordDataset", "mb_s")
            lines.append(f"| {size} | {cache} | {ours:.0f} | {theirs:.0f} |"
                         f" {med('prepbench', 'us_per_record'):.1f} |"
                         f" {med('tf.data TFRecordDataset', 'us_per_record'):.1f} |"
                         f" {ours / theirs:.2f} |")
    with open(os.path.join(args.out, "records.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


