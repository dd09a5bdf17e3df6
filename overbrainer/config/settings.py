"""The frozen configuration classes: one per `overbrainer.toml` section, reference defaults."""

from __future__ import annotations

import enum

import attrs

from overbrainer.config.dialects import BatchApi as BatchApi
from overbrainer.config.dialects import Dialect as Dialect
from overbrainer.config.dialects import DialectSource, DialectSpec
from overbrainer.config.dialects import Protocol as Protocol
from overbrainer.config.dialects import resolve as resolve_dialect
from overbrainer.config.secrets import Secret
from overbrainer.config.target_settings import RECONNECT_SECS as RECONNECT_SECS
from overbrainer.config.target_settings import TargetSettings
from overbrainer.config.target_settings import reconnect_secs as reconnect_secs


class Effort(enum.Enum):
    """`reasoning_effort` of a role; `none` is the reference's newer, undocumented value."""

    NONE = "none"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Adapter(enum.Enum):
    """`[training] adapter`: LoRA, 4-bit QLoRA or full fine-tuning."""

    LORA = "lora"
    QLORA = "qlora"
    FULL = "full"


class Runtime(enum.Enum):
    """How a local or SSH target runs Axolotl."""

    NATIVE = "native"
    DOCKER = "docker"


class Engine(enum.Enum):
    """Container engine of the `docker` runtime."""

    DOCKER = "docker"
    PODMAN = "podman"


class SshClient(enum.Enum):
    """SSH client of a target; `OVERBRAINER_SSH_CLIENT` overrides it where it is used."""

    OPENSSH = "openssh"
    BUILTIN = "builtin"


DEFAULT_MAX_TOKENS = 16384
DEFAULT_BATCH_DISCOUNT = 0.5


DEFAULT_IMAGE = (
    "axolotlai/axolotl:0.19.0-py3.12-cu130-2.12.1"
    "@sha256:9de7c7a5b8830480a7d2eb3b6d49759586615f5f8eb1126d5df29f8bd9fa324b"
)
DEFAULT_RUNPOD_IMAGE = (
    "axolotlai/axolotl-cloud-term:0.19.0-py3.12-cu130-2.12.1"
    "@sha256:f7b94da82913920a003e28e091d8528f57f76da7360fca87e95faf62fa32a680"
)
DEFAULT_RUNPOD_VENV = "/workspace/axolotl-venv"
DEFAULT_RUNPOD_BASE_URL = "https://api.runpod.io/v2"
DEFAULT_HUB_BASE_URL = "https://huggingface.co"
DEFAULT_WORKDIR = "overbrainer"
DEFAULT_QUANTIZE = "Q4_K_M"
QUANTIZE_TYPES = (
    "Q4_K_M",
    "Q4_K_S",
    "Q5_K_M",
    "Q5_K_S",
    "Q6_K",
    "Q8_0",
    "Q3_K_M",
    "Q2_K",
    "F16",
    "BF16",
)


@attrs.frozen
class Project:
    """`[project]`: the project's identity."""

    name: str


@attrs.frozen
class Topic:
    """One `[[topics]]` entry: what to generate questions about."""

    name: str
    subtopics: int
    questions_per_subtopic: int
    description: str | None = None


@attrs.frozen
class Provider:
    """`[providers.<name>]`: an endpoint; `base_url` and `api_key` come only from the environment.

    `api_key` is a `Secret` (literal or `vault:` reference), resolved with
    `overbrainer.config.secrets.resolve_secret` only by the command that builds a client.
    A `stub` provider needs neither and ignores both. `batch_discount` (ours): the batch API's
    price as a fraction of the normal one; None means the default (`discount`). `batch_api`
    (ours): which batch API it speaks; None means its dialect's (`batch_kind`). `dialect`
    (ours): which API it really is; None means detected from `base_url` (`spec`).
    """

    protocol: Protocol
    base_url: str | None = None
    api_key: Secret | None = None
    batch_discount: float | None = None
    batch_api: BatchApi | None = None
    dialect: Dialect | None = None

    @property
    def key(self) -> Secret | None:
        """The key to send, or None: a blank one (`API_KEY=` in .env) is no key, as in the
        reference, and its requests go without an auth header."""
        return self.api_key if self.api_key is not None and self.api_key.text.strip() else None

    @property
    def spec(self) -> DialectSpec:
        """The provider's dialect: `dialect`, else detected from `base_url`, else the default."""
        return resolve_dialect(self.protocol, self.base_url, self.dialect)[0]

    @property
    def dialect_source(self) -> DialectSource:
        """Whether the dialect was set, detected from the base URL, or the protocol's default."""
        return resolve_dialect(self.protocol, self.base_url, self.dialect)[1]

    @property
    def discount(self) -> float | None:
        """The batch price's fraction of the normal price; None: no batch API."""
        if self.batch_discount is not None:
            return self.batch_discount
        return DEFAULT_BATCH_DISCOUNT if self.batch_kind is not None else None

    @property
    def batch_kind(self) -> BatchApi | None:
        """The batch API the provider speaks: `batch_api`, else its dialect's; None for `stub`."""
        if self.batch_api is not None:
            return self.batch_api
        if self.protocol is Protocol.STUB:
            return None
        return self.spec.batch_api


