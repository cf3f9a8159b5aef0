#!/usr/bin/env bash
# Wine end-to-end test: the wine-host vcdirect.sys and the test disk driver vctestdisk.sys
# (tests-usermode/wine/testdisk) in one winedevice.exe process (same service Group), driven by
# Windows programs (vcctl.exe, tests-usermode/wine/e2e-client's vc-e2e.exe) under Wine.
#
# Builds everything it needs (WINE_E2E_BUILD=0 skips the build step), makes a VeraCrypt volume
# with the Linux vcctl, sets up one Wine prefix under target/wine-e2e, and runs the scenarios.
# Each prints PASS, FAIL or SKIP (reason); the last line is "N passed, M failed" and the exit
# code is non-zero on any failure. Only the checks in ALLOWED_SKIPS below (what Wine cannot
# show) may be skipped: any other SKIP counts as a failure, so a run with nothing mounted (no
# volume, no mount IOCTL, no vcdirect.sys) fails instead of passing with skips. Every Wine command runs under `timeout` with its output in a
# file (never a pipe: services.exe inherits it); the prefix's wineserver is stopped on exit.
#
# Wine runs drivers in a user-mode process: this proves the glue and the IRP handling end to
# end, not kernel-mode behaviour (the real IRQL, kernel timing, real storage stacks). The
# wine-host image checks a virtual IRQL and the IRP and remove-lock lifecycle itself (W9): any
# "vcdirect: W9 violation" line in its log fails the run (w9-*).
#
# Environment: WINE_E2E_BUILD=0 (use what is built), WINE_E2E_SYS (a prebuilt wine-host
# vcdirect.sys), WINE_E2E_VCCTL_EXE / WINE_E2E_VCCTL_LINUX (prebuilt vcctl binaries),
# WINE_E2E_VOLUME_PATH (fixes the volume device path; default \\.\VcVolume<id from the mount
# reply>), SYS_LINT=1 (run build-sys.sh's clippy pass too). Pieces: tests-usermode/wine/README.md.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/wine-e2e"
WINE_DIR="$ROOT/tests-usermode/wine"
export WINEPREFIX="$OUT/prefix" WINEARCH=win64 WINEDLLOVERRIDES="mscoree,mshtml=" WINEDEBUG=-all
GROUP="vcdirect-e2e"
PASSWORD="vcdirect e2e password"
VOLUME_BYTES=$((8 * 1024 * 1024))
# The device a mount creates (\\.\VcVolume<id>, id from the mount reply) and the control device.
VOLUME_PATH="${WINE_E2E_VOLUME_PATH:-\\\\.\\VcVolume1}"
CONTROL_PATH='\\.\vcdirect'
DISK_PATH='\\.\VcTestDisk0'
WIN_DIR='C:\vctest'

