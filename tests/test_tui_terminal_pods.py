"""`overbrainer tui` end to end in a real terminal (tmux): a run's kept pod, its notice in
the Training view and its pod log in the Logs view."""

from __future__ import annotations

from pathlib import Path

from overbrainer.targets.runpod.pod_record import PodRecord, PodState, save_pod_record
from tests.hub_support import RUN_ID, make_run
from tests.tui_app_support import add_job
from tests.tui_support import needs_tmux, open_terminal

pytestmark = needs_tmux


async def test_the_training_view_shows_a_kept_pod_and_p_dismisses_it(tmp_path: Path) -> None:
    root = tmp_path / "p"
    run_dir = make_run(root)
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.KEPT, keep=True, pod_id="pod123"))
    add_job(run_dir, "compares", "compare_20261203-130000", "succeeded", PodState.KEPT)
    notice = f"pod pod123 kept: overbrainer pod rm {RUN_ID}"
    compare = "pod pod_comsuc kept: overbrainer pod rm compare_20261203-130000"
    async with open_terminal(root, "tui") as term:
        await term.wait_for("nothing run yet")
        await term.keys("4")
        shown = await term.wait_for(notice)
        assert compare in shown
        await term.keys("p")
        shown = await term.wait_for(f"pod notices of run {RUN_ID} dismissed")
        assert notice not in shown and compare not in shown
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
    assert (run_dir / "pod.json").exists()  # the notice only: the pod record stays


async def test_s_in_the_logs_view_shows_the_runs_kept_pod_log_and_s_goes_back(
    tmp_path: Path,
) -> None:
    root = tmp_path / "p"
    run_dir = make_run(root)
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "bootstrap.log").write_text("bootstrap: unpacking the job\n")
    kept = "2026-12-03T12:00:01.000001Z container step 3 of 9 done"
    (run_dir / ".pod" / "pod.log").write_text(kept + "\n")
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.KEPT, keep=True, pod_id="pod123"))
    async with open_terminal(root, "tui", env={"OVERBRAINER_RUNPOD__API_KEY": ""}) as term:
        await term.wait_for("nothing run yet")
        await term.keys("5", "s")
        shown = await term.wait_for(f"Pod log of run {RUN_ID}: 4 lines")
        lines = shown.splitlines()
        at = next(n for n, line in enumerate(lines) if line.startswith("Pod log of run"))
        assert [line.rstrip() for line in lines[at + 1 : at + 5]] == [
            "== .pod/bootstrap.log ==",
            "bootstrap: unpacking the job",
            "== pod ==",
            kept,
        ]
        await term.wait_for("the kept lines (no Runpod key to catch up)")
        await term.keys("s")
        shown = await term.wait_for("Logs: INFO and above")
        assert "== pod ==" not in shown
        (run_dir / ".pod" / "pod.log").unlink()
        (run_dir / ".pod" / "bootstrap.log").unlink()
        (run_dir / "pod.json").unlink()
        await term.keys("s")
        await term.wait_for(f"runs: no pod log kept for run {RUN_ID}")
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
