"""A materialized store as a PyTorch dataset, for the training loop that follows a sweep::

    from torch.utils.data import DataLoader
    from prepbench.torch import StoreDataset

    data = StoreDataset("stores/my-photos/resized/none-4sh-120n-0a1b2c3d4e", transform=online)
    for batch in DataLoader(data, batch_size=32, shuffle=True, num_workers=4):
        ...

`StoreDataset` is map-style (any sampler, `shuffle=True`); `StoreIterable` reads whole shards
in order, split across DataLoader workers and distributed ranks. A compressed store read by
record number decompresses, per worker, the stretch of about 1 MiB of stream around the
record (the writer restarts the codec there) and keeps stretches within `cache_bytes`; read in
order, nothing is decompressed twice, so `StoreIterable` still reads a compressed store
fastest. Each worker process opens its own files: a dataset travels to a worker as its path. `transform` is called with each sample
(a dict of NumPy arrays, bytes and str) and returns what the loader batches.
"""

import itertools
import operator
import os
import random
import warnings

import torch  # noqa: F401  (the module needs PyTorch; fail here with its own message)
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from .store import SharedInt, Store

__all__ = ["StoreDataset", "StoreIterable"]


def _rank_and_world(rank, world_size):
    """This process's rank and the number of ranks: as given, else torch.distributed's when
    it is initialized, else the launcher's RANK and WORLD_SIZE, else a single process."""
    if rank is not None and world_size is not None:
        return int(rank), int(world_size)
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


class StoreDataset(Dataset):
    """Map-style: `dataset[i]` is record i (in shard order) after `transform`."""

    def __init__(self, path, transform=None, cache_bytes=None):
        self.path = os.fspath(path)
        self.transform = transform
        self.cache_bytes = cache_bytes
        # Opened here so that a wrong path fails at once, in the training script's process.
        store = Store(self.path, cache_bytes)
        self.strategy = store.strategy
        self.online_steps = store.online_steps
        self._len = len(store)
        self._store, self._pid = store, os.getpid()

    def _opened(self):
        # A forked worker inherits the parent's object: it opens its own files.
        if self._store is None or self._pid != os.getpid():
            self._store, self._pid = Store(self.path, self.cache_bytes), os.getpid()
        return self._store

    def __len__(self):
        return self._len

    def __getitem__(self, index):
        sample = self._opened()[index]
        return self.transform(sample) if self.transform is not None else sample

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_store"] = None
        return state


