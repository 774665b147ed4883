#!/usr/bin/env bash
# Validates every shader under shaders/ with glslangValidator exactly as the library compiles it:
# "#version 300 es", the variant's defines, shaders/prelude.glsl, then the file.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v glslangValidator >/dev/null || { echo "error: glslangValidator missing (apt-get install glslang-tools)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
checked=0
check() { # file [define...]
    local file=$1; shift
    local stage=${file##*.}
    local out="$work/shader.$stage"
    { echo "#version 300 es"; for d in "$@"; do echo "#define $d"; done; cat shaders/prelude.glsl; echo "#line 1"; cat "shaders/$file"; } > "$out"
    if ! glslangValidator -S "$stage" "$out" > "$work/log" 2>&1; then
        echo "shader $file ${*:+(with $*)} failed:" >&2
        cat "$work/log" >&2
        exit 1
    fi
    checked=$((checked + 1))
}
for path in shaders/*.vert shaders/*.frag; do
    check "$(basename "$path")"
done
# Variants the library builds with defines.
check line.frag DASHED
check line.frag TRIMMED
echo "shaders: $checked checked with glslangValidator"
