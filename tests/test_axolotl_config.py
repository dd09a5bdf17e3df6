"""`axolotl.yaml` from `[training]`: golden files, refused keys, warnings and resume checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.config.settings import Adapter, Training
from overbrainer.config.validate import check_training
from overbrainer.training.axolotl_config import (
    ResumeRefused,
    build_config,
    check_resume,
    differing_keys,
    render,
    template_warning,
)

GOLDEN = Path(__file__).parent / "golden" / "axolotl"
ROOT = "/home/u/proj/runs/demo_20260922-143005"

QWEN = Training(target="local", base_model="Qwen/Qwen3-4B", adapter=Adapter.LORA)
EXTRA: dict[str, object] = {
    "warmup_steps": 10,
    "eval_steps": 50,
    "eval_strategy": "steps",
    "save_steps": 100,
    "chat_template": "qwen3",
    "special_tokens": {"pad_token": "<|endoftext|>"},
    "lora_target_modules": ["q_proj", "v_proj"],
    "weight_decay": 1e-7,
    "on": "yes",
}

CASES: dict[str, tuple[Training, bool]] = {
    "lora_eval": (QWEN, True),
    "lora_no_eval": (QWEN, False),
    "qlora_eval": (attrs.evolve(QWEN, adapter=Adapter.QLORA, hub_model_id="me/child"), True),
    "qlora_no_eval": (attrs.evolve(QWEN, adapter=Adapter.QLORA), False),
    "full_eval": (attrs.evolve(QWEN, adapter=Adapter.FULL, learning_rate=1e-5), True),
    "full_no_eval": (attrs.evolve(QWEN, adapter=Adapter.FULL), False),
    "extra_eval": (attrs.evolve(QWEN, axolotl_extra=EXTRA), True),
    "extra_no_eval": (attrs.evolve(QWEN, axolotl_extra=EXTRA), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_config_matches_its_golden_file(name: str) -> None:
    training, has_eval = CASES[name]
    text = render(build_config(training, ROOT, has_eval))
    golden = GOLDEN / f"{name}.yaml"
    if os.environ.get("OVERBRAINER_TEST_REGOLD"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")
    assert yaml.safe_load(text) == build_config(training, ROOT, has_eval)


def test_key_facts_of_the_configs() -> None:
    lora = build_config(QWEN, ROOT, True)
    assert lora["datasets"] == [
        {
            "path": f"{ROOT}/data/train.jsonl",
            "ds_type": "json",
            "type": "chat_template",
            "field_messages": "messages",
            "field_thinking": "reasoning_content",
            "roles_to_train": ["assistant"],
            "train_on_eos": "turn",
        }
    ]
    assert lora["test_datasets"][0]["path"] == f"{ROOT}/data/eval.jsonl"
    assert lora["test_datasets"][0]["split"] == "train"
    assert (lora["adapter"], lora["load_in_4bit"], lora["evals_per_epoch"]) == ("lora", False, 4)
    qlora = build_config(attrs.evolve(QWEN, adapter=Adapter.QLORA), ROOT, False)
    quant = (qlora["adapter"], qlora["load_in_4bit"], qlora["load_in_8bit"])
    assert quant == ("qlora", True, False)
    assert "test_datasets" not in qlora and "evals_per_epoch" not in qlora
    full = build_config(attrs.evolve(QWEN, adapter=Adapter.FULL), ROOT, True)
    adapter_keys = {"adapter", "load_in_4bit", "load_in_8bit", "lora_r", "lora_alpha"}
    assert not adapter_keys & set(full)
    extra = build_config(attrs.evolve(QWEN, axolotl_extra=EXTRA), ROOT, True)
    assert "saves_per_epoch" not in extra and "evals_per_epoch" not in extra
    assert (extra["eval_steps"], extra["save_steps"], extra["save_total_limit"]) == (50, 100, 2)
    no_eval = build_config(attrs.evolve(QWEN, axolotl_extra=EXTRA), ROOT, False)
    assert "eval_steps" not in no_eval and "eval_strategy" not in no_eval
    resumed = build_config(QWEN, "/workspace/run", True, "checkpoint-12")
    assert resumed["resume_from_checkpoint"] == "/workspace/run/resume/checkpoint-12"
    assert resumed["output_dir"] == "/workspace/run/output"


@pytest.mark.parametrize("packing", [True, False])
def test_attention_is_sdpa_on_every_target_and_extra_may_choose_another(packing: bool) -> None:
    """sdpa packs correctly in Axolotl 0.19.0 (torch varlen on CUDA, a block-diagonal mask on a
    CPU) and needs no flash-attn, which its images lack (docs/training.md, "Attention and sample
    packing"); bf16 stays Axolotl's `auto`, which a CPU resolves to no bf16."""
    config = build_config(attrs.evolve(QWEN, sample_packing=packing), ROOT, True)
    assert (config["attn_implementation"], config["sample_packing"]) == ("sdpa", packing)
    assert config["eval_sample_packing"] is False
    assert not {"bf16", "bfloat16", "fp16", "flash_attention", "sdpa_varlen"} & set(config)
    flash: dict[str, object] = {"attn_implementation": "flash_attention_2"}
    chosen = build_config(attrs.evolve(QWEN, axolotl_extra=flash), ROOT, True)
    assert chosen["attn_implementation"] == "flash_attention_2"
    assert check_training(attrs.evolve(QWEN, axolotl_extra=flash)) == []


def test_extra_mappings_merge_recursively_and_the_rest_replaces() -> None:
    base = attrs.evolve(QWEN, axolotl_extra={"save_total_limit": 5})
    assert build_config(base, ROOT, True)["save_total_limit"] == 5
    nested = attrs.evolve(
        QWEN,
        axolotl_extra={"fsdp_config": {"a": {"b": 1}}, "lora_target_modules": ["x"]},
    )
    config = build_config(nested, ROOT, True)
    assert config["fsdp_config"] == {"a": {"b": 1}}
    assert config["lora_target_modules"] == ["x"]


def test_env_extra_values_keep_their_types_in_yaml() -> None:
    training = attrs.evolve(
        QWEN, axolotl_extra={"flag": True, "count": 7, "rate": 0.5, "word": "true", "num": "12"}
    )
    loaded = yaml.safe_load(render(build_config(training, ROOT, False)))
    assert (loaded["flag"], loaded["count"], loaded["rate"]) == (True, 7, 0.5)
    assert (loaded["word"], loaded["num"]) == ("true", "12")


_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8", exclude_categories=["Cs"])),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(extra=st.dictionaries(st.text(min_size=1).filter(lambda k: k != "<<"), _values, max_size=4))
def test_any_extra_value_round_trips_through_pyyaml(extra: dict[str, Any]) -> None:
    config = {"base_model": "m", **extra}
    assert yaml.safe_load(render(config)) == config


def test_typed_and_managed_keys_are_refused() -> None:
    training = attrs.evolve(
        QWEN,
        axolotl_extra={
            "num_epochs": 2,
            "datasets": [],
            "resume_from_checkpoint": "x",
            "plugins": [],
            "save_only_model": True,
            "warmup_steps": 3,
        },
    )
    assert check_training(training) == [
        "training.axolotl_extra.num_epochs: set training.epochs instead",
        "training.axolotl_extra.datasets: managed by overbrainer, cannot be overridden",
        "training.axolotl_extra.resume_from_checkpoint: managed by overbrainer, "
        "cannot be overridden",
        "training.axolotl_extra.plugins: managed by overbrainer, cannot be overridden",
        "training.axolotl_extra.save_only_model: cannot be true, "
        "snapshots need resumable checkpoints",
    ]
    assert check_training(attrs.evolve(QWEN, axolotl_extra={"save_only_model": False})) == []


def test_training_ranges_are_checked() -> None:
    bad = attrs.evolve(
        QWEN,
        adapter=Adapter.FULL,
        merge=True,
        epochs=0,
        learning_rate=0.0,
        lora_dropout=1.0,
        optimizer=" ",
    )
    assert check_training(bad) == [
        "training.epochs: must be at least 1",
        "training.optimizer: must not be empty",
        "training.learning_rate: must be greater than 0",
        "training.lora_dropout: must be in [0, 1)",
        'training.merge: requires adapter = "lora" or "qlora" '
        "(a full fine-tune has no adapter to merge)",
    ]


KNOWN = "templates known to render it: qwen3, qwen3_5, exaone4, gemma4, gemma4_unified"


@pytest.mark.parametrize(
    ("base_model", "extra", "warning"),
    [
        ("Qwen/Qwen3-4B", {}, None),
        (
            "meta-llama/Llama-3.2-1B",
            {},
            "the chat template of meta-llama/Llama-3.2-1B may drop reasoning_content, leaving "
            "the parent's reasoning out of training; set training.axolotl_extra.chat_template "
            f"if the model uses one of the {KNOWN}",
        ),
        ("meta-llama/Llama-3.2-1B", {"chat_template": "gemma4"}, None),
        (
            "Qwen/Qwen3-4B",
            {"chat_template": "llama3"},
            "chat_template `llama3` may drop reasoning_content, leaving the parent's reasoning "
            f"out of training ({KNOWN})",
        ),
        ("Qwen/Qwen3-4B", {"chat_template": "tokenizer_default"}, None),
        (
            "Qwen/Qwen3-4B",
            {"chat_template": "qwen3", "chat_template_jinja": "{{ m.content }}"},
            "chat_template_jinja does not reference reasoning_content, leaving the parent's "
            "reasoning out of training",
        ),
        ("x", {"chat_template_jinja": "{{ m.reasoning_content }}"}, None),
    ],
)
def test_chat_template_warnings(base_model: str, extra: dict[str, object], warning: str) -> None:
    training = attrs.evolve(QWEN, base_model=base_model, axolotl_extra=extra)
    assert template_warning(training) == warning


def test_resume_accepts_cadence_and_logging_changes() -> None:
    recorded = render(build_config(QWEN, ROOT, True, "checkpoint-4"))
    changed = attrs.evolve(
        QWEN,
        evals_per_epoch=9,
        saves_per_epoch=3,
        hub_model_id="me/x",
        axolotl_extra={"wandb_project": "p", "use_wandb": True, "logging_steps": 5},
    )
    assert changed != QWEN
    check_resume("r1", recorded, changed)  # accepted: raises ResumeRefused otherwise
    with pytest.raises(ResumeRefused):  # the same check does refuse a model-changing key
        check_resume("r1", recorded, attrs.evolve(changed, lora_r=QWEN.lora_r * 2))


def test_resume_refusal_names_the_differing_keys() -> None:
    recorded = render(build_config(QWEN, ROOT, True))
    changed = attrs.evolve(
        QWEN, learning_rate=1e-4, lora_r=8, axolotl_extra={"warmup_steps": 3, "wandb_x": 1}
    )
    with pytest.raises(ResumeRefused) as caught:
        check_resume("demo_20260922-143005", recorded, changed)
    assert caught.value.message == (
        "cannot resume from run demo_20260922-143005: the training settings differ from the ones "
        "it ran with (learning_rate, lora_r, warmup_steps); set them back to resume, or start a "
        "new run"
    )
    assert caught.value.exit_code == 2


def test_resume_compares_values_not_text_and_bools_are_not_numbers() -> None:
    recorded = {"a": 0.0002, "b": True, "c": [1, {"d": "x"}], "e": 1}
    assert differing_keys(recorded, {"a": 2e-4, "b": True, "c": [1, {"d": "x"}], "e": 1.0}) == []
    assert differing_keys(recorded, {"a": 2e-4, "b": 1, "c": [1, {"d": "y"}], "e": 1}) == ["b", "c"]


def test_resume_of_a_garbled_config_is_refused() -> None:
    with pytest.raises(ResumeRefused) as caught:
        check_resume("r1", ": : [", QWEN)
    assert caught.value.message == (
        "cannot resume from run r1: its axolotl.yaml is not a valid Axolotl config"
    )


def test_extra_values_from_the_environment_are_typed_in_yaml(tmp_path: Path) -> None:
    from importlib import resources

    from overbrainer.config.load import load_settings

    template = resources.files("overbrainer") / "templates" / "overbrainer.toml"
    (tmp_path / "overbrainer.toml").write_text(template.read_text(encoding="utf-8"))
    prefix = "OVERBRAINER_TRAINING__AXOLOTL_EXTRA__"
    environ = {
        f"{prefix}WARMUP_STEPS": "10",
        f"{prefix}BF16": "true",
        f"{prefix}WEIGHT_DECAY": "0.01",
        f"{prefix}CHAT_TEMPLATE": "qwen3",
        f"{prefix}SEED": "007",
        f"{prefix}PLUS": "+5",
        f"{prefix}BIG": "9223372036854775808",
        f"{prefix}MIN": "-9223372036854775808",
        f"{prefix}EXP": "1e3",
        f"{prefix}NAN": "nan",
        f"{prefix}UNDERSCORE": "1_000",
        f"{prefix}SPECIAL_TOKENS__PAD_TOKEN": "<pad>",
        "OVERBRAINER_TRAINING__EPOCHS": "1",
    }
    training = load_settings(tmp_path, environ).training
    assert training is not None
    text = render(build_config(training, "/workspace/run", False))
    loaded = yaml.safe_load(text)
    assert (loaded["warmup_steps"], loaded["bf16"], loaded["weight_decay"]) == (10, True, 0.01)
    assert (loaded["chat_template"], loaded["seed"]) == ("qwen3", "007")
    assert (loaded["plus"], loaded["big"], loaded["min"]) == ("+5", "9223372036854775808", -(2**63))
    assert (loaded["exp"], loaded["nan"], loaded["underscore"]) == (1000.0, "nan", "1_000")
    assert loaded["special_tokens"] == {"pad_token": "<pad>"}
    assert loaded["num_epochs"] == 1
    assert 'seed: "007"\n' in text and "bf16: true\n" in text


def test_a_local_base_models_own_template_decides_the_reasoning_warning(tmp_path: Path) -> None:
    renders = tmp_path / "renders"
    renders.mkdir()
    (renders / "chat_template.jinja").write_text("{{ m['reasoning_content'] }}{{ m.content }}")
    drops = tmp_path / "drops"
    drops.mkdir()
    (drops / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ m.content }}"}))
    assert (
        template_warning(Training(target="t", base_model=str(renders), adapter=Adapter.LORA))
        is None
    )
    assert template_warning(Training(target="t", base_model=str(drops), adapter=Adapter.LORA)) == (
        f"the chat template of {drops} does not reference reasoning_content, leaving the "
        "parent's reasoning out of training"
    )
