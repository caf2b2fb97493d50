#!/usr/bin/env bash
# check-format.sh — fails when a tracked C file differs from what .clang-format asks for.
# Fix with: git ls-files '*.c' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h')
if clang-format --dry-run --Werror $files; then
    echo "check-format: $(echo "$files" | wc -w) files formatted"
else
    echo "check-format: run  git ls-files '*.c' '*.h' | xargs clang-format -i" >&2
    exit 1
fi
