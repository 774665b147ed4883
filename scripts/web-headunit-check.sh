#!/usr/bin/env bash
# The browser head unit in a real browser: Debian's Chromium, headless, driven over the DevTools
# protocol by test-tools/web-headunit/check.py, against `carwindow headunit --web` with a drive
# streaming into it, then against `carwindow drive --web` alone. Installs chromium when missing.
#
#   scripts/web-headunit-check.sh [--screenshot PATH]   # also keeps the head unit's screenshot
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null; then
    sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    echo "web-headunit-check.sh: installing chromium"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium > /dev/null
fi
swift build --product carwindow
carwindow=$(swift build --show-bin-path)/carwindow
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "web-headunit-check.sh: carwindow headunit --web, with carwindow drive --sdl streaming into it"
python3 test-tools/web-headunit/check.py --carwindow "$carwindow" --chromium chromium --out "$work/headunit" \
    || { grep -v ' info ' "$work/headunit/processes.log" | tail -30 >&2; exit 1; }
echo "web-headunit-check.sh: carwindow drive --web, no head unit"
python3 test-tools/web-headunit/check.py --carwindow "$carwindow" --chromium chromium --out "$work/drive" --drive-only \
    || { grep -v ' info ' "$work/drive/processes.log" | tail -30 >&2; exit 1; }
if [[ "${1:-}" == --screenshot && -n "${2:-}" ]]; then cp "$work/headunit/web-headunit.png" "$2"; fi
echo "web-headunit-check.sh: the browser head unit works in Chromium"
