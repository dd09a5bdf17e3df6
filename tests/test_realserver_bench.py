"""`overbrainer bench` end to end: the real llama-server serves a tiny child and a tiny base GGUF,
the real lm-evaluation-harness runs a local generate_until task against each; Ctrl-C during the
base model, then `--resume` (`.ci/run`'s real-tools step runs these with `-m realserver`)."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path

import pytest
import trio

from tests.bench_support import BENCHES, make_bench_project, offline_env, write_wrapper
from tests.compare_support import BASE_GGUF, RUN_ID
from tests.llama_support import LlamaRelease
from tests.pipeline_support import overbrainer, start, wait_until
from tests.sshd_support import ALIAS, Sshd, kill_jobs_under

pytestmark = pytest.mark.realserver

NO_PROVIDER = "http://127.0.0.1:9"
"""The bench asks no provider: the stub's address is never used."""


def _bench_dir(root: Path) -> Path:
    found = sorted((root / BENCHES).iterdir())
    assert len(found) == 1
    return found[0]


def _sample_scores(folder: Path, model: str) -> list[float]:
    """The per-sample exact_match values lm-eval logged for the model."""
    samples = next((folder / "out" / model / "tiny_qa").rglob("samples_tiny_qa_*.jsonl"))
    return [json.loads(line)["exact_match"] for line in samples.read_text().splitlines()]


def _mean_and_stderr(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


async def test_bench_of_child_and_base_resumes_after_ctrl_c_without_rerunning_the_child(
    tmp_path: Path, llama_release: LlamaRelease, lm_eval_command: Path
) -> None:
    wrapper = write_wrapper(tmp_path, lm_eval_command)
    root = make_bench_project(tmp_path / "p", str(wrapper))
    env = offline_env(llama_release, tmp_path)
    (tmp_path / "hold").touch()
    async with trio.open_nursery() as nursery:
        process = await start(nursery, root, "bench", url=NO_PROVIDER, env=env)
        await wait_until((tmp_path / "held").exists, limit=600, every=0.1)
        os.kill(process.pid, signal.SIGINT)
        with trio.fail_after(60):
            await process.wait()
    stderr = (root / "stderr.txt").read_text()
    assert process.returncode == 130, stderr
    folder = _bench_dir(root)
    bench_id = folder.name
    assert stderr.splitlines()[-1] == (
        f"interrupted: bench {bench_id} of run {RUN_ID} cancelled; resume with "
        f"`overbrainer bench --resume {bench_id}`"
    )
    assert json.loads((folder / "run.json").read_text())["state"] == "cancelled"
    assert (folder / "results" / "child" / "tiny_qa.json").is_file()
    assert not (folder / "results" / "base").exists()
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [("model=child," in c, "model=base," in c) for c in calls] == [
        (True, False),
        (False, True),
    ]

    (tmp_path / "hold").unlink()
    done = await overbrainer(
        root, "bench", "--resume", bench_id, "--json", url=NO_PROVIDER, env=env, limit=600
    )
    assert done.code == 0, done.stderr
    # The job's progress lines speak of the bench, not of a compare.
    assert "INFO bench: job exited with code 0" in done.stderr
    assert " compare: " not in stderr + done.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == 3 and "model=base," in calls[2]  # the child's task is not run again
    assert "bench: child: tiny_qa already done" in (folder / "job.log").read_text()
    assert json.loads((folder / "run.json").read_text())["state"] == "succeeded"

    report = json.loads((folder / "bench.json").read_text())
    assert report["models"] == ["child", "base"]
    assert report["tasks"] == ["tiny_qa"]
    [row] = report["rows"]
    assert (row["task"], row["metric"], row["filter"]) == ("tiny_qa", "exact_match", "none")
    for model in ("child", "base"):
        mean, stderr_ = _mean_and_stderr(_sample_scores(folder, model))
        assert row[model]["value"] == pytest.approx(mean)
        assert row[model]["stderr"] == pytest.approx(stderr_)
    assert row["difference"] == pytest.approx(row["child"]["value"] - row["base"]["value"])
    bound = 1.96 * math.hypot(row["child"]["stderr"], row["base"]["stderr"])
    assert row["bound"] == pytest.approx(bound)
    regressed = row["difference"] < -bound
    assert report["regressions"] == (["tiny_qa"] if regressed else [])

    markdown = (folder / "bench.md").read_text()
    assert "| task | metric | child ± se | base ± se | child − base | bound | verdict |" in markdown
    assert f"| tiny_qa | exact_match ↑ | {row['child']['value']:.4f} ± " in markdown
    if not regressed:
        assert "No regression beyond the error" in markdown

    document = json.loads(done.stdout)
    assert document["bench"]["rows"] == report["rows"]
    assert document["bench"]["regressions"] == report["regressions"]
    assert document["bench"]["report_md"] == f"{BENCHES}/{bench_id}/bench.md"
    assert document["bench"]["report_json"] == f"{BENCHES}/{bench_id}/bench.json"
    # What docs/bench.md quotes (`pytest -s` shows it).
    print(stderr + done.stderr, done.stdout, markdown, (folder / "job.log").read_text())
    print(sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if "out/" not in str(p)))


