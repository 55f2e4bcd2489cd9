# prepbench's Python worker: runs one user callable on samples sent by prepbench over a pipe.
#
# Started as `python -c <this> serve|check SEARCH_PATH MODULE:CALLABLE [FROM]`. Everything the
# user's code prints goes to stderr; the protocol owns the original stdout. All integers are
# little-endian. A field is: u16 name length, name (UTF-8), u8 tag (0 bytes, 1 str, 2 array);
# bytes and str: u64 length, data; array: u8 dtype code, u8 ndim, u64 per dimension, u64 byte
# count, data (C order). A request is: u64 sample id, u64 epoch, u64 seed, u32 field count,
# fields. A reply is: u8 status; status 0 (a dict of fields) or 1 (one value, field name
# empty): u64 nanoseconds inside the callable, u32 field count, fields; status 2 (the callable
# raised, or returned what cannot cross): u64 nanoseconds, u32 length, message, u32 length,
# traceback. The first reply, after the import, is status 0 with no fields and the module's
# file as the nanosecond count's neighbour: u32 length, path (empty when unknown).
import importlib
import inspect
import os
import random
import struct
import sys
import time
import traceback

DTYPES = ["uint8", "uint16", "int16", "int32", "float32", "float64"]
INT32 = (-(2 ** 31), 2 ** 31 - 1)


def read_exact(stream, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = stream.readinto(view[got:])
        if not k:
            raise EOFError
        got += k
    return buf


def unpack(stream, fmt):
    return struct.unpack(fmt, read_exact(stream, struct.calcsize(fmt)))


def read_field(stream):
    (name_len,) = unpack(stream, "<H")
    name = bytes(read_exact(stream, name_len)).decode("utf-8")
    (tag,) = unpack(stream, "<B")
    if tag == 0:
        (n,) = unpack(stream, "<Q")
        return name, bytes(read_exact(stream, n))
    if tag == 1:
        (n,) = unpack(stream, "<Q")
        return name, bytes(read_exact(stream, n)).decode("utf-8")
    import numpy as np

    code, ndim = unpack(stream, "<BB")
    shape = unpack(stream, "<" + "Q" * ndim) if ndim else ()
    (n,) = unpack(stream, "<Q")
    data = read_exact(stream, n)  # a bytearray: the array handed over is writable
    return name, np.frombuffer(data, dtype="<" + np.dtype(DTYPES[code]).str[1:]).reshape(shape)


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
    return np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"), copy=False))


def encode_field(name, value, out):
    raw = name.encode("utf-8")
    out.append(struct.pack("<H", len(raw)))
    out.append(raw)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        out.append(struct.pack("<BQ", 0, len(data)))
        out.append(data)
        return
    if isinstance(value, str):
        data = value.encode("utf-8")
        out.append(struct.pack("<BQ", 1, len(data)))
        out.append(data)
        return
    array = as_array(value, f"field `{name}`" if name else "the returned value")
    out.append(struct.pack("<BBB", 2, DTYPES.index(array.dtype.name), array.ndim))
    out.append(struct.pack("<" + "Q" * array.ndim, *array.shape))
    out.append(struct.pack("<Q", array.nbytes))
    out.append(array.data if array.nbytes else b"")


def load(search_path, function):
    if search_path:
        sys.path.insert(0, search_path)
    module_name, _, attr = function.partition(":")
    module = importlib.import_module(module_name)
    target = module
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"`{function}` is a {type(target).__name__}, not a callable")
    return module, target


def wanted_keywords(target):
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return set()
    return {k for k in ("sample_id", "epoch", "seed") if k in params}


def seed_everything(seed):
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed & 0xFFFFFFFF)
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "manual_seed"):
        torch.manual_seed(seed & 0x7FFFFFFFFFFFFFFF)


def serve(search_path, function, source):
    proto_in = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    os.dup2(2, 1)  # the user's prints go to stderr
    sys.stdout = sys.stderr
    try:
        module, target = load(search_path, function)
    except BaseException as e:  # noqa: BLE001 - every failure is reported
        message = f"{type(e).__name__}: {e}".encode("utf-8", "replace")
        trace = traceback.format_exc().encode("utf-8", "replace")
        proto_out.write(struct.pack("<BQI", 2, 0, len(message)) + message)
        proto_out.write(struct.pack("<I", len(trace)) + trace)
        proto_out.flush()
        return
    file = (getattr(module, "__file__", None) or "").encode("utf-8", "replace")
    proto_out.write(struct.pack("<BQI", 0, 0, len(file)) + file)
    proto_out.flush()
    keywords = wanted_keywords(target)
    while True:
        try:
            sample_id, epoch, seed, count = unpack(proto_in, "<QQQI")
        except EOFError:
            return
        fields = dict(read_field(proto_in) for _ in range(count))
        seed_everything(seed)
        extra = {"sample_id": sample_id, "epoch": epoch, "seed": seed}
        kwargs = {k: extra[k] for k in keywords}
        argument = fields[source] if source else fields
        began = time.perf_counter_ns()
        try:
            result = target(argument, **kwargs)
            inside = time.perf_counter_ns() - began
            out = []
            if isinstance(result, dict):
                for name, value in result.items():
                    if not isinstance(name, str) or not name:
                        raise TypeError(f"returned a dict with key {name!r}; field names are non-empty str")
                    encode_field(name, value, out)
                head = struct.pack("<BQI", 0, inside, len(result))
            elif result is None:
                raise TypeError("returned None; return a dict of fields or one value")
            else:
                encode_field("", result, out)
                head = struct.pack("<BQI", 1, inside, 1)
        except BaseException as e:  # noqa: BLE001 - the sample fails, the worker goes on
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            inside = time.perf_counter_ns() - began
            message = f"{type(e).__name__}: {e}".encode("utf-8", "replace")
            trace = traceback.format_exc().encode("utf-8", "replace")
            proto_out.write(struct.pack("<BQI", 2, inside, len(message)) + message)
            proto_out.write(struct.pack("<I", len(trace)) + trace)
            proto_out.flush()
            continue
        proto_out.write(head)
        for part in out:
            proto_out.write(part)
        proto_out.flush()


def check(search_path, function):
    try:
        module, _ = load(search_path, function)
    except BaseException as e:  # noqa: BLE001
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(3)
    print(getattr(module, "__file__", None) or "")


if __name__ == "__main__":
    mode, search, func = sys.argv[1:4]
    if mode == "serve":
        serve(search, func, sys.argv[4] if len(sys.argv) > 4 else "")
    else:
        check(search, func)
