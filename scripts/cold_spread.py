#!/usr/bin/env python3
"""How steady are cold epochs? For each reproduction folder given (`runs.csv` and the
`progress.log` of `results/reproducibility/*`), the cold epochs of prepbench's own engine on
the local disk during the native local sweeps (the rows started before the first sweep under
emulated storage: no settling trials, which go to the noisiest cells; a sweep's folder
without a progress.log: all of them), grouped by cell
(workload, strategy, codec, threads, samples): the coefficient of variation of each cell's
epoch times, and how many epochs took more than 15 % over their cell's median. The most
stolen share of an epoch is printed beside it: a busy host spreads epochs too.

    python3 scripts/cold_spread.py results/reproducibility/quick-cc results/reproducibility/quick-cf

Written to compare runs with the free page reporter on (before 2026-12-07) and held off
(`--page-reporting hold`; docs/measurement.md, "Cold reads on a VM").
"""

import csv
import datetime
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def native_local_cutoff(log: str) -> str:
    """The UTC stamp (ISO, as runs.csv's started_utc) of the first emulated sweep's start."""
    start = re.search(r"^start (\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)Z", log, re.M)
    cut = re.search(r"^(\d\d:\d\d:\d\d) reproduce: sweeping `cv` under the emulated", log, re.M)
    if not start or not cut:
        sys.exit("progress.log has no start line or no emulated CV sweep")
    day = datetime.date.fromisoformat(start.group(1))
    if cut.group(1) < start.group(2):  # the run crossed midnight
        day += datetime.timedelta(days=1)
    return f"{day.isoformat()}T{cut.group(1)}"


def summary(folder: Path) -> str:
    # A sweep's folder (no progress.log): all its rows.
    log = folder / "progress.log"
    cutoff = native_local_cutoff(log.read_text()) if log.exists() else "9999"
    cells = defaultdict(list)
    with open(folder / "runs.csv", newline="") as f:
        for row in csv.DictReader(f):
            if (
                row["started_utc"] < cutoff
                and row["loader"] == "native"
                and row["cache"] == "cold"
                and row["storage"] == "local"
            ):
                key = tuple(row[k] for k in ("workload", "strategy", "codec", "threads", "samples"))
                cells[key].append(row)
    cvs, slow, epochs, steal = [], 0, 0, 0.0
    for rows in cells.values():
        times = [float(r["online_s"]) for r in rows]
        steal = max([steal] + [float(r["steal_pct"] or 0) for r in rows])
        if len(times) < 2:
            continue
        median = statistics.median(times)
        cvs.append(statistics.stdev(times) / statistics.mean(times) * 100)
        slow += sum(t > 1.15 * median for t in times)
        epochs += len(times)
    if not cvs:
        return f"{folder.name}: no native cold cells on the local disk"
    cvs.sort()
    return (
        f"{folder.name}: {len(cvs)} cells, {epochs} epochs; CV median {statistics.median(cvs):.1f} %, "
        f"quartiles {cvs[len(cvs) // 4]:.1f}-{cvs[3 * len(cvs) // 4]:.1f} %, most {cvs[-1]:.1f} %; "
        f"{slow} epochs over 1.15x their cell's median; most steal in an epoch {steal:.1f} %"
    )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for arg in sys.argv[1:]:
        print(summary(Path(arg)))
