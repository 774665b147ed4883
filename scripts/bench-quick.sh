#!/usr/bin/env bash
# CI's benchmark step: release build of carwindow-bench, its self-check, then the quick run
# (800x480, under 2 minutes on a 2-core llvmpipe machine) whose sanity checks fail the job.
# Extra arguments go to carwindow-bench (e.g. --glyphs DIR --python PATH for the MapLibre peer).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests            # ffmpeg decodes our streams for the frame-count and Y-PSNR checks
swift build -c release --product carwindow-bench
bin=$(swift build -c release --show-bin-path)/carwindow-bench
"$bin" --self-check
"$bin" --quick --require-ffmpeg "$@"
