"""The `tf-data` loader's process: one epoch of a workload's online phase as the paper's stack
ran it, in the interpreter the run names.

prepbench writes the job (one JSON line) on stdin, as for the torch loader (`_loader`). The
process imports TensorFlow and builds the pipeline: for a store, `TFRecordDataset` over its
shards (prepbench's shards are TFRecord files; gzip and zlib shards are TFRecord's own
compression) with `num_parallel_reads` = the run's threads; for raw files, the source items'
fields sliced into a dataset and the read step's `tf.io.read_file`. Then one
`map(..., num_parallel_calls=threads)` parsing each record in TensorFlow ops and running the
online steps in their TensorFlow form (`_tf_steps`; a fan-out step such as NILM's `window`
splits it in two around a `flat_map`), and the training loop iterating the dataset. It answers `ready`, waits for `go`, runs the epoch and answers with every sample's
arrival, the bytes, (with --verify) each output's hash, and its CPU and I/O; then serves the
run's next epochs, each asked for by a line of its own (`_loader.next_epoch`), until the run is
over; then the workload's next run under this loader, in the same process (`_loader.serve`).
With `--cache app` the parse is a map of its own followed by `.cache()`, and the epochs
after the first are served from it.
"""

import json
import os
import time

from ._loader import (answer, expected_hashes, native_for, next_epoch, ready, serve,
                      stack, verify_digest)
from .store import _fields

#: Bumped when the job or the answer changes: prepbench refuses a package of another version.
PROTOCOL = 9

_COMPRESSION = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}


def _store_files(path, shards=None, per_shard=None):
    """The store's first `shards` shard files (all when `None`), their compression as
    TFRecordDataset names it, the records read of them (each one's first `per_shard` where
    given), and the whole store's."""
    with open(os.path.join(path, "store.json")) as f:
        manifest = json.load(f)
    codec = str(manifest.get("codec", "none")).split(":")[0]
    if codec not in _COMPRESSION:
        raise RuntimeError(f"{path}: {codec} shards are not TFRecord's compression; tf.data "
                           "reads none, gzip and zlib")
    records = [int(shard.get("records", 0)) for shard in manifest["shards"]]
    files = [os.path.join(path, shard["file"]) for shard in manifest["shards"][:shards]]
    read = [min(r, per_shard) if per_shard else r for r in records[:shards]]
    return files, _COMPRESSION[codec], sum(read), sum(records)


def _records(files, compression, threads, per_shard=None):
    """The records of `files`: `TFRecordDataset` with `num_parallel_reads` = `threads` (one
    file after another where `threads` is 0). A part of a store that reads each shard's first
    `per_shard` records (epochs sized for a faster loader) interleaves the files as
    `num_parallel_reads` does, each file's dataset cut by `take`."""
    import tensorflow as tf

    if not per_shard:
        return tf.data.TFRecordDataset(files, compression, num_parallel_reads=threads or None)

    def shard(path):
        return tf.data.TFRecordDataset(path, compression).take(per_shard)

    paths = tf.data.Dataset.from_tensor_slices(files)
    if not threads:
        return paths.flat_map(shard)
    return paths.interleave(shard, cycle_length=threads, block_length=1,
                            num_parallel_calls=threads)


def _plain(fn):
    """`fn` for a tf.data map or filter as it is, not converted by autograph (the forms build
    TensorFlow ops throughout, `tf.while_loop` among them, and autograph would write a source
    file into the system's temporary folder for every function it converts), with its forms'
    checks in one `Assert` (`_tf_steps.checked`)."""
    import tensorflow as tf

    from ._tf_steps import checked

    return tf.autograph.experimental.do_not_convert(checked(fn))


def _sizer(spec):
    """A function of an element's fields (the dataset's `element_spec` of them) giving the
    sample's bytes, read from the tensors' shapes by the consumer, not computed in the map:
    ops in the map cost every element far more than reading a shape costs here."""
    import tensorflow as tf

    strings = [name for name, s in spec.items() if s.dtype == tf.string]
    sized = [(name, s.dtype.size) for name, s in spec.items() if s.dtype != tf.string]

    def size(fields):
        total = 0
        for name, itemsize in sized:
            total += fields[name].shape.num_elements() * itemsize
        for name in strings:
            value = fields[name].numpy()
            total += len(value) if isinstance(value, bytes) else sum(map(len, value.flat))
        return total

    return size


