#!/usr/bin/env bash
# The C API: builds libcarwindow.so with its header and pkg-config file, and proves it.
#
#   scripts/c-api.sh stage            # build (release) and lay out .build/c-api/{include,lib,lib/pkgconfig}
#   scripts/c-api.sh install PREFIX   # the same under PREFIX (/usr/local, say; needs write access there)
#   scripts/c-api.sh check            # stage, then build and run examples/c and examples/cpp against it
#                                     # through pkg-config (the engines that draw their own picture into
#                                     # carwindow headunit, their pictures' colours checked), decode their
#                                     # streams with ffmpeg, and run the bad-argument test (Tests/CAPI)
#                                     # under valgrind's memcheck
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

version=$(sed -n 's/^#define CARWINDOW_API_VERSION_MAJOR \([0-9]*\)$/\1/p' Sources/CCarWindow/include/carwindow.h).$(
    sed -n 's/^#define CARWINDOW_API_VERSION_MINOR \([0-9]*\)$/\1/p' Sources/CCarWindow/include/carwindow.h)

# Lays out the header, the library (file libcarwindow.so.MAJOR, its soname, and the libcarwindow.so
# link the linker looks for) and carwindow.pc under $1.
stage() {
    local prefix=$1
    swift build -c release --product CarWindowC
    local built
    built=$(swift build -c release --show-bin-path)/libCarWindowC.so
    mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
    install -m 644 Sources/CCarWindow/include/carwindow.h "$prefix/include/carwindow.h"
    install -m 755 "$built" "$prefix/lib/libcarwindow.so.${version%%.*}"
    ln -sf "libcarwindow.so.${version%%.*}" "$prefix/lib/libcarwindow.so"
    # The library finds the Swift runtime through its own RUNPATH (the toolchain's lib folder);
    # programs find the library through the rpath below.
    cat > "$prefix/lib/pkgconfig/carwindow.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: carwindow
Description: CarWindow's C API: a navigation map drawn headless with OpenGL ES and streamed as H.264 into a car's head unit
Version: $version
Libs: -L\${libdir} -lcarwindow -Wl,-rpath,\${libdir}
Cflags: -I\${includedir}
PC
    echo "c-api.sh: staged carwindow $version in $prefix"
}

# Starts `carwindow headunit` with the arguments given, writing what it receives to $1, and sets
# headunit_pid and headunit_port once it listens. Port 0: the head unit takes a free port and says
# which in its first line (a fixed sleep and a random port could both lose on a loaded machine).
start_headunit() {
    local received=$1 log=$1.log
    shift
    : > "$log"                              # there before the head unit's shell opens it: the wait reads it
    "$headunit_bin" headunit --port 0 --out "$received" "$@" > "$log" 2>&1 &
    headunit_pid=$! headunit_port=
    for _ in $(seq 600); do                 # hang guard: 60 s for the head unit to listen
        headunit_port=$(sed -n 's/^head unit listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log")
        [[ -n "$headunit_port" ]] && return 0
        kill -0 "$headunit_pid" 2>/dev/null || { cat "$log" >&2; echo "c-api.sh: the head unit exited" >&2; exit 1; }
        sleep 0.1
    done
    cat "$log" >&2
    echo "c-api.sh: the head unit did not listen within 60 s" >&2
    exit 1
}

# Waits for the head unit started last to end (the app left), and checks that what it received
# ($1) decodes cleanly as pictures of size $2 (WIDTHxHEIGHT).
finish_headunit() {
    local received=$1 size=$2 frames
    wait "$headunit_pid" || { cat "$received.log" >&2; echo "c-api.sh: the head unit failed" >&2; exit 1; }
    frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames,width,height \
        -of csv=p=0 "$received")
    [[ "$frames" == "${size/x/,}",* ]] || { echo "c-api.sh: the head unit received $frames, expected $size pictures" >&2; exit 1; }
    ffmpeg -v error -i "$received" -f null - 2>&1 | (! grep .) || { echo "c-api.sh: the head unit's stream does not decode" >&2; exit 1; }
    echo "c-api.sh: the head unit received and decodes: width,height,frames = $frames"
}

