#!/usr/bin/env bash
# Make the virtual environment of the real Ray cluster the `ray` tests start (`ray[default]`
# from PyPI: the nodes, their dashboard and its Jobs API), and keep it in a cache outside the
# checkout, keyed by its version, so later runs skip the install (about 20 s, 300 MB). Its
# dependencies stay out of the project's venv (it moves opentelemetry-api, docs/ray-notes.md).
# Prints the venv's path on stdout.
#
# The version is pinned: a cluster, its driver and any client must run the same Ray.
# The venv is built where it will live (a venv keeps its absolute path in its scripts), under a
# lock, with a VERSION file written last: its presence means "complete".
set -euo pipefail

ray="${OVERBRAINER_RAY_VERSION:-2.60.0}"
cache_root="${OVERBRAINER_TOOLS_CACHE:-$HOME/.cache/overbrainer/ci-tools}"
dest="$cache_root/ray-$ray"

complete() { [ -f "$dest/VERSION" ] && [ -x "$dest/bin/ray" ]; }

if complete; then
    echo "$dest"
    exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.ray.lock"
flock 9
if complete; then
    echo "$dest"
    exit 0
fi
rm -rf "$dest"
python3 -m venv "$dest"
"$dest/bin/python" -m pip install --quiet --upgrade pip >&2
"$dest/bin/python" -m pip install --quiet "ray[default]==$ray" >&2
# The dashboard (it serves the Jobs API) must import, not only Ray's core.
"$dest/bin/python" -c 'import ray, ray.dashboard.modules.job.job_head' >&2
"$dest/bin/ray" --version >&2
echo "ray $ray" > "$dest/VERSION"
echo "$dest"
