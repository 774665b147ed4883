#!/usr/bin/env bash
# check-protected.sh: proves protected video (TLS inside SmartDeviceLink) against an SDL Core built
# with ENABLE_SECURITY=ON whose smartDeviceLink.ini forces video protected
# (ForceProtectedService = 0x0B) and verifies the app's certificate (VerifyPeer = true, a
# CACertificatePath holding the CA that issued APP_CERTIFICATE). README.md says how to set Core up.
#
# Three drives: with the app's certificate (video must reach Core protected, decode, and touches
# and haptics must work as without protection), without a certificate (Core refuses the
# unprotected video; the drive must say so and exit 69), and with a certificate from another CA
# (the handshake fails; the drive must name the certificate and exit 69).
#
# The environment of check.sh (SDLCORE_RUN, SDLCORE_LOG, SDLCORE_VIDEO_FILE, SDLCORE_HMI_URL,
# SDLCORE_APP_ADDR, CARWINDOW, CHECK_OUT, PYTHON), and:
#   APP_CERTIFICATE, APP_KEY      the app's certificate and key (PEM), issued by Core's CA, subject
#                                 serialNumber = carwindow-drive; default /work/sdlcore/pki/app.pem, .key
#   OTHER_CERTIFICATE, OTHER_KEY  a certificate and key from another CA;
#                                 default /work/sdlcore/pki/other-app.pem, .key
# Prints PASS/FAIL lines; exits 1 when a check failed, 2 when the run could not start.
set -u
CHECK_NAME=check-protected
. "$(dirname "${BASH_SOURCE[0]}")/core-and-hmi.sh"
APP_CERTIFICATE=${APP_CERTIFICATE:-/work/sdlcore/pki/app.pem}
APP_KEY=${APP_KEY:-/work/sdlcore/pki/app.key}
OTHER_CERTIFICATE=${OTHER_CERTIFICATE:-/work/sdlcore/pki/other-app.pem}
OTHER_KEY=${OTHER_KEY:-/work/sdlcore/pki/other-app.key}
for file in "$APP_CERTIFICATE" "$APP_KEY" "$OTHER_CERTIFICATE" "$OTHER_KEY"; do
    [ -r "$file" ] || { echo "check-protected.sh: cannot read $file" >&2; exit 2; }
done
log_lines_before() { wc -l < "$SDLCORE_LOG" 2> /dev/null || echo 0; }

start_core_and_hmi

# 1. The app with its certificate.
setsid "$CARWINDOW" drive --sdl "$SDLCORE_APP_ADDR" --certificate "$APP_CERTIFICATE" --key "$APP_KEY" \
    --out "$OUT/drive.h264" --no-mp4 --speed 1 --max-seconds 45 > "$OUT/carwindow.log" 2>&1 &
DRIVE=$!
PIDS+=($DRIVE)
if ctl wait start_stream 40 since=0 > /dev/null && ctl wait video_data 30 since=0 available=true > /dev/null; then
    check PASS video "video reaches Core (Navigation.OnVideoDataStreaming true)"
else
    check FAIL video "no video within 60 s (see $OUT/carwindow.log and Core's log)"
fi
if grep -q "head unit: the video service is protected" "$OUT/carwindow.log"; then
    check PASS video-protected "Core's StartServiceACK carried the protection bit: $(grep -m1 'video service is protected' "$OUT/carwindow.log")"
else
    check FAIL video-protected "the drive never said its video service is protected"
fi
sleep 3
cp "$SDLCORE_VIDEO_FILE" "$OUT/core-video.h264" 2> /dev/null || true
if frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=width,height,nb_read_frames \
        -of csv=p=0 "$OUT/core-video.h264" 2> /dev/null) && [ -n "$frames" ]; then
    check PASS decode "the video Core decrypted and wrote decodes: $frames (width,height,frames)"
else
    check FAIL decode "Core's video file ($SDLCORE_VIDEO_FILE) does not decode"
fi
ctl touch-haptic > /dev/null
sleep 2
if grep -qiE "control tapped|zoom" "$OUT/carwindow.log"; then
    check PASS touch-haptic "a tap on a haptic rectangle reached the app: $(grep -m1 -iE 'control tapped|zoom' "$OUT/carwindow.log")"
else
    check FAIL touch-haptic "the app printed no control for a tap on its haptic rectangle"
fi
if grep -qE "Handshake failed|Decryption failed|Enryption failed" "$SDLCORE_LOG" 2> /dev/null; then
    check FAIL core-security "Core logged: $(grep -m1 -E 'Handshake failed|Decryption failed|Enryption failed' "$SDLCORE_LOG")"
else
    check PASS core-security "no failed handshake, decryption or encryption in Core's log"
fi
kill -INT "$DRIVE" 2> /dev/null
wait "$DRIVE"
status=$?
if [ "$status" = 130 ] || [ "$status" = 0 ]; then check PASS drive-exit "exit status $status"; else check FAIL drive-exit "exit status $status"; fi

# 2. The same app without a certificate: Core forces video protected.
before=$(log_lines_before)
timeout 90 "$CARWINDOW" drive --sdl "$SDLCORE_APP_ADDR" --out "$OUT/unprotected.h264" --no-mp4 --speed 1 --max-seconds 40 \
    > "$OUT/unprotected.log" 2>&1
status=$?
if [ "$status" = 69 ] && grep -q "^error: .*protected" "$OUT/unprotected.log"; then
    check PASS unprotected-refused "exit 69: $(grep -m1 '^error: ' "$OUT/unprotected.log" | cut -c1-200)"
else
    check FAIL unprotected-refused "exit $status; the drive must say why it got no video (see $OUT/unprotected.log)"
fi
if tail -n +"$before" "$SDLCORE_LOG" 2> /dev/null | grep -qE "disallowed by settings. Allowed only in protected mode|Cannot start an unprotected service of type 11"; then
    check PASS core-unprotected "Core refused the unprotected video start: $(tail -n +"$before" "$SDLCORE_LOG" | grep -m1 -oE 'Service type: 11 disallowed by settings. Allowed only in protected mode|Cannot start an unprotected service of type 11')"
else
    check FAIL core-unprotected "Core's log does not show the refusal; is ForceProtectedService = 0x0B set?"
fi

# 3. A certificate from a CA that Core does not trust.
timeout 90 "$CARWINDOW" drive --sdl "$SDLCORE_APP_ADDR" --certificate "$OTHER_CERTIFICATE" --key "$OTHER_KEY" \
    --out "$OUT/untrusted.h264" --no-mp4 --speed 1 --max-seconds 40 > "$OUT/untrusted.log" 2>&1
status=$?
if [ "$status" = 69 ] && grep -qi "certificate" "$OUT/untrusted.log"; then
    check PASS untrusted-refused "exit 69: $(grep -m1 '^error: ' "$OUT/untrusted.log" | cut -c1-200)"
else
    check FAIL untrusted-refused "exit $status; the drive must name the certificate (see $OUT/untrusted.log)"
fi
echo "# logs: $OUT" >&2
[ "$FAILS" -eq 0 ]
