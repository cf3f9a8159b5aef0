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

# BINDGEN_EXTRA_CLANG_ARGS (x64 and the aarch64 bindings from x64-configured headers), no
# RUSTFLAGS, keep_lock.
. "$ROOT/scripts/sys-env.sh"
keep_lock "$ROOT/sys/Cargo.lock"

# Lint pass (SYS_LINT=0 skips it; scripts/test-all.sh runs scripts/lint-sys.sh itself).
if [ "${SYS_LINT:-1}" != 0 ]; then
    "$ROOT/scripts/lint-sys.sh" release
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
    # Panic and #[track_caller] locations are strings in the image: remapped, so the shipped
    # image names `vcdirect/driver/src/...` and `cargo/registry/...`, never this machine's paths
    # (check-sys.sh checks it). --config arrays are appended to linux-cross.toml's rustflags.
    remap="[\"--remap-path-prefix=$ROOT=vcdirect\", \"--remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=cargo\"]"
    cargo build --release --manifest-path "$ROOT/sys/Cargo.toml" --target "$triple" \
        --config "$ROOT/sys/linux-cross.toml" --config "target.$triple.rustflags=$remap" \
        "${features[@]}"
    out="$ROOT/target/sys/$flavour"
    mkdir -p "$out"
    cp "$ROOT/sys/target/$triple/release/vcdirect_sys.pdb" "$out/vcdirect.pdb"
    # The linker map (wdk-build passes /MAP) lets check-sys.sh find the entry point's symbol.
    cp "$ROOT/sys/target/$triple/release/deps/vcdirect_sys.map" "$out/vcdirect.map"
    sign_image "$ROOT/sys/target/$triple/release/vcdirect_sys.dll" "$out/vcdirect.sys"
    echo "build-sys: target/sys/$flavour/vcdirect.sys (test-signed)"
done
