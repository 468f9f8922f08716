#!/usr/bin/env bash
# Replays the checked-in fuzz inputs: for each replay binary in DIR (built by `make
# fuzz-replay` with gcc under ASan+UBSan from tests/fuzz/fuzz_<target>.c and
# tests/fuzz/replay.c), every file of tests/fuzz/crashes/<target>/ and
# tests/fuzz/corpus/<target>/. Fails when a target crashes, a sanitizer reports (ASan and
# UBSan abort; LeakSanitizer fails the exit status) or there is no binary.
# Usage: scripts/fuzz-replay.sh DIR
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/fuzz-replay.sh DIR}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0; n=0
for src in tests/fuzz/fuzz_*.c; do
    t=$(basename "$src" .c)
    inputs=()
    for d in "tests/fuzz/crashes/$t" "tests/fuzz/corpus/$t"; do
        [ -d "$d" ] && inputs+=("$d")
    done
    if [ ! -x "$dir/$t" ]; then
        echo "fuzz-replay: $dir/$t is missing" >&2; failed=1; continue
    fi
    [ ${#inputs[@]} -gt 0 ] || { echo "  $t: no inputs"; continue; }
    out=$("$dir/$t" "${inputs[@]}" 2>&1); rc=$?
    if [ $rc -ne 0 ]; then
        printf '%s\n' "$out" | tail -n 40 >&2
        echo "fuzz-replay: $t FAILED (exit $rc)" >&2; failed=1
    else
        echo "  $t: $(printf '%s\n' "$out" | tail -n 1)"
    fi
    n=$((n + 1))
done
echo "fuzz-replay: $n targets, $([ $failed -eq 0 ] && echo passed || echo FAILED)"
exit $failed
