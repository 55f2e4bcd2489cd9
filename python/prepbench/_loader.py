"""The `torch` loader's process: one epoch of a workload's online phase in a real PyTorch
DataLoader, started by prepbench (`--loader torch`) in the interpreter the run names.

prepbench writes the job (one JSON line) on stdin. The process imports PyTorch and the
workload's Python steps, makes its dataset (a materialized store read by prepbench's reader,
or the raw items read by the workload's read step), and answers `ready` with what it has used
so far; on `go` it runs the epoch as a training loop iterates: a DataLoader with `num_workers`
= the run's threads, its batch size, prefetch factor and memory pinning, each worker running
the online Python steps on its samples exactly as prepbench's own workers do (the same chain
code, the same per-sample seeds). Then it answers with every batch's arrival, the samples'
bytes, the skipped samples, (with --verify) each output's hash, and the CPU and I/O of this
process and its workers. Then it serves the run's next epochs, each asked for by a line of
its own (`next_epoch`: its epoch, seed, `min_s`, `max_s` and `hash`), as a training job runs
its epochs in one process: with a new DataLoader each, or, where its workers persist, the same
one (its workers see each epoch through shared memory), until the run is over; then it lets go
of the run and waits, idle, for the workload's next run under this loader (`serve`). Everything
the user's code prints goes to stderr.
"""

import itertools
import json
import os
import platform
import resource
import sys
import time
import types

from .store import SharedInt, Store, _fields

#: Bumped when the job or the answer changes: prepbench refuses a package of another version.
PROTOCOL = 12


def _usage():
    """CPU seconds (user, system) of this process and its children, and its I/O (bytes fetched
    from storage, bytes read through syscalls): DataLoader workers that have been waited for
    (`getrusage`, `/proc/self/io`) and those still alive (persistent ones: `/proc/PID`)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = own.ru_utime + kids.ru_utime, own.ru_stime + kids.ru_stime
    read_bytes, read_chars = _proc_io("self")
    for pid in _live_descendants(os.getpid()):
        cpu, io = _proc_cpu(pid), _proc_io(pid)
        user, system = user + cpu[0], system + cpu[1]
        read_bytes, read_chars = read_bytes + io[0], read_chars + io[1]
    return {"user_s": user, "sys_s": system, "read_bytes": read_bytes, "read_chars": read_chars}


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_io(pid):
    """(bytes fetched from storage, bytes read through syscalls) of process `pid` and the
    children it has waited for; zeros if it has gone."""
    try:
        with open(f"/proc/{pid}/io") as f:
            io = dict(line.split(":", 1) for line in f if ":" in line)
        return int(io.get("read_bytes", 0)), int(io.get("rchar", 0))
    except (OSError, ValueError):
        return 0, 0


def _proc_cpu(pid):
    """CPU seconds (user, system) of process `pid` and the children it has waited for; zeros
    if it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # After the command's name (in parentheses, which may hold anything): state is the
            # first field, utime, stime, cutime and cstime the 12th to 15th.
            fields = f.read().rsplit(")", 1)[1].split()
        utime, stime, cutime, cstime = (int(t) for t in fields[11:15])
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0
    return (utime + cutime) / _TICKS, (stime + cstime) / _TICKS


def _live_descendants(pid, children=None):
    """The pids of `pid`'s children not yet waited for (a persistent DataLoader's workers),
    and of theirs. `children(pid)` lists a process's children: by default from each thread's
    `/proc/PID/task/TID/children`, or, on a kernel without those files, from every process's
    parent (`_children_by_parent`)."""
    if children is None:
        listed = os.path.exists(f"/proc/{pid}/task/{pid}/children")
        children = _children_listed if listed else _children_by_parent()
    found, parents = [], [pid]
    while parents:
        kids = children(parents.pop())
        found.extend(kids)
        parents.extend(kids)
    return found


def _descendants_by_parent(pid):
    """`_live_descendants` as a kernel without children files finds them."""
    return _live_descendants(pid, _children_by_parent())


def _children_listed(pid):
    """Process `pid`'s children, from each of its threads' children file; none if it has gone."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(k) for k in f.read().split())
    except OSError:
        pass
    return kids


def _children_by_parent():
    """A process's children (as `children(pid)`), from every process's parent in `/proc` (the
    fourth field of its stat), read once."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    return lambda pid: children.get(pid, [])


