#!/usr/bin/env bash
# Shows the OpenH264 bug that RetiredOpenH264Encoder works around, and that its grace period
# avoids it: Tests/OpenH264/release_race.c under valgrind's memcheck, first releasing threaded
# encoders right after their last picture (memcheck should find OpenH264 unlocking a freed
# mutex), then 1000 ms later, as CarWindow does (it should find nothing). Not in CI: about 3
# minutes, and the first half only shows what the installed OpenH264 does.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
command -v valgrind >/dev/null || { apt-get install -y -qq valgrind >/dev/null; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gcc -O1 -g -Wall -Werror Tests/OpenH264/release_race.c -o "$out/release_race" -lopenh264 -lpthread
echo "== released at once"
if valgrind -q --fair-sched=yes --error-exitcode=9 "$out/release_race" 4 40 0 2>"$out/at-once.log"; then
    echo "memcheck found nothing this time (the race did not hit, or this OpenH264 has it fixed)"
else
    grep -m1 -A3 "Invalid" "$out/at-once.log" || true
    echo "memcheck found OpenH264 touching freed memory: the bug is there"
fi
echo "== released after 1000 ms"
valgrind -q --fair-sched=yes --error-exitcode=9 "$out/release_race" 4 8 1000 2>"$out/later.log" \
    || { cat "$out/later.log"; echo "FAIL: memcheck found errors with the grace period"; exit 1; }
echo "PASS: no memcheck error with the grace period"
