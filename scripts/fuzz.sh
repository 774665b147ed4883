#!/usr/bin/env bash
# Coverage-guided fuzzing of the readers of untrusted input (SDL frames and messages, BSON, RPC
# JSON, vector tiles, PMTiles, styles, expressions, touch gestures, GeoJSON, the browser head
# unit's requests, RTCP feedback) with libFuzzer and AddressSanitizer.
#
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS  how long each target runs (default 30)
#   TARGET   sdl-stream sdl-limits bson rpc mvt pmtiles style expression touch geojson web-control rtcp security
#            (default: all)
#
# Builds Fuzz/carwindow-fuzz in its own scratch path (.build-fuzz), then runs each target from
# its seed corpus (Fuzz/corpus/TARGET, crash inputs kept as regression-* seeds; sdl-limits also
# reads sdl-stream's) with its dictionary (Fuzz/dictionaries). Results go to FUZZ_RESULTS (default out/fuzz): per target the
# log, the inputs that crashed (crash-*, leak-*, timeout-*, oom-*) and the corpus grown in this
# run. Prints executions, exec/s, coverage and crashes per target; exits 1 when any target
# crashed (the first crash stops a target), 2 when the build or a run failed.
#
# FUZZ_KEEP_GOING=1 keeps a target fuzzing after a crash (libFuzzer's fork mode), to collect
# every distinct crash within the time; the statistics then come from the fork-mode lines.
# A crash input replays without the sanitizers in the plain build:
#   swift build --product carwindow-fuzz && .build/debug/carwindow-fuzz TARGET FILE
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(sdl-stream sdl-limits bson rpc mvt pmtiles style expression touch geojson web-control rtcp security)
seconds=${1:-30}
if ! [[ $seconds =~ ^[0-9]+$ ]] || (( seconds < 1 )); then
    echo "fuzz.sh: SECONDS must be a whole number of seconds, not '$seconds'" >&2
    exit 2
fi
shift $(( $# > 0 ? 1 : 0 ))
targets=("$@")
(( ${#targets[@]} )) || targets=("${all_targets[@]}")
for target in "${targets[@]}"; do
    if [[ ! " ${all_targets[*]} " == *" $target "* ]]; then
        echo "fuzz.sh: unknown target '$target'; the targets are: ${all_targets[*]}" >&2
        exit 2
    fi
done
results=${FUZZ_RESULTS:-out/fuzz}

# libFuzzer's driver without its main (carwindow-fuzz has its own), from the toolchain's clang
# runtime; the layout differs between toolchains.
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")
arch=$(uname -m)
library=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$arch".a \
              "$toolchain"/lib/clang/*/lib/"$arch"-unknown-linux-gnu/libclang_rt.fuzzer_no_main.a 2>/dev/null | head -n 1 || true)
if [[ -z $library ]]; then
    echo "fuzz.sh: libFuzzer (libclang_rt.fuzzer_no_main) is not in the Swift toolchain at $toolchain;" \
         "use a swift.org toolchain for Linux, which ships it" >&2
    exit 2
fi

echo "== building carwindow-fuzz with libFuzzer and AddressSanitizer (.build-fuzz)"
build_start=$SECONDS
if ! CARWINDOW_FUZZING=$library swift build -c release --scratch-path .build-fuzz --product carwindow-fuzz; then
    echo "fuzz.sh: the fuzz build failed" >&2
    exit 2
fi
echo "built in $(( SECONDS - build_start )) s"
fuzzer=.build-fuzz/release/carwindow-fuzz

mkdir -p "$results"
summary="$results/summary.txt"
printf '%-11s %11s %8s %6s %6s %7s %7s  %s\n' target executions exec/s secs cov ft crashes result | tee "$summary"
crashed=0 failed=0
for target in "${targets[@]}"; do
    out="$results/$target"
    rm -rf "$out"
    mkdir -p "$out/corpus"
    options=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
             -artifact_prefix="$out/")
    # sdl-limits reads the same streams as sdl-stream.
    family=${target/sdl-limits/sdl-stream}
    seeds=("Fuzz/corpus/$family")
    [[ $target == "$family" || ! -d Fuzz/corpus/$target ]] || seeds+=("Fuzz/corpus/$target")
    [[ -f Fuzz/dictionaries/$family.dict ]] && options+=(-dict="Fuzz/dictionaries/$family.dict")
    [[ ${FUZZ_KEEP_GOING:-0} == 1 ]] && options+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    start=$SECONDS
    status=0
    # The Swift runtime's own backtracer would catch the trap first, and trips ASan doing it.
    CARWINDOW_FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
        "$fuzzer" "${options[@]}" "$out/corpus" "${seeds[@]}" > "$out/log" 2>&1 || status=$?
    elapsed=$(( SECONDS - start ))
    # Final statistics, or in fork mode the last progress line ("#N: cov: C ft: F ...").
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -n 1)
    progress=$(grep -E '^#[0-9]+:?[[:space:]].*cov: [0-9]+' "$out/log" | tail -n 1 || true)
    [[ -n $executions ]] || executions=$(sed -E -n 's/^#([0-9]+).*/\1/p' <<< "$progress")
    # The same rate in both modes (fork mode's own figure is per job): executions over wall time.
    rate=
    if [[ -n $executions ]] && (( elapsed > 0 )); then rate=$(( executions / elapsed )); fi
    cov=$(sed -E -n 's/.*cov: ([0-9]+).*/\1/p' <<< "$progress")
    ft=$(sed -E -n 's/.*ft: ([0-9]+).*/\1/p' <<< "$progress")
    crashes=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    if (( crashes > 0 )); then
        # The reason: a fatal error's message, else the trap's frame, else the sanitizer's line;
        # then the first frame in the library.
        reason=$(grep -m 1 -E 'Fatal error' "$out/log" || grep -m 1 -o -E 'Swift runtime failure: [^/]*' "$out/log" ||
                 grep -m 1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)' "$out/log" || true)
        where=$(grep -m 1 -o -E 'Sources/CarWindow[A-Za-z0-9]*/[^ ]+:[0-9]+' "$out/log" || true)
        result="CRASHED: $(cut -c 1-160 <<< "$reason")${where:+ at $where}"
        crashed=1
    elif (( status != 0 )); then
        result="FAILED (exit $status; see $out/log)"
        failed=1
    else
        result=ok
    fi
    printf '%-11s %11s %8s %6s %6s %7s %7s  %s\n' "$target" "${executions:-?}" "${rate:-?}" "$elapsed" \
        "${cov:-?}" "${ft:-?}" "$crashes" "$result" | tee -a "$summary"
done
echo "logs, crash inputs and grown corpora: $results/TARGET/"
if (( failed )); then exit 2; fi
if (( crashed )); then
    echo "fuzz.sh: a target crashed; reproduce with .build/debug/carwindow-fuzz TARGET $results/TARGET/crash-..." >&2
    exit 1
fi
