# Sourced by the bundle's run.sh and peer/python.sh (scripts/package-static.sh makes both):
# use_bundled_libraries DIR puts DIR on LD_LIBRARY_PATH, and those of DIR/fallback the machine has
# no library of that name for (ldconfig -p), so its GPU driver's own libglvnd, libgbm and C++
# runtime win over ours. The links for the fallbacks live in a temporary folder removed at exit.
bundled_library_farms=()
use_bundled_libraries() {
    local libraries=$1 farm known library name
    farm=$(mktemp -d "${TMPDIR:-/tmp}/carwindow-libs.XXXXXX")
    bundled_library_farms+=("$farm")
    trap 'rm -rf "${bundled_library_farms[@]}"' EXIT
    known=$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)
    for library in "$libraries"/fallback/*; do
        [[ -e $library ]] || continue
        name=$(basename "$library")
        grep -q "^[[:space:]]*$name " <<<"$known" || ln -s "$library" "$farm/$name"
    done
    export LD_LIBRARY_PATH="$libraries:$farm${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
