#!/usr/bin/env python3
"""Independent numpy oracle for `pagoda imatrix` (usage: imatrix_oracle.py PAGODA SOURCE_DIR).

Runs the binary on the bundled demo model, then recomputes the importance matrix with the
independent numpy forward pass of tools/demo_model/check_gguf.py (token by token, its own
reader), recording the input of every weight's matmul: per column, mean over tokens of x², for
each window of --ctx tokens (first token BOS). The .dat file is parsed here from llama.cpp's
legacy layout (n_entries; name_len, name, ncall, nval, values·ncall; last_call; dataset).
"""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

TEXT = ("Once upon a time, there was a little girl named Lily. She liked to play in the park "
        "with her red ball. One day, the ball rolled into the pond. Lily was sad. A kind duck "
        "pushed the ball back to her, and Lily said thank you. ") * 2
CTX = 24
CHUNKS = 2


def read_dat(path):
    b = open(path, "rb").read()
    off = 0

    def i32():
        nonlocal off
        (v,) = struct.unpack_from("<i", b, off)
        off += 4
        return v

    out = {}
    for _ in range(i32()):
        n = i32()
        name = b[off:off + n].decode()
        off += n
        ncall = i32()
        nval = i32()
        vals = np.frombuffer(b, "<f4", nval, off).astype(np.float64)
        off += 4 * nval
        out[name] = vals / ncall
    return out


class Recorder:
    def __init__(self, name, arr, sums):
        self.name, self.arr, self.sums = name, arr, sums

    def __matmul__(self, x):
        s = self.sums.setdefault(self.name, [np.zeros(x.shape[0]), 0])
        s[0] += x.astype(np.float64) ** 2
        s[1] += 1
        return self.arr @ x


def main():
    pagoda, src = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(src, "tools", "demo_model"))
    import check_gguf
    model_path = os.path.join(src, "models", "demo.gguf")
    tmp = tempfile.mkdtemp()
    text = os.path.join(tmp, "calib.txt")
    open(text, "w").write(TEXT)
    dat = os.path.join(tmp, "imatrix.dat")
    p = subprocess.run([pagoda, "imatrix", "-m", model_path, "-f", text, "-o", dat, "--ctx",
                        str(CTX), "--chunks", str(CHUNKS)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    got = read_dat(dat)
    ids = [int(t) for t in subprocess.run([pagoda, "tokenize", "-m", model_path], input=TEXT,
                                          capture_output=True, text=True, check=True)
           .stdout.strip().strip("[]").split(",")]
    meta, tensors = check_gguf.read_gguf(model_path)
    model = check_gguf.NumpyLlama(meta, tensors)
    sums = {}
    model.w = {k: (Recorder(k, v, sums) if k.startswith("blk.") and v.ndim == 2 else v)
               for k, v in model.w.items()}
    bos = meta["tokenizer.ggml.bos_token_id"]
    for c in range(CHUNKS):
        window = ids[c * CTX:(c + 1) * CTX]
        window[0] = bos
        model.reset()
        for t in window:
            model.step(t)
    assert set(got) == set(sums), (sorted(got), sorted(sums))
    worst = 0.0
    for name, (s, n) in sums.items():
        want = s / n
        rel = np.abs(got[name] - want).max() / want.max()
        worst = max(worst, rel)
        assert rel < 2e-3, f"{name}: max relative difference {rel}"
    print(f"OK: {len(sums)} weights, worst relative difference {worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
