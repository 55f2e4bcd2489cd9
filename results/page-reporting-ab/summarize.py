#!/usr/bin/env python3
"""Per sweep of run.sh and per cell (strategy, threads): the cold epochs' seconds, their
coefficient of variation, and their kernel CPU seconds (`cpu_sys_s`); the most stolen share
of an epoch and how the evictions went (`read+`: read first, done only with the reporter on).

    python3 results/page-reporting-ab/summarize.py [FOLDER]
"""

import collections
import csv
import statistics
import sys
from pathlib import Path

folder = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
for sweep in sorted(folder.glob("out-*")):
    with open(sweep / "runs.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["cache"] == "cold"]
    cells = collections.defaultdict(list)
    for r in rows:
        cells[(r["strategy"], r["threads"])].append(r)
    steal = max(float(r["steal_pct"] or 0) for r in rows)
    evictions = collections.Counter(r["evict_method"] for r in rows)
    print(f"{sweep.name}: most steal in an epoch {steal:.1f} %; evictions {dict(evictions)}")
    for (strategy, threads), group in sorted(cells.items()):
        secs = [float(r["online_s"]) for r in group]
        kernel = [float(r["cpu_sys_s"]) for r in group]
        cv = statistics.stdev(secs) / statistics.mean(secs) * 100
        print(
            f"  {strategy:12s} {threads} thr: {len(secs)} epochs {min(secs):.2f}-{max(secs):.2f} s, "
            f"CV {cv:.1f} %, kernel {min(kernel):.2f}-{max(kernel):.2f} s"
        )
