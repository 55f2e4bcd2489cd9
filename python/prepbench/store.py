"""Reading a store prepbench materialized, from your training loop.

`prepbench recommend` names a strategy; `prepbench store list` names the folder where its
store lies (one folder per materialization, holding `store.json` and its shards)::

    store = prepbench.open_store("stores/my-photos/resized/none-4sh-120n-0a1b2c3d4e")
    len(store), store.strategy, store.online_steps    # what is left to run each epoch
    sample = store[0]                                   # {"data": ndarray, "label": ..., ...}
    for sample in store:                                # every record, in shard order
        ...

Records are read by prepbench's own reader (Rust, `prepbench._native`): every codec (none,
gzip, zlib, zstd, lz4), both TFRecord checksums of every record, and an error naming the shard
file and the record when one is damaged. A sample is a dict (`Sample`, whose `.id` is the
record's sample id) of NumPy arrays (tensors), bytes and str; arrays view the record's own
buffer in place (no copy after the read) and are writable, each record being its own copy.
NumPy is needed to read tensors.
"""

import json
import multiprocessing
import operator
import os
from multiprocessing import context as _context

from . import PrepbenchError, native

__all__ = ["Store", "Sample", "StoreError", "OnlineSteps", "open_store"]


class StoreError(PrepbenchError):
    """A store that cannot be read: the message names the folder or the shard file and the
    record."""


class Sample(dict):
    """One record: its fields by name; `id` is its sample id (a fan-out step's outputs share
    their source item's in the high bits)."""

    id = None


_NUMPY = []


def record_field(record, name):
    """Field `name` of a record (payload, sample id, layout) that `native.Online` gave."""
    payload, sample_id, layout = record
    return _fields(payload, sample_id, layout)[name]


#: prepbench's text ops another loader runs in prepbench's own code (`Online.apply`): the kind
#: of field each reads and gives (`bytes`, `text`, a NumPy dtype), and their default fields.
TEXT_OPS = {"extract_text": ("bytes", "text", "data", "text"),
            "bpe_encode": ("text", "int32", "text", "tokens")}


def text_op(online, step_index, op, params):
    """Step `step_index` (`op` of `TEXT_OPS` with `params`) as a function of the value of the
    field it reads (bytes or str) giving the value of the field it writes (str, or an array),
    and its (from, to) fields."""
    reads, _, source, to = TEXT_OPS[op]
    source, to = params.get("from") or source, params.get("to") or to

    def run(value, sample_id=0, epoch=0):
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        record = online.apply(step_index, sample_id, epoch, [(source, reads, None, [], data)])
        return record_field(record, to)

    return run, (source, to)


def embed_table(online, step_index, params):
    """The table of embed step `step_index`, as native processing uses it: every id looked up
    once, float32 [vocabulary, dim]."""
    import numpy as np

    rows = int(params.get("vocabulary") or 50257)
    ids = np.arange(rows, dtype=np.int32)
    source = params.get("from") or "tokens"
    record = online.apply(step_index, 0, 0,
                          [(source, "tensor", ids.dtype.str, [rows], ids.tobytes())])
    return np.array(record_field(record, params.get("to") or "embedded"), dtype=np.float32)


