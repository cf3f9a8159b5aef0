#!/usr/bin/env bash
# Checks the images made by scripts/build-sys.sh: PE32+ for AMD64 (x64, x64-wine) or ARM64
# (arm64), subsystem NATIVE, entry point DriverEntry, imports only from ntoskrnl.exe and
# hal.dll, an Authenticode signature that verifies against the certificate next to the image and
# a correct PE checksum (W16); for the wine-host image, no import that Wine 8.0 lacks or stubs
# (sys/README.md); for ARM64, no instruction that uses register x18 (reserved by Windows) and the
# ARMv8 AES instructions present (aese/aesd: the XTS really runs in hardware). W13, by
# scripts/check-sys-image.py on every image: no section both writable and executable,
# NX_COMPAT/DYNAMIC_BASE/FORCE_INTEGRITY, .reloc and .pdata, imports only from the committed
# allowlist sys/imports-<flavour>.txt (a new import fails until it is added there with a reason),
# on x64 no VEX/EVEX or x87/MMX instruction, and the stack budget of the dispatch, control,
# worker and cancel paths. Every import a routine Microsoft declares
# (scripts/check-imports-declared.py). Prints one line per check and the figures; exits 1 on any failure.
# Usage: check-sys.sh [x64|x64-wine|arm64]... (default: all three)
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
    ObSetSecurityObjectByPointer
    # Processor-group affinity of the encryption pool's threads: absent from Wine 8.0.
    'Ke(SetSystem|RevertToUser)GroupAffinityThread')
failures=0
check() { # name, condition result (0 = pass), detail
    if [ "$2" -eq 0 ]; then echo "  ok   $1"; else echo "  FAIL $1: $3"; failures=$((failures + 1)); fi
}

