#!/usr/bin/env bash
# check.sh: proves `carwindow drive --sdl` against a real SDL Core, with our headless HMI
# (hmi.py beside this script) playing the head unit's screen and its driver.
#
# It starts Core, the HMI and `carwindow drive`, walks a scenario (activate, video, touches,
# a button, LIMITED/BACKGROUND/NONE/FULL, a resize, Core killed and restarted, then a second
# drive with 800x480 refused), and prints one line per check: PASS, FAIL or NOT YET, with the
# figure behind it. Progress notes go to standard error, prefixed with '#'.
# Exit status: 0 when nothing FAILed, 1 when a check FAILed, 2 when the run could not start.
#
# Environment (the defaults suit one local setup only; set them for yours):
#   SDLCORE_RUN         command that runs Core in the foreground, ports 12345 (apps, TCP) and
#                       8087 (HMI WebSocket); default /work/sdlcore/run-core.sh
#   SDLCORE_LOG         Core's log file, warnings or finer;
#                       default /work/sdlcore/build/bin/SmartDeviceLinkCore.log
#   SDLCORE_VIDEO_FILE  Core's video consumer file (VideoStreamConsumer = file: AppStorageFolder
#                       + VideoStreamFile); default /work/sdlcore/build/bin/storage/video_stream.h264
#   SDLCORE_AUDIO_FILE  Core's audio consumer file; default .../storage/audio_stream.pcm
#   SDLCORE_HMI_URL     default ws://127.0.0.1:8087
#   SDLCORE_APP_ADDR    where the app connects, default 127.0.0.1:12345
#   CARWINDOW           the carwindow binary, default .build/release/carwindow
#   CARWINDOW_ARGS      extra options for `carwindow drive` (e.g. "--encoder openh264")
#   CHECK_OUT           folder for this run's logs (default: a new one under ${TMPDIR:-/tmp})
#   CHECK_TIMEOUT       seconds after which the whole run is stopped (default 420)
#   CHECK_CYCLES        quick FULL -> BACKGROUND/NONE -> FULL changes while driving (default 10)
#   PYTHON              python3 interpreter (default python3)
# Needs: bash, python3, ffprobe (ffmpeg), setsid, timeout; a Core with file stream consumers and
# a policy granting app id "carwindow-drive" Base-4, Navigation-1 and HapticGroup (README.md).
#
# "Video reaches Core" is Navigation.OnVideoDataStreaming (available true/false) from Core:
# true when data arrives after a pause, false 1 s (Core's VideoDataStoppedTimeout) after the
# last data, or at once when the app ends the video service.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SDLCORE_RUN=${SDLCORE_RUN:-/work/sdlcore/run-core.sh}
SDLCORE_LOG=${SDLCORE_LOG:-/work/sdlcore/build/bin/SmartDeviceLinkCore.log}
SDLCORE_VIDEO_FILE=${SDLCORE_VIDEO_FILE:-/work/sdlcore/build/bin/storage/video_stream.h264}
SDLCORE_AUDIO_FILE=${SDLCORE_AUDIO_FILE:-/work/sdlcore/build/bin/storage/audio_stream.pcm}
SDLCORE_HMI_URL=${SDLCORE_HMI_URL:-ws://127.0.0.1:8087}
SDLCORE_APP_ADDR=${SDLCORE_APP_ADDR:-127.0.0.1:12345}
CARWINDOW=${CARWINDOW:-.build/release/carwindow}
CARWINDOW_ARGS=${CARWINDOW_ARGS:-}
CHECK_TIMEOUT=${CHECK_TIMEOUT:-420}
PYTHON=${PYTHON:-python3}
HMI_PY="$HERE/hmi.py"
APP_ID=carwindow-drive
SHOULD_NOT_STREAM="The application is trying to stream when it should not"
BLOCKED="blocked by policies"
INCORRECT="Incorrect parameter from HMI"
UNPROTECTED="Cannot start an unprotected service of type 11"
DATA_STOPPED_TIMEOUT=1.0   # Core's VideoDataStoppedTimeout, seconds

OUT=${CHECK_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/carwindow-sdl-check.XXXXXX")}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
SOCK="$OUT/hmi.sock"
FAILS=0
T0=$(date +%s.%N)

note() { printf '# [%5.1f s] %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN{print a-b}')" "$*" >&2; }
check() { # STATUS NAME FIGURE...
    local status=$1 name=$2; shift 2
    local line
    line=$(printf '%-7s %s: %s' "$status" "$name" "$*")
    echo "$line"
    echo "$line" >> "$OUT/results.txt"
    if [ "$status" = FAIL ]; then FAILS=$((FAILS + 1)); fi
}

# ---- processes ------------------------------------------------------------------------------

CORE_PID="" HMI_PID="" CW_PID="" WATCHDOG_PID="" CW_LOG=/dev/null
CORE_RUNS=0 CW_RUNS=0

stop_group() { # PID SECONDS: TERM the process group, KILL it if it outlives SECONDS
    local pid=$1 grace=${2:-5} i
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < grace * 10; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
        fi
    fi
    wait "$pid" 2>/dev/null
    return 0
}

cleanup() {
    trap - EXIT INT TERM
    [ -n "$WATCHDOG_PID" ] && kill "$WATCHDOG_PID" 2>/dev/null
    if [ -n "$CW_PID" ]; then kill -INT "$CW_PID" 2>/dev/null; sleep 1; stop_group "$CW_PID" 8; fi
    if [ -n "$HMI_PID" ]; then ctl_quiet quit; stop_group "$HMI_PID" 3; fi
    stop_group "$CORE_PID" 5
    CW_PID="" HMI_PID="" CORE_PID=""
}
trap 'cleanup' EXIT
trap 'note "interrupted"; cleanup; exit 130' INT
trap 'note "stopped (timeout or TERM)"; check FAIL run "stopped after ${CHECK_TIMEOUT} s or by a signal"; cleanup; exit 1' TERM

# Starts a command in its own process group (setsid), so that it and its children end together.
spawn() { # LOGFILE CMD...
    local log=$1; shift
    setsid "$@" > "$log" 2>&1 < /dev/null &
    SPAWNED=$!
}

listening() { # PORT: whether something listens on it (read from /proc: no connection made)
    "$PYTHON" - "$1" <<'EOF'
import sys
port = "%04X" % int(sys.argv[1])
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for line in lines:
        fields = line.split()
        if fields[1].rsplit(":", 1)[1] == port and fields[3] == "0A":
            sys.exit(0)
sys.exit(1)
EOF
}

HMI_PORT=${SDLCORE_HMI_URL##*:}; HMI_PORT=${HMI_PORT%%/*}
APP_PORT=${SDLCORE_APP_ADDR##*:}

# Core's log: where this run's part begins (a run script may start a new log or append).
# A run script that starts a new log (even one reusing the old file's inode) changes its head.
log_id() { echo "$(head -c 512 "$SDLCORE_LOG" 2>/dev/null | cksum | cut -d' ' -f1) $(log_size)"; }
log_size() { stat -c %s "$SDLCORE_LOG" 2>/dev/null || echo 0; }
log_part() { # OFFSET: Core's log from OFFSET (the whole log when it shrank since)
    local from=$1
    [ -f "$SDLCORE_LOG" ] || return 0
    if [ "$(log_size)" -lt "$from" ]; then from=0; fi
    tail -c +"$((from + 1))" "$SDLCORE_LOG"
}
count_in_log() { log_part "$1" | grep -c -F -- "$2"; }

start_core() {
    local before i
    before=$(log_id)
    CORE_RUNS=$((CORE_RUNS + 1))
    spawn "$OUT/core-stdout-$CORE_RUNS.txt" "$SDLCORE_RUN"
    CORE_PID=$SPAWNED
    for ((i = 0; i < 300; i++)); do
        if listening "$HMI_PORT" && listening "$APP_PORT"; then
            # The same head as before and not shorter: Core appends, its run starts at the old size.
            local after
            after=$(log_id)
            if [ "${after%% *}" = "${before%% *}" ] && [ "${after##* }" -ge "${before##* }" ]; then
                LOG_START=${before##* }
            else
                LOG_START=0
            fi
            note "Core is up (pid $CORE_PID, run $CORE_RUNS) after $((i / 10)).$((i % 10)) s"
            return 0
        fi
        kill -0 "$CORE_PID" 2>/dev/null || break
        sleep 0.1
    done
    note "Core did not open ports $HMI_PORT and $APP_PORT; its output:"
    tail -20 "$OUT/core-stdout-$CORE_RUNS.txt" >&2
    return 1
}

kill_core() { # the crash: SIGKILL to Core's whole process group
    [ -n "$CORE_PID" ] || return 0
    kill -KILL -- "-$CORE_PID" 2>/dev/null || kill -KILL "$CORE_PID" 2>/dev/null
    wait "$CORE_PID" 2>/dev/null
    CORE_PID=""
    local i
    for ((i = 0; i < 100; i++)); do
        listening "$HMI_PORT" || listening "$APP_PORT" || return 0
        sleep 0.1
    done
}

start_drive() { # SECONDS
    CW_RUNS=$((CW_RUNS + 1))
    CW_LOG="$OUT/carwindow-$CW_RUNS.log"
    # shellcheck disable=SC2086
    spawn "$CW_LOG" "$CARWINDOW" drive --sdl "$SDLCORE_APP_ADDR" --out "$OUT/drive-$CW_RUNS.h264" --no-mp4 \
        --speed 1 --max-seconds "$1" $CARWINDOW_ARGS
    CW_PID=$SPAWNED
    note "carwindow drive $CW_RUNS started (pid $CW_PID), output in $CW_LOG"
}

DRIVE_EXITS="" DRIVE_RCS=()
stop_drive() { # SIGINT, as Ctrl-C: the app ends its video, unregisters, prints its summary
    [ -n "$CW_PID" ] || return 0
    local i rc
    kill -INT "$CW_PID" 2>/dev/null
    for ((i = 0; i < 150; i++)); do
        kill -0 "$CW_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$CW_PID" 2>/dev/null; then
        stop_group "$CW_PID" 3
        rc="hung (killed 15 s after SIGINT)"
    else
        wait "$CW_PID" 2>/dev/null
        rc=$?
    fi
    DRIVE_EXITS+="drive $CW_RUNS: $rc; "
    DRIVE_RCS+=("$rc")
    CW_PID=""
}

# ---- the HMI --------------------------------------------------------------------------------

ctl() { timeout 120 "$PYTHON" "$HMI_PY" ctl --control "$SOCK" "$@"; }
ctl_quiet() { ctl "$@" > /dev/null 2>&1; }
mark() { ctl mark 2>/dev/null || echo 0; }
# wait_event KIND TIMEOUT SINCE [filters...]: prints the event's JSON; status 0 when it came
wait_event() { local kind=$1 timeout=$2 since=$3; shift 3; ctl wait "$kind" "$timeout" "since=$since" "$@"; }
field() { "$PYTHON" -c 'import json,sys
try:
    v = json.loads(sys.stdin.readline()).get(sys.argv[1], "")
except Exception:
    v = ""
print(json.dumps(v, separators=(",", ":")) if isinstance(v, (list, dict, bool)) else v)' "$1"; }
status_field() { ctl status | "$PYTHON" -c 'import json,sys
s = json.loads(sys.stdin.read()); apps = s.get("apps") or [{}]
print(eval(sys.argv[1], {"s": s, "app": apps[-1]}))' "$1"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", a-b}'; }
video_on() { [ "$(status_field 's.get("videoData")')" = True ]; }

probe() { # FILE: "WIDTHxHEIGHT FRAMES" of a raw H.264 file, empty when it does not decode
    [ -s "$1" ] || return 0
    ffprobe -v error -f h264 -count_frames -select_streams v:0 \
        -show_entries stream=width,height,nb_read_frames -of csv=p=0 "$1" 2>/dev/null |
        head -1 | awk -F, 'NF >= 3 && $3 > 0 {print $1 "x" $2, $3}'
}
snapshot() { # NAME: copies Core's video file as it is now (whole once the stream stopped)
    if [ -s "$SDLCORE_VIDEO_FILE" ]; then cp "$SDLCORE_VIDEO_FILE" "$OUT/video-$1.h264"; fi
}

snapshot_audio() { # keeps the largest audio file Core wrote so far (each stream start empties it,
    # and a Core restart by run-core.sh deletes it); whole once the stream stopped
    if [ -s "$SDLCORE_AUDIO_FILE" ] && [ "$(stat -c %s "$SDLCORE_AUDIO_FILE")" -gt "$(stat -c %s "$OUT/audio.pcm" 2>/dev/null || echo 0)" ]; then
        cp "$SDLCORE_AUDIO_FILE" "$OUT/audio.pcm"
    fi
}
lines() { wc -l < "$CW_LOG" 2>/dev/null || echo 0; }
new_output() { # FROM_LINE REGEX: the drive's output lines after FROM_LINE matching REGEX
    tail -n +"$(($1 + 1))" "$CW_LOG" 2>/dev/null | grep -E -i -- "$2" | head -3 | tr '\n' ' ' | cut -c1-240
}

# ---- preflight ------------------------------------------------------------------------------

for tool in "$PYTHON" ffprobe setsid timeout; do
    command -v "$tool" > /dev/null || { echo "FAIL    setup: $tool is missing"; exit 2; }
done
[ -x "$CARWINDOW" ] || { echo "FAIL    setup: no carwindow binary at $CARWINDOW (set CARWINDOW)"; exit 2; }
[ -e "$SDLCORE_RUN" ] || command -v "$SDLCORE_RUN" > /dev/null ||
    { echo "FAIL    setup: no Core run script at $SDLCORE_RUN (set SDLCORE_RUN)"; exit 2; }
if listening "$HMI_PORT" || listening "$APP_PORT"; then
    echo "FAIL    setup: something already listens on port $HMI_PORT or $APP_PORT (another Core?)"
    exit 2
fi
( sleep "$CHECK_TIMEOUT" && kill -TERM $$ ) > /dev/null 2>&1 &
WATCHDOG_PID=$!
note "run folder: $OUT"
note "carwindow: $CARWINDOW"

# ---- phase 1: one drive through every HMI change ---------------------------------------------

start_core || { check FAIL core "Core did not start ($SDLCORE_RUN)"; exit 1; }
LOG_PHASE1=$LOG_START
spawn "$OUT/hmi-stderr.txt" "$PYTHON" "$HMI_PY" --url "$SDLCORE_HMI_URL" --log "$OUT/hmi-log.jsonl" \
    --control "$SOCK" --no-scenario --app "$APP_ID" --auto-activate reconnect \
    --video-file "$SDLCORE_VIDEO_FILE" --audio-file "$SDLCORE_AUDIO_FILE"
HMI_PID=$SPAWNED
for ((i = 0; i < 50; i++)); do [ -S "$SOCK" ] && break; sleep 0.1; done
if ! wait_event ready 20 0 > /dev/null; then
    check FAIL hmi "the HMI did not connect to Core at $SDLCORE_HMI_URL (see $OUT/hmi-stderr.txt)"
    exit 1
fi
sleep 1.5   # Core asks the HMI for its capabilities now

start_drive 240
if ev=$(wait_event registered 45 0 policyAppID=$APP_ID); then
    check PASS register "app $APP_ID registered (HMI appID $(field appID <<< "$ev"), types $(field appType <<< "$ev"))"
else
    check FAIL register "app $APP_ID did not register within 45 s (see $CW_LOG)"
    exit 1
fi

# Activate: FULL, then the video starts.
M=$(mark); t_act=$(now)
if ! answer=$(ctl activate); then check FAIL activate "$answer"; fi
if ev=$(wait_event video_data 15 "$M" available=true); then
    cfg=$(ctl events since="$M" set_video_config | tail -1)
    check PASS video-start "video reached Core $(secs "$(field time <<< "$ev")" "$t_act") s after SDL.ActivateApp ($(field size <<< "$cfg") $(field protocol <<< "$cfg"))"
else
    check FAIL video-start "no video reached Core within 15 s of activation (no OnVideoDataStreaming true)"
fi
sleep 3

# A tap on the map, integer coordinates (Core rejects floats).
L=$(lines); O=$(log_size)
ctl touch 400 240 > /dev/null
sleep 1.5
bad=$(new_output "$L" "OnTouchEvent ignored|touch .* ignored")
reaction=$(new_output "$L" "map tapped|tapped|touch")
rejected=$(log_part "$O" | grep -c -F "$INCORRECT")
if [ "$rejected" -gt 0 ]; then
    check FAIL touch-map "Core logged '$INCORRECT' $rejected times after the touch"
elif [ -n "$bad" ]; then
    check FAIL touch-map "the app refused the touch: $bad"
elif [ -n "$reaction" ]; then
    check PASS touch-map "touch 400,240 sent; the app printed: $reaction"
else
    check "NOT YET" touch-map "touch 400,240 (BEGIN/END, integers) taken by Core; the app printed nothing for a map tap"
fi

# A tap on a haptic rectangle the app sent (its map controls).
if ev=$(wait_event haptic 10 0); then
    L=$(lines)
    answer=$(ctl touch-haptic)
    sleep 2
    reaction=$(new_output "$L" "control|tapped|zoom")
    if [ -n "$reaction" ]; then
        check PASS touch-haptic "$answer; the app printed: $reaction"
    else
        check "NOT YET" touch-haptic "$answer; the app printed nothing for a control tap (cannot see it react)"
    fi
else
    check FAIL touch-haptic "the app sent no SendHapticData within 10 s of streaming (hapticSpatialDataSupported is true)"
fi

# NAV_ZOOM_IN: the app subscribes through Core (Buttons.SubscribeButton to the HMI), then presses.
buttons=$(status_field '",".join(app.get("buttons", []))')
if [[ ",$buttons," == *",NAV_ZOOM_IN,"* ]]; then
    L=$(lines)
    answer=$(ctl button NAV_ZOOM_IN)
    sleep 2
    reaction=$(new_output "$L" "NAV_ZOOM_IN|zoom|button")
    if [ -n "$reaction" ]; then
        check PASS button "$answer; the app printed: $reaction"
    else
        check "NOT YET" button "$answer; the app printed nothing for it"
    fi
else
    ctl button NAV_ZOOM_IN > /dev/null
    check "NOT YET" button "the app did not subscribe to NAV_ZOOM_IN (subscribed: ${buttons:-none}); pressed anyway"
fi

# Level changes.
level_step() { # LEVEL: changes the level, remembers where Core's log and the events were
    STEP_LOG=$(log_size); STEP_MARK=$(mark); STEP_T=$(now)
    ctl level "$1" > /dev/null || note "level $1 failed"
}
stray_after() { # NAME: Core's "should not stream" lines since the step
    local n
    n=$(count_in_log "$STEP_LOG" "$SHOULD_NOT_STREAM")
    if [ "$n" -gt 0 ]; then
        check FAIL "$1-no-picture" "Core logged '$SHOULD_NOT_STREAM' $n times after the change"
    fi
}

snapshot start             # while streaming (a stock Core deletes the file when a stream stops)

# LIMITED: a navigation app stays STREAMABLE, the video goes on.
level_step LIMITED
sleep 3
if wait_event video_data 0.1 "$STEP_MARK" available=false > /dev/null; then
    check FAIL limited "video stopped in LIMITED (a navigation app stays STREAMABLE there)"
elif video_on; then
    check PASS limited "video goes on in LIMITED (OnAppDeactivated; STREAMABLE)"
else
    check FAIL limited "no video in LIMITED"
fi
stray_after limited

stop_check() { # NAME: the video must stop within 4 s of the level change and stay stopped
    local name=$1 ev t_stop t_false stopped_after extra=""
    if ev=$(wait_event video_data 8 "$STEP_MARK" available=false); then
        t_false=$(field time <<< "$ev")
        # Without an EndService Core says false only after its 1 s data timeout.
        t_stop=$(awk -v a="$t_false" -v d="$DATA_STOPPED_TIMEOUT" 'BEGIN{printf "%.3f", a-d}')
        if ev2=$(wait_event stop_stream 0.1 "$STEP_MARK"); then
            t_stop=$(field time <<< "$ev2")
            extra=", the app ended the video service (Navigation.StopStream)"
        fi
        stopped_after=$(secs "$t_stop" "$STEP_T")
        sleep 2.5
        if wait_event video_data 0.1 "$(field seq <<< "$ev")" available=true > /dev/null; then
            check FAIL "$name" "video stopped (${stopped_after} s) but reached Core again while the app may not stream"
        elif awk -v s="$stopped_after" 'BEGIN{exit !(s <= 4)}'; then
            check PASS "$name" "video stopped ${stopped_after} s after the change$extra"
        else
            check FAIL "$name" "video stopped only ${stopped_after} s after the change (Core's timeout, not the app)$extra"
        fi
    elif video_on; then
        check FAIL "$name" "video still reaches Core 8 s after the change"
    else
        sleep 2
        check PASS "$name" "no video (stopped before)"
    fi
    stray_after "$name"
}

level_step BACKGROUND      # OnEventChanged EMBEDDED_NAVI active: BACKGROUND, NOT_STREAMABLE
stop_check background
sleep 0.5
snapshot start             # the first stream, whole if Core kept the file when the stream stopped
level_step NONE            # OnExitApplication USER_EXIT
sleep 3
if wait_event video_data 0.1 "$STEP_MARK" available=true > /dev/null; then
    check FAIL none "video reached Core in NONE"
else
    check PASS none "no video in NONE"
fi
stray_after none

full_again() { # NAME: FULL; the video and the haptic rectangles must come back
    local name=$1 ev
    level_step FULL
    if ev=$(wait_event video_data 12 "$STEP_MARK" available=true); then
        check PASS "$name" "video back $(secs "$(field time <<< "$ev")" "$STEP_T") s after SDL.ActivateApp"
        if ev=$(wait_event haptic 5 "$STEP_MARK"); then
            check PASS "$name-haptics" "SendHapticData again ($(field count <<< "$ev") rectangles) $(secs "$(field time <<< "$ev")" "$STEP_T") s after FULL"
        else
            check FAIL "$name-haptics" "no SendHapticData within 5 s of the video restarting (the HMI dropped the rectangles with the stream)"
        fi
    else
        check FAIL "$name" "no video within 12 s of SDL.ActivateApp"
    fi
}
full_again none-to-full

# Straight from FULL to NONE (Core ends the video service at once), and back.
sleep 2
level_step NONE
stop_check full-to-none
full_again none-to-full-2
sleep 2

# Quick changes while driving: each loss of FULL must stop the video at once, with no picture
# after it (the race Core reports as "should not stream"), and FULL must bring it back.
CYCLES=${CHECK_CYCLES:-10}
cycle_log=$(log_size); cycle_lines=$(lines); cycle_problems=""; cycle_worst=0
for ((c = 1; c <= CYCLES; c++)); do
    # Mostly NONE: there Core ends the video service itself at once, racing the app's own stop.
    if ((c % 3 == 1)); then lost=BACKGROUND; else lost=NONE; fi
    level_step "$lost"
    if ev=$(wait_event video_data 5 "$STEP_MARK" available=false); then
        t_stop=$(awk -v a="$(field time <<< "$ev")" -v d="$DATA_STOPPED_TIMEOUT" 'BEGIN{printf "%.3f", a-d}')
        if ev2=$(wait_event stop_stream 0.1 "$STEP_MARK"); then t_stop=$(field time <<< "$ev2"); fi
        took=$(secs "$t_stop" "$STEP_T")
        cycle_worst=$(awk -v a="$took" -v b="$cycle_worst" 'BEGIN{print (a > b ? a : b)}')
    else
        cycle_problems+="$lost #$c: video went on; "
    fi
    sleep 0.7
    level_step FULL
    if ! wait_event video_data 8 "$STEP_MARK" available=true > /dev/null; then
        why=$(tail -n +"$((cycle_lines + 1))" "$CW_LOG" | grep -E -i "refused|did not start" | tail -1 | sed 's/.*\] //' | cut -c1-160)
        cycle_problems+="FULL #$c: no video (${why:-nothing printed}), stopped the cycles; "
        break
    fi
    sleep 1.5
done
strays=$(count_in_log "$cycle_log" "$SHOULD_NOT_STREAM")
if [ -z "$cycle_problems" ] && awk -v w="$cycle_worst" 'BEGIN{exit !(w <= 4)}'; then
    check PASS level-cycles "$CYCLES losses of FULL (BACKGROUND/NONE) and back: video stopped within ${cycle_worst} s each time and came back"
else
    check FAIL level-cycles "$CYCLES losses of FULL and back: ${cycle_problems}slowest stop ${cycle_worst} s"
fi
if [ "$strays" -gt 0 ]; then
    check FAIL level-cycles-no-picture "Core logged '$SHOULD_NOT_STREAM' $strays times during the $CYCLES changes"
else
    check PASS level-cycles-no-picture "no '$SHOULD_NOT_STREAM' during the $CYCLES changes"
fi
sleep 1

# Core killed mid-drive and started again: the app reconnects, the HMI activates it again.
note "killing Core (SIGKILL)"
log_part "$LOG_PHASE1" > "$OUT/core-log-1.txt"
M=$(mark)
snapshot_audio
kill_core
sleep 1
start_core || check FAIL restart "Core did not start again"
LOG_PHASE2=$LOG_START
if ev=$(wait_event registered 40 "$M" policyAppID=$APP_ID); then
    t_reg=$(field time <<< "$ev")
    t_back=$(ctl events since="$M" connected | head -1 | field time)
    if ! wait_event activated 6 "$M" > /dev/null; then
        # The HMI re-activates only an app it saw in FULL when Core went away.
        note "the HMI did not re-activate the app (it was not in FULL); activating it"
        ctl activate > /dev/null || note "activation failed"
    fi
    if ev=$(wait_event activated 10 "$M"); then
        t_act=$(field time <<< "$ev")
        aseq=$(field seq <<< "$ev")
        if ev=$(wait_event video_data 5 "$aseq" available=true); then
            check PASS reconnect "app registered again $(secs "$t_reg" "${t_back:-$t_reg}") s after the HMI reached the new Core; video $(secs "$(field time <<< "$ev")" "$t_act") s after the HMI re-activated it"
        else
            check FAIL reconnect "no video within 5 s of the HMI re-activating the app"
        fi
        if ev=$(wait_event haptic 6 "$aseq"); then
            check PASS reconnect-haptics "SendHapticData again after the reconnect ($(field count <<< "$ev") rectangles)"
        else
            check FAIL reconnect-haptics "no SendHapticData within 6 s of the re-activation after the reconnect"
        fi
        sleep 2
    else
        check FAIL reconnect "the HMI did not re-activate the app"
    fi
else
    check FAIL reconnect "the app did not register again within 40 s of Core restarting"
fi
snapshot reconnect         # the stream since the restart (its tail may still be in Core's buffer)

# Resize: a new VIDEO_STREAMING capability for the app.
M=$(mark); t_resize=$(now); L=$(lines)
ctl resize 480 320 > /dev/null
if ev=$(wait_event set_video_config 15 "$M" size=480x320); then
    seq=$(field seq <<< "$ev")
    if wait_event video_data 10 "$seq" available=true > /dev/null || { sleep 2; video_on; }; then
        sleep 3
        printed=$(new_output "$L" "head unit resized the stream to")
        check PASS resize "SetVideoConfig 480x320 $(secs "$(field time <<< "$ev")" "$t_resize") s after OnSystemCapabilityUpdated, and video again${printed:+; the app printed: $printed}"
    else
        check FAIL resize "SetVideoConfig 480x320 asked, but no video followed within 10 s"
    fi
else
    sizes=$(ctl events since="$M" set_video_config | "$PYTHON" -c 'import json,sys; print(" ".join(json.loads(l)["size"] for l in sys.stdin if l.strip()))')
    check FAIL resize "no SetVideoConfig 480x320 within 15 s (asked: ${sizes:-nothing})"
fi
snapshot resize
stop_drive
sleep 0.5
# The voice prompts Core passed on (its audio file is complete once the app's audio service ended).
snapshot_audio
sleep 0.5
snapshot resize            # the 480x320 stream, whole if Core kept the file
grep -E -i "summary:|frames rendered|^error:|^warning:" "$OUT/carwindow-1.log" | head -8 | sed 's/^/# drive 1: /' >&2

# ---- phase 2: 800x480 refused --------------------------------------------------------------

ctl refuse 800x480 > /dev/null
M=$(mark)
start_drive 45
if wait_event registered 45 "$M" policyAppID=$APP_ID > /dev/null; then
    ctl activate > /dev/null || note "activation failed"
    if wait_event set_video_config 15 "$M" size=800x480 accepted=false > /dev/null; then
        how=""
        # Core 8.2 answers a refused video start by moving the app to NONE (it asks the HMI
        # BasicCommunication.CloseApplication) unless another stream is open: the driver selects
        # the app again, and the app must then ask another size, not the refused one. A start
        # the app made before it heard of NONE does not count.
        if wait_event close_application 3 "$M" > /dev/null; then
            how="Core moved the app to NONE (CloseApplication); activated again, "
            sleep 0.5
            M2=$(mark)
            ctl activate > /dev/null || note "activation failed"
            ev=$(wait_event set_video_config 10 "$M2") || ev=""
            if [ "$(field size <<< "$ev")" = 800x480 ]; then ev=""; how="${how}it asked 800x480 again; "; fi
        else
            ev=$(wait_event set_video_config 4 "$M" size!=800x480) || ev=""
        fi
        if [ -n "$ev" ]; then
            if wait_event video_data 10 "$(field seq <<< "$ev")" available=true > /dev/null; then
                sleep 2
                snapshot refused
                check PASS refused-size "800x480 REJECTED; ${how}the app asked $(field size <<< "$ev") and streams"
            else
                check FAIL refused-size "800x480 REJECTED; ${how}the app asked $(field size <<< "$ev") but no video followed"
            fi
        else
            asked=$(ctl events since="$M" set_video_config | "$PYTHON" -c 'import json,sys; print(" ".join(json.loads(l)["size"] for l in sys.stdin if l.strip()))')
            check FAIL refused-size "800x480 REJECTED; ${how}the app tried no other size (SetVideoConfig asked: ${asked:-nothing})"
        fi
    else
        check FAIL refused-size "the app asked for no 800x480 video within 15 s"
    fi
else
    check FAIL refused-size "the second drive did not register"
fi
stop_drive
sleep 0.5
snapshot_audio
# Only a stream of this drive (the file may still hold the last drive's).
if wait_event video_data 0.1 "$M" available=true > /dev/null; then snapshot refused; fi
ctl refuse none > /dev/null

# ---- Core's log, the video files, haptics ----------------------------------------------------

{ cat "$OUT/core-log-1.txt"; log_part "$LOG_PHASE2"; } > "$OUT/core-log.txt"
if [ ! -s "$OUT/core-log.txt" ]; then
    note "Core's log $SDLCORE_LOG is empty or missing: falling back to Core's standard output"
    cat "$OUT"/core-stdout-*.txt > "$OUT/core-log.txt"
fi
n=$(grep -c -F "$SHOULD_NOT_STREAM" "$OUT/core-log.txt")
if [ "$n" -eq 0 ]; then
    check PASS core-no-stray-video "no '$SHOULD_NOT_STREAM' in Core's log"
else
    check FAIL core-no-stray-video "'$SHOULD_NOT_STREAM' $n times in Core's log"
fi
n=$(grep -c -F "$BLOCKED" "$OUT/core-log.txt")
if [ "$n" -eq 0 ]; then
    check PASS core-no-blocked-rpc "no '$BLOCKED' in Core's log"
else
    blocked=$(grep -F "$BLOCKED" "$OUT/core-log.txt" | sed -n 's/.*RPC: \([A-Za-z]*\).*HMI status: \([A-Z_]*\).*/\1 in \2/p' |
        sort | uniq -c | awk '{c = $1; $1 = ""; printf "%s%s x%d", (n++ ? ", " : ""), substr($0, 2), c}')
    check FAIL core-no-blocked-rpc "'$BLOCKED' $n times: ${blocked:-see $OUT/core-log.txt}"
fi
# ERROR "Couldn't establish service 11 for session N"; the NAK to the app says "$UNPROTECTED".
n=$(grep -c -E "Couldn't establish .*service 11 for session" "$OUT/core-log.txt")
if [ "$n" -eq 0 ]; then
    check PASS core-video-restarts "Core refused no video start as already open (no \"Couldn't establish service 11\")"
else
    check FAIL core-video-restarts "Core refused $n video starts ('$UNPROTECTED'): a video service Core ended (EndService) was never acknowledged (EndServiceACK), so Core still counts it open"
fi
n=$(grep -c -F "$INCORRECT" "$OUT/core-log.txt")
if [ "$n" -eq 0 ]; then
    check PASS core-hmi-valid "Core found every HMI message valid (no '$INCORRECT')"
else
    check FAIL core-hmi-valid "'$INCORRECT' $n times: $(grep -F "$INCORRECT" "$OUT/core-log.txt" | head -2 | cut -c1-300 | tr '\n' ' ')"
fi
caps=$(ctl events since=0 app_capability | wc -l)
capblocked=$(grep -F "$BLOCKED" "$OUT/core-log.txt" | grep -c "RPC: OnAppCapabilityUpdated")
if [ "$capblocked" -gt 0 ]; then
    check FAIL app-capability "OnAppCapabilityUpdated blocked by policies $capblocked times; reached the HMI $caps times"
elif [ "$caps" -gt 0 ]; then
    check PASS app-capability "OnAppCapabilityUpdated reached the HMI $caps times: $(ctl events since=0 app_capability | tail -1 | field sizes)"
else
    check "NOT YET" app-capability "the app sent no OnAppCapabilityUpdated"
fi

for item in start=800x480 resize=480x320 reconnect=800x480 refused=other; do
    name=${item%=*} want=${item#*=}
    f="$OUT/video-$name.h264"
    if [ ! -f "$f" ]; then
        [ "$name" = start ] && check FAIL decode-start "Core wrote no video file at $SDLCORE_VIDEO_FILE"
        continue
    fi
    got=$(probe "$f")
    size=${got% *}
    if [ -n "$got" ] && { [ "$want" = "$size" ] || { [ "$want" = other ] && [ "$size" != 800x480 ]; }; }; then
        check PASS "decode-$name" "$(basename "$f"): ${got% *}, ${got#* } frames, $(stat -c %s "$f") bytes"
    elif [ -n "$got" ]; then
        check FAIL "decode-$name" "$(basename "$f"): ${got% *} (expected $want), ${got#* } frames"
    else
        check FAIL "decode-$name" "$(basename "$f") ($(stat -c %s "$f") bytes) does not decode as H.264"
    fi
done

haptics=$(ctl events since=0 haptic | wc -l)
hfail=$(cat "$OUT"/carwindow-*.log | grep -c "SendHapticData failed")
if [ "$haptics" -gt 0 ] && [ "$hfail" -eq 0 ]; then
    check PASS haptic-success "$haptics SendHapticData, each answered SUCCESS by the HMI; the app reported no failure"
elif [ "$haptics" -gt 0 ]; then
    check FAIL haptic-success "$haptics SendHapticData reached the HMI, but the app reported $hfail failures"
else
    check FAIL haptic-success "no SendHapticData reached the HMI"
fi
# Each drive ends on SIGINT with status 130 (or by itself), never by a crash.
crashes=$(grep -l -E "Program crashed|double free|Fatal error" "$OUT"/carwindow-*.log 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
bad_exit=""
for rc in "${DRIVE_RCS[@]}"; do
    case $rc in
        0 | 130 | 143 | [0-9] | [0-9][0-9] | 1[0-2][0-9]) ;;   # done, SIGINT, SIGTERM, or an error status
        *) bad_exit=yes ;;                                    # killed by another signal, or hung
    esac
done
if [ -z "$crashes" ] && [ -z "$bad_exit" ]; then
    check PASS drive-exit "exit statuses: ${DRIVE_EXITS%; } (130: stopped by SIGINT)"
else
    check FAIL drive-exit "exit statuses: ${DRIVE_EXITS%; }${crashes:+; crashed: $crashes(see the backtrace there)}"
fi
# ---- voice prompts: the drive chimes before each turn on the head unit's audio service -------
audio=$(ctl events since=0 start_audio_stream | wc -l)
prompts=$(grep -h "^voice prompts:" "$OUT"/carwindow-*.log 2>/dev/null | head -1)
if [ "$audio" -gt 0 ] && [ -s "$OUT/audio.pcm" ]; then
    seconds=$(ffprobe -v error -f s16le -ar 16000 -ac 1 -show_entries format=duration -of csv=p=0 "$OUT/audio.pcm" 2>/dev/null)
    if [ -n "$seconds" ]; then
        check PASS audio "$audio Navigation.StartAudioStream; Core wrote $(stat -c %s "$OUT/audio.pcm") bytes of 16 kHz 16-bit PCM, ${seconds} s (ffprobe); the app: ${prompts:-no summary}"
    else
        check FAIL audio "Core's audio file $OUT/audio.pcm does not read as 16 kHz 16-bit PCM"
    fi
elif [ "$audio" -gt 0 ]; then
    check FAIL audio "$audio Navigation.StartAudioStream but Core wrote no audio file at $SDLCORE_AUDIO_FILE; the app: ${prompts:-no summary}"
else
    check "NOT YET" audio "no Navigation.StartAudioStream (no turn announced during the drive?); the app: ${prompts:-no summary}"
fi

note "logs: $OUT (hmi-log.jsonl: every HMI message; core-log.txt; carwindow-*.log; video-*.h264)"
if [ "$FAILS" -gt 0 ]; then
    note "$FAILS checks FAILED"
    exit 1
fi
exit 0
