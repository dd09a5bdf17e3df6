"""`overbrainer run` and `questions` end to end on a two-topic project against the stub."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.pipeline.split import stratify
from overbrainer.storage.history import HistoryStatus
from overbrainer.storage.records import Question, Subtopic
from overbrainer.training.run_store import Runs
from tests.pipeline_support import (
    TRAINING,
    history,
    make_project,
    overbrainer,
    read_examples,
    start,
    wait_until,
)
from tests.train_helpers import kill_jobs, standin_env


def records(root: Path, name: str, kind: type[Subtopic] | type[Question]) -> list[str]:
    path = root / "data" / f"{name}.jsonl"
    return [kind.from_json(line).id for line in path.read_text().splitlines()]


@pytest.mark.quick  # an end-to-end path of the quick tier
async def test_run_makes_every_file_then_a_second_run_asks_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        first = await overbrainer(root, "run", url=stub.url)
        assert first.code == 0, first.stderr
        out = first.out_lines
        assert len(out) == 4
        assert out[0].startswith("subtopics: 2 done, 0 skipped, 0 failed, 0 excluded; tokens ")
        assert out[1].startswith("questions: 4 done, 0 skipped, 0 failed, 0 excluded; tokens ")
        assert out[2].startswith("answers: 8 done, 0 skipped, 0 failed, 0 excluded; tokens ")
        assert out[3] == "split: 7 train, 1 eval, 0 excluded, 0 orphaned"
        assert "no [training] section in overbrainer.toml: run stops after split" in first.stderr
        subtopics = [Subtopic.from_json(x) for x in (root / "data/subtopics.jsonl").open()]
        assert sorted(s.topic for s in subtopics) == ["async", "async", "ownership", "ownership"]
        questions = [Question.from_json(x) for x in (root / "data/questions.jsonl").open()]
        assert len(questions) == 8
        assert {q.subtopic_id for q in questions} == {s.id for s in subtopics}
        answers = read_examples(root)
        assert sorted(a.id for a in answers) == sorted(q.id for q in questions)
        assert all(a.meta.excluded is None for a in answers)
        train, evaluation = stratify(answers, 0.1, 42)
        assert read_examples(root, "train") == train
        assert read_examples(root, "eval") == evaluation
        asked = len(stub.requests)

        with (root / "overbrainer.toml").open("a") as config:
            config.write(TRAINING)
        # With [training] and an `axolotl` on PATH (the tests' stand-in), run trains after split.
        env = standin_env(tmp_path / "bin", STANDIN_STEPS="4", STANDIN_EVAL_EVERY="0")
        try:
            second = await overbrainer(root, "run", url=stub.url, env=env)
        finally:
            kill_jobs(root)  # a failed run must not leave its training job behind
        assert second.code == 0, second.stderr
        assert [r for r in stub.requests[asked:] if r.method == "POST"] == []
        (run_id,) = Runs(root / "runs").ids()
        assert second.out_lines == [
            "subtopics: 0 done, 2 skipped, 0 failed, 0 excluded; tokens 0 in, 0 out; cost unknown",
            "questions: 0 done, 4 skipped, 0 failed, 0 excluded; tokens 0 in, 0 out; cost unknown",
            "answers: 0 done, 8 skipped, 0 failed, 0 excluded; tokens 0 in, 0 out; cost unknown",
            "split: 7 train, 1 eval, 0 excluded, 0 orphaned",
            f"train: run {run_id} succeeded; step 4/4, epoch 1.00, loss 1.0000; "
            f"output in runs/{run_id}/output",
            f"train: adapter in runs/{run_id}/output",
        ]
        trained = (root / "runs" / run_id / "data" / "train.jsonl").read_text()
        assert trained == (root / "data" / "train.jsonl").read_text()
    lines = history(root)
    assert [(h.stage.value, h.status) for h in lines] == [
        (stage, HistoryStatus.OK) for stage in ("subtopics", "questions", "answers", "split") * 2
    ]
    assert [h.model for h in lines[:4]] == ["gen-model", "gen-model", "parent-model", None]
    assert [h.done for h in lines[:3]] == [2, 4, 8]


async def test_no_train_stops_run_after_split_even_with_training(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a") as config:
        config.write(TRAINING)
    async with open_stub() as stub:
        result = await overbrainer(root, "run", "--no-train", url=stub.url)
    assert result.code == 0, result.stderr
    assert result.out_lines[-1] == "split: 7 train, 1 eval, 0 excluded, 0 orphaned"
    assert "--no-train: run stops after split" in result.stderr
    assert not (root / "runs").exists()


async def test_run_refuses_before_its_stages_when_training_cannot_start(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a") as config:
        config.write(TRAINING)
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    path = f"{empty_bin}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"
    async with open_stub() as stub:
        result = await overbrainer(root, "run", url=stub.url, env={"PATH": path})
        assert stub.completions == []  # nothing spent
    assert result.code == 2
    assert result.out_lines == []
    assert result.stderr.splitlines()[-1] == (
        "error: target `local` cannot train: axolotl is not on PATH (set targets.local.venv to "
        "Axolotl's virtual environment); `overbrainer run --no-train` makes the dataset without "
        "training"
    )
    assert "subtopics:" not in result.stderr
    assert not (root / "runs").exists() or list((root / "runs").glob("*/run.json")) == []


async def test_run_reloads_a_changed_config_between_stages(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"

    def respond(request: Recorded) -> Reply:
        text = config.read_text()
        if "parent-model" in text:
            config.write_text(text.replace('model = "parent-model"', 'model = "parent-two"'))
        return default_reply(request)

    async with open_stub(respond) as stub:
        result = await overbrainer(root, "run", url=stub.url)
        assert result.code == 0, result.stderr
        models = {
            r.body_json.get("model")
            for r in stub.completions
            if isinstance(r.body_json, dict) and r.system is not None
        }
    assert models == {"parent-two"}
    assert "config reloaded" in result.stderr
    assert {a.meta.model for a in read_examples(root)} == {"parent-two"}
    assert history(root)[2].model == "parent-two"


async def test_run_stops_when_the_changed_config_is_invalid(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"

    def respond(request: Recorded) -> Reply:
        config.write_text(config.read_text() + "\n[pipeline]\nconcurrency = 0\n")
        return default_reply(request)

    async with open_stub(respond) as stub:
        result = await overbrainer(root, "run", url=stub.url)
        assert len(stub.completions) == 2
    assert result.code == 2
    assert result.out_lines[0].startswith("subtopics: 2 done")
    assert len(result.out_lines) == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: the configuration changed and cannot be used; the run stops: invalid configuration"
    )
    assert [h.stage.value for h in history(root)] == ["subtopics"]


async def test_questions_first_makes_the_missing_subtopics(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        result = await overbrainer(root, "questions", "--topic", "async", url=stub.url)
    assert result.code == 0, result.stderr
    assert [line.split(":")[0] for line in result.out_lines] == ["subtopics", "questions"]
    assert result.out_lines[0].startswith("subtopics: 1 done, 0 skipped")
    assert result.out_lines[1].startswith("questions: 2 done, 0 skipped")
    assert [(h.stage.value, h.status) for h in history(root)] == [
        ("subtopics", HistoryStatus.OK),
        ("questions", HistoryStatus.OK),
    ]


async def test_ctrl_c_during_questions_stops_run_and_a_rerun_finishes(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2)

    async def respond(request: Recorded) -> Reply:
        reply = default_reply(request)
        if "question" in (request.prompt or "").lower() and slow:
            reply.delay = 2.0
        return reply

    slow = True
    async with open_stub(respond) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "run", url=stub.url)
        await wait_until(
            lambda: sum("question" in (r.prompt or "").lower() for r in stub.completions) == 2
        )
        process.send_signal(signal.SIGINT)
        with trio.fail_after(8):
            assert await process.wait() == 130
        out = (root / "stdout.txt").read_text().splitlines()
        assert [line.split(":")[0] for line in out] == ["subtopics", "questions"]
        assert out[1].startswith("questions: 2 done, 0 skipped, 0 failed")
        err = (root / "stderr.txt").read_text().strip().splitlines()
        assert err[-1] == "interrupted: the stage resumes on its next run"
        assert [(h.stage.value, h.status) for h in history(root)] == [
            ("subtopics", HistoryStatus.OK),
            ("questions", HistoryStatus.INTERRUPTED),
        ]
        slow = False
        rerun = await overbrainer(root, "run", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        assert rerun.out_lines[1].startswith("questions: 2 done, 2 skipped, 0 failed")
        assert rerun.out_lines[3] == "split: 7 train, 1 eval, 0 excluded, 0 orphaned"
