"""`overbrainer import questions` end to end: real files, the real command in a subprocess."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Question, RejectedQuestion, Subtopic
from tests.pipeline_support import (
    PRICES,
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)

NO_PROVIDER = "http://127.0.0.1:9"
"""The import asks no provider: a URL that nothing answers."""

IMPORTED_ID = subtopic_id("ownership", "Imported")


def stored(root: Path, name: str) -> list[str]:
    path = root / "data" / f"{name}.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def questions_of(root: Path) -> list[Question]:
    return [Question.from_json(line) for line in stored(root, "questions")]


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


async def test_jsonl_import_adds_questions_under_an_imported_subtopic(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    file = write_jsonl(
        tmp_path / "mine.jsonl",
        [
            {"question": "How does a borrow end?"},
            {"prompt": "What does a move leave behind?"},
            {
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Why is a Box moved, not copied?"},
                ]
            },
            {"question": "  how does a BORROW end  "},
        ],
    )
    done = await overbrainer(
        root, "import", "questions", str(file), "--topic", "ownership", url=NO_PROVIDER
    )
    assert done.code == 0, done.stderr
    assert done.out_lines == ["import: 3 added, 1 duplicates, 0 rejected; topic ownership"]
    assert stored(root, "subtopics") == [Subtopic(IMPORTED_ID, "ownership", "Imported").to_json()]
    assert stored(root, "imported") == stored(root, "subtopics")
    texts = [
        "How does a borrow end?",
        "What does a move leave behind?",
        "Why is a Box moved, not copied?",
    ]
    assert questions_of(root) == [
        Question(question_id(IMPORTED_ID, t), "ownership", IMPORTED_ID, "Imported", t)
        for t in texts
    ]
    again = await overbrainer(
        root, "import", "questions", str(file), "--topic", "ownership", url=NO_PROVIDER
    )
    assert again.code == 0, again.stderr
    assert again.out_lines == ["import: 0 added, 4 duplicates, 0 rejected; topic ownership"]
    assert len(stored(root, "questions")) == 3
    assert len(stored(root, "subtopics")) == 1


async def test_csv_import_takes_topic_and_subtopic_columns(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)  # ownership/Basics: "Question 0 about ownership?", ...
    rejected = RejectedQuestion("q", "ownership", "s", "A question the user deleted?")
    (root / "data" / "rejected.jsonl").write_text(rejected.to_json() + "\n")
    file = tmp_path / "mine.csv"
    file.write_text(
        "question,topic,subtopic\n"
        "Question 0 about ownership?,ownership,\n"
        '"What is a Waker, and who calls it?",async,Wakers\n'
        "A question the user deleted?,ownership,Basics\n"
        "What is a lifetime?,ownership,Basics\n",
        encoding="utf-8",
    )
    done = await overbrainer(root, "import", "questions", str(file), url=NO_PROVIDER)
    assert done.code == 0, done.stderr
    assert done.out_lines == ["import: 2 added, 1 duplicates, 1 rejected; topics ownership, async"]
    basics, wakers = subtopic_id("ownership", "Basics"), subtopic_id("async", "Wakers")
    new = questions_of(root)[2:]
    assert [(q.topic, q.subtopic_id, q.subtopic, q.text) for q in new] == [
        ("async", wakers, "Wakers", "What is a Waker, and who calls it?"),
        ("ownership", basics, "Basics", "What is a lifetime?"),
    ]
    # Basics was stored already: only Wakers is a new (imported) subtopic.
    assert stored(root, "imported") == [Subtopic(wakers, "async", "Wakers").to_json()]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("a.jsonl", '{"question":"Fine?"}\n{"question": \n', "a.jsonl:2: not JSON: "),
        ("a.jsonl", '{"question":"Fine?"}\n{"question":"  "}\n', "a.jsonl:2: empty question"),
        ("a.jsonl", '{"text":"Where?"}\n', "a.jsonl:1: no `question`, `prompt` or `messages`"),
        ("a.csv", "prompt\nWhat?\n", "a.csv:1: no `question` column in the header row"),
        ("a.csv", "question,topic\nWhat?,ownership\nWhen?,\n", "a.csv:3: no topic: give"),
        ("a.csv", "question,topic\nWhat?,rust\n", "a.csv:2: unknown topic `rust`"),
        ("missing.jsonl", None, "cannot read "),
    ],
)
async def test_bad_input_exits_2_naming_file_and_line_and_writes_nothing(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 1)
    before = {p.name: p.read_bytes() for p in (root / "data").iterdir()}
    file = tmp_path / name
    if content is not None:
        file.write_text(content, encoding="utf-8")
    done = await overbrainer(root, "import", "questions", str(file), url=NO_PROVIDER)
    assert done.code == 2
    assert done.stdout == ""
    error = done.stderr.strip()
    assert error.startswith(f"error: {tmp_path / message}" if content else f"error: {message}")
    assert "\n" not in error
    assert {p.name: p.read_bytes() for p in (root / "data").iterdir()} == before


async def test_unknown_topic_option_exits_2(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    file = write_jsonl(tmp_path / "q.jsonl", [{"question": "What?"}])
    done = await overbrainer(
        root, "import", "questions", str(file), "--topic", "rust", url=NO_PROVIDER
    )
    assert (done.code, done.stderr) == (2, "error: unknown topic `rust`\n")
    assert not (root / "data").exists() or stored(root, "questions") == []


async def test_stages_leave_imported_questions_be_and_answers_answers_them(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    file = write_jsonl(
        tmp_path / "q.jsonl",
        [{"question": "How does a borrow end?"}, {"question": "What is a lifetime?"}],
    )
    done = await overbrainer(
        root, "import", "questions", str(file), "--topic", "ownership", url=NO_PROVIDER
    )
    assert done.code == 0, done.stderr
    imported = {q.id for q in questions_of(root)}
    async with open_stub() as stub:
        stub.models = PRICES
        # The imported subtopic does not count toward `subtopics = 2`, so `questions` asks
        # for two subtopics first, and fills only those: the generator never adds to it.
        asked = await overbrainer(root, "questions", "--topic", "ownership", url=stub.url)
        assert asked.code == 0, asked.stderr
        subtopics = [Subtopic.from_json(line) for line in stored(root, "subtopics")]
        assert len(subtopics) == 3
        by_subtopic = Counter(q.subtopic_id for q in questions_of(root))
        assert by_subtopic[IMPORTED_ID] == 2
        assert sorted(by_subtopic.values()) == [2, 2, 2]
        # A force of questions replaces the generated subtopics' questions, not the imported.
        requests = len(stub.requests)
        reasked = await overbrainer(
            root, "questions", "--topic", "ownership", "--force", url=stub.url
        )
        assert reasked.code == 0, reasked.stderr
        assert len(stub.requests) > requests
        assert imported <= {q.id for q in questions_of(root)}
        assert Counter(q.subtopic_id for q in questions_of(root))[IMPORTED_ID] == 2
        # A force replaces the generated subtopics and keeps the imported one and its questions.
        forced = await overbrainer(
            root, "subtopics", "--topic", "ownership", "--force", url=stub.url
        )
        assert forced.code == 0, forced.stderr
        assert IMPORTED_ID in {Subtopic.from_json(line).id for line in stored(root, "subtopics")}
        assert imported <= {q.id for q in questions_of(root)}
        answered = await overbrainer(root, "answers", "--topic", "ownership", url=stub.url)
        assert answered.code == 0, answered.stderr
        assert imported <= {e.id for e in read_examples(root)}
        answer_prompts = {r.prompt for r in stub.completions}
        assert {"How does a borrow end?", "What is a lifetime?"} <= answer_prompts


async def test_json_gives_the_counts_and_a_refusal_is_a_document(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    file = write_jsonl(
        tmp_path / "mine.jsonl",
        [{"question": "How does a borrow end?"}, {"question": "how does a BORROW end"}],
    )
    args = ("import", "questions", str(file), "--topic", "ownership", "--json")
    done = await overbrainer(root, *args, url=NO_PROVIDER)
    assert done.code == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["command"], document["exit_code"], document["error"]) == (
        "import questions",
        0,
        None,
    )
    assert document["import"] == {
        "added": 1,
        "duplicates": 1,
        "rejected": 0,
        "topics": ["ownership"],
    }
    assert "import: 1 added, 1 duplicates, 0 rejected; topic ownership" in done.stderr
    missing = await overbrainer(
        root, "import", "questions", str(tmp_path / "none.jsonl"), "--json", url=NO_PROVIDER
    )
    assert missing.code == 2
    refused = json.loads(missing.stdout)
    assert refused["import"] is None
    assert "none.jsonl" in refused["error"]
