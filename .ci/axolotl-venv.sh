#!/usr/bin/env bash
# Make the virtual environment of the real Axolotl the training tests use (PyTorch's CPU build
# and Axolotl from PyPI), and keep it in a cache outside the checkout, keyed by both versions,
# so later runs skip the install (several minutes, over 3 GB). Prints the venv's path on stdout.
#
# The venv is built beside its final place and moved there whole, with a VERSION file written
# last: its presence means "complete". No CUDA wheel may come in (checked): `torch==2.13.0` is
# the CPU build this machine's package index serves, installed first so Axolotl's ranges keep it.
set -euo pipefail

axolotl="${OVERBRAINER_AXOLOTL_VERSION:-0.19.0}"
torch="${OVERBRAINER_AXOLOTL_TORCH_VERSION:-2.13.0}"
cache_root="${OVERBRAINER_TOOLS_CACHE:-$HOME/.cache/overbrainer/ci-tools}"
dest="$cache_root/axolotl-$axolotl-torch-$torch"

if [ -f "$dest/VERSION" ] && [ -x "$dest/bin/axolotl" ]; then
    echo "$dest"
    exit 0
fi

mkdir -p "$cache_root"
# A venv keeps its absolute path in its scripts: build it where it will live, under a lock, and
# mark it complete only at the end.
exec 9>"$cache_root/.axolotl.lock"
flock 9
if [ -f "$dest/VERSION" ] && [ -x "$dest/bin/axolotl" ]; then
    echo "$dest"
    exit 0
fi
rm -rf "$dest"
python3 -m venv "$dest"
"$dest/bin/python" -m pip install --quiet --upgrade pip >&2
"$dest/bin/python" -m pip install --quiet "torch==$torch" >&2
"$dest/bin/python" -m pip install --quiet "torch==$torch" "axolotl==$axolotl" >&2
if "$dest/bin/python" -m pip list --format=freeze | grep -i '^nvidia-' | grep -iv '^nvidia-ml-py=' >&2; then
    echo "axolotl-venv: CUDA wheels came in (listed above); refusing this venv" >&2
    rm -rf "$dest"
    exit 1
fi
"$dest/bin/python" -c 'import torch, transformers, axolotl; assert not torch.version.cuda' >&2
echo "axolotl $axolotl torch $torch" > "$dest/VERSION"
echo "$dest"
