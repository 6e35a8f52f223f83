#!/usr/bin/env bash
# The NEON path: cross-compiles the kernels' ISA selection and the portable (Highway) kernel table
# for AArch64, where Highway's static target is NEON, checks that the object holds NEON integer
# dot code, then builds tests/cross/portable_check.cc with the reference kernels it compares
# against and runs it under qemu-aarch64 (the portable matmuls against the reference, bit for
# bit). Used by the neon_check test; needs g++-aarch64-linux-gnu and qemu-user-static
# (scripts/install-deps.sh test).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cxx=$(command -v aarch64-linux-gnu-g++ || true)
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
if [[ -z "$cxx" || -z "$qemu" ]]; then
  echo "check-neon: needs aarch64-linux-gnu-g++ and qemu-aarch64 (scripts/install-deps.sh test)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The host's portable header-only libraries, without the host's C library headers.
mkdir "$work/include"
for lib in hwy fmt spdlog; do
  ln -s "/usr/include/$lib" "$work/include/$lib"
done
flags=(-std=c++20 -O2 -fopenmp -ffp-contract=off -Wall -Wextra -Werror -DFMT_HEADER_ONLY
       -I"$root/src" -I"$root/include" -isystem "$work/include")
compile() {
  "$cxx" "${flags[@]}" -c "$root/$1" -o "$work/$(basename "$1" .cc).o"
}
compile src/kernels/cpu/portable/portable.cc
compile src/kernels/isa.cc
compile src/kernels/cpu/kernel_table.cc
# Highway's NEON ops for the block dot: widening multiply-accumulate (smlal/smlal2) and an
# across-vector add (addv).
dis=$(aarch64-linux-gnu-objdump -d "$work/portable.o")
for insn in smlal addv; do
  if ! grep -q "[[:space:]]$insn" <<<"$dis"; then
    echo "check-neon: no $insn in the AArch64 portable kernels" >&2
    exit 1
  fi
done
# The runtime check: the portable matmuls and the reference they must equal.
for src in tests/cross/portable_check.cc src/kernels/cpu/reference/vec_dot_ref.cc \
           src/kernels/cpu/reference/act_quant_ref.cc src/kernels/cpu/act_layout.cc \
           src/tensor/dtype.cc src/base/check.cc; do
  compile "$src"
done
"$cxx" -static -o "$work/portable_check" "$work/portable_check.o" "$work/portable.o" \
  "$work/vec_dot_ref.o" "$work/act_quant_ref.o" "$work/act_layout.o" "$work/dtype.o" \
  "$work/check.o"
"$qemu" "$work/portable_check"
echo "check-neon: the portable kernels build for AArch64 (NEON) and equal the reference there"
