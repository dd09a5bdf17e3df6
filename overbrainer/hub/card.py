"""The model card (README.md) of a push, rendered from `card.md.j2` (spec §C.5).

Facts come from the run's own files (its `axolotl.yaml`, `metrics.jsonl`, `data/`) first, the
settings second; what is not known is left out.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import jinja2
import yaml

from overbrainer.config.settings import Settings
from overbrainer.hub.card_results import bench_text, compare_text
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets import load_pod_record
from overbrainer.training import local_summary, template_warning

MARKER = "<!-- overbrainer:card -->"
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9._/-]*")
_YAML11 = {
    "y", "yes", "n", "no", "true", "false", "on", "off", "null", "nan", "inf",
}  # fmt: skip
EXTRA_KEYS = (
    "chat_template", "attn_implementation", "bf16", "eval_sample_packing", "flash_attention",
    "fp16", "gradient_checkpointing", "group_by_length", "lora_target_linear", "max_grad_norm",
    "neftune_noise_alpha", "pad_to_sequence_len", "seed", "tf32", "train_on_inputs",
    "val_set_size", "warmup_ratio", "weight_decay",
)  # fmt: skip


@attrs.frozen
class CardInputs:
    """What the card is made of: the run, the settings, the repo, the pushed files, a license."""

    run_dir: Path
    settings: Settings
    repo: str
    files: list[str]
    license: str | None = None
    dataset: str | None = None
    """The project's dataset repo on the Hub (`push --dataset`), linked when set."""
    hub_url: str = "https://huggingface.co"


def scalar(value: str) -> str:
    """A YAML scalar: plain when safe (`[A-Za-z][A-Za-z0-9._/-]*`, no YAML 1.1 word), else JSON."""
    if _PLAIN.fullmatch(value) and value.lower() not in _YAML11:
        return value
    return json.dumps(value, ensure_ascii=False)


def cell(text: str) -> str:
    """Text for a card: newlines to spaces, `<`/`>` escaped, `|` escaped for table cells."""
    text = " ".join(text.splitlines())
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def is_hub_id(base: str) -> bool:
    """Whether a base model names a Hub repo (`owner/name`), not a local path."""
    return not base.startswith(("/", ".", "~")) and base.count("/") == 1


