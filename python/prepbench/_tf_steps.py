"""prepbench's steps in TensorFlow ops, for the `tf-data` loader, as the paper's pipelines
wrote them: `tf.io.decode_jpeg`, `tf.io.decode_png` (16-bit down-converted),
`tf.image.resize` without antialias cast to uint8, pixel centring, a random crop; and the
store's records parsed by TensorFlow ops (`parser`), so that no Python runs per record unless
a step is the user's Python (run through `tf.numpy_function`, as the paper ran its Python).

Each form takes and gives the fields its native step does ([height, width, channels] images).
Random forms draw from prepbench's own generator written in TensorFlow's uint64 ops (`Rng`:
the same SplitMix64 stream, seeded from the run's seed, the sample, the epoch and the step),
so a crop takes the same window natively and here. Where a form cannot give the native bytes
it says by how much it may differ (`levels`, `gain`: see `_forms`).
"""

import struct

from ._forms import exp_fields, tolerance, within  # noqa: F401 - the loader asks them here

OPS = ("read_file", "decode_jpeg", "decode_png", "decode_npy", "resize_shorter", "pixel_center",
       "grayscale", "normalize", "random_crop", "random_hflip", "decode_audio", "stft",
       "magnitude", "mel", "log", "read_cream_hour", "window", "nilm_features", "extract_text",
       "bpe_encode", "embed")

_GOLDEN = 0x9E3779B97F4A7C15
#: The draws a random form looks up per sample (`Form.draws`): a crop takes two.
DRAWS = 2
#: The most ids a random form's draw table covers (16 bytes each); a store or source with
#: more draws in ops.
MAX_TABLE_IDS = 1 << 22


def _tf():
    import tensorflow as tf

    return tf


#: The checks of the map function being traced (`checked`), or `None` outside one.
_PENDING = None


def check(condition, message):
    """Checks `condition` (a boolean tensor) for the sample, failing its map with `message`:
    in the map being traced, gathered into the one `Assert` `checked` makes at its end (each
    `Assert` costs a map's element more than its own op: docs/decisions.md); elsewhere (eager
    mode, a function of its own) at once."""
    if _PENDING is None:
        _tf().debugging.Assert(condition, [message])
    else:
        _PENDING.append((condition, message))


#: The text an `Assert` of `checked` starts with; `explain` finds it in tf.data's error.
_CHECKS = "the prepbench checks, 1 held and 0 failed"
_SEPARATOR = " || "


def checked(fn):
    """`fn`, a tf.data map's function, with the checks its forms make (`check`) in one `Assert`
    that its output waits on. The `Assert` prints the checks' messages and a flag per check
    (int32: an `Assert` printing a tensor of another dtype guards itself with a `tf.cond`,
    which costs every element); `explain` reads which failed from tf.data's error. Choosing
    the failed messages in the map cost 3 % (a mask of strings) to 4 % (a gather) of a CV
    `resized` epoch's rate in a probe (docs/decisions.md)."""
    tf = _tf()

    def run(*args):
        global _PENDING
        outer, _PENDING = _PENDING, []
        try:
            out = fn(*args)
            pending = _PENDING
        finally:
            _PENDING = outer
        if not pending:
            return out
        passed = tf.stack([tf.reshape(c, []) for c, _ in pending])
        said = _CHECKS + ": " + _SEPARATOR.join(m for _, m in pending)
        flags = tf.cast(passed, tf.int32)
        with tf.control_dependencies([tf.debugging.Assert(tf.reduce_all(passed), [said, flags],
                                                          summarize=len(pending))]):
            flat = tf.nest.flatten(out)
            flat[0] = tf.identity(flat[0])
        return tf.nest.pack_sequence_as(out, flat)

    return run


def explain(message):
    """tf.data's error `message` with a failed `checked` `Assert` said as the checks that
    failed, a Python step's failure (`PythonSteps`) as its own line without the traceback of
    TensorFlow's frames that `tf.numpy_function` wraps it in; other errors as they are."""
    import re

    step = re.search(r"RuntimeError: (step `[^`\n]*` failed on sample \d+: [^\n]*)", message)
    if step is not None:
        return step.group(1)
    found = re.search(re.escape(_CHECKS) + r": (.*?)\] \[([01 ]+)\]", message, re.S)
    if found is None:
        return message
    # TensorFlow's error escapes quotes in the printed string.
    messages = found.group(1).replace("\\'", "'").replace('\\"', '"').split(_SEPARATOR)
    flags = found.group(2).split()
    if len(flags) != len(messages):
        return message
    return "; ".join(m for m, flag in zip(messages, flags) if flag == "0")


