"""Ray worker setup hook: Axolotl 0.19's distributed path maps the model to cuda:LOCAL_RANK."""


def patch() -> None:
    import torch
    import axolotl.utils.config as config

    if torch.cuda.is_available() or getattr(config.normalize_config, "_ob_cpu", False):
        return
    original = config.normalize_config

    def normalize_config(cfg):
        result = original(cfg)
        cfg.device_map = {"": "cpu"}
        return result

    normalize_config._ob_cpu = True
    config.normalize_config = normalize_config