def _driver(native):
    """The Python steps' driver (prepbench's own chain code) as a module, made once per
    process."""
    module = sys.modules.get("prepbench._driver")
    if module is None:
        module = types.ModuleType("prepbench._driver")
        exec(compile(native.DRIVER, "prepbench/driver.py", "exec"), module.__dict__)  # noqa: S102
        sys.modules["prepbench._driver"] = module
    return module


class Chain:
    """A workload's online steps (`native.Online`'s links) run in this process as prepbench's
    workers run them: your Python steps with the driver's own chain code, prepbench's ops in
    their PyTorch form (`_torch_steps`), values crossing between them as the driver lets them.

    A random op draws what the native step draws for the run's seed (`fresh`: from the seed
    `run` is given for it, as a Python step's generators are seeded). Without `ops`, only the
    Python steps are made (prepbench's run in another loader's form)."""

    def __init__(self, native, online, fresh=False, ops=True):
        self.driver = driver = _driver(native)
        links = online.links()
        self.names = [name for name, _, _ in links]
        self.links = []
        self.ops = []
        for name, kind, args in links:
            try:
                if kind == "op" and not ops:
                    link = None  # run in another form (tf-data's)
                elif kind == "op":
                    link = self._op(native, online, args, fresh)
                    self.ops.append(link)
                else:
                    link = driver.Link(*args)
                self.links.append(link)
            except BaseException as e:  # noqa: BLE001 - named, then the run stops
                raise RuntimeError(f"step `{name}`: {type(e).__name__}: {e}") from None
        self.mm = bytearray(driver.HEADER)
        # --verify's bounds, when every online step is prepbench's (see `_torch_steps`).
        self.bounds = None
        if self.ops and len(self.ops) == len(self.links):
            from . import _torch_steps

            self.bounds = _torch_steps.tolerance(self.ops)

    @staticmethod
    def _op(native, online, args, fresh):
        from . import _torch_steps

        op, params, step_index = args[0], json.loads(args[1]), int(args[2])
        if fresh:
            def rng(epoch, sample_id, seed):
                return native.Rng(seed)
        else:
            def rng(epoch, sample_id, seed):
                return online.rng(epoch, sample_id, step_index)
        link = _torch_steps.make(op, params, rng)
        if hasattr(link, "bind"):  # runs prepbench's own code of the step (`_torch_text`)
            link.bind(online, step_index)
        link.target = link
        if link.random:
            link.keywords = ["sample_id", "epoch", "seed"]
            link.random = False  # draws from its own generator, not the seeded modules'
        else:
            link.keywords = []
        return link

    def run(self, fields, seeds, sample_id, epoch, only=None):
        """Runs the steps (those at indices `only`, with their `seeds`) on `fields` (changed in
        place): None, or (step, message, detail) of the step that failed."""
        driver = self.driver
        links = self.links if only is None else [self.links[i] for i in only]
        names = self.names if only is None else [self.names[i] for i in only]
        try:
            driver.run_chain(links, fields, seeds, sample_id, epoch, self.mm, [], [])
            return None
        except driver.Failed as failed:
            at = int(self.mm[0])
            return self._failure(failed, at, links, names)

    @staticmethod
    def _failure(failed, at, links, names):
        if failed.status == 3:
            message = (f"reads field `{links[at].source}`, which the sample does not have "
                       f"(it has: {failed.payload[0].decode()})")
            return names[at], message, ""
        message, detail = (p.decode("utf-8", "replace") for p in failed.payload)
        return names[at], message, detail


class Item:
    """One sample as the dataset gives it: its id, bytes, hash, fields; or the error that
    stopped it (`step`, `message`, `detail`)."""

    __slots__ = ("id", "nbytes", "hash", "sample", "error")

    def __init__(self, sample_id, nbytes=0, digest=0, sample=None, error=None):
        self.id, self.nbytes, self.hash, self.sample, self.error = (
            sample_id, nbytes, digest, sample, error)


