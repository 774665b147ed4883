#!/usr/bin/env bash
# Builds and runs the example engines, each a package of its own that depends on this one by path
# and on public products only, as an engine's own package would:
#
#   examples/map-snapshot   CarWindowMap alone: draws the bundled Helsinki map into a PNG, and its
#                           binary must link neither OpenH264 nor libva (an engine that only wants
#                           the map gets no encoder).
#   examples/nav-engine     a route, the follow camera, voice prompts and a custom layer of its own GL
#                           (the road ahead highlighted in magenta) streamed over SmartDeviceLink into
#                           the in-repo head unit (carwindow headunit): ffmpeg, an independent decoder,
#                           must decode every access unit the head unit received at the size it
#                           offered, its last picture must show the highlight, and the prompts' audio
#                           must have reached it.
#
# Both build in debug into this package's scratch path (.build): the CarWindow targets they depend
# on are then the very build `swift build` made (scripts/test.sh's, in CI), so only their own
# main.swift compiles. A scratch path of their own would build the whole stack again, minutes on
# two cores. No verdict depends on timing: the head unit's port is read from its own line, and
# every wait is for an event under a generous hang guard.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/install-deps.sh --tests             # ffmpeg and ffprobe, the independent decoder

out=$(mktemp -d)
headunit_pid=
cleanup() {
    if [[ -n "$headunit_pid" ]] && kill -0 "$headunit_pid" 2>/dev/null; then
        kill "$headunit_pid" 2>/dev/null || true
        wait "$headunit_pid" 2>/dev/null || true
    fi
    rm -rf "$out"
}
trap cleanup EXIT
fail() { echo "example.sh: $*" >&2; exit 1; }

# The head unit (the carwindow tool, debug like test.sh's build), then both examples into the
# same scratch path, where their binaries land beside it. Each builds from its own folder: from
# here, `swift build --package-path examples/X --scratch-path .build` built this package's graph
# instead after test.sh's build (SwiftPM 6.3.1) and left no binary, so each binary is checked.
swift build --product carwindow
bin=$(swift build --show-bin-path)
carwindow=$bin/carwindow
for example in map-snapshot nav-engine; do
    rm -f "${bin:?}/$example"
    # swift-build itself once died of SIGSEGV in libdispatch (_dispatch_event_loop_drain) right
    # after "Build complete!" (CI, 2026-11-28): a crash of the tool, not a failed build, is
    # tried once more.
    status=0
    (cd "examples/$example" && swift build --scratch-path "$root/.build") || status=$?
    if (( status > 128 )); then
        echo "example.sh: swift build of $example died of signal $(( status - 128 )); building once more"
        (cd "examples/$example" && swift build --scratch-path "$root/.build")
    elif (( status != 0 )); then
        exit "$status"
    fi
    [[ -x "$bin/$example" ]] || fail "swift build made no $bin/$example"
done

echo "example.sh: examples/map-snapshot"
"$bin/map-snapshot" "$out/snapshot.png" assets
if ldd "$bin/map-snapshot" | grep -E -i 'openh264|libva'; then
    fail "the map-only example links an encoder library (above); CarWindowMap must not depend on one"
fi
python3 - "$out/snapshot.png" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (640, 384), f"{width}x{height}, expected 640x384"
print(f"example.sh: map-snapshot wrote a {width}x{height} PNG; links no OpenH264 and no libva")
PY

echo "example.sh: examples/nav-engine into carwindow headunit"
if ldd "$bin/nav-engine" | grep -E -i 'libssl|libcurl'; then
    fail "nav-engine links TLS or libcurl (above); the CarWindowSDL product must not need them"
fi
# Port 0: the head unit takes a free port and says which in its first line. The log exists before
# the background job's shell opens it, so the wait below can read it at once.
: > "$out/headunit.log"
"$carwindow" headunit --port 0 --size 640x384 --tap-after 0 --out "$out/received.h264" \
    --audio-out "$out/prompts.pcm" > "$out/headunit.log" 2>&1 &
