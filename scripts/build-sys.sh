#!/usr/bin/env bash
# Builds the WDM driver images on Linux (run scripts/setup-sys-toolchain.sh first):
#   target/sys/x64/vcdirect.sys       the product build
#   target/sys/x64-wine/vcdirect.sys  feature wine-host (the image the Wine smoke test loads)
# Release profile, warnings denied, after a clippy pass over the kernel code (SYS_LINT=0 skips it)
# and before an ARM64 check of the engine (SYS_ARM64_CHECK=0 skips it).
# Usage: build-sys.sh [x64|x64-wine]... (default: both)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TC="$ROOT/target/sys-toolchain"
[ -f "$TC/wdk-build-0.6.0/.vcdirect-patched" ] || { echo "build-sys: run scripts/setup-sys-toolchain.sh first" >&2; exit 1; }

# bindgen over mingw's headers: wdk-build passes -fms-compatibility, which hides __GNUC__ that
# mingw's headers need; clang's own include folder gives mmintrin.h; mingw-compat.h declares
# what mingw-w64 10 lacks.
BINDGEN_EXTRA_CLANG_ARGS="-fgnuc-version=4.2.1 -I$(clang -print-resource-dir)/include -include $ROOT/sys/mingw-compat.h"
export BINDGEN_EXTRA_CLANG_ARGS
# RUSTFLAGS would replace the target rustflags of sys/linux-cross.toml (+crt-static). Warnings are
# denied by the [lints] tables of sys/ and driver/ (warnings = "deny", clippy::all = "deny").
unset RUSTFLAGS
TRIPLE=x86_64-pc-windows-msvc

# sys/Cargo.lock is committed as Windows resolves it (wdk-build from crates.io); the [patch] of
# linux-cross.toml rewrites that entry on every run. Put the committed file back on exit.
LOCK_SAVED="$(mktemp)"
cp "$ROOT/sys/Cargo.lock" "$LOCK_SAVED"
trap 'cp "$LOCK_SAVED" "$ROOT/sys/Cargo.lock"; rm -f "$LOCK_SAVED"' EXIT

# Lint pass (SYS_LINT=0 skips it): clippy over the kernel code, which the main workspace's
# `cargo clippy` never compiles. Its own target dir keeps the wrapper out of the release build.
if [ "${SYS_LINT:-1}" != 0 ]; then
    echo "build-sys: clippy (kernel feature, wine-host feature)"
    CLIPPY_DRIVER="$(rustup which clippy-driver)" RUSTC_WRAPPER="$ROOT/scripts/sys-clippy-wrapper.sh" \
        cargo check --release --manifest-path "$ROOT/sys/Cargo.toml" --target "$TRIPLE" \
        --config "$ROOT/sys/linux-cross.toml" --target-dir "$ROOT/sys/target/clippy" --features wine-host
    CLIPPY_DRIVER="$(rustup which clippy-driver)" RUSTC_WRAPPER="$ROOT/scripts/sys-clippy-wrapper.sh" \
        cargo check --release --manifest-path "$ROOT/sys/Cargo.toml" --target "$TRIPLE" \
        --config "$ROOT/sys/linux-cross.toml" --target-dir "$ROOT/sys/target/clippy"
fi

flavours=("$@")
[ ${#flavours[@]} -gt 0 ] || flavours=(x64 x64-wine)
for flavour in "${flavours[@]}"; do
    case "$flavour" in
        x64) features=() ;;
        x64-wine) features=(--features wine-host) ;;
        *) echo "build-sys: unknown flavour $flavour" >&2; exit 2 ;;
    esac
    echo "build-sys: $flavour"
    cargo build --release --manifest-path "$ROOT/sys/Cargo.toml" --target "$TRIPLE" \
        --config "$ROOT/sys/linux-cross.toml" "${features[@]}"
    mkdir -p "$ROOT/target/sys/$flavour"
    cp "$ROOT/sys/target/$TRIPLE/release/vcdirect_sys.dll" "$ROOT/target/sys/$flavour/vcdirect.sys"
    cp "$ROOT/sys/target/$TRIPLE/release/vcdirect_sys.pdb" "$ROOT/target/sys/$flavour/vcdirect.pdb"
    # The linker map (wdk-build passes /MAP) lets check-sys.sh find the entry point's symbol.
    cp "$ROOT/sys/target/$TRIPLE/release/deps/vcdirect_sys.map" "$ROOT/target/sys/$flavour/vcdirect.map"
    echo "build-sys: target/sys/$flavour/vcdirect.sys"
done

# ARM64: the engine must keep compiling for aarch64-pc-windows-msvc. The ARM64 .sys itself is
# blocked (sys/README.md "ARM64"): no Linux-available DDK header set covers ARM64.
if [ "${SYS_ARM64_CHECK:-1}" != 0 ]; then
    echo "build-sys: cargo check -p vcdirect --target aarch64-pc-windows-msvc (engine only)"
    cargo check -p vcdirect --target aarch64-pc-windows-msvc --manifest-path "$ROOT/Cargo.toml"
fi
