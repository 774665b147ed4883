#!/usr/bin/env bash
# Builds the validating VA-API test driver (Tests/VADriver) that real libva loads, and prints the
# environment that points libva and the encoder at it:
#
#   eval "$(scripts/va-test-driver.sh)"     # LIBVA_DRIVER_NAME, LIBVA_DRIVERS_PATH, CARWINDOW_VAAPI_DEVICE,
#                                            # LD_PRELOAD
#   carwindow encode --encoder vaapi ...     # now runs the VA-API backend end to end through libva
#
# Without a GPU there is no DRM node for vaGetDisplayDRM, which asks libdrm whether its descriptor
# is one: the preloaded libcarwindow_fake_render_node.so answers yes for /dev/null alone.
#
# The driver writes what it checked to $CARWINDOW_VA_TEST_LOG (else standard error).
#
#   scripts/va-test-driver.sh check    # the VA-API backend end to end through libva and the driver
#                                      # (run by scripts/test.sh): see check() below
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/va-test-driver
mkdir -p "$out"
source=Tests/VADriver/carwindow_test_drv_video.c
library=$out/carwindow_test_drv_video.so
if [[ ! -f "$library" || "$source" -nt "$library" ]]; then
    # shellcheck disable=SC2046  # pkg-config's words are meant to split
    cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g -fPIC -shared -fvisibility=hidden "$source" \
        $(pkg-config --cflags libva) -pthread -o "$library.tmp"
    mv "$library.tmp" "$library"
fi
shim_source=Tests/VADriver/fake_render_node.c
shim=$out/libcarwindow_fake_render_node.so
if [[ ! -f "$shim" || "$shim_source" -nt "$shim" ]]; then
    cc -std=c11 -Wall -Wextra -Werror -O2 -fPIC -shared -fvisibility=hidden "$shim_source" -ldl -o "$shim.tmp"
    mv "$shim.tmp" "$shim"
fi
environment="export LIBVA_DRIVER_NAME=carwindow_test LIBVA_DRIVERS_PATH=$(pwd)/$out CARWINDOW_VAAPI_DEVICE=/dev/null LD_PRELOAD=$(pwd)/$shim"

# The driver's verdict in `log`: no violation and no leak, and at least one picture.
clean() {
    local log=$1 summary
    summary=$(grep '^SUMMARY' "$log" | tail -1)
    if grep -q '^VIOLATION\|^LEAK' "$log" || [[ "$summary" != *" violations=0 leaks=0" ]] || [[ "$summary" == *"pictures=0 "* ]]; then
        grep '^VIOLATION\|^LEAK\|^SUMMARY' "$log" >&2
        echo "va-test-driver.sh: the driver found the calls above against the rules, or nothing was coded ($2)" >&2
        exit 1
    fi
    echo "va-test-driver.sh: $2: $summary"
}

# Frame count, size and profile of a stream, and whether ffmpeg decodes it without a word.
probe() {
    local file=$1 errors
    errors=$(ffmpeg -v error -i "$file" -f null - 2>&1 || echo "ffmpeg failed")
    [[ -z "$errors" ]] || { echo "va-test-driver.sh: $file does not decode: $errors" >&2; exit 1; }
    ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=profile,width,height,nb_read_frames -of csv=p=0 "$file"
}

