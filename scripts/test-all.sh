#!/usr/bin/env bash
# Every test of the project, in stages, each with a time budget; prints each stage's duration
# and fails on the first failing stage (or one that overran its budget).
#
#   scripts/test-all.sh            all stages
#   STAGES="lint unit" scripts/test-all.sh   only those stages
#
# Stages: setup, lint, windows-check, unit (includes the loom models), sim, fuzz, sys, wine.
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# Warnings are denied by the crates' [lints] tables (debug and release, every target).
stages="${STAGES:-setup lint windows-check unit sim fuzz sys wine}"
failed=0
total_start=$(date +%s)

run_stage() { # name budget-seconds command...
    local name=$1 budget=$2
    shift 2
    case " $stages " in *" $name "*) ;; *) return 0 ;; esac
    echo "=== stage $name (budget ${budget}s)"
    local start end rc
    start=$(date +%s)
    timeout --kill-after=30 "$budget" "$@"
    rc=$?
    end=$(date +%s)
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "=== stage $name OVER BUDGET after $((end - start))s"
        failed=1
    elif [ $rc -ne 0 ]; then
        echo "=== stage $name FAILED (exit $rc) after $((end - start))s"
        failed=1
    else
        echo "=== stage $name ok in $((end - start))s"
    fi
    [ $failed -eq 0 ] || { echo "tests: FAILED at stage $name"; exit 1; }
}

windows_check() {
    for t in x86_64-pc-windows-msvc aarch64-pc-windows-msvc; do
        cargo check -q -p vcdirect --target "$t" || return 1
        cargo check -q -p vcdirect --target "$t" --release || return 1
    done
    cargo check -q -p vcctl --target x86_64-pc-windows-gnu || return 1
}
export -f windows_check

run_stage setup 900 scripts/setup.sh
run_stage lint 600 bash -c 'cargo fmt --all -- --check && cargo clippy -q --workspace --all-targets'
run_stage windows-check 600 bash -c windows_check
run_stage unit 1200 cargo test --workspace
run_stage sim 900 bash -c 'cargo build -q --release -p vcdirect-usermode --bin vcsim && target/release/vcsim --seeds 0..2000 && cargo test -q --release -p vcdirect-usermode --test harness_bites -- --test-threads 1'
run_stage fuzz 600 scripts/fuzz-smoke.sh 15
run_stage sys 1500 bash -c 'scripts/setup-sys-toolchain.sh && scripts/build-sys.sh && scripts/check-sys.sh && scripts/wine-smoke.sh'
run_stage wine 900 bash -c '[ ! -x scripts/wine-e2e.sh ] || scripts/wine-e2e.sh'

echo "tests: all stages passed in $(( $(date +%s) - total_start ))s"
