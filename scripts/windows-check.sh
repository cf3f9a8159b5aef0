#!/usr/bin/env bash
# Checks that the engine compiles for both Windows targets (x64, ARM64) in debug and release,
# and vcctl for Windows (the mingw target its Windows build uses). Check only: the driver
# images are built by scripts/build-sys.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
for t in x86_64-pc-windows-msvc aarch64-pc-windows-msvc; do
    cargo check -q -p vcdirect --target "$t"
    cargo check -q -p vcdirect --target "$t" --release
done
cargo check -q -p vcctl --target x86_64-pc-windows-gnu