@attrs.frozen
class Role:
    """A role of `[roles]` (generator, parent, embedder, judge): which model, and how to ask it.

    - `provider`: a key of `Settings.providers`; `model`: sent as-is.
    - `reasoning`: ask for the model's reasoning. `reasoning_effort`: None means the protocol's
      default (openai sends `medium` when reasoning is on). `thinking_budget`: anthropic only,
      None means adaptive thinking.
    - `max_tokens`: cap on generated tokens, reasoning included. `temperature`: None = provider's.
    - `price_in` / `price_out` (ours): USD per million input / output tokens, used when the
      provider's model listing has no price for `model`; both or neither.
    - `batch` (ours, parent only): answer through the provider's batch API.
    """

    provider: str
    model: str
    reasoning: bool = False
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float | None = None
    reasoning_effort: Effort | None = None
    thinking_budget: int | None = None
    price_in: float | None = None
    price_out: float | None = None
    batch: bool = False


@attrs.frozen
class Roles:
    """`[roles]`: generator and parent are required; embedder and judge optional."""

    generator: Role
    parent: Role
    embedder: Role | None = None
    judge: Role | None = None

    def all(self) -> list[tuple[str, Role]]:
        """Every configured role with its name, in the order generator, parent, embedder, judge."""
        named = [("generator", self.generator), ("parent", self.parent)]
        named += [
            (name, role)
            for name, role in (("embedder", self.embedder), ("judge", self.judge))
            if role
        ]
        return named


@attrs.frozen
class Pipeline:
    """`[pipeline]`: the reference's tunables plus our `max_cost_usd`, `drain_secs` and the
    adaptive concurrency knobs (`adaptive`, `adaptive_decrease`, `adaptive_pause_secs`,
    `adaptive_window_secs`) and `batch_poll_secs`, the wait between two looks at a running batch."""

    concurrency: int = 8
    max_retries: int = 5
    dedup_threshold: float = 0.8
    eval_ratio: float = 0.1
    seed: int = 42
    include_system_prompt: bool = False
    embedding_threshold: float = 0.9
    question_batch_size: int = 10
    request_timeout_secs: int = 600
    max_cost_usd: float | None = None
    drain_secs: float = 30.0
    adaptive: bool = True
    adaptive_decrease: float = 0.75
    adaptive_pause_secs: float = 1.0
    adaptive_window_secs: float | None = None
    """How long a provider's rate-limit window lasts when its replies state no reset; None: its
    dialect's `unstated_reset_secs`, else 60 s."""
    batch_poll_secs: float = 60.0


@attrs.frozen
class Training:
    """`[training]`: present means `run` trains after `split` (see reference-training.md §1.1)."""

    target: str
    base_model: str
    adapter: Adapter
    epochs: int = 3
    learning_rate: float = 2e-4
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    sequence_len: int = 4096
    micro_batch_size: int = 2
    gradient_accumulation_steps: int = 4
    optimizer: str = "adamw_torch_fused"
    lr_scheduler: str = "cosine"
    sample_packing: bool = True
    evals_per_epoch: int = 4
    saves_per_epoch: int = 1
    merge: bool = False
    hub_model_id: str | None = None
    axolotl_extra: dict[str, object] = attrs.field(factory=dict)


@attrs.frozen
class ListOrAuto:
    """A list of strings, or `auto` (chosen when the run starts); the default is an empty list."""

    auto: bool = False
    items: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "auto" if self.auto else ", ".join(self.items)


@attrs.frozen
class Runpod:
    """`[runpod]`, env only: the API key (a Secret) and the REST base URL."""

    api_key: Secret | None = None
    base_url: str | None = None

    @property
    def url(self) -> str:
        """The base URL to use: the configured one or the reference's default."""
        return self.base_url or DEFAULT_RUNPOD_BASE_URL


