# prepbench's Python worker: runs a chain of the user's callables (consecutive `op: python`
# steps of one phase) on samples prepbench hands it.
#
# Started as `python -c <this> serve FD0 FD1 LINKS` or `python -c <this> check LINKS`. LINKS are five
# arguments per step: search path, `module:callable`, the from field or "", the to field, "1"
# for a random step (seeded before each call) or "0", and "" or the JSON list or map of arguments
# the callable is called with once to make the callable that runs (a transform class). FD0 and
# FD1 are two shared memory files (memfds), slots 0 and 1, both processes map: prepbench writes
# a request into a slot and sends 24 bytes on stdin (u64 slot, u64 request length, u64 size of
# the slot's file); the worker runs the chain, writes the reply into the same slot and sends 24
# bytes on stdout (u64 slot, u64 reply length, u64 size of the file, which it grows when the
# reply needs more). Requests are served in the order they came; with two slots prepbench can
# queue the next sample while the worker runs one, so that the worker goes from one to the next
# without waiting to be woken. Only these messages and the greeting cross the pipes, so a sample
# of megabytes costs two messages, not one per pipe buffer. Everything the user's code prints
# goes to stderr.
#
# All integers are little-endian. The first HEADER bytes of a slot hold, at 0, the index of the
# link running now on its sample (u32), so that prepbench can name the step when the worker
# dies; payloads start at HEADER. A field is: u16 name length, name (UTF-8), u8 tag: 0 bytes and 1 str (u64
# length, data); 2 array (u8 dtype code, u8 ndim, u64 per dimension, u64 byte count, data in C
# order); 3 a field the chain does not read (name only), kept by prepbench as it is.
# A request is: u64 sample id, u64 epoch, u32 link count, u64 seed per link, u32 field count,
# fields. A reply is: u8 status, u32 links run, u64 nanoseconds from reading the request to
# writing the reply, u64 nanoseconds of each link run (its call, and for a random link the
# seeding before it); then status 0: u32 field count, the sample's fields in order (tag 3:
# prepbench keeps its own);
# status 2 (the last link run raised, or returned what cannot cross): u32 length, message, u32
# length, traceback; status 3 (the last link's `from` field is missing): u32 length, the names
# the sample has, joined by ", ".
# The greeting, on stdout after the imports: u8 status 0, or 2 with u32 link index, u32 length,
# message, u32 length, traceback.
import importlib
import inspect
import mmap
import os
import random
import struct
import sys
import threading
import time
import traceback

DTYPES = ["uint8", "uint16", "int16", "int32", "float32", "float64"]
INT32 = (-(2 ** 31), 2 ** 31 - 1)
HEADER = 64
MAX_NAME_BYTES = 255
#: The most bytes one field may hold, and the most the shared memory may grow to (wire.rs
#: MAX_FIELD_BYTES and MAX_MEMORY): a reply beyond them fails its sample here, in words.
MAX_FIELD_BYTES = 4 << 30
MAX_MEMORY = MAX_FIELD_BYTES + (64 << 20)
BYTES, STR, ARRAY, KEPT = 0, 1, 2, 3


class Kept:
    """A field prepbench did not send (no link of the chain reads it)."""


KEEP = Kept()

WRONG_TYPE = (
    "fields cross as NumPy arrays of " + ", ".join(DTYPES) + " (other integer, bool and float16 "
    "arrays are converted when their values fit), bytes or str"
)


