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
import glob
import io
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PACKAGES = ["tensorflow-cpu==2.16.*", "tensorflow-io==0.37.*", "numpy<2", "pillow",
            "soundfile", "librosa", "lxml", "tiktoken"]
PEERS = ["prepbench", "tf.data", "python"]
CROP = 224
SHORTER = 256
MEL_BINS = 80
FFT = 1024
# tf.signal.linear_to_mel_weight_matrix's default edges.
MEL_EDGES = (125.0, 3800.0)
VOCABULARY, EMBED_DIM = 50257, 768


# ---------------------------------------------------------------- the pipelines


class Image:
    """cv (ImageNet-style JPEG) and cv2-png (Cube++ 16-bit PNG)."""

    strategies = ["unprocessed", "resized"]
    stages = ["resized"]

    def __init__(self, fmt):
        self.fmt = fmt

    def tf_dtype(self, tf, stage):
        return tf.uint8

    def tf_stage(self, tf, stage, x):
        if self.fmt == "jpeg":
            image = tf.io.decode_jpeg(x, channels=3)
        else:
            wide = tf.io.decode_png(x, channels=3, dtype=tf.uint16)
            image = tf.cast(tf.round(tf.cast(wide, tf.float32) / 257.0), tf.uint8)
        shape = tf.shape(image)
        h, w = tf.cast(shape[0], tf.float32), tf.cast(shape[1], tf.float32)
        scale = SHORTER / tf.minimum(h, w)
        size = tf.cast(tf.round([h * scale, w * scale]), tf.int32)
        resized = tf.image.resize(image, size, method="bilinear", antialias=True)
        return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)

    def tf_tail(self, tf, x):
        centred = tf.cast(x, tf.float32) / 127.5 - 1.0
        return tf.image.random_crop(centred, [CROP, CROP, 3])

    def py_stage(self, stage, x):
        import numpy as np
        from PIL import Image as PILImage

        # Pillow reads a 16-bit RGB PNG as 8-bit RGB (its high bytes) by itself.
        with PILImage.open(io.BytesIO(x)) as image:
            rgb = image.convert("RGB")
        w, h = rgb.size
        scale = SHORTER / min(w, h)
        return np.asarray(rgb.resize((round(w * scale), round(h * scale)),
                                     PILImage.BILINEAR))

    def py_tail(self, x, rng):
        import numpy as np

        centred = x.astype(np.float32) / 127.5 - 1.0
        y = rng.integers(0, centred.shape[0] - CROP + 1)
        x0 = rng.integers(0, centred.shape[1] - CROP + 1)
        return np.ascontiguousarray(centred[y:y + CROP, x0:x0 + CROP])


class Audio:
    """mp3 (Common Voice-style 48 kHz clips) and flac (LibriSpeech-style 16 kHz utterances)."""

    strategies = ["unprocessed", "decoded", "spectrogram-encoded"]
    stages = ["decoded", "spectrogram-encoded"]

    def __init__(self, fmt, rate, frame, hop):
        self.fmt, self.rate, self.frame, self.hop = fmt, rate, frame, hop

    def tf_dtype(self, tf, stage):
        return tf.int16 if stage == "decoded" else tf.float32

    def tf_stage(self, tf, stage, x):
        import tensorflow_io as tfio

        if stage == "decoded":
            if self.fmt == "mp3":
                pcm = tf.reduce_mean(tfio.audio.decode_mp3(x), axis=1)
                return tf.cast(tf.clip_by_value(tf.round(pcm * 32768.0), -32768, 32767),
                               tf.int16)
            return tfio.audio.decode_flac(x, dtype=tf.int16)[:, 0]
        signal = tf.cast(x, tf.float32) / 32768.0
        stft = tf.signal.stft(signal, self.frame, self.hop, FFT,
                              window_fn=tf.signal.hann_window)
        matrix = tf.signal.linear_to_mel_weight_matrix(MEL_BINS, FFT // 2 + 1, self.rate,
                                                       *MEL_EDGES)
        return tf.math.log(tf.tensordot(tf.abs(stft), matrix, 1) + 1e-8)

    def tf_tail(self, tf, x):
        return x

    def py_stage(self, stage, x):
        import numpy as np

        if stage == "decoded":
            import soundfile

            pcm, _ = soundfile.read(io.BytesIO(x), dtype="int16", always_2d=True)
            if pcm.shape[1] == 1:
                return pcm[:, 0]
            return pcm.mean(axis=1).round().astype(np.int16)
        import librosa

        spectrum = np.abs(librosa.stft(x.astype(np.float32) / 32768.0, n_fft=FFT,
                                       hop_length=self.hop, win_length=self.frame,
                                       window="hann", center=False))
        return np.log(cached("mel", self.mel_matrix) @ spectrum + 1e-8).T

    def mel_matrix(self):
        import librosa

        return librosa.filters.mel(sr=self.rate, n_fft=FFT, n_mels=MEL_BINS, fmin=MEL_EDGES[0],
                                   fmax=MEL_EDGES[1], htk=True, norm=None)

    def py_tail(self, x, rng):
        return x


