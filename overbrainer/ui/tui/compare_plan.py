"""The compare confirmation (§D PrepareCompare): the plan of `overbrainer compare`, and on a
Runpod target the price of its new pod, read before anything paid starts."""

from __future__ import annotations

import os

import attrs
import trio

from overbrainer.compare.plan import ComparePlan, plan_compare
from overbrainer.config import load_settings
from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Settings
from overbrainer.flows.compare import check_target
from overbrainer.project.directory import Project
from overbrainer.targets import PodPrice, kind_of, quote_pod
from overbrainer.training import Runs

JUDGE_ONCE = "the judge is called once per question"
JUDGE_TWICE = "the judge is called twice per question (both orders: judge_both_orders)"


@attrs.frozen
class PreparedCompare:
    """The run the compare will use and the confirmation's lines."""

    run_id: str
    lines: tuple[str, ...]


def pod_words(price: PodPrice) -> str:
    """The confirmation's pod line (§D): the cheapest type's price, the cap, or neither."""
    if price.per_hour is not None and price.gpu is not None:
        return (
            f"a new Runpod pod, at about ${price.per_hour:.2f}/h "
            f"({price.gpu}, the cheapest GPU type in stock)"
        )
    if price.per_hour is not None:
        return f"a new Runpod pod, at most ${price.per_hour:.2f}/h"
    return "a new Runpod pod, at the price picked when it starts"


def confirm_lines(plan: ComparePlan, settings: Settings, price: PodPrice | None) -> tuple[str, ...]:
    """The confirmation's lines: run and GGUF, questions and target, the pod, the judge."""
    run = plan.record
    lines = [
        f"run {run.id}, {plan.export.file}",
        f"{len(plan.questions)} questions of data/eval.jsonl, on target `{run.target}`",
    ]
    if price is not None:
        lines.append(pod_words(price))
    lines.append(JUDGE_TWICE if settings.compare.judge_both_orders else JUDGE_ONCE)
    lines.append("y compares, n or Esc does not")
    return tuple(lines)


async def prepare_compare(project: Project, run_id: str | None) -> PreparedCompare:
    """Plan the compare of `run_id` (the newest exported run when None) and price its pod;
    OverbrainerError when the compare would be refused."""
    settings = await trio.to_thread.run_sync(load_settings, project.root, dict(os.environ))
    runs = Runs(project.runs)
    eval_path = project.data / "eval.jsonl"
    plan = await trio.to_thread.run_sync(plan_compare, runs, eval_path, run_id, None)
    run = plan.record
    check_target(settings, run.id, run.target, keep_pod=False)
    target = settings.targets.get(run.target)
    price = None
    secret = settings.runpod.api_key
    if target is not None and kind_of(target).makes_pod and secret is not None:
        key = await resolve_secret(secret, "runpod.api_key")
        gguf = runs.dir_of(run.id) / plan.export.file
        price = await quote_pod(settings, target, key, gguf)
    return PreparedCompare(run.id, confirm_lines(plan, settings, price))
