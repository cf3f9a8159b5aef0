#!/usr/bin/env bash
# Checks the images made by scripts/build-sys.sh: PE32+ for AMD64, subsystem NATIVE, entry
# point DriverEntry, imports only from ntoskrnl.exe and hal.dll, and, for the wine-host image,
# no import that Wine 8.0 lacks or stubs (sys/README.md). Prints one line per check; exits 1 on
# any failure. Usage: check-sys.sh [x64|x64-wine]... (default: both)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OBJDUMP="x86_64-w64-mingw32-objdump"
# Missing from Wine 8.0's ntoskrnl (the driver would not load) or stubs that kill winedevice
# (extended regular expressions, whole names).
WINE_FORBIDDEN=(ExAllocatePool2 'Ke(Save|Restore)ExtendedProcessorState' IoBuildPartialMdl
    SeCreateClientSecurity SeImpersonateClientEx IoSetCompletionRoutineEx 'IoCsq[A-Za-z]*'
    'Ex[A-Za-z]*RundownProtection[A-Za-z]*' ExIsProcessorFeaturePresent ExQueueWorkItem
    IoGetDeviceObjectPointer IoGetRelatedDeviceObject
    # Token and object security (W4): stubs in Wine; the wine-host build uses a fixed identity.
    'Se(Capture|Release|Lock|Unlock)SubjectContext' SeQueryInformationToken SeTokenIsAdmin
    ObSetSecurityObjectByPointer)
failures=0
check() { # name, condition result (0 = pass), detail
    if [ "$2" -eq 0 ]; then echo "  ok   $1"; else echo "  FAIL $1: $3"; failures=$((failures + 1)); fi
}

flavours=("$@")
[ ${#flavours[@]} -gt 0 ] || flavours=(x64 x64-wine)
for flavour in "${flavours[@]}"; do
    sys="$ROOT/target/sys/$flavour/vcdirect.sys"
    map="$ROOT/target/sys/$flavour/vcdirect.map"
    echo "check-sys: target/sys/$flavour/vcdirect.sys"
    if [ ! -f "$sys" ]; then check "image exists" 1 "run scripts/build-sys.sh"; continue; fi
    headers="$($OBJDUMP -p "$sys")"

    grep -q "file format pei-x86-64" <<<"$headers"; check "AMD64 PE" $? "$($OBJDUMP -f "$sys" | grep format)"
    grep -qE "^Magic[[:space:]]+020b" <<<"$headers"; check "PE32+" $? "optional header magic is not 020b"
    grep -qE "^Subsystem[[:space:]]+00000001" <<<"$headers"; check "subsystem NATIVE" $? "$(grep ^Subsystem <<<"$headers")"

    # The map names the entry point as section:offset; DriverEntry must sit exactly there.
    entry="$(sed -n 's/^ *entry point at *//p' "$map" | tr -d '[:space:]')"
    driver_entry="$(awk '$2 == "DriverEntry" { print $1; exit }' "$map")"
    [ -n "$entry" ] && [ "$entry" = "$driver_entry" ]
    check "entry point is DriverEntry" $? "entry $entry, DriverEntry at ${driver_entry:-nowhere}"

    dlls="$(sed -n 's/^[[:space:]]*DLL Name: //p' <<<"$headers" | sort -u | tr '\n' ' ')"
    bad_dlls="$(tr ' ' '\n' <<<"$dlls" | grep -v -x -i -e ntoskrnl.exe -e hal.dll -e '' || true)"
    [ -z "$bad_dlls" ]; check "imports only ntoskrnl.exe/hal.dll ($dlls)" $? "also imports $bad_dlls"

    imports="$(awk '/DLL Name:/ {in_dll = 1; next} in_dll && NF == 0 {in_dll = 0}
        in_dll && $1 ~ /^[0-9a-f]+$/ && NF >= 3 && $3 != "Hint/Ord" && $3 != "Name" { print $3 }' <<<"$headers" | sort -u)"
    echo "       $(wc -l <<<"$imports") imported routines"
    if [ "$flavour" = "x64-wine" ]; then
        found=""
        for f in "${WINE_FORBIDDEN[@]}"; do
            found="$found $(grep -Ex "$f" <<<"$imports" | tr '\n' ' ')"
        done
        found="$(tr -s ' ' <<<"$found" | sed 's/^ //; s/ $//')"
        [ -z "$found" ]; check "no import Wine 8.0 lacks or stubs" $? "imports $found"
    fi
done
if [ "$failures" -eq 0 ]; then echo "check-sys: PASS"; else echo "check-sys: FAIL ($failures)"; exit 1; fi