# Elements never part of the article, and class or id words marking boilerplate, as the
# extract_text step drops them.
SKIPPED = ["script", "style", "noscript", "template", "nav", "header", "footer", "aside",
           "form", "button", "select", "textarea", "iframe", "svg", "canvas", "object", "embed"]
BOILERPLATE = {"ad", "ads", "advert", "advertisement", "banner", "byline", "comment",
               "comments", "cookie", "cookies", "menu", "newsletter", "popup", "promo",
               "related", "share", "sidebar", "social"}
BLOCKS = ["p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "blockquote", "pre", "dt", "dd",
          "figcaption"]


def extract_text(page):
    """The article's paragraphs from HTML bytes, with lxml."""
    import re

    import lxml.html

    doc = lxml.html.fromstring(page)
    roots = (doc.xpath("//article") or doc.xpath("//main|//*[@role='main']")
             or doc.xpath("//body") or [doc])
    root = roots[0]
    split = re.compile(r"[-_\s]+")
    for el in list(root.iter(*SKIPPED)):
        el.drop_tree()
    for el in list(root.iter()):
        marks = split.split((el.get("class") or "") + " " + (el.get("id") or ""))
        if el.get("hidden") is not None or any(m.lower() in BOILERPLATE for m in marks):
            if el.getparent() is not None:
                el.drop_tree()
    paragraphs = (" ".join(b.text_content().split()) for b in root.iter(*BLOCKS))
    text = "\n\n".join(p for p in paragraphs if p)
    return text or " ".join(root.text_content().split())


def r50k():
    """tiktoken's r50k_base (GPT-2), its ranks read from the file tiktoken-rs bundles in the
    cargo registry (the same ranks prepbench uses; no download)."""
    import tiktoken
    import tiktoken.load
    import tiktoken_ext.openai_public as public

    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    files = sorted(glob.glob(os.path.join(home, "registry", "src", "*", "tiktoken-rs-*",
                                          "assets", "r50k_base.tiktoken")))
    if not files:
        sys.exit("no tiktoken-rs r50k_base.tiktoken in the cargo registry: build prepbench")
    public.load_tiktoken_bpe = lambda url, expected_hash=None: tiktoken.load.load_tiktoken_bpe(
        files[-1], expected_hash=expected_hash)
    return tiktoken.Encoding(**public.r50k_base())


def embedding_table():
    """Seeded uniform [-0.05, 0.05) float32, GPT-2's vocabulary x width (about 154 MB)."""
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.uniform(-0.05, 0.05, (VOCABULARY, EMBED_DIM)).astype(np.float32)


