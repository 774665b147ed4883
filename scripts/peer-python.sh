#!/usr/bin/env bash
# The bundle's peer/python.sh (scripts/package-static.sh copies it there): runs the machine's
# python3 (or $CARWINDOW_PEER_PYTHON) with the bundled mapli and pmtiles on PYTHONPATH and the
# libraries mapli links (peer/lib, then the bundle's lib/) on LD_LIBRARY_PATH, so `carwindow-bench --python peer/python.sh` runs the
# MapLibre Native peer on a machine with nothing but a Python 3.11 or later.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${CARWINDOW_PEER_PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    echo "peer/python.sh: the MapLibre Native peer (mapli 0.4.1) needs CPython 3.11 or later;" \
         "'$python' is $("$python" --version 2>&1 || echo missing). Set CARWINDOW_PEER_PYTHON to one." >&2
    exit 3
fi
source "$here/../scripts/bundle-libraries.sh"
use_bundled_libraries "$here/../lib"    # what the peer shares with the programs (OpenSSL, zlib, ...)
use_bundled_libraries "$here/lib"
export PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}"
"$python" "$@"
