#!/usr/bin/env bash
# Make the virtual environment of the real lm-evaluation-harness (`lm-eval[api]` from PyPI) that
# `overbrainer bench`'s real-tool tests run against llama-server, and keep it in a cache outside
# the checkout, keyed by its version, so later runs skip the install. Its dependencies (HF
# `datasets`, `evaluate`, ...) stay out of the project's venv. Prints the venv's path on stdout.
#
# The `api` extra is what its `local-completions` and `local-chat-completions` models need
# (requests, aiohttp, tenacity, tiktoken); no torch is installed.
#
# The venv is built where it will live (a venv keeps its absolute path in its scripts), under a
# lock, with a VERSION file written last: its presence means "complete".
set -euo pipefail

lm_eval="${OVERBRAINER_TEST_LM_EVAL_VERSION:-0.4.13}"
cache_root="${OVERBRAINER_TOOLS_CACHE:-$HOME/.cache/overbrainer/ci-tools}"
dest="$cache_root/lm-eval-$lm_eval"

complete() { [ -f "$dest/VERSION" ] && [ -x "$dest/bin/lm_eval" ]; }

if complete; then
    echo "$dest"
    exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.lm-eval.lock"
flock 9
if complete; then
    echo "$dest"
    exit 0
fi
rm -rf "$dest"
python3 -m venv "$dest"
"$dest/bin/python" -m pip install --quiet --upgrade pip >&2
"$dest/bin/python" -m pip install --quiet "lm-eval[api]==$lm_eval" >&2
# The OpenAI-compatible models must import (they load on use, so `--help` alone proves little).
"$dest/bin/python" -c 'import lm_eval.models.openai_completions' >&2
"$dest/bin/lm_eval" --help >/dev/null
echo "lm-eval $lm_eval" > "$dest/VERSION"
echo "$dest"
