"""What prepbench's steps in another framework's form share: how far from native processing a
chain of them may be, and the check of an output against it.

Each form says by how much its output may differ from the native step's, in 8-bit levels
(`levels`: per value, on average), and what it multiplies a difference by (`gain`); a chain's
bounds are the sum of its forms' levels, each carried through the gain of the forms after it
(`tolerance`), and `--verify` takes an output as native's when it is within them (`within`),
allowing `BEYOND` of its values past the per-value bound (a JPEG decoder's rare far pixels).
"""

#: The share of an output's values allowed past the per-value bound.
BEYOND = 0.001


def tolerance(ops):
    """(per value, mean) difference from native processing that a chain of these ops may give, in
    the units of its output: each op's own levels (in what one 8-bit level has become where it
    runs) added to what came before, then carried through the gain of every op after it."""
    largest = mean = 0.0
    level = 1.0
    for op in ops:
        largest = (largest + op.levels[0] * level) * op.gain
        mean = (mean + op.levels[1] * level) * op.gain
        level *= op.gain
    return largest, mean


def exp_fields(ops):
    """The fields a chain leaves as logarithms (a `log` step's): compared as exp(value), where
    the bounds carried through the linear steps before the log hold."""
    return {op.to for op in ops if getattr(op, "compared_as_exp", False)}


def within(got, expected, bounds, exp=()):
    """None when every field of `got` matches `expected` (same names, kinds, shapes and dtypes;
    arrays within `bounds`, a (per value, mean) pair, with at most `BEYOND` of their values
    past the first; the rest equal); else what differs. Fields named in `exp` are compared as
    exp(value)."""
    import numpy as np

    largest, mean = bounds
    if set(got) != set(expected):
        return f"fields {sorted(got)} against {sorted(expected)}"
    for name, value in got.items():
        reference = expected[name]
        if isinstance(value, (bytes, str)) or isinstance(reference, (bytes, str)):
            if value != reference:
                return f"field `{name}` differs"
            continue
        a, b = np.asarray(value), np.asarray(reference)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"field `{name}`: {a.dtype}{list(a.shape)} against {b.dtype}{list(b.shape)}"
        # Equal values are within any bounds (one pass, where most outputs of exact forms end).
        if a.size == 0 or np.array_equal(a, b):
            continue
        floating = b.dtype.kind == "f"
        if b.dtype.kind in "iub" and b.dtype.itemsize <= 2 and name not in exp:
            # 8- and 16-bit values differ exactly in 32-bit integers, half float64's bytes.
            diff = np.abs(a.astype(np.int32) - b.astype(np.int32))
        else:
            a, b = a.astype(np.float64), b.astype(np.float64)
            if name in exp:
                a, b = np.exp(a), np.exp(b)
            diff = np.abs(a - b)
        # float32 arithmetic in another order: a few units in the last place beside the levels.
        slack = 1e-5 * max(1.0, float(np.abs(b).max())) if floating else 0.0
        beyond = float(np.count_nonzero(diff > largest + slack)) / diff.size
        average = float(diff.mean())
        if beyond > BEYOND or average > mean + slack:
            return (f"field `{name}`: {beyond:.3%} of its values differ by more than "
                    f"{largest:.4g} (allowed {BEYOND:.1%}), {average:.4g} on average (allowed "
                    f"{mean:.4g}); at most {float(diff.max()):.4g}")
    return None
