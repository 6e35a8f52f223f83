#!/usr/bin/env python3
"""The quantisation quality table of the demo model (README "Judging a quantisation").

  quant_table.py BUILD_DIR WORK_DIR [--only SUBSTRING ...] [--model models/demo.gguf]

Makes the held-out text (text_split.py heldout, 200 documents) and the calibration text
(text_split.py calibration, 100 documents), the F16 base run (--save-logits), the imatrix of the
calibration text, then for every row quantises the model with `pagoda quantize` and scores it
with `pagoda perplexity --kl-divergence-base` on the held-out text (windows of 256). Prints one
Markdown row per file (PPL, ΔPPL, mean/median/p99 KLD, top-1 agreement vs F16) and writes
WORK_DIR/table-TYPES.json (--types). Accuracy figures only: deterministic for a given model and build, so they
can be made on a busy machine. --only keeps the rows whose label contains one of the substrings.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CTX = "256"


def rows(calib, imatrix, heldout):
    def cal(method, text=calib):
        return ["--calibration", text, "--method", method, "--calib-ctx", CTX]
    imx = ["--imatrix", imatrix]
    emb8 = ["--token-embedding-type", "Q8_0"]
    out = []
    for t in ("Q4_0", "Q4_K_M"):
        out += [(t, "RTN", []), (t, "imatrix", imx), (t, "GPTQ", cal("gptq")),
                (t, "AWQ", cal("awq")), (t, "AWQ --no-awq-clip", cal("awq") + ["--no-awq-clip"]),
                (t, "AWQ+GPTQ", cal("awq-gptq")),
                (t, "RTN, token_embd Q8_0", emb8), (t, "GPTQ, token_embd Q8_0", cal("gptq") + emb8),
                (t, "AWQ, token_embd Q8_0", cal("awq") + emb8),
                (t, "AWQ+GPTQ, token_embd Q8_0", cal("awq-gptq") + emb8),
                (t, "imatrix, token_embd Q8_0", imx + emb8),
                # Diagnostics: GPTQ on the imatrix grid; AWQ calibrated on the held-out text.
                (t, "GPTQ --imatrix", cal("gptq") + imx),
                (t, "AWQ --no-awq-clip calibrated on the held-out text",
                 cal("awq", heldout) + ["--no-awq-clip"])]
    out += [("Q8_0", "RTN", []), ("Q8_0", "GPTQ", cal("gptq")), ("Q8_0", "AWQ", cal("awq")),
            ("Q8_0", "AWQ+GPTQ", cal("awq-gptq"))]
    for t in ("Q6_K", "Q5_K_M", "Q3_K_M", "Q2_K"):
        out += [(t, "RTN", []), (t, "imatrix", imx), (t, "GPTQ", cal("gptq"))]
    return out


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--model", default=os.path.join(HERE, "..", "..", "models", "demo.gguf"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--types", nargs="*", default=None, help="only these file types")
    args = ap.parse_args()
    pagoda = os.path.join(args.build, "bin", "pagoda")
    os.makedirs(args.work, exist_ok=True)
    w = lambda name: os.path.join(args.work, name)  # noqa: E731
    py = sys.executable
    if not os.path.exists(w("heldout.txt")):
        run([py, os.path.join(HERE, "text_split.py"), "heldout", w("heldout.txt")])
    if not os.path.exists(w("calib.txt")):
        run([py, os.path.join(HERE, "text_split.py"), "calibration", w("calib.txt"), "--docs",
             "100"])
    if not os.path.exists(w("f16.lp")):
        run([pagoda, "perplexity", "-m", args.model, "-f", w("heldout.txt"), "--ctx", CTX,
             "--save-logits", w("f16.lp")])
    if not os.path.exists(w("imatrix.dat")):
        run([pagoda, "imatrix", "-m", args.model, "-f", w("calib.txt"), "-o", w("imatrix.dat"),
             "--ctx", CTX])
    print("| type | method | PPL | ΔPPL | mean KLD | median KLD | p99 KLD | top-1 | calib. error "
          "ratio |")
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    table = []
    base_ppl = None
    for t, label, extra in rows(w("calib.txt"), w("imatrix.dat"), w("heldout.txt")):
        name = f"{t} {label}"
        if args.only and not any(s in name for s in args.only):
            continue
        if args.types and t not in args.types:
            continue
        out = w(re.sub(r"[^A-Za-z0-9_]+", "-", name) + ".gguf")
        log = run([pagoda, "quantize", args.model, out, t] + extra)
        m = re.search(r"calibration inputs ([0-9.e+-]+) \(round-to-nearest ([0-9.e+-]+), "
                      r"ratio ([0-9.]+)", log)
        ratio = float(m.group(3)) if m else None
        r = json.loads(run([pagoda, "perplexity", "-m", out, "-f", w("heldout.txt"), "--ctx", CTX,
                            "--kl-divergence-base", w("f16.lp"), "--json"]))
        k = r["kl_divergence"]
        if base_ppl is None:
            base_ppl = k["base_ppl"]
            print(f"| F16 | (base) | {base_ppl:.4f} | | | | | | |", flush=True)
        table.append({"type": t, "method": label, "ppl": r["ppl"], "delta_ppl": k["delta_ppl"],
                      "kld_mean": k["mean"], "kld_median": k["median"], "kld_p99": k["p99"],
                      "top1": k["top1_agreement"], "calibration_error_ratio": ratio,
                      "calibration_error": float(m.group(1)) if m else None,
                      "calibration_error_start": float(m.group(2)) if m else None})
        print(f"| {t} | {label} | {r['ppl']:.4f} | {k['delta_ppl']:+.4f} | {k['mean']:.6f} | "
              f"{k['median']:.3g} | {k['p99']:.5f} | {100 * k['top1_agreement']:.2f}% | "
              f"{'' if ratio is None else f'{ratio:.3f}'} |", flush=True)
        os.remove(out)
    with open(w("table-" + "-".join(args.types or ["all"]) + ".json"), "w") as f:
        json.dump({"base_ppl": base_ppl, "rows": table}, f, indent=1)


if __name__ == "__main__":
    main()
