#!/usr/bin/env bash
# Builds carwindow-bench and carwindow with the Swift runtime linked in (--static-swift-stdlib)
# and packs them with assets/ and the shared libraries they link into one folder that runs on a
# Linux machine without Swift or Debian packages (a headless GPU box):
#   scripts/package-static.sh [--bench-only] [--no-peer] [OUT]     (default .build-gpu/bundle)
#   OUT/run.sh carwindow-bench --quick     OUT/scripts/gpu-ci.sh
# Also writes OUT.tar.gz: the stripped binaries are about 60 MB each (static Foundation carries
# ICU's data), about 23 MB each compressed; --bench-only leaves the carwindow CLI out.
#
# The MapLibre Native peer of the bench comes along in OUT/peer (--no-peer leaves it out): the
# wheels of mapli and pmtiles from PyPI (mapli is one abi3 wheel for any CPython >= 3.11, so the
# GPU machine's own python3 runs it), the libraries mapli links that are not in its wheel (libcurl,
# libglvnd's libGL/libGLX/libEGL and theirs), and OUT/peer/python.sh, which runs the machine's
# python3 with both. The bench writes its glyphs from the bundled fonts. Where PyPI cannot be
# reached the bundle is made without the peer and says so.
#
# Libraries (from ldd):
#   left out:       glibc (libc, libm, libpthread, libdl, librt, libresolv, libutil, ld-linux,
#                   vdso): every Linux has them and they must match the kernel's loader.
#   lib/:           what a bare machine lacks (OpenH264, FreeType, libpng, SQLite, libva, libdrm, ...).
#   lib/fallback/:  libEGL, libGLESv2, libGL, libGLX, libGLdispatch (Debian's libglvnd), libgbm, libstdc++ and
#                   libgcc_s: used by run.sh only when the machine has none of that name
#                   (ldconfig -p). A GPU driver installs its own: NVIDIA's driver ships or uses
#                   libglvnd, whose libEGL.so.1 loads libEGL_nvidia.so.0 through
#                   /usr/share/glvnd/egl_vendor.d; overriding it with ours could pair a
#                   dispatcher and vendor library of different versions. Where the machine has
#                   no libglvnd at all, Debian's is needed and is ABI-compatible with any vendor
#                   library. libgbm must load for the binary to start even where GBM is unused
#                   (NVIDIA without /dev/dri).
#   not carried:    drivers loaded with dlopen (libEGL_nvidia, libEGL_mesa, Mesa's DRI drivers,
#                   VA-API drivers): they belong to the machine's GPU driver.
set -euo pipefail
cd "$(dirname "$0")/.."
products=(carwindow-bench carwindow)
with_peer=yes
while [[ ${1:-} == --* ]]; do
    case $1 in
        --bench-only) products=(carwindow-bench) ;;
        --no-peer) with_peer=no ;;
        *) echo "package-static.sh: unknown option '$1' (--bench-only, --no-peer)" >&2; exit 64 ;;
    esac
    shift
done
out=${1:-.build-gpu/bundle}
scratch=.build-gpu/build    # its own build folder: the static flags would rebuild .build/release
scripts/install-deps.sh --static
build=(swift build -c release --static-swift-stdlib --scratch-path "$scratch")
for product in "${products[@]}"; do "${build[@]}" --product "$product"; done
bin=$("${build[@]}" --show-bin-path)

rm -rf "$out" "$out.tar.gz"
mkdir -p "$out/bin" "$out/lib/fallback" "$out/scripts"
for product in "${products[@]}"; do
    cp "$bin/$product" "$out/bin/"
    strip "$out/bin/$product" 2>/dev/null || true    # debug info is most of the size
done
cp -R assets "$out/assets"
cp scripts/gpu-ci.sh scripts/maplibre_render.py scripts/bundle-libraries.sh "$out/scripts/"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]] && commit+="+dirty"
echo "$commit" > "$out/commit.txt"

