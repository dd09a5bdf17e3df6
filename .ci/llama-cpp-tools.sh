#!/usr/bin/env bash
# Build the llama.cpp tools the export and compare tests use (llama-quantize, llama-server)
# from the llama.cpp sources vendored in the llama-cpp-python source distribution on PyPI,
# and keep them in a cache outside the checkout, keyed by that version, so later runs skip
# the build (several minutes on two cores). Prints the cache directory on stdout.
#
# Layout of the cache directory:
#   source/   the vendored llama.cpp tree (convert_hf_to_gguf.py, conversion/, gguf-py/, ...)
#   bin/      llama-quantize and llama-server, statically linked against ggml
#   VERSION   the llama-cpp-python version, written last: its presence means "complete"
set -euo pipefail

version="${OVERBRAINER_LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
cache_root="${OVERBRAINER_TOOLS_CACHE:-$HOME/.cache/overbrainer/ci-tools}"
dest="$cache_root/llama-cpp-python-$version"

if [ -f "$dest/VERSION" ] && [ -x "$dest/bin/llama-quantize" ] && [ -x "$dest/bin/llama-server" ]; then
    echo "$dest"
    exit 0
fi

mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/.build-XXXXXX")"
trap 'rm -rf "$work"' EXIT

python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" \
    -d "$work/sdist" >&2
tar -xzf "$work/sdist/llama_cpp_python-$version.tar.gz" -C "$work"
src="$work/llama_cpp_python-$version/vendor/llama.cpp"

cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON >&2
cmake --build "$work/build" --target llama-quantize llama-server -j "$(nproc)" >&2

staged="$work/staged"
mkdir -p "$staged/bin"
cp "$work/build/bin/llama-quantize" "$work/build/bin/llama-server" "$staged/bin/"
rm -rf "$src/build"
mv "$src" "$staged/source"
echo "$version" > "$staged/VERSION"
rm -rf "$dest"
mv "$staged" "$dest"
echo "$dest"
