"""NILM's hour parse as a framework's user writes it, shared by the Python loaders' forms
(`_tf_nilm`, `_torch_steps`): h5py reads the CREAM file, NumPy removes the offsets and
calibrates, as the CREAM dataset's own loader does in Python per file.
"""

#: The mains frequency of the CREAM recordings (Germany), which sets the offsets' period.
MAINS_HZ = 50.0


def per_period_offsets(counts, period):
    """The voltage's offset per sample as the paper's pipeline removes it: the mean of each
    mains period (the last zero-padded to full length), placed at evenly spaced integer sample
    positions from the first sample to the last and interpolated linearly between them."""
    import numpy as np

    n = len(counts)
    pad = period - n % period
    periods = (n + pad) // period
    padded = np.zeros(n + pad, np.float64)
    padded[:n] = counts
    means = padded.reshape(periods, period).sum(axis=1) / period
    if periods == 1:
        return np.full(n, means[0])
    step = (n - 1) / (periods - 1)
    positions = np.floor(np.arange(periods, dtype=np.float64) * step + 1.0)
    positions[-1] = n
    return np.interp(np.arange(1, n + 1, dtype=np.float64), positions, means)


def parse_hour(data, offsets):
    """An hour's HDF5 bytes -> (float64 [2, samples]: volts, amperes; the rate in Hz)."""
    import io

    import h5py
    import numpy as np

    with h5py.File(io.BytesIO(bytes(data)), "r") as hour:
        rate = float(hour.attrs["frequency"])
        if not (np.isfinite(rate) and rate > 0 and rate == int(rate)):
            raise ValueError(f"read_cream_hour: root attribute `frequency` is {rate}, not a "
                             "whole rate in Hz")
        channels = []
        for name in ("voltage", "current"):
            dataset = hour[name]
            channels.append((dataset[()].astype(np.int16).reshape(-1),
                             float(dataset.attrs["calibration_factor"])))
    (v, v_factor), (i, i_factor) = channels
    if len(v) != len(i) or len(v) == 0:
        raise ValueError(f"read_cream_hour: voltage has {len(v)} samples, current {len(i)}")
    if offsets == b"mean":
        v_offset, i_offset = v.astype(np.float64).mean(), i.astype(np.float64).mean()
    else:
        v_offset = per_period_offsets(v, max(int(round(rate / MAINS_HZ)), 1))
        i_offset = v_offset * np.sqrt(0.5)
    signal = np.empty((2, len(v)), np.float64)
    signal[0] = (v - v_offset) * v_factor
    signal[1] = (i - i_offset) * i_factor
    return signal, np.int32(rate)
