#!/usr/bin/env bash
# The test command: installs what is missing, checks the shaders, builds with warnings as
# errors (Package.swift sets them for our targets) and runs every test on llvmpipe or a GPU,
# one at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/check-shaders.sh
swift build --build-tests
# One test at a time: the session tests measure frame pacing against the wall clock, which
# other suites' encoders and ffmpeg processes would skew on a small machine.
swift test --no-parallel "$@"
