#!/usr/bin/env bash
# Heap allocations per drawn frame along the streaming path, in a release build: runs a short
# `carwindow drive` under heaptrack and attributes every allocation made by the frame loop
# (draw, NV12 conversion and readback, encode, send) to our code or to the GL driver it calls.
# Usage: scripts/frame-allocations.sh [seconds]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
scripts/install-deps.sh
if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null; then
    if [ "$(id -u)" = 0 ]; then apt-get install -y heaptrack; else sudo apt-get install -y heaptrack; fi
fi
swift build -c release --product carwindow
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
heaptrack -o "$work/trace" .build/release/carwindow drive --speed 4 --max-seconds "$seconds" --no-mp4 \
    --out "$work/drive.h264" > "$work/drive.log" 2>&1
frames=$(tr '\r' '\n' < "$work/drive.log" | sed -n 's/.*frames rendered \([0-9]*\), frames sent \([0-9]*\).*/\1 \2/p')
heaptrack_print "$work"/trace.*zst -F "$work/stacks.txt" --flamegraph-cost-type allocations > /dev/null
python3 scripts/frame_allocations.py "$work/stacks.txt" $frames
