"""Minimal GGUF v2/v3 reader (metadata + tensor data as numpy arrays) for the HF fixture maker.

Only what the fixtures need: every metadata value type, tensor infos, and dequantisation of
F32, F16, BF16 and Q8_0 tensors. Tensor dims are reported in ggml order (dims[0] contiguous);
`tensor_array` returns a numpy array in row-major order (shape reversed).
"""
import struct

import numpy as np

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}
_NP = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32,
       6: np.float32, 7: np.bool_, 10: np.uint64, 11: np.int64, 12: np.float64}

GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
# type id -> (block size, bytes per block)
_TYPE_SIZE = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
              8: (32, 34), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
              14: (256, 210), 30: (1, 2)}


class GgufFile:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.pos = 0
        magic = self.buf[:4]
        assert magic == b"GGUF", "not a GGUF file"
        self.pos = 4
        self.version = self._u32()
        n_tensors = self._u64()
        n_kv = self._u64()
        self.kv = {}
        for _ in range(n_kv):
            key = self._str()
            t = self._u32()
            self.kv[key] = self._value(t)
        self.tensors = {}
        order = []
        for _ in range(n_tensors):
            name = self._str()
            n_dims = self._u32()
            dims = [self._u64() for _ in range(n_dims)]
            ttype = self._u32()
            off = self._u64()
            self.tensors[name] = (ttype, dims, off)
            order.append(name)
        self.tensor_order = order
        align = self.kv.get("general.alignment", 32)
        self.data_start = (self.pos + align - 1) // align * align

    def _u32(self):
        v = struct.unpack_from("<I", self.buf, self.pos)[0]
        self.pos += 4
        return v

    def _u64(self):
        v = struct.unpack_from("<Q", self.buf, self.pos)[0]
        self.pos += 8
        return v

    def _str(self):
        n = self._u64()
        s = self.buf[self.pos:self.pos + n].decode("utf-8", errors="surrogateescape")
        self.pos += n
        return s

    def _value(self, t):
        if t in _SCALARS:
            fmt = _SCALARS[t]
            v = struct.unpack_from(fmt, self.buf, self.pos)[0]
            self.pos += struct.calcsize(fmt)
            return v
        if t == 8:
            return self._str()
        if t == 9:
            et = self._u32()
            n = self._u64()
            if et in _NP:
                arr = np.frombuffer(self.buf, dtype=_NP[et], count=n, offset=self.pos)
                self.pos += arr.nbytes
                return arr.tolist()
            return [self._value(et) for _ in range(n)]
        raise ValueError(f"bad GGUF value type {t}")

    def arch(self):
        return self.kv["general.architecture"]

    def tensor_array(self, name):
        """The tensor dequantised to float32, shape in row-major order (ggml dims reversed)."""
        ttype, dims, off = self.tensors[name]
        n = int(np.prod(dims))
        start = self.data_start + off
        shape = tuple(reversed(dims))
        if ttype == GGML_F32:
            return np.frombuffer(self.buf, np.float32, n, start).reshape(shape).copy()
        if ttype == GGML_F16:
            return np.frombuffer(self.buf, np.float16, n, start).astype(np.float32).reshape(shape)
        if ttype == GGML_BF16:
            raw = np.frombuffer(self.buf, np.uint16, n, start).astype(np.uint32) << 16
            return raw.view(np.float32).reshape(shape)
        if ttype == GGML_Q8_0:
            nb = n // 32
            blocks = np.frombuffer(self.buf, np.uint8, nb * 34, start).reshape(nb, 34)
            d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
            q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
            return (q * d).reshape(shape)
        raise ValueError(f"tensor {name}: GGML type {ttype} is not supported by this reader")

    def tensor_type(self, name):
        return self.tensors[name][0]
