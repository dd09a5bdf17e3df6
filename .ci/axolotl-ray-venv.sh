#!/usr/bin/env bash
# Make the venv the real-Axolotl-on-Ray test starts its cluster from: the Axolotl venv of
# .ci/axolotl-venv.sh plus `ray[default,train]` (Axolotl's `ray` extra asks for ray[train]),
# cached outside the checkout, keyed by the three versions. Prints the venv's path on stdout.
#
# The Axolotl venv is copied with hard links (`cp -al`: seconds, not 4 GB): pip then only adds
# Ray's packages (constrained to what is there: nothing of torch's or Axolotl's moves) and replaces
# files by new ones, never writing into a linked one. Scripts copied from the Axolotl venv keep
# its path in their first line; the test runs `python` of this venv, never those scripts.
# Built beside its final place and renamed there, with a VERSION file written last.
set -euo pipefail

ray="${OVERBRAINER_RAY_VERSION:-2.60.0}"
axolotl_venv="$(bash "$(dirname "$0")/axolotl-venv.sh")"
cache_root="${OVERBRAINER_TOOLS_CACHE:-$HOME/.cache/overbrainer/ci-tools}"
dest="$axolotl_venv-ray-$ray"

complete() { [ -f "$dest/VERSION" ] && [ -x "$dest/bin/ray" ]; }

if complete; then
    echo "$dest"
    exit 0
fi

exec 9>"$cache_root/.axolotl-ray.lock"
flock 9
if complete; then
    echo "$dest"
    exit 0
fi
building="$dest.building"
rm -rf "$dest" "$building"
cp -al "$axolotl_venv" "$building"
rm -f "$building/VERSION"
# The copy's own interpreter and site-packages: pyvenv.cfg names the base Python only. Every
# package already there stays at its version (Axolotl pins some exactly: packaging==26.0).
"$building/bin/python" -m pip freeze --exclude-editable > "$building/constraints.txt"
"$building/bin/python" -m pip install --quiet -c "$building/constraints.txt" \
    "ray[default,train]==$ray" >&2
rm "$building/constraints.txt"
mv "$building" "$dest"
# pip wrote Ray's scripts with the building path: point them at the final one.
for script in "$dest"/bin/*; do
    if [ -f "$script" ] && [ ! -L "$script" ] && head -n1 "$script" | grep -q "^#!$building/"; then
        sed -i "1s|^#!$building/|#!$dest/|" "$script"
    fi
done
"$dest/bin/python" -c 'import ray.train, axolotl' >&2
"$dest/bin/ray" --version >&2
echo "axolotl on ray $ray" > "$dest/VERSION"
echo "$dest"
