#!/usr/bin/env bash
# Wine smoke test of the wine-host image (target/sys/x64-wine/vcdirect.sys, made by
# scripts/build-sys.sh): installs it as a demand-start kernel service in a fresh prefix under
# target/, starts it, looks for the driver's DbgPrint load line, stops it, looks for the unload
# line. Prints PASS or FAIL. Wine runs drivers in a user-mode process (winedevice.exe): this
# proves the image loads and its entry points work, not kernel-mode correctness.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SYS="$ROOT/target/sys/x64-wine/vcdirect.sys"
OUT="$ROOT/target/wine-smoke"
export WINEPREFIX="$OUT/prefix" WINEARCH=win64 WINEDLLOVERRIDES="mscoree,mshtml="

# await_log, cleanup, ensure_wine
. "$ROOT/scripts/wine-common.sh"
ensure_wine
[ -f "$SYS" ] || { echo "wine-smoke: FAIL (no $SYS; run scripts/build-sys.sh)"; exit 1; }
# The user-mode side: a Windows program that opens \\.\vcdirect (mingw linker).
cargo build --release --quiet --manifest-path "$ROOT/sys/wine-probe/Cargo.toml" \
    --target x86_64-pc-windows-gnu || { echo "wine-smoke: FAIL (building sys/wine-probe)"; exit 1; }
PROBE="$ROOT/sys/wine-probe/target/x86_64-pc-windows-gnu/release/vcdirect-probe.exe"

# Every Wine command: under timeout, output to a file (never a pipe: services.exe inherits it).
w() { # log-name, timeout-seconds, command...
    local log="$OUT/$1.log" secs="$2"
    shift 2
    timeout "$secs" "$@" >"$log" 2>&1
}
trap cleanup EXIT

rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)
WINEDEBUG=-all w wineboot 300 wine wineboot -i || { echo "wine-smoke: FAIL (wineboot, see $OUT/wineboot.log)"; exit 1; }
cp "$SYS" "$WINEPREFIX/drive_c/windows/system32/drivers/vcdirect.sys"
WINEDEBUG=-all w sc-create 120 wine sc create vcdirect type= kernel start= demand \
    binPath= 'C:\windows\system32\drivers\vcdirect.sys'
# services.exe reads service keys only when it starts, and DbgPrint output goes to the stderr
# of the command that starts it: restart the prefix, then start the driver with debugstr on.
# wineserver shuts the prefix down (killing winedevice.exe without Unload) a few seconds after
# the last user process exits: keep it up until `cleanup` so that `sc stop` reaches the driver.
timeout 30 wineserver -k >/dev/null 2>&1 || true
timeout 10 wineserver -p 120 >/dev/null 2>&1
WINEDEBUG=warn+debugstr w sc-start 120 wine sc start vcdirect
await_log "$OUT/sc-start.log" "vcdirect: self-test passed" 30 || true
WINEDEBUG=-all w probe 120 wine "$PROBE"
WINEDEBUG=-all w sc-stop 120 wine sc stop vcdirect
await_log "$OUT/sc-start.log" "vcdirect: unloaded" 30 || true
cleanup
elapsed=$(($(date +%s) - start))

result=PASS
check() { # description, pattern[, log name]
    local log="$OUT/${3:-sc-start}.log"
    if grep -q "$2" "$log"; then
        echo "  ok   $1"
    else
        echo "  FAIL $1 (no '$2' in $log)"
        result=FAIL
    fi
}
echo "wine-smoke: $(wine --version 2>/dev/null), ${elapsed}s"
check "DriverEntry ran and printed its load line" "vcdirect: loaded (wine-host build, crypto backend "
check "kernel-object wrappers passed their self-test" "vcdirect: self-test passed"
check "a Windows program opened \\\\.\\vcdirect; unknown IOCTL, short mount buffer, mount of an absent host driver and gates get got the ABI's answers" \
    "vcdirect-probe: PASS" probe
check "Unload ran" "vcdirect: unloaded"
grep -o "vcdirect: loaded[^\\]*" "$OUT/sc-start.log" | head -n1 | sed 's/^/       /'
echo "wine-smoke: $result"
[ "$result" = PASS ]