def _layout(fields):
    """Each field as verify_hash takes it."""
    out = []
    for name, value in fields.items():
        if isinstance(value, bytes):
            out.append((name, "bytes", None, [], value))
        elif isinstance(value, str):
            out.append((name, "text", None, [], value.encode("utf-8")))
        else:
            out.append((name, "tensor", value.dtype.str, list(value.shape), value.tobytes()))
    return out


def expected_hashes(job):
    """--verify's reference hashes by sample id, as the job carries them (`[id, hash]` pairs):
    `verify_digest`'s fast path."""
    return dict(map(tuple, job.get("expected") or ()))


def verify_digest(native, sample_id, fields, expected, reference, epoch, bounds):
    """A sample's --verify hash under either loader: its own where that is the reference's
    (`expected`: no native processing needed); else, where `reference()` gives the native
    engine that makes the sample's fully-online output (it makes none where the workload has
    Python steps, whose outputs are compared exactly) and the output is within `bounds()` of its
    output in `epoch` (the per value and mean bounds, and the fields compared as exp), the
    native output's; else its own (a mismatch, named on stderr)."""
    from ._forms import within

    own = native.verify_hash(sample_id, _layout(fields))
    if expected.get(sample_id) == own:
        return own
    online = reference()
    # The engine makes none for a workload with Python steps.
    record = online.reference(sample_id, epoch) if online and online.compared(sample_id) else None
    if record is None:
        return own
    payload, _, layout = record
    made = dict(_fields(payload, sample_id, layout))
    why = within(fields, made, *bounds())
    if why is None:
        return native.verify_hash(sample_id, _layout(made))
    print(f"prepbench: sample {sample_id}: {why}", file=sys.stderr)
    return own


def _nbytes(fields):
    total = 0
    for value in fields.values():
        if isinstance(value, str):
            total += len(value.encode("utf-8"))
        else:
            total += len(value) if isinstance(value, bytes) else value.nbytes
    return total


def _part(shard_records, job):
    """(shard, its first record's number, records read) of each shard an epoch of `job` reads:
    its first `shards` shards, of each every record or its first `records_per_shard`."""
    cap = job.get("records_per_shard")
    starts = itertools.accumulate(shard_records, initial=0)
    return [(shard, start, min(records, cap) if cap else records)
            for shard, (start, records) in enumerate(zip(starts, shard_records[:job.get("shards")]))]


class _Corrupt(Exception):
    """A stored record prepbench's reader found corrupt, as the native engine names it: its
    shard file, its number there, the byte and what is wrong (`unread` in the answer), with the
    records the epoch reads of its shard, whether reading could go on past it, and the
    record it went on at instead (the shard's next restart), if any."""

    def __init__(self, named):
        super().__init__(named["what"])
        self.named = named

    @classmethod
    def of(cls, error, records, can_continue, resumed_at=None):
        """The reader's `error`, named; one without a record's name is the error itself."""
        if not hasattr(error, "what"):
            return error
        return cls({"shard": error.shard, "record": error.record, "offset": error.offset,
                    "compressed": error.compressed, "what": error.what, "records": records,
                    "can_continue": can_continue, "resumed_at": resumed_at})

    def __reduce__(self):
        return _Corrupt, (self.named,)


