"""The pipelines every peer runs, step by step as the workload files define them (see
run_peers.py), and what they share: the workloads' datasets, per-process state, file lists.
"""
import glob
import io
import os
import subprocess
import sys


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


def in_venv(script):
    """Re-executes `script` in the peers' virtual environment (made when missing)."""
    sys.path.insert(0, os.path.dirname(HERE))
    from _venv import enter

    if "--records" in sys.argv:
        # tf.data alone: the TensorFlow environment the resize fixtures use.
        enter(".venv-tf", ["tensorflow-cpu==2.16.*", "numpy<2"], script)
    else:
        enter(".venv-peers", PACKAGES, script)


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
