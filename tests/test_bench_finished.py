"""`bench --resume` of a finished bench writes its report again from the kept results files,
without a job: bench.json, bench.md and `--json` from lm-eval's results of child and base."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from overbrainer.compare.bench_job import benches_of
from overbrainer.compare.bench_setup import BenchModel, BenchSetup
from overbrainer.training import RunState
from tests.bench_support import BENCHES, make_bench_project
from tests.compare_support import RUN_ID
from tests.pipeline_support import overbrainer

NO_PROVIDER = "http://127.0.0.1:9"


def _results(value: float, stderr: float) -> str:
    """lm-eval's results document of `tiny_qa` (trimmed)."""
    task = {"alias": "tiny_qa", "exact_match,none": value, "exact_match_stderr,none": stderr}
    return json.dumps(
        {"results": {"tiny_qa": task}, "higher_is_better": {"tiny_qa": {"exact_match": True}}}
    )


def _finished_bench(root: Path, child: str, base: str) -> str:
    benches = benches_of(root / "runs" / RUN_ID)
    record = benches.create("bench", "local", lambda bench_id: f"/r/benches/{bench_id}")
    benches.save(attrs.evolve(record, state=RunState.SUCCEEDED))
    folder = benches.dir_of(record.id)
    models = (
        BenchModel("child", "output/gguf/tiny-Q8_0.gguf", "0" * 64, "Q8_0"),
        BenchModel("base", "output/gguf/base-Q8_0.gguf", "1" * 64, "Q8_0"),
    )
    setup = BenchSetup(
        RUN_ID, record.id, "b0test", record.created, models, ("tiny_qa",), None, None,
        "lm_eval", "local-completions", 8, True, 256,
    )  # fmt: skip
    (folder / "setup.json").write_text(setup.to_json())
    for model, text in (("child", child), ("base", base)):
        (folder / "results" / model).mkdir(parents=True)
        (folder / "results" / model / "tiny_qa.json").write_text(text)
    return record.id


async def test_a_finished_bench_reports_a_regression_beyond_the_error(tmp_path: Path) -> None:
    root = make_bench_project(tmp_path / "p", "lm_eval")
    # child 0.2 ± 0.1, base 0.8 ± 0.1: -0.6 is beyond 1.96 × sqrt(0.02) = 0.2772.
    bench_id = _finished_bench(root, _results(0.2, 0.1), _results(0.8, 0.1))
    done = await overbrainer(root, "bench", "--resume", bench_id, "--json", url=NO_PROVIDER)
    assert done.code == 0, done.stderr
    document = json.loads(done.stdout)["bench"]
    assert document["regressions"] == ["tiny_qa"]
    [row] = document["rows"]
    assert row["verdict"] == "regressed"
    assert abs(row["bound"] - 0.27719) < 1e-4 and abs(row["difference"] + 0.6) < 1e-9
    assert document["report_md"] == f"{BENCHES}/{bench_id}/bench.md"
    folder = root / BENCHES / bench_id
    assert json.loads((folder / "bench.json").read_text())["rows"] == document["rows"]
    markdown = (folder / "bench.md").read_text()
    assert "**Regressed beyond the error:** `tiny_qa`" in markdown
    assert (
        "| tiny_qa | exact_match ↑ | 0.2000 ± 0.1000 | 0.8000 ± 0.1000 | -0.6000 | 0.2772 "
        "| regressed |"
    ) in markdown
    done = await overbrainer(root, "bench", "--resume", bench_id, url=NO_PROVIDER)
    assert done.out_lines == [f"{BENCHES}/{bench_id}/bench.md"]


async def test_a_results_file_that_is_not_lm_evals_is_named(tmp_path: Path) -> None:
    root = make_bench_project(tmp_path / "p", "lm_eval")
    bench_id = _finished_bench(root, _results(0.5, 0.1), '{"oops": 1}')
    done = await overbrainer(root, "bench", "--resume", bench_id, url=NO_PROVIDER)
    path = root / BENCHES / bench_id / "results" / "base" / "tiny_qa.json"
    assert (done.code, done.stderr.strip().splitlines()[-1]) == (
        1,
        f"error: bench {bench_id}: {path} has no `results` object: not an lm-eval results file",
    )
