#!/usr/bin/env python3
"""prepbench against the loaders users would pick instead, on the same data and threads.

Installs its peers in scripts/.venv-peers (tensorflow-cpu 2.16, tensorflow-io 0.37, Pillow,
NumPy, soundfile, librosa, lxml, tiktoken), builds prepbench if needed, generates each dataset
once with prepbench, then runs each strategy on three stacks, alternating them `--repeats`
times:

- prepbench: `prepbench run WORKLOAD --strategy S --cache warm` (throughput_sps of the epoch);
- tf.data: the paper's own stack. `unprocessed` maps every step over the files
  (`Dataset.from_tensor_slices(files).map(read_file).map(...)`); a stored strategy reads
  TFRecord files of serialized tensors (written once, untimed, as PRESTO stored strategies)
  and maps the remaining steps. Steps TensorFlow has no op for (HTML text extraction, GPT-2
  BPE) run as `tf.numpy_function`, as TensorFlow users run them;
- a PyTorch-DataLoader-style Python loader: `multiprocessing.Pool(T).imap` over sample
  indices, the steps in the worker processes (Pillow and NumPy for images; soundfile, which is
  libsndfile with mpg123 and libFLAC, and librosa for audio; lxml and tiktoken for text),
  arrays pickled back to the consumer as DataLoader workers do; a stored strategy reads one
  .npy per sample (written once, untimed).

The pipelines, step by step as the workload files define them:

- cv, cv2-png: decode (JPEG; or 16-bit PNG scaled to uint8) -> resize (shorter side 256,
  bilinear, rounded back to uint8) [resized] -> x / 127.5 - 1 -> random crop 224x224;
- mp3, flac: decode to int16 mono PCM [decoded] -> x / 32768 -> STFT (mp3: frame 960, hop 480;
  flac: frame 320, hop 160; FFT 1024, periodic Hann, not centred) -> magnitude -> 80 mel
  bins (HTK scale, 125-3800 Hz, tf.signal's defaults) -> log(x + 1e-8) [spectrogram-encoded];
- nlp: extract the article text from the HTML [decoded] -> GPT-2 BPE (r50k_base) to int32
  ids [bpe-encoded] -> lookup in a seeded random 50257 x 768 float32 table [embedded].

Every stack uses T worker threads or processes and consumes every sample (the consumer touches
one value per sample). All files are read warm (read once before the timed runs), so the ratio
is the preprocessing stack's, not the disk's. Then, prepbench alone: reading the fully
materialized, uncompressed CV shards cold against `dd` on the same files (one and two
streams), and its own scaling from 1 to T threads, online and materializing. It writes runs.csv
(every run), table.md (medians and ratios prepbench / peer) and commands.txt under --out, and
prints the table.

    python3 scripts/peers/run_peers.py --repeats 5

`--records` measures only finding 5's reading cost per record: the same TFRecord shards (the
synthetic arrays at the paper's twelve sample sizes, `--records-mb` MB each) read by prepbench
and by tf.data's TFRecordDataset, cold and warm (records.csv, records.md; in the TensorFlow
environment scripts/.venv-tf). `prepbench report RESULTS --peers OUT` folds it into a report.
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import warnings

from codecs_alone import codec_table, photo_table
from pipelines import PEERS, ROOT, WORKLOADS, files_of, in_venv, prepbench_binary
from reading import read_table, warm
from records import records_table
from scaling import SCALING_ONLINE, scaling_table
from stack_prepbench import decode_roofline, photos_workload, prepbench_row
from stack_python import py_materialize, py_warm_up, run_py
from stack_tfdata import run_tf, tf_dataset, tf_materialize, tf_setup



def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=1500, help="CV samples")
    parser.add_argument("--png-samples", type=int, default=48,
                        help="CV2-PNG samples (18 MB frames)")
    parser.add_argument("--mp3-samples", type=int, default=2000, help="MP3 clips (about 1 s)")
    parser.add_argument("--flac-samples", type=int, default=300,
                        help="FLAC utterances (about 12 s)")
    parser.add_argument("--text-samples", type=int, default=1000, help="NLP pages")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated subset of " + ",".join(WORKLOADS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-read", action="store_true", help="skip the dd comparison")
    parser.add_argument("--no-scaling", action="store_true", help="skip the 1 -> T scaling")
    parser.add_argument("--codecs-only", action="store_true",
                        help="only time the decoders alone (after a full run generated the data)"
                        " and write codecs.md")
    parser.add_argument("--photos", metavar="DIR",
                        help="a folder of real photographs (.jpg; `python3"
                        " scripts/fetch_photos.py` prints one): the CV pipeline runs on them"
                        " instead of generated data, with the decoder's limit beside each"
                        " ratio; with --codecs-only, they are decoded baseline and progressive"
                        " apart against Pillow and tf.io.decode_jpeg")
    parser.add_argument("--records", action="store_true",
                        help="only finding 5's per-record cost: prepbench and tf.data's"
                        " TFRecordDataset on the same shards at the paper's twelve sample sizes;"
                        " writes records.csv and records.md (`prepbench report --peers OUT`)")
    parser.add_argument("--records-mb", type=float, default=1000.0,
                        help="MB of records per sample size with --records")
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "peers"))
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "peers", "local"))
    args = parser.parse_args()
    chosen = args.workloads.split(",")
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown:
        sys.exit(f"unknown workloads {unknown}: choose from {','.join(WORKLOADS)}")
    if args.records:
        lines = records_table(prepbench_binary(), os.path.abspath(args.work), args)
        with open(os.path.join(args.out, "commands.txt"), "a") as f:
            f.write(" ".join(["python3", "scripts/peers/run_peers.py", *sys.argv[1:]]) + "\n")
        print("\n".join(lines))
        return
    import multiprocessing

    import numpy as np
    import PIL

    if args.photos and not args.codecs_only:
        # Real photographs feed the CV pipeline; the other workloads have none.
        chosen = ["cv"]
    if args.codecs_only:
        lines = codec_table(prepbench_binary(), os.path.abspath(args.work), args)
        if args.photos:
            lines += photo_table(prepbench_binary(), os.path.abspath(args.work),
                                 os.path.abspath(args.photos), args.repeats)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "codecs.md"), "w") as f:
            f.write("\n".join(lines[1:]) + "\n")
        with open(os.path.join(args.out, "commands.txt"), "a") as f:
            f.write(" ".join(["python3", "scripts/peers/run_peers.py", *sys.argv[1:]]) + "\n")
        print("\n".join(lines))
        return

    # Fork the Python loader's workers before TensorFlow starts its threads, and give each its
    # per-process state once.
    warnings.filterwarnings("ignore", message="Empty filters detected")
    pool = multiprocessing.get_context("fork").Pool(args.threads)
    pool.map(py_warm_up, ["nlp" in chosen] * args.threads, chunksize=1)
    binary = prepbench_binary()
    work = os.path.abspath(args.work)
    tf = tf_setup(args.threads, "nlp" in chosen)
    runs = []
    sizes = {}
    prepbench_rows = {}
    with pool:
        for workload in chosen:
            spec = WORKLOADS[workload]
            pipeline = spec["pipeline"]
            samples = getattr(args, spec["samples"])
            prepbench_workload, extra = workload, ()
            if args.photos:
                # The photographs repeated (hard links) to `--samples` files, so that epochs
                # last long enough to measure.
                photos = os.path.abspath(args.photos)
                names = sorted(n for n in os.listdir(photos) if n.lower().endswith(".jpg"))
                if not names:
                    sys.exit(f"--photos {photos}: no .jpg files")
                folder = os.path.join(work, f"photos-{samples}")
                if not os.path.isdir(folder):
                    os.makedirs(folder + ".part", exist_ok=True)
                    for i in range(samples):
                        name = names[i % len(names)]
                        target = os.path.join(folder + ".part", f"{i:06d}-{name}")
                        if not os.path.exists(target):
                            try:
                                os.link(os.path.join(photos, name), target)
                            except OSError:
                                shutil.copy(os.path.join(photos, name), target)
                    os.replace(folder + ".part", folder)
                files = sorted(os.path.join(folder, n) for n in os.listdir(folder))
                prepbench_workload = photos_workload(binary, work)
                extra = ("--dataset", folder)
            else:
                data = os.path.join(work, "data", spec["folder"])
                subprocess.check_call([binary, "generate", spec["kind"], "--samples",
                                       str(samples), "--out", data, "--quiet"])
                files = files_of(data, spec)[:samples]
            sizes[workload] = len(files)
            inputs, records = {"unprocessed": files}, {}
            for strategy in pipeline.strategies[1:]:
                records[strategy] = os.path.join(work, f"tf-{workload}-{strategy}.tfrecord")
                if not os.path.exists(records[strategy]):
                    tf_materialize(tf, pipeline, strategy, files, records[strategy] + ".part")
                    os.replace(records[strategy] + ".part", records[strategy])
                inputs[strategy] = py_materialize(
                    pipeline, strategy, files, os.path.join(work, f"py-{workload}-{strategy}"))
                warm([records[strategy]] + inputs[strategy])
            warm(files)
            for strategy in pipeline.strategies:
                ds = tf_dataset(tf, pipeline, strategy, files, [records.get(strategy, "")],
                                args.threads)
                # Repeat -1 is untimed: it materializes and warms prepbench's store, traces
                # tf.data's functions and warms the Python workers.
                for repeat in range(-1, args.repeats):
                    for peer in PEERS:
                        if peer == "prepbench":
                            row = prepbench_row(binary, work, prepbench_workload, strategy,
                                                samples, args.threads, "warm", extra)
                            sps = row["throughput_sps"]
                            if repeat >= 0:
                                prepbench_rows.setdefault((workload, strategy), []).append(row)
                        elif peer == "tf.data":
                            sps = run_tf(ds)
                        else:
                            sps = run_py(pool, workload, strategy, inputs[strategy])
                        if repeat < 0:
                            continue
                        runs.append((workload, strategy, peer, repeat, args.threads, samples,
                                     sps))
                        print(f"{workload:8} {strategy:20} {peer:10} run {repeat}: "
                              f"{sps:8.1f} samples/s", flush=True)
    values = {}
    for workload, strategy, peer, _, _, _, sps in runs:
        values.setdefault((workload, strategy, peer), []).append(sps)
    median = {key: statistics.median(v) for key, v in values.items()}

    def cell(key):
        v = values[key]
        return f"{median[key]:.0f} ({min(v):.0f}-{max(v):.0f})"

    lines = [
        f"{args.threads} threads, warm page cache; samples: "
        + ", ".join(f"{w} {n}" for w, n in sizes.items())
        + f"; medians of {args.repeats} alternating runs in samples/s (range in brackets); "
        "ratios of medians.",
        "",
        "| workload | strategy | prepbench | tf.data | Python loader | prepbench / tf.data | "
        "prepbench / Python |",
        "|---|---|---|---|---|---|---|",
    ]
    for workload in chosen:
        for s_ in WORKLOADS[workload]["pipeline"].strategies:
            key = lambda peer: (workload, s_, peer)  # noqa: E731
            p, t, y = (median[key(peer)] for peer in PEERS)
            short = " (epochs under 1 s)" if sizes[workload] / max(p, t, y) < 1.0 else ""
            lines.append(f"| {workload} | {s_}{short} | {cell(key('prepbench'))} | "
                         f"{cell(key('tf.data'))} | {cell(key('python'))} | {p / t:.2f}x | "
                         f"{p / y:.2f}x |")
    if args.photos:
        lines[0] = (f"Real photographs ({os.path.abspath(args.photos)}, {sizes['cv']} files), "
                    + lines[0])
        lines += [
            "",
            "The decoder's limit: a strategy that decodes online can go no faster than "
            f"{args.threads} workers decoding at prepbench's own rate (step:decoded in "
            "stages.csv of the runs above); samples/s:",
            "",
            "| strategy | decoder limit | prepbench | prepbench / limit | tf.data / limit | "
            "Python / limit |",
            "|---|---|---|---|---|---|",
        ]
        for s_ in ("unprocessed", "concatenated"):
            limit = decode_roofline(work, prepbench_rows.get(("cv", s_), []), args.threads)
            if limit:
                p, t, y = (median[("cv", s_, peer)] for peer in PEERS)
                lines.append(f"| {s_} | {limit:.1f} | {p:.1f} | {p / limit:.2f} | "
                             f"{t / limit:.2f} | {y / limit:.2f} |")
    if not args.no_read and "cv" in chosen and not args.photos:
        lines += read_table(binary, work, args, runs)
    if not args.no_scaling and not args.photos and all(w in chosen for w, _ in SCALING_ONLINE):
        lines += scaling_table(binary, work, args, runs)
    import librosa
    import soundfile
    import tiktoken
    import lxml.etree

    lines += [
        "",
        f"tensorflow {tf.__version__}, Pillow {PIL.__version__}, NumPy {np.__version__}, "
        f"soundfile {soundfile.__version__} (libsndfile {soundfile.__libsndfile_version__}), "
        f"librosa {librosa.__version__}, lxml {lxml.etree.__version__}, "
        f"tiktoken {tiktoken.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} logical cores.",
    ]
    table = "\n".join(lines) + "\n"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "runs.csv"), "w") as f:
        f.write("workload,strategy,peer,repeat,threads,samples,value\n")
        for workload, strategy, peer, repeat, threads, samples, value in runs:
            f.write(f"{workload},{strategy},{peer},{repeat},{threads},{samples},{value:.3f}\n")
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "commands.txt"), "w") as f:
        # As a user types it (the script enters its own virtual environment).
        f.write(" ".join(["python3", "scripts/peers/run_peers.py", *sys.argv[1:]]) + "\n")
    print(table)


if __name__ == "__main__":
    in_venv(__file__)
    main()