def as_array(value, name):
    """A NumPy array of one of prepbench's six types, or a TypeError saying why not."""
    try:
        import numpy as np
    except ImportError:
        raise TypeError(
            f"{name} is {type(value).__name__}; {WRONG_TYPE} (NumPy is not installed in "
            f"{sys.executable})"
        ) from None

    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, bool):
        value = np.uint8(value)
    elif isinstance(value, int):
        if not INT32[0] <= value <= INT32[1]:
            raise TypeError(f"{name}: integer {value} does not fit int32")
        value = np.int32(value)
    elif isinstance(value, float):
        value = np.float64(value)
    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - a value NumPy cannot take is a wrong type
        raise TypeError(f"{name} is {type(value).__name__}; {WRONG_TYPE}") from None
    kind = array.dtype
    if kind == np.bool_:
        array = array.astype(np.uint8)
    elif kind == np.int8:
        array = array.astype(np.int16)
    elif kind == np.float16:
        array = array.astype(np.float32)
    elif kind.kind in "iu" and kind.name not in DTYPES:
        if array.size and (array.min() < INT32[0] or array.max() > INT32[1]):
            raise TypeError(f"{name}: {kind.name} values do not fit int32")
        array = array.astype(np.int32)
    elif kind.name not in DTYPES:
        raise TypeError(f"{name} is {type(value).__name__} of dtype {kind}; {WRONG_TYPE}")
    array = array.astype(array.dtype.newbyteorder("<"), copy=False)
    # (ascontiguousarray would make a scalar's 0-d array one of shape [1].)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def _refs(value):
    return sys.getrefcount(value)


class Arrays:
    """What the checks between steps need of NumPy, set once it is first needed: ndarray, and
    the reference counts `crossed` and `run_chain` see for an array nothing else holds (each
    calibrated with its own shape of code, so that the rule holds whatever the interpreter
    counts)."""

    ndarray = None
    crossed_refs = 0
    chain_refs = 0

    @classmethod
    def ready(cls):
        if cls.ndarray is None:
            import numpy as np

            pair = ["x", np.zeros(1)]
            value = pair[1]
            pair[1] = None
            cls.crossed_refs = _refs(value)
            refs = sys.getrefcount
            fresh = np.zeros(1)
            cls.chain_refs = refs(fresh)
            cls.ndarray = np.ndarray


# The six types by their one-letter code (NumPy's dtype.name runs Python code: slow between
# steps, when the caches are cold from the step's own work).
CODES = {"B": 0, "H": 1, "h": 2, "i": 3, "f": 4, "d": 5}
_LITTLE = sys.byteorder == "little"


def is_array(value):
    """Whether value is a NumPy array (NumPy made ready when a step has imported it)."""
    if Arrays.ndarray is None:
        if "numpy" not in sys.modules:
            return False
        Arrays.ready()
    return type(value) is Arrays.ndarray


def fast(value):
    """Whether value is an array that crosses as it is (no conversion)."""
    return (type(value) is Arrays.ndarray and _LITTLE and value.dtype.char in CODES
            and value.dtype.isnative and value.flags.c_contiguous)


def views_other(value):
    """Whether an array views memory that may change under it (another array's): copied then.
    Views of immutable bytes (NumPy's view of a Pillow image) are not."""
    return not (value.base is None or type(value.base) is bytes)


def valid_name(name):
    if not isinstance(name, str) or not name:
        raise TypeError(f"returned a dict with key {name!r}; field names are non-empty str")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise TypeError(f"returned field {name[:40]!r}...: names are at most {MAX_NAME_BYTES} bytes")


def crossed(pair, whole):
    """`pair` ([name, value]; `whole`: from a returned dict) made a value the next step can be
    given as a Compose would give it, but safe to keep: bytes, str, or a C-order little-endian
    array that nothing else holds or can change. An array is copied only when something else
    holds it (another field, a module's global) or it views another array's memory; one that
    views immutable bytes (NumPy's view of a Pillow image) is passed as it is, read-only."""
    name, value = pair
    pair[1] = None
    if whole:
        valid_name(name)
    if isinstance(value, (bytes, str)):
        pair[1] = value
        return
    if isinstance(value, (bytearray, memoryview)):
        pair[1] = bytes(value)
        return
    if not fast(value):
        value = as_array(value, f"field `{name}`" if whole else "the returned value")
        Arrays.ready()
    if _refs(value) > Arrays.crossed_refs or views_other(value):
        value = value.copy()
    pair[1] = value


class Memory:
    """The shared memory file, mapped."""

    def __init__(self, fd):
        self.fd = fd
        self.size = 0
        self.map = None

    def remap(self, size):
        if size != self.size:
            if self.map is not None:
                self.map.close()
            self.map = mmap.mmap(self.fd, size)
            self.size = size

    def grow(self, need):
        if need > self.size:
            size = min(max(need, 2 * self.size), MAX_MEMORY)
            os.ftruncate(self.fd, size)
            self.remap(size)


