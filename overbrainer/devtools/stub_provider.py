"""A scripted LLM provider on 127.0.0.1 speaking the OpenAI and Anthropic protocols.

Tests and benchmarks script it reply by reply (answers, reasoning fields, usage, finish
reasons, refusals, error statuses with `Retry-After`, delays, malformed bodies, dropped
connections, bodies cut midway, connection resets, replies without `usage`) and read back every
request it got. Without a script it answers like a tiny,
deterministic model, so `python -m overbrainer.devtools.stub_provider` can stand in for a real
provider in a demo of the whole pipeline.

It refuses what the real APIs refuse (400 with the provider's error object: no `model` or
`messages`, an unknown role or reasoning effort; 401 without the expected key), and its own
answers carry every field OpenAI's and Anthropic's descriptions require. The tests go further:
they install a `Contract` (`check_exchanges`) that checks every exchange against the published
descriptions and records what breaks them in `StubProvider.violations`.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import json
import math
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeAlias, TypeVar

import attrs
import trio
import xxhash

from overbrainer.model.error_groups import error_leaves, unwrapped
from overbrainer.net.http_server import Request, Response, serve_http

Json: TypeAlias = dict[str, "Json"] | list["Json"] | str | int | float | bool | None

JSON_HEADERS = (("content-type", "application/json"),)
CREATED = 1_767_225_600
"""The `created` time of every answer (2026-01-01, fixed so that replies are reproducible)."""
OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
ANTHROPIC_ROLES = frozenset({"user", "assistant"})
REASONING_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh", "max"})
EMBEDDING_DIMENSIONS = 64

_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "refusal": "refusal",
    "content_filter": "refusal",
}
_COUNT = re.compile(r"JSON array of (\d+) strings")
_SCORE_ASKED = '{"score": an integer from 1 to 10'
"""What the quality prompt (`prompts/quality.txt`) asks a reply to be."""
_QUOTED = re.compile(r'"([^"\n]{1,80})"')
_WORDS = [
    "caching",
    "errors",
    "threads",
    "memory",
    "tests",
    "logging",
    "parsing",
    "security",
    "performance",
    "networking",
    "serialization",
    "configuration",
    "deployment",
    "debugging",
    "profiling",
    "concurrency",
    "traits",
    "generics",
    "macros",
    "iterators",
    "closures",
    "modules",
    "packaging",
    "documentation",
    "benchmarks",
    "streams",
    "timeouts",
    "retries",
    "databases",
    "indexing",
    "migrations",
    "encoding",
    "validation",
    "scheduling",
    "recursion",
    "lifetimes",
    "pointers",
    "allocation",
    "ownership",
    "borrowing",
    "patterns",
]
_FORMS = (
    "How does {s} interact with {a}, {b} and {c}?",
    "Why would {s} fail when combined with {a}, {b} or {c}?",
    "What changes in {s} if {a} meets {b} under {c}?",
    "Compare {s} approaches for {a} against {b} given {c}.",
    "How would you debug {s} problems involving {a}, {b} and {c}?",
)


@attrs.define
class Reply:
    """One scripted reply; the defaults are a plain 200 answer."""

    content: str = "ok"
    reasoning: str | None = None
    reasoning_content: str | None = None
    reasoning_details: list[Json] | None = None
    thinking: str | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    usage: tuple[int, int] | None = (10, 5)
    """Input and output tokens; None leaves `usage` out of the reply, as some providers do."""
    delay: float = 0.0
    status: int = 200
    headers: dict[str, str] = attrs.field(factory=dict)
    body: bytes | None = None
    drop: bool = False
    echo_auth: bool = False
    """An error reply (`status`) whose message quotes the request's credential headers."""
    cut: bool = False
    """Send the head and half the body, then close the connection."""
    reset: bool = False
    """Answer nothing and reset the connection (TCP RST)."""
    off_contract: bool = False
    """A 200 answer the test shapes outside the API on purpose: a `Contract` does not check it."""

    @property
    def deliberate(self) -> bool:
        """Whether this reply is a scripted fault (an error, raw bytes, a cut or lost answer,
        no `usage`)."""
        return (
            self.off_contract
            or self.status != 200
            or self.body is not None
            or self.drop
            or self.reset
            or self.cut
            or self.usage is None
        )


