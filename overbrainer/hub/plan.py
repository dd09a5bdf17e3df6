"""What a push needs before any network: the run's model, its files, the repo asked for."""

from __future__ import annotations

from pathlib import Path

import attrs

from overbrainer.config.settings import Settings
from overbrainer.hub.errors import PushRefused
from overbrainer.hub.repo import RepoId, parse_repo
from overbrainer.hub.selection import Selected, select_files
from overbrainer.training import RunRecord, Runs, RunState

PUSH_DIR = "hub"
PUSH_FILE = "push.json"
MODEL_FILES = ("adapter_config.json", "config.json")


@attrs.frozen
class PushPlan:
    """The run, its directory, the files to push, the repo if named, and the visibility asked."""

    record: RunRecord
    run_dir: Path
    files: tuple[Selected, ...]
    repo: RepoId | None
    private: bool

    @property
    def bytes(self) -> int:
        """The size of every selected file together."""
        return sum(item.size for item in self.files)


def check_model(record: RunRecord, run_dir: Path) -> Path:
    """The run's `output/` when it holds a model (spec §C.1), else PushRefused saying why."""
    run_id = record.id
    if record.state not in (RunState.SUCCEEDED, RunState.STOPPED):
        raise PushRefused(
            f"run {run_id} is {record.state.value}: only a succeeded or stopped run can be pushed"
        )
    output = run_dir / "output"
    if any((output / name).is_file() for name in MODEL_FILES):
        return output
    if record.snapshot is not None:
        checkpoint = record.snapshot.checkpoint.removeprefix("output/")
        raise PushRefused(
            f"run {run_id} has no model in output/ (only checkpoint {checkpoint}): "
            "export or resume it first"
        )
    if not output.is_dir():
        raise PushRefused(
            f"the results of run {run_id} were not retrieved: retrieve them with "
            f"`overbrainer train attach {run_id}`, then push"
        )
    raise PushRefused(f"runs/{run_id}/output holds no model: nothing to push")


def plan_push(
    runs: Runs, settings: Settings, run_id: str, *, repo: str | None, public: bool
) -> PushPlan:
    """Check the run and the repo name, and select the files (blocking: reads the run)."""
    named = repo if repo is not None else settings.hub.repo
    repo_id = parse_repo(named) if named is not None else None
    record = runs.load(run_id)
    run_dir = runs.dir_of(run_id)
    output = check_model(record, run_dir)
    files = tuple(select_files(output))
    if not files:
        raise PushRefused(f"run {run_id} has nothing to push in output/")
    return PushPlan(record, run_dir, files, repo_id, settings.hub.private and not public)
