#!/usr/bin/env bash
# Prepares this Linux machine to cross-build the WDM driver (sys/) for x64 and ARM64: Debian
# packages, Rust targets, a WDK stand-in made of symlinks to mingw-w64's DDK headers and import
# libraries (ARM64 import libraries made with llvm-dlltool from the x64 ones' export lists),
# and a copy of wdk-build with our patch for a Linux host (patches/). Idempotent: a second
# run only checks. Everything it makes lives in target/sys-toolchain (never committed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TC="$ROOT/target/sys-toolchain"
WDK_VERSION="10.0.22621.0"
WDK_BUILD_VERSION="0.6.0"
MINGW="/usr/x86_64-w64-mingw32"
# osslsigncode + openssl: test signing (W16). qemu-user + gcc-aarch64-linux-gnu: the aarch64
# crypto tests (scripts/test-arm64-crypto.sh).
PACKAGES=(mingw-w64-x86-64-dev binutils-mingw-w64-x86-64 gcc-mingw-w64-x86-64 libclang-dev clang llvm patch
    osslsigncode openssl qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross)

log() { echo "setup-sys-toolchain: $*"; }

# 1. Debian packages (apt-get update only when something is missing).
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    log "installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# 2. Rust targets (windows-gnu: the user-mode probe of scripts/wine-smoke.sh; aarch64 Linux: the
#    crypto tests under qemu).
for t in x86_64-pc-windows-msvc aarch64-pc-windows-msvc x86_64-pc-windows-gnu aarch64-unknown-linux-gnu; do
    rustup target list --installed | grep -qx "$t" || rustup target add "$t"
done

