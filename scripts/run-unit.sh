#!/usr/bin/env bash
# Runs each unit-test binary given, from the repository root, and prints one closing line
# "unit: N passed, N failed" over all of them. Exit status is non-zero if any failed.
set -u
passed=0; failed=0; bad=()
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | awk '{print $1}'); f=$(printf '%s' "$line" | awk '{print $3}')
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        printf '%s\n' "$out"; bad+=("$t")
        if [ "${f:-0}" -gt 0 ]; then failed=$((failed + f)); else failed=$((failed + 1)); fi
    else
        echo "  $t: $line"
    fi
    passed=$((passed + ${p:-0}))
done
echo "unit: $passed passed, $failed failed"
[ ${#bad[@]} -eq 0 ]
