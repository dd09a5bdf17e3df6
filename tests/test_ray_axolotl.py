"""The real Axolotl 0.19.0 trains the tiny model with Ray Train on the CPU, two workers on a real
two-node Ray cluster, through the `ray` kind's machine (the run prepared as training prepares
it, its config given `use_ray`, `ray_num_workers` and `resources_per_worker` by the target).

Marked `axolotl` (its venv is the 4 GB one): the cluster runs from `.ci/axolotl-ray-venv.sh`'s
copy of it plus `ray[default,train]`. Two shims stand in for what Axolotl 0.19.0 cannot do on
a CPU cluster (docs/ray-notes.md §5): its CLI hard-codes `use_gpu=True` in Ray Train's
ScalingConfig (the entrypoint forces it off), and its distributed path maps the model to
`cuda:LOCAL_RANK` (a worker setup hook maps it to the CPU). On a GPU cluster neither is needed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import attrs
import pytest
import trio

from overbrainer.config.load import load_settings
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Event, Metric
from overbrainer.model.errors import WorkFailed
from overbrainer.model.job_status import Exited
from overbrainer.model.train_metric import JobStage
from overbrainer.targets import registry
from overbrainer.targets.job_script import Command
from overbrainer.targets.machine import Claim, Ended, Ending, JobNeeds, JobOpening, JobSpec
from overbrainer.targets.ray.kind import RAY
from overbrainer.targets.ray.settings import RayTarget
from overbrainer.training.axolotl_config import CONFIG_FILE, PLUGIN_DIR
from overbrainer.training.follow_job import FollowTimes, MetricsTail, follow
from overbrainer.training.prepare import job_env, prepare_run
from overbrainer.training.retrieve import RESULTS
from overbrainer.training.summary import MetricsSummary
from tests.axolotl_support import REPO_ROOT, training_project
from tests.ray_support import ray_cluster

pytestmark = [pytest.mark.axolotl, pytest.mark.timeout(1800)]

VENV_SCRIPT = REPO_ROOT / ".ci" / "axolotl-ray-venv.sh"
TRAIN_WITHIN = 900.0
"""Seconds the training job may take (about a minute idle on two cores)."""

CPU_TRAIN = '''\
"""`axolotl ARGS --use-ray` with Ray Train's `use_gpu` forced off (a CPU cluster)."""
import sys

import ray.train

class CPUScalingConfig(ray.train.ScalingConfig):
    def __init__(self, *args, **kwargs):
        kwargs["use_gpu"] = False
        super().__init__(*args, **kwargs)

ray.train.ScalingConfig = CPUScalingConfig
from axolotl.cli.main import main

sys.argv = ["axolotl", *sys.argv[1:], "--use-ray"]
main()
'''
CPU_HOOK = '''\
"""Ray's worker setup hook: Axolotl's distributed path maps the model to cuda:LOCAL_RANK."""

def patch():
    import torch
    import axolotl.utils.config as config

    if torch.cuda.is_available() or getattr(config.normalize_config, "_on_cpu", False):
        return
    original = config.normalize_config

    def normalize_config(cfg):
        result = original(cfg)
        cfg.device_map = {"": "cpu"}
        return result

    normalize_config._on_cpu = True
    config.normalize_config = normalize_config
