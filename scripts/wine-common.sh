# Shell helpers shared by scripts/wine-smoke.sh and scripts/wine-e2e.sh (sourced, not run).

# await_log FILE PATTERN SECONDS: waits until FILE (a driver's DbgPrint output) holds a line
# matching PATTERN; fails after SECONDS. Used instead of a fixed sleep, which is too short on
# a loaded machine.
await_log() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -aq "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# cleanup: stops this prefix's wineserver (and with it winedevice.exe).
cleanup() { timeout 30 wineserver -k >/dev/null 2>&1 || true; }

# ensure_wine: installs Wine from Debian (wine64, wine) when it is missing.
ensure_wine() {
    command -v wine >/dev/null && command -v wineserver >/dev/null && return 0
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends wine64 wine
}
