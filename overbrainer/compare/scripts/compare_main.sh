# The compare job: fetch the pinned llama-server, serve the child's GGUF and ask every
# question, then (compare --base) the base model's GGUF the same way.

cd "$(dirname "$0")" || exit 1
MODEL=$OVERBRAINER_COMPARE_MODEL
BASE_MODEL=${OVERBRAINER_COMPARE_BASE_MODEL:-}
server_pid=

cleanup() {
    stop_server
    if [ -n "${OVERBRAINER_COMPARE_DISCARD_MODEL:-}" ]; then
        rm -f "$MODEL"
        [ -n "$BASE_MODEL" ] && rm -f "$BASE_MODEL"
    fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

pick_build
fetch_server

slots=${OVERBRAINER_COMPARE_CONCURRENCY:-1}
ctx=${OVERBRAINER_COMPARE_CTX:-0}
# Each parallel slot gets the whole context: llama-server splits -c among its slots.
[ "$ctx" -gt 0 ] && ctx=$((ctx * slots))
models=1
[ -n "$BASE_MODEL" ] && models=2

# Everything asked of one model, in one place: serve its GGUF with the same settings, ask
# every question (the client writes <role>_answers.jsonl), stop the server.
# $1: the role (child or base), $2: its GGUF, $3: its server log, $4: its index (0, 1).
measure_model() {
    [ -f "$2" ] || fail "$2 is missing from $(pwd)"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
        || fail "cannot find a free port"
    "$cache/llama-server" -m "$2" --host 127.0.0.1 --port "$port" -ngl 999 -c "$ctx" \
        -np "$slots" --no-webui > "$3" 2>&1 &
    server_pid=$!
    python3 compare_client.py --port "$port" --server-pid "$server_pid" --build "$ASSET" \
        --concurrency "$slots" --role "$1" --server-log "$3" --models "$models" --index "$4" \
        || exit 1
    stop_server
}

measure_model child "$MODEL" server.log 0
[ -n "$BASE_MODEL" ] && measure_model base "$BASE_MODEL" base_server.log 1
exit 0
