#!/usr/bin/env bash
# GL calls per frame of the map's draw path, counted from an apitrace of `carwindow render`:
# calls, draw calls, uniform sets and state changes (and how many of those set what the frame
# had already set) in a steady frame of an unchanged view. For comparing a change to the draw
# path with the commit before it on the same scene.
# Usage: scripts/gl-calls.sh [debug|release] [extra `carwindow render` options]
#   the counts do not depend on the configuration; debug builds faster.
#   default scene: Helsinki, day style, zoom 16, pitch 50, bearing 30, vehicle, controls, 800x480.
set -euo pipefail
cd "$(dirname "$0")/.."
configuration=${1:-debug}
shift || true
if ! command -v apitrace >/dev/null; then
    if [ "$(id -u)" = 0 ]; then apt-get install -y apitrace; else sudo apt-get install -y apitrace; fi
fi
swift build -c "$configuration" --product carwindow
bin=$(swift build -c "$configuration" --show-bin-path)/carwindow
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The CLI ends with _exit, so apitrace never flushes the last part of its trace: enough frames
# that whole steady frames reach the file before it (the analysis drops a cut frame).
apitrace trace --api egl -o "$work/render.trace" "$bin" render --frames 120 --zoom 16 --pitch 50 --bearing 30 \
    --vehicle-heading 30 --size 800x480 --out "$work/map.png" "$@" > "$work/render.log" 2>&1 \
    || { cat "$work/render.log"; exit 1; }
apitrace dump --call-nos=no --arg-names=no "$work/render.trace" > "$work/calls.txt"
python3 scripts/gl_calls.py "$work/calls.txt"
