#!/usr/bin/env bash
# Installs the Debian packages CarWindow builds, runs and tests with, when they are missing.
# Usage: scripts/install-deps.sh [--tests] [--static]
#   --tests adds the shader validator and ffmpeg; --static adds what scripts/package-static.sh
#   needs: libcurl's -dev library (the static FoundationNetworking links it), and pip and the
#   libraries mapli links (libGL, libGLX, libcurl) for the bundle's MapLibre Native peer.
set -euo pipefail

packages=(
    pkg-config
    libegl-dev libgles-dev libgbm-dev      # EGL, OpenGL ES 3, GBM
    libegl-mesa0 libgl1-mesa-dri           # Mesa's EGL and drivers: llvmpipe when there is no GPU
    libfreetype-dev zlib1g-dev libsqlite3-dev libpng-dev
    libopenh264-dev libva-dev              # H.264: OpenH264 (BSD) in software, VA-API in hardware
    libcurl4                               # FoundationNetworking: tiles on servers
    libssl-dev                             # OpenSSL 3: protected SDL services (TLS, DTLS)
)
for option in "$@"; do
    case $option in
        --tests)
            packages+=(glslang-tools ffmpeg)       # shader validator; the independent decoder of our streams
            packages+=(python3)                    # the local tile server of the remote-tiles tests
            packages+=(gcc g++ valgrind)           # the VA-API test driver, the C API's examples and memcheck
            packages+=(libcairo2-dev)              # the C engine example that draws with Cairo and pushes pixels
            packages+=(openssl)                    # certificates for the protected-service tests
            ;;
        --static) packages+=(libcurl4-openssl-dev python3-pip libgl1 libglx0) ;;
        *) echo "install-deps.sh: unknown option '$option' (--tests, --static)" >&2; exit 64 ;;
    esac
done

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "Installing missing Debian packages: ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
    sudo=()
elif command -v sudo >/dev/null; then
    sudo=(sudo)
else
    echo "error: these packages are missing and neither root nor sudo is available: ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
