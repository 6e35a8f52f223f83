#!/usr/bin/env bash
# Cross-compiles the kernels' ISA selection and the portable (Highway) kernel table for AArch64,
# where Highway's static target is NEON, and checks that the object holds NEON integer dot code.
# Used by the neon_compile test; needs g++-aarch64-linux-gnu (scripts/install-deps.sh test).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cxx=$(command -v aarch64-linux-gnu-g++ || true)
if [[ -z "$cxx" ]]; then
  echo "check-neon-compile: aarch64-linux-gnu-g++ is not installed (scripts/install-deps.sh test)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The host's portable header-only libraries, without the host's C library headers.
mkdir "$work/include"
for lib in hwy fmt spdlog; do
  ln -s "/usr/include/$lib" "$work/include/$lib"
done
flags=(-std=c++20 -O2 -fopenmp -ffp-contract=off -Wall -Wextra -Werror -I"$root/src"
       -I"$root/include" -isystem "$work/include")
for src in src/kernels/cpu/portable/portable.cc src/kernels/isa.cc src/kernels/cpu/kernel_table.cc; do
  "$cxx" "${flags[@]}" -c "$root/$src" -o "$work/$(basename "$src" .cc).o"
done
# Highway's NEON ops for the block dot: widening multiply-accumulate (smlal/smlal2) and an
# across-vector add (addv).
dis=$(aarch64-linux-gnu-objdump -d "$work/portable.o")
for insn in smlal addv; do
  if ! grep -q "[[:space:]]$insn" <<<"$dis"; then
    echo "check-neon-compile: no $insn in the AArch64 portable kernels" >&2
    exit 1
  fi
done
echo "check-neon-compile: portable kernels, isa.cc and kernel_table.cc build for AArch64 (NEON)"
