#!/usr/bin/env python3
"""Independent numpy oracle for GPTQ on one matrix (convert/quantize/gptq.h).

usage: gptq_oracle.py GPTQ_MATRIX_TOOL

For several cases (Q4_0 and Q4_K, in order and act-order, static and running block scales) it
makes W [rows, cols] and correlated calibration inputs X (with outlier channels and one dead
column), H = XᵀX, runs the tool, and re-derives GPTQ in float64 numpy following the published
algorithm (Frantar et al. 2022, Algorithm 1; the reference implementation's fasterquant: dead
columns H_jj = 1, damping 1% of mean diag, act-order permutation, U = upper Cholesky of H⁻¹,
blocks of 128 with lazy updates) on the grid decoded here from the tool's round-to-nearest bytes
with our own reading of ggml's block layouts (or, for the running scales, ggml's Q4_0 reference
scale computed here from the error-compensated weights). Checks: GPTQ keeps the grid's scale
bytes (static), its levels equal numpy's (at most 0.1% differ, float rounding near a tie), and its
layer-output error tr(ΔW H ΔWᵀ) is below round-to-nearest's.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np


def f16(b, off):
    return np.frombuffer(b[off:off + 2], "<f2")[0].astype(np.float32)


def k4_scale_min(j, s):
    if j < 4:
        return s[j] & 63, s[j + 4] & 63
    return (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)


# Per type: block elements, block bytes, group, qmin, qmax, grid(block bytes) -> [(s, o)] per
# group, levels(block bytes) -> ints.
def q4_0_grid(b):
    d = f16(b, 0)
    return [(d, np.float32(-8.0) * d)]


def q4_0_levels(b):
    qs = np.frombuffer(b[2:18], np.uint8)
    return np.concatenate([qs & 0xF, qs >> 4]).astype(np.int64)


def q4_k_grid(b):
    d, dmin = f16(b, 0), f16(b, 2)
    s = b[4:16]
    out = []
    for j in range(8):
        sc, m = k4_scale_min(j, s)
        out.append((np.float32(d * np.float32(sc)), -np.float32(dmin * np.float32(m))))
    return out


def q4_k_levels(b):
    qs = np.frombuffer(b[16:144], np.uint8)
    out = []
    for c in range(4):
        chunk = qs[32 * c:32 * c + 32]
        out += [chunk & 0xF, chunk >> 4]
    return np.concatenate(out).astype(np.int64)


TYPES = {
    "q4_0": (32, 18, 32, 0, 15, q4_0_grid, q4_0_levels),
    "q4_k": (256, 144, 32, 0, 15, q4_k_grid, q4_k_levels),
}


def decode(type_name, data, rows, cols):
    blk, nbytes, group, _, _, grid_fn, lev_fn = TYPES[type_name]
    per_row = cols // blk * nbytes
    scales = np.zeros((rows, cols // group))
    offsets = np.zeros((rows, cols // group))
    levels = np.zeros((rows, cols), np.int64)
    headers = []
    for r in range(rows):
        row = data[r * per_row:(r + 1) * per_row]
        g = []
        for b in range(cols // blk):
            bb = row[b * nbytes:(b + 1) * nbytes]
            g += grid_fn(bb)
            levels[r, b * blk:(b + 1) * blk] = lev_fn(bb)
            headers.append(bytes(bb[:2] if type_name == "q4_0" else bb[:16]))
        scales[r] = [x[0] for x in g]
        offsets[r] = [x[1] for x in g]
    return scales, offsets, levels, headers


def q4_0_ref_scale(x32):
    """ggml quantize_row_q4_0_ref's scale of one block: the value of largest |x| over -8, f16."""
    x = x32.astype(np.float32)
    i = int(np.argmax(np.abs(x)))  # first maximum, as the reference's strict '>'
    d = np.float32(x[i]) / np.float32(-8.0)
    return np.float32(np.float16(d))


