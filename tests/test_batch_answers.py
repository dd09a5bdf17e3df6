"""`answers --batch` end to end against loopback fakes of OpenAI's and Anthropic's batch APIs."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import trio

from overbrainer.events.codec import event_from_json
from overbrainer.events.types import ItemDone, ItemFailed
from overbrainer.llm.batches import BatchItem
from overbrainer.llm.types import CompletionRequest
from overbrainer.pipeline.batch_answers import chunks
from overbrainer.storage.history import HistoryStatus
from overbrainer.storage.records import Question
from tests.batch_fakes import open_fake
from tests.pipeline_support import (
    history,
    make_project,
    overbrainer,
    read_examples,
    start,
    wait_until,
    write_questions,
)

FAST = {"OVERBRAINER_PIPELINE__BATCH_POLL_SECS": "0.05"}
BATCH_COST = 0.1
"""A (100 in, 50 out) answer of the parent: $0.20 at the listed price, half of it in a batch."""
COLLECT = "collect them with `overbrainer answers --batch`"


def some_fail(_custom_id: str, prompt: str) -> str:
    """Question 1 errors, question 2 expires, every other one is answered."""
    if prompt.startswith("Question 1 "):
        return "errored"
    if prompt.startswith("Question 2 "):
        return "expired"
    return "succeeded"


def project(root: Path, protocol: str) -> Path:
    """The demo project; its provider speaks `protocol` (`inline`: OpenRouter's batches)."""
    if protocol == "anthropic":
        return anthropic_project(root)
    make_project(root)
    if protocol == "inline":
        config = root / "overbrainer.toml"
        text = config.read_text().replace(
            'protocol = "openai"\n', 'protocol = "openai"\nbatch_api = "inline"\n'
        )
        config.write_text(text)
    return root


def anthropic_project(root: Path) -> Path:
    make_project(root)
    config = root / "overbrainer.toml"
    text = config.read_text().replace('protocol = "openai"', 'protocol = "anthropic"')
    config.write_text(text.replace("reasoning = true\n", ""))
    return root


def batch_files(root: Path) -> list[Path]:
    directory = root / ".overbrainer" / "batches"
    return sorted(directory.glob("*.json")) if directory.exists() else []


def decoded(path: Path) -> list[object]:
    return [event_from_json(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "inline"])
async def test_a_batch_is_submitted_polled_and_stored_at_the_batch_price(
    tmp_path: Path, protocol: str
) -> None:
    root = project(tmp_path / "p", protocol)
    questions = write_questions(root, 6)
    events = tmp_path / "events.jsonl"
    async with open_fake(some_fail) as fake:
        done = await overbrainer(
            root, "--events", str(events), "answers", "--batch", url=fake.url, env=FAST
        )
        assert fake.submissions == 1
        [batch] = fake.batches.values()
        assert sorted(batch.requests) == sorted(q.id for q in questions)
        assert batch.polls >= 2  # it went through the API's states before ending
    # Errored and expired items stay unanswered for the next run: the stage fails (exit 1).
    assert done.code == 1, done.stderr
    assert done.out_lines[0] == (
        "answers: 4 done, 0 skipped, 2 failed, 0 excluded; tokens 400 in, 200 out; cost $0.4000"
    )
    failed = {q.id for q in questions if q.text.startswith(("Question 1 ", "Question 2 "))}
    stored = read_examples(root)
    assert sorted(e.id for e in stored) == sorted(q.id for q in questions if q.id not in failed)
    assert all(e.messages[-1].content.startswith("Answer to Question") for e in stored)
    assert batch_files(root) == []  # collected: the record is gone
    [record] = history(root)
    assert record.status is HistoryStatus.FAILED
    assert (record.done, record.failed) == (4, 2)
    assert record.cost == pytest.approx(4 * BATCH_COST)
    seen = decoded(events)
    costs = [e.cost for e in seen if isinstance(e, ItemDone)]
    assert costs == [pytest.approx(BATCH_COST)] * 4
    why = {e.id: e.error for e in seen if isinstance(e, ItemFailed)}
    assert sorted(why) == sorted(failed)
    assert any("errored" in m or "400" in m for m in why.values())
    assert any("expired" in m for m in why.values())
    if protocol != "anthropic":
        # The errored and expired questions are asked by the next normal run.
        async with open_fake() as fake:
            again = await overbrainer(root, "answers", url=fake.url)
            assert fake.singles == 2
        assert again.code == 0, again.stderr
        assert again.out_lines[0].startswith("answers: 2 done, 4 skipped, 0 failed")
        assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)