flavours=("$@")
[ ${#flavours[@]} -gt 0 ] || flavours=(x64 x64-wine arm64)
for flavour in "${flavours[@]}"; do
    sys="$ROOT/target/sys/$flavour/vcdirect.sys"
    map="$ROOT/target/sys/$flavour/vcdirect.map"
    cert="$ROOT/target/sys/$flavour/vcdirect-test.cer"
    echo "check-sys: target/sys/$flavour/vcdirect.sys"
    if [ ! -f "$sys" ]; then check "image exists" 1 "run scripts/build-sys.sh"; continue; fi

    if [ "$flavour" = arm64 ]; then
        # mingw's objdump cannot read ARM64 images; llvm-readobj/llvm-objdump (Debian llvm) can.
        headers="$(llvm-readobj --file-headers "$sys")"
        grep -q "Machine: IMAGE_FILE_MACHINE_ARM64 (0xAA64)" <<<"$headers"; check "machine 0xAA64 (ARM64)" $? "$(grep -m1 Machine: <<<"$headers")"
        grep -q "Magic: 0x20B" <<<"$headers"; check "PE32+" $? "optional header magic is not 0x20B"
        grep -q "Subsystem: IMAGE_SUBSYSTEM_NATIVE (0x1)" <<<"$headers"; check "subsystem NATIVE" $? "$(grep Subsystem: <<<"$headers")"
        entry="$(sed -n 's/^ *entry point at *//p' "$map" | tr -d '[:space:]')"
        driver_entry="$(awk '$2 == "DriverEntry" { print $1; exit }' "$map")"
        [ -n "$entry" ] && [ "$entry" = "$driver_entry" ]
        check "entry point is DriverEntry" $? "entry $entry, DriverEntry at ${driver_entry:-nowhere}"
        coff_imports="$(llvm-readobj --coff-imports "$sys")"
        dlls="$(sed -n 's/^[[:space:]]*Name: //p' <<<"$coff_imports" | sort -u | tr '\n' ' ')"
        bad_dlls="$(tr ' ' '\n' <<<"$dlls" | grep -v -x -i -e ntoskrnl.exe -e hal.dll -e '' || true)"
        [ -z "$bad_dlls" ]; check "imports only ntoskrnl.exe/hal.dll ($dlls)" $? "also imports $bad_dlls"
        imports="$(sed -n 's/^[[:space:]]*Symbol: \([^ ]*\).*/\1/p' <<<"$coff_imports" | sort -u)"
        echo "       $(wc -l <<<"$imports") imported routines"
        # +aes and v8.5a let llvm-objdump 14 decode every instruction the image holds; an
        # undecoded one would hide from the x18 scan, so there must be none.
        disasm="$(llvm-objdump -d --no-show-raw-insn --mattr=+aes,+v8.5a "$sys")"
        unknown="$(grep -c '<unknown>' <<<"$disasm")"
        [ "$unknown" -eq 0 ]; check "every instruction decoded" $? "$unknown undecoded"
        x18="$(grep -E '\b[xw]18\b' <<<"$disasm" || true)"
        [ -z "$x18" ]; check "no instruction uses register x18" $? "$(head -n3 <<<"$x18" | tr -s ' \t' ' ')"
        aese="$(grep -cwE 'aese' <<<"$disasm")"
        aesd="$(grep -cwE 'aesd' <<<"$disasm")"
        [ "$aese" -gt 0 ] && [ "$aesd" -gt 0 ]
        check "ARMv8 AES instructions present ($aese aese, $aesd aesd)" $? "built without +aes: software AES"
        # The same AES build for aarch64 Linux, under qemu (SYS_ARM64_CRYPTO=0 skips it).
        if [ "${SYS_ARM64_CRYPTO:-1}" != 0 ]; then
            qemu_log="$ROOT/target/sys/arm64/test-arm64-crypto.log"
            "$ROOT/scripts/test-arm64-crypto.sh" >"$qemu_log" 2>&1
            check "aarch64 XTS tests under qemu-aarch64 ($(grep -m1 -o '[0-9]* passed' "$qemu_log" || echo 'none passed'))" $? "see ${qemu_log#"$ROOT"/}"
        fi
    else
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
    aesni="$($OBJDUMP -d --no-show-raw-insn "$sys" | grep -cwE 'aesenc|aesenclast|aesdec|aesdeclast')"
    echo "       $aesni AES-NI instructions (aes-hw runs them after its CPUID check)"
    fi

    # The image names no path of the machine that built it (build-sys.sh remaps source paths).
    leaked="$(strings -n 6 "$sys" | grep -cF -e "$ROOT" -e "${CARGO_HOME:-$HOME/.cargo}" || true)"
    [ "$leaked" -eq 0 ]; check "no build-machine path in the image" $? "$leaked strings name $ROOT or the cargo home"

    # W5: the Wine build's key-block log line and fault switches (VcdirectWineFault*, the
    # copy of the cipher fault_key_copy_on_stack leaves) are in no product image; the wine-host
    # image has them, which shows the search finds them.
    wine_strings="$(strings -n 6 "$sys" | grep -cE 'W5 key block|VcdirectWineFault' || true)"
    wine_map="$(grep -c 'fault_key_copy_on_stack' "$map" || true)"
    if [ "$flavour" = "x64-wine" ]; then
        [ "$wine_strings" -gt 0 ] && [ "$wine_map" -gt 0 ]
        check "the Wine-only W5 code is found in the wine-host image" $? "$wine_strings strings, $wine_map map lines: the product check would see nothing"
    else
        [ "$wine_strings" -eq 0 ] && [ "$wine_map" -eq 0 ]
        check "no Wine-only W5 code (W5 key block, VcdirectWineFault*, fault_key_copy_on_stack)" $? "$wine_strings strings, $wine_map map lines"
    fi

    # W13: sections, DllCharacteristics, import allowlist, instruction set, stack budget.
    python3 "$ROOT/scripts/check-sys-image.py" "$flavour" "$sys" "$map" "$ROOT/sys/imports-$flavour.txt"
    image_failures=$?
    if [ "$flavour" = "x64" ]; then
        # The wide-path rule bites: named after a function the image lacks, the bracket is
        # never found and the check must fail.
        bite="$(CHECK_SYS_WIDE_BRACKET='^no::such::bracket$' python3 "$ROOT/scripts/check-sys-image.py" \
            "$flavour" "$sys" "$map" "$ROOT/sys/imports-$flavour.txt" 2>&1 || true)"
        grep -q "FAIL every call path into the wide path" <<<"$bite"
        check "the wide-path rule fails without its bracket (VEX reachable from a root)" $? "$(grep -E 'wide path' <<<"$bite" | head -n2 | tr '\n' ' ')"
        bite="$(CHECK_SYS_WIDE_FUNCS='^no::such::module::' python3 "$ROOT/scripts/check-sys-image.py" \
            "$flavour" "$sys" "$map" "$ROOT/sys/imports-$flavour.txt" 2>&1 || true)"
        grep -qE "FAIL [0-9]+ VEX/EVEX instructions, all in the wide path" <<<"$bite"
        check "the wide-path rule fails on a VEX instruction outside the wide path's functions" $? "$(grep -E 'VEX' <<<"$bite" | head -n2 | tr '\n' ' ')"
        # The no-call rule bites: with the XMM pass named after functions that call, it must
        # fail naming them; with either pass named after no function, it must fail too.
        bite="$(CHECK_SYS_XMM_PASS='^vcdirect::crypto::xts::' python3 "$ROOT/scripts/check-sys-image.py" \
            "$flavour" "$sys" "$map" "$ROOT/sys/imports-$flavour.txt" 2>&1 || true)"
        grep -qE "FAIL the XTS passes call nothing.*: vcdirect::crypto::xts::" <<<"$bite"
        check "the no-call rule fails on functions that call (vcdirect::crypto::xts)" $? "$(grep -E 'XTS passes' <<<"$bite" | head -n1)"
        bite="$(CHECK_SYS_WIDE_PASS='^no::such::pass$' python3 "$ROOT/scripts/check-sys-image.py" \
            "$flavour" "$sys" "$map" "$ROOT/sys/imports-$flavour.txt" 2>&1 || true)"
        grep -qE "FAIL the XTS passes call nothing \([0-9]+ XMM and 0 VAES copies.*: not two copies of each pass" <<<"$bite"
        check "the no-call rule fails when the image's VAES pass is not found" $? "$(grep -E 'XTS passes' <<<"$bite" | head -n1)"
        bite="$(CHECK_SYS_XMM_PASS='^no::such::pass$' python3 "$ROOT/scripts/check-sys-image.py" \
            "$flavour" "$sys" "$map" "$ROOT/sys/imports-$flavour.txt" 2>&1 || true)"
        grep -qE "FAIL the XTS passes call nothing \(0 XMM and [0-9]+ VAES copies.*: not two copies of each pass" <<<"$bite"
        check "the no-call rule fails when the image's XMM pass is not found" $? "$(grep -E 'XTS passes' <<<"$bite" | head -n1)"
        # The W5 burn rule bites: asked for a margin no frame has, it must fail.
        bite="$(CHECK_SYS_BURN_MARGIN=1048576 python3 "$ROOT/scripts/check-sys-image.py" \
            "$flavour" "$sys" "$map" "$ROOT/sys/imports-$flavour.txt" 2>&1 || true)"
        grep -q "FAIL the portable AES keys' stack burn covers their keying" <<<"$bite"
        check "the portable AES burn rule fails when the burn is shallower than the keying" $? "$(grep -E 'burn' <<<"$bite" | head -n1)"
    fi
    failures=$((failures + image_failures))

    # W16: the embedded signature verifies against the certificate copied next to the image,
    # and the PE checksum is set and right (osslsigncode prints one value when they agree).
    verify="$(osslsigncode verify -CAfile "$cert" -in "$sys" 2>&1)"
    grep -q "^Signature verification: ok" <<<"$verify"
    check "Authenticode signature verified (test certificate vcdirect-test.cer)" $? "$(grep -iE 'verification|error' <<<"$verify" | head -n3 | tr '\n' ' ')"
    checksum="$(sed -n 's/^PE checksum *: *\([0-9A-F]*\)$/\1/p' <<<"$verify")"
    [ -n "$checksum" ] && [ "$checksum" != 00000000 ]
    check "PE checksum set and correct (0x${checksum:-?})" $? "$(grep -i checksum <<<"$verify" | tr '\n' ' ')"
done
# Every import is a routine Microsoft declares: windows-sys's Windows Driver Kit modules or
# sys/imports-not-in-windows-sys.txt (header, first Windows); a misspelt one fails. With
# --self-test first: the check refuses a misspelt and an invented name.
images=()
for flavour in "${flavours[@]}"; do images+=("$ROOT/target/sys/$flavour/vcdirect.sys"); done
[ "${#flavours[@]}" -eq 3 ] && images=(--complete "${images[@]}")
python3 "$ROOT/scripts/check-imports-declared.py" --self-test && \
    python3 "$ROOT/scripts/check-imports-declared.py" "${images[@]}"
check "every import of the images is declared by Microsoft's metadata or listed with its header" $? "see the lines above"
# The INF's minimum Windows version and the README's (W16 install steps) must agree.
inf_min="$(sed -n 's/^; Minimum Windows for this INF: \(.*(build [0-9]*)\).*/\1/p' "$ROOT/inf/vcdirect.inx")"
[ -n "$inf_min" ] && grep -qF "INF route: $inf_min" "$ROOT/README.md"
check "README's INF-route minimum Windows agrees with inf/vcdirect.inx (${inf_min:-none})" $? "README.md does not say \"INF route: $inf_min\""
# sys/Cargo.lock is committed as Windows resolves it: wdk-build from crates.io, with its checksum
# (linux-cross.toml's [patch] rewrites the entry during a build; keep_lock puts it back).
grep -A3 '^name = "wdk-build"$' "$ROOT/sys/Cargo.lock" | grep -q '^source = "registry+'
check "sys/Cargo.lock keeps wdk-build's crates.io source" $? "the Linux [patch] entry was committed: git checkout sys/Cargo.lock"
if [ "$failures" -eq 0 ]; then echo "check-sys: PASS"; else echo "check-sys: FAIL ($failures)"; exit 1; fi