@attrs.frozen
class Recorded:
    """A request the stub received: method, path, lower-case headers, decoded and raw body."""

    method: str
    path: str
    headers: dict[str, str]
    body_json: Json
    raw: bytes

    @property
    def prompt(self) -> str | None:
        """The text of the last user message, if any."""
        body = self.body_json if isinstance(self.body_json, dict) else {}
        messages = body.get("messages")
        for message in reversed(messages if isinstance(messages, list) else []):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else None
        return None

    @property
    def system(self) -> str | None:
        """The system prompt (OpenAI system message or Anthropic `system`), if any."""
        body = self.body_json if isinstance(self.body_json, dict) else {}
        system = body.get("system")
        if isinstance(system, str):
            return system
        messages = body.get("messages")
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("role") == "system":
                content = message.get("content")
                return content if isinstance(content, str) else None
        return None

    @property
    def is_completion(self) -> bool:
        """Whether this is a chat-completions or Messages request."""
        return self.path.endswith(("/chat/completions", "/messages"))


Responder = Callable[[Recorded], Reply | Awaitable[Reply]]


def _digest(*parts: str) -> int:
    return xxhash.xxh3_64_intdigest("\x1f".join(parts).encode())


def _subject(prompt: str) -> str:
    quoted = _QUOTED.findall(prompt)
    return quoted[-1] if quoted else "the topic"


def default_reply(request: Recorded) -> Reply:
    """What the stub answers unscripted: N distinct strings for a list prompt, else an answer.

    Replies depend only on the request, so a rerun of the same stage gets the same texts.
    """
    prompt = request.prompt or ""
    body = request.body_json if isinstance(request.body_json, dict) else {}
    found = _COUNT.search(prompt)
    tokens_in = max(1, len(prompt) // 4)
    if _SCORE_ASKED in prompt:
        # The quality judge's rubric: a score that depends only on the prompt, mostly good.
        score = 5 + _digest(prompt) % 6
        reason = f"A stand-in's grade: {score} of 10."
        return Reply(content=json.dumps({"score": score, "reason": reason}), usage=(tokens_in, 20))
    if found is not None or "response_format" in body:
        count = int(found.group(1)) if found is not None else 3
        subject = _subject(prompt)
        items = _list_items(prompt, subject, count, questions="question" in prompt.lower())
        return Reply(content=json.dumps(items), usage=(tokens_in, 12 * count))
    question = prompt.strip() or "the question"
    return Reply(
        content=f"Here is a careful answer to: {question}",
        reasoning=f"The user asks: {question} Let me reason about it step by step.",
        usage=(tokens_in, 60),
    )


def _list_items(prompt: str, subject: str, count: int, *, questions: bool) -> list[str]:
    items: list[str] = []
    seen: set[str] = set()
    k = 0
    while len(items) < count and k < count * 20:
        h = _digest(prompt, str(k))
        k += 1
        a, b, c = (_WORDS[(h >> shift) % len(_WORDS)] for shift in (0, 12, 24))
        if questions:
            item = _FORMS[(h >> 36) % len(_FORMS)].format(s=subject, a=a, b=b, c=c)
        else:
            item = f"{a.capitalize()} and {b} in {subject}"
        if item.lower() not in seen:
            seen.add(item.lower())
            items.append(item)
    return items


def default_embedding(text: str) -> list[float]:
    """A bag-of-words vector: texts sharing words point the same way."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[_digest(word) % EMBEDDING_DIMENSIONS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def _openai_body(reply: Reply, model: str, serial: int) -> Json:
    message: dict[str, Json] = {
        "role": "assistant",
        "content": reply.content,
        "refusal": reply.refusal,
    }
    if reply.reasoning is not None:
        message["reasoning"] = reply.reasoning
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    if reply.reasoning_details is not None:
        message["reasoning_details"] = reply.reasoning_details
    choice: dict[str, Json] = {
        "index": 0,
        "message": message,
        "finish_reason": reply.finish_reason,
        "logprobs": None,
    }
    body: dict[str, Json] = {
        "id": f"chatcmpl-stub-{serial}",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [choice],
    }
    if reply.usage is not None:
        tokens_in, tokens_out = reply.usage
        body["usage"] = {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        }
    return body


def _anthropic_body(reply: Reply, model: str, serial: int) -> Json:
    blocks: list[Json] = []
    if reply.thinking is not None:
        blocks.append({"type": "thinking", "thinking": reply.thinking, "signature": "stub"})
    blocks.append({"type": "text", "text": reply.content})
    body: dict[str, Json] = {
        "id": f"msg_stub_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": _ANTHROPIC_STOP.get(reply.finish_reason, reply.finish_reason),
        "stop_sequence": None,
    }
    if reply.usage is not None:
        tokens_in, tokens_out = reply.usage
        body["usage"] = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    return body


def openai_error(message: str, status: int, param: str | None = None) -> Response:
    """An error answer in OpenAI's shape (`{"error": {message, type, param, code}}`)."""
    kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}
    error: Json = {
        "message": message,
        "type": kind.get(status, "invalid_request_error" if status < 500 else "server_error"),
        "param": param,
        "code": None,
    }
    return _json_response({"error": error}, status)