class Rng:
    """prepbench's `SeededRng` (workloads/src/rng.rs) in TensorFlow uint64 ops."""

    def __init__(self, parts):
        tf = _tf()
        self.tf = tf
        state = tf.constant(0x5EED, tf.uint64)
        for part in parts:
            part = self._c(part) if isinstance(part, int) else tf.cast(part, tf.uint64)
            state = self._mix(tf.bitwise.bitwise_xor(state, part + self._c(_GOLDEN)))
        self.state = state

    def _c(self, value):
        return self.tf.constant(value, self.tf.uint64)

    def _mix(self, z):
        tf = self.tf
        shift = tf.bitwise.right_shift
        z = tf.bitwise.bitwise_xor(z, shift(z, self._c(30))) * self._c(0xBF58476D1CE4E5B9)
        z = tf.bitwise.bitwise_xor(z, shift(z, self._c(27))) * self._c(0x94D049BB133111EB)
        return tf.bitwise.bitwise_xor(z, shift(z, self._c(31)))

    def next_u64(self):
        self.state = self.state + self._c(_GOLDEN)
        return self._mix(self.state)

    def index(self, n):
        """An index in [0, n): the next draw modulo n, as `SeededRng::index` draws it."""
        tf = self.tf
        return tf.cast(self.next_u64() % tf.cast(n, tf.uint64), tf.int64)

    def unit(self):
        tf = self.tf
        top = tf.bitwise.right_shift(self.next_u64(), self._c(11))
        return tf.cast(top, tf.float64) * (1.0 / (1 << 53))


def _mix_np(z):
    """SplitMix64's finaliser on a NumPy uint64 array (wrapping, as the u64 ops do)."""
    import numpy as np

    u = np.uint64
    z = (z ^ (z >> u(30))) * u(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> u(27))) * u(0x94D049BB133111EB)
    return z ^ (z >> u(31))


def draw_table(seed, epoch, step_index, count, draws=DRAWS):
    """The first `draws` outputs of `Rng([seed, id, epoch, step_index])` for every id below
    `count`, as a [count, draws] uint64 array computed at once in NumPy: the same stream as
    the TensorFlow ops (and prepbench's `SeededRng`), without a hundred scalar ops per
    element in the map."""
    import numpy as np

    def u64(value):
        # A one-element array: array sums wrap silently, NumPy scalars warn on overflow.
        return np.array([value], np.uint64)

    golden = u64(_GOLDEN)
    seeded = _mix_np(u64(0x5EED) ^ (u64(seed) + golden))
    state = _mix_np(seeded ^ (np.arange(count, dtype=np.uint64) + golden))
    for part in (epoch, step_index):
        state = _mix_np(state ^ (u64(part) + golden))
    out = np.empty((count, draws), np.uint64)
    for k in range(draws):
        state = state + golden
        out[:, k] = _mix_np(state)
    return out


class Form:
    """One step in TensorFlow: `__call__(fields, context)` changes the dict of tensors."""

    levels = (0.0, 0.0)
    gain = 1.0
    #: Whether the form draws from prepbench's generator (`draws`).
    random = False

    @property
    def uses_epoch(self):
        """Whether the form's ops depend on the epoch (a random form's draws do): the map is
        then built again each epoch (`Pipeline.epoch_bound`)."""
        return self.random

    def __init__(self, params, step_index):
        self.params = params
        self.step_index = step_index
        self.source = params.get("field") or params.get("from")
        self.to = params.get("field") or params.get("to")
        #: The ids below which a random form looks its draws up (`ids`; 0: none).
        self.ids = 0
        #: The last epoch's table: ((seed, epoch), its draws).
        self._table = (None, None)

    def rng(self, context):
        seed, sample_id, epoch = context
        return Rng([seed, sample_id, epoch, self.step_index])

    def draws(self, context):
        """The sample's first `DRAWS` draws looked up in the epoch's table, and whether it
        has them there (its id below `ids`); `None` without a table."""
        tf = _tf()
        seed, sample_id, epoch = context
        if self.ids <= 0:
            return None
        if self._table[0] != (seed, epoch):
            # The NumPy array kept, not a tensor: each epoch's map is a graph of its own.
            self._table = ((seed, epoch), draw_table(seed, epoch, self.step_index, self.ids))
        sample_id = tf.cast(sample_id, tf.uint64)
        known = sample_id < tf.constant(self.ids, tf.uint64)
        row = tf.minimum(sample_id, tf.constant(self.ids - 1, tf.uint64))
        return tf.gather(tf.constant(self._table[1]), tf.cast(row, tf.int64)), known


