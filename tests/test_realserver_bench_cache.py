"""A bench stopped in the middle of a task resumes from lm-eval's request cache: the requests
answered before Ctrl-C are not sent again (the real llama-server and the real lm-eval; the
only stand-in is a `sitecustomize` in lm-eval's process that logs each completion request and
holds the third one's answer until the test has sent SIGINT)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import trio

from tests.bench_support import BENCHES, make_bench_project, offline_env
from tests.compare_support import RUN_ID
from tests.llama_support import LlamaRelease
from tests.pipeline_support import overbrainer, start, wait_until
from tests.test_realserver_bench import NO_PROVIDER

pytestmark = pytest.mark.realserver

SITECUSTOMIZE = """\
import json, os, pathlib, time

import requests

_post = requests.post
_log = pathlib.Path(os.environ["BENCH_TEST_DIR"]) / "requests.log"
_hold = pathlib.Path(os.environ["BENCH_TEST_DIR"]) / "hold"
_held = pathlib.Path(os.environ["BENCH_TEST_DIR"]) / "held"


def post(*args, **kwargs):
    response = _post(*args, **kwargs)
    model = (kwargs.get("json") or {}).get("model", "?")
    with _log.open("a") as log:
        log.write(model + "\\n")
    sent = _log.read_text().splitlines().count(model)
    # The third request's answer is held before lm-eval caches it: two are cached by then.
    if model == "child" and sent == 3 and _hold.exists():
        _held.touch()
        while _hold.exists():
            time.sleep(0.05)
    return response


requests.post = post
"""

WRAPPER = """\
#!/bin/sh
export HF_DATASETS_OFFLINE=1 HF_HOME={hf_home} BENCH_TEST_DIR={directory}
export PYTHONPATH={directory}/site${{PYTHONPATH:+:$PYTHONPATH}}
exec {real} "$@"
"""


def _requests(directory: Path, model: str) -> int:
    return (directory / "requests.log").read_text().splitlines().count(model)


async def test_a_task_stopped_halfway_resumes_from_lm_evals_request_cache(
    tmp_path: Path, llama_release: LlamaRelease, lm_eval_command: Path
) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    wrapper = tmp_path / "lm_eval_wrapper.sh"
    wrapper.write_text(
        WRAPPER.format(hf_home=tmp_path / "hf", directory=tmp_path, real=lm_eval_command)
    )
    wrapper.chmod(0o755)
    root = make_bench_project(tmp_path / "p", str(wrapper))
    env = offline_env(llama_release, tmp_path)
    (tmp_path / "hold").touch()
    async with trio.open_nursery() as nursery:
        process = await start(nursery, root, "bench", url=NO_PROVIDER, env=env)
        await wait_until((tmp_path / "held").exists, limit=600, every=0.1)
        os.kill(process.pid, signal.SIGINT)
        with trio.fail_after(60):
            await process.wait()
    assert process.returncode == 130, (root / "stderr.txt").read_text()
    (folder,) = (root / BENCHES).iterdir()
    assert not (folder / "results" / "child").exists()  # the child's task did not finish
    assert _requests(tmp_path, "child") == 3

    (tmp_path / "hold").unlink()
    done = await overbrainer(
        root, "bench", "--resume", folder.name, url=NO_PROVIDER, env=env, limit=600
    )
    assert done.code == 0, done.stderr
    # The task has 5 questions: the 2 answers cached before Ctrl-C are read from the cache, the
    # third (answered but not cached when lm-eval was stopped) and the last two are asked.
    assert _requests(tmp_path, "child") == 3 + 3
    assert _requests(tmp_path, "base") == 5
    log = (folder / "lm_eval-child.log").read_text()
    assert "Cached requests: 2, Requests remaining: 3" in log
    report = json.loads((folder / "bench.json").read_text())
    assert (report["run"], report["models"]) == (RUN_ID, ["child", "base"])
    samples = next((folder / "out" / "child" / "tiny_qa").rglob("samples_tiny_qa_*.jsonl"))
    assert len(samples.read_text().splitlines()) == 5