def anthropic_error(message: str, status: int) -> Response:
    """An error answer in Anthropic's shape (`{"type": "error", "error": {type, message}}`)."""
    kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}
    error: Json = {"type": kind.get(status, "invalid_request_error"), "message": message}
    return _json_response({"type": "error", "error": error}, status)


def refusal(path: str, body: Json) -> tuple[str, str] | None:
    """What a real API refuses in a completion request: `(parameter, why)`, None if nothing."""
    anthropic = path.endswith("/messages")
    if not isinstance(body, dict):
        return "body", "the body must be a JSON object"
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return "model", "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages", "`messages` must be a non-empty array"
    roles = ANTHROPIC_ROLES if anthropic else OPENAI_ROLES
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in roles:
            return f"messages[{n}].role", f"invalid role {role!r}, expected one of {sorted(roles)}"
    if anthropic and not isinstance(body.get("max_tokens"), int):
        return "max_tokens", "max_tokens: field required"
    effort = body.get("reasoning_effort")
    if not anthropic and effort is not None and effort not in REASONING_EFFORTS:
        return "reasoning_effort", f"invalid value {effort!r}, expected {sorted(REASONING_EFFORTS)}"
    return None


def _json_response(
    value: Json, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    extra = tuple((headers or {}).items())
    return Response(status, json.dumps(value).encode(), JSON_HEADERS + extra)


def _echoed_auth(request: Recorded) -> str:
    """What a careless upstream says: the credentials it got, verbatim."""
    sent = [
        f"{name}: {request.headers[name]}"
        for name in ("authorization", "x-api-key")
        if name in request.headers
    ]
    return (
        f"upstream rejected the request with headers {'; '.join(sent)}"
        if sent
        else "no credentials"
    )


@attrs.define
class RateLimited:
    """A responder with a provider's per-window budget of requests (and tokens, if set).

    Windows are fixed, `window` seconds long, from the first request. Every reply carries
    OpenAI's `x-ratelimit-*` headers; a request over budget gets a 429 with `Retry-After` (the
    seconds left in its window). `answered` and `refused` count what happened.
    """

    requests: int
    window: float
    tokens: int | None = None
    latency: float = 0.0
    usage: tuple[int, int] = (10, 5)
    answered: int = 0
    refused: int = 0
    _start: float | None = None
    _counts: dict[int, tuple[int, int]] = attrs.Factory(dict)

    def __call__(self, request: Recorded) -> Reply:
        """The reply to one request, by the budget of its window."""
        now = trio.current_time()
        if self._start is None:
            self._start = now
        index = math.floor((now - self._start) / self.window)
        left = self._start + (index + 1) * self.window - now
        used_requests, used_tokens = self._counts.get(index, (0, 0))
        cost = sum(self.usage)
        over = used_requests >= self.requests or (
            self.tokens is not None and used_tokens + cost > self.tokens
        )
        if not over:
            used_requests, used_tokens = used_requests + 1, used_tokens + cost
            self._counts[index] = (used_requests, used_tokens)
        headers = {
            "x-ratelimit-limit-requests": str(self.requests),
            "x-ratelimit-remaining-requests": str(max(self.requests - used_requests, 0)),
            "x-ratelimit-reset-requests": f"{left * 1000:.0f}ms",
        }
        if self.tokens is not None:
            headers |= {
                "x-ratelimit-limit-tokens": str(self.tokens),
                "x-ratelimit-remaining-tokens": str(max(self.tokens - used_tokens, 0)),
                "x-ratelimit-reset-tokens": f"{left * 1000:.0f}ms",
            }
        if over:
            self.refused += 1
            headers["retry-after"] = f"{left:.3f}"
            return Reply(status=429, headers=headers)
        self.answered += 1
        return Reply(
            content=f"Answer to {request.prompt}",
            reasoning_content="Thinking it through.",
            usage=self.usage,
            delay=self.latency,
            headers=headers,
        )


class Contract(Protocol):
    """A check of the stand-in's exchanges against a published API (the tests install one)."""

    def request(self, stub: StubProvider, request: Request) -> list[str]:
        """Why `request` breaks the API the stub pretends to be (empty when it does not)."""
        ...

    def response(self, stub: StubProvider, request: Request, response: Response) -> list[str]:
        """Why the stub's own `response` breaks the API."""
        ...


_contract: Contract | None = None


def check_exchanges(contract: Contract | None) -> Contract | None:
    """Check every stand-in's exchanges with `contract` from now on; returns the one before."""
    global _contract
    before, _contract = _contract, contract
    return before


class StubProvider:
    """The scripted provider; `serve` runs it, `url` is its base URL once started.

    `dialect` names the API it pretends to be (`openai`, `openrouter`, …; by default what the
    product assumes of a base URL it does not know, `openai-compatible`), for a `Contract` that
    allows each provider's own request fields; `violations` holds what a `Contract` found.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        delay: float = 0.0,
        dialect: str = "openai-compatible",
    ) -> None:
        self.responder = responder
        self.delay = delay
        self.dialect = dialect
        self.violations: list[str] = []
        self.requests: list[Recorded] = []
        self.models: Json = {"data": []}
        self.embedder: Callable[[str], list[float]] = default_embedding
        self.url = ""
        self.api_key: str | None = None
        """When set, a request without this key (`Bearer` or `x-api-key`) gets a 401."""
        self._queue: collections.deque[Reply] = collections.deque()

    def queue(self, *replies: Reply) -> None:
        """Answer the next completion requests with `replies`, in order."""
        self._queue.extend(replies)

    @property
    def completions(self) -> list[Recorded]:
        """The chat-completions and Messages requests received so far."""
        return [r for r in self.requests if r.is_completion]

    async def _reply_for(self, recorded: Recorded) -> Reply:
        if self._queue:
            return self._queue.popleft()
        if self.responder is None:
            return default_reply(recorded)
        made = self.responder(recorded)
        return await made if inspect.isawaitable(made) else made

    async def handle(self, request: Request) -> Response:
        """Record `request`, answer it by route, and have the installed `Contract` check both."""
        contract = _contract
        wrong = [] if contract is None else contract.request(self, request)
        self.violations += wrong
        response, deliberate = await self.respond(request, wrong)
        if contract is not None and not (wrong or deliberate):
            self.violations += contract.response(self, request, response)
        return response

    async def respond(self, request: Request, wrong: list[str]) -> tuple[Response, bool]:
        """The answer to `request`, and whether it is a scripted fault (not checked).

        `wrong` says why the request breaks the API: it is refused as the real API would.
        """
        try:
            body: Json = json.loads(request.body) if request.body else None
        except ValueError:
            body = None
        recorded = Recorded(request.method, request.path, request.headers, body, request.body)
        self.requests.append(recorded)
        model = body.get("model") if isinstance(body, dict) else None
        model_name = model if isinstance(model, str) else "stub"
        anthropic = request.path.endswith("/messages")
        # Anthropic's routes (Messages, Message Batches) answer errors in Anthropic's shape.
        error = anthropic_error if "/messages" in request.path else openai_error
        if self.api_key is not None and self.api_key not in (
            request.headers.get("authorization", "").removeprefix("Bearer "),
            request.headers.get("x-api-key"),
        ):
            return error("invalid api key", 401), False
        if request.method == "GET" and request.path.endswith("/models"):
            return _json_response(model_listing(self.models)), False
        known = request.path.endswith("/embeddings") or recorded.is_completion
        if request.method != "POST" or not known:
            return error("not found", 404), False
        if wrong:
            return error("; ".join(wrong)[:2000], 400), False
        if request.path.endswith("/embeddings"):
            return self._embeddings(body), False
        refused = refusal(request.path, body)
        if refused is not None:
            param, why = refused
            return (
                anthropic_error(why, 400) if anthropic else openai_error(why, 400, param)
            ), False
        reply = await self._reply_for(recorded)
        delay = reply.delay or self.delay
        if delay > 0:
            await trio.sleep(delay)
        if reply.drop or reply.reset:
            return Response(drop=reply.drop, reset=reply.reset), True
        if reply.body is not None:
            headers = JSON_HEADERS + tuple(reply.headers.items())
            return Response(reply.status, reply.body, headers), True
        if reply.status != 200:
            text = _echoed_auth(recorded) if reply.echo_auth else reply.content
            answered = error(text, reply.status)
            return attrs.evolve(
                answered, headers=answered.headers + tuple(reply.headers.items())
            ), True
        serial = len(self.requests)
        if anthropic:
            answer = _anthropic_body(reply, model_name, serial)
        else:
            answer = _openai_body(reply, model_name, serial)
        response = attrs.evolve(_json_response(answer, 200, reply.headers), cut=reply.cut)
        return response, reply.deliberate

    def _embeddings(self, body: Json) -> Response:
        inputs = body.get("input") if isinstance(body, dict) else None
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return openai_error("input must be a string or an array of strings", 400, "input")
        data: list[Json] = [
            {"object": "embedding", "index": i, "embedding": list[Json](self.embedder(str(t)))}
            for i, t in enumerate(texts)
        ]
        model = body.get("model") if isinstance(body, dict) else None
        usage: Json = {"prompt_tokens": 0, "total_tokens": 0}
        answer: Json = {"object": "list", "data": data, "model": model or "stub", "usage": usage}
        return _json_response(answer)

    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve until cancelled; reports the base URL (`http://HOST:PORT/v1`) once bound."""

        async def started(nursery: trio.Nursery) -> None:
            bound = await nursery.start(serve_http, self.handle, host, port)
            self.url = f"http://{bound[0]}:{bound[1]}/v1"
            task_status.started(self.url)

        async with trio.open_nursery() as nursery:
            await started(nursery)


def model_listing(models: Json) -> Json:
    """`models` as OpenAI lists them: each entry completed with the fields OpenAI requires."""
    entries = models.get("data") if isinstance(models, dict) else None
    if not isinstance(models, dict) or not isinstance(entries, list):
        return models
    data: list[Json] = [
        {"object": "model", "created": CREATED, "owned_by": "stub", **entry}
        if isinstance(entry, dict)
        else entry
        for entry in entries
    ]
    return {"object": "list", **models, "data": data}


Served = TypeVar("Served", bound="StubProvider")
"""A stub provider of any class, as `serving` hands it back."""


@contextlib.asynccontextmanager
async def open_stub(
    responder: Responder | None = None, *, delay: float = 0.0, dialect: str = "openai-compatible"
) -> AsyncIterator[StubProvider]:
    """A stub serving on 127.0.0.1 (a free port) for the duration of the block.

    A block that ends normally with a violation left (one the test did not expect and clear)
    fails.
    """
    async with serving(StubProvider(responder, delay=delay, dialect=dialect)) as stub:
        yield stub


@contextlib.asynccontextmanager
async def serving(stub: Served) -> AsyncIterator[Served]:
    """`stub` (a `StubProvider` or a subclass) serving on 127.0.0.1 for the block; a block
    that ends normally with a violation left fails."""
    async with unwrapped(), trio.open_nursery() as nursery:
        await nursery.start(stub.serve)
        try:
            yield stub
        finally:
            nursery.cancel_scope.cancel()
    if stub.violations:
        raise AssertionError(f"exchanges off the provider's API: {stub.violations}")


async def _serve_forever(
    port: int, delay: float, models: Json, limits: RateLimited | None, dialect: str
) -> None:
    stub = StubProvider(limits, delay=0.0 if limits else delay, dialect=dialect)
    stub.models = models
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(stub.serve, "127.0.0.1", port)
            print(url, flush=True)
            pid = os.getpid()
            print(
                f"stand-in provider at {url}, pid {pid}: stop it with Ctrl-C or `kill {pid}`",
                file=sys.stderr,
                flush=True,
            )
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break
    if limits is not None:
        # What the rate-limited stand-in did, for a benchmark that started it.
        print(json.dumps({"answered": limits.answered, "refused": limits.refused}), flush=True)


def main(argv: list[str] | None = None) -> None:
    """`python -m overbrainer.devtools.stub_provider`: serve the unscripted stub until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m overbrainer.devtools.stub_provider",
        description="A local stand-in LLM provider (OpenAI and Anthropic protocols) for demos, "
        "tests and benchmarks. Prints its base URL, then serves until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument(
        "--models-json",
        type=argparse.FileType("r"),
        default=None,
        help="a file whose JSON is served at /models (model prices)",
    )
    parser.add_argument(
        "--rate-limit",
        metavar="N/SECONDS",
        default=None,
        help="a budget of N requests per window of SECONDS: OpenAI's x-ratelimit-* headers on "
        "every reply, 429 with Retry-After over budget; prints its counts as JSON on exit",
    )
    parser.add_argument(
        "--dialect",
        default="openai-compatible",
        help="the provider API it pretends to be (openai, openrouter, ...), for a check of its "
        "exchanges installed around it (bench/prism_acceptance.sh)",
    )
    args = parser.parse_args(argv)
    models: Json = json.load(args.models_json) if args.models_json else {"data": []}
    limits = None
    if args.rate_limit is not None:
        count, _, window = args.rate_limit.partition("/")
        try:
            limits = RateLimited(requests=int(count), window=float(window), latency=args.delay)
        except ValueError:
            parser.error(f"--rate-limit {args.rate_limit}: use N/SECONDS, e.g. 20/2")
    try:
        trio.run(_serve_forever, args.port, args.delay, models, limits, args.dialect)
    except (OSError, BaseExceptionGroup) as error:
        failed = next((e for e in error_leaves(error) if isinstance(e, OSError)), None)
        if failed is None:
            raise
        why = (failed.strerror or str(failed)).lower()
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {why}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)


if __name__ == "__main__":
    main()
