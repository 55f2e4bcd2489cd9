"""The paper's NLP steps under the `torch` loader, as a PyTorch user's Dataset runs them: HTML
extraction and BPE in Python per sample (here prepbench's own extractor and GPT-2 BPE, called
from the worker through `native.Online.apply`, so the output is native's exactly), and the
embedding as a lookup in a torch tensor of the table native processing uses (its rows read
once, by looking up every id).

These ops need the run's `native.Online` and their step's index (`bind`), which
`_loader.Chain` gives each op that asks.
"""

from ._torch_steps import Op, _tensor, _torch
from .store import TEXT_OPS, embed_table, text_op


class NativeText(Op):
    """`extract_text` (a page's bytes to its text) or `bpe_encode` (text to int32 ids [n]):
    prepbench's code (`store.text_op`)."""

    op = ""
    imports = ("numpy",)

    def __init__(self, params):
        super().__init__(params)
        self.run = None
        _, (self.source, self.to) = text_op(None, None, self.op, params)

    def bind(self, online, step_index):
        self.run, _ = text_op(online, step_index, self.op, self.params)

    def __call__(self, value):
        out = self.run(value)
        return out if TEXT_OPS[self.op][1] == "text" else _tensor(out)


class ExtractText(NativeText):
    op = "extract_text"


class BpeEncode(NativeText):
    op = "bpe_encode"


class Embed(Op):
    """int32 ids [n] to float32 [n, dim]: `torch.nn.functional.embedding` over native's
    seeded table."""

    imports = ("numpy", "torch")

    def __init__(self, params):
        super().__init__(params)
        self.source = params.get("from") or "tokens"
        self.to = params.get("to") or "embedded"
        self.table = None

    def bind(self, online, step_index):
        self.table = _tensor(embed_table(online, step_index, self.params))

    def __call__(self, ids):
        torch = _torch()
        ids = _tensor(ids).long()
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.table.shape[0]):
            raise ValueError(f"embed: token id outside the table of {self.table.shape[0]} rows")
        return torch.nn.functional.embedding(ids, self.table)
