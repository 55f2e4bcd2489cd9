"""The paper's NILM aggregation in NumPy, as its pipeline computed it in Python: per mains
period (128 samples at 6.4 kHz) of a [2, samples] window (voltage, current), the active power
mean(v * i), the RMS current sqrt(mean(i^2)) and the cumulative sum of the RMS current minus
its mean over the window: [3, periods] float64, as prepbench's `nilm_features` gives it."""
import numpy as np


def features(window, period=128, periods=500):
    if window.ndim != 2 or window.shape[0] != 2 or window.shape[1] < period * periods:
        raise ValueError(f"expected [2, at least {period * periods}] voltage and current, "
                         f"got {list(window.shape)}")
    voltage = window[0, :period * periods].reshape(periods, period)
    current = window[1, :period * periods].reshape(periods, period)
    power = (voltage * current).mean(axis=1)
    rms = np.sqrt((current * current).mean(axis=1))
    centred = np.cumsum(rms - rms.mean())
    return np.stack([power, rms, centred])
