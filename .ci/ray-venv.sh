#!/usr/bin/env bash
# Make the virtual environment of the real Ray cluster the `ray` tests start (`ray[default]`
# from PyPI: the nodes, their dashboard and its Jobs API), cached outside the checkout by
# .ci/cached-venv.sh (about 20 s, 300 MB the first time; its dependencies stay out of the
# project's venv: it moves opentelemetry-api, docs/ray-notes.md). Prints the venv's path.
#
# The version is pinned: a cluster, its driver and any client must run the same Ray. The
# dashboard (it serves the Jobs API) must import, not only Ray's core.
set -euo pipefail
. "$(dirname "$0")/cached-venv.sh"
version="${OVERBRAINER_RAY_VERSION:-2.60.0}"
cached_venv ray "$version" ray "ray[default]==$version" \
    'import ray, ray.dashboard.modules.job.job_head' --version
