#!/usr/bin/env bash
# Lints the kernel glue: clippy over the two crates of the driver build (vcdirect with feature
# kernel, vcdirect-sys), for the product build and the wine-host build, in each profile asked
# for. `cargo check` through scripts/sys-clippy-wrapper.sh: nothing is linked, so the debug pass
# costs a compile of the metadata only. The main workspace's `cargo clippy` never compiles this
# code (feature kernel, Windows target). Run scripts/setup-sys-toolchain.sh first.
# Usage: lint-sys.sh [debug|release]... (default: debug release)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TC="$ROOT/target/sys-toolchain"
[ -f "$TC/wdk-build-0.6.0/.vcdirect-patched" ] || { echo "lint-sys: run scripts/setup-sys-toolchain.sh first" >&2; exit 1; }

# BINDGEN_EXTRA_CLANG_ARGS, no RUSTFLAGS, keep_lock.
. "$ROOT/scripts/sys-env.sh"
keep_lock "$ROOT/sys/Cargo.lock"
TRIPLE=x86_64-pc-windows-msvc

profiles=("$@")
[ ${#profiles[@]} -gt 0 ] || profiles=(debug release)
for profile in "${profiles[@]}"; do
    case "$profile" in
        debug) release=() ;;
        release) release=(--release) ;;
        *) echo "lint-sys: unknown profile $profile" >&2; exit 2 ;;
    esac
    # x64 wine-host, x64 product, and the ARM64 product in release (its code differs from x64's
    # only in wdm/arm64.rs, the chkstk and the layout figures).
    builds=("$TRIPLE --features=wine-host" "$TRIPLE")
    [ "$profile" = debug ] || builds+=("aarch64-pc-windows-msvc")
    for build in "${builds[@]}"; do
        read -r triple features <<<"$build"
        echo "lint-sys: clippy $profile $triple ${features:-(product)}"
        # Its own target dir keeps the wrapper's output away from build-sys.sh's images.
        CLIPPY_DRIVER="$(rustup which clippy-driver)" RUSTC_WRAPPER="$ROOT/scripts/sys-clippy-wrapper.sh" \
            cargo check "${release[@]}" --manifest-path "$ROOT/sys/Cargo.toml" --target "$triple" \
            --config "$ROOT/sys/linux-cross.toml" --target-dir "$ROOT/sys/target/clippy" ${features:+"$features"}
    done
done
