#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine with rustup: the Windows targets the
# engine is checked for, the nightly toolchain and cargo-fuzz. Idempotent.
set -euo pipefail
rustup target add x86_64-pc-windows-msvc aarch64-pc-windows-msvc x86_64-pc-windows-gnu >/dev/null
rustup component add clippy rustfmt >/dev/null
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal >/dev/null
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
