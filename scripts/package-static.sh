#!/usr/bin/env bash
# Builds carwindow-bench and carwindow with the Swift runtime linked in (--static-swift-stdlib)
# and packs them with assets/ and the shared libraries they link into one folder that runs on a
# Linux machine without Swift or Debian packages (a headless GPU box):
#   scripts/package-static.sh [--bench-only] [OUT]     (default .build-gpu/bundle)
#   OUT/run.sh carwindow-bench --quick     OUT/scripts/gpu-ci.sh
# Also writes OUT.tar.gz: the stripped binaries are about 60 MB each (static Foundation carries
# ICU's data), about 23 MB each compressed; --bench-only leaves the carwindow CLI out.
#
# Libraries (from ldd):
#   left out:       glibc (libc, libm, libpthread, libdl, librt, libresolv, libutil, ld-linux,
#                   vdso): every Linux has them and they must match the kernel's loader.
#   lib/:           what a bare machine lacks (OpenH264, FreeType, libpng, SQLite, libva, libdrm, ...).
#   lib/fallback/:  libEGL, libGLESv2, libGLdispatch (Debian's libglvnd), libgbm, libstdc++ and
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
if [[ ${1:-} == --bench-only ]]; then products=(carwindow-bench); shift; fi
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
cp scripts/gpu-ci.sh scripts/maplibre_render.py "$out/scripts/"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]] && commit+="+dirty"
echo "$commit" > "$out/commit.txt"

for binary in "$out"/bin/*; do
    ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
    case $name in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|ld-linux*|linux-vdso*) continue ;;
        libEGL.so.*|libGLESv2.so.*|libGLdispatch.so.*|libgbm.so.*|libstdc++.so.*|libgcc_s.so.*) cp -L "$path" "$out/lib/fallback/$name" ;;
        *) cp -L "$path" "$out/lib/$name" ;;
    esac
done

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs a bundled program: run.sh carwindow-bench --quick | run.sh carwindow render ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
program=${1:?usage: run.sh carwindow-bench|carwindow [arguments]}
shift
# Fallback libraries only where the machine has none of that name, so its GPU driver's own
# libglvnd, libgbm and C++ runtime win.
farm=$(mktemp -d "${TMPDIR:-/tmp}/carwindow-libs.XXXXXX")
trap 'rm -rf "$farm"' EXIT
known=$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)
for library in "$here"/lib/fallback/*; do
    [[ -e $library ]] || continue
    name=$(basename "$library")
    grep -q "^[[:space:]]*$name " <<<"$known" || ln -s "$library" "$farm/$name"
done
export LD_LIBRARY_PATH="$here/lib:$farm${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CARWINDOW_ASSETS="$here/assets"
export CARWINDOW_BENCH_COMMIT="${CARWINDOW_BENCH_COMMIT:-$(cat "$here/commit.txt" 2>/dev/null || true)}"
"$here/bin/$program" "$@"
RUN
chmod +x "$out/run.sh"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
echo "bundle: $out ($(du -sh "$out" | cut -f1); $out.tar.gz $(du -sh "$out.tar.gz" | cut -f1)); libraries: $(ls "$out/lib" "$out/lib/fallback" | grep -c '\.so')"
echo "run: $out/run.sh carwindow-bench --quick   or   $out/scripts/gpu-ci.sh"