check() {
    swift build --product carwindow
    local carwindow work
    carwindow=$(swift build --show-bin-path)/carwindow
    work=$(mktemp -d)
    trap 'rm -rf "$work"' RETURN
    (
        eval "$environment"
        export CARWINDOW_VA_TEST_LOG

        # The driver's own checks can fail: each rule broken on purpose is named.
        # shellcheck disable=SC2046
        cc -std=c11 -Wall -Wextra -Werror Tests/VADriver/violations.c -o "$work/violations" $(pkg-config --cflags --libs libva libva-drm)
        CARWINDOW_VA_TEST_LOG=$work/violations.log "$work/violations" 2>/dev/null

        # carwindow encode on the VA-API backend: 30 pictures, an IDR every 10 (asked for by the encoder).
        CARWINDOW_VA_TEST_LOG=$work/encode.log "$carwindow" encode --encoder vaapi --size 320x192 --frames 30 --idr-every 10 \
            --out "$work/vaapi.h264" > "$work/encode.out" 2>&1 || { cat "$work/encode.out" >&2; exit 1; }
        clean "$work/encode.log" "carwindow encode --encoder vaapi"
        local stream idrs
        stream=$(probe "$work/vaapi.h264")
        [[ "$stream" == "Constrained Baseline,320,192,30" ]] || { echo "va-test-driver.sh: encode gave $stream" >&2; exit 1; }
        idrs=$(grep -c '^PICTURE .* idr=1 ' "$work/encode.log")
        [[ "$idrs" == 3 ]] || { echo "va-test-driver.sh: $idrs IDR pictures, expected 3" >&2; exit 1; }
        echo "va-test-driver.sh: the stream decodes: profile,width,height,frames = $stream; $idrs IDR"

        # The pictures are the map: the driver codes the uploaded samples losslessly, so the stream
        # matches OpenH264's encoding of the same frames up to OpenH264's own loss.
        "$carwindow" encode --encoder openh264 --size 320x192 --frames 30 --idr-every 10 --out "$work/openh264.h264" > /dev/null 2>&1
        local psnr
        psnr=$(ffmpeg -i "$work/vaapi.h264" -i "$work/openh264.h264" -lavfi psnr -f null - 2>&1 | sed -n 's/.*average:\([0-9.inf]*\).*/\1/p')
        if [[ "$psnr" != inf ]] && ! awk -v p="$psnr" 'BEGIN { exit !(p >= 30) }'; then
            echo "va-test-driver.sh: the VA-API pictures differ from the map (PSNR $psnr dB against OpenH264's)" >&2
            exit 1
        fi
        echo "va-test-driver.sh: the pictures match the map: PSNR $psnr dB against OpenH264's encoding of the same frames"

        # A projection session on the VA-API backend, streaming into the in-repo head unit, which
        # lowers its maximum bitrate after 2 s: the encoder's rate control follows without a restart.
        local port=$((20000 + RANDOM % 20000)) headunit
        "$carwindow" headunit --port "$port" --size 480x288 --tap-after 1 --bitrate-after 2 --bitrate-to 300 \
            --out "$work/received.h264" > "$work/headunit.out" 2>&1 &
        headunit=$!
        sleep 1
        CARWINDOW_VA_TEST_LOG=$work/drive.log "$carwindow" drive --encoder vaapi --sdl "127.0.0.1:$port" --speed 4 \
            --max-seconds 8 --no-mp4 --out "$work/drive.h264" > "$work/drive.out" 2>&1 || { cat "$work/drive.out" >&2; exit 1; }
        wait "$headunit" || { cat "$work/headunit.out" >&2; exit 1; }
        clean "$work/drive.log" "carwindow drive --encoder vaapi --sdl"
        local received
        stream=$(probe "$work/drive.h264")
        received=$(probe "$work/received.h264")
        [[ "$received" == "Constrained Baseline,480,288,"* ]] || { echo "va-test-driver.sh: the head unit got $received" >&2; exit 1; }
        local rates
        rates=$(grep '^RATE' "$work/drive.log" | sed 's/.*bits_per_second=\([0-9]*\).*/\1/' | uniq | tr '\n' ' ')
        [[ "$rates" == "600000 300000 " ]] || { echo "va-test-driver.sh: rates asked of the driver: $rates, expected 600000 then 300000" >&2; exit 1; }
        echo "va-test-driver.sh: the drive decodes: $stream; the head unit's: $received; rates asked: $rates"

        # The VA-API device tests of the test suite, which skip without a device, run for real on
        # the driver (scripts/test.sh has built them).
        CARWINDOW_VA_TEST_LOG=$work/tests.log swift test --skip-build --filter VAAPIEncoderTests > "$work/tests.out" 2>&1 \
            || { grep -E '✘|↳' "$work/tests.out" >&2; exit 1; }
        grep -E 'Test run with' "$work/tests.out"
        local summaries
        summaries=$(grep -c '^SUMMARY .* violations=0 leaks=0' "$work/tests.log")
        if grep -q '^VIOLATION\|^LEAK' "$work/tests.log"; then
            grep '^VIOLATION\|^LEAK' "$work/tests.log" >&2
            echo "va-test-driver.sh: the device tests broke the rules above" >&2
            exit 1
        fi
        echo "va-test-driver.sh: the device tests ran on the driver: $summaries displays, each without a violation or a leak"
    )
    echo "va-test-driver.sh: the VA-API backend ran end to end through libva and the test driver"
}

if [[ "${1:-}" == check ]]; then
    check
else
    echo "$environment"
fi
