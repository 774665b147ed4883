#!/usr/bin/env bash
# Runs the tests of the concurrent parts (session, SDL link, projection link, protected streaming, held head-unit
# state, voice prompts, frame pacer) under ThreadSanitizer and the tests of the codecs (SDL
# frames and BSON, H.264 bitstream, vector tiles,
# PMTiles and the other tile sources) under AddressSanitizer, each build in its own scratch path
# (.build-tsan, .build-asan) so the normal build stays as it is.
#
# usage: scripts/sanitize.sh [thread|address]...   (default: both)
#   SANITIZE_THREAD_SUITES / SANITIZE_ADDRESS_SUITES replace the suites (a regex for --filter).
#
# Prints each phase's time and every sanitizer report (the data races' two stacks are in
# .build-tsan/sanitize.log). Exits 1 when a sanitizer reported anything, a test failed or the
# tests did not run to the end: no test's verdict depends on the wall clock, so the sanitizers'
# slowdown (5-15x) changes none. SANITIZE_STRICT=0 lists failed tests without failing the run.
set -euo pipefail
cd "$(dirname "$0")/.."

thread_suites=${SANITIZE_THREAD_SUITES:-'ProjectionSessionTests|SessionLifecycleRaceTests|SDLLinkTests|SDLHostileHeadUnitTests|SDLProjectionLinkTests|SDLHeadUnitStateTests|SDLAudioTests|FramePacerTests|ProtectedStreamingTests'}
address_suites=${SANITIZE_ADDRESS_SUITES:-'SDLCodecTests|SDLHostileHeadUnitTests|NonFiniteStyleValueTests|H264BitstreamTests|SkipPictureStreamTests|VectorTileDecodingTests|TileSourceTests|TileFuzzTests|TileIDTests'}
kinds=("$@")
(( ${#kinds[@]} )) || kinds=(thread address)

# The Swift runtime's backtracer would catch a crash before the sanitizer reports it.
export SWIFT_BACKTRACE=enable=no
# Two of SessionLifecycleRaceTests' eight seeds: the plain test run has all of them, and here
# each costs about 20 s.
export CARWINDOW_RACE_SEEDS=${CARWINDOW_RACE_SEEDS:-2}
export TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1 history_size=4 suppressions=$PWD/scripts/tsan-suppressions.txt}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1 detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan-suppressions.txt print_suppressions=0}

failed=0
for kind in "${kinds[@]}"; do
    case $kind in
        thread) scratch=.build-tsan suites=$thread_suites ;;
        address) scratch=.build-asan suites=$address_suites ;;
        *) echo "sanitize.sh: '$kind' is neither thread nor address" >&2; exit 2 ;;
    esac
    log=$scratch/sanitize.log
    mkdir -p "$scratch"
    echo "== $kind sanitizer: building ($scratch)"
    start=$SECONDS
    # The test bundle alone: the benchmark and fuzz executables are not needed here, and
    # sanitized builds of them cost CI about a minute.
    if ! swift build --product CarWindowPackageTests --sanitize="$kind" --scratch-path "$scratch" > "$scratch/build.log" 2>&1; then
        tail -n 30 "$scratch/build.log"
        echo "sanitize.sh: the $kind-sanitized build failed (log: $scratch/build.log)" >&2
        exit 2
    fi
    build_time=$(( SECONDS - start ))
    echo "built in $build_time s; testing $suites"
    start=$SECONDS
    status=0
    # One test at a time: on two cores a parallel run under ThreadSanitizer is no faster (121 s
    # against 111 s), and one test's reports are easier to read when nothing else runs.
    swift test --skip-build --no-parallel --sanitize="$kind" --scratch-path "$scratch" --filter "$suites" \
        > "$log" 2>&1 || status=$?
    test_time=$(( SECONDS - start ))
    races=$(grep -c 'WARNING: ThreadSanitizer' "$log" || true)
    asan=$(grep -c -E 'ERROR: (AddressSanitizer|LeakSanitizer)' "$log" || true)
    summary=$(grep -E 'Test run with [0-9]+ tests' "$log" | tail -n 1 || true)
    echo "tested in $test_time s (exit $status): $summary"
    if (( races > 0 )); then
        echo "ThreadSanitizer: $races reports; the first lines of each:"
        grep -A 12 'WARNING: ThreadSanitizer' "$log" | grep -E 'WARNING|#[0-3] |Previous|Location|Mutex' | head -n 80
        failed=1
    fi
    if (( asan > 0 )); then
        echo "AddressSanitizer: $asan reports:"
        grep -A 20 -E 'ERROR: (AddressSanitizer|LeakSanitizer)' "$log" | head -n 60
        failed=1
    fi
    if ! grep -q -E 'Test run with [0-9]+ tests? in [0-9]+ suites? (passed|failed)' "$log"; then
        echo "the tests did not run to the end (exit $status): see $log"
        tail -n 20 "$log"
        failed=1
    elif grep -q -E '^✘ Test .* failed after' "$log"; then
        echo "tests that failed under the $kind sanitizer:"
        grep -E '^✘ Test .* failed after' "$log" | sed 's/^/  /'
        [[ ${SANITIZE_STRICT:-1} == 1 ]] && failed=1
    fi
    echo "log: $log"
done
exit $failed