def gptq(W, H, scales, offsets, type_name, act_order, running, block=128, percdamp=0.01):
    blk, _, group, qmin, qmax, _, _ = TYPES[type_name]
    rows, cols = W.shape
    W = W.astype(np.float64).copy()
    H = H.copy()
    dead = np.diag(H) == 0
    H[dead, dead] = 1
    perm = np.argsort(-np.diag(H), kind="stable") if act_order else np.arange(cols)
    W = W[:, perm]
    H = H[perm][:, perm]
    H[np.diag_indices(cols)] += percdamp * np.mean(np.diag(H))
    U = np.linalg.cholesky(np.linalg.inv(H)).T  # upper, H⁻¹ = UᵀU
    scales = scales.astype(np.float64).copy()
    offsets = offsets.astype(np.float64).copy()
    L = np.zeros((rows, cols), np.int64)
    for i1 in range(0, cols, block):
        i2 = min(i1 + block, cols)
        W1 = W[:, i1:i2].copy()
        Err1 = np.zeros_like(W1)
        for i in range(i2 - i1):
            col = perm[i1 + i]
            g = col // group
            if running and not act_order and col % blk == 0:
                assert type_name == "q4_0"
                for r in range(rows):
                    d = q4_0_ref_scale(W1[r, i:i + blk])
                    scales[r, g], offsets[r, g] = d, np.float32(-8.0) * d
            w = W1[:, i]
            s, o = scales[:, g], offsets[:, g]
            with np.errstate(divide="ignore", invalid="ignore"):
                lev = np.where(s != 0, np.rint((w - o) / np.where(s != 0, s, 1)), 0)
            lev = np.clip(lev, qmin, qmax).astype(np.int64)
            q = s * lev + o
            L[:, col] = lev
            err = (w - q) / U[i1 + i, i1 + i]
            W1[:, i:] -= np.outer(err, U[i1 + i, i1 + i:i2])
            Err1[:, i] = err
        W[:, i2:] -= Err1 @ U[i1:i2, i2:]
    return L, scales, offsets


def out_err(W, Wq, H):
    D = W.astype(np.float64) - Wq
    return float(np.einsum("ij,jk,ik->", D, H, D))


def run_case(tool, tmp, type_name, rows, cols, act_order, running, seed):
    rng = np.random.default_rng(seed)
    W = (0.05 * rng.standard_t(4, size=(rows, cols))).astype(np.float32)
    tokens = 3 * cols
    mix = rng.standard_normal((cols, cols)) / np.sqrt(cols) + np.eye(cols)
    X = rng.standard_normal((tokens, cols)) @ mix
    X[:, rng.choice(cols, 4, replace=False)] *= 20.0  # outlier channels
    X[:, 7] = 0.0  # a dead column
    X = X.astype(np.float32).astype(np.float64)
    H = X.T @ X
    wp, hp = os.path.join(tmp, "w.f32"), os.path.join(tmp, "h.f64")
    rp, gp = os.path.join(tmp, "rtn.bin"), os.path.join(tmp, "gptq.bin")
    W.astype("<f4").tofile(wp)
    H.astype("<f8").tofile(hp)
    p = subprocess.run([tool, type_name, str(rows), str(cols), str(int(act_order)),
                        str(int(running)), wp, hp, rp, gp], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        return False
    rtn, got = open(rp, "rb").read(), open(gp, "rb").read()
    rs, ro, rl, rh = decode(type_name, rtn, rows, cols)
    gs, go, gl, gh = decode(type_name, got, rows, cols)
    L, s_np, o_np = gptq(W, H, rs, ro, type_name, act_order, running)
    ok = True
    name = f"{type_name} {rows}x{cols} act_order={act_order} running={running}"
    if not running and rh != gh:
        print(f"FAIL {name}: GPTQ changed the grid's scale bytes")
        ok = False
    if running and not (np.array_equal(gs, s_np.astype(np.float32))):
        print(f"FAIL {name}: running scales differ from ggml's Q4_0 reference scales")
        ok = False
    group = TYPES[type_name][2]
    gidx = np.arange(cols) // group
    deq_rtn = rs[:, gidx] * rl + ro[:, gidx]
    deq_got = gs[:, gidx] * gl + go[:, gidx]
    differ = int(np.sum(gl != L))
    e_rtn, e_got = out_err(W, deq_rtn, H), out_err(W, deq_got, H)
    deq_np = s_np[:, gidx] * L + o_np[:, gidx]
    e_np = out_err(W, deq_np, H)
    print(f"{name}: {differ}/{L.size} levels differ from numpy; output error rtn {e_rtn:.5g} "
          f"gptq {e_got:.5g} numpy {e_np:.5g}")
    if differ > L.size // 1000:
        print(f"FAIL {name}: levels differ from the numpy GPTQ")
        ok = False
    if abs(e_got - e_np) > 1e-3 * e_np:
        print(f"FAIL {name}: output error differs from numpy's")
        ok = False
    if not e_got < e_rtn:
        print(f"FAIL {name}: GPTQ's output error is not below round-to-nearest's")
        ok = False
    return ok


def main():
    tool = sys.argv[1]
    tmp = tempfile.mkdtemp()
    ok = True
    ok &= run_case(tool, tmp, "q4_0", 24, 320, False, False, 1)
    ok &= run_case(tool, tmp, "q4_0", 24, 320, True, False, 2)
    ok &= run_case(tool, tmp, "q4_0", 24, 320, False, True, 3)
    ok &= run_case(tool, tmp, "q4_k", 16, 512, False, False, 4)
    ok &= run_case(tool, tmp, "q4_k", 16, 512, True, False, 5)
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