def read_fields(mm, offset):
    """The request's fields from offset, in order: {name: value}."""
    (count,) = struct.unpack_from("<I", mm, offset)
    offset += 4
    fields = {}
    for _ in range(count):
        (n,) = struct.unpack_from("<H", mm, offset)
        name = mm[offset + 2:offset + 2 + n].decode("utf-8")
        offset += 2 + n
        tag = mm[offset]
        offset += 1
        if tag == BYTES or tag == STR:
            (n,) = struct.unpack_from("<Q", mm, offset)
            data = mm[offset + 8:offset + 8 + n]
            offset += 8 + n
            value = data if tag == BYTES else data.decode("utf-8")
        elif tag == ARRAY:
            import numpy as np  # noqa: PLC0415 - only arrays need it

            code, ndim = struct.unpack_from("<BB", mm, offset)
            shape = struct.unpack_from("<" + "Q" * ndim, mm, offset + 2)
            (n,) = struct.unpack_from("<Q", mm, offset + 2 + 8 * ndim)
            offset += 10 + 8 * ndim
            dtype = np.dtype(DTYPES[code]).newbyteorder("<")
            # A copy of its own (writable, and not overwritten by the reply).
            value = np.frombuffer(mm, dtype=dtype, count=n // dtype.itemsize, offset=offset).reshape(shape).copy()
            offset += n
        else:
            value = KEEP
        fields[name] = value
    return fields


def encode(name, value, parts, sent):
    """Appends the field's encoding to parts: one packed head, then the payload as it is (bytes,
    or a C-order array, whose buffer the memory's slice assignment copies without a view)."""
    raw = name.encode("utf-8")
    if value is KEEP or (isinstance(value, (bytes, str)) and sent.get(name) is value):
        parts.append(struct.pack(f"<H{len(raw)}sB", len(raw), raw, KEPT))
    elif isinstance(value, bytes):
        within_limit(name, len(value))
        parts.append(struct.pack(f"<H{len(raw)}sBQ", len(raw), raw, BYTES, len(value)))
        parts.append(value)
    elif isinstance(value, str):
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"field `{name}` is a str that is not valid Unicode ({e.reason}, "
                             f"character {e.start}); return bytes for binary data") from None
        within_limit(name, len(data))
        parts.append(struct.pack(f"<H{len(raw)}sBQ", len(raw), raw, STR, len(data)))
        parts.append(data)
    else:
        within_limit(name, value.nbytes)
        shape = value.shape
        parts.append(struct.pack(f"<H{len(raw)}sBBB{len(shape)}QQ", len(raw), raw, ARRAY,
                                 CODES[value.dtype.char], len(shape), *shape, value.nbytes))
        if value.nbytes:
            parts.append(value)


def within_limit(name, size):
    if size > MAX_FIELD_BYTES:
        raise ValueError(f"field `{name}` holds {size} bytes, more than the {MAX_FIELD_BYTES} "
                         "(4 GiB) a field may hold")


def text(value):
    return value.encode("utf-8", "replace")


class Link:
    def __init__(self, search_path, function, source, to, random_step, init):
        if search_path and search_path not in sys.path:
            sys.path.insert(0, search_path)
        module_name, _, attr = function.partition(":")
        target = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        if not callable(target):
            raise TypeError(f"`{function}` is a {type(target).__name__}, not a callable")
        if init:
            import json  # noqa: PLC0415 - only for steps that make their callable

            arguments = json.loads(init)
            target = target(*arguments) if isinstance(arguments, list) else target(**arguments)
            if not callable(target):
                raise TypeError(f"`{function}` called with init gave a {type(target).__name__}, "
                                "not a callable")
        self.target = target
        self.source = source
        self.to = to
        self.random = random_step == "1"
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):
            params = {}
        self.keywords = [k for k in ("sample_id", "epoch", "seed") if k in params]


def seed_everything(seed):
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed & 0xFFFFFFFF)
    torch = sys.modules.get("torch")
    generator = getattr(getattr(torch, "random", None), "default_generator", None)
    if generator is not None:
        # The CPU generator alone: `torch.manual_seed` also queues the seeding of every CUDA
        # device, recording the caller's stack each time (a quarter of a millisecond per call).
        generator.manual_seed(seed & 0x7FFFFFFFFFFFFFFF)