class Text:
    """nlp (OpenWebText-style HTML pages)."""

    strategies = ["unprocessed", "bpe-encoded"]
    stages = ["decoded", "bpe-encoded", "embedded"]

    def tf_dtype(self, tf, stage):
        return {"decoded": tf.string, "bpe-encoded": tf.int32, "embedded": tf.float32}[stage]

    def tf_stage(self, tf, stage, x):
        if stage == "decoded":
            text = tf.numpy_function(lambda page: extract_text(scalar(page)).encode(), [x],
                                     tf.string)
            return tf.reshape(text, [])
        if stage == "bpe-encoded":
            import numpy as np

            ids = tf.numpy_function(
                lambda t: np.asarray(cached("bpe", r50k).encode_ordinary(scalar(t).decode()),
                                     dtype=np.int32), [x], tf.int32)
            return tf.reshape(ids, [-1])
        # A variable made eagerly (tf_setup), captured by handle rather than copied into
        # every traced function as a 154 MB constant.
        return tf.gather(CACHE["tf-table"], x)

    def tf_tail(self, tf, x):
        return x

    def py_stage(self, stage, x):
        import numpy as np

        if stage == "decoded":
            return np.asarray(extract_text(x))
        if stage == "bpe-encoded":
            return np.asarray(cached("bpe", r50k).encode_ordinary(str(x)), dtype=np.int32)
        return np.take(cached("table", embedding_table), x, axis=0)

    def py_tail(self, x, rng):
        return x


CACHE = {}


def scalar(x):
    """A tf.numpy_function argument holding one string, as bytes."""
    return x.item() if hasattr(x, "item") else x


def cached(name, make):
    """Per-process state built once (mel matrices, the BPE encoder, the embedding table)."""
    if name not in CACHE:
        CACHE[name] = make()
    return CACHE[name]


# Each workload: its dataset kind and folder, where its files are and how they end, its
# pipeline, and the sample-count argument it takes.
WORKLOADS = {
    "cv": dict(kind="imagenet", folder="imagenet-seed0", under="train", ending=".JPEG",
               pipeline=Image("jpeg"), samples="samples"),
    "cv2-png": dict(kind="cubepp-png", folder="cubepp-seed0", under="PNG", ending=".png",
                    pipeline=Image("png"), samples="png_samples"),
    "mp3": dict(kind="commonvoice", folder="commonvoice-seed0", under="clips", ending=".mp3",
                pipeline=Audio("mp3", 48000, 960, 480), samples="mp3_samples"),
    "flac": dict(kind="librispeech", folder="librispeech-seed0", under=".", ending=".flac",
                 pipeline=Audio("flac", 16000, 320, 160), samples="flac_samples"),
    "nlp": dict(kind="openwebtext", folder="openwebtext-seed0", under=".", ending=".txt",
                pipeline=Text(), samples="text_samples"),
}


def offline_stages(pipeline, strategy):
    """The stages a strategy stores (none for unprocessed) and those left online."""
    if strategy == "unprocessed":
        return [], pipeline.stages
    cut = pipeline.stages.index(strategy) + 1
    return pipeline.stages[:cut], pipeline.stages[cut:]


def in_venv():
    sys.path.insert(0, os.path.dirname(HERE))
    from _venv import enter

    if "--records" in sys.argv:
        # tf.data alone: the TensorFlow environment the resize fixtures use.
        enter(".venv-tf", ["tensorflow-cpu==2.16.*", "numpy<2"], __file__)
    else:
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


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------- prepbench


