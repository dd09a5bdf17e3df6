# The compare job: fetch the pinned llama-server, serve the child's GGUF, ask every question.

cd "$(dirname "$0")" || exit 1
MODEL=$OVERBRAINER_COMPARE_MODEL
server_pid=

cleanup() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null
        _polls=0
        while kill -0 "$server_pid" 2>/dev/null && [ "$_polls" -lt 50 ]; do
            sleep 0.2
            _polls=$((_polls + 1))
        done
        kill -KILL "$server_pid" 2>/dev/null
    fi
    if [ -n "${OVERBRAINER_COMPARE_DISCARD_MODEL:-}" ]; then
        rm -f "$MODEL"
    fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

pick_build
cache=$OVERBRAINER_CACHE/llama.cpp/$TAG/$ASSET
url=$OVERBRAINER_LLAMA_CPP_URL
url=${url%/}
if [ ! -x "$cache/llama-server" ]; then
    mkdir -p "$OVERBRAINER_CACHE/llama.cpp/$TAG" || fail "cannot create $OVERBRAINER_CACHE/llama.cpp/$TAG"
    archive=$OVERBRAINER_CACHE/llama.cpp/$TAG/llama-$TAG-bin-$ASSET.tar.gz
    say "fetching llama-server of llama.cpp $TAG ($ASSET)"
    fetch "$url/releases/download/$TAG/llama-$TAG-bin-$ASSET.tar.gz" "$DIGEST" "$archive"
    unpack "$archive" "llama-$TAG" "$cache"
    rm -f "$archive"
fi
libs=$cache
if [ -n "$CUDART" ]; then
    cudart=$OVERBRAINER_CACHE/llama.cpp/$TAG/$CUDART
    if [ ! -e "$cudart/libcudart.so.13" ]; then
        archive=$cudart.tar.gz
        fetch "$url/releases/download/$TAG/$CUDART.tar.gz" "$CUDART_DIGEST" "$archive"
        unpack "$archive" "llama-$TAG" "$cudart"
        rm -f "$archive"
    fi
    libs=$cudart:$cache
fi
LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

[ -f "$MODEL" ] || fail "$MODEL is missing from $(pwd)"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
    || fail "cannot find a free port"
slots=${OVERBRAINER_COMPARE_CONCURRENCY:-1}
ctx=${OVERBRAINER_COMPARE_CTX:-0}
# Each parallel slot gets the whole context: llama-server splits -c among its slots.
[ "$ctx" -gt 0 ] && ctx=$((ctx * slots))
"$cache/llama-server" -m "$MODEL" --host 127.0.0.1 --port "$port" -ngl 999 -c "$ctx" \
    -np "$slots" --no-webui > server.log 2>&1 &
server_pid=$!
python3 compare_client.py --port "$port" --server-pid "$server_pid" --build "$ASSET" \
    --concurrency "$slots"