def dataset_class():
    import torch.utils.data

    class OnlineDataset(torch.utils.data.Dataset):
        """The epoch's samples: read (a store's records, or raw items through the read step),
        then the online Python steps. Map-style over raw items (item i, as a PyTorch user's
        dataset of files); a store is read by `WorkerShare`, each worker streaming its own
        shards (`share`)."""

        def __init__(self, job, native):
            self.native = native
            self.expected = expected_hashes(job)
            raw = job["input"] == "raw"
            self.online = native.Online(json.dumps(job["spec"]), job["split"], job["seed"],
                                        job.get("root") if raw else None, job.get("items", 0))
            self.store = None if raw else Store(job["store"])
            self.online_split = job["split"]
            # A store's first `shards` shard files: all of them, or fewer where the run reads
            # part of a store sized for a faster loader (its records come first, in order),
            # and of each its first `records_per_shard` records where the part says so.
            self.part = None if raw else _part(self.store.shard_records, job)
            self.count = job["items"] if raw else sum(n for _, _, n in self.part)
            self.chain = Chain(native, self.online)
            # The epoch and whether --verify's hashes are asked: in shared memory, so that
            # they reach persistent workers (started with a copy of this dataset).
            self._epoch, self._hash = SharedInt(), SharedInt()
            # With --verify, where prepbench's ops run in their PyTorch form (outputs that may
            # differ from native processing within stated bounds): each sample's native
            # processing, to compare with (made where it is first needed).
            self.reference = None
            self._reference_of = (json.dumps(job["spec"]), job["seed"], job.get("root"),
                                  job.get("items", 0))
            self.next_epoch(job, native)

        @property
        def epoch(self):
            return self._epoch.value

        @property
        def hash(self):
            return bool(self._hash.value)

        def next_epoch(self, job, native):
            """The run's next epoch: its number, and --verify's hashes if asked."""
            self._epoch.value, self._hash.value = job["epoch"], int(bool(job["hash"]))
            if self.hash:
                self._native_reference()  # before workers are started with a copy

        def _native_reference(self):
            """Where the chain's outputs may differ from native processing within bounds: the
            native processing of the raw item (a fan-out output's, of its parent item), every
            step in prepbench's own form; None elsewhere."""
            if self.reference is None and self.chain.bounds is not None:
                spec, seed, root, items = self._reference_of
                self.reference = self.native.Online(spec, 0, seed, root, items, "native")
            return self.reference

        def __len__(self):
            return self.count

        def _raw(self, index):
            """Raw item `index` through the read step: (sample id, fields, None), or (index,
            None, the error that stopped it)."""
            try:
                payload, sample_id, layout = self.online.read(index, self.epoch)
                return sample_id, dict(_fields(payload, sample_id, layout)), None
            except Exception as e:  # noqa: BLE001 - the read step: named
                return index, None, e

        def __getitem__(self, index):
            sample_id, fields, error = self._raw(index)
            if error is not None:
                return self.unread(sample_id, error)
            return self.item(sample_id, fields)

        def share(self, worker, workers):
            """(sample id, fields, None), or (sample id or record number, None, the error
            that stopped it), of worker `worker`'s share of the epoch among `workers`: raw
            items worker, worker + workers, ...; of a store, the shards dealt so (as
            prepbench's own workers deal them), each read in order."""
            if self.store is None:
                yield from map(self._raw, range(worker, self.count, workers))
                return
            for shard, start, records in self.part[worker::workers]:
                yield from self._shard(shard, start, records)

        def _shard(self, shard, start, records):
            """A shard's first `records` records read in order, and, where the epoch reads it
            whole, its end (a compressed stream's checksum comes after its last record). A
            record that fails its checksum is named and stepped over; an error the shard
            cannot be read past leaves its other records unread (named with it), up to the
            shard's next restart where reading goes on, as natively."""
            whole = records == self.store.shard_records[shard]
            # A part stops reading ahead where its records end (an uncompressed shard).
            reader = self.store._native.shard(shard, None if whole else records)
            error = self.store._error
            local = 0
            while whole or local < records:
                try:
                    got = next(reader, None)
                except error as e:
                    resumed = getattr(e, "resumed_at", None)
                    going_on = reader.can_continue and resumed is None
                    yield start + local, None, _Corrupt.of(e, records, going_on, resumed)
                    if local >= records:  # after the last record
                        return
                    if resumed is not None:  # on at a restart, the records before it unread
                        local = resumed
                    elif going_on:
                        local += 1
                    else:
                        return
                    continue
                if got is None:
                    return
                _, payload, sample_id, layout = got
                try:
                    fields = dict(_fields(payload, sample_id, layout))
                except Exception as e:  # noqa: BLE001 - the record's layout: named
                    yield start + local, None, e
                else:
                    yield sample_id, fields, None
                local += 1

        def unread(self, sample_id, error):
            """The item of a sample that could not be read (by the read step, or from the
            store)."""
            if isinstance(error, _Corrupt):
                return Item(sample_id, error=error)
            step = "read" if self.store is None else "deserialize"
            return Item(sample_id, error=(step, f"{type(error).__name__}: {error}", ""))

        def item(self, sample_id, fields):
            """The sample after the online steps: its item, or the step's failure."""
            try:
                if self.chain.links:
                    seeds = self.online.seeds(self.epoch, sample_id)
                    error = self.chain.run(fields, seeds, sample_id, self.epoch)
                    if error is not None:
                        return Item(sample_id, error=error)
                nbytes = _nbytes(fields)
                digest = self._digest(sample_id, fields) if self.hash else 0
                return Item(sample_id, nbytes, digest, fields)
            except Exception as e:  # noqa: BLE001 - named as reading the sample
                return self.unread(sample_id, e)

        def fan_out(self):
            """The index among the chain's links of a fan-out op (NILM's `window`), if one
            runs here."""
            fan, first = self.online.fan_out, max(self.online_split, 1)
            return None if fan is None or fan < first else fan - first

        def fanned(self, sample_id, fields, fan):
            """A sample through the links before the fan-out op at `fan`, cut by it, and each
            output through the links after it (numbered as natively: item << CHILD_ID_BITS |
            output): the items it yields."""
            chain = self.chain
            before, after = list(range(fan)), list(range(fan + 1, len(chain.links)))
            error = self._links(before, fields, sample_id)
            if error is not None:
                yield Item(sample_id, error=error)
                return
            try:
                outputs = chain.links[fan].expand(fields)
            except Exception as e:  # noqa: BLE001 - named by its step
                yield Item(sample_id, error=(chain.names[fan], f"{type(e).__name__}: {e}", ""))
                return
            bits = self.native.CHILD_ID_BITS
            for j, child in enumerate(outputs):
                child_id = (sample_id << bits) | j
                error = self._links(after, child, child_id)
                if error is not None:
                    yield Item(child_id, error=error)
                    continue
                digest = self._digest(child_id, child) if self.hash else 0
                yield Item(child_id, _nbytes(child), digest, child)

        def _links(self, only, fields, sample_id):
            """The chain's links at indices `only` run on `fields` with the sample's seeds:
            None, or the failure (as `Chain.run`)."""
            if not only:
                return None
            seeds = self.online.seeds(self.epoch, sample_id)
            return self.chain.run(fields, [seeds[i] for i in only], sample_id, self.epoch,
                                  only=only)

        def _digest(self, sample_id, fields):
            """The sample's --verify hash (`verify_digest`), the bounds as the ops' gains stand
            after this sample (the STFT's follows the PCM's dtype it was given)."""
            from ._forms import exp_fields, tolerance

            def bounds():
                ops = self.chain.ops
                return tolerance(ops), exp_fields(ops)

            return verify_digest(self.native, sample_id, fields, self.expected,
                                 self._native_reference, self.epoch, bounds)

    return OnlineDataset


