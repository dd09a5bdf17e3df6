# The bench job: fetch the pinned llama-server, then for each model (the child, then its base)
# serve its GGUF on 127.0.0.1 and run lm-evaluation-harness on every task not finished yet.
# A finished (model, task) pair is `results/<model>/<task>.json`; a rerun of the job in the same
# directory (`bench --resume`) skips it, and lm-eval's request cache (`cache/<model>`) keeps
# the answered requests of a half-done task.

cd "$(dirname "$0")" || exit 1
server_pid=
# The GGUFs are where the compare's job finds them (placed the same way on every target).
OVERBRAINER_BENCH_GGUF_child=$OVERBRAINER_COMPARE_MODEL
OVERBRAINER_BENCH_GGUF_base=${OVERBRAINER_COMPARE_BASE_MODEL:-}

cleanup() {
    stop_server
    if [ -n "${OVERBRAINER_COMPARE_DISCARD_MODEL:-}" ]; then
        for _name in $OVERBRAINER_BENCH_MODELS; do
            eval "rm -f \"\$OVERBRAINER_BENCH_GGUF_$_name\""
        done
    fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# progress DONE TOTAL: an `eval` line in the metrics file (the follow loop shows it).
progress() {
    [ -n "${OVERBRAINER_METRICS:-}" ] || return 0
    printf '{"event":"eval","time":%s,"step":%s,"total":%s}\n' "$(date +%s)" "$1" "$2" \
        >> "$OVERBRAINER_METRICS"
}

# start_server GGUF NAME: serve GGUF on a free port; waits until /health answers.
start_server() {
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
        || fail "cannot find a free port"
    LD_LIBRARY_PATH=$server_libs "$cache/llama-server" -m "$1" --host 127.0.0.1 --port "$port" \
        -ngl 999 -c "${OVERBRAINER_COMPARE_CTX:-0}" -np 1 --no-webui > "server-$2.log" 2>&1 &
    server_pid=$!
    python3 - "$port" "$server_pid" "${OVERBRAINER_COMPARE_START_SECS:-300}" "server-$2.log" <<'PYWAIT' || exit 1
import os, sys, time, urllib.request
port, pid, seconds, log = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
deadline = time.monotonic() + seconds
def tail():
    try:
        with open(log, encoding="utf-8", errors="replace") as text:
            return "".join(text.readlines()[-10:])
    except OSError:
        return ""
while True:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            gone = stat.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has ended
    except ProcessLookupError:
        gone = True
    except (OSError, IndexError):
        gone = False
    if gone:
        sys.exit(f"bench: llama-server exited before it was ready:\n{tail()}")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as reply:
            if reply.status == 200:
                sys.exit(0)
    except OSError:
        pass
    if time.monotonic() > deadline:
        sys.exit(f"bench: llama-server was not ready within {seconds} s:\n{tail()}")
    time.sleep(0.2)
PYWAIT
}

# run_task NAME TASK: lm-eval on one task against the served model; its results kept on success.
run_task() {
    endpoint=completions
    chat=
    if [ "$OVERBRAINER_BENCH_MODEL_TYPE" = local-chat-completions ]; then
        endpoint=chat/completions
        chat=--apply_chat_template
    fi
    # lm-eval runs in tasks/ (the custom task files): a task's `data_files` are relative to it.
    up= _dir=.
    [ -d tasks ] && up=../ _dir=tasks
    set -- "$1" "$2" --model "$OVERBRAINER_BENCH_MODEL_TYPE" \
        --model_args "base_url=http://127.0.0.1:$port/v1/$endpoint,model=$1,tokenizer_backend=None,tokenized_requests=False,num_concurrent=1,max_retries=3,max_gen_toks=$OVERBRAINER_BENCH_MAX_TOKENS" \
        --tasks "$2" --output_path "${up}out/$1/$2" --use_cache "${up}cache/$1"
    [ -n "$chat" ] && set -- "$@" "$chat"
    [ -d tasks ] && set -- "$@" --include_path .
    [ -n "${OVERBRAINER_BENCH_LIMIT:-}" ] && set -- "$@" --limit "$OVERBRAINER_BENCH_LIMIT"
    [ -n "${OVERBRAINER_BENCH_FEWSHOT:-}" ] && set -- "$@" --num_fewshot "$OVERBRAINER_BENCH_FEWSHOT"
    [ -n "${OVERBRAINER_BENCH_LOG_SAMPLES:-}" ] && set -- "$@" --log_samples
    _name=$1 _task=$2
    shift 2
    log=lm_eval-$_name.log
    printf '== %s: %s\n' "$_task" "$*" >> "$log"
    # $OVERBRAINER_BENCH_LM_EVAL is split into words: a command with its own arguments works.
    # shellcheck disable=SC2086
    (cd "$_dir" && exec $OVERBRAINER_BENCH_LM_EVAL "$@") >> "$log" 2>&1
    _rc=$?
    if [ "$_rc" -ne 0 ]; then
        fail "lm_eval exited with code $_rc on task $_task of the $_name model; the last lines of $log:
$(tail -n 8 "$log")"
    fi
    _found=$(find "out/$_name/$_task" -name 'results_*.json' 2>/dev/null | sort | tail -n 1)
    [ -n "$_found" ] || fail "lm_eval wrote no results file for task $_task of the $_name model (see $log)"
    mkdir -p "results/$_name" || fail "cannot create results/$_name"
    cp "$_found" "results/$_name/$_task.json.part" && mv "results/$_name/$_task.json.part" "results/$_name/$_task.json" \
        || fail "cannot keep the results of task $_task of the $_name model"
}

pick_build
server_libs_before=${LD_LIBRARY_PATH:-}
fetch_server
# Only llama-server gets the build's libraries; lm-eval's Python keeps the target's own.
server_libs=$LD_LIBRARY_PATH
if [ -n "$server_libs_before" ]; then
    LD_LIBRARY_PATH=$server_libs_before
else
    unset LD_LIBRARY_PATH
fi
mkdir -p cache results || fail "cannot create cache/ and results/ in $(pwd)"

total=0
done_pairs=0
for name in $OVERBRAINER_BENCH_MODELS; do
    for task in $OVERBRAINER_BENCH_TASKS; do
        total=$((total + 1))
        [ -f "results/$name/$task.json" ] && done_pairs=$((done_pairs + 1))
    done
done
progress "$done_pairs" "$total"
for name in $OVERBRAINER_BENCH_MODELS; do
    eval "gguf=\$OVERBRAINER_BENCH_GGUF_$name"
    pending=
    for task in $OVERBRAINER_BENCH_TASKS; do
        if [ -f "results/$name/$task.json" ]; then
            say "$name: $task already done"
        else
            pending="$pending $task"
        fi
    done
    [ -n "$pending" ] || continue
    [ -f "$gguf" ] || fail "$gguf ($name) is missing"
    say "starting llama-server on the $name model"
    start_server "$gguf" "$name"
    for task in $pending; do
        say "$name: $task"
        run_task "$name" "$task"
        done_pairs=$((done_pairs + 1))
        progress "$done_pairs" "$total"
    done
    stop_server
done
say "done"
