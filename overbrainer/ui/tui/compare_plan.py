"""The compare confirmation (§D PrepareCompare): the plan of `overbrainer compare`, and on a
Runpod target the price of its new pod, read before anything paid starts."""

from __future__ import annotations

import os

import attrs
import trio

from overbrainer.compare.plan import ComparePlan, plan_compare
from overbrainer.config import load_settings
from overbrainer.config.settings import Settings
from overbrainer.flows.compare import check_target
from overbrainer.project.directory import Project
from overbrainer.targets import kind_of
from overbrainer.targets import pod_words as pod_words
from overbrainer.training import Runs

JUDGE_ONCE = "the judge is called once per question"
JUDGE_TWICE = "the judge is called twice per question (both orders: judge_both_orders)"


@attrs.frozen
class PreparedCompare:
    """The run the compare will use and the confirmation's lines."""

    run_id: str
    lines: tuple[str, ...]


def confirm_lines(plan: ComparePlan, settings: Settings, quote: str | None) -> tuple[str, ...]:
    """The confirmation's lines: run and GGUF, questions and target, the machine's price (a
    new pod's), the judge."""
    run = plan.record
    lines = [f"run {run.id}, {plan.export.file}"]
    if plan.base is not None:
        lines.append(f"and its base model ([compare] include_base), {plan.base.file}")
    lines.append(f"{len(plan.questions)} questions of data/eval.jsonl, on target `{run.target}`")
    if quote is not None:
        lines.append(quote)
    judge = JUDGE_TWICE if settings.compare.judge_both_orders else JUDGE_ONCE
    if plan.base is not None:
        judge += ", against the parent and again against the base"
    lines.append(judge)
    lines.append("y compares, n or Esc does not")
    return tuple(lines)


async def prepare_compare(project: Project, run_id: str | None) -> PreparedCompare:
    """Plan the compare of `run_id` (the newest exported run when None) and price its pod;
    OverbrainerError when the compare would be refused."""
    settings = await trio.to_thread.run_sync(load_settings, project.root, dict(os.environ))
    runs = Runs(project.runs)
    eval_path = project.data / "eval.jsonl"
    plan = await trio.to_thread.run_sync(
        plan_compare, runs, eval_path, run_id, None, None, settings.compare.include_base
    )
    run = plan.record
    check_target(settings, run.id, run.target, keep_pod=False)
    target = settings.targets.get(run.target)
    quote = None
    if target is not None:
        quote = await kind_of(target).quote(
            settings, target, runs.dir_of(run.id) / plan.export.file
        )
    return PreparedCompare(run.id, confirm_lines(plan, settings, quote))
