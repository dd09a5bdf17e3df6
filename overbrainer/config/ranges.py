"""Checks past the reference's: role prices, targets, export, compare, metrics, base URLs.

They run after the reference's ordered checks (`validate.check`, which also holds the
`[training]` checks); each message names its key and never quotes its value.
"""

from __future__ import annotations

import ipaddress
import math
import re

import httpx2

from overbrainer.config import settings as s
from overbrainer.config.target_settings import settings_kind

U64_LIMIT = 2**64
# The shape of the Hub's license IDs (`apache-2.0`, `cc-by-nc-sa-4.0`, `other`, `llama3.1`).
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]{0,63}")


def parse_listen(text: str) -> tuple[str, int] | None:
    """`IP:PORT` (IPv6 in brackets) as host and port, or None when it is not such a literal."""
    host, colon, port = text.rpartition(":")
    if not colon or not re.fullmatch(r"[0-9]{1,5}", port) or int(port) > 65535:
        return None
    try:
        if host.startswith("[") and host.endswith("]"):
            return str(ipaddress.IPv6Address(host[1:-1])), int(port)
        return str(ipaddress.IPv4Address(host)), int(port)
    except ValueError:
        return None


_OLLAMA_WORD = re.compile(r"[A-Za-z0-9_]")


def _ollama_part(text: str, kind: str) -> bool:
    limit = 350 if kind == "host" else 80
    if not 1 <= len(text) <= limit or not _OLLAMA_WORD.match(text[0]):
        return False
    extra = "-" + ("" if kind == "namespace" else ".") + (":" if kind == "host" else "")
    return all(_OLLAMA_WORD.match(c) or c in extra for c in text)


def is_ollama_name(name: str) -> bool:
    """Whether `name` is `[host/][namespace/]model[:tag]` as Ollama accepts it."""
    rest, tag = name, None
    colon, slash = name.rfind(":"), name.rfind("/")
    if colon >= 0 and colon > slash:
        rest, tag = name[:colon], name[colon + 1 :]
    parts = rest.rsplit("/", 2) if rest.count("/") >= 2 else rest.split("/")
    if len(parts) == 3:
        host, namespace, model = parts
        host = host.split("://", 1)[1] if "://" in host else host
    elif len(parts) == 2:
        host, (namespace, model) = None, parts
    else:
        host, namespace, model = None, None, parts[0]
    return (
        _ollama_part(model, "model")
        and (tag is None or _ollama_part(tag, "tag"))
        and (namespace is None or _ollama_part(namespace, "namespace"))
        and (host is None or _ollama_part(host, "host"))
    )


def _secure_url(url: str) -> bool:
    """https, or http on a loopback host (a local stub)."""
    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError):
        return False
    if parsed.scheme == "https" and parsed.host:
        return True
    if parsed.scheme != "http":
        return False
    if parsed.host == "localhost":
        return True
    try:
        return ipaddress.ip_address(parsed.host).is_loopback
    except ValueError:
        return False


def _roles(cfg: s.Settings) -> list[str]:
    out: list[str] = []
    for name, role in cfg.roles.all():
        for key in ("price_in", "price_out"):
            value = getattr(role, key)
            if value is not None and not (math.isfinite(value) and value >= 0):
                out.append(f"roles.{name}.{key}: must be at least 0")
        if (role.price_in is None) != (role.price_out is None):
            out.append(f"roles.{name}: price_in and price_out must be set together")
    return out


def _pipeline(cfg: s.Settings) -> list[str]:
    out: list[str] = []
    if cfg.pipeline.max_retries < 0:
        out.append("pipeline.max_retries: must be at least 0")
    if not 0 <= cfg.pipeline.seed < U64_LIMIT:
        out.append("pipeline.seed: must be in [0, 2^64)")
    return out


MAX_RECONNECT_SECS = 86400
"""The longest outage a follower may be told to ride out: a day."""


def _targets(cfg: s.Settings) -> list[str]:
    out: list[str] = []
    for name, target in cfg.targets.items():
        kind = settings_kind(target)
        budget = kind.reconnect_secs(target)
        if not (math.isfinite(budget) and 0 < budget <= MAX_RECONNECT_SECS):
            out.append(f"targets.{name}.reconnect_secs: must be in (0, {MAX_RECONNECT_SECS}]")
        out += kind.range_problems(name, target)
    return out


def _export(cfg: s.Settings) -> list[str]:
    out: list[str] = []
    if cfg.export.quantize not in s.QUANTIZE_TYPES:
        out.append(f"export.quantize: must be one of {', '.join(s.QUANTIZE_TYPES)}")
    name = cfg.export.ollama_name
    if name is not None and not is_ollama_name(name):
        out.append(
            "export.ollama_name: must be an Ollama model name ([host/][namespace/]model[:tag])"
        )
    return out