# 3. WDK stand-in: the layout wdk-build expects (Include/<v>/{km,km/crt,shared},
#    Lib/<v>/km/<arch>), pointing at mingw-w64's headers and import libraries.
WDK="$TC/wdk"
INC="$WDK/Include/$WDK_VERSION"
LIB_X64="$WDK/Lib/$WDK_VERSION/km/x64"
mkdir -p "$INC/km" "$LIB_X64"
ln -sfn "$MINGW/include" "$INC/shared"
ln -sfn "$MINGW/include" "$INC/km/crt"
for h in "$MINGW"/include/ddk/*; do
    ln -sfn "$h" "$INC/km/$(basename "$h")"
done
ln -sfn "$MINGW/lib/libntoskrnl.a" "$LIB_X64/ntoskrnl.lib"
ln -sfn "$MINGW/lib/libhal.a" "$LIB_X64/hal.lib"
ln -sfn "$MINGW/lib/libwmilib.a" "$LIB_X64/wmilib.lib"

# wdk-build links BufferOverflowFastFailK.lib; mingw has none. The driver calls nothing from
# it, so any valid import library satisfies the linker: one made from a one-line .def.
if [ ! -s "$LIB_X64/BufferOverflowFastFailK.lib" ]; then
    printf 'LIBRARY ntoskrnl.exe\nEXPORTS\n    KeBugCheckEx\n' > "$TC/BufferOverflowFastFailK.def"
    llvm-dlltool -m i386:x86-64 -d "$TC/BufferOverflowFastFailK.def" -l "$LIB_X64/BufferOverflowFastFailK.lib"
fi

# ARM64 import libraries (wdk-build looks in km/ARM64). mingw has none for ARM64, so each is
# made with llvm-dlltool from the export list of mingw's x64 import library: the names are the
# same (ntoskrnl's exports are shared by both architectures; a name missing on ARM64 would fail
# to load there, which check-sys.sh's import list shows). Exports with an __imp_ symbol but no
# thunk are data (IoFileObjectType, ...) and are marked DATA. The routines that x64 code gets as
# inlines but ARM64 imports from hal.dll (Microsoft's ARM64 headers: the IRQL routines) move
# from ntoskrnl.lib to hal.lib, so glue that calls them imports them from the right DLL.
# arm64rt.lib, which wdk-build links for ARM64, gets the same empty stand-in as
# BufferOverflowFastFailK.lib. Remade on every run (milliseconds).
ARM64_HAL_ROUTINES="KeGetCurrentIrql KfRaiseIrql KfLowerIrql"
LIB_ARM64="$WDK/Lib/$WDK_VERSION/km/ARM64"
mkdir -p "$LIB_ARM64"
arm64_lib() { # x64 import library, DLL name, output .lib, names to drop, names to add
    local def="$TC/$(basename "$3" .lib)-arm64.def"
    {
        printf 'LIBRARY %s\nEXPORTS\n' "$2"
        x86_64-w64-mingw32-nm -g "$1" | awk -v drop="$4" -v add="$5" '
            BEGIN { split(drop, d, " "); for (i in d) dropped[d[i]] = 1
                    split(add, a, " "); for (i in a) if (a[i] != "") code[a[i]] = imp[a[i]] = 1 }
            $2 == "I" && $3 ~ /^__imp_/ { name = substr($3, 7); imp[name] = 1 }
            $2 == "T" { code[$3] = 1 }
            END { for (n in imp) if (!(n in dropped)) print "    " n (n in code ? "" : " DATA") }' | sort
    } > "$def"
    llvm-dlltool -m arm64 -d "$def" -l "$3"
}
arm64_lib "$MINGW/lib/libntoskrnl.a" ntoskrnl.exe "$LIB_ARM64/ntoskrnl.lib" "$ARM64_HAL_ROUTINES" ""
arm64_lib "$MINGW/lib/libhal.a" hal.dll "$LIB_ARM64/hal.lib" "" "$ARM64_HAL_ROUTINES"
arm64_lib "$MINGW/lib/libwmilib.a" wmilib.sys "$LIB_ARM64/wmilib.lib" "" ""
for name in BufferOverflowFastFailK arm64rt; do
    if [ ! -s "$LIB_ARM64/$name.lib" ]; then
        printf 'LIBRARY ntoskrnl.exe\nEXPORTS\n    KeBugCheckEx\n' > "$TC/$name-arm64.def"
        llvm-dlltool -m arm64 -d "$TC/$name-arm64.def" -l "$LIB_ARM64/$name.lib"
    fi
done

# 4. wdk-build, downloaded by cargo at the exact version, copied and patched for a Linux host.
PATCHED="$TC/wdk-build-$WDK_BUILD_VERSION"
if [ ! -f "$PATCHED/.vcdirect-patched" ]; then
    FETCH="$TC/fetch-wdk-build"
    mkdir -p "$FETCH/src"
    cat > "$FETCH/Cargo.toml" <<TOML
[package]
name = "fetch-wdk-build"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
wdk-build = "=$WDK_BUILD_VERSION"

[workspace]
TOML
    : > "$FETCH/src/lib.rs"
    manifest="$(cargo metadata --format-version 1 --manifest-path "$FETCH/Cargo.toml" \
        --filter-platform x86_64-unknown-linux-gnu \
        | grep -o "\"manifest_path\":\"[^\"]*/wdk-build-$WDK_BUILD_VERSION/Cargo.toml\"" \
        | head -n1 | sed 's/^"manifest_path":"//; s/"$//')"
    [ -f "$manifest" ] || { log "cargo did not download wdk-build $WDK_BUILD_VERSION"; exit 1; }
    rm -rf "$PATCHED"
    cp -r "$(dirname "$manifest")" "$PATCHED"
    (cd "$PATCHED" && patch -p1 --quiet < "$ROOT/patches/wdk-build-$WDK_BUILD_VERSION-linux-host.patch")
    touch "$PATCHED/.vcdirect-patched"
    log "patched wdk-build $WDK_BUILD_VERSION in ${PATCHED#"$ROOT"/}"
fi

log "ready (WDKContentRoot=${WDK#"$ROOT"/})"