def share_class():
    import torch.utils.data

    class WorkerShare(torch.utils.data.IterableDataset):
        """The epoch as each DataLoader worker reads its own share of it (`get_worker_info`),
        as a PyTorch user reads sharded record files (`prepbench.torch.StoreIterable`,
        WebDataset, TFRecord): a store's shards dealt over the workers, each streamed in order
        (a compressed shard is decompressed once, by the worker that reads it); and raw items
        of a workload whose step makes many samples of one (NILM's hour, 360 windows), every
        n-th item a worker's, its outputs yielded one by one."""

        def __init__(self, items, fan):
            self.items, self.fan = items, fan

        def next_epoch(self, job, native):
            self.items.next_epoch(job, native)

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
            items = self.items
            for sample_id, fields, error in items.share(worker, workers):
                if error is not None:
                    yield items.unread(sample_id, error)
                elif self.fan is None:
                    yield items.item(sample_id, fields)
                else:
                    yield from items.fanned(sample_id, fields, self.fan)

    return WorkerShare


def collate(items):
    """(items, batch): the batch as PyTorch's default collation makes it, or the list of
    samples where their fields cannot be stacked (shapes, dtypes or fields that differ)."""
    from torch.utils.data import default_collate

    good = [item.sample for item in items if item.sample is not None]
    for item in items:
        item.sample = None
    try:
        batch = default_collate(good) if good else []
    except (TypeError, RuntimeError, KeyError):
        batch = good
    return items, batch


