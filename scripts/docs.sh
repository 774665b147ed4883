#!/usr/bin/env bash
# Builds the DocC documentation of the umbrella (its catalog, Sources/CarWindow/CarWindow.docc)
# and of every engine-facing module with the swift-docc-plugin, and fails on any warning: an
# unresolved ``symbol`` or <doc:article> link, a parameter left undocumented. The archives go to
# .build/docs/TARGET.doccarchive (override with $1); nothing is written into the sources.
#
# Each module's archive is built from that module's own symbols, so a doc comment that links to
# a type of another module must write it in plain code voice (`TeeSink`), not as ``TeeSink``.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.build/docs}
targets=(CarWindow CarWindowGeo CarWindowStyle CarWindowVideoCore CarWindowMap CarWindowRemoteTiles CarWindowH264
         CarWindowSinks CarWindowProjection CarWindowSDLProtocol CarWindowSDLSecurity CarWindowSDL)
mkdir -p "$out"
args=()
for t in "${targets[@]}"; do
    args+=(--target "$t")
    rm -rf "${out:?}/$t.doccarchive"      # so a failed run leaves no stale archive behind
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
# One plugin run for every target: one build, symbol graphs extracted side by side.
status=0
swift package --allow-writing-to-directory "$out" generate-documentation "${args[@]}" \
    --output-path "$out" --warnings-as-errors >"$log" 2>&1 || status=$?
# --warnings-as-errors covers DocC's diagnostics; the plugin's own warnings (a target with nothing
# to document, say) are only printed, so they are looked for too.
if [[ $status -ne 0 ]] || grep -qE '^(warning|error):' "$log"; then
    grep -vE '^\[[0-9]+/[0-9]+\]' "$log" >&2
    echo "docs: FAILED (exit status $status; warnings count as failures)" >&2
    exit 1
fi
echo "docs: ${#targets[@]} archives in $out, no warnings ($((SECONDS - start)) s):"
for t in "${targets[@]}"; do
    [[ -d "$out/$t.doccarchive" ]] || { echo "docs: $out/$t.doccarchive is missing" >&2; exit 1; }
    echo "  $t.doccarchive"
done
