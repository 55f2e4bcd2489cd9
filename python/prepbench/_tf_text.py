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
from .store import TEXT_OPS, embed_table, text_op


class NativeText(Form):
    """`extract_text` (a page's bytes to its text) or `bpe_encode` (text to int32 ids [n]):
    prepbench's code run on the field through `tf.numpy_function` (`store.text_op`)."""

    learns = True  # the first sample runs eagerly, so the loader learns which fields are text
    uses_epoch = True  # the native op is handed the epoch: the map is built again each epoch
    op = ""

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.gives = TEXT_OPS[self.op][1]
        self.run = None
        _, (self.source, self.to) = text_op(None, step_index, self.op, params)

    def bind(self, online):
        self.run, _ = text_op(online, self.step_index, self.op, self.params)

    def texts_after(self, texts):
        """The text fields after this step, from those before."""
        texts = set(texts) - {self.source}
        if self.gives == "text":
            texts.add(self.to)
        return texts

    def _apply(self, sample_id, epoch, value):
        import numpy as np

        # A scalar string tensor arrives as a 0-d object array holding its bytes.
        value = value.item() if isinstance(value, np.ndarray) else value
        out = self.run(value, int(sample_id), epoch)
        if self.gives == "text":
            return out.encode("utf-8")
        return np.ascontiguousarray(out, dtype=self.gives)

    def __call__(self, f, context):
        tf = _tf()
        _, sample_id, epoch = context
        value = f.pop(self.source)
        dtype = tf.string if self.gives == "text" else tf.as_dtype(self.gives)
        out = tf.numpy_function(lambda i, v: self._apply(i, epoch, v), [sample_id, value],
                                dtype, stateful=False)
        f[self.to] = tf.ensure_shape(out, [] if self.gives == "text" else [None])


class ExtractText(NativeText):
    op = "extract_text"


class BpeEncode(NativeText):
    op = "bpe_encode"


class Embed(Form):
    """int32 ids [n] to float32 [n, dim] by `tf.gather` from native's seeded table."""

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = params.get("from") or "tokens"
        self.to = params.get("to") or "embedded"
        self.table = None

    def bind(self, online):
        self.table = _tf().constant(embed_table(online, self.step_index, self.params))

    def __call__(self, f, context):
        tf = _tf()
        ids = f.pop(self.source)
        # Ids outside the table fail the lookup, as natively.
        tf.debugging.assert_less(ids, tf.shape(self.table, out_type=ids.dtype)[0],
                                 message="embed: a token id outside the table")
        tf.debugging.assert_non_negative(ids, message="embed: a negative token id")
        f[self.to] = tf.gather(self.table, ids)
