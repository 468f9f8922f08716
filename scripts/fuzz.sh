#!/usr/bin/env bash
# Builds the server's fuzz targets (tests/fuzz/fuzz_*.c) with clang and libFuzzer under
# ASan+UBSan into build/fuzz/bin/ and runs each for SECONDS (default 60), one after another.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     (`make fuzz FUZZ_SECONDS=N` runs it)
# Each target's working corpus is build/fuzz/corpus/<target>, seeded from the checked-in seeds
# (tests/fuzz/corpus/<target>/) and ../shared/data; its log is build/fuzz/logs/<target>.log.
# A crash, timeout (-timeout, FUZZ_TIMEOUT s) or out-of-memory (-rss_limit_mb, FUZZ_RSS_MB)
# input is written to build/fuzz/artifacts/<target>/ and named at the end; the exit status is
# then non-zero. Once fixed, save the input in tests/fuzz/crashes/<target>/ (replayed by
# `make fuzz-replay`, part of `make test`). Then, when no TARGET is named, runs
# scripts/fuzz-sdk.sh SECONDS if present.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
SHARED=${SHARED_DATA:-../shared/data}
OUT=build/fuzz
TIMEOUT=${FUZZ_TIMEOUT:-10}
RSS_MB=${FUZZ_RSS_MB:-2048}
MAX_SEED=${FUZZ_MAX_SEED_BYTES:-65536}

command -v "${FUZZ_CC:-clang}" >/dev/null ||
    { echo "fuzz: ${FUZZ_CC:-clang} not found (scripts/install-deps.sh installs it)" >&2
      exit 1; }
mkdir -p "$OUT/logs"  # a clean clone has no build/ yet
nice make --no-print-directory FUZZ=1 fuzz-bins >"$OUT-build.log" 2>&1 ||
    { cat "$OUT-build.log" >&2; echo "fuzz: build failed" >&2; exit 1; }

targets=("$@")
named=${#targets[@]}
if [ ${#targets[@]} -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
fi

# Copies the shared files matching the globs (at most MAX_SEED bytes each) into dir, each
# prefixed by the bytes of $prefix (printf format) when set.
seed_shared() {
    local dir=$1 prefix=$2; shift 2
    local f
    for f in "$@"; do
        [ -f "$f" ] && [ "$(stat -c %s "$f")" -le "$MAX_SEED" ] || continue
        local tag=""
        [ -n "$prefix" ] && tag=-$(printf '%s' "$prefix" | od -An -tx1 | tr -d ' ')
        local dst="$dir/shared-$(basename "$f")$tag"
        [ -e "$dst" ] && continue
        { [ -n "$prefix" ] && printf "$prefix"; cat "$f"; } >"$dst"
    done
}

seed() {
    local t=$1 dir=$OUT/corpus/$1
    mkdir -p "$dir"
    case $t in
    fuzz_pprof)
        seed_shared "$dir" "" "$SHARED"/pprof/*.pb.gz "$SHARED"/pprof/*.pprof \
            "$SHARED"/pprof/*.pgo "$SHARED"/pprof/legacy/* ;;
    fuzz_api_upload)
        # The first byte picks the parameters (tests/fuzz/fuzz_api_upload.c): 0x10 is a pprof
        # started a minute ago, 0x1b folded stacks of cpu in nanoseconds started a minute ago.
        seed_shared "$dir" '\x10' "$SHARED"/pprof/*.pb.gz "$SHARED"/pprof/*.pprof \
            "$SHARED"/pprof/*.pgo
        seed_shared "$dir" '\x1b' "$SHARED"/collapsed/*.txt ;;
    fuzz_gunzip)
        seed_shared "$dir" "" "$SHARED"/pprof/*.gz ;;
    fuzz_folded)
        # The first byte picks the parameters (tests/fuzz/fuzz_folded.c): '!' is unit=
        # nanoseconds, ' ' unit=samples, both type=cpu with period_ns=10 ms.
        seed_shared "$dir" "!" "$SHARED"/collapsed/*.txt
        seed_shared "$dir" " " "$SHARED"/collapsed/*.txt ;;
    esac
}

mkdir -p "$OUT/logs"
failed=()
for t in "${targets[@]}"; do
    bin=$OUT/bin/$t
    [ -x "$bin" ] || { echo "fuzz: no target $t" >&2; failed+=("$t"); continue; }
    seed "$t"
    art=$OUT/artifacts/$t
    mkdir -p "$art"
    ls "$art" >"$art.before"
    echo "fuzz: $t for $SECONDS_EACH s (log $OUT/logs/$t.log)"
    seeds=()
    [ -d "tests/fuzz/corpus/$t" ] && seeds+=("tests/fuzz/corpus/$t")
    nice "$bin" -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
        -print_final_stats=1 -artifact_prefix="$art/" "$OUT/corpus/$t" "${seeds[@]}" \
        >"$OUT/logs/$t.log" 2>&1
    rc=$?
    stats='number_of_executed_units|average_exec_per_sec|peak_rss_mb|new_units_added'
    grep -E "^(#[0-9]+[[:space:]]+DONE|stat::($stats))" "$OUT/logs/$t.log" | sed "s/^/  $t: /"
    new=$(ls "$art" | comm -13 "$art.before" -)
    if [ $rc -ne 0 ] || [ -n "$new" ]; then
        echo "fuzz: $t FAILED (exit $rc); see $OUT/logs/$t.log" >&2
        for a in $new; do echo "  new input: $art/$a" >&2; done
        failed+=("$t")
    fi
done

if [ "$named" -eq 0 ] && [ -x scripts/fuzz-sdk.sh ]; then
    scripts/fuzz-sdk.sh "$SECONDS_EACH" || failed+=("fuzz-sdk.sh")
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, no crash"
