"""What a Ray job ships in its runtime env's working_dir: the run's inputs, the job's script and
the entrypoint that puts them in R (on the storage every node sees) and runs the job there.

The inputs travel in the package (Ray caps one at 512 MiB: a bigger dataset belongs on the
storage already); what the job writes (metrics, checkpoints, the model, its log) goes to R,
where overbrainer reads it through the storage.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from overbrainer.targets.job_script import JOB_FILES, quote, wrap
from overbrainer.targets.ray.settings import RayTarget

INPUTS = "run"
"""The package's folder holding the run's local tree (copied into R)."""
JOB = "job.sh"
SECRETS = "secrets.env"
ENTRY = "entry.sh"
ENTRYPOINT = f"sh {ENTRY}"
"""The job's command line: it runs in the unpacked working_dir on the driver's node."""
CODE = ".code"


def entry_script(root: str) -> str:
    """Copy the inputs into `root` (R as the nodes see it), read the secrets, run the job in R
    with its output in R/job.log (and in Ray's driver log, through `tee`), exit with its code."""
    files = " ".join(JOB_FILES)
    return (
        "set -e\n"
        'package="$(pwd)"\n'
        f"R={quote(root)}\n"
        'mkdir -p "$R"\n'
        f'cp -R {INPUTS}/. "$R"/\n'
        f"if [ -f {SECRETS} ]; then set -a; . ./{SECRETS}; set +a; fi\n"
        'cd "$R"\n'
        f"rm -f {files}\n"
        "set +e\n"
        f'{{ sh "$package/{JOB}"; echo "$?" > "$package/{CODE}"; }} 2>&1 | tee -a job.log\n'
        f'exit "$(cat "$package/{CODE}")"\n'
    )


def secrets_file(secrets: Mapping[str, str]) -> str:
    """`K='V'` lines the entrypoint reads (kept out of the job's runtime env, which every
    dashboard user sees in the job's details)."""
    return "".join(f"{name}={quote(value)}\n" for name, value in secrets.items())


def read_tree(local: Path, skip: Sequence[str]) -> dict[str, bytes]:
    """Every file under `local` but the top-level names in `skip`, by relative path."""
    files: dict[str, bytes] = {}
    for folder, dirs, names in os.walk(local):
        here = Path(folder)
        if here == local:
            dirs[:] = [d for d in dirs if d not in skip]
            names = [n for n in names if n not in skip]
        for name in names:
            path = here / name
            if path.is_file():
                files[path.relative_to(local).as_posix()] = path.read_bytes()
    return files


def with_ray_keys(config: bytes, target: RayTarget) -> bytes:
    """Axolotl's config with training on Ray turned on, the workers and resources from the
    target (Axolotl's `use_ray`, `ray_num_workers`, `resources_per_worker`)."""
    loaded = yaml.safe_load(config) or {}
    loaded["use_ray"] = True
    loaded["ray_num_workers"] = target.num_workers
    loaded["resources_per_worker"] = dict(target.resources_per_worker)
    return yaml.safe_dump(loaded, sort_keys=False).encode()


def package_files(
    inputs: Mapping[str, bytes], commands: str, root: str, secrets: Mapping[str, str]
) -> dict[str, bytes]:
    """The working_dir's files: the inputs under `run/`, the job, the entrypoint, the secrets."""
    files = {f"{INPUTS}/{name}": data for name, data in inputs.items()}
    files[JOB] = wrap(commands).encode()
    files[ENTRY] = entry_script(root).encode()
    if secrets:
        files[SECRETS] = secrets_file(secrets).encode()
    return files
