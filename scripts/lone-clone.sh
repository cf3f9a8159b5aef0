#!/usr/bin/env bash
# The repository stands alone: clones it (the committed HEAD) into an empty temporary folder
# with nothing next to it and runs the unit stage's tests there, so a test, build script or
# include that reads a path outside the repository fails here. The clone builds into this
# checkout's target/ (CARGO_TARGET_DIR; cargo keeps the two workspaces' crates apart by path),
# so dependencies are not compiled twice; the sources and CARGO_MANIFEST_DIR are the clone's.
# Uncommitted changes are not in the clone (a note says so).
#
#   scripts/lone-clone.sh                   the unit stage's tests and a debug vcsim smoke run
#   scripts/lone-clone.sh -p vcctl --test X  only those (arguments go to `cargo test`)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "lone-clone: note: uncommitted changes are not in the clone; it tests HEAD $(git rev-parse --short HEAD)"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q --no-hardlinks "$root" "$tmp/vcdirect"
# The premise: nothing but the clone in its parent folder, so any relative path that climbs
# out of the repository finds nothing.
others=$(find "$tmp" -mindepth 1 -maxdepth 1 ! -name vcdirect | wc -l)
if [ "$others" -ne 0 ]; then
    echo "lone-clone: FAILED: the clone's folder is not alone"
    exit 1
fi
echo "lone-clone: HEAD $(git -C "$tmp/vcdirect" rev-parse --short HEAD) in an empty folder"
cd "$tmp/vcdirect"
export CARGO_TARGET_DIR="$root/target"
if [ $# -gt 0 ]; then
    cargo test -q "$@"
else
    cargo test -q --workspace
    cargo test -q -p vcdirect --features allocation-injection --test allocation_injection
    # The debug simulator's smoke run: debug assertions on, over a few seeds, reusing the
    # debug build the tests just made (the sim stage runs the release simulator).
    cargo run -q -p vcdirect-usermode --bin vcsim -- --seeds 0..20
fi
echo "lone-clone: the unit tests pass with nothing next to the repository"