# The checks Wine cannot show, and why: the only SKIPs a run may have. Each is printed with
# this reason; anything else reported as SKIP fails the run.
declare -A ALLOWED_SKIPS=(
    [r1-upper-filter-completion]="needs a real upper filter driver whose completion routine submits and waits; Wine loads no filter stack (the simulator covers R1)"
    [r10-product-exclusive-open]="the wine-host build finds the host by driver name (ObReferenceObjectByName), so the product's share-mode-0 ZwCreateFile and IoGetRelatedDeviceObject never run under Wine; the r10-wine-* checks show the path counters of exclusive and shared mounts in the Wine build only"
    [r11-impersonation]="Wine's SeCreateClientSecurity/SeImpersonateClientEx are stubs: cannot be checked under Wine"
    [r14-mdl-less-irp]="user mode cannot send a read/write IRP without an MDL to a DO_DIRECT_IO device"
    [w4-other-user-refused]="Wine has one user, and its token and object security routines are stubs or missing: the wine-host build treats every caller as one administrator"
    [w4-device-descriptors]="Wine's object security routines are stubs: the wine-host build applies no descriptor"
)
passed=0 failed=0 skipped=0
result() { # PASS|FAIL|SKIP, name, detail
    case "$1" in
        PASS) passed=$((passed + 1)); echo "PASS $2${3:+ ($3)}" ;;
        FAIL) failed=$((failed + 1)); echo "FAIL $2${3:+ ($3)}" ;;
        SKIP)
            if [ -n "${ALLOWED_SKIPS[$2]:-}" ]; then
                skipped=$((skipped + 1))
                echo "SKIP $2 (${ALLOWED_SKIPS[$2]})"
            else
                failed=$((failed + 1))
                echo "FAIL $2 (skipped, and not a check Wine cannot show: ${3:-no reason given})"
            fi
            ;;
    esac
}
# The allowed SKIPs, once each, at the end of every run.
wine_cannot_show() {
    local name
    for name in $(printf '%s\n' "${!ALLOWED_SKIPS[@]}" | sort); do
        result SKIP "$name"
    done
    echo "NOTE: Wine runs drivers in a user-mode process (winedevice.exe): these results prove the glue and the IRP handling end to end, not kernel-mode behaviour."
}
log() { echo "wine-e2e: $*"; }
finish() {
    echo "wine-e2e: $skipped skipped (only what Wine cannot show); logs in ${OUT#"$ROOT"/}"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

# ---------------------------------------------------------------------------------------------
# Wine and build.
# await_log, cleanup, ensure_wine
. "$ROOT/scripts/wine-common.sh"
ensure_wine

# WINE_E2E_SYS: a prebuilt wine-host vcdirect.sys to use instead of building one.
SYS="${WINE_E2E_SYS:-$ROOT/target/sys/x64-wine/vcdirect.sys}"
TESTDISK_DIR="$WINE_DIR/testdisk/target/x86_64-pc-windows-msvc/release"
CLIENT_DIR="$WINE_DIR/e2e-client/target/x86_64-pc-windows-gnu/release"
SHIM_DIR="$WINE_DIR/bcrypt-shim/target/x86_64-pc-windows-gnu/release"
# WINE_E2E_VCCTL_EXE / WINE_E2E_VCCTL_LINUX: prebuilt vcctl binaries instead of building them.
VCCTL_EXE="${WINE_E2E_VCCTL_EXE:-$ROOT/target/x86_64-pc-windows-gnu/release/vcctl.exe}"
VCCTL_LINUX="${WINE_E2E_VCCTL_LINUX:-$ROOT/target/release/vcctl}"
# W5: prints a volume's master key (cli/examples/master_key.rs), for the memory check.
MASTER_KEY="$ROOT/target/release/examples/master_key"

mkdir -p "$OUT"
build_start=$(date +%s)
if [ "${WINE_E2E_BUILD:-1}" != 0 ]; then
    log "building (logs in ${OUT#"$ROOT"/}/build-*.log)"
    b() { # name, command...
        local name="$1"
        shift
        "$@" >"$OUT/build-$name.log" 2>&1 || { echo "FAIL build-$name (see $OUT/build-$name.log)"; echo "0 passed, 1 failed"; exit 1; }
    }
    b toolchain "$ROOT/scripts/setup-sys-toolchain.sh"
    # The wine-host image only; the lint pass and the ARM64 check belong to CI's build job.
    # A vcdirect.sys that does not build fails the run, after the test disk and the Windows
    # programs are still checked.
    if [ -n "${WINE_E2E_SYS:-}" ]; then
        log "using the prebuilt $WINE_E2E_SYS"
    elif ! env SYS_LINT="${SYS_LINT:-0}" SYS_ARM64_CHECK=0 "$ROOT/scripts/build-sys.sh" x64-wine >"$OUT/build-sys.log" 2>&1; then
        result FAIL build-sys "scripts/build-sys.sh x64-wine failed, see $OUT/build-sys.log"
        rm -f "$SYS"
    fi
    # BINDGEN_EXTRA_CLANG_ARGS, no RUSTFLAGS (in a subshell: this script's own builds keep theirs).
    bindgen_args=$(. "$ROOT/scripts/sys-env.sh" && echo "$BINDGEN_EXTRA_CLANG_ARGS")
    # Like sys/Cargo.lock, testdisk/Cargo.lock is committed with wdk-build from crates.io; the
    # [patch] of linux-cross.toml rewrites that entry during the build: put it back afterwards.
    cp "$WINE_DIR/testdisk/Cargo.lock" "$OUT/testdisk-Cargo.lock"
    testdisk_ok=0
    env -u RUSTFLAGS BINDGEN_EXTRA_CLANG_ARGS="$bindgen_args" \
        cargo build --release --manifest-path "$WINE_DIR/testdisk/Cargo.toml" \
        --target x86_64-pc-windows-msvc --config "$ROOT/sys/linux-cross.toml" \
        >"$OUT/build-testdisk.log" 2>&1 && testdisk_ok=1
    cp "$OUT/testdisk-Cargo.lock" "$WINE_DIR/testdisk/Cargo.lock"
    [ $testdisk_ok = 1 ] || { echo "FAIL build-testdisk (see $OUT/build-testdisk.log)"; echo "0 passed, 1 failed"; exit 1; }
    b client cargo build --release --manifest-path "$WINE_DIR/e2e-client/Cargo.toml" --target x86_64-pc-windows-gnu
    b shim cargo build --release --manifest-path "$WINE_DIR/bcrypt-shim/Cargo.toml" --target x86_64-pc-windows-gnu
    if [ -z "${WINE_E2E_VCCTL_EXE:-}" ]; then
        b vcctl-windows cargo build --release -p vcctl --manifest-path "$ROOT/Cargo.toml" --target x86_64-pc-windows-gnu
    fi
    if [ -z "${WINE_E2E_VCCTL_LINUX:-}" ]; then
        b vcctl-linux cargo build --release -p vcctl --manifest-path "$ROOT/Cargo.toml"
    fi
    b master-key cargo build --release -p vcctl --features wine-e2e --example master_key --manifest-path "$ROOT/Cargo.toml"
fi
build_seconds=$(($(date +%s) - build_start))
for f in "$TESTDISK_DIR/vctestdisk.dll" "$CLIENT_DIR/vc-e2e.exe" "$CLIENT_DIR/std-hello.exe" \
    "$SHIM_DIR/bcryptprimitives.dll" "$VCCTL_EXE" "$VCCTL_LINUX" "$MASTER_KEY"; do
    [ -f "$f" ] || { echo "FAIL missing $f (run without WINE_E2E_BUILD=0)"; echo "0 passed, 1 failed"; exit 1; }
done

# ---------------------------------------------------------------------------------------------
# Wine helpers: every command under timeout, output to a file.
run_start=$(date +%s)
step=0
w() { # log-name, timeout-seconds, command... ; the log is $OUT/<n>-<log-name>.log
    local secs="$2"
    step=$((step + 1))
    LAST_LOG="$OUT/$(printf %02d $step)-$1.log"
    shift 2
    timeout "$secs" "$@" >"$LAST_LOG" 2>&1
}
trap cleanup EXIT
# vc-e2e under Wine; its PASS/FAIL lines are counted as results.
client() { # log-name, args...
    local name="$1"
    shift
    w "$name" 300 wine "$WIN_DIR\\vc-e2e.exe" "$@"
    local rc=$?
    # vc-e2e always prints (a result, an error or its usage): a failure with an empty log is
    # Wine failing to start the process under load (seen once in CI), not the check. The
    # check has not run, so nothing it would change has changed: run it once more.
    if [ $rc -ne 0 ] && [ ! -s "$LAST_LOG" ]; then
        echo "wine-e2e: $name: wine exited $rc with no output; running it again"
        w "$name-again" 300 wine "$WIN_DIR\\vc-e2e.exe" "$@"
        rc=$?
    fi
    local lines
    lines=$(grep -aE '^(PASS|FAIL) ' "$LAST_LOG" | tr -d '\r')
    if [ -n "$lines" ]; then
        while IFS= read -r line; do
            result "${line%% *}" "$name: ${line#* }"
        done <<<"$lines"
    elif [ $rc -ne 0 ]; then
        result FAIL "$name" "exit $rc, see $LAST_LOG"
    fi
    return $rc
}
reg_add() { # key, value, type, data
    local key="HKLM\\System\\CurrentControlSet\\Services\\$1"
    w reg 60 wine reg add "$key" /v "$2" /t "$3" /d "$4" /f
    local rc=$?
    # `reg add` always prints a line; an empty log is Wine failing to start the process under
    # load (seen in CI: the value kept its old setting), not the write. /f makes it safe to
    # run once more.
    if [ $rc -ne 0 ] || [ ! -s "$LAST_LOG" ]; then
        echo "wine-e2e: reg add $2: wine exited $rc with no output; running it again"
        w reg-again 60 wine reg add "$key" /v "$2" /t "$3" /d "$4" /f
    fi
}
service_keys() { # service, image name
    reg_add "$1" Type REG_DWORD 1
    reg_add "$1" Start REG_DWORD 3
    reg_add "$1" ErrorControl REG_DWORD 1
    reg_add "$1" ImagePath REG_EXPAND_SZ "C:\\windows\\system32\\drivers\\$2"
    # Same Group: both drivers load into one winedevice.exe, so vcdirect can reach the test
    # disk's device object (docs/build-on-linux.md, "Two drivers talking under Wine").
    reg_add "$1" Group REG_SZ "$GROUP"
}
winedevice_pids() { # winedevice.exe processes of this prefix (other prefixes may be running)
    local p
    for p in $(pgrep -f 'winedevice.exe'); do
        { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF "WINEPREFIX=$WINEPREFIX" && echo "$p"
    done
}
winedevices() { winedevice_pids | wc -l; }
loaded_pid() { # the winedevice.exe of this prefix that has both images mapped (empty if none)
    local p
    for p in $(winedevice_pids); do
        if grep -q 'vctestdisk\.sys' "/proc/$p/maps" 2>/dev/null && grep -q 'vcdirect\.sys' "/proc/$p/maps" 2>/dev/null; then
            echo "$p"
            return
        fi
    done
}
restart_prefix() { # services.exe reads service keys only when it starts
    timeout 30 wineserver -k >/dev/null 2>&1 || true
    timeout 10 wineserver -p 600 >/dev/null 2>&1
}

# ---------------------------------------------------------------------------------------------
# The volume (Linux vcctl) and the prefix.
rm -rf "$OUT/prefix" "$OUT"/[0-9]*.log
w wineboot 300 wine wineboot -i || { result FAIL wineboot "see $LAST_LOG"; finish; }
C="$WINEPREFIX/drive_c"
mkdir -p "$C/vctest"
have_sys=0
if [ -f "$SYS" ]; then
    have_sys=1
    cp "$SYS" "$C/windows/system32/drivers/vcdirect.sys"
fi
cp "$TESTDISK_DIR/vctestdisk.dll" "$C/windows/system32/drivers/vctestdisk.sys"
cp "$CLIENT_DIR/vc-e2e.exe" "$CLIENT_DIR/std-hello.exe" "$VCCTL_EXE" "$C/vctest/"
mkdir -p "$C/vctest/noshim"
cp "$CLIENT_DIR/std-hello.exe" "$C/vctest/noshim/"
printf '%s\n' "$PASSWORD" > "$C/vctest/password.txt"

volume_ok=0
rm -f "$C/vctest/volume.img"
# The volume carries a hidden volume with a three-cipher cascade (every-cipher-wine below): the
# outer volume is AES, the hidden one Serpent-Twofish-AES, so one test disk serves both.
HIDDEN_PASSWORD="vcdirect e2e hidden cascade password"
HIDDEN_CIPHER=serpent-twofish-aes
printf '%s\n%s\n' "$PASSWORD" "$HIDDEN_PASSWORD" | "$VCCTL_LINUX" volume create "$C/vctest/volume.img" \
    --size "$VOLUME_BYTES" --prf sha512 --pim 1 --password-stdin \
    --hidden-size $((1024 * 1024)) --hidden-cipher "$HIDDEN_CIPHER" >"$OUT/volume-create.log" 2>&1
create_rc=$?
if [ "$(stat -c %s "$C/vctest/volume.img" 2>/dev/null || echo 0)" -eq "$VOLUME_BYTES" ]; then
    volume_ok=1
    result PASS volume-create "$(tr -d '\n' <"$OUT/volume-create.log")"
else
    # Every mount scenario below needs this volume: they fail with it.
    result FAIL volume-create "vcctl volume create exited $create_rc: $(head -c 300 "$OUT/volume-create.log" | tr -d '\n') (see $OUT/volume-create.log)"
    head -c "$VOLUME_BYTES" /dev/zero > "$C/vctest/volume.img"
fi

# ---------------------------------------------------------------------------------------------
# 1. Windows std programs run under Wine with the bcryptprimitives.dll shim.
w std-hello-noshim 60 wine "$WIN_DIR\\noshim\\std-hello.exe"
noshim_rc=$?
cp "$SHIM_DIR/bcryptprimitives.dll" "$C/vctest/"
w std-hello 60 wine "$WIN_DIR\\std-hello.exe"
if grep -aq "std-hello: PASS" "$LAST_LOG"; then
    result PASS bcrypt-shim "std program runs with the shim (exit $noshim_rc without it)"
else
    result FAIL bcrypt-shim "see $LAST_LOG"
fi
w vcctl-version 60 wine "$WIN_DIR\\vcctl.exe" --version
if grep -aq "^vcctl" "$LAST_LOG"; then
    result PASS vcctl-exe-runs "$(grep -a '^vcctl' "$LAST_LOG" | tr -d '\r')"
else
    result FAIL vcctl-exe-runs "see $LAST_LOG"
fi
if [ $volume_ok = 1 ]; then
    # PBKDF2-HMAC-SHA-512 and the header decryption, in the Windows binary.
    w vcctl-inspect 120 sh -c "wine '$WIN_DIR\\vcctl.exe' volume inspect '$WIN_DIR\\volume.img' --password-stdin --prf sha512 --pim 1 < '$C/vctest/password.txt'"
    if grep -aq '"prf"' "$LAST_LOG"; then
        result PASS vcctl-exe-volume-inspect "$(grep -a '"prf"' "$LAST_LOG" | tr -d '\r' | cut -c1-120)"
    else
        result FAIL vcctl-exe-volume-inspect "see $LAST_LOG"
    fi
else
    result FAIL vcctl-exe-volume-inspect "no volume (vcctl volume create failed)"
fi

# ---------------------------------------------------------------------------------------------
# 2. The test disk alone, over a scratch file: I/O, limits, latency, faults, counters, unload.
head -c $((4 * 1024 * 1024)) /dev/zero > "$C/vctest/scratch.img"
service_keys vctestdisk vctestdisk.sys
reg_add vctestdisk BackingFile REG_SZ '\??\C:\vctest\scratch.img'
reg_add vctestdisk LatencyUs REG_DWORD 1000
reg_add vctestdisk MaxTransferBytes REG_DWORD 65536
reg_add vctestdisk AlignmentMask REG_DWORD 15
service_keys vcdirect vcdirect.sys
restart_prefix
before=$(winedevices)
WINEDEBUG=warn+debugstr w sc-start-testdisk 120 wine sc start vctestdisk
DISK_START_LOG="$LAST_LOG"
if await_log "$DISK_START_LOG" "vctestdisk: loaded (4194304 bytes, latency 1000 us, max transfer 65536" 30; then
    result PASS testdisk-loads "$(grep -ao 'vctestdisk: loaded[^)]*)' "$DISK_START_LOG" | head -n1)"
else
    result FAIL testdisk-loads "see $DISK_START_LOG"
    finish
fi
M="$WIN_DIR\\scratch-model.bin"
client testdisk-info info --device "$DISK_PATH" --expect-length 4194304
grep -aq "max_transfer 65536 max_pages 17 alignment_mask 0xf" "$LAST_LOG" \
    && result PASS testdisk-adapter-property "IOCTL_STORAGE_QUERY_PROPERTY: max transfer 65536, 17 pages, mask 0xf" \
    || result FAIL testdisk-adapter-property "see $LAST_LOG"
client testdisk-fill fill --device "$DISK_PATH" --model "$M" --chunk 64K --qd 8 --seed 3
client testdisk-random random-mixed --device "$DISK_PATH" --model "$M" --ops 400 --qd 8 --max-len 64K --seed 4
client testdisk-verify verify --device "$DISK_PATH" --model "$M"
client testdisk-flush flush --device "$DISK_PATH"
client testdisk-async check-counter --name max_in_flight --min 4
client testdisk-limits-ok check-counter --name limit_violations --max 0
client testdisk-too-long expect-status --device "$DISK_PATH" --op read --offset 0 --length 128K --expect 87 --name "read longer than MaxTransferBytes refused"
client testdisk-misaligned expect-status --device "$DISK_PATH" --op write --offset 100 --length 512 --expect 87 --name "write at a non-sector offset refused"
client testdisk-past-end expect-status --device "$DISK_PATH" --op read --offset 4194304 --length 512 --expect 87 --name "read past the end refused"
client testdisk-violations check-counter --name limit_violations --min 2 --max 2
w fault-set 60 wine "$WIN_DIR\\vc-e2e.exe" disk-fault --offset 1M --length 4096 --status 0xC0000185 --ops 2
client testdisk-fault-write expect-status --device "$DISK_PATH" --op write --offset 1M --length 8192 --expect 1117 --name "write touching the faulty range fails with STATUS_IO_DEVICE_ERROR"
client testdisk-fault-read expect-status --device "$DISK_PATH" --op read --offset 1M --length 512 --expect ok --name "read of the write-faulty range succeeds"
client testdisk-fault-hits check-counter --name faults_hit --min 1 --max 1
w fault-clear 60 wine "$WIN_DIR\\vc-e2e.exe" disk-clear-faults
client testdisk-fault-cleared expect-status --device "$DISK_PATH" --op write --offset 1M --length 512 --expect ok --name "write succeeds after the faults are cleared"
w latency-set 60 wine "$WIN_DIR\\vc-e2e.exe" disk-latency --us 50000
client testdisk-latency latency --device "$DISK_PATH" --min-ms 50
w latency-reset 60 wine "$WIN_DIR\\vc-e2e.exe" disk-latency --us 1000
w sc-stop-testdisk 120 wine sc stop vctestdisk
if await_log "$DISK_START_LOG" "vctestdisk: unloaded" 30; then
    result PASS testdisk-unloads "Unload joined the worker and deleted the devices"
else
    result FAIL testdisk-unloads "no unload line in $DISK_START_LOG"
fi
# The backing file holds exactly what the client wrote, apart from the 0x5a test writes.
python3 - "$C/vctest/scratch.img" "$C/vctest/scratch-model.bin" >"$OUT/backing-compare.log" 2>&1 <<'PY'
import sys
disk, model = (open(p, "rb").read() for p in sys.argv[1:3])
diff = [i for i in range(0, len(model), 512) if disk[i:i+512] != model[i:i+512]]
allowed = set(range(1 << 20, (1 << 20) + 8192, 512))
bad = [i for i in diff if i not in allowed]
print(f"{len(diff)} sectors differ, {len(bad)} outside the test writes")
sys.exit(1 if bad or len(disk) != len(model) else 0)
PY
if [ $? -eq 0 ]; then
    result PASS testdisk-backing-file "$(cat "$OUT/backing-compare.log")"
else
    result FAIL testdisk-backing-file "$(cat "$OUT/backing-compare.log")"
fi

# ---------------------------------------------------------------------------------------------
# 3. Both drivers in one process, the test disk over the volume.
if [ $have_sys = 0 ]; then
    result FAIL vcdirect-scenarios "no vcdirect.sys ($SYS): no mount scenario ran"
    wine_cannot_show
    cleanup
    log "build ${build_seconds}s, scenarios $(($(date +%s) - run_start))s"
    finish
fi
reg_add vctestdisk BackingFile REG_SZ '\??\C:\vctest\volume.img'
reg_add vctestdisk AlignmentMask REG_DWORD 0
reg_add vctestdisk MaxTransferBytes REG_DWORD 131072
reg_add vctestdisk MaxPhysicalPages REG_DWORD 33
restart_prefix
before=$(winedevices)
WINEDEBUG=warn+debugstr w sc-start-both 120 wine sc start vctestdisk
BOTH_LOG="$LAST_LOG"
after_disk=$(winedevices)
w sc-start-vcdirect 120 wine sc start vcdirect
await_log "$BOTH_LOG" "vcdirect: loaded (wine-host build" 30
after_both=$(winedevices)
if grep -aq "vcdirect: loaded (wine-host build" "$BOTH_LOG"; then
    result PASS vcdirect-loads "$(grep -ao 'vcdirect: loaded[^\\]*' "$BOTH_LOG" | head -n1 | tr -d '\r')"
else
    result FAIL vcdirect-loads "no load line in $BOTH_LOG (see $LAST_LOG)"
fi
# One winedevice.exe of this prefix must have both images mapped.
shared_pid=$(loaded_pid)
if [ -n "$shared_pid" ] && [ "$after_both" -eq "$after_disk" ]; then
    result PASS same-winedevice-process "Group $GROUP: both images mapped in winedevice.exe pid $shared_pid; processes $before -> $after_disk -> $after_both"
else
    result FAIL same-winedevice-process "no winedevice.exe maps both images; processes $before -> $after_disk -> $after_both"
fi

# vcctl reads the volume header through this path before it asks vcdirect to mount.
client disk-over-volume info --device "$DISK_PATH" --expect-length "$VOLUME_BYTES"

mount_supported=0
w mount-probe 60 wine "$WIN_DIR\\vc-e2e.exe" mount-probe --device "$CONTROL_PATH"
probe_rc=$?
if [ $probe_rc -eq 0 ]; then
    mount_supported=1
elif [ $probe_rc -eq 3 ]; then
    result FAIL mount-probe "the mount IOCTL returns STATUS_INVALID_DEVICE_REQUEST: no mount scenario can run"
else
    result FAIL mount-probe "exit $probe_rc, see $LAST_LOG"
fi
NEEDS=""
[ $mount_supported = 1 ] || NEEDS="the mount IOCTL is unsupported"
[ $volume_ok = 1 ] || NEEDS="${NEEDS:+$NEEDS; }no volume (vcctl volume create failed)"

vcctl() { # log-name, args... (password from the file on stdin)
    local name="$1"
    shift
    w "$name" 120 sh -c "wine '$WIN_DIR\\vcctl.exe' $* < '$C/vctest/password.txt'"
    local rc=$? id
    # vcctl always prints (JSON or its one-line error): an empty log on failure is Wine not
    # starting the process (see client), so the command never reached the driver.
    if [ $rc -ne 0 ] && [ ! -s "$LAST_LOG" ]; then
        echo "wine-e2e: $name: wine exited $rc with no output; running it again"
        w "$name-again" 120 sh -c "wine '$WIN_DIR\\vcctl.exe' $* < '$C/vctest/password.txt'"
        rc=$?
    fi
    # A mount reply names the volume; later status/dismount commands use it.
    id=$(grep -ao '"volume_id": *[0-9]*' "$LAST_LOG" | head -n1 | grep -o '[0-9]*$')
    if [ -n "$id" ]; then
        VOL="$id"
        # vcdirect names the disk device of volume N \Device\VcVolume<N> (driver/src/wdm/disk/device.rs).
        [ -n "${WINE_E2E_VOLUME_PATH:-}" ] || VOLUME_PATH="\\\\.\\VcVolume$id"
    fi
    return $rc
}
VOL=0
# vcctl reads the header from the host path with a std File (seek, then read). Under Wine a
# seek on a driver-served device fails (ERROR_BAD_DEV_TYPE: no Unix fd; the std-read check shows
# it), so vcctl gets the test disk's backing file as the host path. vcdirect's Wine build
# ignores the path: it reaches the disk through \Driver\vctestdisk (same winedevice process).
HOST_FILE='C:\vctest\volume.img'
MOUNT_ARGS="mount '$HOST_FILE' --password-stdin --prf sha512 --pim 1 --wine-host-driver-name vctestdisk"
VM="$WIN_DIR\\volume-model.bin"
status_counter() { # log file, counter name: its value in `vcctl status` JSON (0 if absent)
    grep -ao "\"$2\": *[0-9]*" "$1" | head -n1 | grep -o '[0-9]*$' || echo 0
}
gates() { # read write: set the registry gates and reload them
    reg_add vcdirect VeraCryptEnableMountedVolumeFastReadIo REG_DWORD "$1"
    reg_add vcdirect VeraCryptEnableMountedVolumeFastWriteIo REG_DWORD "$2"
    vcctl gates-reload gates reload
}
# R10 in the Wine build: each gate setting mounted exclusive (the default) or --shared; the
# volume's status must report the mount mode asked for, and its path counters must show every
# read and write on the path the gates select. What this does not show: the wine-host build
# reaches the test disk by driver name, so the product's exclusive open (share mode 0, one
# handle, IoGetRelatedDeviceObject) does not run here (r10-product-exclusive-open, a SKIP).
path_check() { # name, mount extra args, read gate, write gate
    local name="$1" extra="$2" mode=exclusive shared=false
    [ "$extra" != "--shared" ] || { mode=shared; shared=true; }
    gates "$3" "$4"
    mount_volume "$name" "$extra" || return
    client "$name-fill" fill --device "$VOLUME_PATH" --model "$VM" --seed 21
    client "$name-verify" verify --device "$VOLUME_PATH" --model "$VM"
    # Reads of 16 KiB too: small enough for the dispatching thread to issue them itself.
    client "$name-verify-small" verify --device "$VOLUME_PATH" --model "$VM" --chunk 16384
    vcctl "$name-status" status "$VOL"
    local s="$LAST_LOG" dr dw lr lw di
    dr=$(status_counter "$s" direct_reads) dw=$(status_counter "$s" direct_writes)
    # Direct requests the dispatching thread issued itself (the Wine build dispatches every
    # other read at PASSIVE_LEVEL; the 16 KiB reads are small enough): some with the read gate
    # on, none with both gates off.
    di=$(status_counter "$s" dispatch_issued)
    lr=$(status_counter "$s" legacy_reads) lw=$(status_counter "$s" legacy_writes)
    local ok=1
    grep -aqE "\"shared\": *$shared" "$s" || ok=0
    { [ "$3" = 1 ] && [ "$dr" -gt 0 ] && [ "$lr" -eq 0 ]; } || { [ "$3" = 0 ] && [ "$dr" -eq 0 ] && [ "$lr" -gt 0 ]; } || ok=0
    { [ "$3" = 1 ] && [ "$di" -gt 0 ] && [ "$di" -le $((dr + dw)) ]; } || { [ "$3" = 0 ] && [ "$di" -eq 0 ]; } || ok=0
    { [ "$4" = 1 ] && [ "$dw" -gt 0 ] && [ "$lw" -eq 0 ]; } || { [ "$4" = 0 ] && [ "$dw" -eq 0 ] && [ "$lw" -gt 0 ]; } || ok=0
    local what="Wine build, $mode mount (status shared=$shared), read gate $3, write gate $4: direct reads $dr, legacy reads $lr, direct writes $dw, legacy writes $lw, issued by the dispatching thread $di"
    [ $ok = 1 ] && result PASS "$name" "$what" || result FAIL "$name" "$what (see $s)"
    vcctl "$name-dismount" dismount "$VOL"
}

# W10, W11 (Wine build): IOCTL_DISK_VERIFY is pended and served by the engine on a path's
# thread, in turn with the volume's I/O, never read on the sender's thread. One 1 MiB VERIFY
# and nothing else between two `vcctl status`: one more read on the path the gates choose
# (legacy with both gates off, direct with both on), its host reads counted by that path's
# own thread (legacy_fragments only by the legacy I/O thread; direct_segments by a direct
# worker, with none issued by the dispatching thread or detached), and no byte moved to the
# caller. The old synchronous read in the sender's thread moved none of these counters.
verify_check() { # name, read gate, write gate
    local name="$1"
    gates "$2" "$3"
    mount_volume "$name" "" || return
    vcctl "$name-before" status "$VOL"
    local b="$LAST_LOG"
    client "$name-send" expect-status --device "$VOLUME_PATH" --op verify --offset 1048576 --length 1048576 --expect ok --name "$name-1-MiB-served"
    vcctl "$name-after" status "$VOL"
    local a="$LAST_LOG"
    delta() { # counter: after - before, within the counters object
        echo $(( $(sed -n '/"counters"/,$p' "$a" | status_counter /dev/stdin "$1") - $(sed -n '/"counters"/,$p' "$b" | status_counter /dev/stdin "$1") ))
    }
    local dr lr dseg lfrag db lb di dt ok=1
    dr=$(delta direct_reads) lr=$(delta legacy_reads) dseg=$(delta direct_segments)
    lfrag=$(delta legacy_fragments) db=$(delta direct_bytes) lb=$(delta legacy_bytes)
    di=$(delta dispatch_issued) dt=$(delta detached)
    if [ "$3" = 1 ]; then
        [ "$dr" -eq 1 ] && [ "$lr" -eq 0 ] && [ "$dseg" -ge 1 ] && [ "$di" -eq 0 ] && [ "$dt" -eq 0 ] || ok=0
    else
        [ "$lr" -eq 1 ] && [ "$dr" -eq 0 ] && [ "$lfrag" -ge 1 ] || ok=0
    fi
    [ "$db" -eq 0 ] && [ "$lb" -eq 0 ] || ok=0
    local what="gates $2 $3: direct reads +$dr (segments +$dseg, dispatch-issued +$di, detached +$dt), legacy reads +$lr (fragments +$lfrag), bytes to the caller +$((db + lb))"
    [ $ok = 1 ] && result PASS "$name" "$what" || result FAIL "$name" "$what (see $b, $a)"
    vcctl "$name-dismount" dismount "$VOL"
}

if [ $mount_supported = 1 ]; then
    # Needs only the mount IOCTL: malformed requests get a clear error, the driver still serves.
    client abi-malformed-mount malformed-mount --device "$CONTROL_PATH"
else
    result FAIL abi-malformed-mount-buffers "not run: the mount IOCTL is unsupported"
fi
# VeraCrypt's own data (Wine build): the test disk restarted over a copy of a volume VeraCrypt
# 1.26.20 wrote with the Kuznyechik-Serpent-Camellia cascade (cli/tests/data/veracrypt-written,
# its manifest gives the password and the FAT serial). On both paths the mounted volume's first
# sector is the boot sector VeraCrypt formatted; the direct path fills the volume and the
# legacy queue reads it back. Last: the prefix is restarted for it.
VC_WRITTEN=kuznyechik-serpent-camellia.hc
veracrypt_written_wine() {
    local row pw serial ok=1 m="$WIN_DIR\\vc-written-model.bin"
    row=$(awk -F'\t' -v f="$VC_WRITTEN" '$1 == f && $2 == "normal"' "$ROOT/cli/tests/data/veracrypt-written/volumes.tsv")
    pw=$(cut -f3 <<<"$row") serial=$(cut -f8 <<<"$row")
    if [ -z "$pw" ] || [ -z "$serial" ]; then
        result FAIL veracrypt-written-wine "no manifest row for $VC_WRITTEN"
        return
    fi
    cp "$ROOT/cli/tests/data/veracrypt-written/$VC_WRITTEN" "$C/vctest/vc-written.img"
    w vcw-stop-vcdirect 60 wine sc stop vcdirect
    w vcw-stop-disk 60 wine sc stop vctestdisk
    reg_add vctestdisk BackingFile REG_SZ '\??\C:\vctest\vc-written.img'
    restart_prefix
    WINEDEBUG=warn+debugstr w vcw-start-disk 60 wine sc start vctestdisk
    vcw_log="$LAST_LOG"
    w vcw-start-vcdirect 60 wine sc start vcdirect
    await_log "$vcw_log" "vcdirect: loaded (wine-host build" 30 || true
    printf '%s\n' "$pw" > "$C/vctest/password.txt"
    local args="mount 'C:\\vctest\\vc-written.img' --password-stdin --prf sha512 --wine-host-driver-name vctestdisk"
    gates 0 0
    if vcctl vcw-legacy-mount "$args" && grep -aq '"volume_id"' "$LAST_LOG"; then
        client vcw-legacy-boot-sector fat-boot-sector --device "$VOLUME_PATH" --serial "$serial" --name veracrypt-boot-sector-legacy
        vcctl vcw-legacy-dismount dismount "$VOL"
    else
        ok=0
    fi
    gates 1 1
    if [ $ok = 1 ] && vcctl vcw-direct-mount "$args" && grep -aq '"volume_id"' "$LAST_LOG"; then
        client vcw-direct-boot-sector fat-boot-sector --device "$VOLUME_PATH" --serial "$serial" --name veracrypt-boot-sector-direct
        client vcw-direct-fill fill --device "$VOLUME_PATH" --model "$m" --seed 71 --chunk 4K
        vcctl vcw-direct-status status "$VOL"
        [ "$(status_counter "$LAST_LOG" direct_writes)" -gt 0 ] || ok=0
        [ "$(status_counter "$LAST_LOG" direct_reads)" -gt 0 ] || ok=0
        vcctl vcw-direct-dismount dismount "$VOL"
    else
        ok=0
    fi
    gates 0 0
    if [ $ok = 1 ] && vcctl vcw-legacy-again-mount "$args" && grep -aq '"volume_id"' "$LAST_LOG"; then
        client vcw-legacy-reads-direct verify --device "$VOLUME_PATH" --model "$m" --chunk 4K
        vcctl vcw-legacy-again-dismount dismount "$VOL"
    else
        ok=0
    fi
    printf '%s\n' "$PASSWORD" > "$C/vctest/password.txt"
    if [ $ok = 1 ]; then
        result PASS veracrypt-written-wine "$VC_WRITTEN (VeraCrypt 1.26.20): mounted on both paths, VeraCrypt's boot sector read on each, direct writes read back by the legacy queue"
    else
        result FAIL veracrypt-written-wine "a mount failed or the direct path served no read or write (see the vcw-* logs in $OUT)"
    fi
}

# Every cipher (Wine build): the hidden volume inside volume.img uses a three-cipher cascade.
# It is filled (on the legacy queue: a hidden volume takes no direct writes, as in VeraCrypt's
# fast path) and read back by the direct path, then by the legacy queue: both paths decrypt
# the same bytes with the cascade's XTS, key area and unit numbers.
every_cipher_wine() {
    local hm="$WIN_DIR\\hidden-model.bin" ok=1 what=""
    printf '%s\n' "$HIDDEN_PASSWORD" > "$C/vctest/password.txt"
    gates 1 1
    if mount_volume every-cipher-wine-direct "--hidden"; then
        client every-cipher-wine-fill fill --device "$VOLUME_PATH" --model "$hm" --seed 61
        client every-cipher-wine-direct-reads verify --device "$VOLUME_PATH" --model "$hm"
        vcctl every-cipher-wine-direct-status status "$VOL"
        [ "$(status_counter "$LAST_LOG" direct_reads)" -gt 0 ] || { ok=0; what="$what; no direct read"; }
        vcctl every-cipher-wine-direct-dismount dismount "$VOL"
    else
        ok=0
    fi
    gates 0 0
    if [ $ok = 1 ] && mount_volume every-cipher-wine-legacy "--hidden"; then
        client every-cipher-wine-legacy-reads verify --device "$VOLUME_PATH" --model "$hm"
        vcctl every-cipher-wine-legacy-status status "$VOL"
        [ "$(status_counter "$LAST_LOG" legacy_reads)" -gt 0 ] || { ok=0; what="$what; no legacy read"; }
        vcctl every-cipher-wine-legacy-dismount dismount "$VOL"
    else
        ok=0
    fi
    printf '%s\n' "$PASSWORD" > "$C/vctest/password.txt"
    if [ $ok = 1 ]; then
        result PASS every-cipher-wine "hidden $HIDDEN_CIPHER volume: filled, read back by the direct path and by the legacy queue (the client's verify checks above)"
    else
        result FAIL every-cipher-wine "${what#; } (see the every-cipher-wine-* logs in $OUT)"
    fi
}
mount_volume() { # scenario name, extra vcctl mount args: mounts, or prints FAIL for the scenario
    vcctl "$1-mount" "$MOUNT_ARGS $2" && grep -aq '"volume_id"' "$LAST_LOG" && return 0
    result FAIL "$1" "mount failed: $(head -c 200 "$LAST_LOG" | tr -d '\r\n') ($LAST_LOG)"
    return 1
}
# W6 (Wine build): kernel-side allocation-failure injection. The registry value
# VcdirectWineFailAllocationAt = n (read as each mount starts) makes the n-th fallible
# allocation of that mount fail; the driver prints how many a mount asked. Every n in turn:
# the mount fails cleanly with STATUS_INSUFFICIENT_RESOURCES (vcctl's one-line error: Win32
# 1450), the driver process is the same, and with the value back at 0 the next mount serves
# the model's bytes.
w6_wine_allocation_failure() {
    gates 1 1
    reg_add vcdirect VcdirectWineFailAllocationAt REG_DWORD 0
    mount_volume w6-wine-count "" || return
    vcctl w6-wine-count-dismount dismount "$VOL"
    local total pid_before n failed_ok=0 bad=""
    total=$(grep -aoE "W6 mount asked [0-9]+ fallible" "$BOTH_LOG" | tail -n1 | sed -E 's/.*asked ([0-9]+) .*/\1/')
    if [ -z "$total" ] || [ "$total" -lt 20 ]; then
        result FAIL w6-wine-allocation-count "no count or too few (${total:-none}) in $BOTH_LOG"
        return
    fi
    result PASS w6-wine-allocation-count "a mount asks $total fallible allocations (glue and engine)"
    pid_before=$(loaded_pid)
    for n in $(seq 1 "$total"); do
        reg_add vcdirect VcdirectWineFailAllocationAt REG_DWORD "$n"
        vcctl "w6-wine-fail-$n" "$MOUNT_ARGS"
        local rc=$? log="$LAST_LOG"
        if [ $rc -ne 0 ] && grep -aq "os error 1450" "$log" && ! grep -aq '"volume_id"' "$log" \
            && grep -aq "W6 mount asked [0-9]* fallible allocations, failed at $n\b" "$BOTH_LOG"; then
            failed_ok=$((failed_ok + 1))
        else
            bad="$bad $n"
            # A mount that went through must not stay.
            grep -aq '"volume_id"' "$log" && vcctl "w6-wine-fail-$n-dismount" dismount "$VOL"
        fi
    done
    reg_add vcdirect VcdirectWineFailAllocationAt REG_DWORD 0
    if [ -z "$bad" ] && [ "$failed_ok" -eq "$total" ]; then
        result PASS w6-wine-each-allocation-fails-the-mount "each of the $total fallible allocations failed in turn: STATUS_INSUFFICIENT_RESOURCES, $(grep -a 'os error 1450' "$OUT"/*w6-wine-fail-1.log | head -n1 | tr -d '\r' | cut -c1-100)"
    else
        result FAIL w6-wine-each-allocation-fails-the-mount "$failed_ok of $total failed cleanly; not:$bad (see the w6-wine-fail-N logs and $BOTH_LOG)"
    fi
    if [ -n "$pid_before" ] && [ "$(loaded_pid)" = "$pid_before" ]; then
        result PASS w6-wine-no-crash "the driver's winedevice.exe ($pid_before) ran through every failed mount"
    else
        result FAIL w6-wine-no-crash "winedevice.exe was $pid_before, now $(loaded_pid)"
    fi
    if mount_volume w6-wine-next-mount ""; then
        client w6-wine-next-mount-verify verify --device "$VOLUME_PATH" --model "$VM"
        vcctl w6-wine-next-mount-dismount dismount "$VOL"
    fi
}

# W6 (Wine build): the hand-off of try_arc's reserved block. VcdirectWineHandOffArcAt = k makes
# the pool have nothing for the Arc::new of the mount's k-th try_arc, so the global allocator
# hands it the block try_arc reserved. Every k in turn: the mount succeeds with exactly one
# block handed over (the mount's own W6 line, the last one), reads serve the model's bytes (first k only: the rest just mount), the
# dismount frees the block, and the driver process is the same throughout.
w6_wine_reservation_handoff() {
    gates 1 1
    reg_add vcdirect VcdirectWineFailAllocationAt REG_DWORD 0
    local arcs pid_before k ok=0 bad=""
    arcs=$(grep -aoE "[0-9]+ try_arc, [0-9]+ reserved" "$BOTH_LOG" | tail -n1 | sed -E 's/^([0-9]+) .*/\1/')
    if [ -z "$arcs" ] || [ "$arcs" -lt 2 ]; then
        result FAIL w6-wine-reservation-handoff "no try_arc count or too few (${arcs:-none}) in $BOTH_LOG"
        return
    fi
    pid_before=$(loaded_pid)
    for k in $(seq 1 "$arcs"); do
        reg_add vcdirect VcdirectWineHandOffArcAt REG_DWORD "$k"
        if vcctl "w6-wine-handoff-$k" "$MOUNT_ARGS" && grep -aq '"volume_id"' "$LAST_LOG" \
            && grep -a "W6 mount asked" "$BOTH_LOG" | tail -n1 | grep -aq "; $arcs try_arc, 1 reserved blocks handed"; then
            if [ "$k" = 1 ]; then
                client w6-wine-handoff-verify verify --device "$VOLUME_PATH" --model "$VM"
            fi
            vcctl "w6-wine-handoff-$k-dismount" dismount "$VOL" && ok=$((ok + 1)) || bad="$bad $k"
        else
            bad="$bad $k"
            grep -aq '"volume_id"' "$LAST_LOG" && vcctl "w6-wine-handoff-$k-dismount" dismount "$VOL"
        fi
    done
    reg_add vcdirect VcdirectWineHandOffArcAt REG_DWORD 0
    if [ -z "$bad" ] && [ -n "$pid_before" ] && [ "$(loaded_pid)" = "$pid_before" ]; then
        result PASS w6-wine-reservation-handoff "each of the $arcs try_arc of a mount got its reserved block from the global allocator: mounted, dismounted (block freed), winedevice.exe $pid_before throughout"
    else
        result FAIL w6-wine-reservation-handoff "$ok of $arcs mounted and dismounted; not:$bad; winedevice.exe $pid_before, now $(loaded_pid) (see the w6-wine-handoff-N logs and $BOTH_LOG)"
    fi
}

# W11 (Wine build): a write-protected host (the test disk answers IOCTL_DISK_IS_WRITABLE with
# STATUS_MEDIA_WRITE_PROTECTED) mounted read-write is mounted read-only, as VeraCrypt does:
# the status says read_only, a write to the volume fails with ERROR_WRITE_PROTECT (19) and
# none reaches the disk, reads serve the model's bytes.
w11_wine_write_protected_host() {
    gates 1 1
    client w11-wine-write-protect-on disk-write-protect --on 1
    if mount_volume w11-wine-write-protected ""; then
        vcctl w11-wine-write-protected-status status "$VOL"
        if grep -aqE '"read_only": *true' "$LAST_LOG"; then
            result PASS w11-wine-write-protected-host-mounts-read-only "asked read-write; status: read_only true"
        else
            result FAIL w11-wine-write-protected-host-mounts-read-only "see $LAST_LOG"
        fi
        w "w11-wine-write-protected-disk-reset" 60 wine "$WIN_DIR\\vc-e2e.exe" disk-reset
        client w11-wine-write-protected-write expect-status --device "$VOLUME_PATH" --op write --offset 0 --length 4096 --expect 19 --name "a write to the volume of a write-protected host fails with ERROR_WRITE_PROTECT"
        client w11-wine-write-protected-no-write check-counter --name writes --max 0
        client w11-wine-write-protected-verify verify --device "$VOLUME_PATH" --model "$VM"
        vcctl w11-wine-write-protected-dismount dismount "$VOL"
    fi
    client w11-wine-write-protect-off disk-write-protect --on 0
}
# W11 (Wine build): a host no volume can live on. The test disk reports a named pipe's device
# type (FILE_DEVICE_NAMED_PIPE, 0x11): the mount is refused before anything is asked of the
# host (STATUS_OBJECT_TYPE_MISMATCH; vcctl's one line, "the host is not a disk ..."), nothing is
# mounted, and with the disk's own type back the next mount serves the model's bytes and
# dismounts (no thread left blocked on the refused host).
host_type_wine_refused() {
    gates 1 1
    client host-type-wine-pipe disk-device-type --type 17
    vcctl host-type-wine-pipe-mount "$MOUNT_ARGS"
    local rc=$? log="$LAST_LOG"
    client host-type-wine-disk disk-device-type --type 7
    if [ $rc -ne 0 ] && grep -aq "the host is not a disk" "$log" && [ "$(grep -ac . "$log")" -eq 1 ] \
        && ! grep -aq '"volume_id"' "$log"; then
        result PASS host-type-wine-pipe-refused "a test disk reporting a named pipe's type: $(tr -d '\r\n' < "$log" | head -c 120)"
    else
        result FAIL host-type-wine-pipe-refused "rc $rc; see $log"
    fi
    if mount_volume host-type-wine-after ""; then
        client host-type-wine-after-verify verify --device "$VOLUME_PATH" --model "$VM"
        vcctl host-type-wine-after-dismount dismount "$VOL"
    fi
}
# W5 (Wine build): the volume's key bytes in the memory of the driver's process. The checker
# (scripts/w5-wine-key-bytes.py, as root) reads every readable mapping of the winedevice.exe
# that hosts vcdirect.sys and finds each of the 30 AES-256 round keys of the master key's
# halves (round keys 0 and 1 are the halves themselves), the 13 InvMixColumns round keys of the
# data key's decryption schedule and every 8-byte window of the master key, computed from the
# key vcctl's master_key example reads from the volume (handed to the checker on stdin). Right
# after the mount, before any I/O (the mount's own frames are still on the dispatch thread's
# stack), and again after I/O on both paths: every hit in the cipher's one block (the driver
# logs where it is at each mount) or in memory Wine or Linux own (a validated Linux signal
# frame on a thread's signal stack, a Wine 8 TEB block), listed; none on a Windows thread stack,
# in an image, in any other heap or pool block. After erase-keys and after the dismount: none
# the driver owns; these two pass only if the mounted scan with the same key found all 30 round
# keys in the block (else a wrong key would pass them). Memory that cannot be read fails the
# check. Not read: the wineserver process (it keeps a copy of each IOCTL's input) and vcctl.
W5_KEY=""
# How the checker names a hit on a thread's stack (what the fault switch must produce).
W5_FAIL_STACK="stack: "
w5_key() { # prints the master key of volume.img (hex), or nothing
    "$MASTER_KEY" "$C/vctest/volume.img" sha512 1 <"$C/vctest/password.txt" 2>"$OUT/w5-master-key.log"
}
w5_scan() { # check name, phase [block address, length]: 0 if the checker passed; its line in W5_LINE
    local name="$1" pid rc
    shift
    pid=$(loaded_pid)
    if [ -z "$pid" ] || [ ${#W5_KEY} -ne 128 ]; then
        W5_LINE="no winedevice.exe maps vcdirect.sys (${pid:-none}) or no master key (see $OUT/w5-master-key.log)"
        return 1
    fi
    python3 "$ROOT/scripts/w5-wine-key-bytes.py" "$pid" "$@" <<<"$W5_KEY" >"$OUT/$name.log" 2>&1
    rc=$?
    W5_LINE="$(grep -aE '^(PASS|FAIL) ' "$OUT/$name.log" | tail -n1 | cut -d' ' -f2-)"
    [ -n "$W5_LINE" ] || W5_LINE="the checker exited $rc without a result ($OUT/$name.log)"
    return $rc
}
w5_all_in_block() { # true if W5_LINE (a mounted scan) found all 30 round keys in the key block
    grep -qF "in key block: 30 of 30 round keys" <<<"$W5_LINE"
}
w5_block() { # the key block the driver logged for volume $VOL: "address length", or nothing
    grep -aoE "W5 key block of volume $VOL at [0-9A-Fa-fx]+, [0-9]+ bytes" "$1" | tail -n1 \
        | sed -E 's/.* at (0x)?([0-9A-Fa-f]+), ([0-9]+) bytes/0x\2 \3/'
}
w5_mounted() { # check name, block: the mounted scan's result; 0 if all round keys were in the block
    local name="$1" block="$2"
    if [ -n "$block" ] && w5_scan "$name" mounted $block; then
        result PASS "$name" "$W5_LINE"
    else
        result FAIL "$name" "${block:-no key block line for volume $VOL in $BOTH_LOG}: $W5_LINE"
    fi
    w5_all_in_block
}
w5_wine_key_bytes() {
    # The checker first checks itself (FIPS-197's example; made-up Wine processes, one per
    # class of hit; a child process's buffer).
    if python3 "$ROOT/scripts/w5-wine-key-bytes.py" --self-test >"$OUT/w5-wine-key-bytes-checker.log" 2>&1; then
        result PASS w5-wine-key-bytes-checker "$(tail -n1 "$OUT/w5-wine-key-bytes-checker.log" | cut -d' ' -f2-)"
    else
        result FAIL w5-wine-key-bytes-checker "$(tail -n1 "$OUT/w5-wine-key-bytes-checker.log")"
    fi
    W5_KEY=$(w5_key)
    gates 1 1
    mount_volume w5-wine-key-bytes "" || return
    local block key_ok=0
    await_log "$BOTH_LOG" "W5 key block of volume $VOL at" 10 || true
    block=$(w5_block "$BOTH_LOG")
    # Before any I/O: the mount's frames are still on the dispatch thread's stack.
    w5_mounted w5-wine-key-bytes-mounted "$block" && key_ok=1
    # The key in use: writes and reads through the direct path's workers, the encryption
    # pool (256 KiB requests) and the dispatching thread (16 KiB reads).
    client w5-wine-key-bytes-fill fill --device "$VOLUME_PATH" --model "$VM" --seed 41 --chunk 256K
    client w5-wine-key-bytes-verify verify --device "$VOLUME_PATH" --model "$VM" --chunk 16384
    w5_mounted w5-wine-key-bytes-after-io "$block" || key_ok=0
    vcctl w5-wine-key-bytes-erase erase-keys
    grep -aq '"volumes_erased": *1' "$LAST_LOG" || result FAIL w5-wine-key-bytes-erase "see $LAST_LOG"
    local phase name
    for phase in erased dismounted; do
        name=w5-wine-key-bytes-after-erase
        if [ $phase = dismounted ]; then
            vcctl w5-wine-key-bytes-dismount dismount "$VOL"
            name=w5-wine-key-bytes-after-dismount
        fi
        if [ $key_ok != 1 ]; then
            result FAIL "$name" "not trusted: the mounted scans did not find all 30 round keys in the key block with this key"
        elif w5_scan "$name" $phase; then
            result PASS "$name" "$W5_LINE"
        else
            result FAIL "$name" "$W5_LINE"
        fi
    done
}
if [ $mount_supported = 1 ] && [ $volume_ok = 1 ]; then
    # A std File on the test disk: a positional read works under Wine (a seek does not).
    client std-read-through-disk std-read --device "$DISK_PATH" --offset 0

    # R10 (Wine build): path counters on exclusive and shared mounts (see path_check).
    path_check r10-wine-exclusive-gates-off "" 0 0
    path_check r10-wine-exclusive-read-gate "" 1 0
    path_check r10-wine-exclusive-write-gate "" 0 1
    path_check r10-wine-shared-gates-off "--shared" 0 0
    path_check r10-wine-shared-both-gates "--shared" 1 1
    path_check r10-wine-exclusive-both-gates "" 1 1

    # Every cipher (Wine build): the hidden volume of the test disk (a Serpent-Twofish-AES
    # cascade) written on one path reads back on the other.
    every_cipher_wine

    # W10, W11: VERIFY served on the legacy I/O thread and by a direct worker (verify_check).
    verify_check w10-wine-verify-served-by-legacy-io-thread 0 0
    verify_check w10-wine-verify-served-by-direct-worker 1 1

    # R13: random mixed I/O on both paths, flush, dismount under load, remount, data = model.
    for g in "0 0" "1 1"; do
        set -- $g
        gates "$1" "$2"
        t="r13-gates-$1$2"
        mount_volume "$t" "" || continue
        # W11: from here on only the volume's child requests reach the test disk.
        w "$t-disk-reset" 60 wine "$WIN_DIR\\vc-e2e.exe" disk-reset
        # The model starts from a full fill (path_check's may not have run).
        client "$t-fill" fill --device "$VOLUME_PATH" --model "$VM" --seed 31
        client "$t-random" random-mixed --device "$VOLUME_PATH" --model "$VM" --ops 500 --qd 8 --seed "5$1"
        client "$t-flush" flush --device "$VOLUME_PATH"
        # W11: every read and write the test disk got carried IRP_NOCACHE (no paging flag: none
        # of this is paging I/O) and an MDL that agrees with it (ByteCount = length, ByteOffset
        # = the system address's page offset, Size holds the span's pages); direct reads came as partial MDLs of the upper
        # request's MDL, legacy transfers and direct writes as MDLs of the engine's buffers.
        client "w11-child-nocache-gates-$1$2" check-counter --name no_cache_missing --max 0
        client "w11-child-not-paging-gates-$1$2" check-counter --name paging_io --max 0
        client "w11-child-mdl-agrees-gates-$1$2" check-counter --name mdl_mismatch --max 0
        client "w11-child-mdl-every-transfer-gates-$1$2" check-counter --name with_mdl --min 1
        if [ "$1" = 1 ]; then
            client "w11-child-partial-mdl-gates-$1$2" check-counter --name partial_mdl --min 1
        else
            client "w11-child-partial-mdl-gates-$1$2" check-counter --name partial_mdl --max 0
        fi
        w "$t-load" 120 wine "$WIN_DIR\\vc-e2e.exe" load --device "$VOLUME_PATH" --model "$VM" --seconds 4 &
        load_pid=$!
        sleep 1
        vcctl "$t-dismount" dismount "$VOL" --force
        wait $load_pid
        grep -aq '^PASS load-data' "$OUT"/*"$t-load.log" && result PASS "$t-dismount-under-load" "reads during dismount returned model data or failed" \
            || result FAIL "$t-dismount-under-load" "see the $t-load log"
        mount_volume "$t-remount" "" || continue
        client "$t-verify-after-remount" verify --device "$VOLUME_PATH" --model "$VM"
        vcctl "$t-dismount2" dismount "$VOL"
    done

    w5_wine_key_bytes
    w6_wine_allocation_failure
    w6_wine_reservation_handoff
    w11_wine_write_protected_host
    host_type_wine_refused

    # W1 (stand-in): a dismount with "open files" (a client holding the volume device open:
    # the wine-host filesystem stand-in refuses FSCTL_LOCK_VOLUME then) is refused in one line
    # and the volume keeps serving; once the handle is closed it goes through; lock and
    # dismount reach the stand-in before the device is deleted. W3: `sc stop` with a volume
    # mounted does not unload the driver.
    gates 1 1
    if mount_volume w1-dismount-open-files ""; then
        w w1-load 120 wine "$WIN_DIR\\vc-e2e.exe" load --device "$VOLUME_PATH" --model "$VM" --seconds 5 &
        load_pid=$!
        sleep 2
        vcctl w1-refused dismount "$VOL"
        refused_rc=$? refused_log="$LAST_LOG"
        wait $load_pid
        if [ $refused_rc -ne 0 ] && grep -aq "is in use: close files and windows on it, or use --force" "$refused_log" \
            && grep -aq '^PASS load-data' "$OUT"/*w1-load.log; then
            result PASS w1-dismount-open-files-refused "$(grep -a 'is in use' "$refused_log" | tr -d '\r' | head -n1); the load kept its data"
        else
            result FAIL w1-dismount-open-files-refused "exit $refused_rc, see $refused_log and the w1-load log"
        fi
        w w3-sc-stop-mounted 60 wine sc stop vcdirect
        sleep 2
        vcctl w3-status status "$VOL"
        if grep -aq '"volume_id"' "$LAST_LOG" && ! grep -aq "vcdirect: unloaded" "$BOTH_LOG"; then
            result PASS w3-sc-stop-while-mounted "sc stop left the driver loaded; the volume still answers status"
        else
            result FAIL w3-sc-stop-while-mounted "see $LAST_LOG and $BOTH_LOG"
        fi
        client w1-verify-after-refusal verify --device "$VOLUME_PATH" --model "$VM"
        vcctl w1-dismount dismount "$VOL"
        w1_rc=$?
        # Order in the debugger log: the stand-in's lock, then its dismount, then the deletion.
        order=$(grep -aoE "VcVolume$VOL (lock|dismount) -> 0x[0-9a-f]+|VcVolume$VOL deleted" "$BOTH_LOG" | tr '\n' ' ')
        if [ $w1_rc -eq 0 ] && echo "$order" | grep -qE "lock -> 0xc0000022 .*lock -> 0x00000000 VcVolume$VOL dismount -> 0x00000000 VcVolume$VOL deleted"; then
            result PASS w1-lock-dismount-order "$order"
        else
            result FAIL w1-lock-dismount-order "exit $w1_rc; log order: $order"
        fi
        # Forced with "open files": the lock is refused, the dismount is sent all the same.
        if mount_volume w1-forced ""; then
            w w1-load2 120 wine "$WIN_DIR\\vc-e2e.exe" load --device "$VOLUME_PATH" --model "$VM" --seconds 4 &
            load_pid=$!
            sleep 2
            vcctl w1-forced-dismount dismount --all --force
            forced_rc=$?
            wait $load_pid
            order=$(grep -aoE "VcVolume$VOL (lock|dismount) -> 0x[0-9a-f]+|VcVolume$VOL deleted" "$BOTH_LOG" | tr '\n' ' ')
            if [ $forced_rc -eq 0 ] && echo "$order" | grep -qE "lock -> 0xc0000022 VcVolume$VOL dismount -> 0x00000000 VcVolume$VOL deleted"; then
                result PASS w1-forced-dismount-open-files "$order"
            else
                result FAIL w1-forced-dismount-open-files "exit $forced_rc; log order: $order"
            fi
            # W3: a forced dismount whose lock failed latches "unload disabled" for the boot
            # (the files' handles keep the deleted device referenced); vcctl says so.
            vcctl w3-list-latched list
            if grep -aq "vcdirect: unload disabled until reboot" "$BOTH_LOG" && grep -aq "stays loaded until reboot" "$LAST_LOG"; then
                result PASS w3-unload-latched-after-forced-dismount "$(grep -a 'stays loaded' "$LAST_LOG" | tr -d '\r' | head -c 120)"
            else
                result FAIL w3-unload-latched-after-forced-dismount "see $LAST_LOG and $BOTH_LOG"
            fi
        fi
        vcctl w1-unknown dismount Q:
        if [ $? -ne 0 ] && grep -aq "no mounted volume Q: (nothing changed)" "$LAST_LOG"; then
            result PASS w1-dismount-unknown-letter "$(grep -a 'no mounted volume' "$LAST_LOG" | tr -d '\r' | head -n1)"
        else
            result FAIL w1-dismount-unknown-letter "see $LAST_LOG"
        fi
    fi

    # R6, R8: malformed gate values leave the gates off; a reload affects only later mounts.
    for bad in "REG_SZ 1" "REG_BINARY 0100" "REG_DWORD 2"; do
        set -- $bad
        reg_add vcdirect VeraCryptEnableMountedVolumeFastReadIo "$1" "$2"
        reg_add vcdirect VeraCryptEnableMountedVolumeFastWriteIo "$1" "$2"
        vcctl "r8-reload-$1" gates reload
        vcctl "r8-gates-$1" gates get
        grep -aqE '"read": *(false|0)' "$LAST_LOG" && grep -aqE '"write": *(false|0)' "$LAST_LOG" \
            && result PASS "r8-malformed-gate-$1-$2" "gates stay off" || result FAIL "r8-malformed-gate-$1-$2" "see $LAST_LOG"
    done
    gates 0 0
    if mount_volume r6-reload-affects-only-later-mounts ""; then
        gates 1 1
        client r6-io random-mixed --device "$VOLUME_PATH" --model "$VM" --ops 100 --seed 61
        vcctl r6-status status "$VOL"
        if grep -aq '"counters"' "$LAST_LOG" && [ "$(status_counter "$LAST_LOG" direct_reads)" -eq 0 ] \
            && [ "$(status_counter "$LAST_LOG" direct_writes)" -eq 0 ] && [ "$(status_counter "$LAST_LOG" legacy_reads)" -gt 0 ]; then
            result PASS r6-reload-affects-only-later-mounts "volume mounted with gates off stays legacy after a reload to on"
        else
            result FAIL r6-reload-affects-only-later-mounts "see $LAST_LOG"
        fi
        vcctl r6-dismount dismount "$VOL"
    fi

    # Read-only mount: writes fail with STATUS_MEDIA_WRITE_PROTECTED (ERROR_WRITE_PROTECT).
    if mount_volume read-only-mount "--read-only"; then
        client ro-write expect-status --device "$VOLUME_PATH" --op write --offset 0 --length 4096 --expect 19 --name read-only-write-refused
        client ro-verify verify --device "$VOLUME_PATH" --model "$VM"
        # W10: a few rows of docs/disk-ioctls.tsv through Wine's I/O manager (the table test
        # runs them all on Linux): writable, online, an unknown code without buffers, VERIFY's
        # whole-structure input, GEOMETRY_EX's size, the EFS code.
        client w10-writable expect-status --device "$VOLUME_PATH" --op ioctl --code 0x70024 --expect 19 --name w10-is-writable-on-read-only
        client w10-online expect-status --device "$VOLUME_PATH" --op ioctl --code 0x56C008 --expect ok --name w10-volume-online
        client w10-unknown expect-status --device "$VOLUME_PATH" --op ioctl --code 0x77FFC --expect 1 --name w10-unknown-code-without-buffers
        client w10-verify-short expect-status --device "$VOLUME_PATH" --op ioctl --code 0x70014 --in-len 12 --expect 122 --name w10-verify-12-byte-input
        client w10-verify expect-status --device "$VOLUME_PATH" --op ioctl --code 0x70014 --in-len 16 --expect ok --name w10-verify-16-byte-input
        client w10-geometry-ex-short expect-status --device "$VOLUME_PATH" --op ioctl --code 0x700A0 --out-len 32 --expect 122 --name w10-geometry-ex-32-bytes
        client w10-geometry-ex expect-status --device "$VOLUME_PATH" --op ioctl --code 0x700A0 --out-len 40 --expect ok --name w10-geometry-ex-40-bytes
        client w10-efs expect-status --device "$VOLUME_PATH" --op ioctl --code 0x455610D8 --expect ok --name w10-efs-code
        vcctl ro-dismount dismount "$VOL"
    fi

    # W2 (Wine build, mount-manager stand-in in vcdirect's process, sys/README.md): a letter
    # through the volume arrival notification then a create point for \DosDevices\V:, seen
    # through \\.\V:, listed as made by the mount manager, removed by a delete-points request
    # then a volume removal notification at dismount; a letter already in use is refused in one
    # line, its link untouched; a mount without a letter is never announced.
    w2_requests() { # the stand-in's requests so far, one per line, without the prefix
        grep -ao 'vcdirect: mount manager stand-in: .*' "$BOTH_LOG" | tr -d '\r' | sed 's/^vcdirect: mount manager stand-in: //'
    }
    w2_before=$(w2_requests | wc -l)
    if mount_volume w2-letter "--letter V"; then
        await_log "$BOTH_LOG" "stand-in: create point .DosDevices.V:" 10 || true
        got=$(w2_requests | tail -n +$((w2_before + 1)) | tr '\n' '|')
        want="volume arrival \\Device\\VcVolume$VOL (unique id 24 bytes, suggested link \\DosDevices\\V:)|create point \\DosDevices\\V: -> \\Device\\VcVolume$VOL|"
        [ "$got" = "$want" ] && result PASS w2-wine-mount-manager-requests-in-order "$got" \
            || result FAIL w2-wine-mount-manager-requests-in-order "got '$got', want '$want' ($BOTH_LOG)"
        vcctl w2-list list
        grep -aq '"letter": *"V:"' "$LAST_LOG" && grep -aq '"letter_via": *"mount manager"' "$LAST_LOG" \
            && result PASS w2-wine-list-shows-letter-and-how "V: via the mount manager" \
            || result FAIL w2-wine-list-shows-letter-and-how "see $LAST_LOG"
        client w2-read-through-letter verify --device '\\.\V:' --model "$VM"
        # The letter in use (V: is ours now; C: is Wine's drive): refused in one line.
        for letter in V C; do
            vcctl "w2-in-use-$letter" "$MOUNT_ARGS --letter $letter"
            rc=$?
            if [ $rc -ne 0 ] && grep -aq 'drive letter is already in use' "$LAST_LOG" && [ "$(grep -ac . "$LAST_LOG")" -eq 1 ]; then
                result PASS "w2-wine-letter-$letter-in-use-refused" "$(tr -d '\r' <"$LAST_LOG")"
            else
                result FAIL "w2-wine-letter-$letter-in-use-refused" "exit $rc, see $LAST_LOG"
            fi
        done
        client w2-letter-untouched verify --device '\\.\V:' --model "$VM"
        [ -f "$C/vctest/password.txt" ] && result PASS w2-wine-c-drive-untouched "C: still serves files after the refused mount" \
            || result FAIL w2-wine-c-drive-untouched "C:\\vctest is gone"
        w2_mid=$(w2_requests | wc -l)
        vcctl w2-dismount dismount V:
        await_log "$BOTH_LOG" "stand-in: volume removal .Device.VcVolume$VOL" 10 || true
        got=$(w2_requests | tail -n +$((w2_mid + 1)) | tr '\n' '|')
        # Then the volume removal notification, so the mount manager forgets the device.
        want="delete points \\DosDevices\\V:|volume removal \\Device\\VcVolume$VOL|"
        [ "$got" = "$want" ] && result PASS w2-wine-dismount-deletes-the-point "$got" \
            || result FAIL w2-wine-dismount-deletes-the-point "got '$got', want '$want' ($BOTH_LOG)"
        if w w2-letter-gone 60 wine "$WIN_DIR\\vc-e2e.exe" info --device '\\.\V:'; then
            result FAIL w2-wine-letter-gone-after-dismount "\\\\.\\V: still opens ($LAST_LOG)"
        else
            result PASS w2-wine-letter-gone-after-dismount "\\\\.\\V: no longer opens"
        fi
    fi
    # Every other scenario mounts without a letter: none of them was announced.
    arrivals=$(w2_requests | grep -c '^volume arrival')
    [ "$arrivals" -eq 1 ] && result PASS w2-wine-no-letter-no-arrival "one arrival, for the one mount with a letter" \
        || result FAIL w2-wine-no-letter-no-arrival "$arrivals arrival notifications ($BOTH_LOG)"

    # R2, R3: key erasure under load.
    gates 1 1
    if mount_volume r2-r3-key-erasure-under-load ""; then
        client r2-r3-erase erase-under-load --device "$VOLUME_PATH" --model "$VM" --control "$CONTROL_PATH"
        vcctl r2-dismount dismount "$VOL" --force
    fi

    # Cancel: on a slow disk (50 ms per operation), CancelIoEx on 16 reads: 8 fill the direct
    # workers (or the legacy queue's threads) and the rest wait in the path's FIFO, so some are
    # still queued when the cancel arrives. Those end with ERROR_OPERATION_ABORTED through the
    # driver's cancel routine, the others with the model's data, on both paths.
    # Wine 8.0 bug (tests-usermode/wine/README.md, "What Wine gets wrong"): winedevice.exe may
    # call IoCancelIrp on IRPs already completed and freed, which can crash it when many
    # requests are in flight. 16 in flight (not 32) keeps that rare, and the check below says
    # plainly when the driver host died instead of reporting it as a driver failure.
    for g in "1 1" "0 0"; do
        set -- $g
        gates "$1" "$2"
        t="cancel-queued-gates-$1$2"
        mount_volume "$t" "" || continue
        host_pid=$(loaded_pid)
        w "$t-latency" 60 wine "$WIN_DIR\\vc-e2e.exe" disk-latency --us 50000
        client "$t" cancel-queued --device "$VOLUME_PATH" --model "$VM" --count 16
        now_pid=$(loaded_pid)
        if [ -n "$host_pid" ] && [ "$now_pid" = "$host_pid" ]; then
            result PASS "$t-driver-host-survived" "winedevice.exe pid $host_pid still runs both drivers after CancelIoEx"
        else
            result FAIL "$t-driver-host-survived" "winedevice.exe pid ${host_pid:-?} is gone (now ${now_pid:-none}): Wine 8.0's stale IoCancelIrp (tests-usermode/wine/README.md)"
        fi
        w "$t-latency-reset" 60 wine "$WIN_DIR\\vc-e2e.exe" disk-latency --us 1000
        vcctl "$t-dismount" dismount "$VOL"
    done

    # Hidden-volume protection: an outer volume mounted with --protect-hidden refuses a write
    # into the hidden range (STATUS_INVALID_PARAMETER), and every later write.
    # Last, because the test disk is restarted over another file.
    printf 'outer password\nhidden password\n' | "$VCCTL_LINUX" volume create "$C/vctest/hidden.img" \
        --size "$VOLUME_BYTES" --hidden-size $((2 * 1024 * 1024)) --prf sha512 --pim 1 --password-stdin \
        >"$OUT/hidden-create.log" 2>&1
    hidden_offset=$(grep -o '"hidden_data_offset": *[0-9]*' "$OUT/hidden-create.log" | grep -o '[0-9]*$')
    outer_offset=$(grep -o '"data_offset": *[0-9]*' "$OUT/hidden-create.log" | head -n1 | grep -o '[0-9]*$')
    if [ -n "$hidden_offset" ] && [ -n "$outer_offset" ]; then
        w hv-stop-vcdirect 60 wine sc stop vcdirect
        w hv-stop-disk 60 wine sc stop vctestdisk
        # W3: every volume is dismounted, but the forced dismounts with open files before
        # (r13, w1-forced) latched "unload disabled": DriverUnload stays cleared, so when the
        # winedevice process stops (Wine 8.0 does not pass a second stop to a driver service
        # whose first stop it ignored, w3-sc-stop-while-mounted) the driver is not unloaded.
        # (Restoring DriverUnload after a last dismount that latched nothing: the engine tests.)
        if ! await_log "$BOTH_LOG" "vcdirect: unloaded" 10; then
            result PASS w3-no-unload-after-latch "no Unload ran: DriverUnload stayed cleared after the latch"
        else
            result FAIL w3-no-unload-after-latch "the driver unloaded although the latch was set ($BOTH_LOG)"
        fi
        # The latch holds until reboot (Wine then cannot start vcdirect again either): the
        # prefix is restarted, both drivers start afresh.
        reg_add vctestdisk BackingFile REG_SZ '\??\C:\vctest\hidden.img'
        restart_prefix
        WINEDEBUG=warn+debugstr w hv-start-disk 60 wine sc start vctestdisk
        hv_log="$LAST_LOG"
        w hv-start-vcdirect 60 wine sc start vcdirect
        await_log "$hv_log" "vcdirect: loaded (wine-host build" 30 || true
        printf 'outer password\nhidden password\n' > "$C/vctest/password.txt"
        MOUNT_ARGS="${MOUNT_ARGS/volume.img/hidden.img}"
        if mount_volume hidden-volume-protection "--protect-hidden"; then
            inside=$((hidden_offset - outer_offset))
            client hv-write-inside expect-status --device "$VOLUME_PATH" --op write --offset "$inside" --length 4096 --expect 87 --name hidden-range-write-refused
            client hv-write-after expect-status --device "$VOLUME_PATH" --op write --offset 0 --length 4096 --expect 87 --name later-writes-refused
            client hv-read expect-status --device "$VOLUME_PATH" --op read --offset 0 --length 4096 --expect ok --name reads-still-served
            vcctl hv-dismount dismount "$VOL" --force
        fi
        printf '%s\n' "$PASSWORD" > "$C/vctest/password.txt"
    else
        result FAIL hidden-volume-create "see $OUT/hidden-create.log"
    fi
    veracrypt_written_wine
else
    result FAIL mount-scenarios "none ran (r10-wine, r13, w5-wine-key-bytes, w1, w3, r6, r8, read-only, r2-r3, cancel-queued, hidden-volume-protection): $NEEDS"
fi

# W9 (Wine build, driver/src/wdm/irql.rs): every scenario above ran with the virtual IRQL and
# the IRP and remove-lock lifecycle checks on; a broken contract prints one line
# "vcdirect: W9 violation: <call> at <level> (allowed up to <level>) at <file:line:col>" (or an
# IRP/remove-lock rule and its site) in the driver's log. Any such line fails the run.
W9_LOGS=("$BOTH_LOG")
[ -z "${hv_log:-}" ] || W9_LOGS+=("$hv_log")
[ -z "${vcw_log:-}" ] || W9_LOGS+=("$vcw_log")
w9_violations() { # logs...: the violation lines, without carriage returns
    grep -aho 'vcdirect: W9 violation.*' "$@" 2>/dev/null | tr -d '\r'
}
if grep -aq 'vcdirect: W9 checks on' "$BOTH_LOG"; then
    result PASS w9-checks-on "$(grep -ao 'vcdirect: W9 checks on.*' "$BOTH_LOG" | head -n1 | tr -d '\r')"
else
    result FAIL w9-checks-on "no 'vcdirect: W9 checks on' line in $BOTH_LOG: the image was built without them"
fi
violations=$(w9_violations "${W9_LOGS[@]}")
if [ -z "$violations" ]; then
    result PASS w9-no-violation "no W9 violation line in the driver logs of every scenario (${#W9_LOGS[@]} driver processes)"
else
    result FAIL w9-no-violation "$(wc -l <<<"$violations") lines: $(head -n 5 <<<"$violations" | tr '\n' '|')"
    echo "$violations" | sort | uniq -c | sort -rn | head -n 20 | sed 's/^/    /'
fi

wine_cannot_show

w sc-stop-vcdirect 60 wine sc stop vcdirect
w sc-stop-testdisk2 60 wine sc stop vctestdisk

# W9, the fault switches (Wine build only, driver/src/wdm/irql.rs): VcdirectWineFaultWaitInsideSpinLock=1
# makes every mount wait on an event (through the engine's event wrapper) inside a spin lock,
# VcdirectWineFaultWaitInReadDispatch=1 every read dispatch wait on one: calls that bugcheck on
# Windows (the events are set first, so the waits cannot hang). VcdirectWineFaultIrpLifecycle=1
# completes every read with its cancel routine set and reads its note after the completion
# poison (the routine's "still set" is a flag of the check, the real one is never installed
# again). VcdirectWineFaultVerifyAtApc=1 runs IOCTL_DISK_VERIFY's dispatch at virtual APC_LEVEL
# (as the paging path can send a device control on Windows): VERIFY is pended and served by
# the engine all the same (nothing in its dispatch waits or reads the host, so no violation is
# reported for it). A short run
# (load, mount, one read, one VERIFY, dismount, unload) passes only if the driver reports each
# wrong call with its call site.
if [ $mount_supported = 1 ] && [ $volume_ok = 1 ]; then
    reg_add vcdirect VcdirectWineFaultWaitInsideSpinLock REG_DWORD 1
    reg_add vcdirect VcdirectWineFaultWaitInReadDispatch REG_DWORD 1
    reg_add vcdirect VcdirectWineFaultIrpLifecycle REG_DWORD 1
    reg_add vcdirect VcdirectWineFaultVerifyAtApc REG_DWORD 1
    # W5's switch rides along: VcdirectWineFaultKeyCopyOnStack=1 makes every mount leave a copy
    # of the cipher (both round-key schedules) in its own frame, never wiped.
    reg_add vcdirect VcdirectWineFaultKeyCopyOnStack REG_DWORD 1
    reg_add vctestdisk BackingFile REG_SZ '\??\C:\vctest\volume.img'
    MOUNT_ARGS="${MOUNT_ARGS/hidden.img/volume.img}"
    printf '%s\n' "$PASSWORD" > "$C/vctest/password.txt"
    restart_prefix
    WINEDEBUG=warn+debugstr w w9-switch-start-disk 60 wine sc start vctestdisk
    sw_log="$LAST_LOG"
    w w9-switch-start-vcdirect 60 wine sc start vcdirect
    await_log "$sw_log" "vcdirect: loaded (wine-host build" 30 || true
    if mount_volume w9-switch-mount ""; then
        # The W5 memory check bites, right after the mount and again after erase-keys: each
        # scan must fail on the copy, named as on a thread's stack.
        W5_KEY=${W5_KEY:-$(w5_key)}
        await_log "$sw_log" "W5 key block of volume $VOL at" 10 || true
        block=$(w5_block "$sw_log")
        w5_switch_mounted=0
        if ! grep -aq 'vcdirect: W5 fault switch on: VcdirectWineFaultKeyCopyOnStack' "$sw_log"; then
            result FAIL w5-wine-key-bytes-switch-caught "no 'W5 fault switch on' line in $sw_log"
        elif [ -n "$block" ] && ! w5_scan w5-wine-key-bytes-switch mounted $block \
            && grep -qF "the driver's: $W5_FAIL_STACK" <<<"$W5_LINE" && w5_all_in_block; then
            result PASS w5-wine-key-bytes-switch-caught "the check failed: $W5_LINE"
            w5_switch_mounted=1
        else
            result FAIL w5-wine-key-bytes-switch-caught "${block:-no key block line in $sw_log}: $W5_LINE"
        fi
        client w9-switch-read expect-status --device "$VOLUME_PATH" --op read --offset 0 --length 4096 --expect ok --name read-with-the-switch-on
        client w9-switch-verify-at-apc-served expect-status --device "$VOLUME_PATH" --op verify --offset 0 --length 65536 --expect ok --name verify-dispatched-at-virtual-apc-level-is-pended-and-served
        vcctl w5-switch-erase erase-keys
        if [ $w5_switch_mounted != 1 ]; then
            result FAIL w5-wine-key-bytes-switch-after-erase-caught "not trusted: the mounted scan with this key did not pass as caught"
        elif ! w5_scan w5-wine-key-bytes-switch-after-erase erased \
            && grep -qF "the driver's: $W5_FAIL_STACK" <<<"$W5_LINE"; then
            result PASS w5-wine-key-bytes-switch-after-erase-caught "the check failed: $W5_LINE"
        else
            result FAIL w5-wine-key-bytes-switch-after-erase-caught "$W5_LINE"
        fi
        vcctl w9-switch-dismount dismount "$VOL"
    fi
    w w9-switch-stop 60 wine sc stop vcdirect
    await_log "$sw_log" "vcdirect: unloaded" 10 || true
    w w9-switch-stop-disk 60 wine sc stop vctestdisk
    for v in VcdirectWineFaultWaitInsideSpinLock VcdirectWineFaultWaitInReadDispatch VcdirectWineFaultIrpLifecycle VcdirectWineFaultVerifyAtApc VcdirectWineFaultKeyCopyOnStack; do
        w reg-delete 60 wine reg delete 'HKLM\System\CurrentControlSet\Services\vcdirect' /v "$v" /f
    done
    # Each wrong call, named with its site: the wait inside the spin lock in
    # wdm/irql.rs::fault_wait_inside_spin_lock, the wait in wdm/disk/dispatch.rs's read dispatch.
    w9_caught() { # file regex: the first violation line of a wait at DISPATCH_LEVEL at that file
        w9_violations "$sw_log" | grep -E "W9 violation: wait at DISPATCH_LEVEL \(allowed up to APC_LEVEL\) at [^ ]*driver/src/wdm/$1:[0-9]+:[0-9]+\$" | head -n1
    }
    caught=$(w9_caught 'irql\.rs')
    caught_read=$(w9_caught 'disk/dispatch\.rs')
    # The IRP lifecycle faults, each named with the completing caller's site.
    irp_rule() { # rule text: its first violation line with a site under driver/src
        w9_violations "$sw_log" | grep -F "W9 violation: $1 at " | grep -E " at [^ ]*driver/src/[^ ]+:[0-9]+:[0-9]+\$" | head -n1
    }
    caught_cancel=$(irp_rule 'IRP completed with its cancel routine set')
    caught_touch=$(irp_rule 'IRP touched after completion (its engine note read)')
    others=$(w9_violations "$sw_log" | grep -vF -e "${caught:-no line}" -e "${caught_read:-no line}" \
        -e "${caught_cancel:-no line}" -e "${caught_touch:-no line}" | wc -l)
    switches=$(grep -ac 'vcdirect: W9 fault switch on' "$sw_log")
    if [ "$switches" -eq 4 ] && [ -n "$caught_cancel" ] && [ -n "$caught_touch" ] && [ "$others" -eq 0 ]; then
        result PASS w9-switch-irp-lifecycle-caught "${caught_cancel#*vcdirect: }; ${caught_touch#*vcdirect: }"
    else
        result FAIL w9-switch-irp-lifecycle-caught "$switches switch lines, caught '${caught_cancel:-none}' and '${caught_touch:-none}', $others other violation lines ($sw_log)"
    fi
    if [ "$switches" -eq 4 ] && [ -n "$caught" ] && [ "$others" -eq 0 ]; then
        result PASS w9-switch-caught "${caught#*vcdirect: }"
    else
        result FAIL w9-switch-caught "$switches switch lines, caught '${caught:-none}', $others other violation lines ($sw_log)"
    fi
    if [ "$switches" -eq 4 ] && [ -n "$caught_read" ] && [ "$others" -eq 0 ]; then
        result PASS w9-switch-read-dispatch-caught "${caught_read#*vcdirect: }"
    else
        result FAIL w9-switch-read-dispatch-caught "$switches switch lines, caught '${caught_read:-none}', $others other violation lines ($sw_log)"
    fi
    # Unload ran (no volume mounted, no latch in this process) and printed its W9 summary: no
    # thread left raised, remove locks drained (checked at each device deletion).
    summary=$(grep -ao 'vcdirect: W9 summary: [0-9]* checks, [0-9]* violations' "$sw_log" | head -n1)
    if [ -n "$summary" ] && grep -aq 'vcdirect: unloaded' "$sw_log"; then
        result PASS w9-unload-summary "${summary#vcdirect: }"
    else
        result FAIL w9-unload-summary "no unload or no W9 summary in $sw_log"
    fi
else
    result FAIL w9-switch-caught "not run: $NEEDS"
    result FAIL w5-wine-key-bytes-switch-caught "not run: $NEEDS"
    result FAIL w5-wine-key-bytes-switch-after-erase-caught "not run: $NEEDS"
fi
cleanup
log "build ${build_seconds}s, scenarios $(($(date +%s) - run_start))s"
finish
