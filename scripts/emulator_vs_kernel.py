#!/usr/bin/env python3
"""Checks prepbench's storage emulation against the kernel's own block-I/O throttling.

The same read limits are applied twice to the same cold reads of a dataset on a loop device:
once by the kernel (a child blkio cgroup with `blkio.throttle.read_bps_device` or
`read_iops_device` on the loop device, prepbench run inside it with no emulation), once by
prepbench (`--storage` with a profile of the same limits, outside any throttled cgroup). Both
read from a cold page cache. The throughputs must agree within 15 %.

Needs root, cgroup v1 blkio (or v2 io.max), losetup and mkfs.ext4; where any is missing it says
which and exits 0 without a result. Writes `results/emulator-vs-kernel/` (a CSV of
every run and a README with the verdict, the machine and the command).

    sudo python3 scripts/emulator_vs_kernel.py [--prepbench target/release/prepbench]
"""
import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "results", "emulator-vs-kernel")
TOLERANCE = 0.15

# (name, workload, strategy, samples, kernel knob, kernel value, profile): the same limit for
# the kernel (on the loop device) and for prepbench's emulation (a storage profile).
def case(name, workload, strategy, samples, knob, value, **profile):
    return (name, workload, strategy, samples, knob, value, profile)


BANDWIDTH_40 = dict(stream_mb_s=40, aggregate_mb_s=40, latency_ms=0, small_file_kb=0.5)
BANDWIDTH_10 = dict(stream_mb_s=10, aggregate_mb_s=10, latency_ms=0, small_file_kb=0.5)
CASES = [
    case("bandwidth 40 MB/s: cv2-png records (17 MB)", "cv2-png", "concatenated", 24,
         "read_bps_device", 40_000_000, **BANDWIDTH_40),
    case("bandwidth 10 MB/s: cv records (0.11 MB)", "cv", "concatenated", 300,
         "read_bps_device", 10_000_000, **BANDWIDTH_10),
    case("bandwidth 10 MB/s: cv raw files (0.11 MB each)", "cv", "unprocessed", 300,
         "read_bps_device", 10_000_000, **BANDWIDTH_10),
    # The kernel counts one I/O per block request, and a whole-file read reaches the device as
    # requests of up to the queue's `max_sectors_kb`: the profile's `request_kb` is that size,
    # read from the loop device when it exists (DEVICE_REQUEST_KB).
    case("150 requests/s: cv raw files (requests of the device's max_sectors_kb)", "cv",
         "unprocessed", 300, "read_iops_device", 150, iops=150, latency_ms=0,
         request_kb="DEVICE_REQUEST_KB", small_file_kb=1024),
]


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(0)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepbench", default=os.path.join(ROOT, "target", "release", "prepbench"))
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        skip("needs root (loop device, cgroups, drop_caches)")
    blkio = "/sys/fs/cgroup/blkio"
    if not os.path.exists(os.path.join(blkio, "blkio.throttle.read_bps_device")):
        skip("no cgroup v1 blkio controller at /sys/fs/cgroup/blkio")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            skip(f"{tool} not found")
    if not os.path.exists(args.prepbench):
        skip(f"{args.prepbench} not built (cargo build --release)")

    work = tempfile.mkdtemp(prefix="pb-throttle-", dir="/var/tmp")
    image = os.path.join(work, "disk.img")
    mount = os.path.join(work, "mnt")
    os.makedirs(mount)
    group = os.path.join(blkio, f"prepbench-{os.getpid()}")
    loop = None
    rows = []
    try:
        with open(image, "wb") as f:
            f.truncate(3 * 1024**3)
        loop = run(["losetup", "--find", "--show", image]).stdout.strip()
        run(["mkfs.ext4", "-q", "-F", loop])
        run(["mount", loop, mount])
        with open(f"/sys/block/{os.path.basename(loop)}/queue/max_sectors_kb") as f:
            device_request_kb = int(f.read().strip())
        print(f"{loop}: max_sectors_kb {device_request_kb}", flush=True)
        args.device_request_kb = device_request_kb
        rdev = os.stat(loop).st_rdev
        device = f"{os.major(rdev)}:{os.minor(rdev)}"
        os.makedirs(group)
        data = os.path.join(mount, "data")
        store = os.path.join(mount, "store")
        for i, (name, workload, strategy, samples, knob, value, profile) in enumerate(CASES):
            # The reference workload with the case's profile added.
            with open(os.path.join(ROOT, "workloads", "defs", f"{workload}.yaml")) as f:
                yaml = f.read()
            profile = {k: device_request_kb if v == "DEVICE_REQUEST_KB" else v
                       for k, v in profile.items()}
            body = "\n".join(f"    {k}: {v}" for k, v in profile.items())
            yaml += f"\nstorage_profiles:\n  case{i}:\n{body}\n"
            yaml_path = os.path.join(work, f"{workload}.yaml")
            with open(yaml_path, "w") as f:
                f.write(yaml)
            common = [
                "--strategy", strategy, "--samples", str(samples), "--threads", "2",
                "--epochs", "1", "--evict", "drop-caches", "--json", "--quiet",
                "--data-dir", data, "--store-dir", store,
            ]
            # Generate the data and make the store first, unthrottled and untimed.
            warm = subprocess.run(
                [args.prepbench, "run", yaml_path, *common, "--out", os.path.join(work, f"prep-{i}")],
                text=True, capture_output=True,
            )
            if warm.returncode != 0:
                raise SystemExit(f"{name}: preparing failed: {warm.stderr}")
            for trial in range(args.trials):
                for mode in ("kernel", "emulated"):
                    out = os.path.join(work, f"out-{i}-{mode}-{trial}")
                    cmd = [args.prepbench, "run", yaml_path, *common, "--out", out]
                    if mode == "emulated":
                        cmd += ["--storage", f"case{i}"]
                    drop_caches()
                    if mode == "kernel":
                        limit = os.path.join(group, f"blkio.throttle.{knob}")
                        with open(limit, "w") as f:
                            f.write(f"{device} {value}\n")
                        shell = f"echo $$ > {group}/cgroup.procs && exec " + " ".join(cmd)
                        result = subprocess.run(["sh", "-c", shell], text=True, capture_output=True)
                        with open(limit, "w") as f:
                            f.write(f"{device} 0\n")
                    else:
                        result = subprocess.run(cmd, text=True, capture_output=True)
                    if result.returncode != 0:
                        raise SystemExit(f"{name}, {mode}: prepbench failed: {result.stderr}")
                    epoch = [json.loads(l) for l in result.stdout.splitlines() if l.strip()][-1]
                    rows.append({
                        "case": name, "mode": mode, "trial": trial,
                        "throughput_sps": float(epoch["throughput_sps"]),
                        "online_s": float(epoch["online_s"]),
                        "read_bytes": int(epoch["read_bytes"]),
                    })
                    print(rows[-1], flush=True)
    finally:
        if os.path.isdir(group):
            try:
                os.rmdir(group)
            except OSError:
                pass
        subprocess.run(["umount", mount], capture_output=True)
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    write(rows, args)


