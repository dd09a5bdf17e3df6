"""`WireProtocol`: what a provider's wire protocol decides, behind one small protocol."""

from __future__ import annotations

from typing import Protocol as TypingProtocol

import httpx2

from overbrainer.config.dialects import DialectSpec
from overbrainer.config.settings import Settings
from overbrainer.llm.http import HttpClient, Observe
from overbrainer.llm.types import Completion, CompletionRequest

EMBEDDED_BASE_URL = "http://stub.invalid/v1"
"""The base URL of an embedded protocol's requests: `.invalid` never resolves, nothing dials it."""


class WireProtocol(TypingProtocol):
    """One wire protocol (openai, anthropic, stub): headers, bodies, replies, and its transport.

    Each lives in its own module under `llm/` and is found through `llm/protocols.py`.
    """

    @property
    def embedded(self) -> bool:
        """Whether it is answered inside the process: no base URL, no key, no network."""
        ...

    @property
    def embeddings(self) -> bool:
        """Whether it has an embeddings endpoint (`embed` raises `Unsupported` otherwise)."""
        ...

    @property
    def raw_reasoning(self) -> bool:
        """Whether an answer may carry the model's raw reasoning at all."""
        ...

    def headers(self, api_key: str | None) -> tuple[dict[str, str], dict[str, str]]:
        """The plain headers of every request, and the secret ones that carry `api_key`."""
        ...

    def transport(self, settings: Settings, provider: str) -> httpx2.AsyncBaseTransport | None:
        """The in-process transport of `provider` when `embedded`; None means the network."""
        ...

    async def complete(
        self,
        http: HttpClient,
        dialect: DialectSpec,
        model: str,
        request: CompletionRequest,
        observe: Observe | None,
    ) -> Completion:
        """One attempt at `request` for `model`, shaped by the provider's `dialect`; `observe`
        sees the reply's rate limits."""
        ...

    async def embed(self, http: HttpClient, model: str, inputs: list[str]) -> list[list[float]]:
        """One vector per input, in input order; `Unsupported` where the protocol has none."""
        ...
