#!/usr/bin/env bash
# Make the virtual environment of the real LiteLLM proxy (`litellm[proxy]` from PyPI) that the
# real-server tests run as a provider, cached outside the checkout by .ci/cached-venv.sh (its
# dependencies stay out of the project's venv). Prints the venv's path on stdout.
#
# The version is pinned, and its `proxy` extra pins its companions exactly: from 1.108.8 on,
# releases asked for `litellm-enterprise`, `litellm-proxy-extras` or `litellm-proxy` builds that
# PyPI did not have when this pin was chosen (1.110.x needs `litellm-proxy`, never published).
set -euo pipefail
. "$(dirname "$0")/cached-venv.sh"
version="${OVERBRAINER_LITELLM_VERSION:-1.108.5}"
# The proxy's own imports (FastAPI, uvicorn, its config loader) must work, not only the SDK's.
# Offline: no download of the model cost map (CI reaches only package registries).
export LITELLM_LOCAL_MODEL_COST_MAP=True
cached_venv litellm "$version" litellm "litellm[proxy]==$version" \
    'import litellm.proxy.proxy_server' --version