def write_runs(out, rows):
    """`rows` (dicts of one shape) as `out`/runs.csv, the folder made when missing."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def write(rows, args):
    write_runs(OUT, rows)
    lines = []
    ok = True
    for name, *_ in CASES:
        mean = lambda mode: sum(r["throughput_sps"] for r in rows if r["case"] == name and r["mode"] == mode) / args.trials
        k, e = mean("kernel"), mean("emulated")
        diff = e / k - 1
        ok &= abs(diff) <= TOLERANCE
        lines.append(f"| {name} | {k:.2f} | {e:.2f} | {100 * diff:+.1f} % |")
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write("\n".join([
            "# prepbench's storage emulation against the kernel's block-I/O throttling",
            "",
            f"Made by `sudo python3 scripts/emulator_vs_kernel.py` on {platform.node()} ({platform.release()}), "
            f"{time.strftime('%Y-%m-%d', time.gmtime())}, {args.trials} trials per mode, cold page cache, 2 threads.",
            "",
            "| case | kernel samples/s | emulated samples/s | difference |",
            "|---|---|---|---|",
            *lines,
            "",
            f"Verdict: {'within' if ok else 'NOT within'} {100 * TOLERANCE:.0f} % in every case.",
            "",
            "The kernel's request-rate limit counts one I/O per block request, and a whole-file read",
            "reaches the device as requests of up to the queue's `max_sectors_kb` "
            f"({getattr(args, 'device_request_kb', '?')} KiB on this loop device), so",
            "the request-rate case's profile sets `request_kb` to that size: a profile's `request_kb` is",
            "the storage's real request size (fio's `bs`), and a smaller one (the paper profile's 4 KiB)",
            "makes small files cost more requests than a kernel limit of the same IOPS would. The",
            "bandwidth cases carry no request size. The emulation adds its delay after the local disk's",
            "own read time, so where the local read is slow it can be slower than the kernel's limit.",
            "",
        ]))
    print(open(os.path.join(OUT, "README.md")).read())


if __name__ == "__main__":
    main()