# A style as published, without tiles_path: its PMTiles archive and sprite on a local server
# (Tests/Fixtures/tile_server.py), fetched through the disk cache in cache_path. Run three
# times: with the server; with the server gone and the cache kept (the cache serves); with the
# server gone and a new cache (carwindow_session_create refuses with INPUT, naming the source).
published_style() {
    local out=$1 root=$1/server port
    mkdir -p "$root/sprites"
    cp assets/helsinki.pmtiles "$root/"
    cp assets/sprites/carwindow* "$root/sprites/"
    python3 Tests/Fixtures/tile_server.py --root "$root" --port 0 > "$out/server.log" 2>&1 &
    local server_pid=$!
    for _ in $(seq 100); do                 # hang guard: 10 s for the server to listen
        port=$(sed -n 's/^PORT \([0-9]*\)$/\1/p' "$out/server.log")
        [[ -n "$port" ]] && break
        sleep 0.1
    done
    [[ -n "$port" ]] || { cat "$out/server.log" >&2; echo "c-api.sh: the tile server did not listen" >&2; exit 1; }
    python3 - "$port" "$out/published.json" <<'PY'
import json, sys
port, target = sys.argv[1], sys.argv[2]
style = json.load(open("assets/styles/day.json"))
for source in style["sources"].values():
    if source.get("type") == "vector":
        source["url"] = f"pmtiles://http://127.0.0.1:{port}/helsinki.pmtiles"
style["sprite"] = f"http://127.0.0.1:{port}/sprites/carwindow"
json.dump(style, open(target, "w"))
PY
    echo "c-api.sh: Tests/CAPI/published_style.c: tiles and sprite on a server (port $port)"
    "$out/published-style" "$out/published.json" assets/fonts "$out/cache" "$out/published.h264" | tee "$out/published.log"
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
    local entries sprites
    entries=$(find "$out/cache/http" -name '*.entry' | wc -l)
    sprites=$(find "$out/cache/carwindow-style-files" -name '*.sprite*.png' | wc -l)
    if (( entries == 0 || sprites < 2 )); then
        echo "c-api.sh: the cache holds $entries answers and $sprites sprite sheets; expected some and the 1x and 2x" >&2
        exit 1
    fi
    echo "c-api.sh: the cache holds $entries answers and the sprite's $sprites sheets"
    ffmpeg -v error -i "$out/published.h264" -f null - 2>&1 | (! grep .) \
        || { echo "c-api.sh: the published style's stream does not decode" >&2; exit 1; }
    echo "c-api.sh: the same, the server gone: the cache serves"
    "$out/published-style" "$out/published.json" assets/fonts "$out/cache" "$out/offline.h264" | tee "$out/offline.log"
    ffmpeg -v error -i "$out/offline.h264" -f null - 2>&1 | (! grep .) \
        || { echo "c-api.sh: the stream from the cache does not decode" >&2; exit 1; }
    echo "c-api.sh: the server gone and an empty cache: carwindow_session_create refuses"
    local status=0
    "$out/published-style" "$out/published.json" assets/fonts "$out/empty-cache" "$out/none.h264" > "$out/refused.log" || status=$?
    cat "$out/refused.log"
    if (( status != 3 )) || ! grep -q '^create failed: CARWINDOW_ERROR_INPUT: .*source "openmaptiles"' "$out/refused.log"; then
        echo "c-api.sh: expected an INPUT error naming the source, got exit $status" >&2
        exit 1
    fi
}

