#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a short time each and fails on the first crash.
#
#   scripts/fuzz-smoke.sh [seconds-per-target]     (default 20)
#
# Environment: FUZZ_TARGETS="a b" runs only those targets; FUZZ_SANITIZER (default address)
# is passed to `cargo fuzz --sanitizer`. Needs the nightly toolchain; installs cargo-fuzz when
# it is missing. New inputs go to fuzz/corpus/<target> (not committed); a crash leaves its
# input in fuzz/artifacts/<target>/ and prints how to replay it.
set -euo pipefail

secs="${1:-20}"
case "$secs" in
'' | *[!0-9]*)
    echo "usage: $0 [seconds-per-target]" >&2
    exit 2
    ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz-smoke: the nightly toolchain is required (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

sanitizer="${FUZZ_SANITIZER:-address}"
if [ -n "${FUZZ_TARGETS:-}" ]; then
    targets="$FUZZ_TARGETS"
else
    targets="$(cargo +nightly fuzz list)"
fi
if [ -z "$targets" ]; then
    echo "fuzz-smoke: no targets found" >&2
    exit 1
fi

summary=()
for target in $targets; do
    mkdir -p "corpus/$target"
    log="$(mktemp)"
    echo "fuzz-smoke: $target for ${secs}s"
    status=0
    cargo +nightly fuzz run --sanitizer "$sanitizer" "$target" "corpus/$target" -- \
        -max_total_time="$secs" -print_final_stats=1 2>&1 | tee "$log" >/dev/null || status=$?
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    if [ "$status" -ne 0 ]; then
        # Show the failure (libFuzzer's report and the replay line cargo fuzz prints).
        tail -n 60 "$log" >&2
        rm -f "$log"
        echo "fuzz-smoke: $target FAILED (exit $status)" >&2
        exit 1
    fi
    rm -f "$log"
    summary+=("$target: ${runs:-?} runs in ${secs}s, no crash")
done

printf 'fuzz-smoke: %s\n' "${summary[@]}"