def native_for(job, protocol, loader):
    """The native module, after checking that this package speaks the job's protocol and is
    the command line's version."""
    from . import native as load_native

    native = load_native()
    if job.get("protocol") != protocol:
        raise RuntimeError(f"the prepbench package here speaks {loader} protocol {protocol}, "
                           f"the command line {job.get('protocol')}: install the same version")
    if native.VERSION != job["version"]:
        raise RuntimeError(f"the prepbench package here is version {native.VERSION}, the "
                           f"command line {job['version']}: install the same version")
    return native


#: Whether the process's stdin has ended: no more runs come.
_ENDED = False


def checked(asked, protocol, loader):
    """Whether this process can run `loader`'s epochs, as prepbench asks before anything runs
    (a line `{"check": [modules], "protocol": P, "version": V}`): None when it imports the
    modules and speaks the command line's protocol and version, else what stopped it, as the
    last line of its traceback would read. The process then serves the command's first run
    with what it imported here."""
    import importlib

    try:
        for name in asked["check"]:
            importlib.import_module(name)
        native_for(asked, protocol, loader)
    except Exception as e:  # noqa: BLE001 - prepbench reports it
        return f"{type(e).__name__}: {e}"
    return None


def serve(run, protocol, loader):
    """A loader process's main: the job from stdin, `run(job, proto_out)` with the protocol on
    the original stdout and everything else (the user's prints, the framework's) on stderr,
    and an error reported as prepbench reads it. Once a run is over (`end_run`), the process
    lets go of what it held (its dataset, an application cache), says `idle`, and waits for
    the next run's job: prepbench keeps one process for the runs under a loader (of one workload,
    where it has Python steps), as a training job imports its framework once, rather than
    importing it for every run. A check (`checked`) is answered before the first job; the
    process that passed it serves that job."""
    import gc

    proto_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    line = sys.stdin.buffer.readline()
    frozen = False
    try:
        while line.strip():
            job = json.loads(line)
            if "check" in job:
                said = {"checked": checked(job, protocol, loader)}
                os.write(proto_out, (json.dumps(said) + "\n").encode())
                line = sys.stdin.buffer.readline()
                continue
            run(job, proto_out)
            if _ENDED:
                return
            gc.collect()
            if not frozen:
                # What outlived the first run (the framework's modules, imported once) is
                # moved out of the collector's sight, once: each later run's collection then
                # scans what came after it (0.11-0.13 s a run under tf.data before, 0.005-0.006 s
                # after, on 2 cores). Later survivors stay in sight, so a cycle that dies
                # later is still collected.
                gc.freeze()
                frozen = True
            os.write(proto_out, (json.dumps({"idle": _usage()}) + "\n").encode())
            line = sys.stdin.buffer.readline()
    except BaseException as e:  # noqa: BLE001 - prepbench reports it
        import traceback

        message = {"error": f"{type(e).__name__}: {e}", "detail": traceback.format_exc()}
        os.write(proto_out, (json.dumps(message) + "\n").encode())
        sys.exit(1)


def stack(*modules):
    """The interpreter's version and those of `modules` (import names) as this process imported
    them: what measured its epochs, for the manifest (a module not imported is left out)."""
    found = {"python": platform.python_version()}
    for name in modules:
        version = getattr(sys.modules.get(name), "__version__", None)
        if isinstance(version, str):
            found[name] = version
    return found


def ready(proto_out, versions):
    """Says `ready` (the CPU and I/O used so far, the framework's `versions`) and waits for
    `go`: whether it came."""
    global _ENDED
    os.write(proto_out, (json.dumps({"ready": _usage(), **versions}) + "\n").encode())
    line = sys.stdin.buffer.readline()
    _ENDED = not line
    return line.strip() == b"go"


def next_epoch(job):
    """The run's next epoch, as prepbench asks a kept loader process for it (a line giving
    its epoch, seed, `min_s`, `max_s` and `hash`), merged into `job`; None when the run is
    over (a line `{"end_run": true}`, or stdin's end)."""
    global _ENDED
    line = sys.stdin.buffer.readline()
    _ENDED = not line
    if not line.strip():
        return None
    asked = json.loads(line)
    if asked.get("end_run"):
        return None
    following = dict(job, **asked)
    if following["seed"] != job["seed"]:
        raise RuntimeError("a loader process serves one run at a time: its seed cannot change")
    return following