async def test_openai_requests_have_the_documented_shape(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_fake() as fake:
        done = await overbrainer(root, "answers", "--batch", url=fake.url, env=FAST)
        assert done.code == 0, done.stderr
        [content] = [v for k, v in fake.files.items() if k == "file-1"]
        lines = [json.loads(line) for line in content.decode().splitlines()]
        assert {line["method"] for line in lines} == {"POST"}
        assert {line["url"] for line in lines} == {"/v1/chat/completions"}
        assert {line["body"]["model"] for line in lines} == {"parent-model"}
        [batch] = fake.batches.values()
        assert batch.metadata.keys() == {"overbrainer_intent"}
        paths = [target for _, target in fake.requests]
        assert paths.index("/v1/files") < paths.index("/v1/batches")
        assert any(p.startswith("/v1/files/file-batch_1-output") for p in paths)


async def test_kill_9_after_submission_then_a_rerun_reattaches(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 4)
    async with open_fake() as fake, trio.open_nursery() as nursery:
        fake.hold = True
        process = await start(nursery, root, "answers", "--batch", url=fake.url, env=FAST)
        await wait_until(lambda: [p.name for p in batch_files(root)] == ["batch_1.json"])
        os.kill(process.pid, signal.SIGKILL)
        with trio.fail_after(5):
            assert await process.wait() == -signal.SIGKILL
        recorded = json.loads((root / ".overbrainer" / "batches" / "batch_1.json").read_text())
        assert sorted(recorded["questions"]) == sorted(q.id for q in questions)
        assert recorded["provider"] == "stub" and recorded["model"] == "parent-model"

        # A plain rerun does not ask (and pay for) the batched questions again.
        plain = await overbrainer(root, "answers", url=fake.url, env=FAST)
        assert plain.code == 0, plain.stderr
        assert "4 question(s) are in batches submitted earlier and are not asked again" in (
            plain.stderr
        )
        assert not any("chat/completions" in target for _, target in fake.requests)

        fake.hold = False
        rerun = await overbrainer(root, "answers", "--batch", url=fake.url, env=FAST)
        assert rerun.code == 0, rerun.stderr
        assert fake.submissions == 1  # re-attached, not submitted again
        assert "re-attached to batch batch_1 (4 question(s))" in rerun.stderr
        assert rerun.out_lines[0].startswith("answers: 4 done, 0 skipped, 0 failed")
    assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)
    assert batch_files(root) == []


