#!/usr/bin/env bash
# Heap allocations per protected video access unit: runs the benchmark's security section one
# case at a time (TLS and DTLS, units of 600 kbit/s and 20 Mbit/s at 15 fps) under heaptrack and
# counts the allocations made while sealing a unit (under SDLMessage.protectedEncoded), split
# into ours and OpenSSL's, against those of framing the same unit in the clear
# (SDLMessage.encoded). Release build.
# Usage: scripts/seal-allocations.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null; then
    if [ "$(id -u)" = 0 ]; then apt-get install -y heaptrack; else sudo apt-get install -y heaptrack; fi
fi
swift build -c release --product carwindow-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
units=200   # the quick security section's units per case
for case in tls,5000 tls,166667 dtls,5000 dtls,166667; do
    CARWINDOW_BENCH_SECURITY_CASE=$case heaptrack -o "$work/$case" .build/release/carwindow-bench --quick --only security \
        --out-dir "$work/out-$case" > "$work/$case.log" 2>&1
    heaptrack_print "$work/$case".*zst -F "$work/$case.stacks" --flamegraph-cost-type allocations > /dev/null
    python3 - "$work/$case.stacks" "$case" "$units" <<'PY'
import sys
path, case, units = sys.argv[1], sys.argv[2], int(sys.argv[3])
sealing = openssl = clear = 0
for line in open(path, encoding="utf-8", errors="replace"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if not count.isdigit():
        continue
    count, frames = int(count), stack.split(";")
    if any("protectedEncoded" in frame for frame in frames):
        sealing += count
        ours = max(i for i, frame in enumerate(frames) if "CarWindow" in frame)
        if any(name in frame for frame in frames[ours + 1:] for name in ("SSL_", "BIO_", "CRYPTO_", "libssl", "libcrypto")):
            openssl += count
    elif any("SecuritySection" in frame for frame in frames) and any("SDLMessage" in f and "encoded" in f for f in frames):
        clear += count
print(f"{case:>12}: sealing {sealing / units:5.1f} allocations per unit ({(sealing - openssl) / units:.1f} ours, "
      f"{openssl / units:.1f} in OpenSSL); in the clear {clear / units:.1f}")
PY
done
