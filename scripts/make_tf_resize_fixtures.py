#!/usr/bin/env python3
"""Reference outputs of TensorFlow's resize for `resize_shorter` with `antialias: false`
(workloads/tests/tf_resize.rs): the paper's pipelines resized with `tf.image.resize` (bilinear,
no antialiasing, half-pixel centres) and cast the float32 result back with `tf.cast(uint8)`.

Installs tensorflow-cpu 2.16 and NumPy in scripts/.venv-tf, then for a few generated uint8 RGB
images (smooth gradients, noise and hard edges, fixed seed; reductions and an enlargement)
writes <name>.input.npy and <name>.tf.npy, the image resized so its shorter side is 64 with
the output size computed as prepbench does (integer arithmetic), and sizes.json with the
output size the paper's float32 arithmetic gives, for comparison.

    python3 scripts/make_tf_resize_fixtures.py
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "workloads", "tests", "fixtures", "tf_resize")
PACKAGES = ["tensorflow-cpu==2.16.*", "numpy<2"]
SIZE = 64
# (name, height, width): a 3x reduction, a reduction with odd ratios, a portrait one, and an
# enlargement.
IMAGES = [("wide", 192, 256), ("odd", 157, 211), ("tall", 150, 97), ("small", 40, 50)]


def in_venv():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _venv import enter

    enter(".venv-tf", PACKAGES, __file__)


def image(np, rng, h, w):
    y, x = np.mgrid[0:h, 0:w]
    r = 255 * (x / max(w - 1, 1))
    g = 255 * (0.5 + 0.5 * np.sin(y / 7.0) * np.cos(x / 11.0))
    b = np.where((x // 9 + y // 9) % 2 == 0, 230.0, 20.0)
    px = np.stack([r, g, b], axis=-1) + rng.normal(0, 12, (h, w, 3))
    return np.clip(np.round(px), 0, 255).astype(np.uint8)


def main():
    in_venv()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(2022)
    sizes = {}
    for name, h, w in IMAGES:
        px = image(np, rng, h, w)
        short = min(h, w)
        nh, nw = (SIZE, w * SIZE // h) if h <= w else (h * SIZE // w, SIZE)
        out = tf.cast(tf.image.resize(tf.constant(px), [nh, nw]), tf.uint8).numpy()
        np.save(os.path.join(OUT, f"{name}.input.npy"), px)
        np.save(os.path.join(OUT, f"{name}.tf.npy"), out)
        scaler = np.float32(SIZE) / np.float32(short)
        sizes[name] = {
            "prepbench": [nh, nw],
            "paper_float32": [int(np.float32(h) * scaler), int(np.float32(w) * scaler)],
        }
    with open(os.path.join(OUT, "sizes.json"), "w") as f:
        json.dump({"tensorflow": tf.__version__, "size": SIZE, "images": sizes}, f, indent=1)
    print("wrote", OUT, "with TensorFlow", tf.__version__)


if __name__ == "__main__":
    main()
