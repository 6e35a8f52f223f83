"""Minimal GGUF v3 writer (written from ggml's docs/gguf.md; no gguf-py).

Core idea: collect typed key/values and tensors, then write in one pass, little-endian:
  header   : magic "GGUF" (bytes 47 47 55 46), u32 version = 3, u64 tensor_count, u64 kv_count
  kv       : string key, u32 value type, value (arrays: u32 elem type, u64 count, elements)
  infos    : string name, u32 n_dims, u64 ne[n_dims] (innermost first), u32 ggml_type,
             u64 offset (relative to the data section, a multiple of the alignment)
  padding  : zeros up to a multiple of general.alignment (32 here)
  data     : each tensor's bytes, each padded to the alignment
  string   : u64 byte length + UTF-8 bytes, no terminator.
A row-major numpy array of shape (d0, ..., dk) is stored with ne = [dk, ..., d0]: e.g. a torch
Linear weight (out, in) becomes ne = [in, out], which is how llama.cpp lays out its matrices.
"""

import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3

# gguf_type (metadata value types)
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR_FMT = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
               FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}

# ggml_type (tensor types) used here
GGML_TYPE_F32 = 0
GGML_TYPE_F16 = 1
_NP_DTYPE = {GGML_TYPE_F32: np.float32, GGML_TYPE_F16: np.float16}

# llama_ftype
LLAMA_FTYPE_MOSTLY_F16 = 1


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, value):
    if vtype == STRING:
        return _string(value)
    if vtype == ARRAY:
        etype, items = value
        out = [struct.pack("<IQ", etype, len(items))]
        if etype == STRING:
            out += [_string(s) for s in items]
        elif etype == ARRAY:
            raise ValueError("nested arrays are not needed here")
        else:
            out.append(np.asarray(items, dtype=np.dtype(_SCALAR_FMT[etype])).tobytes())
        return b"".join(out)
    return struct.pack(_SCALAR_FMT[vtype], value)


class GGUFWriter:
    def __init__(self, alignment=32):
        self.alignment = alignment
        self.kv = []  # (key, type, value)
        self.tensors = []  # (name, array)
        self.add(("general.alignment"), UINT32, alignment)

    def add(self, key, vtype, value):
        if any(k == key for k, _, _ in self.kv):
            raise ValueError(f"duplicate key {key}")
        self.kv.append((key, vtype, value))

    def add_string(self, key, v):
        self.add(key, STRING, v)

    def add_u32(self, key, v):
        self.add(key, UINT32, int(v))

    def add_f32(self, key, v):
        self.add(key, FLOAT32, float(v))

    def add_bool(self, key, v):
        self.add(key, BOOL, bool(v))

    def add_array(self, key, etype, items):
        self.add(key, ARRAY, (etype, list(items)))

    def add_tensor(self, name, array, ggml_type):
        arr = np.ascontiguousarray(np.asarray(array, dtype=_NP_DTYPE[ggml_type]))
        if any(n == name for n, _, _ in self.tensors):
            raise ValueError(f"duplicate tensor {name}")
        self.tensors.append((name, arr, ggml_type))

    def _pad(self, n):
        return (-n) % self.alignment

    def write(self, path):
        head = [GGUF_MAGIC, struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv))]
        for key, vtype, value in self.kv:
            head += [_string(key), struct.pack("<I", vtype), _value(vtype, value)]
        offset = 0
        offsets = []
        for name, arr, ggml_type in self.tensors:
            ne = list(reversed(arr.shape))
            head += [_string(name), struct.pack("<I", len(ne)),
                     struct.pack(f"<{len(ne)}Q", *ne), struct.pack("<IQ", ggml_type, offset)]
            offsets.append(offset)
            offset += arr.nbytes + self._pad(arr.nbytes)
        header = b"".join(head)
        with open(path, "wb") as f:
            f.write(header)
            f.write(b"\0" * self._pad(len(header)))
            for (name, arr, _), off in zip(self.tensors, offsets):
                f.write(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
                f.write(b"\0" * self._pad(arr.nbytes))
