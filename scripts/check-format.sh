#!/usr/bin/env bash
# Fails when a C++ source differs from what .clang-format (clang-format-14) makes of it.
# `make format` fixes them. Used by the format_check test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z "$fmt" ]]; then
  echo "check-format: clang-format-14 is not installed (scripts/install-deps.sh test)" >&2
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.inc')
else
  mapfile -t files < <(find src include cli server tests bench tools -name '*.cc' -o -name '*.h' -o -name '*.inc')
fi
"$fmt" --dry-run -Werror "${files[@]}"
echo "check-format: ${#files[@]} files formatted"