headunit_pid=$!
port=
for _ in $(seq 600); do                     # hang guard: 60 s for the head unit to listen
    port=$(sed -n 's/^head unit listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$out/headunit.log")
    [[ -n "$port" ]] && break
    kill -0 "$headunit_pid" 2>/dev/null || { cat "$out/headunit.log" >&2; fail "the head unit exited before listening"; }
    sleep 0.1
done
[[ -n "$port" ]] || { cat "$out/headunit.log" >&2; fail "the head unit did not listen within 60 s"; }

# 12 s of streaming at 150 km/h: the first turn, 53 m on, is announced at the start. Hang guard:
# the engine gives up on a head unit that does not let it stream within 60 s by itself.
status=0
timeout 300 "$bin/nav-engine" "127.0.0.1:$port" --seconds 12 --speed 150 --assets assets > "$out/engine.log" 2>&1 || status=$?
grep -v '^[0-9-]*T[0-9:+]* ' "$out/engine.log" || true    # its own lines; the library's log lines stay in the file
if [[ $status -ne 0 ]]; then
    cat "$out/engine.log" "$out/headunit.log" >&2
    fail "nav-engine failed with status $status"
fi
# The head unit quits when the app unregisters, which nav-engine's clean close does.
for _ in $(seq 600); do                     # hang guard: 60 s
    kill -0 "$headunit_pid" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$headunit_pid" 2>/dev/null && { cat "$out/headunit.log" >&2; fail "the head unit did not see the app leave within 60 s"; }
headunit_status=0
wait "$headunit_pid" || headunit_status=$?
headunit_pid=
[[ $headunit_status -eq 0 ]] || { cat "$out/headunit.log" >&2; fail "the head unit exited with status $headunit_status"; }

units=$(sed -n 's/^app left after \([0-9]*\) access units$/\1/p' "$out/headunit.log")
played=$(sed -n 's/^voice prompts: \([0-9]*\) played.*/\1/p' "$out/engine.log")
received=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=width,height,nb_read_frames \
    -of csv=p=0 "$out/received.h264")
errors=$(ffmpeg -v error -i "$out/received.h264" -f null - 2>&1 || echo "ffmpeg failed")
[[ -z "$errors" ]] || fail "the head unit's stream does not decode cleanly: $errors"
[[ "$received" == 640,384,* ]] || fail "the head unit received $received (width,height,frames), expected 640x384"
frames=${received##*,}
# Each access unit is one picture (a keep-alive too); a working 12 s stream at 15 fps has far more
# than 15, a stream that died after its first pictures fewer.
[[ -n "$units" && "$frames" -eq "$units" ]] || fail "ffmpeg decoded $frames pictures of the head unit's ${units:-?} access units"
(( frames >= 15 )) || fail "the head unit received only $frames pictures in 12 s of streaming"
# The engine's custom layer: its magenta road ahead of the car, beside the route line over it
# (over a thousand pixels at 640x384; the map itself has no magenta, so 200 cannot come by chance).
python3 scripts/check-picture.py "$out/received.h264" 640 384 --tolerance 40 --count 255,0,255=200 \
    || fail "the head unit's last picture does not show nav-engine's custom layer"
# The prompts: the chime is 0.44 s, which the head unit gets as 16 kHz 16-bit mono PCM.
(( ${played:-0} >= 1 )) || fail "nav-engine played no voice prompt: $(grep 'voice prompts' "$out/engine.log" || echo 'no summary')"
python3 - "$out/prompts.pcm" "$played" "$frames" <<'PY'
import os, struct, sys
path, played, frames = sys.argv[1], int(sys.argv[2]), sys.argv[3]
size = os.path.getsize(path) if os.path.exists(path) else 0
assert size >= played * 14080, f"{size} bytes of prompt audio for {played} prompts of 14080 bytes"
samples = struct.unpack(f"<{size // 2}h", open(path, "rb").read()[: size // 2 * 2])
assert max(map(abs, samples)) > 1000, "the prompt audio is silent"
print(f"example.sh: nav-engine streamed {frames} pictures at 640x384 that ffmpeg decodes, "
      f"and {played} voice prompt(s), {size} bytes of audio, reached the head unit")
PY
