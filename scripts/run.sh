#!/usr/bin/env bash
# The main job: a simulated drive through the bundled Helsinki data, streamed as H.264 by a
# projection session (out/drive.h264, out/drive.mp4), then stills by day and night (out/*.png).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product carwindow
bin=.build/release/carwindow
mkdir -p out
echo "== carwindow drive"
"$bin" drive --out out/drive.h264 "$@"
if command -v ffprobe >/dev/null; then
    echo "== ffprobe out/drive.mp4"
    ffprobe -v error -show_entries stream=codec_name,profile,width,height,nb_frames,duration -of default=nw=1 out/drive.mp4
fi
render() { # name style args...
    local name=$1 style=$2; shift 2
    echo "== out/$name.png"
    "$bin" render --style "$style" --size 1280x720 --out "out/$name.png" "$@"
}
render helsinki-day day --zoom 16 --bearing=30 --pitch 45 --frames 30 --vehicle-heading 30
render helsinki-night night --zoom 16.5 --bearing=-40 --pitch 55 --frames 30 --vehicle-heading=-40
echo "Done: $(ls out/drive.* out/*.png | tr '\n' ' ')"