async def test_a_failing_lm_eval_fails_the_bench_with_its_last_lines(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    broken = tmp_path / "broken_lm_eval.sh"
    broken.write_text("#!/bin/sh\necho 'lm_eval: error: no task named tiny_qa here' >&2\nexit 3\n")
    broken.chmod(0o755)
    root = make_bench_project(tmp_path / "p", str(broken), base=False)
    done = await overbrainer(
        root, "bench", url=NO_PROVIDER, env=offline_env(llama_release, tmp_path), limit=300
    )
    assert done.code == 1, done.stderr
    folder = _bench_dir(root)
    warning = (
        f"WARN bench: run {RUN_ID} has no GGUF of its base model (`overbrainer export {RUN_ID} "
        "--base` makes one): benching the child alone"
    )
    assert [line for line in done.stderr.splitlines() if line.endswith(warning)] != []
    error = done.stderr[done.stderr.index("error: ") :]
    assert error.startswith(
        f"error: bench {folder.name} of run {RUN_ID} failed ({BENCHES}/{folder.name}): "
        "lm_eval exited with code 3 on task tiny_qa of the child model; the last lines of "
        "lm_eval-child.log:"
    )
    assert "lm_eval: error: no task named tiny_qa here" in error
    assert json.loads((folder / "run.json").read_text())["state"] == "failed"
    print(done.stderr)


async def test_a_bench_on_an_ssh_target_uploads_both_ggufs_and_fetches_the_results(
    sshd: Sshd, tmp_path: Path, llama_release: LlamaRelease, lm_eval_command: Path
) -> None:
    workdir = (tmp_path / "remote").resolve()
    wrapper = write_wrapper(tmp_path, lm_eval_command)
    root = make_bench_project(
        tmp_path / "p", str(wrapper), target="box", remote_dir=workdir / RUN_ID
    )
    with (root / "overbrainer.toml").open("a", encoding="utf-8") as config:
        config.write(f'[targets.box]\nkind = "ssh"\nruntime = "native"\nworkdir = "{workdir}"\n')
    env = offline_env(llama_release, tmp_path)
    env["OVERBRAINER_TARGETS__BOX__HOST"] = ALIAS
    env["OVERBRAINER_SSH_CONFIG"] = str(sshd.client_config)
    try:
        done = await overbrainer(root, "bench", url=NO_PROVIDER, env=env, limit=600)
    finally:
        kill_jobs_under(workdir)
    assert done.code == 0, done.stderr
    folder = _bench_dir(root)
    remote_bench = workdir / RUN_ID / "benches" / folder.name
    # Both GGUFs went to the target's run directory; the results came back, verified.
    for gguf in ("output/gguf/tiny-Q8_0.gguf", BASE_GGUF):
        assert (workdir / RUN_ID / gguf).is_file()
    for name in ("results/child/tiny_qa.json", "results/base/tiny_qa.json", "job.log"):
        assert (folder / name).read_bytes() == (remote_bench / name).read_bytes()
    report = json.loads((folder / "bench.json").read_text())
    assert report["models"] == ["child", "base"] and len(report["rows"]) == 1
    assert json.loads((folder / "run.json").read_text())["remote_dir"] == str(remote_bench)