def answer(proto_out, started, arrivals, samples, nbytes, hashes, skipped, failed, passes,
           cache=None, unread=(), failed_read=None):
    """The epoch's answer, with the CPU and I/O used by its end (and, from a loader that
    keeps an application cache, whether it kept the records and their estimated bytes; from
    one that reads stores record by record, the records it could not read: `unread`, skipped,
    or `failed_read`, which stopped it)."""
    out = {"arrivals": arrivals, "samples": samples, "bytes": nbytes, "hashes": hashes,
           "skipped": skipped, "failed": failed, "passes": passes,
           "unread": list(unread), "failed_read": failed_read,
           "wall_s": time.perf_counter() - started, "usage": _usage()}
    if cache is not None:
        out["cache"] = cache
    os.write(proto_out, (json.dumps(out) + "\n").encode())


def run(job, proto_out):
    native = native_for(job, PROTOCOL, "torch loader")
    import torch
    from torch.utils.data import DataLoader

    dataset = dataset_class()(job, native)
    fan = dataset.fan_out()
    if fan is not None or dataset.store is not None:
        dataset = share_class()(dataset, fan)
    asked = job["options"]
    options = dict(batch_size=asked["batch_size"], num_workers=job["threads"],
                   pin_memory=asked["pin_memory"], collate_fn=collate, shuffle=False)
    if job["threads"] > 0:
        options["persistent_workers"] = asked["persistent_workers"]
        if asked["prefetch_factor"] is not None:
            options["prefetch_factor"] = asked["prefetch_factor"]
    versions = stack("torch", "torchvision", "numpy", "PIL")
    # As a training loop runs: one DataLoader for the run where its workers persist (started
    # in the first epoch, serving the next ones), a new one each epoch where they do not (its
    # iterator shuts them down and waits for them as it ends, before the epoch's answer).
    kept = DataLoader(dataset, **options) if options.get("persistent_workers") else None
    try:
        while True:
            loader = kept if kept is not None else DataLoader(dataset, **options)
            if not _epoch(loader, job, (proto_out, versions)):
                return
            job = next_epoch(job)
            if job is None:
                return
            dataset.next_epoch(job, native)
    finally:
        kept = loader = None  # persistent workers shut down and waited for before `idle`


def _epoch(loader, job, protocol):
    """One epoch of `loader`: `ready`, then on `go` its passes (repeated until `min_s`, for an
    epoch served from the page cache; stopped at `max_s`, a probe's, its input read in part)
    and the answer; False when no `go` came."""
    proto_out, versions = protocol
    if not ready(proto_out, versions):
        return False
    started = time.perf_counter()
    arrivals, hashes, skipped, unread = [], [], [], []
    samples = nbytes = passes = 0
    # What stopped the epoch (--on-error fail): a sample, or a stored record.
    failed = failed_read = None
    max_s = job.get("max_s")
    out_of_time = False
    while failed is None and failed_read is None and not out_of_time:
        passes += 1
        batches = iter(loader)
        for items, _batch in batches:
            at = time.perf_counter() - started
            good = 0
            for item in items:
                if item.error is None:
                    good += 1
                    nbytes += item.nbytes
                    if job["hash"]:
                        hashes.append([item.id, item.hash])
                elif isinstance(item.error, _Corrupt) and job["on_error"] == "skip":
                    unread.append(item.error.named)
                elif isinstance(item.error, _Corrupt):
                    failed_read = item.error.named
                    break
                elif job["on_error"] == "skip":
                    skipped.append([item.id, *item.error])
                else:
                    failed = [item.id, *item.error]
                    break
            samples += good
            if good:
                arrivals.append([good, at])
            if failed is not None or failed_read is not None:
                break
            if max_s is not None and time.perf_counter() - started >= max_s:
                out_of_time = True
                break
        if job["min_s"] is None or time.perf_counter() - started >= job["min_s"]:
            break
    answer(proto_out, started, arrivals, samples, nbytes, hashes, skipped, failed, passes,
           unread=unread, failed_read=failed_read)
    # An iterator stopped mid-epoch (at `max_s`) shuts its workers down as it goes (kept ones
    # reset at the next epoch's): after the answer, untimed.
    del batches
    return True


def main():
    serve(run, PROTOCOL, "torch loader")


if __name__ == "__main__":
    main()
