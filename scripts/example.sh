#!/usr/bin/env bash
# Builds the example engine (examples/map-snapshot), a package of its own that depends on the
# CarWindowMap product only, draws the bundled Helsinki map into a PNG with it, and checks that
# its binary links neither OpenH264 nor libva: an engine that only wants the map gets no encoder.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
example=examples/map-snapshot
swift build --package-path "$example" -c release
bin=$(swift build --package-path "$example" -c release --show-bin-path)/map-snapshot
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" "$out/snapshot.png" assets
linked=$(ldd "$bin")
if grep -E -i 'openh264|libva' <<<"$linked"; then
    echo "example.sh: the map-only example links an encoder library (above); CarWindowMap must not depend on one" >&2
    exit 1
fi
python3 - "$out/snapshot.png" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (640, 384), f"{width}x{height}, expected 640x384"
print(f"example.sh: map-snapshot wrote a {width}x{height} PNG; links no OpenH264 and no libva")
PY