@pytest.mark.parametrize("plain_first", [False, True], ids=["batch", "plain-then-batch"])
async def test_an_intent_left_by_a_crash_is_reconciled_by_its_tag(
    tmp_path: Path, plain_first: bool
) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 2)
    async with open_fake() as fake:
        fake.hold = True
        async with trio.open_nursery() as nursery:
            process = await start(nursery, root, "answers", "--batch", url=fake.url, env=FAST)
            await wait_until(lambda: [p.name for p in batch_files(root)] == ["batch_1.json"])
            os.kill(process.pid, signal.SIGKILL)
            with trio.fail_after(5):
                await process.wait()
        # As if the crash came between the submit and its record: only the intent is left.
        directory = root / ".overbrainer" / "batches"
        record = json.loads((directory / "batch_1.json").read_text())
        (directory / "batch_1.json").unlink()
        (directory / f"intent-{record['tag']}.json").write_text(json.dumps({**record, "id": None}))
        fake.hold = False
        if plain_first:
            # The batch exists and is billed: a plain `answers` must not ask its questions again.
            plain = await overbrainer(root, "answers", url=fake.url, env=FAST)
            assert plain.code == 0, plain.stderr
            assert fake.singles == 0
            assert (
                f"2 question(s) are in batches submitted earlier and are not asked again: {COLLECT}"
                in (plain.stderr)
            )
            assert [p.name for p in batch_files(root)] == ["batch_1.json"]
        rerun = await overbrainer(root, "answers", "--batch", url=fake.url, env=FAST)
        assert rerun.code == 0, rerun.stderr
        assert fake.submissions == 1
    assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)
    assert batch_files(root) == []


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "inline"])
async def test_ctrl_c_leaves_the_batch_running_then_cancel_cancels_it(
    tmp_path: Path, protocol: str
) -> None:
    root = project(tmp_path / "p", protocol)
    write_questions(root, 3)
    async with open_fake() as fake, trio.open_nursery() as nursery:
        fake.hold = True
        process = await start(nursery, root, "answers", "--batch", url=fake.url, env=FAST)
        await wait_until(lambda: len(batch_files(root)) == 1 and fake.submissions == 1)
        polls = len(fake.requests)
        await wait_until(lambda: len(fake.requests) > polls + 2)  # it is polling
        process.send_signal(signal.SIGINT)
        with trio.fail_after(10):
            code = await process.wait()
        stderr = (root / "stderr.txt").read_text()
        assert code == 130, stderr
        assert f"1 batch(es) with 3 question(s) still running at the provider: {COLLECT}" in (
            stderr
        )
        assert len(batch_files(root)) == 1
        assert fake.cancels == 0

        cancelled = await overbrainer(
            root, "answers", "--batch", "--cancel", url=fake.url, env=FAST
        )
        assert fake.cancels == 1
        assert fake.submissions == 1
    assert cancelled.code == 0, cancelled.stderr
    assert cancelled.out_lines[0].startswith("answers: 0 done, 0 skipped, 0 failed")
    ended = "msgbatch_1 ended" if protocol == "anthropic" else "batch_1 cancelled"
    assert f"batch {ended}: 3 question(s) left for the next run" in cancelled.stderr
    assert batch_files(root) == []
    assert read_examples(root) == []


async def test_cancel_needs_batch(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_fake() as fake:
        done = await overbrainer(root, "answers", "--cancel", url=fake.url)
    assert done.code == 2
    assert "--cancel needs --batch" in done.stderr


async def test_the_spend_cap_limits_what_is_submitted(tmp_path: Path) -> None:
    # Each answer's worst case at the batch price is about $16.43 (16,384 tokens out at
    # $1,000 per million, the prompt at $500 per million): $40 fits two of them.
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 4)
    async with open_fake() as fake:
        done = await overbrainer(
            root, "answers", "--batch", "--max-cost", "40", url=fake.url, env=FAST
        )
        [batch] = fake.batches.values()
    assert sorted(batch.requests) == sorted(q.id for q in questions[:2])
    assert done.code == 1, done.stderr
    assert done.out_lines[0].startswith("answers: 2 done, 0 skipped, 0 failed")
    assert "spend cap" in done.stderr
    assert len(read_examples(root)) == 2


async def test_answers_batch_on_the_stub_protocol_is_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    config.write_text(config.read_text().replace('protocol = "openai"', 'protocol = "stub"'))
    write_questions(root, 1)
    async with open_fake() as fake:
        done = await overbrainer(root, "answers", "--batch", url=fake.url)
    assert done.code == 2
    assert done.stderr.splitlines()[-1] == (
        "error: --batch: the stub protocol of provider `stub` has no batch API"
    )
    assert read_examples(root) == []


async def test_an_anthropic_intent_cannot_be_found_so_its_questions_are_asked_again(
    tmp_path: Path,
) -> None:
    root = anthropic_project(tmp_path / "p")
    questions = write_questions(root, 2)
    write_intent(root, questions)
    async with open_fake() as fake:
        done = await overbrainer(root, "answers", "--batch", url=fake.url, env=FAST)
        assert fake.submissions == 1
    assert done.code == 0, done.stderr
    assert (
        "a batch of 2 question(s) was being submitted at 2026-12-03T18:23:02Z when the command "
        "stopped and no batch with its tag was found: its questions are asked again"
    ) in done.stderr
    assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)
    assert batch_files(root) == []


