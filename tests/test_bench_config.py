"""`[bench]` in overbrainer.toml and `overbrainer bench`'s refusals: one line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_support import make_bench_project
from tests.pipeline_support import overbrainer

NO_PROVIDER = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('model = "hf"', "bench.model: must be one of local-completions, local-chat-completions"),
        ("limit = 0", "bench.limit: must be at least 1"),
        ("num_fewshot = 65", "bench.num_fewshot: must be in [0, 64]"),
        ("max_tokens = 0", "bench.max_tokens: must be at least 1"),
        (
            'include_path = "../elsewhere"',
            "bench.include_path: must be a folder inside the project",
        ),
        ('lm_eval = " "', "bench.lm_eval: must be a command, such as lm_eval"),
    ],
)
async def test_a_bad_bench_key_stops_the_command_with_exit_2(
    tmp_path: Path, line: str, message: str
) -> None:
    root = make_bench_project(tmp_path / "p", "lm_eval", base=False)
    config = root / "overbrainer.toml"
    head, bench, keys = config.read_text().rpartition("[bench]\n")
    key = line.split(" = ")[0]
    kept = [k for k in keys.splitlines() if not k.startswith(f"{key} = ")]
    config.write_text(head + bench + "\n".join([*kept, line]) + "\n")
    done = await overbrainer(root, "bench", url=NO_PROVIDER)
    assert done.code == 2
    assert done.stdout == ""
    assert message in done.stderr
    assert not (root / "runs" / "demo_20261007-092758" / "benches").exists()


async def test_a_bad_task_name_and_a_missing_task_list_are_refused(tmp_path: Path) -> None:
    root = make_bench_project(tmp_path / "p", "lm_eval", base=False)
    config = root / "overbrainer.toml"
    config.write_text(config.read_text().replace('tasks = ["tiny_qa"]', 'tasks = ["a b"]'))
    done = await overbrainer(root, "config", "check", url=NO_PROVIDER)
    assert done.code == 2
    assert "bench.tasks: each must be an lm-eval task name" in done.stderr
    config.write_text(config.read_text().replace('tasks = ["a b"]', "tasks = []"))
    done = await overbrainer(root, "bench", url=NO_PROVIDER)
    assert (done.code, done.stderr.strip().splitlines()[-1]) == (
        2,
        "error: no lm-eval task to run: set `[bench] tasks` in overbrainer.toml or pass --tasks",
    )


async def test_resume_takes_no_other_choice_and_names_an_unknown_bench(tmp_path: Path) -> None:
    root = make_bench_project(tmp_path / "p", "lm_eval", base=False)
    done = await overbrainer(root, "bench", "--resume", "bench_1", "--tasks", "a", url=NO_PROVIDER)
    assert done.code == 2
    assert "error: --run, --tasks and --limit go without --resume" in done.stderr
    done = await overbrainer(root, "bench", "--resume", "bench_20260101-000000", url=NO_PROVIDER)
    assert (done.code, done.stderr.strip()) == (2, "error: no bench bench_20260101-000000 in runs/")


async def test_a_bench_without_a_gguf_says_to_export_then_bench(tmp_path: Path) -> None:
    root = make_bench_project(tmp_path / "p", "lm_eval", base=False)
    for export in (root / "runs" / "demo_20261007-092758").glob("**/export.json"):
        export.unlink()
    done = await overbrainer(root, "bench", url=NO_PROVIDER)
    assert (done.code, done.stderr.strip().splitlines()[-1]) == (
        2,
        "error: no run has a GGUF: export one with `overbrainer export <run-id>`, then bench",
    )
