#!/usr/bin/env python3
"""Reference outputs for the NLP and NILM steps' tests (workloads/tests/text_nilm_reference.rs).

Installs tiktoken, h5py and NumPy in scripts/.venv, then:

1. builds OpenAI's tiktoken r50k_base encoding from the ranks file bundled in the tiktoken-rs
   crate (the file prepbench's `bpe_encode` uses; found in the cargo registry, checked against
   tiktoken's published SHA-256 of r50k_base, no network), and writes the token ids
   (`encode_ordinary`) of a generated OpenWebText-style page and of hand-picked edge cases;
2. writes a 10-second CREAM-style recording with h5py (int16 voltage and current at 6.4 kHz, a
   50 Hz grid with harmonics, a load switching on and off, noise, ADC offsets drifting over the
   recording) and the NILM features NumPy computes for it after removing the offsets as the
   CREAM loader the paper used does (per-period voltage means, zero-padded to whole periods,
   at evenly spaced integer positions, interpolated linearly per sample; the current's offset
   is the voltage's / sqrt(2)): per 128-sample period over 500 periods, active power, RMS
   current, and the cumulative sum of the RMS current minus its mean; and a file with no
   `current` dataset, for the error path.

    python3 scripts/make_text_nilm_fixtures.py
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "workloads", "tests", "fixtures")
PACKAGES = ["tiktoken", "h5py", "numpy"]

EDGE_CASES = [
    "Hello world",
    "",
    "  leading and trailing spaces  ",
    "It's what they'd've said; we'll see. DON'T SHOUT!",
    "Numbers: 3.14159, 1,000,000 and 2022-06-12T10:00:00Z.",
    "Tabs\tand\nnew\n\nlines\r\n and   runs of     spaces",
    "Unicode: café, naïve, Straße, Ελληνικά, русский, 日本語, 한국어, emoji 🙂🚀",
    "<|endoftext|> is ordinary text to encode_ordinary",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "def f(x):\n    return {'k': [x ** 2 for x in range(10)]}  # code",
]


def in_venv():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _venv import enter

    enter(".venv", PACKAGES, __file__)


def r50k_from_crate():
    """tiktoken's r50k_base, its ranks read from tiktoken-rs's bundled file."""
    import tiktoken
    import tiktoken.load
    import tiktoken_ext.openai_public as public

    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    files = sorted(glob.glob(os.path.join(home, "registry", "src", "*", "tiktoken-rs-*", "assets", "r50k_base.tiktoken")))
    if not files:
        sys.exit("no tiktoken-rs r50k_base.tiktoken in the cargo registry: run `cargo build` first")
    local = files[-1]

    def load(url, expected_hash=None):
        # Same file, same published hash check, no download.
        return tiktoken.load.load_tiktoken_bpe(local, expected_hash=expected_hash)

    public.load_tiktoken_bpe = load
    return tiktoken.Encoding(**public.r50k_base()), local


def tokens(out_dir):
    enc, local = r50k_from_crate()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.check_call(["cargo", "run", "--release", "-q", "--", "generate", "openwebtext", "--samples", "1", "--seed", "7", "--out", tmp, "--quiet"], cwd=ROOT)
        with open(os.path.join(tmp, "0.txt"), encoding="utf-8") as f:
            page = f.read()
    cases = [{"text": t, "ids": enc.encode_ordinary(t)} for t in [page] + EDGE_CASES]
    with open(os.path.join(out_dir, "tokens.json"), "w", encoding="utf-8") as f:
        json.dump({"tiktoken": __import__("tiktoken").__version__, "ranks": os.path.basename(os.path.dirname(os.path.dirname(local))), "cases": cases}, f, ensure_ascii=False)


def nilm(out_dir):
    import h5py
    import numpy as np

    rate, seconds = 6400, 10
    n = rate * seconds
    t = np.arange(n) / rate
    rng = np.random.default_rng(20221)
    grid = 2 * np.pi * 50 * t
    volts = 325 * np.sin(grid) + 6 * np.sin(3 * grid + 0.3) + 3 * np.sin(5 * grid) + rng.normal(0, 0.8, n)
    on = ((t > 2.5) & (t < 7.2)).astype(float)
    amps = 0.1 * np.sin(grid - 0.9) + on * (7.9 * np.sin(grid - 0.02) + 0.4 * np.sin(3 * grid)) + rng.normal(0, 0.01, n)
    factors = {"voltage": 0.0125, "current": 0.0005}
    offsets = {"voltage": 37.0, "current": -11.0}
    # The ADC's DC level drifts by a few counts over the recording.
    drift = 4.0 * np.sin(2 * np.pi * t / seconds)
    counts = {
        "voltage": np.round(volts / factors["voltage"] + offsets["voltage"] + drift).astype(np.int16),
        "current": np.round(amps / factors["current"] + offsets["current"] + drift / np.sqrt(2)).astype(np.int16),
    }
    path = os.path.join(out_dir, "window.hdf5")
    with h5py.File(path, "w", libver="latest") as f:
        f.attrs["frequency"] = float(rate)
        for name in ("voltage", "current"):
            ds = f.create_dataset(name, data=counts[name], chunks=(8000,), compression="gzip", shuffle=True)
            ds.attrs["calibration_factor"] = factors[name]
            ds.attrs["offset"] = offsets[name]

    # Read back with h5py and remove the offsets as the paper's loader does; then the features
    # per period.
    with h5py.File(path, "r") as f:
        raw_v = f["voltage"][:] * 1.0
        raw_i = f["current"][:] * 1.0
        length = len(raw_v)
        period = round(f.attrs["frequency"] / 50)
        padded = np.pad(raw_v, (0, period - length % period), "constant", constant_values=0)
        means = padded.reshape(-1, period).mean(axis=1)
        at = np.floor(np.linspace(1, length, len(means)))
        offset = np.interp(np.arange(1, length + 1), at, means)
        v = (raw_v - offset) * f["voltage"].attrs["calibration_factor"]
        i = (raw_i - offset / np.sqrt(2)) * f["current"].attrs["calibration_factor"]
    v, i = v[: 128 * 500].reshape(500, 128), i[: 128 * 500].reshape(500, 128)
    power = (v * i).mean(axis=1)
    rms = np.sqrt((i * i).mean(axis=1))
    features = np.stack([power, rms, np.cumsum(rms - rms.mean())])
    np.save(os.path.join(out_dir, "window.features.npy"), features)

    # A file missing its current channel, for the error path.
    with h5py.File(os.path.join(out_dir, "no-current.hdf5"), "w", libver="latest") as f:
        f.attrs["frequency"] = float(rate)
        ds = f.create_dataset("voltage", data=counts["voltage"][:640])
        ds.attrs["calibration_factor"] = factors["voltage"]


def main():
    in_venv()
    import numpy as np

    os.makedirs(os.path.join(OUT, "text"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "nilm"), exist_ok=True)
    tokens(os.path.join(OUT, "text"))
    nilm(os.path.join(OUT, "nilm"))
    print("wrote", os.path.join(OUT, "text"), "and", os.path.join(OUT, "nilm"), "with NumPy", np.__version__)


if __name__ == "__main__":
    main()
