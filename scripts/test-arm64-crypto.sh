#!/usr/bin/env bash
# Runs the engine's crypto tests for aarch64 under qemu-aarch64 (Linux user mode), built as the
# ARM64 driver is: `--cfg aes_armv8` and `+aes`, so RustCrypto `aes` 0.8 runs the ARMv8 AES
# instructions (sys/linux-cross.toml). The tests: IEEE 1619 vector 10, differential against
# `xts-mode` over `aes` 0.9, unit splits, and that crypto::backend() names the implementation
# that runs (driver/tests/xts.rs). `-cpu max` emulates a CPU
# with the crypto extension. Needs (scripts/setup-sys-toolchain.sh installs them): qemu-user,
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, rustup target aarch64-unknown-linux-gnu.
# Emulated speed means nothing; this is a correctness run.
# Usage: test-arm64-crypto.sh [--bench]  (--bench also runs `vcbench crypto` once under qemu)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TRIPLE=aarch64-unknown-linux-gnu
for tool in qemu-aarch64 aarch64-linux-gnu-gcc; do
    command -v "$tool" >/dev/null || { echo "test-arm64-crypto: $tool missing: run scripts/setup-sys-toolchain.sh" >&2; exit 1; }
done
rustup target list --installed | grep -qx "$TRIPLE" \
    || { echo "test-arm64-crypto: rustup target $TRIPLE missing: run scripts/setup-sys-toolchain.sh" >&2; exit 1; }

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+aes --cfg aes_armv8"

cd "$ROOT"
echo "test-arm64-crypto: driver/tests/xts.rs, $TRIPLE under qemu-aarch64 -cpu max"
cargo test -q -p vcdirect --target "$TRIPLE" --test xts
cargo test -q -p vcdirect-aes-hw --target "$TRIPLE"
if [ "${1:-}" = "--bench" ]; then
    echo "test-arm64-crypto: vcbench crypto under qemu (correctness only; emulated speed means nothing)"
    cargo run -q --release -p vcdirect-usermode --bin vcbench --target "$TRIPLE" -- crypto
fi
echo "test-arm64-crypto: PASS"
