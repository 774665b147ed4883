# Sourced by check-focus.sh and check-protected.sh: check.sh's environment with its defaults, the
# PASS/FAIL line, hmi.py's control socket, and Core and the HMI started in their own process
# groups and stopped again when the script exits. Set CHECK_NAME before sourcing.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SDLCORE_RUN=${SDLCORE_RUN:-/work/sdlcore/run-core.sh}
SDLCORE_LOG=${SDLCORE_LOG:-/work/sdlcore/build/bin/SmartDeviceLinkCore.log}
SDLCORE_VIDEO_FILE=${SDLCORE_VIDEO_FILE:-/work/sdlcore/build/bin/storage/video_stream.h264}
SDLCORE_HMI_URL=${SDLCORE_HMI_URL:-ws://127.0.0.1:8087}
SDLCORE_APP_ADDR=${SDLCORE_APP_ADDR:-127.0.0.1:12345}
CARWINDOW=${CARWINDOW:-.build/release/carwindow}
PYTHON=${PYTHON:-python3}
OUT=${CHECK_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/carwindow-sdl-$CHECK_NAME.XXXXXX")}
mkdir -p "$OUT" || exit 2
SOCK="$OUT/hmi.sock"
FAILS=0
PIDS=()

check() { printf '%-7s %s: %s\n' "$1" "$2" "$3"; [ "$1" = FAIL ] && FAILS=$((FAILS + 1)); return 0; }
ctl() { "$PYTHON" "$HERE/hmi.py" ctl --control "$SOCK" "$@"; }
cleanup() {
    for pid in "${PIDS[@]}"; do kill -INT -- "-$pid" 2> /dev/null || kill -INT "$pid" 2> /dev/null; done
    sleep 1
    for pid in "${PIDS[@]}"; do kill -KILL -- "-$pid" 2> /dev/null; done
}
trap cleanup EXIT

# Core, then the HMI with `hmi.py` options beyond the common ones (--no-touch, say); exits 2
# when Core does not listen.
start_core_and_hmi() {
    setsid bash "$SDLCORE_RUN" > "$OUT/core-stdout.txt" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do ss -ltn | grep -q ':8087 ' && ss -ltn | grep -q ':12345 ' && break; sleep 0.1; done
    ss -ltn | grep -q ':12345 ' || { echo "$CHECK_NAME: Core does not listen on 12345 (see $OUT/core-stdout.txt)" >&2; exit 2; }
    setsid "$PYTHON" "$HERE/hmi.py" --url "$SDLCORE_HMI_URL" --no-scenario --control "$SOCK" \
        --auto-activate always --log "$OUT/hmi-log.jsonl" --quiet "$@" > "$OUT/hmi-stderr.txt" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
}