@attrs.frozen
class Export:
    """`[export]`: GGUF export with llama.cpp and an optional Ollama model."""

    after_training: bool = False
    quantize: str = DEFAULT_QUANTIZE
    ollama_name: str | None = None


@attrs.frozen
class Hub:
    """`[hub]`: push to the Hugging Face Hub; `base_url` only from the environment."""

    repo: str | None = None
    private: bool = True
    after_training: bool = False
    base_url: str | None = None
    dataset_repo: str | None = None
    """Ours: where `push --dataset` goes (else `<your user>/<project name>-data`)."""
    dataset_license: str | None = None
    """Ours: the dataset card's `license` (a Hub license ID); unset gives `other` with a note."""

    @property
    def url(self) -> str:
        """The Hub base URL to use: the configured one or the reference's default."""
        return self.base_url or DEFAULT_HUB_BASE_URL


@attrs.frozen
class Metrics:
    """`[metrics]`: the Prometheus endpoint, off unless `listen = "IP:PORT"` is set.

    `listen` is kept as written (validated: IP literal, IPv6 in brackets, port 0..65535);
    `host` and `port` give its parts.
    """

    listen: str | None = None

    @property
    def host(self) -> str | None:
        """The IP part of `listen`, brackets removed, or None when off."""
        if self.listen is None:
            return None
        return self.listen.rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int | None:
        """The port part of `listen`, or None when off."""
        return None if self.listen is None else int(self.listen.rsplit(":", 1)[1])


@attrs.frozen
class Compare:
    """`[compare]`: the child-vs-parent comparison; prices in USD per million tokens / per hour."""

    parent_price_in: float | None = None
    parent_price_out: float | None = None
    child_price_per_hour: float | None = None
    max_tokens: int = 4096
    temperature: float = 0.0
    server_start_secs: int = 300
    image: str | None = None
    concurrency: int = 1
    """Ours: also measure the child under this many parallel requests (1: serial only)."""
    judge_both_orders: bool = False
    """Ours: judge each question in both orders; count a verdict only when both agree."""
    include_base: bool = False
    """Ours: also ask the run's base model (its GGUF) and judge the child against it."""


BENCH_MODELS = ("local-completions", "local-chat-completions")
"""The lm-evaluation-harness models that talk to llama-server's OpenAI-compatible API."""


@attrs.frozen
class Bench:
    """`[bench]` (ours): lm-evaluation-harness tasks run against the served child and its base.

    `tasks` are lm-eval task names (built in, or defined by the YAML files in `include_path`, a
    project folder sent with the job); `limit` caps the samples per task; `lm_eval` is the
    command on the target; `model` the lm-eval model type; `max_tokens` the generation cap.
    """

    tasks: tuple[str, ...] = ()
    include_path: str = "bench_tasks"
    limit: int | None = None
    num_fewshot: int | None = None
    lm_eval: str = "lm_eval"
    model: str = "local-completions"
    max_tokens: int = 256
    log_samples: bool = True


@attrs.frozen
class Quality:
    """`[quality]` (ours): the judge that scores stored answers, and the split's decontamination.

    `judge` scores each answer from 1 to 10 (prompts/quality.txt); `split` leaves out answers
    scored under `min_score`. `decontaminate` names JSONL files of benchmark or eval questions
    (a `question` field per line): a stored question sharing at least `ngram_overlap` of its
    word `ngram`s with one of them is left out of train and eval.
    """

    judge: Role | None = None
    min_score: int = 7
    decontaminate: tuple[str, ...] = ()
    ngram: int = 8
    ngram_overlap: float = 0.5


@attrs.frozen
class Settings:
    """The whole resolved configuration: file, environment and defaults.

    `from_env` holds the dotted key paths whose value came from the environment
    (e.g. `"pipeline.concurrency"`, `"providers.openrouter.api_key"`).
    """

    project: Project
    roles: Roles
    topics: tuple[Topic, ...] = ()
    providers: dict[str, Provider] = attrs.field(factory=dict)
    pipeline: Pipeline = Pipeline()
    training: Training | None = None
    targets: dict[str, TargetSettings] = attrs.field(factory=dict)
    runpod: Runpod = Runpod()
    export: Export = Export()
    hub: Hub = Hub()
    metrics: Metrics = Metrics()
    compare: Compare = Compare()
    bench: Bench = Bench()
    quality: Quality = Quality()
    hf_token: Secret | None = None
    log: str | None = None
    from_env: frozenset[str] = frozenset()

    def provider_of(self, role: Role) -> Provider:
        """The provider a role names (validation guarantees it exists)."""
        return self.providers[role.provider]