# carry_libraries LIBDIR BINARY...: the libraries the binaries link, sorted as the header says;
# the peer's (peer/lib) leave out what the programs' lib/ already has.
carry_libraries() {
    local libraries=$1
    shift
    mkdir -p "$libraries/fallback"
    for binary in "$@"; do
        ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
    done | sort -u | while read -r name path; do
        # What a wheel brings in its own folder (mapli.libs), or the programs' lib/ has, is carried once.
        [[ $(realpath "$path") == "$(realpath "$out")"/* ]] && continue
        [[ -e $out/lib/$name || -e $out/lib/fallback/$name ]] && continue
        case $name in
            libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|ld-linux*|linux-vdso*) continue ;;
            libEGL.so.*|libGLESv2.so.*|libGL.so.*|libGLX.so.*|libGLdispatch.so.*|libgbm.so.*|libstdc++.so.*|libgcc_s.so.*)
                cp -L "$path" "$libraries/fallback/$name" ;;
            *) cp -L "$path" "$libraries/$name" ;;
        esac
    done
}
carry_libraries "$out/lib" "$out"/bin/*

# The MapLibre Native peer: wheels unpacked into peer/python, mapli's own libraries in peer/lib.
if [[ $with_peer == yes ]]; then
    wheels=$(mktemp -d)
    if python3 -m pip download --quiet --only-binary=:all: --no-deps --platform manylinux_2_34_x86_64 \
            --python-version 3.11 --implementation cp -d "$wheels" mapli==0.4.1 pmtiles==3.8.1; then
        mkdir -p "$out/peer/python"
        for wheel in "$wheels"/*.whl; do python3 -m zipfile -e "$wheel" "$out/peer/python"; done
        unresolved=$(ldd "$out"/peer/python/mapli/_core*.so | awk '/not found/ { print $1 }')
        if [[ -n $unresolved ]]; then
            echo "package-static.sh: mapli links libraries this machine lacks: $unresolved" >&2
            exit 1
        fi
        strip --strip-unneeded "$out"/peer/python/mapli/_core*.so    # its symbols are 4 MB of 21
        carry_libraries "$out/peer/lib" "$out"/peer/python/mapli/_core*.so
        cp scripts/peer-python.sh "$out/peer/python.sh"
        echo "peer: mapli 0.4.1 and pmtiles 3.8.1 in $out/peer ($(du -sh "$out/peer" | cut -f1))"
    else
        echo "package-static.sh: warning: PyPI cannot be reached, so the bundle has no MapLibre Native peer" \
             "(the bench will say it skipped it); make it again with network access, or pass --no-peer to say so" >&2
    fi
    rm -rf "$wheels"
fi

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs a bundled program: run.sh carwindow-bench --quick | run.sh carwindow render ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
program=${1:?usage: run.sh carwindow-bench|carwindow [arguments]}
shift
source "$here/scripts/bundle-libraries.sh"
use_bundled_libraries "$here/lib"
export CARWINDOW_ASSETS="$here/assets"
export CARWINDOW_BENCH_COMMIT="${CARWINDOW_BENCH_COMMIT:-$(cat "$here/commit.txt" 2>/dev/null || true)}"
"$here/bin/$program" "$@"
RUN
chmod +x "$out/run.sh"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
echo "bundle: $out ($(du -sh "$out" | cut -f1); $out.tar.gz $(du -sh "$out.tar.gz" | cut -f1)); libraries: $(ls "$out/lib" "$out/lib/fallback" | grep -c '\.so')"
[[ -x $out/peer/python.sh ]] && echo "peer: MapLibre Native (mapli) for the bench: $out/peer/python.sh (gpu-ci.sh uses it)" \
    || echo "peer: none in this bundle: the bench will skip MapLibre Native"
echo "run: $out/run.sh carwindow-bench --quick   or   $out/scripts/gpu-ci.sh"