'''


@attrs.define
class Collected:
    """The events the follow loop published."""

    events: list[Event] = attrs.Factory(list)

    def event(self, bus: int, event: Event) -> None:
        self.events.append(event)

    def closed(self, bus: int) -> None:
        pass


def interrupted() -> WorkFailed:
    """The error a Ctrl-C before the job started would end the command with."""
    return WorkFailed("interrupted")


@pytest.fixture(scope="session")
def axolotl_ray_venv(axolotl_venv: Path) -> Path:
    """Axolotl's venv plus `ray[default,train]` (a hard-linked copy, built once, cached)."""
    done = subprocess.run(["bash", str(VENV_SCRIPT)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building Axolotl's Ray venv failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


async def test_the_real_axolotl_trains_on_ray_train_across_two_nodes(
    tmp_path: Path, demo_dataset: Path, child_base: Path, axolotl_ray_venv: Path
) -> None:
    table = f"""
[targets.cluster]
kind = "ray"
address = "http://127.0.0.1:8265"
storage = "{tmp_path / "storage"}"
num_workers = 2
resources_per_worker = {{ CPU = 1 }}
[targets.cluster.runtime_env]
env_vars = {{ HF_HUB_OFFLINE = "1", TOKENIZERS_PARALLELISM = "false" }}
worker_process_setup_hook = "ob_cpu_hook.patch"
"""
    project = training_project(
        demo_dataset,
        tmp_path / "project",
        child_base,
        adapter="lora",
        target="cluster",
        extra_config=table,
    )
    assert registry.kind_named("ray") is RAY  # the config reader knows `kind = "ray"`
    # Axolotl 0.19.0 on Ray validates the driver's normalized config again in each worker,
    # where `evals_per_epoch` (and `saves_per_epoch`) meet the `eval_steps` (`save_steps`)
    # normalizing computed from them: "mutually exclusive". Steps given outright pass.
    toml = project / "overbrainer.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(
        text.replace("fp16 = false\n", "fp16 = false\neval_steps = 2\nsave_steps = 4\n")
    )
    settings = load_settings(project, {})
    training, configured = settings.training, settings.targets["cluster"]
    assert training is not None
    ray_settings: object = configured
    assert isinstance(ray_settings, RayTarget)  # read into the registry's kind's class
    seen = Collected()

    async def create(workdir: str, claim: Claim | None) -> str:
        return "axo-1"

    with ray_cluster(workers=1, ray=str(axolotl_ray_venv / "bin" / "ray")) as cluster:
        target = attrs.evolve(ray_settings, address=cluster.dashboard_url)
        async with open_event_bus(observer=seen) as bus:
            opening = JobOpening(
                "cluster",
                target,
                JobNeeds(),
                create,
                tmp_path / "runs",
                bus,
                Interrupt(),
                interrupted,
            )
            async with RAY.open(opening) as machine:
                root = f"{machine.workdir}/axo-1"
                seen_at = machine.job_root(root)
                local = tmp_path / "runs" / "axo-1"
                local.mkdir(parents=True)
                data = project / "data"
                prepare_run(local, training, seen_at, data / "train.jsonl", data / "eval.jsonl")
                (local / "cpu_train.py").write_text(CPU_TRAIN)
                # On PYTHONPATH (the plugin's folder) in every process Ray starts for the job.
                (local / PLUGIN_DIR / "ob_cpu_hook.py").write_text(CPU_HOOK)
                train = Command(
                    JobStage.TRAIN, "python", ("cpu_train.py", "train", CONFIG_FILE), False
                )
                spec = JobSpec("axo-1", root, "", [train], job_env(seen_at))
                plan = machine.plan(spec)
                await machine.stage(local, root)
                job = await machine.start(root, plan, {})
                tail = MetricsTail(MetricsSummary())
                times = FollowTimes(poll=1.0, reconnect=60.0)
                with trio.fail_after(TRAIN_WITHIN):
                    status = await follow(
                        machine.followed(job), bus, tail, run_id="axo-1", times=times
                    )
                fetched = tmp_path / "fetched"
                await machine.fetch(job, fetched, RESULTS, ("checkpoint-*",))
                await machine.end(Ended(Ending.DONE, succeeded=status == Exited(0)))

    log = (tmp_path / "storage" / "axo-1" / "job.log").read_text()
    assert status == Exited(0), log[-6000:]
    # Ray Train ran two workers, one per node (each node has 1 CPU, each worker asks for 1).
    assert "world_rank=0" in log and "world_rank=1" in log, log[-6000:]
    assert "RayTrainWorker" in log
    losses = [e.metric for e in seen.events if isinstance(e, Metric)]
    assert any(m.step >= 1 for m in losses), losses
    output = sorted(p.name for p in (fetched / "output").iterdir())
    assert "adapter_model.safetensors" in output, output
