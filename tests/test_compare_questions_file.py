"""`overbrainer compare --questions FILE`: a user's held-out set instead of data/eval.jsonl,
asked of the real llama-server and judged by the stand-in provider."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.storage.ids import question_id, subtopic_id
from tests.compare_support import RUN_ID, compare_env, make_compare_project, scripted_judge
from tests.llama_support import LlamaRelease
from tests.pipeline_support import overbrainer

NO_PROVIDER = "http://127.0.0.1:9"


def held_out(path: Path) -> Path:
    """Three questions with the parent's answers, one of them with reasoning to strip."""
    path.write_text(
        "question,answer\n"
        "Question number 0: what is a borrow?,A borrow lends a value.\n"
        "Question number 1: what is a move?,<think>hm</think>A move hands it over.\n"
        '"Question number 2: why, then, lifetimes?",They bound a borrow.\n',
        encoding="utf-8",
    )
    return path


async def test_compare_on_a_csv_file_records_the_file_and_rejudges(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p")
    file = held_out(tmp_path / "held-out.csv")
    cache = tmp_path / "cache"
    env = compare_env(llama_release, cache)
    async with open_stub(scripted_judge) as stub:
        done = await overbrainer(
            root, "compare", "--questions", str(file), url=stub.url, env=env, limit=240
        )
        assert done.code == 0, done.stderr
        folder = root / done.out_lines[0].rsplit("/", 1)[0]
        setup = json.loads((folder / "setup.json").read_text())
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        # Named from the project root when inside it, else absolute: the file is outside.
        assert (setup["questions_file"], setup["questions_sha256"]) == (str(file), digest)
        imported = subtopic_id("", "Imported")
        texts = [
            "Question number 0: what is a borrow?",
            "Question number 1: what is a move?",
            "Question number 2: why, then, lifetimes?",
        ]
        assert [q["id"] for q in setup["questions"]] == [question_id(imported, t) for t in texts]
        assert [q["parent"] for q in setup["questions"]] == [
            "A borrow lends a value.",
            "A move hands it over.",
            "They bound a borrow.",
        ]
        answers = (folder / "child_answers.jsonl").read_text().splitlines()
        assert len(answers) == 3
        report = json.loads((folder / "compare.json").read_text())
        assert report["questions_file"] == {"path": str(file), "sha256": digest}
        assert report["summary"]["questions"] == 3
        assert report["costs"]["parent_per_1k"] is None
        md = (folder / "compare.md").read_text()
        assert f"| Questions | 3, from `{file}` (SHA-256 {digest[:12]}) |" in md
        # The judge saw the file's answers as the parent's.
        judged = " ".join(r.prompt or "" for r in stub.requests if r.is_completion)
        assert "A move hands it over." in judged and "<think>" not in judged

        again = await overbrainer(
            root, "compare", "--rejudge", folder.name, url=stub.url, env=env, limit=60
        )
        assert again.code == 0, again.stderr
        assert json.loads((folder / "compare.json").read_text())["questions_file"] == {
            "path": str(file),
            "sha256": digest,
        }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"question":"What is a borrow?","answer":"A loan."}\n{"question":"What is a move?"}\n',
            "q.jsonl:2: no `answer`: compare --questions needs the parent's reference answer",
        ),
        ('{"question":"What is a borrow?","answer":"A loan."}\n{"question": \n', "q.jsonl:2: "),
        (
            '{"question":"Same?","answer":"A."}\n{"question":" SAME? ","answer":"B."}\n',
            "q.jsonl:2: the same question as line 1",
        ),
    ],
)
async def test_a_bad_questions_file_is_refused_before_anything_runs(
    tmp_path: Path, content: str, message: str
) -> None:
    root = make_compare_project(tmp_path / "p")
    file = tmp_path / "q.jsonl"
    file.write_text(content, encoding="utf-8")
    done = await overbrainer(root, "compare", "--questions", str(file), url=NO_PROVIDER)
    assert done.code == 2
    assert done.stderr.startswith(f"error: {tmp_path / message}")
    assert done.stderr.count("\n") == 1
    assert not (root / "runs" / RUN_ID / "compares").exists()
