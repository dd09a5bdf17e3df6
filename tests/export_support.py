"""A tiny random Llama-shaped model with a SentencePiece tokenizer, and a run that holds it.

The model stands in for a run's `output/`: `transformers` writes it (seconds on the CPU) and a
SentencePiece tokenizer is trained on the fly (a random BPE tokenizer fails the converter's
pre-tokenizer check). It carries a chat template, which the GGUF must keep.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from overbrainer.training.run_store import Job, RunRecord, Runs, RunState, Snapshot
from tests.runpod_fake import KEY
from tests.train_helpers import make_project

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "a small model learns from a large one",
    "questions and answers make a data set",
    "rust errors explained with examples and fixes",
    "export the child model to gguf for ollama",
] * 40
SEQUENCE_LEN = 512


def make_tiny_model(folder: Path) -> Path:
    """Write a tiny random Llama model, its SentencePiece tokenizer and chat template."""
    import sentencepiece as spm
    import torch
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "sp"),
        vocab_size=320,
        model_type="bpe",
        byte_fallback=True,  # llama.cpp's SPM tokenizer needs the byte pieces (<0x0A> and all)
        character_coverage=1.0,
        bos_id=1,
        eos_id=2,
        unk_id=0,
        pad_id=-1,
        minloglevel=2,
    )
    corpus.unlink()
    tokenizer = transformers.LlamaTokenizer(vocab_file=str(folder / "sp.model"), legacy=True)
    tokenizer.chat_template = CHAT_TEMPLATE
    (folder / "sp.vocab").unlink()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=spm.SentencePieceProcessor(model_file=str(folder / "sp.model")).vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=SEQUENCE_LEN,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    # The converter reads the SentencePiece model itself (newer transformers save only
    # tokenizer.json, whose BPE pre-tokenizer the converter does not know).
    (folder / "sp.model").replace(folder / "tokenizer.model")
    return folder


RUN_ID = "my_project_20261203-120000"
"""The run `add_run` makes by default."""


def add_run(
    project: Path,
    model: Path,
    run_id: str = RUN_ID,
    *,
    adapter: bool = False,
    state: RunState = RunState.SUCCEEDED,
    snapshot: Snapshot | None = None,
    target: str = "local",
    remote_dir: str | None = None,
) -> Path:
    """A finished local run of `project` whose `output/` holds `model` (or an adapter on it)."""
    runs = Runs(project / "runs")
    run_dir = runs.dir_of(run_id)
    output = run_dir / "output"
    output.mkdir(parents=True)
    if adapter:
        (output / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
        (output / "adapter_model.safetensors").write_bytes(b"lora")
    else:
        for item in model.iterdir():
            if item.is_file():
                shutil.copy2(item, output / item.name)
    (run_dir / "axolotl.yaml").write_text(
        f"base_model: {model}\n"
        "adapter: lora\n"
        f"sequence_len: {SEQUENCE_LEN}\n"
        "plugins:\n  - overbrainer_metrics.OverbrainerMetricsPlugin\n"
        "hub_model_id: me/child\n"
        f"output_dir: {output}\n"
    )
    (run_dir / "job.log").write_text("standin: done\n")
    record = RunRecord(
        id=run_id,
        target=target,
        created="2026-12-03T12:00:00Z",
        remote_dir=remote_dir or str(run_dir.resolve()),
        job=Job(remote_dir or str(run_dir.resolve()), 4242),
        state=state,
        snapshot=snapshot,
        snapshots=True,
    )
    runs.save(record)
    return run_dir


def pod_env(runpod_url: str, pods_root: Path) -> dict[str, str]:
    """The variables of an export on the Runpod fake's booting pods (no OVERBRAINER_* of ours)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    return env | {
        "OVERBRAINER_TEST_POLL_S": "0.05",
        "OVERBRAINER_RUNPOD__API_KEY": KEY,
        "OVERBRAINER_RUNPOD__BASE_URL": runpod_url,
        "OVERBRAINER_TEST_POD_ROOT": str(pods_root),
    }


def pod_export_project(
    tmp_path: Path, target: str, model: Path, python: str, env: dict[str, str]
) -> tuple[Path, Path, dict[str, str]]:
    """A project with the Runpod target `target` (a template taking `{venv}`) and a run of
    `model` trained on it, the job's `python3` a shell line `python`; the project, the run's
    directory and `env`."""
    project = make_project(tmp_path / "p")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "python3"
    script.write_text(f"#!/bin/sh\n{python}\n")
    script.chmod(0o755)
    config_file = project / "overbrainer.toml"
    config_file.write_text(config_file.read_text() + target.format(venv=venv))
    run_dir = add_run(project, model, target="gpu_cloud", remote_dir=f"/workspace/{RUN_ID}")
    return project, run_dir, env
