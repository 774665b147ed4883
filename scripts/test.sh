#!/usr/bin/env bash
# The test command: installs what is missing, checks the shaders, builds with warnings as
# errors (Package.swift sets them for our targets) and runs every test on llvmpipe or a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/check-shaders.sh
# Every import of one of our targets must be a declared dependency, so the graph in Package.swift
# (and in the README) is the real one, not one that works only because all modules sit together.
swift build --build-tests --explicit-target-dependency-import-check error
# Tests run in parallel (Swift Testing's default): where a test counts pictures or gaps, the
# session's time comes from a manual clock, and every other wait is for an event, under a hang
# guard, never for an amount of time. Two kinds of suite run alone, afterwards: the census
# suites (...CensusTests) count the whole process's threads and descriptors, which other tests
# change while they run; OutputFailureTests' sessions count pictures on the real clock, within
# the hang guard, and a parallel run on two loaded cores (rendering tests on every core, two
# busy loops beside them) starved them below 30 pictures a minute; ReadmeEngineTests' first
# picture through the SDL link took 34 s of the 60 s guard in a parallel run (0.3 s alone).
# Arguments (--filter, ...) replace these runs with one run of what they ask.
if (( $# )); then
    exec swift test "$@"
fi
alone='CensusTests|OutputFailureTests|ReadmeEngineTests'
swift test --skip "$alone"
swift test --no-parallel --filter "$alone"
# The VA-API backend end to end through real libva and the project's validating test driver
# (Tests/VADriver): carwindow encode, a drive into the in-repo head unit, and the VA-API device
# tests, each without a broken rule or a leaked object.
scripts/va-test-driver.sh check
# A player joins a running RTP stream 5 s late and shows pictures within the IDR interval.
scripts/rtp-join-check.sh
