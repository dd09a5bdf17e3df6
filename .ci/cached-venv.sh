# Sourced by the *-venv.sh scripts: the virtual environment of one pinned tool from PyPI, kept in
# a cache outside the checkout, keyed by its version, so later runs skip the install and its
# dependencies stay out of the project's venv.
#
# The venv is built where it will live (a venv keeps its absolute path in its scripts), under a
# lock, with a VERSION file written last: its presence means "complete".

# cached_venv NAME VERSION EXECUTABLE REQUIREMENT IMPORTS CHECK_ARGS: prints the venv's path on
# stdout once `python -c IMPORTS` and `bin/EXECUTABLE CHECK_ARGS` have worked in it.
cached_venv() {
    local name=$1 version=$2 executable=$3 requirement=$4 imports=$5 check_args=$6
    local cache_root="${OVERBRAINER_TOOLS_CACHE:-$HOME/.cache/overbrainer/ci-tools}"
    local dest="$cache_root/$name-$version"
    if [ -f "$dest/VERSION" ] && [ -x "$dest/bin/$executable" ]; then
        echo "$dest"
        return 0
    fi
    mkdir -p "$cache_root"
    exec 9>"$cache_root/.$name.lock"
    flock 9
    if [ -f "$dest/VERSION" ] && [ -x "$dest/bin/$executable" ]; then
        echo "$dest"
        return 0
    fi
    rm -rf "$dest"
    python3 -m venv "$dest"
    "$dest/bin/python" -m pip install --quiet --upgrade pip >&2
    "$dest/bin/python" -m pip install --quiet "$requirement" >&2
    "$dest/bin/python" -c "$imports" >&2
    # shellcheck disable=SC2086
    "$dest/bin/$executable" $check_args >/dev/null
    echo "$name $version" >"$dest/VERSION"
    echo "$dest"
}
