#!/usr/bin/env python3
"""Read prepbench shards from Python, independently of the Rust code.

A shard is a TFRecord file (u64 length, masked CRC-32C of the length, payload, masked CRC-32C of
the payload), optionally gzip/zlib-compressed as a whole; each payload is one sample in
prepbench's encoding (see workloads/src/encoding.rs). Standard library only; numpy is used for
tensors when it is installed.

    python3 scripts/prepbench_records.py STORE_DIR       # summary of a materialized strategy
    python3 scripts/prepbench_records.py SHARD [SHARD...]

Exit status 1 and a message naming the file and byte offset on any checksum or format error.
"""
import gzip
import json
import os
import struct
import sys
import zlib

# CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, built from the definition.
_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


DTYPES = {1: ("uint8", "B", 1), 2: ("uint16", "H", 2), 3: ("int16", "h", 2), 4: ("int32", "i", 4),
          5: ("float32", "f", 4), 6: ("float64", "d", 8)}


class FormatError(Exception):
    pass


def open_stream(path):
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".gz"):
        return gzip.decompress(raw)
    if path.endswith(".zz"):
        return zlib.decompress(raw)
    if path.endswith((".zst", ".lz4")):
        raise FormatError(f"{path}: zstd and lz4 shards need the prepbench binary to read")
    return raw


def records(path):
    data = open_stream(path)
    pos, index = 0, 0
    while pos < len(data):
        if pos + 12 > len(data):
            raise FormatError(f"{path}: record {index} at byte {pos}: truncated header")
        length_bytes = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if masked(length_bytes) != length_crc:
            raise FormatError(f"{path}: record {index} at byte {pos}: length checksum mismatch")
        end = pos + 12 + length
        if end + 4 > len(data):
            raise FormatError(f"{path}: record {index} at byte {pos}: truncated payload")
        payload = data[pos + 12:end]
        (payload_crc,) = struct.unpack("<I", data[end:end + 4])
        if masked(payload) != payload_crc:
            raise FormatError(f"{path}: record {index} at byte {pos}: payload checksum mismatch")
        yield payload
        pos, index = end + 4, index + 1


def pad8(n):
    return (8 - n % 8) % 8


def decode_sample(payload):
    """Returns (id, {name: (kind, dtype, shape, value)})."""
    if payload[:4] != b"PBS1":
        raise FormatError("not a prepbench sample (bad magic)")
    count, sample_id = struct.unpack("<IQ", payload[4:16])
    pos, fields = 16, {}
    for _ in range(count):
        kind, dtype, ndim, name_len = payload[pos:pos + 4]
        (data_len,) = struct.unpack("<Q", payload[pos + 8:pos + 16])
        pos += 16
        shape = list(struct.unpack(f"<{ndim}Q", payload[pos:pos + 8 * ndim]))
        pos += 8 * ndim
        name = payload[pos:pos + name_len].decode("utf-8")
        pos += name_len + pad8(name_len)
        data = payload[pos:pos + data_len]
        pos += data_len + pad8(data_len)
        if kind == 1:
            dname, code, size = DTYPES[dtype]
            try:
                import numpy
                value = numpy.frombuffer(data, dtype="<" + code).reshape(shape)
            except ImportError:
                value = struct.unpack(f"<{data_len // size}{code}", data)
            fields[name] = ("tensor", dname, shape, value)
        elif kind == 2:
            fields[name] = ("bytes", None, [len(data)], data)
        elif kind == 3:
            fields[name] = ("text", None, [len(data)], data.decode("utf-8"))
        else:
            raise FormatError(f"unknown field kind {kind}")
    if pos != len(payload):
        raise FormatError(f"{len(payload) - pos} trailing bytes")
    return sample_id, fields


def summarize(paths):
    ids, schema, count = [], {}, 0
    for path in paths:
        for payload in records(path):
            sample_id, fields = decode_sample(payload)
            ids.append(sample_id)
            count += 1
            for name, (kind, dtype, shape, _) in fields.items():
                schema.setdefault(name, {"kind": kind, "dtype": dtype, "shapes": set()})["shapes"].add(tuple(shape))
    for entry in schema.values():
        entry["shapes"] = sorted(list(s) for s in entry["shapes"])[:5]
    return {"records": count, "ids": sorted(ids), "fields": schema}


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    paths = argv
    if len(argv) == 1 and os.path.isdir(argv[0]):
        with open(os.path.join(argv[0], "store.json")) as f:
            manifest = json.load(f)
        paths = [os.path.join(argv[0], s["file"]) for s in manifest["shards"]]
    try:
        print(json.dumps(summarize(paths)))
    except (FormatError, OSError, zlib.error, EOFError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
