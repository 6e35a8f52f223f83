#!/usr/bin/env python3
"""Plain-text samples of the demo model's corpus, for `pagoda perplexity` and calibration.

  text_split.py heldout OUT.txt [--docs N]       # validation documents (seed + 1, never trained on)
  text_split.py calibration OUT.txt [--docs N]   # training-distribution documents (seed + 2)

Documents with chat control tokens are left out (the text is scored as plain text); stories and
Q&A documents are joined with blank lines. Deterministic for a given seed.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

SEED = 20240601  # train.py's default


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("split", choices=["heldout", "calibration"])
    ap.add_argument("out")
    ap.add_argument("--docs", type=int, default=200)
    args = ap.parse_args()
    seed = SEED + (1 if args.split == "heldout" else 2)
    docs = corpus.generate(seed, args.docs)
    texts = ["".join(d) for d in docs if all(isinstance(s, str) for s in d)]
    with open(args.out, "w") as f:
        f.write("\n\n".join(texts) + "\n")
    print(f"{args.out}: {len(texts)} documents, {sum(map(len, texts))} characters")


if __name__ == "__main__":
    main()
