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
fetch_server

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
