"""`overbrainer tui` end to end in a real terminal (tmux): training on this machine. The wizard
checks it before keeping `local`, a refused run names the TUI's own key for the dataset alone,
and the cursor goes to the run `t` starts."""

from __future__ import annotations

import os
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from tests import train_helpers
from tests.export_support import RUN_ID, add_run
from tests.pipeline_support import history, make_project
from tests.test_tui_wizard_terminal import to_the_models
from tests.tui_support import needs_tmux, open_terminal

pytestmark = needs_tmux

TRAINING = """
[training]
target = "local"
base_model = "Qwen/Qwen3-4B"
adapter = "qlora"

[targets.local]
kind = "local"
runtime = "native"
"""


def bare_path(bin_dir: Path) -> dict[str, str]:
    """A PATH of `bin_dir` and the system's own folders: no `axolotl`, no `nvidia-smi` but
    what the test puts in `bin_dir`."""
    bin_dir.mkdir(exist_ok=True)
    return {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"}


def flat(screen: str) -> str:
    """The screen without whitespace: a line wrapped anywhere reads the same."""
    return "".join(screen.split())


async def test_the_wizard_checks_this_machine_before_it_keeps_local_training(
    tmp_path: Path,
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    bin_dir = tmp_path / "bin"
    env = bare_path(bin_dir)
    async with open_stub() as stub, open_terminal(root, "tui", env=env) as term:
        await to_the_models(term, stub.url)
        await term.type("gen-model")
        await term.keys("Down")
        await term.type("parent-model")
        await term.keys("Enter")
        await term.wait_for("step 5 of 7: topics")
        await term.keys("a")
        await term.type("rust")
        await term.keys("Enter", "Enter")
        await term.wait_for("step 6 of 7: training")
        await term.keys("Right")  # skip -> local
        await term.wait_for("! this machine has no axolotl on PATH: local training fails")
        await term.keys("Enter")
        shown = await term.wait_for("✗ this machine has no axolotl on PATH")
        assert "←→picksskip(thedatasetonly),sshorrunpod" in flat(shown)
        assert "step 6 of 7: training" in shown  # not kept
        # Axolotl installed, still no GPU: a changed answer checks again.
        script = bin_dir / "axolotl"
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
        await term.keys("Down", "Down", "Down", "Right")  # adapter qlora -> full
        await term.wait_for("! this machine has no GPU: local training fails")
        await term.keys("Enter")
        await term.wait_for("✗ this machine has no GPU")
        train_helpers.standin_gpu(bin_dir)
        await term.keys("Left")  # adapter full -> qlora
        shown = await term.wait_for("✓ this machine can train: axolotl at")
        assert f"axolotlat{script},aGPU" in flat(shown)
        await term.keys("Enter")
        shown = await term.wait_for("step 7 of 7: summary")
        assert "training  local, Qwen/Qwen3-4B (qlora)" in shown
        await term.keys("C-c")
        await term.wait_for("EXIT=")
    assert not (root / "overbrainer.toml").exists()  # nothing written unless confirmed


async def test_a_run_refused_for_training_names_the_tuis_key_and_d_makes_the_dataset(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", pipeline=TRAINING)
    env = bare_path(tmp_path / "bin")
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url, env=env) as term:
        await term.wait_for("nothing run yet in this session")
        await term.keys("A")
        shown = await term.wait_for("n or Esc does not", limit=30)
        assert "yrunsit,drunsitwithouttraining(run--no-train),norEscdoesnot" in flat(shown)
        await term.keys("y")
        shown = await term.wait_for("cannot train", limit=30)
        assert "AthendinthePipelineviewmakesthedatasetwithouttraining" in flat(shown)
        assert "overbrainer run --no-train" not in shown
        assert stub.completions == []  # refused before any stage
        await term.keys("A")
        await term.wait_for("n or Esc does not", limit=30)
        await term.keys("d")
        await term.wait_for("split: 7 train, 1 eval, 0 excluded, 0 orphaned")
        # The results come before the task has ended: quit once it has (no question then).
        await term.wait_for("done: overbrainer run --no-train")
        await term.keys("q")
        await term.wait_for("EXIT=0")
    assert not (root / "runs").exists() or not any((root / "runs").iterdir())
    assert history(root)[-1].stage.value == "split"


async def test_the_cursor_goes_to_the_run_t_starts(tmp_path: Path) -> None:
    root = train_helpers.make_project(tmp_path / "p")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    add_run(root, model)  # an older run: the list's first
    knobs = {"STANDIN_STEPS": "2000", "STANDIN_PACE": "0.05", **train_helpers.hold_at(tmp_path, 1)}
    env = train_helpers.standin_env(tmp_path / "bin", **knobs)
    try:
        async with open_terminal(root, "tui", env=env) as term:
            await term.keys("4")
            await term.wait_for(f"▶ {RUN_ID}")
            await term.keys("t")
            shown = await term.wait_for(" created")
            run_id = shown.split("run ", 1)[1].split(" created")[0].split()[-1]
            shown = await term.wait_for(f"▶ {run_id}")
            assert f"  {RUN_ID}" in shown  # the older run is still listed, not selected
            await term.keys("q")
            await term.wait_for("work is running: quit and stop it? y/n")
            await term.keys("y")
            shown = await term.wait_for("EXIT=", limit=30)
        assert "EXIT=0" in shown
    finally:
        train_helpers.kill_jobs(root)
