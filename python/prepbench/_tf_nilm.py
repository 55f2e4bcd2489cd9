"""The paper's NILM steps before its features, for the `tf-data` loader: an hour's HDF5 file
parsed with h5py inside `tf.numpy_function` (as the CREAM dataset's own loader reads it, in
Python per file), its offsets removed and its counts calibrated in NumPy; and `window`, the
fan-out step, as tf.data cuts one element into many: `tf.signal.frame` and a dataset of the
windows per hour, flattened by `flat_map`. The windows' ids are the native engine's (item <<
CHILD_ID_BITS | window), so --verify compares each with its native output.
"""

from ._nilm import parse_hour
from ._tf_steps import Form, _tf


class ReadCreamHour(Form):
    """An hour's HDF5 file (bytes) to its calibrated [2, samples] float64 signal and its
    sample rate, by h5py and NumPy in `tf.numpy_function`; exact but for the order of float64
    sums (an offset's mean, interpolation as `np.interp` computes it)."""

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = params.get("from") or "data"
        self.to = params.get("to") or "signal"
        self.offsets = str(params.get("offsets") or "per_period")

    def __call__(self, f, context):
        tf = _tf()
        signal, rate = tf.numpy_function(parse_hour, [f.pop(self.source), self.offsets],
                                         [tf.float64, tf.int32], stateful=False)
        f[self.to] = tf.ensure_shape(signal, [2, None])
        f["sample_rate"] = tf.ensure_shape(rate, [])


class Window(Form):
    """`window`: a [channels, samples] field cut into consecutive windows [channels, length]
    (a partial last one dropped), one element per window carrying the other fields: the
    element's dataset for `flat_map`."""

    fans_out = True

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.field = params.get("field") or "signal"
        self.length = int(params["length"])
        self.hop = int(params.get("hop") or self.length)

    def _frames(self, fields):
        tf = _tf()
        # [channels, windows, length] -> [windows, channels, length]
        frames = tf.signal.frame(fields[self.field], self.length, self.hop, axis=1)
        return tf.transpose(frames, [1, 0, 2])

    def expand(self, sample_id, fields):
        """The windows of one element as a dataset of (child id, fields)."""
        from . import native

        tf = _tf()
        frames = self._frames(fields)
        count = tf.shape(frames, out_type=tf.int64)[0]
        parent = tf.bitwise.left_shift(tf.cast(sample_id, tf.int64),
                                       tf.constant(native().CHILD_ID_BITS, tf.int64))
        ids = tf.cast(parent + tf.range(count, dtype=tf.int64), tf.uint64)
        others = {k: v for k, v in fields.items() if k != self.field}
        field = self.field

        def merge(pair, rest):
            child_id, window = pair
            return child_id, dict(rest, **{field: window})

        windows = tf.data.Dataset.from_tensor_slices((ids, frames))
        return tf.data.Dataset.zip((windows, tf.data.Dataset.from_tensors(others).repeat()))\
            .map(merge)

    def first(self, sample_id, fields):
        """The first window's (id, fields), eagerly (what the forms after it learn from)."""
        from . import native

        tf = _tf()
        frames = self._frames(fields)
        if int(tf.shape(frames)[0]) == 0:
            raise ValueError(f"window: the first sample is shorter than one window of "
                             f"{self.length}")
        fields = dict(fields, **{self.field: frames[0]})
        return int(sample_id) << native().CHILD_ID_BITS, fields
