//! The Python package's store reader (`prepbench.open_store`, `prepbench.torch`): a store of
//! every codec read from Python gives the samples `prepbench show` gives, in any order and
//! under a DataLoader's worker processes; damaged records and wrong folders are named.

use super::*;

const CODECS: [&str; 5] = ["none", "gzip", "zlib", "zstd", "lz4"];
const STRATEGY: &str = "resized";

/// Stores of CV's `resized` under every codec (3 shards) in `work/stores`, and `prepbench
/// show`'s output of each sample as that strategy stores it in `work/show/N/`.
fn stores_and_shows(work: &Path) {
    for codec in CODECS {
        prepbench_ok(&argv![
            "run cv --samples",
            SAMPLES,
            "--strategy",
            STRATEGY,
            "--codec",
            codec,
            "--shards 3 --epochs 1 --threads 2 --evict fadvise --quiet --data-dir",
            data_dir().to_str().unwrap(),
            "--store-dir",
            work.join("stores").to_str().unwrap(),
            "--out",
            work.join("out").to_str().unwrap()
        ]);
    }
    let samples: usize = SAMPLES.parse().unwrap();
    for sample in 0..samples {
        prepbench_ok(&argv![
            "show cv --strategy",
            STRATEGY,
            "--sample",
            sample.to_string(),
            "--data-dir",
            data_dir().to_str().unwrap(),
            "--out",
            work.join(format!("show/{sample}")).to_str().unwrap()
        ]);
    }
}

/// Python that defines `stores` (every store folder, by codec), `shown(i)` (sample i's fields
/// as `show` wrote them) and `same(sample, i)`.
fn prelude(work: &Path) -> String {
    format!(
        r#"
import glob, os, numpy as np, prepbench
work = {work:?}
stores = {{os.path.basename(d).split("-")[0]: d for d in glob.glob(work + "/stores/cv/{STRATEGY}/*")}}
assert len(stores) == {codecs}, stores
def shown(i):
    d = f"{{work}}/show/{{i}}"
    return {{f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".npy")}}
def same(sample, i):
    want = shown(i)
    assert set(sample) == set(want), (set(sample), set(want))
    for name, array in want.items():
        got = np.asarray(sample[name])
        assert got.dtype == array.dtype and got.shape == array.shape, (name, got.dtype, got.shape, array.dtype, array.shape)
        assert (got == array).all(), (name, i)
"#,
        work = work.display().to_string(),
        codecs = CODECS.len(),
    )
}

fn python_ok(python: &str, native: &Path, script: &str, cwd: &Path) -> String {
    let out = common::with_package(&mut Command::new(python), native)
        .args(["-c", script])
        .current_dir(cwd)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}{}", stderr(&out));
    said
}

