#!/usr/bin/env python3
"""Writes the CREAM-layout fixture read by the datasets crate's tests, with h5py (the library
CREAM's own files are read with), so prepbench's reader is checked against a file it did not
write. Two seconds of a 50 Hz grid at 6.4 kHz with a known formula (see the test).

    pip install h5py numpy && python3 scripts/make_cream_fixture.py
"""
import os

import h5py
import numpy as np

RATE = 6400
OUT = os.path.join(os.path.dirname(__file__), "..", "datasets", "tests", "fixtures", "cream", "2018-08-23")


def main():
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "X8_2018-08-23T00-00-00.hdf5")
    i = np.arange(2 * RATE)
    voltage = np.round(26000 * np.sin(2 * np.pi * 50 * i / RATE)).astype(np.int16) + np.int16(37)
    current = np.round(4000 * np.sin(2 * np.pi * 50 * i / RATE - 0.5)).astype(np.int16) - np.int16(11)
    with h5py.File(path, "w", libver="latest") as f:
        f.attrs["frequency"] = float(RATE)
        for name, data, factor in (("voltage", voltage, 0.0125), ("current", current, 0.0005)):
            ds = f.create_dataset(name, data=data, chunks=(4096,), compression="gzip", shuffle=True)
            ds.attrs["calibration_factor"] = factor
            ds.attrs["offset"] = 0.0
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
