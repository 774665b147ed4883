#!/usr/bin/env bash
# Headless GPU CI: prints the GL renderer the tests get, fails when a GPU was expected but the
# renderer is a software one, then runs the tests and the quick benchmark.
#
# Two modes:
#   checkout: from a source checkout with Swift (scripts/gpu-ci.sh): installs packages, builds,
#             runs scripts/test.sh and scripts/bench-quick.sh.
#   bundle:   from a folder made by scripts/package-static.sh, on a machine without Swift or
#             Debian packages (bundle/scripts/gpu-ci.sh): runs the quick benchmark only (the
#             tests need the toolchain and the source tree's fixtures), with the bundle's
#             MapLibre Native peer (peer/python.sh) where the machine has a Python 3.11 or later.
# A GPU is expected when CARWINDOW_EXPECT_GPU=1, or when /dev/nvidiactl or /dev/dri/renderD*
# exists (CARWINDOW_EXPECT_GPU=0 turns that guess off). CARWINDOW_EGL_PLATFORM=gbm|device|
# surfaceless forces an EGL platform. Extra arguments go to carwindow-bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [[ -x bin/carwindow-bench && -x run.sh && ! -f Package.swift ]]; then
    mode=bundle
    bench=("$root/run.sh" carwindow-bench)
else
    mode=checkout
    scripts/install-deps.sh --tests
    swift build -c release --product carwindow-bench
    bench=("$(swift build -c release --show-bin-path)/carwindow-bench")
fi
echo "gpu-ci: $mode mode in $root"

expect_gpu=no
case "${CARWINDOW_EXPECT_GPU:-}" in
    1|yes|true) expect_gpu=yes ;;
    0|no|false) expect_gpu=no ;;
    *) if [[ -e /dev/nvidiactl ]] || compgen -G "/dev/dri/renderD*" >/dev/null; then expect_gpu=yes; fi ;;
esac
[[ -e /dev/nvidiactl ]] && command -v nvidia-smi >/dev/null && nvidia-smi -L || true

info=$("${bench[@]}" --gl-info)
echo "$info" | sed 's/^/gpu-ci: GL /'
renderer=$(echo "$info" | sed -n 's/^renderer=//p')
if [[ $expect_gpu == yes ]] && echo "$renderer" | grep -qiE 'llvmpipe|softpipe|swrast|swiftshader|software'; then
    echo "gpu-ci: error: a GPU was expected (CARWINDOW_EXPECT_GPU, /dev/nvidiactl or /dev/dri/renderD*)" \
         "but the GL renderer is the software one '$renderer'. Check the driver's EGL vendor file" \
         "(/usr/share/glvnd/egl_vendor.d), permissions on the device nodes, or set CARWINDOW_EGL_PLATFORM=device|gbm." >&2
    exit 1
fi

if [[ $mode == checkout ]]; then
    scripts/test.sh
    scripts/bench-quick.sh "$@"
else
    "${bench[@]}" --self-check
    extra=()
    command -v ffmpeg >/dev/null && extra+=(--require-ffmpeg)
    # The bundle's MapLibre Native peer, unless the caller names a Python of their own.
    if [[ -x peer/python.sh && " $* " != *" --python "* ]]; then extra+=(--python "$root/peer/python.sh"); fi
    "${bench[@]}" --quick "${extra[@]}" "$@"
fi
