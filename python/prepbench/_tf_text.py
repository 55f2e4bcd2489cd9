"""The paper's NLP steps under the `tf-data` loader, as its stack ran them: HTML extraction and
BPE are Python per record in a TensorFlow pipeline (the paper called `newspaper` through
`tf.py_function`), here prepbench's own extractor and GPT-2 BPE called through
`tf.numpy_function` (`native.Online.apply`), so that each record pays what the paper's did,
one trip into Python holding the GIL, and gives native's output exactly; the embedding is
`tf.gather` from the table native processing uses (its rows read once, by looking up every
id), as the paper's `tf.nn.embedding_lookup`.

These forms need the run's `native.Online` (`bind`), which `_tfdata.Pipeline` gives each form
that asks.
"""

from ._tf_steps import Form, _tf
from .store import record_field as _field


class NativeText(Form):
    """`extract_text` (a page's bytes to its text) or `bpe_encode` (text to int32 ids [n]):
    prepbench's code run on the field through `tf.numpy_function`."""

    learns = True  # the first sample runs eagerly, so the loader learns which fields are text
    #: (the kind the op reads, the kind it gives: "bytes", "text", or a NumPy dtype)
    KINDS = {"extract_text": ("bytes", "text"), "bpe_encode": ("text", "int32")}

    def __init__(self, params, step_index, op):
        super().__init__(params, step_index)
        self.op = op
        self.source = params.get("from") or ("data" if op == "extract_text" else "text")
        self.to = params.get("to") or ("text" if op == "extract_text" else "tokens")
        self.online = None

    def bind(self, online):
        self.online = online

    def texts_after(self, texts):
        """The text fields after this step, from those before."""
        texts = set(texts) - {self.source}
        if self.KINDS[self.op][1] == "text":
            texts.add(self.to)
        return texts

    def _apply(self, sample_id, epoch, value):
        import numpy as np

        reads, gives = self.KINDS[self.op]
        # A scalar string tensor arrives as a 0-d object array holding its bytes.
        value = value.item() if isinstance(value, np.ndarray) else value
        record = self.online.apply(self.step_index, int(sample_id), epoch,
                                   [(self.source, reads, None, [], bytes(value))])
        out = _field(record, self.to)
        if gives == "text":
            return out.encode("utf-8")
        return np.ascontiguousarray(out, dtype=gives)

    def __call__(self, f, context):
        tf = _tf()
        _, sample_id, epoch = context
        value = f.pop(self.source)
        gives = self.KINDS[self.op][1]
        dtype = tf.string if gives == "text" else tf.as_dtype(gives)
        out = tf.numpy_function(lambda i, v: self._apply(i, epoch, v), [sample_id, value],
                                dtype, stateful=False)
        f[self.to] = tf.ensure_shape(out, [] if gives == "text" else [None])


class ExtractText(NativeText):
    def __init__(self, params, step_index):
        super().__init__(params, step_index, "extract_text")


class BpeEncode(NativeText):
    def __init__(self, params, step_index):
        super().__init__(params, step_index, "bpe_encode")


class Embed(Form):
    """int32 ids [n] to float32 [n, dim] by `tf.gather` from native's seeded table."""

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = params.get("from") or "tokens"
        self.to = params.get("to") or "embedded"
        self.table = None

    def bind(self, online):
        import numpy as np

        tf = _tf()
        rows = int(self.params.get("vocabulary") or 50257)
        ids = np.arange(rows, dtype=np.int32)
        record = online.apply(self.step_index, 0, 0,
                              [(self.source, "tensor", ids.dtype.str, [rows], ids.tobytes())])
        self.table = tf.constant(np.asarray(_field(record, self.to), dtype=np.float32))

    def __call__(self, f, context):
        tf = _tf()
        ids = f.pop(self.source)
        # Ids outside the table fail the lookup, as natively.
        tf.debugging.assert_less(ids, tf.shape(self.table, out_type=ids.dtype)[0],
                                 message="embed: a token id outside the table")
        tf.debugging.assert_non_negative(ids, message="embed: a negative token id")
        f[self.to] = tf.gather(self.table, ids)
