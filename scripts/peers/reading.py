"""Reading cold against dd on the same files, and what evicts them.
"""
import os
import statistics
import subprocess
import sys
import time

from stack_prepbench import prepbench_row


def evict(paths):
    """Drops the files from the page cache (fdatasync, then POSIX_FADV_DONTNEED)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def shards_of(work, workload, strategy):
    base = os.path.join(work, "store", workload, strategy)
    out = []
    for dirpath, _, names in os.walk(base):
        out.extend(os.path.join(dirpath, n) for n in names if n.startswith("shard-"))
    return sorted(out)


def dd_mb_s(paths, streams):
    """Sequential read bandwidth of `dd bs=1M` over the files, cold: `streams` concurrent dd
    loops, each over every streams-th file."""
    evict(paths)
    total = sum(os.path.getsize(p) for p in paths)
    start = time.perf_counter()
    loops = [subprocess.Popen(["sh", "-c", "for f; do dd if=\"$f\" of=/dev/null bs=1M "
                               "status=none; done", "dd-loop", *paths[i::streams]])
             for i in range(streams)]
    for loop in loops:
        if loop.wait() != 0:
            sys.exit("dd failed")
    return total / (time.perf_counter() - start) / 1e6


def prepbench_cold_mb_s(binary, work, strategy, samples, threads):
    """prepbench's cold epoch of a stored CV strategy as MB/s of its shards."""
    row = prepbench_row(binary, work, "cv", strategy, samples, threads, "cold")
    return row["storage_bytes"] / row["online_s"] / 1e6


def read_table(binary, work, args, runs):
    """prepbench reading the fully materialized, uncompressed `pixel-centered` shards cold
    (random crop the only online step) against `dd` on the same files, alternating."""
    strategy = "pixel-centered"
    prepbench_cold_mb_s(binary, work, strategy, args.samples, args.threads)  # materializes
    shards = shards_of(work, "cv", strategy)
    ours, dd1, dd2 = [], [], []
    for repeat in range(args.repeats):
        ours.append(prepbench_cold_mb_s(binary, work, strategy, args.samples, args.threads))
        dd1.append(dd_mb_s(shards, 1))
        dd2.append(dd_mb_s(shards, args.threads))
        for peer, values in (("prepbench", ours), ("dd", dd1), ("dd-parallel", dd2)):
            runs.append(("cv", f"{strategy} cold MB/s", peer, repeat, args.threads,
                         args.samples, values[-1]))
        print(f"read {strategy}: prepbench {ours[-1]:.0f} MB/s, dd {dd1[-1]:.0f} MB/s, "
              f"{args.threads} dd {dd2[-1]:.0f} MB/s", flush=True)
    p = statistics.median(ours)
    rows = [(f"prepbench ({args.threads} threads, random crop online)", ours),
            ("dd bs=1M, one file after another", dd1),
            (f"{args.threads} dd bs=1M at once, each over every {args.threads}th file", dd2)]
    lines = [
        "",
        f"Reading `{strategy}` cold (uncompressed CV shards, {len(shards)} files, "
        f"{sum(os.path.getsize(f) for f in shards) / 1e6:.0f} MB, evicted with "
        f"POSIX_FADV_DONTNEED before each run), medians of {args.repeats} alternating runs:",
        "",
        "| reader | MB/s | range | prepbench / reader |",
        "|---|---|---|---|",
    ]
    for name, values in rows:
        m = statistics.median(values)
        lines.append(f"| {name} | {m:.0f} | {min(values):.0f}-{max(values):.0f} | "
                     f"{p / m:.2f}x |")
    return lines


def warm(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


