#!/bin/sh
# RUSTC_WRAPPER for scripts/build-sys.sh's lint pass: runs clippy on our two crates of the
# driver build (vcdirect with feature kernel, vcdirect-sys) and plain rustc on the rest.
# (`cargo clippy` would lint only sys/'s workspace members, which excludes driver/.)
rustc="$1"
shift
case "${CARGO_PKG_NAME:-}" in
    vcdirect | vcdirect-sys) exec "${CLIPPY_DRIVER:?}" "$rustc" "$@" ;;
    *) exec "$rustc" "$@" ;;
esac
