#!/usr/bin/env python3
"""Independent numpy oracle for GPTQ on one matrix (convert/quantize/gptq.h).

usage: gptq_oracle.py GPTQ_MATRIX_TOOL

For several cases (Q4_0 and Q4_K, in order and act-order, static and running block scales; Q5_K,
Q6_K, Q2_K and Q3_K in order, Q3_K also in act-order) it
makes W [rows, cols] and correlated calibration inputs X (with outlier channels and one dead
column), H = XᵀX, runs the tool, and re-derives GPTQ in float64 numpy following the published
algorithm (Frantar et al. 2022, Algorithm 1; the reference implementation's fasterquant: dead
columns H_jj = 1, damping 1% of mean diag, act-order permutation, U = upper Cholesky of H⁻¹,
blocks of 128 with lazy updates) on the grid decoded here from the tool's round-to-nearest bytes
with our own reading of ggml's block layouts (or, for the running scales, ggml's Q4_0 reference
scale computed here from the error-compensated weights). Checks: GPTQ keeps the grid's scale
bytes (static), its levels equal numpy's (at most 0.1% differ, float rounding near a tie), and its
layer-output error tr(ΔW H ΔWᵀ) is below round-to-nearest's. Also AWQ's clipping search
(llm-awq's auto_clip, awq.h) on a Q4_0 matrix against a numpy one with ggml's Q4_0 reference
rounding written here: the same clipped weights, and a lower output error.
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


def q5_k_levels(b):
    low = q4_k_levels(bytes(b[:16]) + bytes(b[48:176]))
    qh = np.frombuffer(b[16:48], np.uint8)
    n = np.arange(256)
    return low + 16 * ((qh[n % 32] >> (n // 32)) & 1).astype(np.int64)


def q6_k_grid(b):
    d = f16(b, 208)
    sc = np.frombuffer(b[192:208], np.int8)
    return [(np.float32(d * np.float32(s)), np.float32(-32.0) * np.float32(d * np.float32(s)))
            for s in sc]


def q6_k_levels(b):
    ql = np.frombuffer(b[0:128], np.uint8)
    qh = np.frombuffer(b[128:192], np.uint8)
    out = np.zeros(256, np.int64)
    for n in range(256):
        h, r = n // 128, n % 128
        k, l = r // 32, r % 32
        byte = ql[64 * h + l + 32 * (k & 1)]
        low = byte & 0xF if k < 2 else byte >> 4
        out[n] = int(low) | (((int(qh[32 * h + l]) >> (2 * k)) & 3) << 4)
    return out


def two_bit(qs):
    n = np.arange(256)
    return ((qs[32 * (n // 128) + n % 32] >> (2 * ((n % 128) // 32))) & 3).astype(np.int64)


def q2_k_grid(b):
    sc = np.frombuffer(b[0:16], np.uint8)
    d, dmin = f16(b, 80), f16(b, 82)
    return [(np.float32(d * np.float32(s & 0xF)), -np.float32(dmin * np.float32(s >> 4)))
            for s in sc]


def q2_k_levels(b):
    return two_bit(np.frombuffer(b[16:80], np.uint8))


def q3_k_grid(b):
    s = np.frombuffer(b[96:108], np.uint8)
    d = f16(b, 108)
    out = []
    for j in range(16):
        low = s[j] & 0xF if j < 8 else s[j - 8] >> 4
        high = (s[8 + j % 4] >> (2 * (j // 4))) & 3
        dl = np.float32(d * np.float32(int(low | (high << 4)) - 32))
        out.append((dl, np.float32(-4.0) * dl))
    return out


def q3_k_levels(b):
    hmask = np.frombuffer(b[0:32], np.uint8)
    n = np.arange(256)
    return two_bit(np.frombuffer(b[32:96], np.uint8)) + 4 * ((hmask[n % 32] >> (n // 32)) & 1)


TYPES = {
    "q4_0": (32, 18, 32, 0, 15, q4_0_grid, q4_0_levels),
    "q4_k": (256, 144, 32, 0, 15, q4_k_grid, q4_k_levels),
    "q5_k": (256, 176, 32, 0, 31, q4_k_grid, q5_k_levels),
    "q6_k": (256, 210, 16, 0, 63, q6_k_grid, q6_k_levels),
    "q2_k": (256, 84, 16, 0, 3, q2_k_grid, q2_k_levels),
    "q3_k": (256, 110, 16, 0, 7, q3_k_grid, q3_k_levels),
}

# Bytes of a block that hold its scales and mins (GPTQ must keep them).
HEADERS = {"q4_0": [(0, 2)], "q4_k": [(0, 16)], "q5_k": [(0, 16)], "q6_k": [(192, 210)],
           "q2_k": [(0, 16), (80, 84)], "q3_k": [(96, 110)]}


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
            headers += [bytes(bb[h0:h1]) for h0, h1 in HEADERS[type_name]]
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


def q4_0_rtn(x):
    """ggml quantize_row_q4_0_ref then dequantize, on rows of float32 (blocks of 32)."""
    x = x.astype(np.float32).reshape(-1, 32)
    i = np.argmax(np.abs(x), axis=1)  # first maximum
    d = x[np.arange(len(x)), i] / np.float32(-8.0)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = np.clip(np.trunc(x * inv[:, None] + np.float32(8.5)), 0, 15)
    dh = d.astype(np.float16).astype(np.float32)
    return ((q - 8).astype(np.float32) * dh[:, None]).reshape(-1)


def awq_clip(W, H, grid=20, max_shrink=0.5, group=32):
    """llm-awq auto_clip (w_bit 4, Q4_0 blocks as the groups): per row and group the clamp ratio
    1 - i/grid, i < max_shrink·grid, minimising the group's δ_g H_gg δ_gᵀ; a row keeps the clip
    only if its whole δ H δᵀ is lower."""
    rows, cols = W.shape
    out = W.copy()
    groups = cols // group
    for r in range(rows):
        w0 = W[r].astype(np.float32)
        bound = np.abs(w0.reshape(groups, group)).max(axis=1).astype(np.float32)
        best = np.full(groups, np.inf)
        best_ratio = np.ones(groups, np.float32)
        before = None
        for i in range(int(max_shrink * grid)):
            ratio = np.float32(1.0) - np.float32(i) / np.float32(grid)
            b = np.repeat(ratio * bound, group)
            d = (w0 - q4_0_rtn(np.clip(w0, -b, b))).astype(np.float64)
            if i == 0:
                before = d @ H @ d
            for g in range(groups):
                sl = slice(g * group, (g + 1) * group)
                e = d[sl] @ H[sl, sl] @ d[sl]
                if e < best[g]:
                    best[g], best_ratio[g] = e, ratio
        b = np.repeat(best_ratio * bound, group)
        xc = np.clip(w0, -b, b)
        d = (w0 - q4_0_rtn(xc)).astype(np.float64)
        if d @ H @ d < before:
            out[r] = xc
    return out


def run_clip_case(tool, tmp, rows, cols, seed):
    rng = np.random.default_rng(seed)
    W = (0.05 * rng.standard_t(3, size=(rows, cols))).astype(np.float32)
    X = rng.standard_normal((3 * cols, cols)) @ (rng.standard_normal((cols, cols)) / np.sqrt(cols)
                                                 + np.eye(cols))
    X[:, rng.choice(cols, 4, replace=False)] *= 10.0
    H = X.T @ X
    wp, hp, op = (os.path.join(tmp, f) for f in ("cw.f32", "ch.f64", "clipped.f32"))
    W.astype("<f4").tofile(wp)
    H.astype("<f8").tofile(hp)
    p = subprocess.run([tool, "clip", "q4_0", str(rows), str(cols), wp, hp, op],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        return False
    got = np.fromfile(op, "<f4").reshape(rows, cols)
    want = awq_clip(W, H)
    differ = int(np.sum(got != want))
    clipped_rows = int(np.sum(np.any(want != W, axis=1)))
    e0 = sum(out_err(W[r:r + 1], q4_0_rtn(W[r]).reshape(1, -1), H) for r in range(rows))
    e1 = sum(out_err(W[r:r + 1], q4_0_rtn(got[r]).reshape(1, -1), H) for r in range(rows))
    print(f"awq clip q4_0 {rows}x{cols}: {differ}/{W.size} weights differ from numpy; "
          f"{clipped_rows} rows clipped; output error {e0:.5g} -> {e1:.5g} ({p.stdout.strip()})")
    ok = True
    if differ > W.size // 1000:
        print("FAIL awq clip: the clipped weights differ from the numpy auto_clip")
        ok = False
    if clipped_rows == 0 or not e1 < e0:
        print("FAIL awq clip: no row clipped, or the output error did not fall")
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
    for seed, t in enumerate(("q5_k", "q6_k", "q2_k", "q3_k")):
        ok &= run_case(tool, tmp, t, 16, 512, False, False, 6 + seed)
    ok &= run_case(tool, tmp, "q3_k", 16, 512, True, False, 10)
    ok &= run_clip_case(tool, tmp, 24, 256, 11)
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
