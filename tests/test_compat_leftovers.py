"""Compatibility leftovers, through the real command: what the reference says, we say."""

from __future__ import annotations

import os
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import Subtopic
from tests.pipeline_support import make_project, overbrainer, read_examples, write_questions


async def test_a_dotenv_value_with_a_space_is_a_syntax_error_naming_its_line(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    (root / ".env").write_text("# keys\nA=1\nK=two words\n")
    result = await overbrainer(root, "config", "check", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    assert result.stdout == ""
    assert result.stderr == "error: cannot parse .env (syntax error at line 3)\n"


async def test_a_record_separator_is_an_answer_not_blank_space(tmp_path: Path) -> None:
    # Rust trims Unicode White_Space only: U+001E is content, so the answer is not `empty`.
    root = make_project(tmp_path / "p")
    write_questions(root, 1)

    def separator(_request: Recorded) -> Reply:
        return Reply(content="\x1e", reasoning="The user asks. Let me think.", usage=(10, 5))

    async with open_stub(separator) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
    assert result.code == 0, result.stderr
    [example] = read_examples(root)
    assert example.meta.excluded is None
    assert example.messages[-1].content == "\x1e"


async def test_list_items_keep_a_trailing_record_separator(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")

    def names(_request: Recorded) -> Reply:
        return Reply(content='["Moves\\u001e", " Traits\\u001f "]', usage=(10, 5))

    async with open_stub(names) as stub:
        result = await overbrainer(root, "subtopics", "--topic", "ownership", url=stub.url)
    assert result.code == 0, result.stderr
    stored = read_records(root / "data" / "subtopics.jsonl", Subtopic.from_json)
    assert [s.name for s in stored] == ["Moves\x1e", "Traits\x1f"]


async def test_a_hard_linked_lock_file_is_refused_in_the_references_words(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    lock = root / ".overbrainer" / "lock"
    lock.write_text("")
    os.link(lock, tmp_path / "second-name")
    result = await overbrainer(root, "split", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    assert result.stderr == f"error: refusing to use {lock}: it is a symbolic link\n"


async def test_split_help_says_what_orphaned_answers_are(tmp_path: Path) -> None:
    result = await overbrainer(tmp_path, "split", "--help", url="http://127.0.0.1:9/v1")
    assert result.code == 0
    text = " ".join(result.stdout.split())
    assert "are orphaned answers: they stay in data/answers.jsonl" in text
    assert "counted as orphaned" in text


async def test_a_mistyped_command_gets_a_suggestion(tmp_path: Path) -> None:
    result = await overbrainer(tmp_path, "splt", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    assert result.stderr == (
        "error: No such command 'splt'. Did you mean 'split'?; see `overbrainer --help`\n"
    )


async def test_a_mistyped_config_key_gets_a_suggestion(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", pipeline="dedup_treshold = 0.5")
    env = {"OVERBRAINER_PIPELINE__CONCURENCY": "3"}
    result = await overbrainer(root, "config", "check", url="http://127.0.0.1:9/v1", env=env)
    assert result.code == 2
    assert result.stderr == (
        "error: invalid configuration:\n"
        "  unknown field `pipeline.concurency` (from OVERBRAINER_PIPELINE__CONCURENCY), "
        "did you mean `pipeline.concurrency`?\n"
        "  unknown field `pipeline.dedup_treshold`, did you mean `pipeline.dedup_threshold`?\n"
    )


async def test_an_unknown_variant_lists_the_allowed_values(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    config.write_text(config.read_text().replace('protocol = "openai"', 'protocol = "openia"'))
    result = await overbrainer(root, "config", "check", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    assert result.stderr == (
        "error: invalid configuration: `providers.stub.protocol`: unknown variant, "
        "expected one of `openai`, `anthropic`, `stub`\n"
    )
