"""The dataset card (README.md) of `push --dataset`: front matter the Hub reads, then the facts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import attrs

from overbrainer import __version__
from overbrainer.config.settings import Settings
from overbrainer.hub.card import MARKER, cell, scalar
from overbrainer.storage import HistoryRecord

OTHER_LICENSE = "other"
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


@attrs.frozen
class DatasetFiles:
    """The dataset's files by split (`train`, `eval`): repo paths, and examples per topic."""

    paths: tuple[tuple[str, str], ...]
    """(split, repo path) in the order of the card's `data_files`."""
    counts: dict[str, Counter[str]]
    """Split → examples per topic."""

    def total(self, split: str) -> int:
        """The examples of one split."""
        return sum(self.counts.get(split, Counter()).values())


def count_topics(path: Path) -> Counter[str]:
    """Examples per topic in a JSONL file of examples (blocking; unreadable lines are skipped)."""
    counts: Counter[str] = Counter()
    with open(path, encoding="utf-8") as file:
        for line in file:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and isinstance(item.get("topic"), str):
                counts[item["topic"]] += 1
    return counts


def size_category(count: int) -> str:
    """The Hub's `size_categories` bucket for a number of examples."""
    for limit, name in _SIZES:
        if count < limit:
            return name
    return "n>1M"


def front_matter(license_: str, files: DatasetFiles, pretty_name: str) -> str:
    """The YAML front matter: license, task categories, tags, size and one config of splits."""
    size = size_category(sum(files.total(split) for split, _ in files.paths))
    lines = [
        f"license: {scalar(license_)}",
        f"pretty_name: {scalar(pretty_name)}",
        "task_categories:",
        "- text-generation",
        "- question-answering",
        "tags:",
        "- overbrainer",
        "- distillation",
        "- synthetic",
        "size_categories:",
        f"- {scalar(size)}",
        "configs:",
        "- config_name: default",
        "  data_files:",
    ]
    for split, path in files.paths:
        lines += [f"  - split: {split}", f"    path: {scalar(path)}"]
    return "\n".join(lines)


def _rows(settings: Settings, files: DatasetFiles, split: HistoryRecord | None) -> list[str]:
    rows = [
        f"| Parent model (answers) | {cell(settings.roles.parent.model)} |",
        f"| Generator model (subtopics, questions) | {cell(settings.roles.generator.model)} |",
        f"| Examples | {files.total('train')} train, {files.total('eval')} eval |",
    ]
    if split is not None and split.split is not None:
        rows.append(
            f"| Left out by the split | {split.excluded} excluded (truncated, refused or empty "
            f"answers, and any filter below), {split.split.orphaned} orphaned |"
        )
    quality = settings.quality
    if quality.judge is not None:
        rows.append(
            f"| Quality filter | answers scored by {cell(quality.judge.model)} from 1 to 10; "
            f"those under {quality.min_score} left out |"
        )
    if quality.decontaminate:
        names = ", ".join(f"`{cell(Path(name).name)}`" for name in quality.decontaminate)
        rows.append(
            f"| Decontamination | questions sharing {quality.ngram_overlap:g} of their word "
            f"{quality.ngram}-grams with {names} left out |"
        )
    made = f"overbrainer {__version__}"
    if split is not None:
        made += f", split on {split.ended_at[:10]}"
    rows.append(f"| Made with | {made} |")
    return rows


def render_dataset_card(
    settings: Settings,
    repo: str,
    files: DatasetFiles,
    split: HistoryRecord | None,
) -> str:
    """The card's text from the settings, the files' counts and the last split's history line."""
    license_ = settings.hub.dataset_license or OTHER_LICENSE
    parent = cell(settings.roles.parent.model)
    out = [
        "---",
        front_matter(license_, files, settings.project.name),
        "---",
        "",
        f"# {repo}",
        "",
        f"Questions and answers distilled from {parent} with "
        "[overbrainer](https://github.com/nayrosk/overbrainer), to fine-tune a small model on. "
        "Each line is one example: `messages` (the question, then the parent's answer, with "
        "its reasoning when kept), its `topic` and `subtopic`, and how it was made (`meta`).",
        "",
        "## Load it",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'dataset = load_dataset("{repo}")',
        "```",
        "",
        "## How it was made",
        "",
        "| | |",
        "|---|---|",
        *_rows(settings, files, split),
        "",
    ]
    topics = {topic.name: topic.description or "" for topic in settings.topics}
    # Topics since removed from the configuration still have examples in the files.
    for counted in files.counts.values():
        for name in sorted(counted):
            topics.setdefault(name, "")
    if topics:
        out += ["Topics:", "", "| topic | description | train | eval |", "|---|---|---|---|"]
        for name, description in topics.items():
            train = files.counts.get("train", Counter())[name]
            eval_ = files.counts.get("eval", Counter())[name]
            out.append(f"| {cell(name)} | {cell(description)} | {train} | {eval_} |")
        out.append("")
    out += ["## License", ""]
    if settings.hub.dataset_license is None:
        out.append(
            "No license was chosen for this dataset (`[hub] dataset_license`), so it says "
            f"`{OTHER_LICENSE}`. The answers come from {parent}: check its provider's terms "
            "before you reuse them."
        )
    else:
        out.append(f"`{cell(license_)}`.")
    out += ["", "---", "", "Made with [overbrainer](https://github.com/nayrosk/overbrainer).", ""]
    return "\n".join(out) + MARKER + "\n"
