"""Progress events and the Trio event bus that fans them out to subscribers and an observer."""

from __future__ import annotations

import collections
import contextlib
import enum
import itertools
import logging
from collections.abc import AsyncIterator
from typing import Protocol

import attrs
import trio
import trio.lowlevel

from overbrainer.llm.usage import Price, Usage
from overbrainer.runpod.status import PodStatus
from overbrainer.runs.kind import JobKind
from overbrainer.system_sample import SystemSample
from overbrainer.train.job_status import JobStatus
from overbrainer.train.metric import Mark, TrainMetric

log = logging.getLogger(__name__)

CAPACITY = 1024
"""Events a subscriber may fall behind by before it loses the oldest."""


class Stage(enum.Enum):
    """A pipeline stage; members sort in pipeline order."""

    SUBTOPICS = "subtopics"
    QUESTIONS = "questions"
    ANSWERS = "answers"
    SPLIT = "split"

    def __str__(self) -> str:
        return self.value

    def __lt__(self, other: Stage) -> bool:
        return _STAGE_ORDER[self] < _STAGE_ORDER[other]


_STAGE_ORDER = {stage: index for index, stage in enumerate(Stage)}


@attrs.frozen
class StageStats:
    """Counters of one stage: items done, skipped, failed, excluded; tokens; cost if known."""

    done: int = 0
    skipped: int = 0
    failed: int = 0
    excluded: int = 0
    usage: Usage = attrs.field(factory=Usage)
    cost: float | None = None

    def add_usage(self, usage: Usage, price: Price | None = None) -> StageStats:
        """These stats plus `usage`, and its cost when the price is known."""
        cost = self.cost
        if price is not None:
            cost = (cost or 0.0) + price.cost(usage)
        return attrs.evolve(self, usage=self.usage + usage, cost=cost)

    def merge(self, other: StageStats) -> StageStats:
        """The sum of two stats; the cost stays unknown only if both are."""
        cost = self.cost
        if other.cost is not None:
            cost = (cost or 0.0) + other.cost
        return StageStats(
            done=self.done + other.done,
            skipped=self.skipped + other.skipped,
            failed=self.failed + other.failed,
            excluded=self.excluded + other.excluded,
            usage=self.usage + other.usage,
            cost=cost,
        )


@attrs.frozen
class StageStarted:
    """A stage started with `total` selected items."""

    stage: Stage
    total: int


@attrs.frozen
class ItemDone:
    """One item ended; `usage` None means it was already stored and skipped."""

    stage: Stage
    id: str
    usage: Usage | None = None
    cost: float | None = None
    excluded: bool = False


@attrs.frozen
class ItemFailed:
    """An attempt (`retryable`) or an item failed; `error` never holds secrets."""

    stage: Stage
    id: str
    error: str
    retryable: bool = False


@attrs.frozen
class StageModel:
    """The model of the stage's role, published right after `StageStarted`."""

    stage: Stage
    model: str


@attrs.frozen
class StageFinished:
    """Final counters of a stage."""

    stage: Stage
    stats: StageStats


@attrs.frozen
class RunWatched:
    """The flow now follows this run's job (`job` None for training)."""

    run_id: str
    job: JobKind | None = None


@attrs.frozen
class Metric:
    """A training or evaluation log line of the followed job."""

    metric: TrainMetric


@attrs.frozen
class MarkEvent:
    """A stage, eval-progress or end line of the followed job."""

    mark: Mark


@attrs.frozen
class JobStatusChanged:
    """The followed job is in a new state."""

    status: JobStatus


@attrs.frozen
class PodStatusChanged:
    """The run's Runpod pod changed."""

    status: PodStatus


@attrs.frozen
class System:
    """A machine sample of the followed job's target."""

    sample: SystemSample


@attrs.frozen
class Push:
    """Bytes uploaded to the Hugging Face Hub so far."""

    run_id: str
    done: int
    total: int