NO_KEYWORDS = {}


class Failed(Exception):
    def __init__(self, status, payload):
        super().__init__()
        self.status = status
        self.payload = payload


def run_chain(links, fields, seeds, sample_id, epoch, mm, insides, spent):
    """Runs every link on the sample's fields (a dict, changed in place) as prepbench runs
    one step after another: with `from`, the field alone goes in and a returned dict joins the
    other fields in its place (one value goes to `to`); without, a dict of every field goes in
    and a returned dict is the sample. Values the sample no longer holds go to `spent`, freed
    once the reply is sent (while prepbench reads it), not on the sample's path. The code
    between two calls runs with caches cold from the step's work, so it is kept short: one
    returned array takes a path of a few attribute reads."""
    clock = time.perf_counter_ns
    refs = sys.getrefcount
    last = len(links) - 1
    for index, link in enumerate(links):
        if index < 256:
            mm[0] = index
        else:
            struct.pack_into("<I", mm, 0, index)
        source = link.source
        if source:
            if source not in fields:
                raise Failed(3, [text(", ".join(fields))])
            argument = fields[source]
        else:
            argument = dict(fields)
        if link.keywords:
            extra = {"sample_id": sample_id, "epoch": epoch, "seed": seeds[index]}
            kwargs = {k: extra[k] for k in link.keywords}
        else:
            kwargs = NO_KEYWORDS
        # A random step's time includes seeding the generators it draws from (as a Rust step's
        # includes making its generator): work done for the step, not moving the sample.
        began = clock()
        if link.random:
            seed_everything(seeds[index])
        try:
            value = link.target(argument, **kwargs)
            insides.append(clock() - began)
            del argument
            whole = type(value) is dict
            if index != last and not (whole or is_array(value)):
                # Within the chain a value that is not an array crosses as it is (a PIL Image
                # or a tensor stays one, as in a Compose); it is made an array or bytes only
                # where it leaves Python (settle). Arrays cross as across a split (below), so
                # that a step changing one in place changes nothing else.
                if value is None:
                    raise TypeError("returned None; return a dict of fields or one value")
            elif whole:
                pairs = [[name, v] for name, v in value.items()]
                del value
                for pair in pairs:
                    if index != last and not is_array(pair[1]):
                        valid_name(pair[0])
                    else:
                        crossed(pair, True)
            else:
                if value is None:
                    raise TypeError("returned None; return a dict of fields or one value")
                if not fast(value):
                    pair = [None, value]
                    del value
                    crossed(pair, False)
                    value = pair[1]
                    del pair
                else:
                    # A step that returns its own input (changed in place) gives back what only
                    # the field it replaces held.
                    held = Arrays.chain_refs + (bool(source) and fields[source] is value)
                    if refs(value) > held or views_other(value):
                        value = value.copy()
        except BaseException as e:  # noqa: BLE001 - the sample fails, the worker goes on
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            if len(insides) == index:
                insides.append(clock() - began)
            raise Failed(2, [text(f"{type(e).__name__}: {e}"), text(traceback.format_exc())]) from None
        if source:
            spent.append(fields.pop(source))
        elif whole:
            spent.append(dict(fields))
            fields.clear()
        if not whole:
            to = link.to
            if to in fields:
                spent.append(fields[to])
            fields[to] = value
            del value
        else:
            for name, v in pairs:
                if name in fields:
                    spent.append(fields[name])
                fields[name] = v
            del pairs
    try:
        settle(fields)
    except Exception as e:  # noqa: BLE001 - the sample fails, the worker goes on
        raise Failed(2, [text(f"{type(e).__name__}: {e}"), text(traceback.format_exc())]) from None


def settle(fields):
    """Makes every field an earlier link of the chain left as a Python value (a PIL Image, a
    tensor, a list) what crosses out of Python: an array, bytes or str."""
    for name, value in fields.items():
        if value is KEEP or type(value) is bytes or type(value) is str or fast(value):
            continue
        pair = [name, value]
        del value
        crossed(pair, True)
        fields[name] = pair[1]


