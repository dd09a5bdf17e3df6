"""A scripted LLM provider on 127.0.0.1 speaking the OpenAI and Anthropic protocols.

Tests and benchmarks script it reply by reply (answers, reasoning fields, usage, finish
reasons, refusals, error statuses with `Retry-After`, delays, malformed bodies, dropped
connections, bodies cut midway, connection resets, replies without `usage`) and read back every
request it got. Without a script it answers like a tiny, deterministic model, so
`python -m overbrainer.devtools.stub_provider` can stand in for a real provider in a demo of
the whole pipeline.

It refuses what the real APIs refuse (400 with the provider's error object: no `model` or
`messages`, an unknown role or reasoning effort; 401 without the expected key), and its own
answers carry every field OpenAI's and Anthropic's descriptions require. The tests go further:
they install a `Contract` (`check_exchanges`) that checks every exchange against the published
descriptions and records what breaks them in `StubProvider.violations`.

This module is the server (routes, scripted faults, the contract's checks) and its command;
the script's vocabulary is in `stub_script`, the unscripted model in `stub_model`, the APIs'
shapes in `stub_wire`, a rate-limited responder in `stub_rate_limit`.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from typing import Protocol, TypeVar

import attrs
import trio

from overbrainer.devtools.stub_model import default_embedding, default_reply
from overbrainer.devtools.stub_rate_limit import RateLimited
from overbrainer.devtools.stub_script import Json, Recorded, Reply, Responder
from overbrainer.devtools.stub_wire import (
    JSON_HEADERS,
    anthropic_body,
    anthropic_error,
    json_response,
    model_listing,
    openai_body,
    openai_error,
    refusal,
)
from overbrainer.model.error_groups import error_leaves, unwrapped
from overbrainer.net.http_server import Request, Response, serve_http


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
            return json_response(model_listing(self.models)), False
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
            answer = anthropic_body(reply, model_name, serial)
        else:
            answer = openai_body(reply, model_name, serial)
        response = attrs.evolve(json_response(answer, 200, reply.headers), cut=reply.cut)
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
        return json_response(answer)

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
