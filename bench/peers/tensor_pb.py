"""Reads a serialized onnx.TensorProto (.pb, the ONNX backend-test data files) into a numpy array.

A small protobuf wire-format reader, so that every peer's interpreter can check outputs against a
folder's test_data_set_*/ without the `onnx` package (the ONNX Runtime venv has only numpy and
onnxruntime). Covers the numeric data types (float, double, float16, bfloat16 as float32,
(u)int8..64, bool) stored in raw_data or in the typed repeated fields; strings, external data and
segments raise ValueError. Field numbers and data-type codes: onnx/onnx.proto (ONNX 1.12).
"""
from __future__ import annotations

import struct

# TensorProto.DataType -> numpy dtype name (BFLOAT16 is converted to float32 below).
DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
          9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}
NAMES = {8: "string", 14: "complex64", 15: "complex128"}


def _varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _fields(buf):
    """Yields (field number, wire type, value): an int for varints, bytes otherwise."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire} (field {field})")
        if pos > len(buf):
            raise ValueError(f"truncated field {field}")
        yield field, wire, value


def _varints(wire, value):
    """A repeated varint field's values from one occurrence (packed or not)."""
    if wire == 0:
        return [value]
    out, pos = [], 0
    while pos < len(value):
        v, pos = _varint(value, pos)
        out.append(v)
    return out


def parse_tensor(np, data):
    """The numpy array of a serialized TensorProto `data` (bytes). Raises ValueError."""
    dims, dtype_code, raw = [], 1, None
    floats, doubles, ints32, ints64, uints64 = [], [], [], [], []
    for field, wire, value in _fields(data):
        if field == 1:
            dims += [_signed64(v) for v in _varints(wire, value)]
        elif field == 2:
            dtype_code = value
        elif field == 4:
            floats.append(value)  # packed bytes (wire type 2) or one 4-byte value (5)
        elif field == 5:
            ints32 += [_signed64(v) for v in _varints(wire, value)]
        elif field == 7:
            ints64 += [_signed64(v) for v in _varints(wire, value)]
        elif field == 9:
            raw = value
        elif field == 10:
            doubles.append(value)  # packed bytes (2) or one 8-byte value (1)
        elif field == 11:
            uints64 += _varints(wire, value)
        elif field in (3, 6, 13):
            raise ValueError({3: "segmented tensors", 6: "string tensors",
                              13: "external data"}[field] + " are not supported")
    if dtype_code not in DTYPES:
        raise ValueError(f"data type {NAMES.get(dtype_code, dtype_code)} is not supported")
    name = DTYPES[dtype_code]
    count = 1
    for d in dims:
        count *= d
    if raw is not None:
        if name == "bfloat16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=np.dtype(name).newbyteorder("<")).astype(name)
    elif name == "float32":
        arr = np.frombuffer(b"".join(floats), dtype="<f4").astype(np.float32)
    elif name == "float64":
        arr = np.frombuffer(b"".join(doubles), dtype="<f8").astype(np.float64)
    elif name in ("float16", "bfloat16"):  # int32_data holds the 16-bit patterns
        bits = np.array(ints32, dtype=np.int64).astype(np.uint16)
        arr = bits.view(np.float16) if name == "float16" else \
            (bits.astype(np.uint32) << 16).view(np.float32)
    elif name == "int64":
        arr = np.array(ints64, dtype=np.int64)
    elif name in ("uint32", "uint64"):
        arr = np.array(uints64, dtype=np.uint64).astype(name)
    else:  # int8..int32, uint8, uint16, bool: int32_data
        arr = np.array(ints32, dtype=np.int64).astype(name)
    if arr.size != count:
        raise ValueError(f"{arr.size} values for dims {dims}")
    return arr.reshape(dims)


def read_tensor(np, path):
    """The array in the .pb file `path`; ValueError (naming the file) when it cannot be read."""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return parse_tensor(np, data)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