class ReadFile(Form):
    def __call__(self, f, context):
        tf = _tf()
        path = f[self.source]
        if not self.params.get("keep_path"):
            del f[self.source]
        f[self.to] = tf.io.read_file(path)


class DecodeJpeg(Form):
    # libjpeg-turbo against prepbench's decoder (as `_torch_steps.DecodeJpeg`), with its
    # accurate integer IDCT, as torchvision's decoder and Pillow use: TensorFlow's default, the
    # fast one, is 1.9 levels from an accurate decoder on average on quality-96 photographs,
    # with 0.6 % of values 9 to 29 levels off (docs/decisions.md).
    levels = (8.0, 1.0)

    def __call__(self, f, context):
        f[self.to] = _tf().io.decode_jpeg(
            f.pop(self.source), channels=3, dct_method="INTEGER_ACCURATE"
        )


class DecodePng(Form):
    def __call__(self, f, context):
        tf = _tf()
        image = tf.io.decode_png(f.pop(self.source), channels=3, dtype=tf.uint16)
        if self.params.get("to_uint8", True):
            # v * 255 / 65535 rounded (an 8-bit file decodes to v * 257: v again).
            image = tf.cast(tf.math.round(tf.cast(image, tf.float64) * (255.0 / 65535.0)),
                            tf.uint8)
        f[self.to] = image


#: .npy `descr` -> TensorFlow dtype name, as `decode_npy` reads them (little-endian, C order).
_NPY_DTYPES = {"|u1": "uint8", "<u1": "uint8", "<u2": "uint16", "<i2": "int16", "<i4": "int32",
               "<f4": "float32", "<f8": "float64"}


def npy_descr(data):
    """The `descr` of .npy bytes, read in Python (once, on the first sample: a traced map
    needs its output's dtype before it runs)."""
    import re

    if data[:6] != b"\x93NUMPY" or len(data) < 10:
        raise ValueError("not a .npy file (no \\x93NUMPY magic)")
    start, length = (10, struct.unpack("<H", data[8:10])[0]) if data[6] == 1 else \
        (12, struct.unpack("<I", data[8:12])[0])
    match = re.search(r"'descr':\s*'([^']*)'", data[start:start + length].decode("latin-1"))
    if match is None or match.group(1) not in _NPY_DTYPES:
        raise ValueError(f".npy dtype {match and match.group(1)!r} is not supported")
    return match.group(1)


class DecodeNpy(Form):
    """A .npy file parsed in TensorFlow ops: its header's length, shape and order read with
    string ops, its data by `decode_raw`. The dtype is learnt from the first sample (`learns`),
    and every later file must declare the same one."""

    learns = True

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = params.get("from", "data")
        self.to = params.get("to", "array")
        self.descr = None

    def __call__(self, f, context):
        import re

        tf = _tf()
        data = f.pop(self.source)
        if self.descr is None:
            # The first sample, run eagerly before the map is traced (`_tfdata._learn`).
            self.descr = npy_descr(data.numpy())
        tf.debugging.assert_equal(tf.strings.substr(data, 0, 6), b"\x93NUMPY",
                                  message="decode_npy: not a .npy file (no \\x93NUMPY magic)")
        version = tf.io.decode_raw(tf.strings.substr(data, 6, 1), tf.uint8)[0]
        v1 = tf.cast(tf.io.decode_raw(tf.strings.substr(data, 8, 2), tf.uint16)[0], tf.int32)
        v2 = tf.io.decode_raw(tf.strings.substr(data, 8, 4), tf.int32)[0]
        start = tf.where(version == 1, 10, 12)
        length = tf.where(version == 1, v1, v2)
        header = tf.strings.substr(data, start, length)
        for pattern, what in (
            (r"'descr':\s*'" + re.escape(self.descr) + "'", f"dtype {self.descr} (the first file's)"),
            (r"'fortran_order':\s*False", "C order (Fortran-order arrays are not supported)"),
        ):
            tf.debugging.assert_equal(tf.strings.regex_full_match(header, "(?s).*" + pattern + ".*"),
                                      True, message=f"decode_npy: a .npy file is not {what}")
        dims = tf.strings.regex_replace(header, r"(?s)^.*'shape':\s*\(([^)]*)\).*$", r"\1")
        parts = tf.strings.strip(tf.strings.split(dims, ","))
        parts = tf.boolean_mask(parts, tf.strings.length(parts) > 0)
        shape = tf.strings.to_number(parts, tf.int64)
        body = tf.strings.substr(data, start + length, tf.strings.length(data) - start - length)
        array = tf.io.decode_raw(body, getattr(tf, _NPY_DTYPES[self.descr]), little_endian=True)
        f[self.to] = tf.reshape(array, shape)