def _axolotl(run_dir: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load((run_dir / "axolotl.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _lines(path: Path) -> int | None:
    try:
        with open(path, "rb") as file:
            return sum(1 for line in file if line.strip())
    except OSError:
        return None


def _reasoning_kept(path: Path) -> bool | None:
    try:
        with open(path, encoding="utf-8") as file:
            head = file.readline()
    except OSError:
        return None
    return "reasoning_content" in head if head else None


def duration(seconds: float) -> str:
    """`45 s`, `6 min`, `1 h 20 min`."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def _training_seconds(path: Path) -> float | None:
    """From the plugin's `begin` line to its `end` line in `metrics.jsonl`."""
    begin = end = None
    try:
        with open(path, encoding="utf-8") as file:
            for line in file:
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                time = item.get("time") if isinstance(item, dict) else None
                if not isinstance(time, int | float) or isinstance(time, bool):
                    continue
                if item.get("event") == "begin" and begin is None:
                    begin = float(time)
                elif item.get("event") == "end":
                    end = float(time)
    except OSError:
        return None
    return None if begin is None or end is None or end < begin else end - begin


def runpod_line(run_dir: Path) -> str:
    """`Trained on [Runpod](…) (<gpu>) for about $X.XX.` for a run on a pod; empty otherwise."""
    try:
        pod = load_pod_record(run_dir)
    except (OverbrainerError, OSError):
        return ""
    if pod is None or pod.gpu_type is None:
        return ""
    line = f"Trained on [Runpod](https://runpod.io?ref=ym24z23f) ({cell(pod.gpu_type)})"
    spend = pod.estimated_spend
    if spend is None:
        return line + "."
    return line + (" for less than $0.01." if spend < 0.01 else f" for about ${spend:.2f}.")


def front_matter(
    base: str | None,
    adapter: str | None,
    license_: str | None,
    gguf: bool,
    dataset: str | None = None,
) -> str:
    """The YAML front matter lines (spec §C.5 item 1), and `datasets` when one was pushed."""
    lines: list[str] = []
    full = adapter is None
    if base is not None and is_hub_id(base):
        lines.append(f"base_model: {scalar(base)}")
        lines.append(f"base_model_relation: {'finetune' if full else 'adapter'}")
    lines.append(f"library_name: {'transformers' if full else 'peft'}")
    if license_ is not None:
        lines.append(f"license: {scalar(license_)}")
    if dataset is not None:
        lines += ["datasets:", f"- {scalar(dataset)}"]
    lines.append("pipeline_tag: text-generation")
    lines += ["tags:", "- overbrainer", "- distillation"]
    if gguf:
        lines.append("- gguf")
    return "\n".join(lines)


def _shown(base: str) -> str:
    return base if is_hub_id(base) else f"a local model (`{Path(base).name}`)"


def _usage(repo: str, files: list[str], base: str | None, full: bool) -> str:
    ggufs = [name for name in files if name.endswith(".gguf")]
    if ggufs:
        tags = [name.rsplit("-", 1)[-1].removesuffix(".gguf") for name in ggufs]
        tag = "Q4_K_M" if "Q4_K_M" in tags else tags[0]
        return f"```sh\nollama run hf.co/{repo}:{tag}\nllama-cli -hf {repo}:{tag}\n```"
    if full or base is None:
        return (
            "```python\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
            f'model = AutoModelForCausalLM.from_pretrained("{repo}")\n'
            f'tokenizer = AutoTokenizer.from_pretrained("{repo}")\n```'
        )
    return (
        "```python\nfrom peft import PeftModel\n"
        "from transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
        f'base = AutoModelForCausalLM.from_pretrained("{base}")\n'
        f'model = PeftModel.from_pretrained(base, "{repo}")\n'
        f'tokenizer = AutoTokenizer.from_pretrained("{base}")\n```'
    )


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def _extra_ok(value: object) -> bool:
    if isinstance(value, bool | int | float):
        return True
    return (
        isinstance(value, str)
        and len(value) <= 64
        and not any(c in value for c in "/\\@")
        and not any(c.isspace() for c in value)
    )


def reproduce(settings: Settings, recorded: dict[str, Any]) -> str:
    """The TOML of the settings that made the run, from an allowlist (no secrets, no target)."""
    out: list[str] = []
    for topic in settings.topics:
        out.append("[[topics]]")
        out.append(f"name = {_toml(topic.name)}")
        if topic.description is not None:
            out.append(f"description = {_toml(topic.description)}")
        out.append(f"subtopics = {topic.subtopics}")
        out.append(f"questions_per_subtopic = {topic.questions_per_subtopic}\n")
    for name, role in settings.roles.all():
        out.append(f"[roles.{name}]")
        out.append(f"provider = {_toml(role.provider)}")
        out.append(f"model = {_toml(role.model)}")
        for key in (
            "reasoning",
            "max_tokens",
            "temperature",
            "reasoning_effort",
            "thinking_budget",
        ):
            value = getattr(role, key, None)
            if value is not None:
                out.append(f"{key} = {_toml(getattr(value, 'value', value))}")
        out.append("")
    training = settings.training
    if training is not None:
        out.append("[training]")
        values = {
            "base_model": recorded.get("base_model", training.base_model),
            "adapter": (recorded.get("adapter") or "full") if recorded else training.adapter.value,
            "epochs": recorded.get("num_epochs", training.epochs),
            "learning_rate": recorded.get("learning_rate", training.learning_rate),
            "sequence_len": recorded.get("sequence_len", training.sequence_len),
        }
        if not is_hub_id(str(values["base_model"])):
            values["base_model"] = Path(str(values["base_model"])).name
        out += [f"{key} = {_toml(value)}" for key, value in values.items()]
        extra = {
            k: v for k, v in training.axolotl_extra.items() if k in EXTRA_KEYS and _extra_ok(v)
        }
        if extra:
            out.append("\n[training.axolotl_extra]")
            out += [f"{key} = {_toml(extra[key])}" for key in sorted(extra)]
        out.append("")
    pipeline = settings.pipeline
    out.append("[pipeline]")
    for field in attrs.fields(type(pipeline)):
        value = getattr(pipeline, field.name)
        if isinstance(value, bool | int | float | str):
            out.append(f"{field.name} = {_toml(value)}")
    return "\n".join(out) + "\n"


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def render_card(inputs: CardInputs) -> str:
    """The card's text (blocking: reads the run's files)."""
    settings, run_dir = inputs.settings, inputs.run_dir
    recorded = _axolotl(run_dir)
    training = settings.training
    base = recorded.get("base_model") or (training.base_model if training else None)
    adapter = (
        recorded.get("adapter")
        if recorded
        else (
            None if training is None or training.adapter.value == "full" else training.adapter.value
        )
    )
    adapter = adapter if adapter in ("lora", "qlora") else None
    gguf = any(name.endswith(".gguf") for name in inputs.files)
    parent = settings.roles.parent.model
    train_n = _lines(run_dir / "data" / "train.jsonl")
    eval_n = _lines(run_dir / "data" / "eval.jsonl")
    how = (
        "fully fine-tuned"
        if adapter is None
        else f"fine-tuned ({'LoRA' if adapter == 'lora' else 'QLoRA'})"
    )
    subject = _shown(str(base)) if base else "A base model"
    count = (
        f"on {train_n} question{'' if train_n == 1 else 's'} answered by {cell(parent)}."
        if train_n
        else f"on answers from {cell(parent)}."
    )
    reasoning = _reasoning_kept(run_dir / "data" / "train.jsonl")
    kept = {
        True: "The child learned the parent's answers and reasoning.",
        False: "The child learned the parent's answers (without its reasoning).",
        None: "The child learned from the parent's answers.",
    }[reasoning]
    if reasoning and training is not None and template_warning(training) is not None:
        kept = (
            "The child learned the parent's answers. The training data carried the parent's "
            "reasoning too, but the chat template in use may not render it, so it may have "
            "been left out of training."
        )
    if inputs.dataset is not None:
        url = f"{inputs.hub_url.rstrip('/')}/datasets/{inputs.dataset}"
        kept += f" The training data is on the Hub: [{inputs.dataset}]({url})."
    summary = local_summary(run_dir)
    rows: list[tuple[str, str]] = [("Parent model", cell(parent))]
    rows.append(("Generator model", cell(settings.roles.generator.model)))
    if settings.roles.judge is not None:
        rows.append(("Judge model", cell(settings.roles.judge.model)))
    if base:
        rows.append(("Base model", cell(_shown(str(base)))))
    rows.append(
        ("Adapter", {"lora": "LoRA", "qlora": "QLoRA", None: "none (full fine-tune)"}[adapter])
    )
    if train_n is not None:
        rows.append(("Examples", f"{train_n} train, {eval_n or 0} eval"))
    for name, key in (
        ("Epochs", "num_epochs"),
        ("Learning rate", "learning_rate"),
        ("Sequence length", "sequence_len"),
    ):
        if key in recorded:
            rows.append((name, cell(str(recorded[key]))))
    last = summary.last_train
    losses = []
    if last is not None and last.loss is not None:
        losses.append(f"{last.loss:.2f} train")
    if summary.eval_loss is not None:
        losses.append(f"{summary.eval_loss:.2f} eval")
    if losses:
        rows.append(("Final loss", ", ".join(losses)))
    seconds = _training_seconds(run_dir / "metrics.jsonl")
    if seconds is not None:
        rows.append(("Training time", duration(seconds)))
    text = reproduce(settings, recorded)
    template = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    ).from_string(resources.files("overbrainer.hub").joinpath("card.md.j2").read_text("utf-8"))
    card = template.render(
        front_matter=front_matter(
            str(base) if base else None, adapter, inputs.license, gguf, inputs.dataset
        ),
        repo=inputs.repo,
        intro=f"{subject} {how} {count}",
        usage=_usage(inputs.repo, inputs.files, str(base) if base else None, adapter is None),
        kept=kept,
        rows=rows,
        topics=[(cell(t.name), cell(t.description or "")) for t in settings.topics],
        compare=compare_text(run_dir),
        bench=bench_text(run_dir),
        runpod=runpod_line(run_dir),
        fence=_fence(text),
        reproduce=text,
        marker=MARKER,
    )
    return re.sub(r"\n{3,}", "\n\n", card)
