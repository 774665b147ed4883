#!/usr/bin/env bash
# A player joins a running RTP stream late, as a new user would: `carwindow drive --rtp` runs,
# and 5 s later ffmpeg opens the drive's SDP file and must decode pictures within the IDR
# interval (2 s by default) plus a margin. The drive's own Annex-B recording must stay whole.
# Run by scripts/test.sh after the build.
#
#   scripts/rtp-join-check.sh [extra carwindow drive options, e.g. --rtp-idr-interval 0 to see it fail]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product carwindow
carwindow=$(swift build --show-bin-path)/carwindow
work=$(mktemp -d)
drive=
cleanup() {
    [[ -n "$drive" ]] && kill "$drive" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

port=$((2 * (15000 + RANDOM % 10000)))
"$carwindow" drive --rtp "127.0.0.1:$port" --speed 2 --max-seconds 16 --no-mp4 --out "$work/drive.h264" "$@" \
    > "$work/drive.out" 2>&1 &
drive=$!
sleep 5
sdp=$work/drive.sdp
grep -q 'sprop-parameter-sets=' "$sdp" || { cat "$sdp" >&2; echo "rtp-join-check.sh: the SDP has no sprop-parameter-sets" >&2; exit 1; }
grep -o 'profile-level-id=[0-9a-f]*' "$sdp"
# The player, late: up to 2 s of IDR interval plus 3 s of margin to show its first pictures.
# Five pictures end it by itself, each is written as it is decoded (-flush_packets), and it
# probes the stream for half a second rather than ffmpeg's default five (the SDP carries the
# parameter sets): with two busy loops on two cores, 15 pictures after a full probe took
# 4.5-5 s and a player killed at 5 s lost what it had shown in an unflushed buffer; now 1.6-2.9 s.
started=$(date +%s.%N)
timeout 5 ffmpeg -hide_banner -loglevel error -protocol_whitelist file,udp,rtp -analyzeduration 500000 -i "$sdp" -frames:v 5 \
    -flush_packets 1 -f framecrc "$work/received.crc" 2> "$work/ffmpeg.err" || true
elapsed=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
frames=$(grep -vc '^#' "$work/received.crc" 2>/dev/null || true)
if [[ "${frames:-0}" -lt 1 ]]; then
    cat "$work/ffmpeg.err" >&2
    echo "rtp-join-check.sh: ffmpeg, started 5 s into the drive, decoded no picture in $elapsed s" >&2
    exit 1
fi
echo "rtp-join-check.sh: ffmpeg joined 5 s late and decoded $frames pictures within $elapsed s"
wait "$drive"
drive=
errors=$(ffmpeg -v error -i "$work/drive.h264" -f null - 2>&1 || echo "ffmpeg failed")
[[ -z "$errors" ]] || { echo "rtp-join-check.sh: the drive's own recording does not decode: $errors" >&2; exit 1; }
keyframes=$(ffprobe -v error -select_streams v:0 -show_entries frame=key_frame -of csv=p=0 "$work/drive.h264" | grep -c '^1' || true)
echo "rtp-join-check.sh: the drive's recording decodes, with $keyframes IDR pictures"