@attrs.frozen
class Judged:
    """Questions of a compare judged so far."""

    compare_id: str
    done: int
    total: int


Event = (
    StageStarted
    | ItemDone
    | ItemFailed
    | StageModel
    | StageFinished
    | RunWatched
    | Metric
    | MarkEvent
    | JobStatusChanged
    | PodStatusChanged
    | System
    | Push
    | Judged
)

EVENT_TYPES: tuple[type[Event], ...] = (
    StageStarted,
    ItemDone,
    ItemFailed,
    StageModel,
    StageFinished,
    RunWatched,
    Metric,
    MarkEvent,
    JobStatusChanged,
    PodStatusChanged,
    System,
    Push,
    Judged,
)
"""Every event class, in the reference's declaration order."""


class ItemResult(enum.Enum):
    """How an item ended."""

    DONE = "done"
    SKIPPED = "skipped"
    EXCLUDED = "excluded"
    FAILED = "failed"


def item_result(event: Event) -> tuple[Stage, ItemResult] | None:
    """The stage and result of an event that ends an item; None for every other event."""
    match event:
        case ItemDone(stage=stage, usage=None):
            return stage, ItemResult.SKIPPED
        case ItemDone(stage=stage, excluded=True):
            return stage, ItemResult.EXCLUDED
        case ItemDone(stage=stage):
            return stage, ItemResult.DONE
        case ItemFailed(stage=stage, retryable=False):
            return stage, ItemResult.FAILED
        case _:
            return None


class Observer(Protocol):
    """Sees every event of its buses, synchronously and without loss, and each bus's end."""

    def event(self, bus: int, event: Event) -> None:
        """One event published on bus `bus`."""

    def closed(self, bus: int) -> None:
        """Bus `bus` closed; its ID may be reused later."""


class Observers:
    """Several observers as one (the events file and the metrics), each failure contained."""

    def __init__(self, *observers: Observer | None) -> None:
        self._all = [observer for observer in observers if observer is not None]

    def event(self, bus: int, event: Event) -> None:
        for observer in self._all:
            try:
                observer.event(bus, event)
            except Exception:
                log.exception("an event observer failed")

    def closed(self, bus: int) -> None:
        for observer in self._all:
            try:
                observer.closed(bus)
            except Exception:
                log.exception("an event observer failed")


@attrs.frozen
class Lagged:
    """The subscriber fell behind and lost its `n` oldest events."""

    n: int


_open_bus_ids: set[int] = set()


def _claim_bus_id() -> int:
    bus_id = next(i for i in itertools.count(1) if i not in _open_bus_ids)
    _open_bus_ids.add(bus_id)
    return bus_id


class Subscription:
    """One subscriber's view of a bus: events published after it subscribed, or `Lagged`."""

    def __init__(self, receive: trio.MemoryReceiveChannel[tuple[int, Event]], start: int) -> None:
        self._receive = receive
        self._expected = start
        self._ready: collections.deque[Event | Lagged] = collections.deque()

    def _take(self, seq: int, event: Event) -> None:
        if seq > self._expected:
            self._ready.append(Lagged(seq - self._expected))
        self._expected = seq + 1
        self._ready.append(event)

    def _take_queued(self, max_events: int) -> None:
        for _ in range(max_events):
            try:
                seq, event = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                return
            self._take(seq, event)

    async def receive(self) -> Event | Lagged:
        """The next item; raises `trio.EndOfChannel` once the bus closed and all is read."""
        if not self._ready:
            self._take(*await self._receive.receive())
        return self._ready.popleft()

    async def receive_batch(self, max_events: int = CAPACITY) -> list[Event | Lagged]:
        """Wait for at least one item, then take what is queued (about `max_events` events)."""
        if not self._ready:
            self._take(*await self._receive.receive())
            self._take_queued(max_events - 1)
        return self._drain_ready()

    def receive_nowait(self) -> list[Event | Lagged]:
        """Whatever is queued now, without waiting; empty when nothing is."""
        self._take_queued(CAPACITY * 1024)
        return self._drain_ready()

    def _drain_ready(self) -> list[Event | Lagged]:
        items = list(self._ready)
        self._ready.clear()
        return items

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event | Lagged:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    def close(self) -> None:
        """Stop receiving; the bus stops delivering to this subscriber."""
        self._receive.close()


