#!/usr/bin/env bash
# The test command: installs what is missing, checks the shaders, builds with warnings as
# errors (Package.swift sets them for our targets) and runs every test on llvmpipe or a GPU,
# one at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/check-shaders.sh
# Every import of one of our targets must be a declared dependency, so the graph in Package.swift
# (and in the README) is the real one, not one that works only because all modules sit together.
swift build --build-tests --explicit-target-dependency-import-check error
# One test at a time: the session tests measure frame pacing against the wall clock, which
# other suites' encoders and ffmpeg processes would skew on a small machine.
swift test --no-parallel "$@"
