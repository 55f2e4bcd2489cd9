"""The decoders alone, prepbench against the C libraries the peers call, on generated data and on
real photographs.
"""
import io
import math
import os
import subprocess
import sys
import time

from pipelines import WORKLOADS, files_of, read_bytes
from stack_prepbench import prepbench_row



# The decoders the Python loader calls (C libraries: libjpeg-turbo, zlib, libFLAC, mpg123), by
# workload; prepbench's decode step is `decoded` in each.
DECODERS = {"cv": 400, "cv2-png": 8, "mp3": 400, "flac": 150}


def py_decode(workload, data):
    from PIL import Image as PILImage

    if workload in ("cv", "cv2-png"):
        with PILImage.open(io.BytesIO(data)) as image:
            image.convert("RGB").load()
    else:
        import soundfile

        soundfile.read(io.BytesIO(data), dtype="int16")


def codec_table(binary, work, args):
    """Decoding alone, one thread, warm: the Python loader's C decoders against prepbench's
    decode step (its share of a one-thread `unprocessed` epoch, from stages.csv). What a
    Python worker spends per sample beyond decoding is what prepbench can win; the ratio
    target needs that to be large enough."""
    import csv

    rows = []
    for workload, n in DECODERS.items():
        spec = WORKLOADS[workload]
        data_dir = os.path.join(work, "data", spec["folder"])
        files = files_of(data_dir, spec)[:n]
        if not files:
            continue
        payloads = [read_bytes(f) for f in files]
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for d in payloads:
                py_decode(workload, d)
            best = min(best, time.perf_counter() - start)
        row = prepbench_row(binary, work, workload, "unprocessed", len(files), 1, "warm",
                            out="prepbench-codec")
        with open(os.path.join(work, "prepbench-codec", "stages.csv")) as f:
            ours = {r["stage"]: float(r["seconds"]) for r in csv.DictReader(f)
                    if r["run_id"] == row["run_id"]}
        total = sum(v for k, v in ours.items() if k.startswith("step:"))
        rows.append((workload, best / len(files) * 1e3, ours["step:decoded"] / len(files) * 1e3,
                     total / len(files) * 1e3))
        print(f"codec {workload}: Python decoder {rows[-1][1]:.3f} ms, prepbench decode "
              f"{rows[-1][2]:.3f} ms of {rows[-1][3]:.3f} ms per sample", flush=True)
    lines = [
        "",
        "Decoding alone, one thread, warm, ms per sample (best of 3 for Python; prepbench's "
        "decode step within a one-thread `unprocessed` epoch):",
        "",
        "| workload | Python loader's decoder | prepbench decode | prepbench's whole pipeline |",
        "|---|---|---|---|",
    ]
    lines += [f"| {w} | {p:.3f} | {d:.3f} | {t:.3f} |" for w, p, d, t in rows]
    return lines


PHOTOS_WORKLOAD = """name: photos
description: decode real photographs (run_peers.py --photos)
dataset:
  kind: files
  options: {glob: "*.jpg"}
steps:
  - name: concatenated
    op: read_file
  - name: decoded
    op: decode_jpeg
"""


def is_progressive(data):
    """Whether a JPEG's frame is progressive (SOF2), walking its marker segments."""
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return False
        marker = data[pos + 1]
        if marker == 0xC2:
            return True
        if marker in (0xC0, 0xC1, 0xDA):
            return False
        pos += 2 + int.from_bytes(data[pos + 2:pos + 4], "big")
    return False


def photo_table(binary, work, photos, repeats=5):
    """JPEG decoding of real photographs, one thread, warm, baseline and progressive apart:
    prepbench's decode step (the fastest of `repeats` epochs of its `decoded` stage), Pillow
    and, when TensorFlow imports, tf.io.decode_jpeg (libjpeg-turbo; best of `repeats`)."""
    import csv
    import io

    from PIL import Image as PILImage

    try:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except ImportError:
        tf = None
    names = sorted(n for n in os.listdir(photos) if n.lower().endswith((".jpg", ".jpeg")))
    if not names:
        sys.exit(f"--photos {photos}: no .jpg files")
    sets = {"baseline": [], "progressive": []}
    for n in names:
        data = read_bytes(os.path.join(photos, n))
        sets["progressive" if is_progressive(data) else "baseline"].append((n, data))
    yaml = os.path.join(work, "photos.yaml")
    os.makedirs(work, exist_ok=True)
    with open(yaml, "w") as f:
        f.write(PHOTOS_WORKLOAD)
    rows = []
    for kind, files in sets.items():
        if not files:
            continue
        folder = os.path.join(work, f"photos-{kind}")
        subprocess.run(["rm", "-rf", folder], check=True)
        os.makedirs(folder)
        for n, data in files:
            with open(os.path.join(folder, n), "wb") as f:
                f.write(data)
        megapixels = sum(math.prod(PILImage.open(io.BytesIO(d)).size) for _, d in files) / 1e6

        def best(decode, inputs):
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                for d in inputs:
                    decode(d)
                times.append(time.perf_counter() - start)
            return min(times)

        def pillow(d):
            with PILImage.open(io.BytesIO(d)) as image:
                image.convert("RGB").load()

        out = os.path.join(work, f"prepbench-photos-{kind}")
        subprocess.run(["rm", "-rf", out], check=True)
        subprocess.run([binary, "run", yaml, "--dataset", folder, "--strategy", "unprocessed",
                        "--samples", str(len(files)),
                        "--threads", "1", "--cache", "warm", "--epochs", str(repeats + 1),
                        "--quiet", "--store-dir", os.path.join(work, "store"), "--out", out],
                       check=True, capture_output=True)
        with open(os.path.join(out, "stages.csv")) as f:
            ours = min(float(r["seconds"]) for r in csv.DictReader(f)
                       if r["stage"] == "step:decoded" and r["epoch"] != "0")
        theirs = {"Pillow": best(pillow, [d for _, d in files])}
        if tf is not None:
            tensors = [tf.constant(d) for _, d in files]

            def tf_decode(t):
                tf.io.decode_jpeg(t, channels=3).numpy()

            for t in tensors:  # traced and warmed, untimed
                tf_decode(t)
            theirs["tf.io.decode_jpeg"] = best(tf_decode, tensors)
        rows.append((kind, len(files), megapixels, ours, theirs))
        print(f"photos {kind}: {len(files)} files, {megapixels:.1f} MP: prepbench "
              f"{ours * 1e3:.1f} ms, " + ", ".join(f"{k} {v * 1e3:.1f} ms"
                                                  for k, v in theirs.items()), flush=True)
    peers = ["Pillow", "tf.io.decode_jpeg"] if tf is not None else ["Pillow"]
    lines = [
        "",
        f"JPEG decoding of real photographs ({photos}), one thread, warm, ms per megapixel "
        f"(fastest of {repeats}); ratio = prepbench's time / the peer's (under 1: prepbench "
        "is faster):",
        "",
        "| frames | files | MP | prepbench | " + " | ".join(peers) + " | "
        + " | ".join(f"prepbench / {p}" for p in peers) + " |",
        "|---" * (4 + 2 * len(peers)) + "|",
    ]
    for kind, n, mp, ours, theirs in rows:
        lines.append(f"| {kind} | {n} | {mp:.1f} | {ours * 1e3 / mp:.2f} | "
                     + " | ".join(f"{theirs[p] * 1e3 / mp:.2f}" for p in peers) + " | "
                     + " | ".join(f"{ours / theirs[p]:.2f}" for p in peers) + " |")
    return lines