check() {
    scripts/install-deps.sh --tests
    local missing=()
    for tool in gcc g++ valgrind; do command -v "$tool" >/dev/null || missing+=("$tool"); done
    if [[ ${#missing[@]} -gt 0 ]]; then
        local sudo=()
        [[ $(id -u) -eq 0 ]] || sudo=(sudo)
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends gcc g++ valgrind
    fi
    local prefix=$root/.build/c-api
    stage "$prefix"
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    local out
    out=$(mktemp -d)
    trap 'rm -rf "$out"' RETURN

    # Exported: exactly the functions the header declares.
    local declared exported
    declared=$(grep -vE '^\s*(\*|/\*|//|#)' Sources/CCarWindow/include/carwindow.h | grep -oE '\bcarwindow_[a-z_]+\(' \
        | tr -d '(' | sort -u)
    exported=$(nm -D --defined-only "$prefix/lib/libcarwindow.so" | awk '{print $3}' | sed 's/@.*//' | grep '^carwindow_' | sort -u)
    if [[ "$declared" != "$exported" ]]; then
        diff <(echo "$declared") <(echo "$exported") >&2 || true
        echo "c-api.sh: the library's exports differ from carwindow.h (< header only, > library only)" >&2
        exit 1
    fi
    echo "c-api.sh: the library exports the header's $(wc -l <<<"$declared") functions and nothing else"

    local warnings=(-Wall -Wextra -Werror -pedantic)
    # shellcheck disable=SC2046  # pkg-config's words are meant to split
    gcc -std=c11 "${warnings[@]}" -O2 examples/c/drive.c -o "$out/drive" $(pkg-config --cflags --libs carwindow) -lm -pthread
    # shellcheck disable=SC2046
    g++ -std=c++17 "${warnings[@]}" -O2 examples/cpp/drive.cpp -o "$out/drive-cpp" $(pkg-config --cflags --libs carwindow)
    # shellcheck disable=SC2046
    gcc -std=c11 "${warnings[@]}" -O2 examples/c/gl-engine.c -o "$out/gl-engine" $(pkg-config --cflags --libs carwindow glesv2) -pthread
    # shellcheck disable=SC2046
    gcc -std=c11 "${warnings[@]}" -O2 examples/c/cairo-engine.c -o "$out/cairo-engine" $(pkg-config --cflags --libs carwindow cairo)
    # shellcheck disable=SC2046
    gcc -std=c11 "${warnings[@]}" -g -O0 Tests/CAPI/bad_arguments.c -o "$out/bad-arguments" $(pkg-config --cflags --libs carwindow) -pthread
    # shellcheck disable=SC2046
    gcc -std=c11 "${warnings[@]}" -O2 Tests/CAPI/published_style.c -o "$out/published-style" $(pkg-config --cflags --libs carwindow)
    # The header on its own, as C89-era C and as C++ (it must need nothing before it).
    echo '#include <carwindow.h>' | gcc -std=c99 "${warnings[@]}" -x c -fsyntax-only $(pkg-config --cflags carwindow) -
    echo '#include <carwindow.h>' | g++ -std=c++11 "${warnings[@]}" -x c++ -fsyntax-only $(pkg-config --cflags carwindow) -

    echo "c-api.sh: examples/c/drive.c"
    "$out/drive" assets "$out" 6 | tee "$out/drive.log"
    for file in "$out/c-drive.h264" "$out/c-drive.mp4"; do
        local frames errors
        # Passthrough in the file's own time base: the MP4 keeps the real timing (a still map is one
        # long picture, and a picture can follow the last sooner than 1/fps), which a null output at
        # the nominal frame rate would round into equal, "non-monotonic" timestamps.
        errors=$(ffmpeg -v error -i "$file" -fps_mode passthrough -enc_time_base -1 -f null - 2>&1 || echo "ffmpeg failed")
        frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames,width,height \
            -of csv=p=0 "$file")
        if [[ -n "$errors" ]]; then
            echo "c-api.sh: $file does not decode cleanly: $errors" >&2
            exit 1
        fi
        echo "c-api.sh: $file decodes: width,height,frames = $frames"
    done

    echo "c-api.sh: examples/c/drive.c into a SmartDeviceLink head unit (carwindow headunit)"
    # The head unit only receives and writes what it gets, so the debug build test.sh made serves
    # (a release build of the CLI for it alone cost CI two minutes).
    swift build --product carwindow
    headunit_bin=$(swift build --show-bin-path)/carwindow
    start_headunit "$out/received.h264" --size 640x384 --tap-after 0
    mkdir -p "$out/sdl"
    "$out/drive" assets "$out/sdl" 4 "127.0.0.1:$headunit_port" | tee "$out/drive-sdl.log"
    finish_headunit "$out/received.h264" 640x384

    # The engine's own picture, without CarWindow's map. Its content is checked, not only that it
    # decodes: colours at places, in the last picture the head unit received.
    echo "c-api.sh: examples/c/gl-engine.c (its own GLES shaders through on_draw) into the head unit"
    # The head unit taps the engine's button (haptic rectangle 7); the engine turns it green.
    start_headunit "$out/gl-received.h264" --size 640x384 --tap-after 3 --tap-region 7
    "$out/gl-engine" "$out/gl-unused.h264" "127.0.0.1:$headunit_port" 20
    finish_headunit "$out/gl-received.h264" 640x384
    # Background, the orange arrow upright (its head above its stem), the blue bar, the green button.
    python3 scripts/check-picture.py "$out/gl-received.h264" 640 384 0.02,0.5=20,24,40 0.44,0.44=255,140,26 \
        0.44,0.58=20,24,40 0.5,0.02=77,153,255 0.85,0.82=51,191,77

    echo "c-api.sh: examples/c/cairo-engine.c (drawn with Cairo, pushed as pixels) into the head unit"
    start_headunit "$out/cairo-received.h264" --size 640x384 --tap-after 0
    "$out/cairo-engine" "$out/cairo-unused.h264" "127.0.0.1:$headunit_port" 3
    finish_headunit "$out/cairo-received.h264" 640x384
    # Background, the blue turn card (top left), the yellow arrival bar (bottom): BGRA taken as such.
    python3 scripts/check-picture.py "$out/cairo-received.h264" 640 384 0.8,0.3=31,31,36 0.1,0.15=26,89,204 \
        0.5,0.95=242,191,26

    echo "c-api.sh: examples/cpp/drive.cpp"
    "$out/drive-cpp" assets "$out/cpp-drive.h264"
    ffmpeg -v error -i "$out/cpp-drive.h264" -f null - 2>&1 | (! grep .) || { echo "c-api.sh: the C++ example's stream does not decode" >&2; exit 1; }

    published_style "$out"

    echo "c-api.sh: Tests/CAPI/bad_arguments.c under valgrind memcheck"
    # Mesa's shader cache off: its zstd noise is not ours. Debug info kept for the driver, which EGL
    # unloads before exit, so the suppressions can name it.
    MESA_SHADER_CACHE_DISABLE=true valgrind --quiet --keep-debuginfo=yes --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite --show-leak-kinds=definite --suppressions=Tests/CAPI/valgrind.supp \
        "$out/bad-arguments" assets "$out"
    echo "c-api.sh: all C API checks passed"
}

case "${1:-}" in
    stage) stage "$root/.build/c-api" ;;
    install)
        [[ -n "${2:-}" ]] || { echo "usage: $0 install PREFIX" >&2; exit 64; }
        stage "$(realpath -m "$2")"
        ;;
    check) check ;;
    *) echo "usage: $0 stage | install PREFIX | check" >&2; exit 64 ;;
esac
