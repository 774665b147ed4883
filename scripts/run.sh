#!/usr/bin/env bash
# The main job: renders views of the bundled Helsinki data by day and by night into out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product carwindow
bin=.build/release/carwindow
mkdir -p out
render() { # name style args...
    local name=$1 style=$2; shift 2
    echo "== out/$name.png"
    "$bin" render --style "$style" --size 1280x720 --out "out/$name.png" "$@"
}
render helsinki-day day --zoom 16 --bearing=30 --pitch 45 --frames 30 --vehicle-heading 30
render helsinki-day-flat day --zoom 15.5
render helsinki-night night --zoom 16.5 --bearing=-40 --pitch 55 --frames 30 --vehicle-heading=-40
render helsinki-night-flat night --zoom 15.5
echo "Done: $(ls out/*.png | tr '\n' ' ')"