#[test]
fn the_python_reader_gives_the_samples_show_gives_under_every_codec_and_loader() {
    let Some(native) = common::native_module() else {
        return;
    };
    let Some(python) = numpy_python() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    stores_and_shows(work.path());
    let check = prelude(work.path())
        + r#"
n = int(os.environ.get("SAMPLES", "0")) or None
for codec, path in sorted(stores.items()):
    store = prepbench.open_store(path)
    assert store.strategy == "resized" and store.workload == "cv", store
    assert [s["name"] for s in store.online_steps] == ["pixel-centered", "cropped"], store.online_steps
    assert sum(store.shard_records) == len(store)
    # By number, in a scattered order (a compressed store decompresses each stretch once).
    order = list(range(len(store)))[::-3] + list(range(len(store)))
    for i in order:
        sample = store[i]
        same(sample, sample.id)
    # A compressed shard of 3.5 MB of stream has restarts: with no cache at all, a record read
    # by number is decompressed from the one before it.
    if codec != "none":
        restarts = [len(s.get("restarts", [])) for s in store.manifest["shards"]]
        assert min(restarts) >= 2, (codec, restarts)
        bare = prepbench.open_store(path, cache_bytes=0)
        for i in order[::2]:
            sample = bare[i]
            same(sample, sample.id)
    # In shard order: the same records.
    ids = [s.id for s in store]
    assert ids == [store[i].id for i in range(len(store))], codec
    assert sorted(ids) == list(range(len(store))), ids
    assert store[-1].id == store[len(store) - 1].id
    # The records a DataLoader reads of a part that stops within its shards (`_part`): the
    # first 3 of each of the first 2 shards, whose ids are shard + 3k (items round-robin).
    from prepbench._loader import _part
    part = _part(store.shard_records, {"shards": 2, "records_per_shard": 3})
    cut = [start + i for _, start, records in part for i in range(records)]
    assert [store[i].id for i in cut] == [s + 3 * k for s in range(2) for k in range(3)], cut
    # Arrays are writable, and writing one changes no later read.
    sample = store[0]
    sample["image"][...] = 0
    same(store[0], store[0].id)
# A damaged record of an uncompressed store is named, with its shard; the next one reads.
import shutil
copy = work + "/damaged"
shutil.copytree(stores["none"], copy)
store = prepbench.open_store(copy)
shard = os.path.join(copy, store.manifest["shards"][1]["file"])
first = store.shard_records[0]
with open(shard, "r+b") as f:
    f.seek(12 + 1000)
    byte = f.read(1)
    f.seek(12 + 1000)
    f.write(bytes([byte[0] ^ 0xFF]))
store = prepbench.open_store(copy)
try:
    store[first]
except prepbench.StoreError as e:
    assert "record 0" in str(e) and os.path.basename(shard) in str(e) and "checksum" in str(e), e
else:
    raise AssertionError("a damaged record was read")
store[first + 1]
try:
    list(store)
except prepbench.StoreError as e:
    assert os.path.basename(shard) in str(e), e
else:
    raise AssertionError("a damaged record was read in order")
# A manifest edited past what its shards hold, or whose spec lists no steps to split, is
# refused as damaged, naming its store.json, not an OverflowError or a KeyError.
import json
for name, edit in (("count", lambda m: m["shards"][0].__setitem__("records", 2**63)),
                   ("spec", lambda m: m["spec"].pop("steps"))):
    edited = work + "/edited-" + name
    shutil.copytree(stores["none"], edited)
    with open(os.path.join(edited, "store.json")) as f:
        manifest = json.load(f)
    edit(manifest)
    with open(os.path.join(edited, "store.json"), "w") as f:
        json.dump(manifest, f)
    try:
        len(prepbench.open_store(edited).online_steps)
    except prepbench.StoreError as e:
        assert os.path.join(edited, "store.json") in str(e) and "damaged" in str(e), e
    else:
        raise AssertionError(f"a manifest edited ({name}) was read")
# What a Python sequence refuses, refused as one: an index that is not an integer, a record or
# a shard out of range (named as asked), a negative cache; the manifest's path or a bytes path
# opens the store.
store = prepbench.open_store(stores["none"])
for index, error in (("a", TypeError), (1.5, TypeError), (len(store), IndexError), (-len(store) - 1, IndexError)):
    try:
        store[index]
    except error as e:
        assert repr(index) in str(e) or type(index).__name__ in str(e), e
    else:
        raise AssertionError(f"store[{index!r}] read")
assert store[np.int64(2)].id == store[2].id
for shard in (-1, len(store.shard_records)):
    try:
        list(store.iter_shard(shard))
    except IndexError as e:
        assert f"shard {shard} " in str(e), e
    else:
        raise AssertionError(f"shard {shard} read")
try:
    prepbench.open_store(stores["none"], cache_bytes=-1)
except ValueError as e:
    assert "cache_bytes" in str(e), e
else:
    raise AssertionError("a negative cache opened")
assert len(prepbench.open_store(os.path.join(stores["none"], "store.json"))) == len(store)
assert len(prepbench.open_store(os.fsencode(stores["none"]))) == len(store)
for bad in (work, work + "/nowhere"):
    try:
        prepbench.open_store(bad)
    except prepbench.StoreError as e:
        assert bad in str(e), e
    else:
        raise AssertionError(f"{bad} opened as a store")
# The shared epoch reaches a process started by fork, spawn or forkserver, epoch 0 included,
# and a value set after it started is the one it reads.
import multiprocessing, pathlib
from prepbench.store import SharedInt
pathlib.Path("epoch_probe.py").write_text(
    "def report(epoch, queue, go):\n    queue.put(epoch.value)\n    go.wait()\n    queue.put(epoch.value)\n")
import epoch_probe
for method in ("fork", "spawn", "forkserver"):
    ctx = multiprocessing.get_context(method)
    for value in (0, 3):
        epoch, queue, go = SharedInt(value), ctx.Queue(), ctx.Event()
        child = ctx.Process(target=epoch_probe.report, args=(epoch, queue, go))
        child.start()
        first = queue.get(timeout=60)
        epoch.value = value + 5
        go.set()
        child.join(60)
        assert child.exitcode == 0 and (first, queue.get(timeout=5)) == (value, value + 5), (method, value, child.exitcode)
print("ok")
"#;
    assert!(python_ok(&python, &native, &check, work.path()).contains("ok"));

    // Under PyTorch: a DataLoader with two worker processes over each kind of dataset.
    let Some(torch) = common::torch_python() else {
        return;
    };
    let check = prelude(work.path())
        + r#"
import torch
from torch.utils.data import DataLoader
from prepbench.torch import StoreDataset, StoreIterable
keep = lambda batch: batch
for codec, path in sorted(stores.items()):
    for dataset in (StoreDataset(path), StoreIterable(path)):
        seen = []
        for batch in DataLoader(dataset, batch_size=3, num_workers=2, collate_fn=keep):
            seen += batch
        assert sorted(s.id for s in seen) == list(range(len(prepbench.open_store(path)))), (codec, type(dataset))
        for sample in seen:
            same(sample, sample.id)
    # The default collate batches the fixed-size labels as tensors.
    labels = next(iter(DataLoader(StoreDataset(path, transform=lambda s: s["label"]), batch_size=4, num_workers=2)))
    assert isinstance(labels, torch.Tensor) and labels.shape == (4,), labels
# Ranks split the shards: two ranks of two workers read every record once between them.
path = stores["none"]
ids = []
for rank in (0, 1):
    for batch in DataLoader(StoreIterable(path, rank=rank, world_size=2), batch_size=2, num_workers=2, collate_fn=keep):
        ids += [s.id for s in batch]
assert sorted(ids) == list(range(len(prepbench.open_store(path)))), ids
# More readers than shards (3 shards; 2 ranks of 2 workers, 4 ranks of 2): the shards are cut
# into pieces read in order, a compressed one at its restarts (2 or 3 a shard here), each
# record read once, not dealt one by one; even=True gives every rank's worker as many.
import warnings
for codec in ("none", "gzip6", "zstd3"):
    store = prepbench.open_store(stores[codec])
    for world in (2, 4):
        ids, counts = [], {}
        for rank in range(world):
            with warnings.catch_warnings():
                warnings.filterwarnings("error", message=".*one by one")
                for batch in DataLoader(StoreIterable(stores[codec], rank=rank, world_size=world), batch_size=2, num_workers=2, collate_fn=keep):
                    ids += [s.id for s in batch]
            evened = [s.id for batch in DataLoader(StoreIterable(stores[codec], rank=rank, world_size=world, even=True), batch_size=1, num_workers=2, collate_fn=keep) for s in batch]
            counts[rank] = len(evened)
        assert sorted(ids) == list(range(len(store))), (codec, world, ids)
        assert len(set(counts.values())) == 1, (codec, world, counts)
    pieces = StoreIterable(stores[codec])._pieces([0, 1, 2], 8)
    assert [(a, b) for a, b in pieces] == sorted(pieces) and pieces[0][0] == 0 and pieces[-1][1] == len(store), pieces
    assert all(b == c for (_, b), (c, _) in zip(pieces, pieces[1:])), pieces
    if codec != "none":
        restarts = [r[0] for r in store.manifest["shards"][0]["restarts"]]
        assert [b for _, b in pieces[:len(restarts)]] == restarts, (pieces, restarts)
# Three shards over two ranks read unequal counts (two shards against one): warned of, since a
# DDP loop would wait on the rank that ran out; with even=True both ranks read as many, the
# shorter one repeating its own records, and every record is still read.
import warnings
n = len(prepbench.open_store(path))
read = {}
for even in (False, True):
    for rank in (0, 1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            read[even, rank] = [s.id for s in StoreIterable(path, rank=rank, world_size=2, even=even)]
        said = [str(w.message) for w in caught if "even=True" in str(w.message)]
        assert bool(said) == (not even and rank == 0), (even, rank, said)
assert len(read[False, 0]) != len(read[False, 1]), read
assert sorted(read[False, 0] + read[False, 1]) == list(range(n))
assert len(read[True, 0]) == len(read[True, 1]) == max(len(read[False, 0]), len(read[False, 1]))
assert set(read[True, 0]) | set(read[True, 1]) == set(range(n))
short = 0 if len(read[False, 0]) < len(read[False, 1]) else 1
assert set(read[True, short]) == set(read[False, short]), "the shorter rank repeats its own"
# The shard order set_epoch asks for reaches workers that persist between epochs too (they
# keep the dataset they started with): the same orders as fresh workers read, not the first.
orders = {}
for persistent in (False, True):
    dataset = StoreIterable(path, shuffle_shards=True)
    loader = DataLoader(dataset, batch_size=1, num_workers=2, persistent_workers=persistent, collate_fn=keep)
    orders[persistent] = []
    for epoch in range(4):
        dataset.set_epoch(epoch)
        orders[persistent].append([s.id for batch in loader for s in batch])
assert orders[True] == orders[False], orders
assert len({tuple(o) for o in orders[False]}) > 1, orders
# A shuffle buffer: every record once an epoch, in an order drawn from the seed, the epoch and
# the reader (the same again for the same epoch, another for the next), not the stored order.
def epoch_ids(buffer, epoch, seed=0):
    dataset = StoreIterable(stores["gzip6"], shuffle_buffer=buffer, seed=seed)
    dataset.set_epoch(epoch)
    loader = DataLoader(dataset, batch_size=1, num_workers=2, collate_fn=keep)
    return [s.id for batch in loader for s in batch]
plain = epoch_ids(0, 0)
first, again, later, other = epoch_ids(8, 0), epoch_ids(8, 0), epoch_ids(8, 1), epoch_ids(8, 0, 1)
assert sorted(first) == sorted(plain) == sorted(later) == list(range(len(plain))), first
assert first == again and len({tuple(first), tuple(plain), tuple(later), tuple(other)}) == 4, (first, later)
for bad in (-1, 1.5, True, "8"):
    try:
        StoreIterable(stores["gzip6"], shuffle_buffer=bad)
    except ValueError as e:
        assert "shuffle_buffer" in str(e), e
    else:
        raise AssertionError(f"shuffle_buffer={bad!r} accepted")
# So does the epoch of seeded online steps (the store's random crop drawn as the sweep drew it).
from prepbench import OnlineSteps
import zlib
crops = {}
for persistent in (False, True):
    steps = OnlineSteps(path, seed=0)
    loader = DataLoader(StoreDataset(path, transform=steps), batch_size=1, num_workers=2,
                        persistent_workers=persistent, collate_fn=keep)
    crops[persistent] = []
    for epoch in range(3):
        steps.set_epoch(epoch)
        crops[persistent].append([zlib.crc32(batch[0]["image"].tobytes()) for batch in loader])
assert crops[True] == crops[False], crops
assert len({tuple(c) for c in crops[False]}) == 3, crops
print("ok")
"#;
    assert!(python_ok(&torch, &native, &check, work.path()).contains("ok"));
}
