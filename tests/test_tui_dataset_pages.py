"""The Dataset tree of a big project: the rows the full read gave, read a page at a time."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import trio

from overbrainer.flows.setup import CommandOptions
from overbrainer.project.directory import Project
from overbrainer.storage import Example, Question, Subtopic
from overbrainer.storage import lines as storage_lines
from overbrainer.ui.tui import app, dataset_index, tasks
from overbrainer.ui.tui.dataset_index import PAGE, answer_row, dataset_tree, read_tree
from overbrainer.ui.tui.effects import Spawn
from overbrainer.ui.tui.load import load_rest
from overbrainer.ui.tui.messages import Glimpsed, Loaded, Msg
from overbrainer.ui.tui.snapshot import Snapshot, TreeRow
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from overbrainer.ui.tui.tasks import TaskHandle, run_task
from tests.pipeline_support import make_project, write_answered
from tests.tui_app_support import keys

NAMES = ("subtopics", "questions", "answers")
LOAD = TaskSpec(TaskKind.LOAD)


def files(root: Path) -> dict[str, Path]:
    return {name: root / "data" / f"{name}.jsonl" for name in NAMES}


def full_tree(root: Path) -> list[TreeRow]:
    """The tree as the TUI built it before paging: every record parsed and held."""

    def records(name: str, parse: type[Subtopic] | type[Question] | type[Example]) -> list:  # type: ignore[type-arg]
        out = []
        for line in (root / "data" / f"{name}.jsonl").read_text().splitlines():
            try:
                out.append(parse.from_json(line))
            except Exception:
                continue
        return out

    answers = {a.id: a for a in records("answers", Example)}
    by_subtopic: dict[str, list[Question]] = {}
    for question in records("questions", Question):
        by_subtopic.setdefault(question.subtopic_id, []).append(question)
    topics: dict[str, list[Subtopic]] = {}
    for sub in records("subtopics", Subtopic):
        topics.setdefault(sub.topic, []).append(sub)
    rows = []
    for topic, subs in topics.items():
        rows.append(TreeRow(0, topic, f"{len(subs)} subtopics"))
        for sub in subs:
            asked = by_subtopic.get(sub.id, [])
            rows.append(TreeRow(1, sub.name, f"{len(asked)} questions", "subtopics", sub.id))
            for question in asked:
                rows.append(TreeRow(2, question.text, "", "questions", question.id))
                if question.id in answers:
                    rows.append(answer_row(answers[question.id]))
    return rows


@pytest.mark.parametrize("block", [1 << 22, 97, 4096])
def test_the_paged_tree_shows_the_rows_the_full_read_showed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(storage_lines, "_READ_BLOCK", block)  # lines across blocks, and in one
    write_answered(tmp_path, 300, topics=("ownership", 'say "async"'))
    data = tmp_path / "data"
    answers = data / "answers.jsonl"
    lines = answers.read_text().splitlines(keepends=True)
    # An unanswered question, a blank line, and a torn last line: none breaks the tree.
    answers.write_text("".join(lines[:7] + lines[8:150] + ["\n"] + lines[150:]) + '{"id":"to')
    expected = full_tree(tmp_path)
    tree = read_tree(files(tmp_path))
    assert len(tree) == len(expected) == 2 + 20 + 300 + 299
    assert list(tree) == expected
    assert tree[-1] == expected[-1]
    assert list(tree[5:9]) == expected[5:9]


def test_the_paged_tree_of_a_missing_dataset_is_empty(tmp_path: Path) -> None:
    assert len(read_tree(files(tmp_path))) == 0


def test_scrolling_reads_only_the_page_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_answered(tmp_path, 1000)
    parsed: list[str] = []

    class Counted:
        def __init__(self, kind: type[Question] | type[Example]) -> None:
            self.kind = kind

        def from_json(self, line: str) -> object:
            parsed.append(line)
            return self.kind.from_json(line)

    tree = read_tree(files(tmp_path))
    assert len(tree) == 1 + 10 + 2000
    monkeypatch.setattr(dataset_index, "Question", Counted(Question))
    monkeypatch.setattr(dataset_index, "Example", Counted(Example))
    assert tree[1000].depth in (2, 3)
    read = len(parsed)
    assert PAGE - 2 <= read <= PAGE  # the page holding row 1000 (a subtopic's row is held)
    assert tree[1001].depth in (2, 3)
    assert len(parsed) == read  # the same page, kept
    for at in range(0, len(tree), PAGE):
        tree[at]
    assert len(tree._pages) <= 8  # a few pages kept, never the whole tree


def test_a_replaced_file_is_not_read_at_its_old_offsets(tmp_path: Path) -> None:
    write_answered(tmp_path, 200)
    tree = read_tree(files(tmp_path))
    shown = tree[2]
    assert shown.file == "questions"
    questions = tmp_path / "data" / "questions.jsonl"
    lines = questions.read_text().splitlines(keepends=True)
    # Each line goes where another of its length was: every old offset begins another question.
    moved = list(lines)
    places: dict[int, list[int]] = {}
    for at, line in enumerate(lines):
        places.setdefault(len(line), []).append(at)
    for same in places.values():
        for source, target in zip(same, same[1:] + same[:1], strict=True):
            moved[target] = lines[source]
    replaced = questions.with_suffix(".new")
    replaced.write_text("".join(moved))
    replaced.replace(questions)  # as an edit or a delete rewrites it
    assert tree[2] == shown  # a page already read is kept until the tree is read again
    far = next(at for at in range(PAGE * 2, len(tree)) if tree[at].depth == 2)
    assert tree[far].text == "(changed on disk)"
    renamed = tree.renaming("questions", shown.id, "new-id")
    assert renamed[2] == attrs.evolve(shown, id="new-id")  # the edit, as the view shows it


def test_the_first_screen_shows_the_counts_before_the_dataset_tree_is_read() -> None:
    tree = (TreeRow(0, "rust"), TreeRow(2, "first?", "", "questions", "q1"))
    state, effects = app.start(State(view=View.DATASET))
    [spawn] = effects
    assert isinstance(spawn, Spawn)
    glimpse = Snapshot(name="big", counts=(("answers", 1_000_000),), history=("done",))
    state, effects = app.update(state, Glimpsed(spawn.task, glimpse))
    assert effects == []
    assert (state.snapshot.count("answers"), state.snapshot.name) == (1_000_000, "big")
    assert state.snapshot.tree == ()  # no tree yet: the first screen does not wait for it
    assert [t.spec.kind for t in state.tasks] == [TaskKind.LOAD]  # still reading it
    state, _ = app.update(state, Loaded(spawn.task, attrs.evolve(glimpse, tree=tree)))
    assert (state.snapshot.tree, state.tasks) == (tree, ())
    state, [spawn] = keys(state, "ctrl r")
    assert isinstance(spawn, Spawn)
    state, _ = app.update(state, Glimpsed(spawn.task, glimpse))
    assert state.snapshot.tree == tree  # the old tree stays until the new one is read


def test_a_read_with_the_data_files_unchanged_reuses_the_tree(tmp_path: Path) -> None:
    write_answered(tmp_path, 50)
    tree = dataset_tree(files(tmp_path))
    assert dataset_tree(files(tmp_path)) is tree  # nothing read again
    with (tmp_path / "data" / "answers.jsonl").open("a") as answers:
        answers.write("\n")
    assert dataset_tree(files(tmp_path)) is not tree  # a file changed: read again


async def test_a_load_posts_the_first_screen_before_it_reads_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 40)
    posted: list[Msg] = []
    posted_before_tree: list[Msg] = []

    def rest(project: Project, glimpse: Snapshot) -> Snapshot:
        posted_before_tree.extend(posted)
        return load_rest(project, glimpse)

    monkeypatch.setattr(tasks, "load_rest", rest)
    with trio.fail_after(30):
        await run_task(
            1, TaskSpec(TaskKind.LOAD), CommandOptions(root), TaskHandle(), posted.append
        )
    [glimpse] = posted_before_tree
    assert isinstance(glimpse, Glimpsed)
    assert glimpse.snapshot.count("answers") == 40
    assert len(glimpse.snapshot.tree) == 0
    loaded = next(m for m in posted if isinstance(m, Loaded))
    assert len(loaded.snapshot.tree) == 1 + 10 + 80