def reply(memory, slot, status, began, insides, parts):
    count = len(insides)
    head_len = 13 + 8 * count
    total = head_len
    for part in parts:
        total += len(part) if isinstance(part, bytes) else part.nbytes
    if HEADER + total > MAX_MEMORY:
        raise ValueError(f"the sample's fields hold {total} bytes together, more than the "
                         f"{MAX_MEMORY} a reply may hold")
    memory.grow(HEADER + total)
    mm = memory.map
    offset = HEADER + head_len
    for part in parts:
        n = len(part) if isinstance(part, bytes) else part.nbytes
        mm[offset:offset + n] = part
        offset += n
    # The head last: its time covers writing the fields.
    handled = time.perf_counter_ns() - began
    struct.pack_into(f"<BIQ{count}Q", mm, HEADER, status, count, handled, *insides)
    return struct.pack("<QQQ", slot, total, memory.size)


def load_links(spec):
    """The links, or (index, message, traceback) of the first that does not import."""
    links = []
    for index, args in enumerate(spec):
        try:
            links.append(Link(*args))
        except BaseException as e:  # noqa: BLE001 - every failure is reported
            return None, (index, f"{type(e).__name__}: {e}", traceback.format_exc())
    return links, None


def read_exact(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def watch_parent():
    """Ends this worker within a second of prepbench's end, however it ended (kill -9
    included): an orphan is adopted by another process, and its parent id changes."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="prepbench-parent", daemon=True).start()


def serve(fds, spec):
    # The requests and replies keep descriptors of their own (not inherited by a program a step
    # starts); stdin becomes /dev/null, so a step that reads it (input(), breakpoint(), a
    # read of sys.stdin) reads nothing instead of the requests, and stdout goes to stderr.
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # the user's prints go to stderr
    sys.stdout = sys.stderr
    watch_parent()
    links, failed = load_links(spec)
    if failed:
        index, message, trace = failed
        message, trace = text(message), text(trace)
        write_all(proto_out, struct.pack("<BII", 2, index, len(message)) + message
                  + struct.pack("<I", len(trace)) + trace)
        return
    write_all(proto_out, b"\0")
    if any(link.random for link in links):
        seed_everything(0)  # the generators' first seeding is slower than the next ones
    memories = [Memory(fd) for fd in fds]
    while True:
        try:
            slot, _, size = struct.unpack("<QQQ", read_exact(proto_in, 24))
        except EOFError:
            return
        began = time.perf_counter_ns()
        memory = memories[slot]
        memory.remap(size)
        mm = memory.map
        sample_id, epoch, count = struct.unpack_from("<QQI", mm, HEADER)
        seeds = struct.unpack_from("<" + "Q" * count, mm, HEADER + 20)
        offset = HEADER + 20 + 8 * count
        fields = read_fields(mm, offset)
        sent = dict(fields)
        insides, spent = [], []
        try:
            run_chain(links, fields, seeds, sample_id, epoch, mm, insides, spent)
            try:
                parts = [struct.pack("<I", len(fields))]
                for name, value in fields.items():
                    encode(name, value, parts, sent)
                message = reply(memory, slot, 0, began, insides, parts)
            except ValueError as e:
                # What the chain returned cannot cross: the last link's failure.
                raise Failed(2, [text(f"ValueError: {e}"), text(traceback.format_exc())]) from None
        except Failed as f:
            parts = []
            for payload in f.payload:
                parts.append(struct.pack("<I", len(payload)))
                parts.append(payload)
            message = reply(memory, slot, f.status, began,
                            insides if f.status == 2 else insides + [0], parts)
        write_all(proto_out, message)
        del fields, sent, spent, parts


#: What `check` says last on stdout when every link imported: prepbench knows then that the
#: interpreter it started ran this driver (a `--python` that only exits 0 is not Python).
CHECKED = "prepbench-driver: imports checked"


def check(spec):
    links, failed = load_links(spec)
    if failed:
        index, message, _ = failed
        print(f"{index} {message}", file=sys.stderr)
        sys.exit(3)
    print(CHECKED, flush=True)


def links_of(args):
    return [args[i:i + 6] for i in range(0, len(args), 6)]


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve([int(sys.argv[2]), int(sys.argv[3])], links_of(sys.argv[4:]))
    else:
        check(links_of(sys.argv[2:]))