def prepbench_row(binary, work, workload, strategy, samples, threads, cache, extra=(),
                  out="prepbench-out"):
    """One epoch of `prepbench run` as its runs.csv row (JSON), results under work/out."""
    import json

    command = [binary, "run", workload, "--strategy", strategy, "--samples", str(samples),
               "--threads", str(threads), "--cache", cache, "--epochs", "1", "--json", "--quiet",
               "--data-dir", os.path.join(work, "data"), "--store-dir", os.path.join(work, "store"),
               "--out", os.path.join(work, out), *extra]
    if cache == "cold":
        command += ["--evict", "fadvise"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_prepbench(binary, work, workload, strategy, samples, threads):
    return prepbench_row(binary, work, workload, strategy, samples, threads,
                         "warm")["throughput_sps"]


def photos_workload(binary, work):
    """The CV workload reading a flat folder of .jpg photographs (the `files` kind): its YAML
    path. Steps and strategies are the reference `cv` workload's."""
    cv = subprocess.run([binary, "workload", "show", "cv"], check=True, capture_output=True,
                        text=True).stdout
    start, end = cv.index("dataset:"), cv.index("steps:")
    yaml = os.path.join(work, "cv-photos.yaml")
    os.makedirs(work, exist_ok=True)
    with open(yaml, "w") as f:
        f.write(cv[:start].replace("name: cv\n", "name: cv-photos\n").replace("paper: cv\n", "")
                + "dataset:\n  kind: files\n  options: {glob: \"*.jpg\"}\n" + cv[end:])
    return yaml


def decode_roofline(work, strategy_runs, threads):
    """The decoder's limit for the strategies that decode online: `threads` workers each
    decoding at prepbench's measured rate (step:decoded seconds per sample, summed over workers,
    from stages.csv of the timed runs). Samples/s."""
    import csv

    ids = {row["run_id"] for row in strategy_runs}
    with open(os.path.join(work, "prepbench-out", "stages.csv")) as f:
        decode = [float(r["seconds"]) for r in csv.DictReader(f)
                  if r["run_id"] in ids and r["stage"] == "step:decoded"]
    samples = sum(row["samples"] for row in strategy_runs)
    return threads * samples / sum(decode) if decode else None


# ---------------------------------------------------------------- tf.data


def tf_setup(threads, text):
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    if text:
        CACHE["tf-table"] = tf.Variable(embedding_table(), trainable=False)
    return tf


def tf_options(tf, threads):
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    options.deterministic = False
    return options


def tf_materialize(tf, pipeline, strategy, files, path):
    stored, _ = offline_stages(pipeline, strategy)
    with tf.io.TFRecordWriter(path) as writer:
        for f in files:
            x = tf.io.read_file(f)
            for stage in stored:
                x = pipeline.tf_stage(tf, stage, x)
            writer.write(tf.io.serialize_tensor(x).numpy())


def tf_dataset(tf, pipeline, strategy, files, records, threads):
    stored, online = offline_stages(pipeline, strategy)

    def rest(x):
        for stage in online:
            x = pipeline.tf_stage(tf, stage, x)
        return pipeline.tf_tail(tf, x)

    if strategy == "unprocessed":
        ds = tf.data.Dataset.from_tensor_slices(files).map(
            lambda f: rest(tf.io.read_file(f)), num_parallel_calls=threads)
    else:
        dtype = pipeline.tf_dtype(tf, stored[-1])
        ds = tf.data.TFRecordDataset(records, num_parallel_reads=threads).map(
            lambda r: rest(tf.io.parse_tensor(r, dtype)), num_parallel_calls=threads)
    return ds.prefetch(threads * 4).with_options(tf_options(tf, threads))


def run_tf(ds):
    """One epoch over a tf.data dataset built once (as a training loop iterates it)."""
    start = time.perf_counter()
    n = 0
    for sample in ds:
        sample.numpy().flat[0]
        n += 1
    return n / (time.perf_counter() - start)


# ---------------------------------------------------------------- Python loader


def py_item(task):
    """One sample in a worker process, as a DataLoader worker's __getitem__."""
    import numpy as np

    workload, strategy, path, index = task
    pipeline = WORKLOADS[workload]["pipeline"]
    stored, online = offline_stages(pipeline, strategy)
    x = np.load(path) if stored else read_bytes(path)
    for stage in online:
        x = pipeline.py_stage(stage, x)
    return pipeline.py_tail(x, np.random.default_rng(index))


def py_warm_up(text):
    """Imports each worker's libraries and builds its per-process state (the BPE encoder and
    embedding table when `text`) before timing, as a DataLoader's workers are started once."""
    import librosa
    import numpy as np
    import soundfile  # noqa: F401
    from PIL import Image as _  # noqa: F401

    # librosa's first STFT takes about a second (lazy imports, FFT set-up).
    librosa.stft(np.zeros(4096, np.float32), n_fft=FFT, center=False)

    if text:
        cached("bpe", r50k)
        cached("table", embedding_table)
    time.sleep(0.5)  # so that every worker takes one task
    return os.getpid()


def py_materialize(pipeline, strategy, files, folder):
    import numpy as np

    stored, _ = offline_stages(pipeline, strategy)
    os.makedirs(folder, exist_ok=True)
    out = []
    for i, f in enumerate(files):
        x = read_bytes(f)
        for stage in stored:
            x = pipeline.py_stage(stage, x)
        path = os.path.join(folder, f"{i:06d}.npy")
        np.save(path, x)
        out.append(path)
    return out


def run_py(pool, workload, strategy, paths):
    tasks = [(workload, strategy, p, i) for i, p in enumerate(paths)]
    start = time.perf_counter()
    n = 0
    for sample in pool.imap(py_item, tasks, chunksize=4):
        sample.flat[0]
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


# ---------------------------------------------------------------- prepbench's own scaling


# CPU-bound strategies (everything online from the raw files), and the strategies whose
# materialization is timed (the most offline work each workload stores).
SCALING_ONLINE = [("cv", "unprocessed"), ("mp3", "unprocessed"), ("flac", "unprocessed"),
                  ("nlp", "unprocessed")]
SCALING_OFFLINE = [("cv", "resized"), ("mp3", "spectrogram-encoded"),
                   ("flac", "spectrogram-encoded"), ("nlp", "bpe-encoded")]


def scaling_table(binary, work, args, runs):
    """prepbench at 1 and T threads, alternating: online throughput (warm) of the CPU-bound
    strategies and materialization time (`--rematerialize`) of stored ones."""
    top = args.threads
    speedups = []
    lines = [
        "",
        f"prepbench's own scaling, 1 -> {top} threads (medians of {args.repeats} alternating "
        "runs; online: warm epochs of the strategies with every step online, in samples/s; "
        "offline: materializing the strategy again, in samples/s of offline time):",
        "",
        f"| workload | strategy | phase | 1 thread | {top} threads | speedup |",
        "|---|---|---|---|---|---|",
    ]
    for phase, cells in (("online", SCALING_ONLINE), ("offline", SCALING_OFFLINE)):
        for workload, strategy in cells:
            samples = getattr(args, WORKLOADS[workload]["samples"])
            values = {1: [], top: []}
            for repeat in range(args.repeats):
                for threads in (1, top):
                    if phase == "online":
                        sps = run_prepbench(binary, work, workload, strategy, samples, threads)
                    else:
                        row = prepbench_row(binary, work, workload, strategy, samples, threads,
                                            "warm", ["--rematerialize"])
                        sps = samples / row["offline_s"]
                    values[threads].append(sps)
                    runs.append((workload, f"{strategy} {phase}", "prepbench", repeat, threads,
                                 samples, sps))
            one, many = statistics.median(values[1]), statistics.median(values[top])
            speedups.append(many / one)
            print(f"scaling {workload:8} {strategy:20} {phase:8} {one:8.1f} -> {many:8.1f} "
                  f"samples/s ({many / one:.2f}x)", flush=True)
            lines.append(f"| {workload} | {strategy} | {phase} | {one:.0f} | {many:.0f} | "
                         f"{many / one:.2f}x |")
    return lines


# ---------------------------------------------------------------- the codecs alone


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


# ---------------------------------------------------------------- main


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
    in_venv()
    main()
