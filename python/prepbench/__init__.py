"""prepbench from Python.

Describe your pipeline as a list of named steps, each an importable callable of your own (a
function, a module-level transform object, or a transform class with its arguments), point it
at your files, and sweep every split point between offline and online preprocessing::

    import prepbench
    import my_pipeline

    pipeline = prepbench.Pipeline(
        "my-photos",
        data="my-photos", glob="**/*.JPEG", label="parent",
        steps=[
            ("decoded", my_pipeline.decode),
            ("resized", my_pipeline.resize),
            prepbench.Step("cropped", my_pipeline.random_crop, random=True),
        ],
    )
    runs = pipeline.sweep("results", verify=True)      # rows of runs.csv
    pipeline.report("results")                          # rows of summary.csv (+ report.md)
    best = pipeline.recommend("results", epochs=10)     # ranked candidates, best first

Then read the chosen strategy's store from your training loop: `prepbench.open_store(PATH)`
(see `prepbench.store`), or a PyTorch DataLoader over `prepbench.torch.StoreDataset(PATH)`.

Rows come as lists of dicts keyed by the CSV files' own column names (docs/measurement.md),
numbers as numbers; `rows.frame()` (or `pandas.DataFrame(rows)`) makes a DataFrame. The pipeline is
written as an ordinary workload YAML (`Pipeline.write`), which the prepbench CLI runs: every
command and option of the CLI applies to it. Steps run in worker processes of this
interpreter (`sys.executable`), so the packages your steps import must be installed in it.
"""

import csv
import importlib.util
import inspect
import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

__all__ = ["Pipeline", "Step", "Rows", "PrepbenchError", "StoreError", "OnlineSteps", "binary", "open_store",
           "native"]

#: Set by prepbench's Python workers: a module they import must not start prepbench again.
WORKER_ENV = "PREPBENCH_WORKER"


class PrepbenchError(RuntimeError):
    """A prepbench command failed (its message is prepbench's), or the pipeline is wrong."""


_NATIVE = []


