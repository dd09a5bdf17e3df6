#!/usr/bin/env bash
# Make the virtual environment of the real LiteLLM proxy (`litellm[proxy]` from PyPI) that the
# real-server tests run as a provider, and keep it in a cache outside the checkout, keyed by its
# version, so later runs skip the install. Its dependencies stay out of the project's venv.
# Prints the venv's path on stdout.
#
# The version is pinned, and its `proxy` extra pins its companions exactly: from 1.108.8 on,
# releases asked for `litellm-enterprise`, `litellm-proxy-extras` or `litellm-proxy` builds that
# PyPI did not have when this pin was chosen (1.110.x needs `litellm-proxy`, never published).
#
# The venv is built where it will live (a venv keeps its absolute path in its scripts), under a
# lock, with a VERSION file written last: its presence means "complete".
set -euo pipefail

litellm="${OVERBRAINER_LITELLM_VERSION:-1.108.5}"
cache_root="${OVERBRAINER_TOOLS_CACHE:-$HOME/.cache/overbrainer/ci-tools}"
dest="$cache_root/litellm-$litellm"

complete() { [ -f "$dest/VERSION" ] && [ -x "$dest/bin/litellm" ]; }

if complete; then
    echo "$dest"
    exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.litellm.lock"
flock 9
if complete; then
    echo "$dest"
    exit 0
fi
rm -rf "$dest"
python3 -m venv "$dest"
"$dest/bin/python" -m pip install --quiet --upgrade pip >&2
"$dest/bin/python" -m pip install --quiet "litellm[proxy]==$litellm" >&2
# The proxy's own imports (FastAPI, uvicorn, its config loader) must work, not only the SDK's.
# Offline: no download of the model cost map (CI reaches only package registries).
export LITELLM_LOCAL_MODEL_COST_MAP=True
"$dest/bin/python" -c 'import litellm.proxy.proxy_server' >&2
"$dest/bin/litellm" --version >&2
echo "litellm $litellm" > "$dest/VERSION"
echo "$dest"
