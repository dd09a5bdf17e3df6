"""The dataset pipeline against the real LiteLLM proxy (`litellm[proxy]` from PyPI).

Its models answer with `mock_response`, so no upstream is called; everything between
overbrainer and the answer is LiteLLM's: its auth, routing, `rpm` limits, headers and response
shapes. The proxy runs from its own cached venv (`.ci/litellm-venv.sh`); `.ci/run` runs these
tests (`pytest -m realserver`), and where the venv cannot be made CI fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.litellm_support import LiteLLMProxy, MockModel, provider_env, start_proxy
from tests.pipeline_support import write_questions
from tests.realserver_project import Roles, init_project, overbrainer

pytestmark = pytest.mark.realserver

PRESET = PROVIDER = "litellm"
"""`init --provider litellm` names its provider `litellm`."""
QUESTIONS = [
    "How does moving a String into a function change who owns it?",
    "Why can a value have many shared borrows but only one mutable borrow?",
    "What happens when a struct holding a reference outlives the value it points to?",
    "Compare Rc<T> and Box<T> for sharing data between owners.",
    "How would you debug a 'borrowed value does not live long enough' error?",
    "What if a closure captures a variable by move and the variable is used afterwards?",
]
ANSWER = (
    "Ownership moves with the value: after the move the old binding is unusable, and the "
    "compiler rejects any later use of it."
)
JUDGE = '{"score": 8, "reason": "Correct and complete."}'
MODELS = [
    MockModel("gen-model", json.dumps(QUESTIONS)),
    MockModel("parent-model", ANSWER),
    MockModel("judge-model", JUDGE),
    MockModel("parent-rpm30", ANSWER, rpm=30),
]


@pytest.fixture(scope="module")
def proxy(
    litellm_venv_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiteLLMProxy]:
    """One proxy for the module; only the rate-limit test uses its `rpm` model."""
    yield from start_proxy(litellm_venv_path, tmp_path_factory.mktemp("litellm"), MODELS)


def test_run_no_train_makes_a_dataset_through_the_proxy(
    proxy: LiteLLMProxy, tmp_path: Path
) -> None:
    roles = Roles(generator="gen-model", parent="parent-model", judge="judge-model")
    root = init_project(tmp_path / "p", PRESET, roles, subtopics=2, questions=3)
    run = overbrainer(root, "run", "--no-train", env=provider_env(proxy, PROVIDER), limit=180)
    assert run.code == 0, run.stderr
    # The mock generator answers every list with the same six questions: the first subtopic
    # keeps three, the second finds nothing new and stops short, said so.
    assert run.out_lines == [
        "subtopics: 1 done, 0 skipped, 0 failed, 0 excluded; tokens 10 in, 20 out; cost unknown",
        "questions: 2 done, 0 skipped, 0 failed, 0 excluded; tokens 60 in, 120 out; cost unknown",
        "answers: 3 done, 0 skipped, 0 failed, 0 excluded; tokens 30 in, 60 out; cost unknown",
        "quality: 3 done, 0 skipped, 0 failed, 0 excluded; tokens 30 in, 60 out; cost unknown",
        "split: 2 train, 1 eval, 0 excluded, 0 orphaned",
    ]
    assert "stopped at 0 of 3 questions, the generator kept repeating itself" in run.stderr
    assert len((root / "data" / "quality.jsonl").read_text().splitlines()) == 3
    assert len((root / "data" / "train.jsonl").read_text().splitlines()) == 2


def test_a_reasoning_parent_that_returns_no_reasoning_stops_with_the_fix(
    proxy: LiteLLMProxy, tmp_path: Path
) -> None:
    # `reasoning = true` is what `init` writes; LiteLLM's mock returns no reasoning. Six
    # questions: enough answers for the stop to judge on (before issue 38 all six were paid
    # for, then excluded `no_raw_reasoning`, and the run ended `split: 0 train` with exit 0).
    roles = Roles(generator="gen-model", parent="parent-model", reasoning=True)
    root = init_project(tmp_path / "p", PRESET, roles, subtopics=1, questions=6)
    run = overbrainer(root, "run", "--no-train", env=provider_env(proxy, PROVIDER), limit=180)
    assert run.code == 2, (run.stdout, run.stderr)
    # The six answers go out together (concurrency 8): those in flight at the stop count too.
    assert re.fullmatch(
        r"answers: 0 done, 0 skipped, 0 failed, [56] excluded; .*", run.out_lines[-1]
    )
    stop = (
        "error: answers stopped: the parent model `parent-model` returned no reasoning in 5 of "
        "its first 5 answers, though `[roles.parent] reasoning = true`: set `reasoning = false`"
    )
    assert stop in run.stderr


def test_60_answers_under_rpm_30_finish_with_the_wait_announced(
    proxy: LiteLLMProxy, tmp_path: Path
) -> None:
    roles = Roles(generator="gen-model", parent="parent-rpm30")
    root = init_project(tmp_path / "p", PRESET, roles, subtopics=1, questions=1)
    write_questions(root, 60)
    run = overbrainer(root, "answers", env=provider_env(proxy, PROVIDER), limit=240)
    assert run.code == 0, run.stderr
    assert run.out_lines[0].startswith("answers: 60 done, 0 skipped, 0 failed, 0 excluded")
    wait = (
        r"INFO litellm/parent-rpm30: waiting for the provider's rate limit: "
        r"-?\d+ of 30 requests left, resuming in \d+ s"
    )
    assert re.search(wait, run.stderr), run.stderr


def test_config_check_online_accepts_the_proxy_and_its_key(
    proxy: LiteLLMProxy, tmp_path: Path
) -> None:
    roles = Roles(generator="gen-model", parent="parent-model")
    root = init_project(tmp_path / "p", PRESET, roles, subtopics=1, questions=1)
    run = overbrainer(
        root, "config", "check", "--online", env=provider_env(proxy, PROVIDER), limit=60
    )
    assert run.code == 0, run.stderr
    for role, model in (("generator", "gen-model"), ("parent", "parent-model")):
        said = f"roles.{role} (litellm, {model}): reachable, key accepted, model listed"
        assert [line for line in run.out_lines if line.startswith(said)] != [], run.stdout


def test_config_check_online_refuses_a_wrong_key(proxy: LiteLLMProxy, tmp_path: Path) -> None:
    # LiteLLM answers `/models` with a wrong key by `400 No connected db.` (before issue 38 the
    # check passed: `no model list (HTTP 400): key and model not checked`, exit 0).
    roles = Roles(generator="gen-model", parent="parent-model")
    root = init_project(tmp_path / "p", PRESET, roles, subtopics=1, questions=1)
    env = {**provider_env(proxy, PROVIDER), "OVERBRAINER_PROVIDERS__LITELLM__API_KEY": "sk-wrong"}
    run = overbrainer(root, "config", "check", "--online", env=env, limit=60)
    assert run.code == 2, (run.stdout, run.stderr)
    assert run.out_lines[-2:] == [
        "roles.generator (litellm, gen-model): reachable, key refused (HTTP 400)",
        "roles.parent (litellm, parent-model): reachable, key refused (HTTP 400)",
    ]
    assert run.stderr.endswith("error: roles.generator and roles.parent cannot work (see above)\n")
    assert "sk-wrong" not in run.stdout + run.stderr


def test_a_wrong_key_stops_the_stage_at_its_first_request(
    proxy: LiteLLMProxy, tmp_path: Path
) -> None:
    # The proxy's `400 No connected db.` refuses the key: the stage stops at once instead of
    # asking again without structured output and going on item after item.
    roles = Roles(generator="gen-model", parent="parent-model")
    root = init_project(tmp_path / "p", PRESET, roles, subtopics=1, questions=1)
    env = {**provider_env(proxy, PROVIDER), "OVERBRAINER_PROVIDERS__LITELLM__API_KEY": "sk-wrong"}
    run = overbrainer(root, "subtopics", env=env, limit=60)
    assert run.code == 1, (run.stdout, run.stderr)
    assert "retrying without structured output" not in run.stderr
    assert run.stderr.splitlines()[-1] == "error: subtopics stopped: HTTP 400: No connected db."
    assert "sk-wrong" not in run.stdout + run.stderr
