"""Job entrypoint: `axolotl train CFG --use-ray` with Ray Train on the CPU (use_gpu forced off).

The job's runtime_env carries `worker_process_setup_hook: ob_cpu_hook.patch` for the workers."""
import sys

import ray.train

_Base = ray.train.ScalingConfig


class CPUScalingConfig(_Base):
    def __init__(self, *args, **kwargs):
        kwargs["use_gpu"] = False
        super().__init__(*args, **kwargs)


ray.train.ScalingConfig = CPUScalingConfig
from axolotl.cli.main import main  # noqa: E402

sys.argv = ["axolotl", "train", *sys.argv[1:], "--use-ray"]
main()