class Pipeline:
    """The job's tf.data pipeline and what the consumer needs to check its outputs."""

    def diagnose(self, error):
        """What tf.data's `error` (an op's, which names no sample) failed on, where bad input
        can be why: the first damaged record of the shards read, as prepbench's reader names
        it (shard file, record, byte; TFRecordDataset says "corrupted record at BYTE"), or the
        first raw item whose steps fail when run one at a time in order, named by its file.
        None where neither is found."""
        tf = self.tf
        bad_input = (tf.errors.InvalidArgumentError, tf.errors.DataLossError,
                     tf.errors.NotFoundError)
        if not isinstance(error, bad_input):
            return None
        if self.job["input"] != "raw":
            from .store import Store, StoreError

            store = Store(self.job["store"])
            try:
                for _ in store.records(range(len(store.shard_records))[:self.job.get("shards")]):
                    pass
            except StoreError as e:
                return f"prepbench's reader finds {e}"
            return None
        if self.first_steps is None:
            return None
        index = 0
        try:
            for _ in self.source.map(_plain(self.first_steps)):  # one at a time, in order
                index += 1
        except tf.errors.OpError:
            fields = _fields(*self.online.source(index))
            named = ", ".join(str(v) for v in fields.values() if isinstance(v, str))
            return f"sample {index}, {named}, fails when run alone"
        return None

    def __init__(self, job, native):
        import tensorflow as tf

        from . import _tf_steps

        self.tf, self.native, self.job = tf, native, job
        self.expected = expected_hashes(job)
        spec = json.dumps(job["spec"])
        raw = job["input"] == "raw"
        self.online = native.Online(spec, job["split"], job["seed"],
                                    job.get("root"), job.get("items", 0), "tf-data")
        steps = job["spec"]["steps"]
        first = 0 if raw else job["split"]
        self.forms = self._forms(steps, first)
        self.python = python = any(isinstance(f, _tf_steps.PythonSteps) for f in self.forms)
        self.threads = threads = job["threads"]
        #: Whether the parsed records are kept in memory by `.cache()` (`--cache app`): set
        #: when asked and the store's samples fit the cache's limit.
        self.cached = False
        self.cached_bytes = 0
        self.first_steps = None
        if raw:
            items = job["items"]
            columns, self.texts = self._source(items)
            ids = tf.constant(list(range(items)), tf.uint64)
            self.source = tf.data.Dataset.from_tensor_slices((ids, columns))
            self.parse = None
            self.count = ids = items
            first_id, first_fields = 0, {k: v[0] for k, v in columns.items()}
        else:
            per_shard = job.get("records_per_shard")
            files, compression, held, ids = _store_files(job["store"], job.get("shards"),
                                                         per_shard)
            first = tf.data.TFRecordDataset(files[:1], compression)
            first_record = next(iter(first))
            layout = _tf_steps.schema(first_record.numpy())
            self.texts = {name for name, kind, *_ in layout if kind == 3}
            self.parse = _tf_steps.parser(layout)
            self.count = held
            first_id, first_fields = self.parse(first_record)
            records = _records(files, compression, threads, per_shard)
            # --verify's untimed pass reads the shards one after another: a fan-out step's
            # outputs (an hour's windows) then arrive together, as their reference makes them.
            self.in_order = _records(files, compression, 0, per_shard)
            cache = job.get("cache")
            if cache is not None and self._fits(first, cache["limit_bytes"]):
                # The application cache as tf.data's: the parsed records (the online steps'
                # input) kept by `.cache()` on the first pass and served from memory on the
                # next; the online steps run every epoch on top of it.
                self.source = records.map(_plain(self.parse),
                                          num_parallel_calls=threads).cache()
                self.parse = None
                self.cached = True
            else:
                self.source = records
        self._draw_tables(ids)
        # Python steps learn the fields they give, and forms such as decode_npy their dtype,
        # from the first sample, before the map is traced.
        if python or any(getattr(f, "learns", False) for f in self.forms):
            self._learn(first_id, first_fields)
        # After learning: some forms' bounds depend on the first sample (PCM's dtype, bins).
        self.bounds = _tf_steps.tolerance(self.forms)
        self.exp = _tf_steps.exp_fields(self.forms)
        # With --verify, where every step is prepbench's (their TensorFlow forms may differ
        # from native processing within bounds): each sample's native processing, to compare
        # with (`verify`). With Python steps the outputs are compared exactly, as natively.
        self.reference = None
        #: Whether an epoch's map differs from the last one's (`uses_epoch`: a random form
        #: draws from the epoch, Python steps and native text ops are handed it). Where none
        #: does, the dataset is built once and iterated again each epoch (a map traced again
        #: cost 0.16-0.18 s an epoch here).
        self.epoch_bound = any(f.uses_epoch for f in self.forms)
        self.dataset, self.built_hashed = None, None
        self.epoch(job["epoch"], job["hash"])

    def verify(self):
        """Makes the --verify reference where every step is prepbench's: native processing
        of the raw item (a fan-out output's, of its parent item), every step in prepbench's
        own form."""
        job = self.job
        if self.reference is None and not self.python:
            self.reference = self.native.Online(json.dumps(job["spec"]), 0, job["seed"],
                                                job["root"], job["items"], "native")

    def _steps(self, forms, sample_id, fields, epoch):
        """A sample through `forms` in `epoch`: its id and fields."""
        for form in forms:
            form(fields, (self.job["seed"], sample_id, epoch))
        return sample_id, fields

    def _draw_tables(self, ids):
        """Gives the random forms the ids (samples 0 to `ids` - 1: a store's records, the raw
        items) whose draws they look up in a table made once per epoch, rather than drawing
        each in a hundred scalar ops of the map (`_tf_steps.Form.draws`); none past a fan-out
        step, whose outputs' ids are child ids, nor for more ids than a table holds (its
        samples then draw in ops: a table of fewer would fail the ids beyond it)."""
        from . import _tf_steps

        fanned = self.online.item_shift(self.job["split"]) > 0
        for form in self.forms:
            fanned = fanned or getattr(form, "fans_out", False)
            if getattr(form, "random", False):
                form.ids = 0 if fanned or ids > _tf_steps.MAX_TABLE_IDS else ids

    def _fan_out(self):
        """The online forms before the fan-out form (NILM's `window`), that form, and those
        after it; (every form, None, []) without one."""
        for i, form in enumerate(self.forms):
            if getattr(form, "fans_out", False):
                return self.forms[:i], form, self.forms[i + 1:]
        return self.forms, None, []

    def _fits(self, first, limit_bytes):
        """Whether the store's parsed samples fit the application cache's limit, estimated
        from the first shard's first records (a compressed store's records parse larger
        than they are stored): tf.data's `.cache()` has no limit of its own."""
        import tensorflow as tf

        parsed = [self.parse(r)[1] for r in first.take(64)]
        if not parsed:
            return False
        # Counted as the consumer counts an element's bytes; a store's fields keep their
        # dtypes, so one sizer, from the first record, reads every record's shapes.
        size = _sizer({name: tf.TensorSpec.from_tensor(v) for name, v in parsed[0].items()})
        sizes = [size(fields) for fields in parsed]
        self.cached_bytes = int(self.count * sum(sizes) / len(sizes))
        return self.cached_bytes <= limit_bytes

    def epoch(self, epoch, hashed=False):
        """The dataset of `epoch`: one `map(..., num_parallel_calls=threads)` of the online
        steps, seeded with the epoch, over the source (with the parse fused into it where the
        records are not cached), then `prefetch`. `hashed` (--verify's untimed pass, its
        reference made): only a store's records of the source's first cycle (ids below its
        items), the ones --verify compares, go through the steps; a store that cycles its
        source holds many more, and their steps and hashes would be work nobody reads. The
        last epoch's dataset serves again where no step depends on the epoch
        (`epoch_bound`) and `hashed` is as it was."""
        from . import _tf_steps

        tf, fused = self.tf, self.parse
        self.job = dict(self.job, epoch=epoch)
        if hashed:
            self.verify()
        if self.dataset is not None and not self.epoch_bound and hashed == self.built_hashed:
            return
        self.built_hashed = hashed
        source = self.source
        items = self.job.get("items") or 0
        if hashed and fused is not None and items > 0:
            below = tf.constant(items, tf.uint64)
            # A store past the fan-out step holds child ids: their item is the parent.
            shift = tf.constant(self.online.item_shift(self.job["split"]), tf.uint64)
            source = self.in_order.map(_plain(fused), num_parallel_calls=self.threads)
            source = source.filter(_plain(
                lambda i, f: tf.bitwise.right_shift(tf.cast(i, tf.uint64), shift) < below))
            fused = None
        before, fan_out, after = self._fan_out()

        def steps_of(forms, last, cached=False):
            def run(sample_id, fields):
                # Over `.cache()`'s elements, Python steps learn which of their inputs are
                # the cache's own tensors (`PythonSteps.cached`).
                held = frozenset(v.ref() for v in fields.values()) if cached else frozenset()
                for form in forms:
                    if isinstance(form, _tf_steps.PythonSteps):
                        form.cached = held
                sample_id, fields = self._steps(forms, sample_id, fields, epoch)
                if not last:
                    return sample_id, fields
                # The training loop's element: the sample's fields, and its id only where
                # --verify hashes it (one tensor fewer to hand over per element).
                return (sample_id, fields) if hashed else fields
            return run

        first = steps_of(before, fan_out is None, self.cached and fused is None)
        #: The steps before any fan-out, as one raw item's map (`diagnose`).
        self.first_steps = first if self.job["input"] == "raw" else None
        if fused is not None:
            mapped = source.map(_plain(lambda r: first(*fused(r))),
                                num_parallel_calls=self.threads)
        else:  # (id, fields) elements: raw items, cached or filtered records
            mapped = source.map(_plain(first), num_parallel_calls=self.threads)
        if fan_out is not None:
            # One element becomes many (NILM's hour its windows), as tf.data cuts one:
            # `flat_map` of the element's dataset; then the steps after it, in parallel.
            mapped = mapped.flat_map(_plain(fan_out.expand)).map(
                _plain(steps_of(after, True)), num_parallel_calls=self.threads)
        dataset = mapped.prefetch(tf.data.AUTOTUNE)
        if not (self.job.get("options") or {}).get("autotune", True):
            # `--loader-options autotune=false`: tf.data's autotuning off, as a pipeline that
            # sets it runs (the prefetch buffer then stays at its starting size).
            options = tf.data.Options()
            options.autotune.enabled = False
            dataset = dataset.with_options(options)
        self.dataset = dataset
        spec = dataset.element_spec
        self.size = _sizer(spec[1] if hashed else spec)

    def _forms(self, steps, first):
        """The online steps' forms: prepbench's in TensorFlow, runs of Python steps each one
        `PythonSteps`."""
        from . import _tf_steps
        from ._loader import Chain

        chain = None
        offset = max(self.job["split"], 1)  # the chain's first step
        forms = []
        for i, step in enumerate(steps):
            if i < first:
                continue
            if step["op"] != "python":
                form = _tf_steps.make(step["op"], step.get("params") or {}, i)
                if hasattr(form, "bind"):
                    form.bind(self.online)
                forms.append(form)
                continue
            if chain is None:
                chain = Chain(self.native, self.online, ops=False)
            if forms and isinstance(forms[-1], _tf_steps.PythonSteps):
                forms[-1].indices.append(i - offset)
            else:
                forms.append(_tf_steps.PythonSteps(chain, [i - offset], self.online))
        return forms

    def _learn(self, sample_id, fields):
        """Runs the first sample through the forms in eager mode, so that each run of Python
        steps learns the fields it gives (and a form that `learns`, what it must)."""
        from . import _tf_steps

        seed, epoch = self.job["seed"], self.job["epoch"]
        fields = dict(fields)
        texts = set(self.texts)
        for form in self.forms:
            if getattr(form, "fans_out", False):
                sample_id, fields = form.first(sample_id, fields)
                continue
            if isinstance(form, _tf_steps.PythonSteps):
                fields = form.learn(fields, int(sample_id), epoch, texts)
                texts = form.texts()
            else:
                form(fields, (seed, sample_id, epoch))
                if hasattr(form, "texts_after"):
                    texts = form.texts_after(texts)
        self.texts = texts

    def _source(self, items):
        """The source items' fields (before the read step) as columns, and the text ones."""
        tf = self.tf
        columns, texts = {}, set()
        for index in range(items):
            payload, sample_id, layout = self.online.source(index)
            for name, value in _fields(payload, sample_id, layout).items():
                if isinstance(value, str):
                    texts.add(name)
                columns.setdefault(name, []).append(value)
        return {name: tf.constant(values) for name, values in columns.items()}, texts

    def fields(self, element):
        """An element's fields as NumPy arrays, bytes and str."""
        out = {}
        for name, value in element.items():
            value = value.numpy()
            if isinstance(value, bytes):
                value = value.decode("utf-8") if name in self.texts else value
            out[name] = value
        return out

    def digest(self, sample_id, fields):
        """The sample's --verify hash (`verify_digest`)."""
        return verify_digest(self.native, sample_id, fields, self.expected,
                             lambda: self.reference, self.job["epoch"],
                             lambda: (self.bounds, self.exp))


