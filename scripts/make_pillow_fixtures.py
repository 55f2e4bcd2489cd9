#!/usr/bin/env python3
"""Golden outputs from Pillow for the image steps' fidelity tests (workloads/tests/pillow.rs).

Installs Pillow and NumPy in scripts/.venv, generates three ImageNet-style images with
prepbench (seed 1), shrinks each to a small JPEG with Pillow (the inputs), then writes, losslessly
as PNG, what Pillow computes from them: the decoded RGB image, its bilinear resize with the
shorter side 64 (Image.resize(..., BILINEAR), which antialiases when reducing), and its
greyscale (convert("L")). Running it again writes identical files.

    python3 scripts/make_pillow_fixtures.py
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "workloads", "tests", "fixtures", "pillow")


def in_venv():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _venv import enter

    enter(".venv", ["pillow", "numpy"], __file__)


def main():
    in_venv()
    from PIL import Image, features

    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.check_call(["cargo", "run", "--release", "-q", "--", "generate", "imagenet", "--samples", "3", "--seed", "1", "--out", tmp, "--quiet"], cwd=ROOT)
        sources = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(tmp, "train")) for f in fs)
        for i, path in enumerate(sources):
            small = Image.open(path).convert("RGB").resize((200, 150), Image.BILINEAR)
            jpeg = os.path.join(OUT, f"{i}.jpg")
            small.save(jpeg, quality=90, optimize=False, progressive=False, subsampling=2)
            decoded = Image.open(jpeg).convert("RGB")
            decoded.save(os.path.join(OUT, f"{i}.decoded.png"), optimize=False)
            w, h = decoded.size
            # Shorter side 64, the longer one truncated (torchvision's Resize(int) convention).
            size = (int(64 * w / h), 64) if h <= w else (64, int(64 * h / w))
            decoded.resize(size, Image.BILINEAR).save(os.path.join(OUT, f"{i}.resized64.png"), optimize=False)
            decoded.convert("L").save(os.path.join(OUT, f"{i}.grey.png"), optimize=False)
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write("Golden outputs of Pillow " + Image.__version__ + " (libjpeg-turbo " + str(features.version("libjpeg_turbo")) + ") for the image steps, written by scripts/make_pillow_fixtures.py.\n")
    print("wrote fixtures to", OUT)


if __name__ == "__main__":
    main()