class StoreIterable(IterableDataset):
    """Whole shards in order, each read by one consumer: the shards are dealt round-robin over
    (rank, worker) pairs, in an order shuffled per epoch when `shuffle_shards` (call
    `set_epoch`). With fewer shards than consumers (8 ranks of 4 workers over 16 shards), the
    shards are cut into pieces read in order instead: a compressed shard at the codec's
    restarts (about every MiB of stream, so each piece is decompressed once, by its reader),
    an uncompressed one into as many equal runs of records as it takes. Only where that still
    leaves fewer pieces than consumers (a compressed store made before restarts were written)
    are records dealt one by one, with a warning: make the store with more shards (`--shards`).

    Shards rarely hold equal counts, so ranks can read different numbers of records, and a
    DistributedDataParallel loop waits forever on a rank that ran out of batches. `even=True`
    gives each rank's worker the count of the same worker on the rank that reads most,
    repeating its own first records to make it up (as `DistributedSampler` pads); without it,
    every record is read once and uneven ranks are warned of.

    Records within a shard come in the order they were stored. `shuffle_buffer=N` shuffles
    each reader's records through a buffer of N (as tf.data's and WebDataset's `shuffle`), in
    an order drawn from `seed`, the epoch and the reader: reproducible, another every epoch.
    The buffer holds N samples (after `transform`) in each DataLoader worker."""

    def __init__(self, path, transform=None, shuffle_shards=False, seed=0, rank=None,
                 world_size=None, cache_bytes=None, even=False, shuffle_buffer=0):
        self.path = os.fspath(path)
        self.transform = transform
        self.even = bool(even)
        try:
            self.shuffle_buffer = operator.index(shuffle_buffer)
        except TypeError:
            self.shuffle_buffer = None
        if isinstance(shuffle_buffer, bool) or self.shuffle_buffer is None \
                or self.shuffle_buffer < 0:
            raise ValueError(f"shuffle_buffer is {shuffle_buffer!r}: a number of samples (0 "
                             "shuffles nothing)")
        self.shuffle_shards = shuffle_shards
        self.seed = seed
        self._epoch = SharedInt()
        self.rank, self.world_size = rank, world_size
        self.cache_bytes = cache_bytes
        store = Store(self.path, cache_bytes)
        self.strategy = store.strategy
        self.online_steps = store.online_steps
        self.shard_records = store.shard_records
        self._compressed = store.manifest["codec"] != "none"
        # Where a compressed shard may be entered (its records numbered within the shard).
        self._restarts = [[r[0] for r in shard.get("restarts", [])]
                          for shard in store.manifest["shards"]]
        self._starts = list(itertools.accumulate(self.shard_records, initial=0))

    def set_epoch(self, epoch):
        """The epoch the shard order is shuffled for: seen by the DataLoader's workers, also
        persistent ones, from their next epoch."""
        self._epoch.value = epoch

    @property
    def epoch(self):
        return self._epoch.value

    def _consumer(self):
        """This reader's number among all readers (ranks x workers), their count, and the
        workers of each rank."""
        rank, world = _rank_and_world(self.rank, self.world_size)
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        return rank * workers + worker, world * workers, workers

    def _pieces(self, order, consumers):
        """The shards in `order` cut into runs of records read in order, as (first, end) global
        record numbers: at a compressed shard's restarts, or an uncompressed shard into as
        many equal runs as give every consumer one."""
        starts = self._starts
        cuts = -(-consumers // max(len(order), 1))
        pieces = []
        for shard in order:
            records = self.shard_records[shard]
            if self._compressed:
                inner = self._restarts[shard]
            else:
                inner = sorted({records * k // cuts for k in range(1, cuts)} - {0, records})
            bounds = [0, *inner, records]
            pieces += [(starts[shard] + a, starts[shard] + b)
                       for a, b in zip(bounds, bounds[1:]) if b > a]
        return pieces

    @staticmethod
    def _counts(dealt, consumers):
        """The records each consumer reads: those of the shards or pieces (first, end) dealt
        to it round-robin."""
        return [sum(b - a for a, b in dealt[c::consumers]) for c in range(consumers)]

    def __iter__(self):
        store = Store(self.path, self.cache_bytes)
        me, consumers, workers = self._consumer()
        order = list(range(len(self.shard_records)))
        if self.shuffle_shards:
            random.Random(self.seed * 1_000_003 + self.epoch).shuffle(order)
        starts = self._starts
        pieces = self._pieces(order, consumers) if len(order) < consumers else []
        if len(order) >= consumers:
            dealt = [(starts[s], starts[s + 1]) for s in order]

            def mine():
                return (s for _, s in store.records(order[me::consumers]))
        elif len(pieces) >= consumers:
            dealt = pieces

            def mine():
                return (store[i] for a, b in pieces[me::consumers] for i in range(a, b))
        else:
            if me == 0:
                cut = ("at its codec's restarts, which a store made before prepbench wrote "
                       "them has none of" if self._compressed else "into runs of records")
                warnings.warn(
                    f"{self.path}: {len(order)} shards for {consumers} readers (ranks x "
                    f"workers), too few to give each reader a piece (a shard is cut {cut}): "
                    "records are dealt one by one instead; make the store with at least as "
                    "many shards as readers",
                    stacklevel=2,
                )
            dealt = [(i, i + 1) for i in range(len(store))]

            def mine():
                return (store[i] for i in range(me, len(store), consumers))
        # A worker's count beside the same worker's on every rank: what a DDP loop's batches
        # per rank come to.
        counts = self._counts(dealt, consumers)
        peers = counts[me % workers::workers]
        if self.even:
            samples = itertools.islice(_repeated(mine, store, me), max(peers))
        else:
            if len(set(peers)) > 1 and me < workers:
                warnings.warn(
                    f"{self.path}: the ranks' worker {me} reads {min(peers)} to {max(peers)} "
                    "records, so ranks run different numbers of batches (a "
                    "DistributedDataParallel loop would wait on the rank that ran out): pass "
                    "even=True",
                    stacklevel=2,
                )
            samples = mine()
        if self.transform is not None:
            samples = map(self.transform, samples)
        if self.shuffle_buffer > 1:
            draws = random.Random(f"{self.seed}/{self.epoch}/{me}")
            samples = _shuffled(samples, self.shuffle_buffer, draws)
        yield from samples


def _shuffled(samples, size, draws):
    """`samples` through a buffer of `size`: each one given out is drawn from the buffer, its
    place taken by the next to come in; what is left at the end, in a drawn order."""
    buffer = []
    for sample in samples:
        if len(buffer) < size:
            buffer.append(sample)
            continue
        at = draws.randrange(size)
        yield buffer[at]
        buffer[at] = sample
    draws.shuffle(buffer)
    yield from buffer


def _repeated(mine, store, me):
    """A reader's own records (`mine()`), again and again from its first; one with none of
    its own, the store's from its place in it. Endless: the caller takes what it needs."""
    while True:
        got = False
        for sample in mine():
            got = True
            yield sample
        if not got:
            break
    for i in itertools.count():
        yield store[(me + i) % len(store)]