@attrs.define
class _Subscriber:
    send: trio.MemorySendChannel[tuple[int, Event]]
    # The fan-out's own clone of the receive end: it takes the oldest event out of a full buffer.
    drop: trio.MemoryReceiveChannel[tuple[int, Event]]
    start: int


class EventBus:
    """Publishes events to an observer (synchronously) and to subscribers (via a fan-out task)."""

    def __init__(self, bus_id: int, capacity: int, observer: Observer | None) -> None:
        self.id = bus_id
        self.capacity = max(1, capacity)
        self._observer = observer
        self._pending: collections.deque[tuple[int, Event]] = collections.deque()
        self._subscribers: list[_Subscriber] = []
        self._next_seq = 0
        self._wakeup = trio.Event()
        self._closing = False

    def publish(self, event: Event) -> None:
        """Hand an event to the observer, then queue it for the subscribers; never blocks."""
        if self._closing:
            return
        if self._observer is not None:
            try:
                self._observer.event(self.id, event)
            except Exception:
                log.exception("the event observer failed")
        seq = self._next_seq
        self._next_seq += 1
        if self._subscribers:
            self._pending.append((seq, event))
            if len(self._pending) > self.capacity:
                # Every subscriber would drop this one anyway; keep memory bounded.
                self._pending.popleft()
            self._wakeup.set()

    def subscribe(self) -> Subscription:
        """A subscription to every event published from now on."""
        send, receive = trio.open_memory_channel[tuple[int, Event]](self.capacity)
        if self._closing:
            send.close()
        else:
            self._subscribers.append(_Subscriber(send, receive.clone(), self._next_seq))
        return Subscription(receive, self._next_seq)

    async def delivered(self) -> None:
        """Return once every event published so far is in its subscribers' buffers."""
        while self._pending and not self._closing:
            await trio.lowlevel.checkpoint()

    def _deliver_pending(self) -> None:
        while self._pending:
            seq, event = self._pending.popleft()
            for subscriber in self._subscribers:
                if seq < subscriber.start:
                    continue
                try:
                    subscriber.send.send_nowait((seq, event))
                except trio.WouldBlock:
                    with contextlib.suppress(trio.WouldBlock):
                        subscriber.drop.receive_nowait()
                    subscriber.send.send_nowait((seq, event))
                except trio.BrokenResourceError:
                    subscriber.start = -1
            if any(s.start < 0 for s in self._subscribers):
                self._forget_closed()

    def _forget_closed(self) -> None:
        for subscriber in [s for s in self._subscribers if s.start < 0]:
            subscriber.send.close()
            subscriber.drop.close()
            self._subscribers.remove(subscriber)

    async def _fan_out(self) -> None:
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                self._deliver_pending()
                if self._closing:
                    return
        finally:
            self._closing = True
            self._deliver_pending()
            for subscriber in self._subscribers:
                subscriber.send.close()
                subscriber.drop.close()
            self._subscribers.clear()

    def _close(self) -> None:
        self._closing = True
        self._wakeup.set()


@contextlib.asynccontextmanager
async def open_event_bus(
    capacity: int = CAPACITY, observer: Observer | None = None
) -> AsyncIterator[EventBus]:
    """Open a bus whose fan-out task lives in a nursery; leaving it drains and closes the bus."""
    bus = EventBus(_claim_bus_id(), capacity, observer)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(bus._fan_out)
            try:
                yield bus
            finally:
                bus._close()
    finally:
        _open_bus_ids.discard(bus.id)
        if observer is not None:
            try:
                observer.closed(bus.id)
            except Exception:
                log.exception("the event observer failed")
