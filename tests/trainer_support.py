"""The real transformers Trainer on a tiny random GPT-2 on the CPU (tests/test_trainer_plugin.py
imports this inside its tests, so collecting that module never needs torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import transformers

MAX_STEPS = 20
EVAL_BATCHES = 10
torch.set_num_threads(1)  # a tiny model: threads only contend on a shared machine
Callback: Any = transformers.TrainerCallback
DatasetBase: Any = torch.utils.data.Dataset


class Tokens(DatasetBase):  # type: ignore[misc]
    """Random token sequences: a tokenizer-free causal LM dataset."""

    def __init__(self, count: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 64, (count, 16), generator=generator)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


def trainer(run: Path, callbacks: list[Any], **overrides: Any) -> Any:
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=64,
        n_positions=32,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = transformers.GPT2LMHeadModel(config)
    settings: dict[str, Any] = {
        "output_dir": str(run / "output"),
        "max_steps": MAX_STEPS,
        "per_device_train_batch_size": 2,
        "per_device_eval_batch_size": 1,
        "learning_rate": 1e-3,
        "logging_steps": 1,
        "eval_strategy": "steps",
        "eval_steps": 10,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "seed": 0,
    }
    settings.update(overrides)
    return transformers.Trainer(
        model=model,
        args=transformers.TrainingArguments(**settings),
        train_dataset=Tokens(2 * MAX_STEPS, seed=1),
        eval_dataset=Tokens(EVAL_BATCHES, seed=2),
        callbacks=callbacks,
    )