def run(job, proto_out):
    native = native_for(job, PROTOCOL, "tf-data loader")
    import tensorflow as tf

    pipeline = Pipeline(job, native)
    versions = stack("tensorflow", "tensorflow_io", "numpy")
    while True:
        if not ready(proto_out, versions):
            return
        _epoch(pipeline, job, proto_out)
        # The process serves the run's next epochs (from the application cache, where it
        # holds one): each asked for by a line giving its epoch, seed, `min_s`, `max_s` and
        # `hash`.
        job = next_epoch(job)
        if job is None:
            return
        pipeline.epoch(job["epoch"], job["hash"])


def _epoch(pipeline, job, proto_out):
    """One epoch (repeated passes until `min_s`, for an epoch served from a cache; stopped at
    `max_s`, a probe's, its input read in part) and its answer."""
    import tensorflow as tf

    from . import _tf_steps

    started = time.perf_counter()
    arrivals, hashes = [], []
    samples = nbytes = passes = 0
    size = pipeline.size
    max_s = job.get("max_s")
    out_of_time = False
    while not out_of_time:
        passes += 1
        iterator = iter(pipeline.dataset)
        while True:
            try:
                # (id, fields) where --verify hashes, else the fields.
                element = next(iterator)
            except StopIteration:
                break
            except tf.errors.OpError as e:
                # tf.data names the op, not the sample: said as it is (so --on-error skip is
                # refused under this loader), with the sample or record found to fail.
                found = pipeline.diagnose(e)
                found = f" ({found})" if found else ""
                raise RuntimeError(f"tf.data failed on an element after {samples} samples"
                                   f"{found}: {type(e).__name__}: "
                                   f"{_tf_steps.explain(e.message)}") from None
            arrivals.append(time.perf_counter() - started)
            samples += 1
            if job["hash"]:
                sample_id, element = element
                sample_id = int(sample_id)
                fields = pipeline.fields(element)
                hashes.append([sample_id, pipeline.digest(sample_id, fields)])
            nbytes += size(element)
            if max_s is not None and time.perf_counter() - started >= max_s:
                out_of_time = True
                break
        if job["min_s"] is None or time.perf_counter() - started >= job["min_s"]:
            break
    answer(proto_out, started, [[1, t] for t in arrivals], samples, nbytes, hashes, [], None,
           passes,
           cache={"kept": pipeline.cached, "bytes": pipeline.cached_bytes})
    # An iterator let go waits for the reads and maps it has in flight (a probe of MP3
    # spectrograms let go before its answer lasted 2.59 s against its 1.5 s limit, 1.51 s
    # after): after the answer, untimed.
    del iterator


def main():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    serve(run, PROTOCOL, "tf-data loader")


if __name__ == "__main__":
    main()