def native():
    """prepbench's native module (`prepbench._native`, built by cargo when the package is
    installed): from `$PREPBENCH_NATIVE` when set (a built `lib_native.so`), else installed."""
    if _NATIVE:
        return _NATIVE[0]
    path = os.environ.get("PREPBENCH_NATIVE")
    if path:
        spec = importlib.util.spec_from_file_location("prepbench._native", path)
        if spec is None:
            raise PrepbenchError(f"PREPBENCH_NATIVE={path}: not a loadable module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["prepbench._native"] = module
    else:
        try:
            from . import _native as module
        except ImportError as e:
            raise PrepbenchError(
                "prepbench's native module is not installed: install this package with "
                "`pip install .` from the prepbench repository (cargo builds it), or set "
                f"PREPBENCH_NATIVE to a built lib_native.so ({e})"
            ) from None
    _NATIVE.append(module)
    return module


def open_store(path, cache_bytes=None):
    """Opens a store prepbench materialized (a folder holding `store.json`): see
    `prepbench.store`."""
    from .store import Store

    return Store(path, cache_bytes)


def __getattr__(name):
    # The reader's names without importing it (and NumPy) for the rest of the package.
    if name in ("StoreError", "OnlineSteps", "Store", "Sample"):
        from . import store

        return getattr(store, name)
    raise AttributeError(f"module 'prepbench' has no attribute {name!r}")


def binary():
    """The prepbench CLI: `$PREPBENCH_BIN`, else the one installed beside this interpreter
    (`pip install` puts it there), else the first on PATH."""
    named = os.environ.get("PREPBENCH_BIN")
    if named:
        return named
    beside = Path(sysconfig.get_path("scripts")) / "prepbench"
    if beside.is_file():
        return str(beside)
    found = shutil.which("prepbench")
    if found:
        return found
    raise PrepbenchError(
        "no prepbench binary: install this package with `pip install .` from the prepbench "
        "repository (it builds the CLI), or set PREPBENCH_BIN to a prepbench binary"
    )


def _installed(path):
    """Whether a module file lies in this interpreter's standard library or site-packages
    (the workers find it without a search path)."""
    path = Path(path).resolve()
    roots = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return any(root and path.is_relative_to(Path(root).resolve()) for root in roots)


def _module_place(module_name):
    """(module name as the workers import it, search path or None) for a loaded module."""
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if module_name == "__main__":
        # `python - < script` names its file `<stdin>`: no file a worker can import either.
        if not file or not Path(file).is_file():
            raise PrepbenchError(
                "a step defined in an interactive session cannot run in a worker process: "
                "define it in a module file and import it"
            )
        return Path(file).stem, str(Path(file).resolve().parent)
    if not file or _installed(file):
        return module_name, None
    root = Path(file).resolve().parent
    if Path(file).name == "__init__.py":
        root = root.parent
    for _ in range(module_name.count(".")):
        root = root.parent
    return module_name, str(root)


def _bound(function):
    """Where an object (not a function or class) is a module-level name, the module and
    the name: (`sys.modules` key, attribute). Public names in modules other than `__main__`
    first (bound when the module is imported), then `__main__`'s, then private ones; never
    `builtins` (whose `_` holds an interactive session's last value). `None`: nowhere."""
    found = []
    for name, module in list(sys.modules.items()):
        if name == "builtins":
            continue
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if value is function and not attr.startswith("__"):
                found.append((attr.startswith("_"), name == "__main__", name, attr))
    if not found:
        return None
    _, _, name, attr = min(found, key=lambda f: (f[0], f[1]))
    return name, attr


def _locate(function):
    """`module:name` and the search path for an importable callable, and for an object found
    by identity (`sys.modules` key, attribute, object): the binding its name must still hold
    when the workload is written, or `None`."""
    if isinstance(function, str):
        if ":" not in function:
            raise PrepbenchError(f"{function!r}: expected `module:callable`")
        return function, None, None
    if inspect.ismethod(function) and not inspect.isclass(function.__self__):
        owner, path, bound = _locate(function.__self__)
        return f"{owner}.{function.__name__}", path, bound
    if inspect.isclass(function) or inspect.isfunction(function) or inspect.isbuiltin(function):
        qualname = function.__qualname__
        if "<locals>" in qualname or "<lambda>" in qualname:
            raise PrepbenchError(
                f"{qualname} is defined inside a function (or is a lambda): a worker process "
                "cannot import it; define it at module level"
            )
        module, path = _module_place(function.__module__)
        return f"{module}:{qualname}", path, None
    # An object (a transform instance): found by identity among the loaded modules' globals.
    # Only a callable one: `5`, `None` or `True` is the same object as many a module's
    # constant, and would be taken for it.
    if not callable(function):
        raise PrepbenchError(
            f"{function!r} ({type(function).__name__}) is not callable: a step is a function, a "
            "transform object, a class with `init`, or \"module:callable\""
        )
    bound = _bound(function)
    if bound is not None:
        name, attr = bound
        module_name, path = _module_place(name)
        return f"{module_name}:{attr}", path, (name, attr, function)
    raise PrepbenchError(
        f"{type(function).__name__} object is not a module-level name, so a worker process "
        "cannot import it: assign it to a name in your module, or give the class and its "
        "arguments: prepbench.Step(NAME, TransformClass, init={...})"
    )


class Step:
    """One named step: `function` (a callable, or `"module:callable"`) applied to the field
    `field` (`None`: a dict of every field), its one returned value written to `to` (default:
    `field`). `random=True` marks a random augmentation: seeded per sample and epoch, always
    online. `init` (a list or dict of plain values) makes the callable first: `function` is a
    class, called once per worker with these arguments."""

    def __init__(self, name, function, *, field="data", to=None, random=False, init=None):
        self.name = name
        self.function, self.path, self._bound = _locate(function)
        self.field = field
        self.to = to
        self.random = random
        if init is not None and not isinstance(init, (list, tuple, dict)):
            raise PrepbenchError(f"step {name}: init is a list or a dict of arguments")
        self.init = list(init) if isinstance(init, tuple) else init

    def yaml(self):
        if self._bound is not None:
            module, attr, value = self._bound
            if getattr(sys.modules.get(module), attr, None) is not value:
                raise PrepbenchError(
                    f"step {self.name}: its object was found as `{self.function}`, a name "
                    "that now holds another (a loop variable, or a name bound again), so a "
                    "worker importing it would run that other: give each step's object a "
                    "module-level name of its own"
                )
        params = {"function": self.function}
        if self.path:
            params["path"] = self.path
        if self.field:
            params["from"] = self.field
        if self.to:
            params["to"] = self.to
        if self.init is not None:
            params["init"] = self.init
        lines = [f"  - name: {json.dumps(self.name)}", "    op: python"]
        if self.random:
            lines.append("    random: true")
        lines.append(f"    params: {json.dumps(params)}")
        return "\n".join(lines)


def _not_in_worker():
    if os.environ.get(WORKER_ENV):
        raise PrepbenchError(
            "prepbench was called while a prepbench worker imported this module: put the "
            "calls under `if __name__ == \"__main__\":`"
        )


def _value(text):
    """A CSV cell as Python reads it: an int, a float, None for an empty cell, else the text."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class Rows(list):
    """The rows of one of prepbench's CSV files, as dicts keyed by its own column names, with
    numbers as numbers (None for an empty cell); `.frame()` gives them as a pandas DataFrame."""

    def frame(self):
        import pandas

        return pandas.DataFrame(list(self))


def _table(text):
    return Rows({k: _value(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(text)))


def _rows(path):
    with open(path, newline="") as f:
        return _table(f.read())


#: The command line's flags as this API's keyword arguments, for its errors.
_ARGUMENTS = (("--samples or dataset.samples", "samples="), ("--samples", "samples="),
              ("--threads", "threads="), ("--strategies", "strategies="), ("--trials", "trials="),
              ("--epochs", "epochs="), ("--cache", "cache="), ("--weights", "weights="),
              ("--dataset-samples", "dataset_samples="), ("--loader-options", "loader_options="),
              ("--loaders", "loaders="), ("--codecs", "codecs="), ("--storage", "storage="),
              ("--store-dir", "store_dir="), ("--memory-bytes", "memory_bytes="),
              ("--out", "out"))


def _in_python_terms(message):
    """prepbench's message with the flags this API passes named as its arguments."""
    for flag, argument in _ARGUMENTS:
        message = message.replace(flag, argument)
    return message


class Pipeline:
    """A workload: files read from `data` (a folder: `glob` picks the files, in natural order;
    `label="parent"` labels them by folder as torchvision's ImageFolder does), or WebDataset tar
    shards (`kind="webdataset"`), then `steps` (`Step`s, or `(name, callable)` pairs). The first
    step, `read_name`, reads each file (or sample) into the field `data`."""

    def __init__(self, name, *, data, steps, glob="**/*", label=None, kind="files",
                 samples=None, read_name="concatenated", description=""):
        if kind not in ("files", "webdataset"):
            raise PrepbenchError(f"kind {kind!r}: `files` or `webdataset`")
        for argument, value in (("name", name), ("glob", glob), ("read_name", read_name),
                                ("description", description)):
            if not isinstance(value, str):
                raise PrepbenchError(f"{argument}={value!r}: expected a str")
        if not isinstance(data, (str, os.PathLike)):
            raise PrepbenchError(f"data={data!r}: expected a folder (a str or a path)")
        if label not in (None, "none", "parent"):
            raise PrepbenchError(f"label={label!r}: None or \"parent\"")
        # 0 is not "the default": a count of samples is at least 1, or None for every file.
        if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int)
                                    or samples < 1):
            raise PrepbenchError(f"samples={samples!r}: a whole number from 1, or None for "
                                 "every file")
        if isinstance(steps, (str, bytes)) or not hasattr(steps, "__iter__"):
            raise PrepbenchError(f"steps={steps!r}: expected a list of Step or (name, callable)")
        self.name = name
        self.data = str(Path(data).resolve())
        self.kind = kind
        self.glob = glob
        self.label = label
        self.samples = samples
        self.read_name = read_name
        self.description = description or f"{name}, written by prepbench's Python API"
        self.steps = []
        for s in steps:
            if not isinstance(s, Step) and not (isinstance(s, tuple) and len(s) >= 2):
                raise PrepbenchError(f"step {s!r}: expected a Step or a (name, callable) pair")
            self.steps.append(s if isinstance(s, Step) else Step(*s))
        names = [read_name] + [s.name for s in self.steps]
        if len(set(names)) != len(names):
            raise PrepbenchError(f"step names must differ: {names}")

    def yaml(self):
        """The workload YAML."""
        options = {}
        if self.kind == "files":
            options["glob"] = self.glob
            if self.label:
                options["label"] = self.label
        lines = [
            f"name: {json.dumps(self.name)}",
            f"description: {json.dumps(self.description)}",
            "dataset:",
            f"  kind: {self.kind}",
            f"  path: {json.dumps(self.data)}",
        ]
        if options:
            lines.append(f"  options: {json.dumps(options)}")
        if self.samples is not None:
            lines.append(f"  samples: {int(self.samples)}")
        read = "read_file" if self.kind == "files" else "read_webdataset"
        lines += ["steps:", f"  - name: {json.dumps(self.read_name)}", f"    op: {read}"]
        lines += [s.yaml() for s in self.steps]
        return "\n".join(lines) + "\n"

    def write(self, path):
        """Writes the workload YAML to `path` and returns it."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.yaml())
        except OSError as e:
            raise PrepbenchError(f"cannot write the workload file {str(path)!r}: "
                                 f"{e.strerror or e}") from None
        return path

    def _run(self, *args, progress=False):
        """Runs the CLI and returns its stdout; with `progress`, its status lines reach this
        process's stderr as they come (a sweep takes minutes). An error is raised with
        prepbench's message, its flags named as this API's arguments."""
        _not_in_worker()
        command = [binary(), "--python", sys.executable, *map(str, args)]
        if not progress:
            done = subprocess.run(command, capture_output=True, text=True)
            stdout, stderr, code = done.stdout, done.stderr, done.returncode
        else:
            with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) as child:
                out = []
                reader = threading.Thread(target=lambda: out.append(child.stdout.read()))
                reader.start()
                lines = []
                for line in child.stderr:
                    lines.append(line)
                    sys.stderr.write(line)
                    sys.stderr.flush()
                reader.join()
                code = child.wait()
            stdout, stderr = "".join(out), "".join(lines)
        if code != 0:
            raise PrepbenchError(_in_python_terms(stderr.strip())
                                 or f"{' '.join(command)} failed")
        return stdout

    def sweep(self, out, *, threads=None, strategies=None, trials=None, epochs=None,
              samples=None, verify=False, cache=None, loaders=None, loader_options=None,
              codecs=None, storage=None, store_dir=None, extra=()):
        """Sweeps every split point (or `strategies`) into the results folder `out` (resumed
        when it holds runs already) and returns the rows of its runs.csv. The workload YAML is
        written as `out/NAME.yaml`. `loaders` (`["native", "torch"]`) measures each split
        under each loader; `loader_options` (`"batch_size=64,pin_memory=True"`) sets the
        torch loader's DataLoader arguments. `codecs` (`["none", "zstd"]`) and `storage`
        (`"paper-ceph-hdd"`) are the command line's; `store_dir` is where the strategies'
        stores are written (default: `store` in the working directory)."""
        _not_in_worker()
        out = Path(out)
        # Nothing is written into the dataset, not even the workload file, before the command
        # line would refuse the folder.
        data = Path(self.data)
        for argument, folder in (("out", out), ("store_dir", store_dir)):
            if folder is None:
                continue
            if not isinstance(folder, (str, os.PathLike)):
                raise PrepbenchError(f"{argument}={folder!r}: expected a folder (a str or a "
                                     "path)")
            folder = Path(folder)
            resolved = folder.resolve()
            if resolved == data or data in resolved.parents:
                raise PrepbenchError(f"{argument}={str(folder)!r} is inside the dataset "
                                     f"{self.data}: prepbench never writes into a dataset; "
                                     "choose a folder outside it")
            if folder.exists() and not folder.is_dir():
                raise PrepbenchError(f"{argument}={str(folder)!r} is a file, not a folder: "
                                     "name a folder (one that does not exist is made)")
        workload = self.write(out / f"{self.name}.yaml")
        args = ["sweep", workload, "--out", out]
        if store_dir is not None:
            args += ["--store-dir", store_dir]
        for flag, value in (("--threads", threads), ("--strategies", strategies),
                            ("--cache", cache), ("--loaders", loaders), ("--codecs", codecs),
                            ("--storage", storage)):
            if value is not None:
                values = value if isinstance(value, (list, tuple)) else [value]
                args += [flag, ",".join(map(str, values))]
        for flag, value in (("--trials", trials), ("--epochs", epochs), ("--samples", samples),
                            ("--loader-options", loader_options)):
            if value is not None:
                args += [flag, value]
        if verify:
            args.append("--verify")
        self._run(*args, *extra, progress=True)
        return _rows(out / "runs.csv")

    def report(self, out, *, weights=None, epochs=None):
        """Writes report.md (leading with the recommendation), summary.csv and plots into
        `out` and returns the rows of summary.csv."""
        args = ["report", out, "--quiet"]
        if weights is not None:
            args += ["--weights", ",".join(map(str, weights))]
        if epochs is not None:
            args += ["--epochs", epochs]
        self._run(*args)
        return _rows(Path(out) / "summary.csv")

    def recommend(self, out, *, weights=None, epochs=None, dataset_samples=None,
                  memory_bytes=None):
        """Every candidate strategy ranked under `weights` (offline time, storage, throughput)
        for `epochs` training epochs: rank 1 is the recommendation. `dataset_samples` plans
        for a dataset of that many samples; `memory_bytes` (`"64GiB"`, or a number of bytes)
        for a training machine with that much memory for the page cache."""
        args = ["recommend", out, "--csv"]
        if memory_bytes is not None:
            args += ["--memory-bytes", memory_bytes]
        if weights is not None:
            args += ["--weights", ",".join(map(str, weights))]
        if epochs is not None:
            args += ["--epochs", epochs]
        if dataset_samples is not None:
            args += ["--dataset-samples", dataset_samples]
        return _table(self._run(*args))
