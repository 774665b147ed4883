#!/usr/bin/env bash
# check-focus.sh: proves the app's own focus against SDL Core, on a screen with neither touch nor
# haptic data (hmi.py --no-touch): the app must subscribe to OK besides its map keys, draw its
# ring, move it with NAV_PAN_DOWN (its direction pad; Core refuses the media keys SEEK and TUNE
# to a navigation app) and select with OK, and send no haptic rectangles.
#
# The same environment as check.sh (SDLCORE_RUN, SDLCORE_LOG, SDLCORE_HMI_URL, SDLCORE_APP_ADDR,
# CARWINDOW, CHECK_OUT, PYTHON); prints PASS/FAIL lines, exits 1 when a check failed. The drive is
# unprotected: Core must not force video protected (ForceProtectedService) for it.
set -u
CHECK_NAME=check-focus
. "$(dirname "${BASH_SOURCE[0]}")/core-and-hmi.sh"
start_core_and_hmi --no-touch
setsid "$CARWINDOW" drive --sdl "$SDLCORE_APP_ADDR" --out "$OUT/drive.h264" --no-mp4 --speed 1 --max-seconds 40 \
    > "$OUT/carwindow.log" 2>&1 &
DRIVE=$!
PIDS+=($DRIVE)

if ctl wait start_stream 30 > /dev/null; then
    check PASS video "the app streams into Core with a touchless screen"
else
    check FAIL video "no video within 30 s"
fi
sleep 3
if grep -q "^focus: region 1999999001" "$OUT/carwindow.log"; then
    check PASS focus-ring "the app focused its first control (zoom in) itself"
else
    check FAIL focus-ring "the app printed no focus on region 1999999001"
fi
subscribed=$(ctl events since=0 subscribe_button | "$PYTHON" -c 'import json,sys; print(" ".join(sorted({json.loads(l).get("button", json.loads(l).get("name", "?")) for l in sys.stdin if l.strip()})))')
if [[ " $subscribed " == *" NAV_PAN_DOWN "* && " $subscribed " == *" OK "* ]]; then
    check PASS focus-keys "subscribed: $subscribed"
else
    check FAIL focus-keys "the app did not subscribe to NAV_PAN_DOWN and OK (subscribed: ${subscribed:-nothing})"
fi
ctl button NAV_PAN_DOWN > /dev/null
sleep 1
if grep -q "^focus: region 1999999002" "$OUT/carwindow.log"; then
    check PASS focus-move "NAV_PAN_DOWN moved the focus to zoom out"
else
    check FAIL focus-move "no focus on region 1999999002 after NAV_PAN_DOWN"
fi
ctl button OK > /dev/null
sleep 1
if grep -q "^control tapped: zoomOut" "$OUT/carwindow.log"; then
    check PASS focus-select "OK acted on the focused control: control tapped: zoomOut"
else
    check FAIL focus-select "OK did not act on the focused control"
fi
ffmpeg -v error -y -sseof -1 -i "$OUT/drive.h264" -frames:v 1 "$OUT/focus.png" 2> /dev/null || true
haptics=$(ctl events since=0 haptic | wc -l)
if [ "$haptics" -eq 0 ]; then
    check PASS no-haptics "no SendHapticData to a head unit without haptic data"
else
    check FAIL no-haptics "$haptics SendHapticData"
fi
kill -INT "$DRIVE" 2> /dev/null
wait "$DRIVE"
status=$?
blocked=$(grep -c "blocked by policies" "$SDLCORE_LOG" 2> /dev/null || true)
stray=$(grep -c "trying to stream when it should not" "$SDLCORE_LOG" 2> /dev/null || true)
if [ "${blocked:-0}" -eq 0 ] && [ "${stray:-0}" -eq 0 ]; then
    check PASS core-log "no 'blocked by policies' and no 'should not stream' in Core's log"
else
    check FAIL core-log "'blocked by policies' ${blocked:-0} times, 'should not stream' ${stray:-0} times"
fi
if [ "$status" = 130 ] || [ "$status" = 0 ]; then
    check PASS drive-exit "exit status $status"
else
    check FAIL drive-exit "exit status $status (see $OUT/carwindow.log)"
fi
echo "# logs: $OUT (the last picture with the ring: focus.png)" >&2
[ "$FAILS" -eq 0 ]
