#!/usr/bin/env bash
# Make the virtual environment of the real lm-evaluation-harness (`lm-eval[api]` from PyPI) that
# `overbrainer bench`'s real-tool tests run against llama-server, cached outside the checkout by
# .ci/cached-venv.sh (its dependencies, HF `datasets`, `evaluate`, ..., stay out of the project's
# venv). Prints the venv's path on stdout.
#
# The `api` extra is what its `local-completions` and `local-chat-completions` models need
# (requests, aiohttp, tenacity, tiktoken); no torch is installed. The OpenAI-compatible models
# must import: they load on use, so `--help` alone proves little.
set -euo pipefail
. "$(dirname "$0")/cached-venv.sh"
version="${OVERBRAINER_TEST_LM_EVAL_VERSION:-0.4.13}"
cached_venv lm-eval "$version" lm_eval "lm-eval[api]==$version" \
    'import lm_eval.models.openai_completions' --help