def _fields(payload, sample_id, layout):
    if not _NUMPY:
        import numpy

        _NUMPY.append(numpy)
    np = _NUMPY[0]
    sample = Sample()
    sample.id = sample_id
    view = None
    for name, kind, dtype, shape, offset, nbytes in layout:
        if kind == "tensor":
            dt = np.dtype(dtype)
            array = np.frombuffer(payload, dt, nbytes // dt.itemsize, offset)
            if not array.flags.aligned:
                array = array.copy()
            sample[name] = array.reshape(shape)
        else:
            if view is None:
                view = memoryview(payload)
            data = bytes(view[offset:offset + nbytes])
            sample[name] = data.decode("utf-8") if kind == "text" else data
    return sample


def _raised(error):
    return StoreError(str(error))


class Store:
    """A complete store, opened (see the module's doc). `cache_bytes` bounds the decompressed
    stretches kept for reading a compressed store by record number (default 1 GiB): a record
    is decompressed from the codec's restart before it (about every MiB of stream; a store made
    before prepbench wrote restarts has one a shard); reading in order keeps nothing."""

    def __init__(self, path, cache_bytes=None):
        self.path = os.fsdecode(path)
        if cache_bytes is not None and (isinstance(cache_bytes, bool)
                                        or operator.index(cache_bytes) < 0):
            raise ValueError(f"cache_bytes is {cache_bytes!r}: a number of bytes (0 keeps no "
                             "decompressed shard), or None for the default")
        # The store's manifest named in place of its folder (as `ls` or a file dialog gives it).
        if os.path.basename(self.path) == "store.json" and os.path.isfile(self.path):
            self.path = os.path.dirname(self.path) or "."
        self.cache_bytes = cache_bytes
        module = native()
        try:
            self._native = module.Store(self.path, cache_bytes)
        except module.StoreError as e:
            raise _raised(e) from None
        self._error = module.StoreError
        self.manifest = json.loads(self._native.manifest)

    # What the store is.
    @property
    def workload(self):
        return self.manifest["workload"]

    @property
    def strategy(self):
        return self.manifest["strategy"]

    @property
    def split(self):
        """Steps done before storing (the read step counts as one)."""
        return self.manifest["split"]

    @property
    def codec(self):
        return self.manifest["codec"]

    @property
    def spec(self):
        """The workload spec it was made from (a dict, as `prepbench workload show` would read
        it), or None for a store made before prepbench recorded it."""
        return self.manifest.get("spec")

    @property
    def online_steps(self):
        """The steps left to run on every record (a list of step dicts), or None when the store
        does not record its spec."""
        spec = self.spec
        if spec is None:
            return None
        steps = spec.get("steps") if isinstance(spec, dict) else None
        split = self.split
        if not isinstance(steps, list) or not isinstance(split, int) or not (
                0 <= split <= len(steps)):
            raise StoreError(f"{os.path.join(self.path, 'store.json')}: its workload spec lists "
                             "no steps to split where it says: the store is damaged; "
                             "`--rematerialize` on run or sweep makes it again")
        return steps[split:]

    @property
    def shard_records(self):
        """Records in each shard, in shard order."""
        return list(self._native.shard_records)

    def __len__(self):
        return len(self._native)

    def __repr__(self):
        return (f"<prepbench store {self.workload}/{self.strategy}: {len(self)} records in "
                f"{len(self.shard_records)} shards ({self.codec}) at {self.path}>")

    # Reading.
    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        try:
            asked = operator.index(index)
        except TypeError:
            raise TypeError(f"store indices must be integers or slices, not "
                            f"{type(index).__name__}") from None
        index = asked + len(self) if asked < 0 else asked
        if not 0 <= index < len(self):
            raise IndexError(f"record {asked} of a store holding {len(self)} (records 0 to "
                             f"{len(self) - 1}, or -{len(self)} to -1 from the end)")
        try:
            return _fields(*self._native.read(index))
        except self._error as e:
            raise _raised(e) from None

    def iter_shard(self, shard):
        """Shard `shard`'s samples, read in order (streamed: any codec, nothing kept)."""
        for _, sample in self.records([shard]):
            yield sample

    def records(self, shards=None):
        """(record number, sample) for the records of `shards` (default: all, in order)."""
        count = len(self.shard_records)
        for shard in range(count) if shards is None else shards:
            if not 0 <= operator.index(shard) < count:
                raise IndexError(f"shard {shard} of a store of {count} (shards 0 to {count - 1})")
            try:
                for index, payload, sample_id, layout in self._native.shard(shard):
                    yield index, _fields(payload, sample_id, layout)
            except self._error as e:
                raise _raised(e) from None

    def __iter__(self):
        for _, sample in self.records():
            yield sample

    # A store travels to another process (a DataLoader worker) as its path, and opens its
    # own files there.
    def __getstate__(self):
        return {"path": self.path, "cache_bytes": self.cache_bytes}

    def __setstate__(self, state):
        self.__init__(state["path"], state["cache_bytes"])


def open_store(path, cache_bytes=None):
    """Opens the store in folder `path` (see the module's doc)."""
    return Store(path, cache_bytes)


class SharedInt:
    """A number in shared memory (an epoch, a flag), so that a `set_epoch` reaches DataLoader
    workers that persist between epochs (they keep the copy of the dataset, and of its
    transform, they started with). It travels as shared memory to a worker process being
    started (fork, spawn or forkserver); pickled for anything else (a copy, a file), as a
    number."""

    def __init__(self, value=0):
        self._shared = multiprocessing.RawValue("q", int(value))

    @property
    def value(self):
        return self._shared.value

    @value.setter
    def value(self, epoch):
        self._shared.value = int(epoch)

    def __getstate__(self):
        if _context.get_spawning_popen() is None:
            return {"value": self._shared.value}
        return {"shared": self._shared}

    def __setstate__(self, state):
        # Not `or`: a ctypes value of 0 is false.
        shared = state.get("shared")
        if shared is None:
            shared = multiprocessing.RawValue("q", state["value"])
        self._shared = shared


class OnlineSteps:
    """The steps a store leaves to run on every record (its workload's steps after the split),
    as one callable on a sample: your Python steps as prepbench ran them, and prepbench's image
    ops in their PyTorch form (torchvision, as `--loader torch` runs them), with the same
    fields in and out, values crossing between them as they are and arrays at the end. Refused,
    naming the step, when one has no such form (it runs in prepbench, `--loader native`).

    Random steps draw fresh values on every call (a new seed per sample, drawn in the process
    that calls, so DataLoader workers do not repeat each other's draws); with `seed`, they draw
    what prepbench's runs drew for that seed, sample and epoch (`set_epoch`)."""

    def __init__(self, store, seed=None):
        store = store if isinstance(store, Store) else Store(store)
        if store.spec is None:
            raise StoreError(f"{store.path}: made before stores recorded their workload; "
                             "rematerialize it to read its online steps")
        self.spec_json = json.dumps(store.spec)
        self.split = store.split
        self.seed = seed
        self._epoch = SharedInt()
        module = native()
        try:
            # Refused here, naming the step, when one of them is prepbench's own.
            module.Online(self.spec_json, self.split, seed or 0)
        except ValueError as e:
            raise StoreError(f"{store.path}: {e}") from None
        self._loaded = None

    def set_epoch(self, epoch):
        """The epoch seeded draws are made for: seen by DataLoader workers, persistent ones
        too, from their next sample."""
        self._epoch.value = epoch

    @property
    def epoch(self):
        return self._epoch.value

    def _ready(self):
        # Made in the process that calls (a DataLoader worker imports the steps itself).
        if self._loaded is None or self._loaded[0] != os.getpid():
            from ._loader import Chain

            module = native()
            online = module.Online(self.spec_json, self.split, self.seed or 0)
            self._loaded = (os.getpid(), online,
                            Chain(module, online, fresh=self.seed is None))
        return self._loaded

    def __call__(self, sample):
        _, online, chain = self._ready()
        sample_id = getattr(sample, "id", None) or 0
        if self.seed is None:
            seeds = [int.from_bytes(os.urandom(8), "little") for _ in chain.links]
        else:
            seeds = online.seeds(self.epoch, sample_id)
        fields = dict(sample)
        error = chain.run(fields, seeds, sample_id, self.epoch)
        if error is not None:
            step, message, _ = error
            raise StoreError(f"step `{step}` failed on sample {sample_id}: {message}")
        out = Sample(fields)
        out.id = getattr(sample, "id", None)
        return out
