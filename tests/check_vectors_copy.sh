#!/usr/bin/env bash
# check_vectors_copy.sh — tests/vectors must stay an exact copy of ../shared/vectors (the golden
# vectors of the reference implementation) wherever that folder exists; a user's clone has only the copy.
# usage: check_vectors_copy.sh SOURCE_DIR
set -u
src=$1
shared=$src/../shared/vectors
if [ ! -d "$shared" ]; then
    echo "skipped: $shared does not exist (a standalone clone)"
    exit 77
fi
if diff -r "$shared" "$src/tests/vectors"; then
    echo "tests/vectors equals $shared"
    exit 0
fi
echo "tests/vectors differs from $shared: copy it again (cp $shared/* tests/vectors/)"
exit 1
