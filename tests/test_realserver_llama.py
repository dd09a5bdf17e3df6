"""The dataset pipeline against the real `llama-server` serving a tiny random Llama.

The model (tests/gguf_support.py, written by hand, no torch) answers gibberish, greedily (the
same gibberish every run): no list parses, every answer runs into its small token limit, no
score is given. Each stage must end cleanly with counts that say so, within a bound; never hang
or crash. llama-server is the one `.ci/llama-cpp-tools.sh` builds (the `llama_tools` fixture;
CI fails where it cannot be built).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llama_server_support import LlamaServer, serve_tiny_model
from tests.llama_support import LlamaTools
from tests.pipeline_support import write_answered, write_questions
from tests.realserver_project import Roles, init_project, overbrainer

pytestmark = pytest.mark.realserver

PRESET = "llama.cpp"
PROVIDER = "llama_cpp"
"""What `init --provider llama.cpp` names its provider."""
MAX_TOKENS = 24
"""Small answers: quick on 2 cores, and every one is cut by the limit."""
ROLES = Roles(generator="tiny", parent="tiny", judge="tiny", max_tokens=MAX_TOKENS)
LIMIT = 120.0
"""Seconds a command may take (each took under 2 s on 2 cores)."""
TOKENS = r"tokens \d+ in, \d+ out; cost unknown"


@pytest.fixture(scope="module")
def server(
    llama_tools: LlamaTools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """llama-server on the tiny model, for the module."""
    yield from serve_tiny_model(llama_tools, tmp_path_factory.mktemp("llama-server"))


def llama_env(server: LlamaServer) -> dict[str, str]:
    """The provider pointed at the server, with no key (a local server needs none)."""
    return {f"OVERBRAINER_PROVIDERS__{PROVIDER.upper()}__BASE_URL": server.base_url}


def test_run_stops_at_subtopics_when_no_list_parses(server: LlamaServer, tmp_path: Path) -> None:
    root = init_project(tmp_path / "p", PRESET, ROLES, subtopics=2, questions=2)
    run = overbrainer(root, "run", "--no-train", env=llama_env(server), limit=LIMIT)
    assert run.code == 1, (run.stdout, run.stderr)
    [line] = run.out_lines
    assert re.fullmatch(f"subtopics: 0 done, 0 skipped, 1 failed, 0 excluded; {TOKENS}", line)
    assert "ownership failed: invalid response: no list of strings after all retries" in run.stderr
    assert run.stderr.endswith(
        "error: 1 subtopics item(s) failed; run the command again to retry them\n"
    )


def given_questions(tmp_path: Path) -> Path:
    """A project whose eight questions are there already (as `overbrainer import` leaves them)."""
    root = init_project(tmp_path / "p", PRESET, ROLES, subtopics=1, questions=2)
    write_questions(root, 8)
    return root


def test_gibberish_answers_are_excluded_and_an_empty_split_fails_the_run(
    server: LlamaServer, tmp_path: Path
) -> None:
    root = given_questions(tmp_path)
    run = overbrainer(root, "run", "--no-train", env=llama_env(server), limit=LIMIT)
    assert run.code == 1, (run.stdout, run.stderr)
    expected = [
        f"subtopics: 0 done, 1 skipped, 0 failed, 0 excluded; {TOKENS}",
        f"questions: 0 done, 1 skipped, 0 failed, 0 excluded; {TOKENS}",
        f"answers: 0 done, 0 skipped, 0 failed, 8 excluded; {TOKENS}",
        f"quality: 0 done, 0 skipped, 0 failed, 0 excluded; {TOKENS}",
        "split: 0 train, 0 eval, 8 excluded \\(truncated 8\\), 0 orphaned",
    ]
    assert len(run.out_lines) == len(expected), (run.stdout, run.stderr)
    for pattern, line in zip(expected, run.out_lines, strict=True):
        assert re.fullmatch(pattern, line), (pattern, line)
    assert run.stderr.endswith(
        "error: split: 0 train examples: all 8 answers were excluded (truncated 8)\n"
    )
    assert (root / "data" / "train.jsonl").read_text() == ""


def test_a_judge_that_gives_no_score_fails_each_item_after_two_asks(
    server: LlamaServer, tmp_path: Path
) -> None:
    root = init_project(tmp_path / "p", PRESET, ROLES, subtopics=1, questions=2)
    write_answered(root, 3)  # the first is excluded (truncated): two to judge
    run = overbrainer(root, "quality", env=llama_env(server), limit=LIMIT)
    assert run.code == 1, (run.stdout, run.stderr)
    [line] = run.out_lines
    assert re.fullmatch(f"quality: 0 done, 0 skipped, 2 failed, 0 excluded; {TOKENS}", line)
    assert run.stderr.count("the judge's reply has no score; asking again") == 2
    assert run.stderr.count("failed: no score from 1 to 10 in the judge's reply (2 asks)") == 2
    assert run.stderr.endswith(
        "error: 2 quality item(s) failed; run the command again to retry them\n"
    )
