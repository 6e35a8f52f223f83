#!/usr/bin/python3
"""Independent GGUF validator (the oracle for `pagoda quantize` / `pagoda synth` output).

Written from the GGUF format description, sharing no code with pagoda: parses the header, every
metadata value and tensor info; checks that the data section starts at an aligned offset, that
tensors are laid out the way ggml lays them out (each offset aligned, back to back in file order,
sizes from ggml's block table), that the file ends after the last tensor's padding, and that the
f16 scales of every quantized block are finite (what ggml_validate_row_data checks on load).
Prints one line per problem and exits 1 if there is any; prints a summary and exits 0 otherwise.
Usage: gguf_check.py FILE...
"""
import struct
import sys

import numpy as np

# ggml type id: (name, elements per block, bytes per block, byte offsets of f16 scales)
TYPES = {
    0: ("F32", 1, 4, ()),
    1: ("F16", 1, 2, ()),
    2: ("Q4_0", 32, 18, (0,)),
    3: ("Q4_1", 32, 20, (0, 2)),
    6: ("Q5_0", 32, 22, (0,)),
    7: ("Q5_1", 32, 24, (0, 2)),
    8: ("Q8_0", 32, 34, (0,)),
    10: ("Q2_K", 256, 84, (80, 82)),
    11: ("Q3_K", 256, 110, (108,)),
    12: ("Q4_K", 256, 144, (0, 2)),
    13: ("Q5_K", 256, 176, (0, 2)),
    14: ("Q6_K", 256, 210, (208,)),
    30: ("BF16", 1, 2, ()),
}
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
          11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise ValueError(f"string of {n} bytes at {self.pos} runs past the end")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s.decode("utf-8")

    def value(self, t, depth=0):
        if t in SCALAR:
            return self.take(SCALAR[t])
        if t == 8:
            return self.string()
        if t == 9:
            if depth > 4:
                raise ValueError("arrays nested too deep")
            et = self.take("<I")
            n = self.take("<Q")
            return [self.value(et, depth + 1) for _ in range(n)]
        raise ValueError(f"unknown value type {t} at {self.pos}")


def check(path):
    problems = []
    data = open(path, "rb").read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        return [f"{path}: bad magic"]
    r.pos = 4
    version = r.take("<I")
    if version not in (2, 3):
        problems.append(f"version {version}")
    n_tensors = r.take("<Q")
    n_kv = r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        if key in kv:
            problems.append(f"duplicate key {key}")
        kv[key] = r.value(r.take("<I"))
    align = kv.get("general.alignment", 32)
    if align <= 0 or align & (align - 1):
        problems.append(f"alignment {align}")
        align = 32
    tensors = []
    names = set()
    for _ in range(n_tensors):
        name = r.string()
        if name in names:
            problems.append(f"duplicate tensor {name}")
        names.add(name)
        n_dims = r.take("<I")
        dims = [r.take("<Q") for _ in range(n_dims)]
        type_id = r.take("<I")
        offset = r.take("<Q")
        if type_id not in TYPES:
            problems.append(f"{name}: type {type_id} unknown to this checker")
            continue
        tname, block, size, scales = TYPES[type_id]
        if not 1 <= n_dims <= 4 or min(dims) < 1 or dims[0] % block:
            problems.append(f"{name}: bad dims {dims} for {tname}")
            continue
        n = int(np.prod(dims, dtype=np.uint64))
        tensors.append((name, tname, offset, n // block * size, size, scales))
    data_start = (r.pos + align - 1) // align * align
    expected = 0
    for name, tname, offset, nbytes, size, scales in tensors:
        if offset != expected:
            problems.append(f"{name}: offset {offset}, ggml's layout puts it at {expected}")
        expected = (offset + nbytes + align - 1) // align * align
        begin = data_start + offset
        if begin + nbytes > len(data):
            problems.append(f"{name}: data runs past the end of the file")
            continue
        if scales:
            blocks = np.frombuffer(data, dtype=np.uint8, count=nbytes, offset=begin)
            blocks = blocks.reshape(-1, size)
            for s in scales:
                d = blocks[:, s:s + 2].copy().view(np.float16)
                if not np.all(np.isfinite(d)):
                    problems.append(f"{name}: non-finite {tname} scale")
    if tensors and data_start + expected != len(data):
        problems.append(f"file is {len(data)} bytes; ggml's layout ends at {data_start + expected}")
    types = sorted({t[1] for t in tensors})
    if not problems:
        print(f"{path}: ok: GGUF v{version}, {n_kv} keys, {len(tensors)} tensors, alignment "
              f"{align}, types {','.join(types)}")
    return [f"{path}: {p}" for p in problems]


def main():
    problems = []
    for path in sys.argv[1:]:
        try:
            problems += check(path)
        except (ValueError, struct.error, UnicodeDecodeError) as e:
            problems.append(f"{path}: cannot parse: {e}")
    for p in problems:
        print(p)
    return 1 if problems or len(sys.argv) < 2 else 0


if __name__ == "__main__":
    sys.exit(main())