async def test_a_refused_submit_leaves_no_record_and_fails_its_items(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_fake() as fake:
        fake.refuse = 400
        done = await overbrainer(root, "answers", "--batch", url=fake.url, env=FAST)
        assert fake.submissions == 0
    assert done.code == 1, done.stderr
    assert done.out_lines[0].startswith("answers: 0 done, 0 skipped, 2 failed")
    assert "failed: HTTP 400: batch refused" in done.stderr
    assert batch_files(root) == []
    assert read_examples(root) == []


async def test_batch_in_the_config_sends_plain_answers_through_the_batch_api(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    text = config.read_text().replace("reasoning = true\n", "reasoning = true\nbatch = true\n")
    config.write_text(text + "batch_poll_secs = 0.05\n")
    questions = write_questions(root, 3)
    async with open_fake() as fake:
        done = await overbrainer(root, "answers", url=fake.url)
        assert fake.submissions == 1
    assert done.code == 0, done.stderr
    assert done.out_lines[0].startswith("answers: 3 done, 0 skipped, 0 failed")
    assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)


def test_items_are_cut_into_batches_within_the_api_limits() -> None:
    class Api:
        max_requests = 3
        max_bytes = 100

        def size(self, item: BatchItem) -> int:
            return int(item.custom_id)

    items = [BatchItem(str(size), CompletionRequest("q")) for size in (10, 10, 10, 10, 60, 50)]
    cut = chunks(Api(), items)  # type: ignore[arg-type]
    assert [[int(i.custom_id) for i in chunk] for chunk in cut] == [[10, 10, 10], [10, 60], [50]]


def write_intent(root: Path, questions: list[Question]) -> None:
    """An intent (no batch ID) for `questions`, as a submit that never got its answer leaves."""
    directory = root / ".overbrainer" / "batches"
    directory.mkdir(parents=True, exist_ok=True)
    intent = {
        "id": None,
        "tag": "0123456789abcdef",
        "provider": "stub",
        "model": "parent-model",
        "created": "2026-12-03T18:23:02Z",
        "questions": [q.id for q in questions],
    }
    (directory / "intent-0123456789abcdef.json").write_text(json.dumps(intent))


DROPPED = (
    "a batch of 2 question(s) was being submitted at 2026-12-03T18:23:02Z when the command "
    "stopped and {}: its questions are asked again"
)


async def test_a_failed_upload_leaves_no_intent_and_the_next_run_submits_again(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 4)
    async with open_fake() as fake:
        fake.drop_uploads = True
        failed = await overbrainer(root, "answers", "--batch", url=fake.url, env=FAST)
        assert failed.code == 1, failed.stderr
        assert "Traceback" not in failed.stderr
        assert failed.out_lines[0].startswith("answers: 0 done, 0 skipped, 4 failed")
        # No file got there, so no batch can exist: nothing is left to hold the questions.
        assert batch_files(root) == []
        assert fake.submissions == 0

        fake.drop_uploads = False
        rerun = await overbrainer(root, "answers", "--batch", url=fake.url, env=FAST)
        assert rerun.code == 0, rerun.stderr
        assert fake.submissions == 1
    assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)
    assert batch_files(root) == []


async def test_an_intent_the_provider_cannot_look_up_is_dropped_by_batch_and_cancel(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 2)
    write_intent(root, questions)
    async with open_fake() as fake:
        fake.listing = False
        cancel = await overbrainer(root, "answers", "--batch", "--cancel", url=fake.url, env=FAST)
        assert cancel.code == 0, cancel.stderr
        why = "its batch cannot be looked up (HTTP 404: not found)"
        assert DROPPED.format(why) in cancel.stderr
        assert batch_files(root) == []

        write_intent(root, questions)
        done = await overbrainer(root, "answers", "--batch", url=fake.url, env=FAST)
        assert done.code == 0, done.stderr
        assert DROPPED.format(why) in done.stderr
        assert fake.submissions == 1
    assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)
    assert batch_files(root) == []


@pytest.mark.parametrize("force", [False, True])
async def test_a_plain_answers_drops_an_intent_and_asks_its_questions(
    tmp_path: Path, force: bool
) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 2)
    write_intent(root, questions)
    async with open_fake() as fake:
        args = ("answers", "--force") if force else ("answers",)
        done = await overbrainer(root, *args, url=fake.url, env=FAST)
        assert fake.singles == 2
    assert done.code == 0, done.stderr
    assert DROPPED.format("no batch with its tag was found") in done.stderr
    assert done.out_lines[0].startswith("answers: 2 done, 0 skipped, 0 failed")
    assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)
    assert batch_files(root) == []
