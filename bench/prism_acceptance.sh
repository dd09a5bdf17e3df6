#!/usr/bin/env bash
# Acceptance run of the dataset pipeline through Stoplight Prism with OpenAI's own API
# description (tests/fixtures/openai-openapi.json, unmodified).
#
#   bench/prism_acceptance.sh [PRESET]       (an `init --provider` preset of the OpenAI family:
#                                            openrouter (default), openai, openai-compatible, ...)
#
# Prism runs in proxy mode with --errors in front of the stand-in provider
# (`python -m overbrainer.devtools.stub_provider`): every request the real command sends is
# validated against the description (a violation is answered 422 and logged), then forwarded.
# A fresh `overbrainer init --provider PRESET` project, its provider's base URL on Prism, runs
# `overbrainer run --no-train` with a quality judge. First, a request Prism must refuse
# (`{"model": "x"}`, no messages) proves that it validates bodies on this description at all.
#
# Needs node/npx (Prism 5 is fetched by npx on the first run, or PRISM names an installed
# binary) and the project installed in the active Python.
# Prints the counts and exits 1 when Prism found a violation. Not part of CI.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
spec="$here/tests/fixtures/openai-openapi.json"
preset="${1:-openrouter}"
prism_cmd="${PRISM:-npx --yes @stoplight/prism-cli@5.16.0}"  # PRISM: an installed prism binary
work=$(mktemp -d)
pids=()
stop_servers() {
    # Each server leads its own process group (setsid), so npx's node child goes with it; a
    # group still there 5 s after SIGTERM (Prism's node may not end on it) is killed.
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
cleanup() {
    stop_servers
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cd "$work"
overbrainer init p --provider "$preset" > init.log 2>&1
# A small run: 2 subtopics of 3 questions, the generator's model as the quality judge; the
# stand-in lists every model of the project with a price.
python3 - <<'EOF'
import json, pathlib, re
path = pathlib.Path("p/overbrainer.toml")
text = path.read_text()
text = text.replace("subtopics = 10", "subtopics = 2")
text = text.replace("questions_per_subtopic = 30", "questions_per_subtopic = 3")
provider = re.search(r"^\[providers\.([\w-]+)\]", text, re.M)[1]
models = re.findall(r'^model = "([^"]+)"', text, re.M)
judge = f'{{ provider = "{provider}", model = "{models[0]}", max_tokens = 200 }}'
path.write_text(text + f"\n[quality]\njudge = {judge}\n")
pathlib.Path("provider").write_text(provider.upper())
data = [{"id": m, "pricing": {"prompt": "0.0000002", "completion": "0.0000008"}} for m in models]
pathlib.Path("models.json").write_text(json.dumps({"data": data}))
EOF
provider=$(cat provider)

# The stand-in runs with the tests' own check installed (tests/standin_contract.py, strict:
# the product's known violations count too), so that the run is also counted by a validator
# that is proven to reject bad bodies; it writes what it found on exit.
PYTHONPATH="$here" setsid python - --models-json "$work/models.json" --dialect "$preset" \
    > "$work/stub.out" 2> "$work/stub.err" <<EOF &
import atexit, json, sys
from overbrainer.devtools import stub_provider
from tests import standin_contract
contract = standin_contract.StandinContract()
stub_provider.check_exchanges(contract)
def report():
    with open("$work/contract.json", "w") as out:
        json.dump(contract.violations(), out)
atexit.register(report)
stub_provider.main(sys.argv[1:])
EOF
pids+=($!)
until [ -s "$work/stub.out" ]; do sleep 0.2; done
upstream=$(head -1 "$work/stub.out")

port=$(free_port)
setsid $prism_cmd proxy "$spec" "$upstream" --errors \
    --host 127.0.0.1 --port "$port" > "$work/prism.log" 2>&1 &
pids+=($!)
prism="http://127.0.0.1:$port"
until curl -s -o /dev/null "$prism/models"; do sleep 0.5; done

# Prism must refuse a chat request without messages, or its passes mean nothing.
probe=$(curl -s -o "$work/probe.json" -w '%{http_code}' -X POST "$prism/chat/completions" \
    -H 'content-type: application/json' -H 'authorization: Bearer sk-test' -d '{"model":"x"}')
echo "probe {\"model\":\"x\"} (no messages): HTTP $probe $(head -c 300 "$work/probe.json")"

cd p
export "OVERBRAINER_PROVIDERS__${provider}__BASE_URL=$prism"
export "OVERBRAINER_PROVIDERS__${provider}__API_KEY=sk-test-0123456789"
set +e
overbrainer run --no-train > "$work/run.out" 2> "$work/run.err"
code=$?
set -e
echo "overbrainer run --no-train: exit $code"
tail -3 "$work/run.out"

stop_servers
wait 2>/dev/null || true
pids=()
contract=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(len(v)); [print("  ", x[:200]) for x in sorted(set(v))[:20]]' "$work/contract.json")
echo "tests/standin_contract.py on the stand-in: ${contract%%$'\n'*} violations (the probe's included)"
echo "$contract" | tail -n +2
requests=$(grep -c 'Request received' "$work/prism.log" || true)
violations=$(grep -cE '\[VALIDATOR\].*(error|✖)|violation' "$work/prism.log" || true)
echo "prism: $requests requests, $violations violation lines"
grep -E '\[VALIDATOR\]|violation' "$work/prism.log" | sed -E 's/\x1b\[[0-9;]*m//g; s/^\[[^]]*\] *//' | sort | uniq -c | sort -rn | head -20
if [ "$probe" != 422 ]; then
    echo "Prism did not refuse the probe: it does not validate request bodies on this description," \
        "so its count proves nothing; rely on tests/standin_contract.py's count above"
fi
[ "$violations" = 0 ] && [ "$probe" = 422 ] && [ "${contract%%$'\n'*}" = 1 ]