MAX_COMPARE_CONCURRENCY = 64


def _compare(cfg: s.Settings) -> list[str]:
    c = cfg.compare
    out = [
        f"compare.{key}: must be at least 0"
        for key in ("parent_price_in", "parent_price_out", "child_price_per_hour")
        if (value := getattr(c, key)) is not None and not (math.isfinite(value) and value >= 0)
    ]
    if c.max_tokens < 1:
        out.append("compare.max_tokens: must be at least 1")
    if not 0 <= c.temperature <= 2:
        out.append("compare.temperature: must be in [0, 2]")
    if c.server_start_secs < 1:
        out.append("compare.server_start_secs: must be at least 1")
    if not 1 <= c.concurrency <= MAX_COMPARE_CONCURRENCY:
        out.append(f"compare.concurrency: must be in [1, {MAX_COMPARE_CONCURRENCY}]")
    return out


BENCH_TASK = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}")


def _bench(cfg: s.Settings) -> list[str]:
    b = cfg.bench
    out = []
    if not all(BENCH_TASK.fullmatch(task) for task in b.tasks):
        out.append("bench.tasks: each must be an lm-eval task name (letters, digits, _ . : -)")
    if len(set(b.tasks)) != len(b.tasks):
        out.append("bench.tasks: names a task twice")
    parts = b.include_path.replace("\\", "/").split("/")
    if not b.include_path or b.include_path.startswith("/") or ".." in parts:
        out.append("bench.include_path: must be a folder inside the project, such as bench_tasks")
    if b.limit is not None and b.limit < 1:
        out.append("bench.limit: must be at least 1")
    if b.num_fewshot is not None and not 0 <= b.num_fewshot <= 64:
        out.append("bench.num_fewshot: must be in [0, 64]")
    if not b.lm_eval.strip() or "\n" in b.lm_eval:
        out.append("bench.lm_eval: must be a command, such as lm_eval")
    if b.model not in s.BENCH_MODELS:
        out.append(f"bench.model: must be one of {', '.join(s.BENCH_MODELS)}")
    if b.max_tokens < 1:
        out.append("bench.max_tokens: must be at least 1")
    return out


def _quality(cfg: s.Settings) -> list[str]:
    q = cfg.quality
    out = []
    if q.judge is not None and q.judge.provider not in cfg.providers:
        out.append(f"quality.judge: unknown provider `{q.judge.provider}`")
    if q.judge is not None and q.judge.max_tokens < 1:
        out.append("quality.judge.max_tokens: must be at least 1")
    if not 1 <= q.min_score <= 10:
        out.append("quality.min_score: must be in [1, 10]")
    if not 1 <= q.ngram <= 64:
        out.append("quality.ngram: must be in [1, 64]")
    if not (math.isfinite(q.ngram_overlap) and 0 < q.ngram_overlap <= 1):
        out.append("quality.ngram_overlap: must be in (0, 1]")
    return out


def _hub(cfg: s.Settings) -> list[str]:
    license_ = cfg.hub.dataset_license
    if license_ is not None and not LICENSE_ID.fullmatch(license_):
        return ["hub.dataset_license: must be a Hub license ID such as `cc-by-4.0`"]
    return []


def _web_url(url: str) -> bool:
    """`http(s)://host[:port][/path]`, nothing else (no query, fragment or other scheme)."""
    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError):
        return False
    return (
        parsed.scheme in ("http", "https")
        and "://" in url
        and bool(parsed.host)
        and "%" not in parsed.host
        and (parsed.port is None or 1 <= parsed.port <= 65535)
        and not parsed.query
        and not parsed.fragment
    )


def _endpoints(cfg: s.Settings) -> list[str]:
    out: list[str] = []
    for name, provider in cfg.providers.items():
        if provider.base_url is not None and not _web_url(provider.base_url):
            out.append(
                f"providers.{name}.base_url: must be http(s)://host[:port][/path], "
                "such as https://openrouter.ai/api/v1"
            )
    if cfg.metrics.listen is not None and parse_listen(cfg.metrics.listen) is None:
        out.append(
            "metrics.listen: must be an IP address and port, such as 127.0.0.1:9464 or [::1]:9464"
        )
    for key, url in (("runpod.base_url", cfg.runpod.base_url), ("hub.base_url", cfg.hub.base_url)):
        if url is not None and not _secure_url(url):
            out.append(f"{key}: must be https, or http on a loopback host")
    return out


def check_sections(cfg: s.Settings) -> list[str]:
    """Problems of the role prices and of the sections after `[training]`, in file order."""
    return (
        _roles(cfg)
        + _pipeline(cfg)
        + _targets(cfg)
        + _export(cfg)
        + _compare(cfg)
        + _bench(cfg)
        + _quality(cfg)
        + _hub(cfg)
        + _endpoints(cfg)
    )
