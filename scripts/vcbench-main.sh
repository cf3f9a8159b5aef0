#!/usr/bin/env bash
# Builds vcbench in release and runs the main benchmark on a temporary 1 GiB file (removed
# afterwards), every profile and mode, 3 interleaved rounds: the six DiskSpd profiles and
# CrystalDiskMark's SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1 and RND4K Q1T1 (reads). About 5
# minutes with all four modes (10 profiles x 4 modes x 3 rounds x 2.5 s); extra arguments are
# passed to vcbench (e.g. --host model:nvme,max-transfer=128K).
# Output: target/vcbench/{crypto.json,main.json,main.svg}.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p vcdirect-usermode --bin vcbench
out=target/vcbench
mkdir -p "$out"
bin=target/release/vcbench
"$bin" crypto --json "$out/crypto.json"
"$bin" --file "$out/vcbench-main.dat" --size 1G -d 2 -W 0.5 --pairs 3 -L \
    --json "$out/main.json" --chart "$out/main.svg" "$@"
