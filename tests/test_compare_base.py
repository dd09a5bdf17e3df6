"""`overbrainer compare --base`: the child against its parent and its base model in one
compare, two tiny GGUFs served by the real llama-server, judged by the stand-in provider."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import trio

from overbrainer.compare.verdicts import child_first
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.compare_support import (
    BASE_GGUF,
    JUDGE_PRICES,
    RUN_ID,
    SCRIPTED,
    add_base_export,
    compare_env,
    is_base_request,
    make_compare_project,
    question_number,
    scripted_judge,
)
from tests.llama_support import LlamaRelease, sha256_of
from tests.pipeline_support import overbrainer, start, wait_until

COMPARES = f"runs/{RUN_ID}/compares"


def _compare_dir(root: Path) -> Path:
    found = sorted((root / COMPARES).iterdir())
    assert len(found) == 1
    return found[0]


def _judged(requests: list[Recorded]) -> list[Recorded]:
    return [r for r in requests if r.is_completion]


def _ids(path: Path) -> list[str]:
    return [json.loads(x)["id"] for x in path.read_text().splitlines()]


def _files(folder: Path) -> tuple[Path, Path]:
    """The child-vs-parent and the child-vs-base verdict files."""
    base = sorted(folder.glob("verdicts-base-*.jsonl"))
    parent = [p for p in sorted(folder.glob("verdicts-*.jsonl")) if p not in base]
    assert len(base) == 1 and len(parent) == 1, (base, parent)
    assert base[0].name == "verdicts-base-" + parent[0].name.removeprefix("verdicts-")
    return parent[0], base[0]


def _expected(number: int) -> str:
    """The verdict the scripted judge gives question `number` (seed 42)."""
    reply = SCRIPTED[number]
    if "verdict" not in reply:
        return "unparsed"
    if '"tie"' in reply:
        return "tie"
    said_a = '"A"' in reply or '"a"' in reply
    return "win" if said_a == child_first(f"q{number}", 42) else "loss"


async def test_compare_with_the_base_judges_the_child_against_both(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", compare="concurrency = 2")
    base_gguf = add_base_export(root)
    env = compare_env(llama_release, tmp_path / "cache")
    events = tmp_path / "events.jsonl"
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "--events", str(events), "compare", "--base", url=stub.url, env=env, limit=300
        )
        assert result.code == 0, result.stderr
        folder = _compare_dir(root)
        assert result.out_lines == [f"{COMPARES}/{folder.name}/compare.md"]
        assert f"compare: with its base model ({BASE_GGUF})" in result.stderr

        setup = json.loads((folder / "setup.json").read_text())
        assert (setup["base_gguf"], setup["base_gguf_sha256"], setup["base_quantize"]) == (
            BASE_GGUF,
            sha256_of(base_gguf),
            "Q8_0",
        )
        ids = [f"q{n}" for n in range(5)]
        for name in ("child_answers.jsonl", "base_answers.jsonl"):
            answers = [json.loads(x) for x in (folder / name).read_text().splitlines()]
            assert [a["id"] for a in answers] == ids
            assert all("error" not in a and a["output_tokens"] > 0 for a in answers)
        assert "llama" in (folder / "base_server.log").read_text().lower()
        # Another model: the two answer files differ (the seeds of the random weights).
        child_text = [json.loads(x)["answer"] for x in (folder / "child_answers.jsonl").open()]
        base_text = [json.loads(x)["answer"] for x in (folder / "base_answers.jsonl").open()]
        assert child_text != base_text
        # The load figures are the child's alone.
        assert json.loads((folder / "load.json").read_text())["requests"] == 5

        # Each judging asks each question once, q3's garbage twice; the same prompt and order.
        judged = _judged(stub.requests)
        parent_asks = [question_number(r) for r in judged if not is_base_request(r)]
        base_asks = [question_number(r) for r in judged if is_base_request(r)]
        assert sorted(parent_asks) == sorted(base_asks) == [0, 1, 2, 3, 3, 4]
        for request in judged:
            number = question_number(request)
            theirs = base_text[number] if is_base_request(request) else f"Parent answer {number}."
            assert theirs.strip() in (request.prompt or "")
        # The same verdicts from the same replies: the same position rule by question ID.
        parent_file, base_file = _files(folder)
        expected = {f"q{n}": _expected(n) for n in range(5)}
        for path in (parent_file, base_file):
            lines = [json.loads(x) for x in path.read_text().splitlines()]
            assert {x["id"]: x["verdict"] for x in lines} == expected

        done = [json.loads(x) for x in events.read_text().splitlines()]
        judged_events = [(e["done"], e["total"]) for e in done if e["event"] == "judged"]
        assert judged_events == [(n, 10) for n in range(1, 11)]

        report = json.loads((folder / "compare.json").read_text())
        base = report["base"]
        assert (base["gguf"], base["quantize"], base["verdicts_file"]) == (
            BASE_GGUF,
            "Q8_0",
            base_file.name,
        )
        wins = list(expected.values()).count("win")
        ties = list(expected.values()).count("tie")
        losses = list(expected.values()).count("loss")
        summary = base["summary"]
        assert (summary["wins"], summary["ties"], summary["losses"]) == (wins, ties, losses)
        assert summary["unparsed"] == 1 and summary["win_or_tie"] == (wins + ties) / 4
        assert summary["win_or_tie_low"] == report["summary"]["win_or_tie_low"]
        base_seconds = sorted(
            json.loads(x)["seconds"] for x in (folder / "base_answers.jsonl").open()
        )
        assert summary["latency_p50"] == base_seconds[2]
        assert [q["id"] for q in base["questions"]] == ids
        assert all(isinstance(q["base"], str) for q in base["questions"])

        md = (folder / "compare.md").read_text()
        assert f"| Base GGUF | Q8_0, SHA-256 {sha256_of(base_gguf)[:12]} |" in md
        assert "\n## The child against its base\n\n" in md
        low, high = summary["win_or_tie_low"] * 100, summary["win_or_tie_high"] * 100
        assert (
            f"The child won or tied {wins + ties} of 4 against its base; interval "
            f"{low:.1f}% to {high:.1f}% (Wilson, 95%)." in md
        )
        section = md.split("## The child against its base")[1].split("\n## ")[0]
        assert f"| Wins / ties / losses | {wins} / {ties} / {losses} |" in section
        assert "| Unparsed verdicts (not counted) | 1 |" in section
        assert "| Base latency p50 / p95 | " in section
        assert "| Base output tokens per second | " in section
        assert md.index("## Summary") < md.index("## The child against its base")
        assert "- The under-load figures are the child's alone" in md

        # A rejudge by the same judge asks nothing and reports the base figures in --json.
        before = len(_judged(stub.requests))
        again = await overbrainer(
            root, "compare", "--rejudge", folder.name, "--json", url=stub.url, env=env, limit=60
        )
        assert again.code == 0, again.stderr
        assert len(_judged(stub.requests)) == before
        figures = json.loads(again.stdout)["compare"]["base"]
        assert (figures["wins"], figures["ties"], figures["losses"]) == (wins, ties, losses)
        assert figures["win_or_tie"] == summary["win_or_tie"]
        assert figures["verdicts_file"] == f"{COMPARES}/{folder.name}/{base_file.name}"
        assert figures["latency"]["p50_secs"] == summary["latency_p50"]


async def test_a_base_is_refused_without_its_gguf(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=1)
    line = (
        f"error: run {RUN_ID} has no GGUF of its base model: run "
        f"`overbrainer export {RUN_ID} --base` first"
    )
    async with open_stub(scripted_judge) as stub:
        flag = await overbrainer(root, "compare", "--base", url=stub.url)
        keyed = await overbrainer(
            root, "compare", url=stub.url, env={"OVERBRAINER_COMPARE__INCLUDE_BASE": "true"}
        )
        rejudge = await overbrainer(
            root, "compare", "--rejudge", "compare_x", "--base", url=stub.url
        )
        assert _judged(stub.requests) == []
    assert (flag.code, flag.stderr.splitlines()[-1]) == (2, line)
    assert (keyed.code, keyed.stderr.splitlines()[-1]) == (2, line)
    assert rejudge.code == 2 and "--base goes without --rejudge" in rejudge.stderr
    assert not (root / COMPARES).exists()


async def test_no_base_overrides_include_base(tmp_path: Path, llama_release: LlamaRelease) -> None:
    root = make_compare_project(tmp_path / "p", questions=2, compare="include_base = true")
    add_base_export(root)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "compare", "--no-base", url=stub.url,
            env=compare_env(llama_release, tmp_path / "c"), limit=240,
        )  # fmt: skip
        assert result.code == 0, result.stderr
        assert not any(is_base_request(r) for r in _judged(stub.requests))
    folder = _compare_dir(root)
    assert not (folder / "base_answers.jsonl").exists()
    assert json.loads((folder / "compare.json").read_text())["base"] is None
    assert "base" not in (folder / "compare.md").read_text().replace("Base model", "")
    assert "base_gguf" not in json.loads((folder / "setup.json").read_text())


async def test_a_bad_base_gguf_fails_the_compare_with_the_base_server_log(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", questions=1)
    add_base_export(root).write_bytes(b"GGUF" + b"\x00" * 64)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "compare", "--base", url=stub.url,
            env=compare_env(llama_release, tmp_path / "c"), limit=240,
        )  # fmt: skip
        assert _judged(stub.requests) == []
    assert result.code == 1, result.stderr
    folder = _compare_dir(root)
    assert (
        f"error: compare {folder.name} of run {RUN_ID} failed: the base model's llama-server "
        "exited before it was ready:" in result.stderr
    )
    assert result.stderr.rstrip().endswith(
        f"its server log is {COMPARES}/{folder.name}/base_server.log"
    )
    # The child had answered: its answers stay, the compare is recorded failed.
    assert _ids(folder / "child_answers.jsonl") == ["q0"]
    assert json.loads((folder / "run.json").read_text())["state"] == "failed"


@pytest.mark.sigint
async def test_ctrl_c_while_judging_the_base_keeps_both_files_and_rejudge_finishes(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    add_base_export(root)
    env = compare_env(llama_release, tmp_path / "cache")

    def slow_base_after_two(request: Recorded) -> Reply:
        # Against the base, q2 is in flight when Ctrl-C comes and answers within the grace;
        # q3 is never asked.
        number = question_number(request)
        delay = 0.0
        if is_base_request(request) and number >= 2:
            delay = 2.0 if number == 2 else 60.0
        return Reply(SCRIPTED[2], delay=delay)

    async with open_stub(slow_base_after_two) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "compare", "--base", url=stub.url, env=env)

        def two_base_verdicts() -> bool:
            files = list((root / COMPARES).glob("*/verdicts-base-*.jsonl"))
            return bool(files) and len(files[0].read_text().splitlines()) == 2

        def three_base_asks() -> bool:
            return len([r for r in _judged(stub.requests) if is_base_request(r)]) == 3

        await wait_until(two_base_verdicts, limit=240, every=0.1)
        await wait_until(three_base_asks, limit=60)
        os.kill(process.pid, signal.SIGINT)
        with trio.fail_after(30):
            await process.wait()
        first_asks = [(is_base_request(r), question_number(r)) for r in _judged(stub.requests)]
    assert process.returncode == 130
    folder = _compare_dir(root)
    stderr = (root / "stderr.txt").read_text()
    assert stderr.splitlines()[-1] == (
        "interrupted: the verdicts so far are kept; resume with "
        f"`overbrainer compare --rejudge {folder.name}`"
    )
    parent_file, base_file = _files(folder)
    assert _ids(parent_file) == [f"q{n}" for n in range(5)]
    assert _ids(base_file) == ["q0", "q1", "q2"]
    assert not (folder / "compare.md").exists()

    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "compare", "--rejudge", folder.name, url=stub.url, env=env, limit=60
        )
        assert result.code == 0, result.stderr
        again = [(is_base_request(r), question_number(r)) for r in _judged(stub.requests)]
    # Only what the base file lacks: no request repeated, none against the parent.
    assert sorted(again) == [(True, 3), (True, 3), (True, 4)]
    assert not set(again) & {(True, n) for n in range(3)}
    assert len(first_asks) == 5 + 3
    assert _ids(base_file) == [f"q{n}" for n in range(5)]
    assert _ids(parent_file) == [f"q{n}" for n in range(5)]
    assert "## The child against its base" in (folder / "compare.md").read_text()


async def test_the_spend_cap_stops_across_both_judgings(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    add_base_export(root)
    env = compare_env(llama_release, tmp_path / "cache")
    # Each reply costs $0.0007 (50 in, 10 out at $10 / $20 per million); each request first
    # reserves its worst case, about $0.012 (its prompt, the judge's 256 max_tokens). The
    # parent's six requests fit under $0.0175; the base's twelfth cannot.
    cap = "0.0175"
    async with open_stub(scripted_judge) as stub:
        stub.models = JUDGE_PRICES
        result = await overbrainer(
            root, "compare", "--base", "--max-cost", cap, url=stub.url, env=env, limit=300
        )
        assert result.code == 1, result.stderr
        first = [(is_base_request(r), question_number(r)) for r in _judged(stub.requests)]
    folder = _compare_dir(root)
    assert result.stderr.splitlines()[-1].startswith("error: spend cap reached: $")
    assert result.stderr.splitlines()[-1].endswith(
        f"resume with `overbrainer compare --rejudge {folder.name}`"
    )
    parent_file, base_file = _files(folder)
    assert _ids(parent_file) == [f"q{n}" for n in range(5)]
    judged_base = _ids(base_file)
    assert 0 < len(judged_base) < 5
    assert not (folder / "compare.md").exists()
    history = [json.loads(x) for x in (root / ".overbrainer" / "history.jsonl").open()]
    assert history[-1]["status"] == "interrupted" and history[-1]["done"] == 5 + len(judged_base)

    async with open_stub(scripted_judge) as stub:
        stub.models = JUDGE_PRICES
        resumed = await overbrainer(
            root, "compare", "--rejudge", folder.name, "--max-cost", "1", url=stub.url, env=env,
            limit=60,
        )  # fmt: skip
        assert resumed.code == 0, resumed.stderr
        again = [(is_base_request(r), question_number(r)) for r in _judged(stub.requests)]
    # Only the questions the base file lacked, all against the base.
    assert all(base for base, _ in again)
    assert {f"q{n}" for _, n in again} == {f"q{n}" for n in range(5)} - set(judged_base)
    assert len([1 for base, _ in first if not base]) == 6
    assert _ids(base_file)[: len(judged_base)] == judged_base
    assert len(_ids(base_file)) == 5
