"""Prices from model listings: shapes, unknown prices, once per provider, the 10 s cap, logs."""

from __future__ import annotations

import logging

import pytest
import trio

from overbrainer.config.settings import Role
from overbrainer.llm.errors import StatusError
from overbrainer.llm.pricing import PriceBook, find_price, per_million_price
from overbrainer.llm.types import Json
from overbrainer.model.usage import Price, Usage

MODEL = "anthropic/claude-sonnet-5"


class Listing:
    """A client whose `models()` answers `value` (or raises it) after `delay` seconds."""

    def __init__(self, value: Json | Exception, delay: float = 0.0) -> None:
        self.value = value
        self.delay = delay
        self.calls = 0

    async def models(self) -> Json:
        self.calls += 1
        await trio.sleep(self.delay)
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


def role(model: str = MODEL, **kw: float) -> Role:
    return Role(provider="p", model=model, **kw)  # type: ignore[arg-type]


def test_openrouter_per_token_strings() -> None:
    listing: Json = {
        "data": [
            {"id": "other", "pricing": {"prompt": "1", "completion": "1"}},
            {"id": MODEL, "pricing": {"prompt": "0.000002", "completion": "0.00001"}},
        ]
    }
    assert per_million_price(listing, MODEL) == pytest.approx((2.0, 10.0))
    price = find_price(listing, MODEL)
    assert price is not None
    assert price.cost(Usage(500_000, 100_000)) == pytest.approx(2.0)


def test_nanogpt_per_million_numbers_need_the_unit() -> None:
    priced: Json = {
        "object": "list",
        "data": [
            {
                "id": MODEL,
                "pricing": {"prompt": 2, "completion": 10.5, "unit": "per_million_tokens"},
            }
        ],
    }
    assert per_million_price(priced, MODEL) == (2.0, 10.5)
    no_unit: Json = {"data": [{"id": MODEL, "pricing": {"prompt": 2, "completion": 10}}]}
    assert per_million_price(no_unit, MODEL) is None


def test_a_top_level_array_is_a_listing() -> None:
    listing: Json = [{"id": MODEL, "pricing": {"prompt": " 0.000001 ", "completion": "0"}}]
    assert per_million_price(listing, MODEL) == pytest.approx((1.0, 0.0))


@pytest.mark.parametrize(
    "listing",
    [
        {"data": [{"id": MODEL, "pricing": {"prompt": "-1", "completion": "-1"}}]},
        {"data": [{"id": MODEL, "pricing": {"prompt": "0.1", "completion": "-0.1"}}]},
        {"data": [{"id": MODEL, "pricing": {"prompt": "0.1"}}]},
        {"data": [{"id": MODEL, "pricing": {"prompt": "inf", "completion": "0.1"}}]},
        {"data": [{"id": MODEL, "pricing": {"prompt": "nan", "completion": "0.1"}}]},
        {"data": [{"id": MODEL, "pricing": {"prompt": "1_0", "completion": "0.1"}}]},
        {"data": [{"id": MODEL, "pricing": {"prompt": True, "completion": "0.1"}}]},
        {"data": [{"id": MODEL, "object": "model", "owned_by": "openai"}]},
        {"data": [{"id": "someone/else", "pricing": {"prompt": "0.1", "completion": "0.1"}}]},
        {"data": {"id": MODEL}},
        {"models": []},
        "not a listing",
    ],
)
def test_unknown_prices(listing: Json) -> None:
    assert find_price(listing, MODEL) is None


async def test_listing_is_read_once_per_provider(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="overbrainer")
    client = Listing(
        {"data": [{"id": MODEL, "pricing": {"prompt": "0.000002", "completion": "0"}}]}
    )
    book = PriceBook()
    with trio.fail_after(5):
        first = await book.price_for("openrouter", client, role())
        missing = await book.price_for("openrouter", client, role("absent/model"))
    assert first == Price(2.0, 0.0)
    assert missing is None
    assert client.calls == 1
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["no price listed for model absent/model; showing tokens only"]


async def test_concurrent_lookups_share_one_read(autojump_clock: trio.testing.MockClock) -> None:
    client = Listing(
        {"data": [{"id": MODEL, "pricing": {"prompt": "0.000002", "completion": "0.000004"}}]},
        delay=1.0,
    )
    book = PriceBook()
    found: list[Price | None] = []

    async def look_up() -> None:
        found.append(await book.price_for("p", client, role()))

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(look_up)
    assert client.calls == 1
    # The callers that waited on the first read get its listing, not a miss.
    assert found == [Price(2.0, 4.0)] * 3


async def test_a_failing_listing_never_fails_and_is_not_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = Listing(StatusError(500, "boom"))
    book = PriceBook()
    with trio.fail_after(5):
        assert await book.price_for("p", client, role()) is None
        assert await book.price_for("p", client, role("x")) is None
    assert client.calls == 1
    warnings = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert warnings == [
        (logging.WARNING, "cannot read model prices (HTTP 500: boom); showing tokens only")
    ]


async def test_a_slow_listing_gives_up_after_10s(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    client = Listing({"data": []}, delay=60.0)
    book = PriceBook()
    start = trio.current_time()
    with trio.fail_after(100):
        assert await book.price_for("p", client, role()) is None
    assert trio.current_time() - start == pytest.approx(10.0)
    # The give-up is remembered: a second role of that provider neither waits nor reads again.
    again = trio.current_time()
    with trio.fail_after(100):
        assert await book.price_for("p", client, role("other")) is None
    assert trio.current_time() == again
    assert client.calls == 1
    assert [r.getMessage() for r in caplog.records] == [
        "model prices not received within 10s; showing tokens only"
    ]


async def test_role_prices_apply_when_the_listing_has_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="overbrainer")
    configured = role(price_in=3.0, price_out=15.0)
    listed = Listing(
        {"data": [{"id": MODEL, "pricing": {"prompt": "0.000001", "completion": "0"}}]}
    )
    with trio.fail_after(5):
        assert await PriceBook().price_for("p", listed, configured) == Price(1.0, 0.0)
        unlisted = await PriceBook().price_for("p", Listing({"data": []}), configured)
        failing = await PriceBook().price_for("p", Listing(StatusError(404, "nope")), configured)
    assert unlisted == failing == Price(3.0, 15.0)
    assert not any("no price listed" in r.getMessage() for r in caplog.records)
