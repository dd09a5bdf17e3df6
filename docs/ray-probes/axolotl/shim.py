"""Run `axolotl train CFG --use-ray` with Ray Train's ScalingConfig forced to use_gpu=False."""
import sys
import ray.train

_Base = ray.train.ScalingConfig

class CPUScalingConfig(_Base):
    def __init__(self, *args, **kwargs):
        kwargs["use_gpu"] = False
        super().__init__(*args, **kwargs)

ray.train.ScalingConfig = CPUScalingConfig
import ray
ray.init(runtime_env={"worker_process_setup_hook": "ob_cpu_hook.patch", "env_vars": {"AXOLOTL_DO_NOT_TRACK": "1"}})
from axolotl.cli.main import main
sys.argv = ["axolotl", "train", *sys.argv[1:], "--use-ray"]
main()
