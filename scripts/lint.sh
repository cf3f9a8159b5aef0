#!/usr/bin/env bash
# Lints the main workspace: links and cited paths in the docs (scripts/check-docs.py), rustfmt, then clippy over every crate and target (tests, benches,
# binaries) in debug and in release, warnings denied by the crates' [lints] tables, then the
# docs (rustdoc, warnings denied: broken or private links). The kernel glue (feature kernel,
# Windows target) is linted by scripts/lint-sys.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# The repository's words point at the repository: links, cited docs/ paths, no internal
# labels; the self-test proves each check reports its mistake.
python3 scripts/check-docs.py --self-test
python3 scripts/check-docs.py
cargo fmt --all -- --check
echo "lint: clippy debug"
cargo clippy -q --workspace --all-targets
echo "lint: clippy release"
cargo clippy -q --workspace --all-targets --release
# The Wine end to end's master_key example needs vcctl's feature wine-e2e.
cargo clippy -q -p vcctl --features wine-e2e --examples
echo "lint: rustdoc"
RUSTDOCFLAGS="-D warnings" cargo doc -q --workspace --no-deps
