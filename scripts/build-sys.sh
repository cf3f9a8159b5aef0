#!/usr/bin/env bash
# Builds the WDM driver images on Linux (run scripts/setup-sys-toolchain.sh first):
#   target/sys/x64/vcdirect.sys       the product build (x64)
#   target/sys/x64-wine/vcdirect.sys  feature wine-host (the image the Wine smoke test loads)
#   target/sys/arm64/vcdirect.sys     the product build (ARM64, ARMv8 AES: sys/README.md "ARM64")
# Release profile, warnings denied, after a clippy pass over the kernel code (SYS_LINT=0 skips it).
# Every image is test-signed (W16) with a certificate the build makes once under
# target/sys/test-signing (never committed); that certificate is copied next to each image as
# vcdirect-test.cer. Usage: build-sys.sh [x64|x64-wine|arm64]... (default: all three)
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
# ARM64: no DDK header set on Linux has an ARM64 branch, so the aarch64 bindings are generated from
# the same headers configured as x64 (both LLP64; the layouts the glue uses are asserted against
# the ARM64 figures in driver/src/wdm/arm64-layouts.tsv, W14). bindgen reads this variable instead
# of the generic one for that target; it undoes the ARM64 defines wdk-build passes.
BINDGEN_EXTRA_CLANG_ARGS_aarch64_pc_windows_msvc="--target=x86_64-pc-windows-msvc -U_ARM64_ -UARM64 \
-U_USE_DECLSPECS_FOR_SAL -USTD_CALL -D_WIN64 -D_AMD64_ -DAMD64 $BINDGEN_EXTRA_CLANG_ARGS"
export BINDGEN_EXTRA_CLANG_ARGS_aarch64_pc_windows_msvc

# sys/Cargo.lock is committed as Windows resolves it (wdk-build from crates.io); the [patch] of
# linux-cross.toml rewrites that entry on every run. Put the committed file back on exit.
LOCK_SAVED="$(mktemp)"
cp "$ROOT/sys/Cargo.lock" "$LOCK_SAVED"
trap 'cp "$LOCK_SAVED" "$ROOT/sys/Cargo.lock"; rm -f "$LOCK_SAVED"' EXIT

# Lint pass (SYS_LINT=0 skips it): clippy over the kernel code, which the main workspace's
# `cargo clippy` never compiles. Its own target dir keeps the wrapper out of the release build.
if [ "${SYS_LINT:-1}" != 0 ]; then
    echo "build-sys: clippy (kernel feature, wine-host feature; x64 and ARM64)"
    CLIPPY_DRIVER="$(rustup which clippy-driver)" RUSTC_WRAPPER="$ROOT/scripts/sys-clippy-wrapper.sh" \
        cargo check --release --manifest-path "$ROOT/sys/Cargo.toml" --target "$TRIPLE" \
        --config "$ROOT/sys/linux-cross.toml" --target-dir "$ROOT/sys/target/clippy" --features wine-host
    CLIPPY_DRIVER="$(rustup which clippy-driver)" RUSTC_WRAPPER="$ROOT/scripts/sys-clippy-wrapper.sh" \
        cargo check --release --manifest-path "$ROOT/sys/Cargo.toml" --target "$TRIPLE" \
        --config "$ROOT/sys/linux-cross.toml" --target-dir "$ROOT/sys/target/clippy"
    CLIPPY_DRIVER="$(rustup which clippy-driver)" RUSTC_WRAPPER="$ROOT/scripts/sys-clippy-wrapper.sh" \
        cargo check --release --manifest-path "$ROOT/sys/Cargo.toml" --target aarch64-pc-windows-msvc \
        --config "$ROOT/sys/linux-cross.toml" --target-dir "$ROOT/sys/target/clippy"
fi

# W16: the test code-signing certificate, made once (RSA 3072, 10 years, codeSigning EKU). The
# private key never leaves target/; delete target/sys/test-signing to make a new one.
SIGNING="$ROOT/target/sys/test-signing"
if [ ! -s "$SIGNING/vcdirect-test.pem" ] || [ ! -s "$SIGNING/vcdirect-test.key" ]; then
    echo "build-sys: making a test code-signing certificate (target/sys/test-signing)"
    mkdir -p "$SIGNING"
    chmod 700 "$SIGNING"
    openssl req -x509 -newkey rsa:3072 -sha256 -days 3650 -nodes -batch \
        -subj "/CN=vcdirect test signing (not trusted by default)" \
        -addext "keyUsage=critical,digitalSignature" -addext "extendedKeyUsage=codeSigning" \
        -addext "basicConstraints=critical,CA:FALSE" \
        -keyout "$SIGNING/vcdirect-test.key" -out "$SIGNING/vcdirect-test.pem" 2>/dev/null
fi
# Embeds an Authenticode signature (SHA-256, no timestamp: there is no network here) and writes
# the PE checksum; copies the signing certificate (public part, PEM: Windows imports a Base-64
# .cer file as it is) next to the image as vcdirect-test.cer.
sign_image() { # unsigned image, signed image
    rm -f "$2"
    osslsigncode sign -h sha256 -certs "$SIGNING/vcdirect-test.pem" -key "$SIGNING/vcdirect-test.key" \
        -n "vcdirect" -in "$1" -out "$2" >/dev/null
    cp "$SIGNING/vcdirect-test.pem" "$(dirname "$2")/vcdirect-test.cer"
}

flavours=("$@")
[ ${#flavours[@]} -gt 0 ] || flavours=(x64 x64-wine arm64)
for flavour in "${flavours[@]}"; do
    case "$flavour" in
        x64) triple=x86_64-pc-windows-msvc features=() ;;
        x64-wine) triple=x86_64-pc-windows-msvc features=(--features wine-host) ;;
        # linux-cross.toml builds aarch64 with --cfg aes_armv8 and +aes (ARMv8 AES in `aes` 0.8).
        arm64) triple=aarch64-pc-windows-msvc features=() ;;
        *) echo "build-sys: unknown flavour $flavour" >&2; exit 2 ;;
    esac
    echo "build-sys: $flavour"
    cargo build --release --manifest-path "$ROOT/sys/Cargo.toml" --target "$triple" \
        --config "$ROOT/sys/linux-cross.toml" "${features[@]}"
    out="$ROOT/target/sys/$flavour"
    mkdir -p "$out"
    cp "$ROOT/sys/target/$triple/release/vcdirect_sys.pdb" "$out/vcdirect.pdb"
    # The linker map (wdk-build passes /MAP) lets check-sys.sh find the entry point's symbol.
    cp "$ROOT/sys/target/$triple/release/deps/vcdirect_sys.map" "$out/vcdirect.map"
    sign_image "$ROOT/sys/target/$triple/release/vcdirect_sys.dll" "$out/vcdirect.sys"
    echo "build-sys: target/sys/$flavour/vcdirect.sys (test-signed)"
done
