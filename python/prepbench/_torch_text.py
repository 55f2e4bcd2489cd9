"""The paper's NLP steps under the `torch` loader, as a PyTorch user's Dataset runs them: HTML
extraction and BPE in Python per sample (here prepbench's own extractor and GPT-2 BPE, called
from the worker through `native.Online.apply`, so the output is native's exactly), and the
embedding as a lookup in a torch tensor of the table native processing uses (its rows read
once, by looking up every id).

These ops need the run's `native.Online` and their step's index (`bind`), which
`_loader.Chain` gives each op that asks.
"""

from ._torch_steps import Op, _tensor, _torch
from .store import record_field


class NativeText(Op):
    """`extract_text` (a page's bytes to its text) or `bpe_encode` (text to int32 ids [n])."""

    #: (the kind the op reads, the kind it gives), as `native.Online.apply` takes them
    KINDS = {"extract_text": ("bytes", "text"), "bpe_encode": ("text", "int32")}
    op = ""
    imports = ("numpy",)

    def __init__(self, params):
        super().__init__(params)
        self.source = params.get("from") or ("data" if self.op == "extract_text" else "text")
        self.to = params.get("to") or ("text" if self.op == "extract_text" else "tokens")
        self.online = self.step_index = None

    def bind(self, online, step_index):
        self.online, self.step_index = online, step_index

    def __call__(self, value):
        reads, gives = self.KINDS[self.op]
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        record = self.online.apply(self.step_index, 0, 0, [(self.source, reads, None, [], data)])
        out = record_field(record, self.to)
        return out if gives == "text" else _tensor(out)


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
        import numpy as np

        rows = int(self.params.get("vocabulary") or 50257)
        ids = np.arange(rows, dtype=np.int32)
        record = online.apply(step_index, 0, 0,
                              [(self.source, "tensor", ids.dtype.str, [rows], ids.tobytes())])
        self.table = _tensor(np.array(record_field(record, self.to), dtype=np.float32))

    def __call__(self, ids):
        torch = _torch()
        ids = _tensor(ids).long()
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.table.shape[0]):
            raise ValueError(f"embed: token id outside the table of {self.table.shape[0]} rows")
        return torch.nn.functional.embedding(ids, self.table)
