"""The model card's benchmark section: the newest bench of the run, its regression line and
table, as `bench.md` shows them (and nothing without a bench)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_report_support import write_bench
from tests.hub_support import FakeHub, dry_run_card, hub_env, make_run

pytestmark = pytest.mark.hub


def test_the_card_shows_the_newest_bench_and_its_regressions(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    env = hub_env(tmp_path, hub.url, token=None)
    assert "## Benchmarks" not in dry_run_card(root, run_dir, env)

    write_bench(run_dir, "bench_20261201-000000", 0.50, 0.52)
    write_bench(run_dir, "bench_20261202-000000", 0.40, 0.60)
    card = dry_run_card(root, run_dir, env)
    section = card[card.index("## Benchmarks against the base model") :]
    assert section.startswith(
        "## Benchmarks against the base model\n\n"
        "lm-evaluation-harness tasks `tiny_qa` (bench_20261202-000000), served from the GGUFs:\n\n"
        "**Regressed beyond the error:** `tiny_qa`: the child scores below its base by more than "
        "1.96 × the standard error of the difference.\n\n"
        "| task | metric | child ± se | base ± se | child − base | bound | verdict |\n"
        "|---|---|---|---|---|---|---|\n"
        "| tiny_qa | exact_match ↑ | 0.4000 ± 0.0200 | 0.6000 ± 0.0200 | -0.2000 | 0.0554 "
        "| regressed |\n"
    )
    assert "bench_20261201-000000" not in card
    # docs/export-and-push.md shows this very section.
    docs = (Path(__file__).parent.parent / "docs" / "export-and-push.md").read_text()
    start = docs.index("    ## Benchmarks against the base model\n")
    block = docs[start : docs.index("\n\n", docs.index("    A row regressed", start))]
    shown = "\n".join(line.removeprefix("    ") for line in block.splitlines())
    assert shown in card

    # A bench of the child alone says that no regression can be told.
    write_bench(run_dir, "bench_20261203-000000", 0.40, None)
    card = dry_run_card(root, run_dir, env)
    assert "No base model was benched" in card
    assert "| tiny_qa | exact_match ↑ | 0.4000 ± 0.0200 | – | – | – | no base |" in card