class ResizeShorter(Form):
    # The paper's tf.image.resize is what prepbench computes; the sums' order may differ:
    # one level where a value lies on an integer boundary.
    levels = (1.0, 1.0)

    def __call__(self, f, context):
        tf = _tf()
        image = f[self.source]
        shape = tf.shape(image, out_type=tf.int64)
        h, w, size = shape[0], shape[1], tf.constant(self.params["size"], tf.int64)
        short_h = h <= w
        nh = tf.where(short_h, size, tf.maximum(h * size // w, 1))
        nw = tf.where(short_h, tf.maximum(w * size // h, 1), size)
        resized = tf.image.resize(image, tf.cast(tf.stack([nh, nw]), tf.int32), method="bilinear",
                                  antialias=bool(self.params["antialias"]))
        if self.params["antialias"]:
            resized = tf.math.round(resized)
        f[self.to] = tf.cast(tf.clip_by_value(resized, 0.0, 255.0), tf.uint8)


class PixelCenter(Form):
    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.gain = 1.0 / abs(params["scale"])

    def __call__(self, f, context):
        tf = _tf()
        f[self.to] = tf.cast(f[self.source], tf.float32) / self.params["scale"] \
            + self.params["offset"]


class Grayscale(Form):
    def __call__(self, f, context):
        tf = _tf()
        image = f[self.source]
        if image.dtype == tf.uint8:
            # Pillow's (prepbench's) fixed-point weights, exactly.
            x = tf.cast(image, tf.int32)
            luma = (x[..., 0:1] * 19595 + x[..., 1:2] * 38470 + x[..., 2:3] * 7471 + 32768)
            f[self.to] = tf.cast(tf.bitwise.right_shift(luma, 16), tf.uint8)
        else:
            f[self.to] = (0.299 * image[..., 0:1] + 0.587 * image[..., 1:2]
                          + 0.114 * image[..., 2:3])


class Normalize(Form):
    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.gain = abs(params["scale"]) / min(abs(s) for s in params["std"])

    def __call__(self, f, context):
        tf = _tf()
        scale = self.params["scale"]
        a = tf.constant([scale / s for s in self.params["std"]], tf.float32)
        b = tf.constant([-m / s for m, s in zip(self.params["mean"], self.params["std"])],
                        tf.float32)
        f[self.to] = tf.cast(f[self.source], tf.float32) * a + b


class RandomCrop(Form):
    random = True

    def __call__(self, f, context):
        tf = _tf()
        image = f[self.source]
        shape = tf.shape(image, out_type=tf.int64)
        ch, cw = self.params["height"], self.params["width"]
        sides = shape[:2] - tf.constant([ch - 1, cw - 1], tf.int64)
        small = f"random_crop: cannot crop {ch}x{cw}: image too small"
        looked_up = self.draws(context)
        if looked_up is None:
            tf.debugging.assert_greater_equal(shape[0], tf.constant(ch, tf.int64), message=small)
            tf.debugging.assert_greater_equal(shape[1], tf.constant(cw, tf.int64), message=small)
            rng = self.rng(context)
            corner = tf.stack([rng.index(sides[0]), rng.index(sides[1])])
        else:
            # The corner in one op from the table's two draws (`SeededRng::index`), and the
            # checks in the map's one `Assert` (`checked`): each op in the map costs every
            # element (docs/decisions.md). A side under one is made one for the modulo; the
            # check says the image is too small.
            table, known = looked_up
            corner = tf.cast(table % tf.cast(tf.maximum(sides, 1), tf.uint64), tf.int64)
            check(tf.reduce_all(sides > 0), small)
            check(known, "random_crop: a sample id beyond the draw table (report this)")
        rank = image.shape.rank
        if rank is None:
            f[self.to] = image[corner[0]:corner[0] + ch, corner[1]:corner[1] + cw]
            return
        # `tf.slice`, not `image[...]`: a strided slice of the same window cost ~30 us more.
        # Its size within the image's (the other axes whole), so that an image too small
        # reaches the map's check, which says so, rather than failing the slice first.
        size = tf.minimum(shape, tf.constant([ch, cw] + [1 << 62] * (rank - 2), tf.int64))
        f[self.to] = tf.slice(image, tf.pad(corner, [[0, rank - 2]]), size)


class RandomHflip(Form):
    random = True

    def __call__(self, f, context):
        tf = _tf()
        image = f[self.source]
        looked_up = self.draws(context)
        if looked_up is None:
            draw = self.rng(context).next_u64()
        else:
            table, known = looked_up
            check(known, "random_hflip: a sample id beyond the draw table (report this)")
            draw = table[0]
        unit = tf.cast(tf.bitwise.right_shift(draw, tf.constant(11, tf.uint64)),
                       tf.float64) * (1.0 / (1 << 53))
        # Columns walked backwards or forwards by one strided slice (whole ranges by the masks):
        # no `tf.cond`, and no copy where it does not flip.
        step = tf.where(unit < self.params["p"], -1, 1)
        rank = tf.rank(image)
        strides = tf.tensor_scatter_nd_update(tf.ones([rank], tf.int32), [[1]], [step])
        zeros = tf.zeros([rank], tf.int32)
        f[self.to] = tf.strided_slice(image, zeros, zeros, strides, begin_mask=-1, end_mask=-1)


class NilmFeatures(Form):
    """NILM's per-period features of a [2, samples] float64 window (voltage, current): active
    power mean(v * i), RMS current, and the RMS's cumulative sum less its mean, [3, periods]
    float64; sums in another order than natively, so float64 rounding apart."""

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = params.get("from") or "signal"
        self.to = params.get("to") or "features"

    def __call__(self, f, context):
        tf = _tf()
        period, periods = int(self.params.get("period", 128)), int(self.params.get("periods", 500))
        signal = f.pop(self.source)
        n = period * periods
        tf.debugging.assert_greater_equal(
            tf.shape(signal, out_type=tf.int64)[1], tf.constant(n, tf.int64),
            message=f"nilm_features: a window shorter than {periods} periods of {period}")
        voltage = tf.reshape(signal[0, :n], [periods, period])
        current = tf.reshape(signal[1, :n], [periods, period])
        power = tf.reduce_sum(voltage * current, axis=1) / period
        rms = tf.sqrt(tf.reduce_sum(current * current, axis=1) / period)
        f[self.to] = tf.stack([power, rms, tf.cumsum(rms - tf.reduce_sum(rms) / periods)])


# The audio steps' forms, which need `Form` above.
from ._tf_audio import DecodeAudio, Log, Magnitude, Mel, Stft  # noqa: E402
from ._tf_nilm import ReadCreamHour, Window  # noqa: E402
from ._tf_text import BpeEncode, Embed, ExtractText  # noqa: E402


CLASSES = {
    "read_file": ReadFile,
    "decode_jpeg": DecodeJpeg,
    "decode_png": DecodePng,
    "decode_npy": DecodeNpy,
    "resize_shorter": ResizeShorter,
    "pixel_center": PixelCenter,
    "grayscale": Grayscale,
    "normalize": Normalize,
    "random_crop": RandomCrop,
    "random_hflip": RandomHflip,
    "decode_audio": DecodeAudio,
    "stft": Stft,
    "magnitude": Magnitude,
    "mel": Mel,
    "log": Log,
    "read_cream_hour": ReadCreamHour,
    "window": Window,
    "nilm_features": NilmFeatures,
    "extract_text": ExtractText,
    "bpe_encode": BpeEncode,
    "embed": Embed,
}
assert tuple(CLASSES) == OPS


def make(op, params, step_index):
    return CLASSES[op](params, step_index)


class PythonSteps:
    """Consecutive Python steps of the workload, run on each sample through one
    `tf.numpy_function` (as the paper ran its Python), by the driver's own chain code with the
    native engine's seeds. The fields they give (names, types, ranks) are learnt from the first
    sample (`learn`), since TensorFlow needs them before the map is traced; a later sample
    giving other fields fails, named."""

    levels = (0.0, 0.0)
    gain = 1.0
    #: The steps are handed the epoch (their seeds): the map is built again each epoch.
    uses_epoch = True

    def __init__(self, chain, indices, online):
        self.chain, self.indices, self.online = chain, indices, online
        self.inputs = None
        self.outputs = None  # [(name, tf dtype, rank, text)]
        #: The tensors `.cache()` keeps (`--cache app`), by `Tensor.ref()`, while the map that
        #: reads them is traced: set by the pipeline before this form is called.
        self.cached = frozenset()

    def _run(self, sample_id, epoch, names, values, held=()):
        import numpy as np

        fields = {}
        for name, value in zip(names, values):
            if isinstance(value, (bytes, np.bytes_)):
                value = bytes(value)
                if name in self.texts_in:
                    value = value.decode("utf-8")
            elif name in held and isinstance(value, np.ndarray):
                # tf.numpy_function hands the step the cached tensor's own memory: a step
                # that wrote into it would change what `.cache()` serves every later epoch
                # (a normalization applied again each epoch), silently, as in a training
                # job. Read-only, such a step fails, named, below.
                value.flags.writeable = False
            fields[name] = value
        seeds = self.online.seeds(epoch, sample_id)
        error = self.chain.run(fields, [seeds[i] for i in self.indices], sample_id, epoch,
                               self.indices)
        if error is not None:
            step, message, _ = error
            if held and "read-only" in message:
                message += (
                    " (it writes into its input, which here is the memory of the sample "
                    "tf.data's .cache() keeps (--cache app): tf.numpy_function hands a step "
                    "the cached tensor itself, so each epoch would change what the next one "
                    "reads; copy the input before writing into it, e.g. `x = x.copy()` or "
                    "`x = x + 1` for `x += 1`)")
            raise RuntimeError(f"step `{step}` failed on sample {sample_id}: {message}")
        return fields

    def learn(self, fields, sample_id, epoch, texts):
        """Runs the steps on one sample's (eager) fields, learning what they give; the
        fields after them."""
        tf = _tf()
        self.inputs = list(fields)
        self.texts_in = set(texts)
        values = [v.numpy() for v in fields.values()]
        out = self._run(sample_id, epoch, self.inputs, values)
        self.outputs = []
        for name, value in out.items():
            if isinstance(value, (bytes, str)):
                self.outputs.append((name, tf.string, 0, isinstance(value, str)))
            else:
                self.outputs.append((name, tf.as_dtype(value.dtype), value.ndim, False))
        return {name: tf.constant(self._value(out[name])) for name, *_ in self.outputs}

    @staticmethod
    def _value(value):
        return value.encode("utf-8") if isinstance(value, str) else value

    def _expected(self):
        """What `_check` holds each sample's outputs to, made once per trace: the step that
        gives them, the first sample's field names, and per field its NumPy dtype and rank
        (None for text)."""
        tf = _tf()
        step = self.chain.names[self.indices[-1]]
        fields = [(name, None if dtype == tf.string else (dtype.as_numpy_dtype, rank))
                  for name, dtype, rank, _ in self.outputs]
        return step, [name for name, _ in fields], fields

    @staticmethod
    def _check(sample_id, out, expected):
        """Refuses, naming the step and the sample, outputs other than the first sample's
        fields, dtypes and ranks (`expected`): `tf.numpy_function` declares them before the
        map runs, and TensorFlow's own error names neither (prepbench's engine and the torch
        loader take samples that differ)."""
        import numpy as np

        step, names, fields = expected
        why = None
        if names != list(out):
            why = f"gave fields {list(out)}, the first sample {names}"
        else:
            for name, array in fields:
                value = out[name]
                if array is None:
                    if not isinstance(value, (bytes, str)):
                        why = f"gave `{name}` as {type(value).__name__}, the first sample as text"
                elif not isinstance(value, np.ndarray):
                    why = f"gave `{name}` as {type(value).__name__}, the first sample as an array"
                elif value.dtype != array[0] or value.ndim != array[1]:
                    why = (f"gave `{name}` as {value.dtype} of {value.ndim} dimensions, the first "
                           f"sample as {array[0].__name__} of {array[1]}")
                if why is not None:
                    break
        if why is not None:
            raise RuntimeError(
                f"step `{step}` failed on sample {sample_id}: it {why}: tf.data fixes each "
                "element's fields, dtypes and ranks from the first sample before it runs "
                "(tf.numpy_function's declared outputs), so under tf-data every sample must "
                "give the same ones (shapes may differ); convert in the step, as a tf.data "
                "pipeline of your own would need to")

    def texts(self):
        return {name for name, _, _, text in self.outputs if text}

    def __call__(self, f, context):
        tf = _tf()
        _, sample_id, epoch = context
        names = list(self.inputs)
        # The fields that reach these steps as `.cache()` keeps them (no form before wrote
        # them), known while the map is traced.
        held = frozenset(n for n in names if f[n].ref() in self.cached)
        expected = self._expected()

        def run(sample_id, *values):
            out = self._run(int(sample_id), epoch, names, values, held)
            self._check(int(sample_id), out, expected)
            return [self._value(out[name]) for name in expected[1]]

        values = tf.numpy_function(run, [sample_id] + [f[n] for n in names],
                                   [dtype for _, dtype, _, _ in self.outputs], stateful=False)
        f.clear()
        for (name, _, rank, _), value in zip(self.outputs, values):
            f[name] = tf.ensure_shape(value, [None] * rank)


# prepbench's record payload (workloads/src/encoding.rs): "PBS1", u32 field count, u64 id; per
# field u8 kind, u8 dtype, u8 ndim, u8 name length, u32 0, u64 data length, ndim x u64 dims,
# the name and the data each padded to 8 bytes.
_DTYPES = {1: "uint8", 2: "uint16", 3: "int16", 4: "int32", 5: "float32", 6: "float64"}
_TENSOR, _BYTES, _TEXT = 1, 2, 3


_MAGIC = struct.unpack("<I", b"PBS1")[0]


def _pad(n):
    return (n + 7) // 8 * 8


def schema(payload):
    """The fields of one record, in order: (name, kind, dtype, ndim, name length)."""
    if payload[:4] != b"PBS1":
        raise ValueError("not a prepbench record")
    count = struct.unpack_from("<I", payload, 4)[0]
    offset, fields = 16, []
    for _ in range(count):
        kind, dtype, ndim, name_len = payload[offset:offset + 4]
        data_len = struct.unpack_from("<Q", payload, offset + 8)[0]
        start = offset + 16 + 8 * ndim
        name = payload[start:start + name_len].decode()
        fields.append((name, kind, _DTYPES.get(dtype), ndim, name_len))
        offset = start + _pad(name_len) + _pad(data_len)
    return fields


def parser(fields):
    """A function of a record (a scalar string tensor) giving its sample id and fields, in
    TensorFlow ops, for records laid out as `fields` (every record of a store has its
    strategy's fields; one that does not fails its map, named by its position)."""
    tf = _tf()

    def parse(record):
        out = {}
        offset = tf.constant(16, tf.int64)
        head = None
        for name, kind, dtype, ndim, name_len in fields:
            if head is None:
                # The record's head (magic and count, sample id) and the first field's words
                # decoded at once.
                words = tf.io.decode_raw(tf.strings.substr(record, 0, 32 + 8 * ndim), tf.int64)
                head, words = words[:2], words[2:]
            else:
                words = tf.io.decode_raw(tf.strings.substr(record, offset, 16 + 8 * ndim),
                                         tf.int64)
            data_len = words[1]
            start = offset + 16 + 8 * ndim + _pad(name_len)
            data = tf.strings.substr(record, start, data_len)
            if kind == _TENSOR:
                value = tf.reshape(tf.io.decode_raw(data, getattr(tf, dtype)), words[2:2 + ndim])
                value = tf.ensure_shape(value, [None] * ndim)
            else:
                value = data
            out[name] = value
            offset = start + (data_len + 7) // 8 * 8
        if head is None:
            head = tf.io.decode_raw(tf.strings.substr(record, 0, 16), tf.int64)
        # The magic in the head's first word (little-endian).
        check(tf.equal(tf.bitwise.bitwise_and(head[0], 0xFFFFFFFF), _MAGIC),
              "not a prepbench record")
        return tf.bitcast(head[1], tf.uint64), out

    return parse
